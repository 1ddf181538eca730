#include "model_helpers.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <loom/plugin.hpp>

#include "onnx_format.hpp"

namespace loom::onnx::testing {

void set_tensor_type(::onnx::ValueInfoProto& v, const std::string& name, int32_t elem_type,
                     std::initializer_list<Dim> dims) {
  v.set_name(name);
  auto* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  auto* shape = t->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (std::holds_alternative<int64_t>(d))
      dim->set_dim_value(std::get<int64_t>(d));
    else if (!std::get<std::string>(d).empty())
      dim->set_dim_param(std::get<std::string>(d));
  }
}

::onnx::ValueInfoProto& add_input(::onnx::GraphProto& g, const std::string& name, int32_t elem_type,
                                  std::initializer_list<Dim> dims) {
  auto* v = g.add_input();
  set_tensor_type(*v, name, elem_type, dims);
  return *v;
}

::onnx::ValueInfoProto& add_output(::onnx::GraphProto& g, const std::string& name,
                                   int32_t elem_type, std::initializer_list<Dim> dims) {
  auto* v = g.add_output();
  set_tensor_type(*v, name, elem_type, dims);
  return *v;
}

::onnx::NodeProto& add_node(::onnx::GraphProto& g, const std::string& op,
                            std::initializer_list<std::string> inputs,
                            std::initializer_list<std::string> outputs, const std::string& name) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

::onnx::TensorProto& add_initializer(::onnx::GraphProto& g, const std::string& name,
                                     int32_t data_type, std::initializer_list<int64_t> dims) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(data_type);
  for (int64_t d : dims) t->add_dims(d);
  return *t;
}

::onnx::ModelProto relu_model() {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("loom-tests");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("main");
  add_input(*g, "x", ::onnx::TensorProto::FLOAT, {std::string("N"), int64_t{3}});
  add_node(*g, "Relu", {"x"}, {"y"}, "relu");
  add_output(*g, "y", ::onnx::TensorProto::FLOAT, {std::string("N"), int64_t{3}});
  return m;
}

Loaded load_bytes(const std::string& bytes, const char* directory) {
  sdk::set_host(&fake_host());
  Loaded r;
  r.builder = std::make_unique<FakeBuilder>();
  loom_load_args_t args{};
  args.struct_size = sizeof args;
  args.path = "model.onnx";
  args.directory = directory;
  args.data = reinterpret_cast<const uint8_t*>(bytes.data());
  args.size = bytes.size();
  const loom_format_t& f = format_descriptor();
  r.outcome = take(f.load(f.user, &args, &r.builder->api(), r.builder->handle()));
  return r;
}

Loaded load_model(const ::onnx::ModelProto& model, const char* directory) {
  std::string bytes;
  EXPECT_TRUE(model.SerializeToString(&bytes));
  return load_bytes(bytes, directory);
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::path(::testing::TempDir()) /
          ("loom_onnx_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void TempDir::write(const std::string& name, const std::string& bytes) const {
  std::ofstream out(path_ / name, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace loom::onnx::testing
