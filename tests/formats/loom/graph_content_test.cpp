// What a .loom file carries: constants of every dtype (strings, scalars, empty tensors
// included) and the format-independent simplifications applied before a conversion.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "loom_test_support.hpp"

namespace loom::loomfmt::testing {
namespace {

using loom::apps::HostTensor;

// A constant with distinct element bytes, and the identical HostTensor.
HostTensor constant_of(::onnx::GraphProto* g, const std::string& name, int32_t dtype,
                       const std::vector<int64_t>& dims) {
  HostTensor t;
  t.dtype = static_cast<loom_dtype_t>(dtype);
  t.dims = dims;
  size_t count = 1;
  for (int64_t d : dims) count *= static_cast<size_t>(d);
  auto* init = g->add_initializer();
  init->set_name(name);
  init->set_data_type(dtype);
  for (int64_t d : dims) init->add_dims(d);
  if (dtype == ::onnx::TensorProto::STRING) {
    for (size_t i = 0; i < count; ++i) {
      std::string s = "str" + std::to_string(i) + std::string(i, '\0') + "end";
      t.strings.push_back(s);
      init->add_string_data(s);
    }
    return t;
  }
  size_t element = loom_dtype_size(t.dtype);
  t.data.resize(count * element);
  for (size_t i = 0; i < t.data.size(); ++i)
    t.data[i] =
        static_cast<std::byte>(dtype == ::onnx::TensorProto::BOOL ? i % 2 : (i * 7 + 1) & 0x7f);
  init->set_raw_data(std::string(reinterpret_cast<const char*>(t.data.data()), t.data.size()));
  return t;
}

TEST(LoomGraphContent, ConstantsOfEveryDtypeSurviveConversion) {
  using P = ::onnx::TensorProto;
  auto m = new_model();
  auto* g = m.mutable_graph();
  std::vector<HostTensor> expected;
  const std::vector<int32_t> dtypes = {P::FLOAT,  P::UINT8,  P::INT8,   P::UINT16,  P::INT16,
                                       P::INT32,  P::INT64,  P::STRING, P::BOOL,    P::FLOAT16,
                                       P::DOUBLE, P::UINT32, P::UINT64, P::BFLOAT16};
  for (int32_t dtype : dtypes) {
    std::string name = "c" + std::to_string(dtype);
    expected.push_back(constant_of(g, name, dtype, {2, 3}));
    add_node(g, "Identity", {name}, {name + "_out"});
    add_value(g->add_output(), name + "_out", dtype, {2, 3});
  }
  expected.push_back(constant_of(g, "scalar", P::FLOAT, {}));
  add_node(g, "Identity", {"scalar"}, {"scalar_out"});
  add_value(g->add_output(), "scalar_out", P::FLOAT, {});
  expected.push_back(constant_of(g, "empty", P::FLOAT, {0, 4}));
  add_node(g, "Identity", {"empty"}, {"empty_out"});
  add_value(g->add_output(), "empty_out", P::FLOAT, {0, 4});

  TempDir tmp;
  save_onnx(m, tmp / "all.onnx");
  auto rt = make_runtime();
  ASSERT_EQ(convert(rt.get(), (tmp / "all.onnx").string(), (tmp / "all.loom").string(), true), "");
  auto model = loom::apps::load_model(rt.get(), (tmp / "all.loom").string());
  EXPECT_STREQ(loom_model_format(model.get()), "loom");
  auto outputs = run_cpu(rt.get(), model.get(), {});
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_EQ(compare_exact(expected[i], outputs[i]), "") << "output " << i;
}

TEST(LoomGraphContent, SimplificationsKeepOutputsAndRemoveWhatNoOneNeeds) {
  auto m = new_model(12);
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "x", ::onnx::TensorProto::FLOAT, {2, 2});
  add_float_initializer(g, "w", {2, 2}, {1, 2, 3, 4});
  add_float_initializer(g, "unused", {3}, {7, 8, 9});
  add_node(g, "Identity", {"x"}, {"x1"});
  auto* drop = add_node(g, "Dropout", {"x1"}, {"x2"});
  auto* ratio = drop->add_attribute();
  ratio->set_name("seed");
  ratio->set_type(::onnx::AttributeProto::INT);
  ratio->set_i(3);
  add_node(g, "Add", {"x2", "w"}, {"sum"});
  add_node(g, "Relu", {"x"}, {"dead"});
  auto* constant = add_node(g, "Constant", {}, {"ones"});
  auto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(::onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(2);
  value->mutable_t()->add_dims(2);
  for (int i = 0; i < 4; ++i) value->mutable_t()->add_float_data(1.0f);
  add_node(g, "Mul", {"sum", "ones"}, {"product"});
  add_node(g, "Identity", {"product"}, {"y"});  // its output is the graph's: it must stay
  add_value(g->add_output(), "y", ::onnx::TensorProto::FLOAT, {2, 2});

  TempDir tmp;
  save_onnx(m, tmp / "s.onnx");
  auto rt = make_runtime();
  auto model = loom::apps::load_model(rt.get(), (tmp / "s.onnx").string());
  HostTensor x = float_tensor({2, 2}, {-1, 0.5f, 2, -3});
  auto before = run_cpu(rt.get(), model.get(), {x});
  EXPECT_EQ(loom_model_num_nodes(model.get()), 7u);
  loom_simplify_report_t report{};
  report.struct_size = sizeof report;
  ASSERT_EQ(take_error(loom_model_simplify(rt.get(), model.get(), &report)), "");
  EXPECT_EQ(report.identities, 1u);
  EXPECT_EQ(report.dropouts, 1u);
  EXPECT_EQ(report.dead_nodes, 1u);
  EXPECT_EQ(report.unused_constants, 1u);
  EXPECT_EQ(report.constant_nodes, 1u);
  EXPECT_EQ(loom_model_num_nodes(model.get()), 3u);  // Add, Mul, the output's Identity
  EXPECT_EQ(loom_model_num_initializers(model.get()), 2u);
  ASSERT_EQ(
      take_error(loom_model_save(rt.get(), model.get(), "loom", (tmp / "s.loom").string().c_str())),
      "");
  auto converted = loom::apps::load_model(rt.get(), (tmp / "s.loom").string());
  EXPECT_EQ(loom_model_num_nodes(converted.get()), 3u);
  auto after = run_cpu(rt.get(), converted.get(), {x});
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(compare_exact(before[0], after[0]), "");
  EXPECT_EQ(compare_exact(before[0], float_tensor({2, 2}, {0, 2.5f, 5, 1})), "");
}

TEST(LoomGraphContent, TrainingModeDropoutIsKept) {
  auto m = new_model(13);
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "x", ::onnx::TensorProto::FLOAT, {4});
  add_value(g->add_input(), "training", ::onnx::TensorProto::BOOL, {});
  add_node(g, "Dropout", {"x", "", "training"}, {"y"});
  add_value(g->add_output(), "y", ::onnx::TensorProto::FLOAT, {4});
  TempDir tmp;
  save_onnx(m, tmp / "d.onnx");
  auto rt = make_runtime();
  auto model = loom::apps::load_model(rt.get(), (tmp / "d.onnx").string());
  loom_simplify_report_t report{};
  report.struct_size = sizeof report;
  ASSERT_EQ(take_error(loom_model_simplify(rt.get(), model.get(), &report)), "");
  EXPECT_EQ(report.dropouts, 0u);
  EXPECT_EQ(loom_model_num_nodes(model.get()), 1u);
}

TEST(LoomGraphContent, OverridableInitializersStayInputs) {
  auto m = new_model();
  auto* g = m.mutable_graph();
  add_value(g->add_input(), "x", ::onnx::TensorProto::FLOAT, {2});
  add_value(g->add_input(), "bias", ::onnx::TensorProto::FLOAT, {2});
  add_float_initializer(g, "bias", {2}, {10, 20});
  add_node(g, "Add", {"x", "bias"}, {"y"});
  add_value(g->add_output(), "y", ::onnx::TensorProto::FLOAT, {2});
  TempDir tmp;
  save_onnx(m, tmp / "o.onnx");
  auto rt = make_runtime();
  ASSERT_EQ(convert(rt.get(), (tmp / "o.onnx").string(), (tmp / "o.loom").string(), true), "");
  ASSERT_EQ(convert(rt.get(), (tmp / "o.loom").string(), (tmp / "o2.loom").string(), true), "");
  EXPECT_EQ(read_file(tmp / "o.loom"), read_file(tmp / "o2.loom"));
  auto model = loom::apps::load_model(rt.get(), (tmp / "o.loom").string());
  auto out = run_cpu(rt.get(), model.get(), {float_tensor({2}, {1, 2})});
  EXPECT_EQ(compare_exact(out[0], float_tensor({2}, {11, 22})), "");
}

}  // namespace
}  // namespace loom::loomfmt::testing
