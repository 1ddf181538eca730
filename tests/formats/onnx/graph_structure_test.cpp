// How the graph of a well-formed model reaches the builder: model metadata, opsets, inputs and
// outputs with symbolic dims, initializers that are also inputs, nodes with omitted optional
// values, every attribute type, and nested If/Loop bodies.
#include <gtest/gtest.h>

#include <loom/plugin.hpp>

#include "model_helpers.hpp"
#include "onnx_format.hpp"

namespace loom::onnx::testing {
namespace {

using TP = ::onnx::TensorProto;
using AP = ::onnx::AttributeProto;

TEST(OnnxGraph, InputsOutputsAndSymbolicDims) {
  ::onnx::ModelProto m = relu_model();
  auto& g = *m.mutable_graph();
  // A dim with neither value nor name is unknown; a value_info without shape has unknown rank.
  add_input(g, "mask", TP::BOOL, {int64_t{2}, std::string("")});
  auto* vi = g.add_value_info();
  vi->set_name("hint");
  vi->mutable_type()->mutable_tensor_type()->set_elem_type(TP::INT64);
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  RecordedGraph& out = r.graph();
  ASSERT_EQ(out.inputs.size(), 2u);
  const RecordedValue& x = out.inputs[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.dtype, LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(x.rank, 2);
  EXPECT_EQ(x.dims, (std::vector<int64_t>{-1, 3}));
  ASSERT_TRUE(x.has_dim_params);
  EXPECT_EQ(x.dim_params, (std::vector<std::string>{"N", ""}));
  const RecordedValue& mask = out.inputs[1];
  EXPECT_EQ(mask.dtype, LOOM_DTYPE_BOOL);
  EXPECT_EQ(mask.dims, (std::vector<int64_t>{2, -1}));
  EXPECT_FALSE(mask.has_dim_params);  // no dim is named
  ASSERT_EQ(out.outputs.size(), 1u);
  EXPECT_EQ(out.outputs[0].name, "y");
  ASSERT_EQ(out.value_infos.size(), 1u);
  EXPECT_EQ(out.value_infos[0].dtype, LOOM_DTYPE_INT64);
  EXPECT_EQ(out.value_infos[0].rank, -1);
}

TEST(OnnxGraph, OpsetsAndMetadata) {
  ::onnx::ModelProto m = relu_model();
  m.set_producer_version("2.1");
  m.set_domain("org.example");
  m.set_model_version(5);
  m.set_doc_string("a test");
  auto* op = m.add_opset_import();
  op->set_domain("com.microsoft");
  op->set_version(1);
  m.mutable_opset_import(0)->set_domain("ai.onnx");  // same as ""
  auto* kv = m.add_metadata_props();
  kv->set_key("author");
  kv->set_value("loom");
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_EQ(r.graph().opsets, (std::map<std::string, int64_t>{{"", 17}, {"com.microsoft", 1}}));
  auto& md = r.graph().metadata;
  EXPECT_EQ(md["producer_name"], "loom-tests");
  EXPECT_EQ(md["producer_version"], "2.1");
  EXPECT_EQ(md["domain"], "org.example");
  EXPECT_EQ(md["model_version"], "5");
  EXPECT_EQ(md["doc_string"], "a test");
  EXPECT_EQ(md["graph_name"], "main");
  EXPECT_EQ(md["ir_version"], "8");
  EXPECT_EQ(md["author"], "loom");
}

TEST(OnnxGraph, DuplicateOpsetDomainIsRefused) {
  ::onnx::ModelProto m = relu_model();
  auto* op = m.add_opset_import();
  op->set_domain("ai.onnx");
  op->set_version(13);
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message, "opset_import names domain 'ai.onnx' twice");
}

TEST(OnnxGraph, InputThatIsAlsoAnInitializerIsBoth) {
  ::onnx::ModelProto m = relu_model();
  auto& g = *m.mutable_graph();
  add_input(g, "bias", TP::FLOAT, {int64_t{3}});
  TP& b = add_initializer(g, "bias", TP::FLOAT, {3});
  for (float v : {0.5f, 1.5f, 2.5f}) b.add_float_data(v);
  add_node(g, "Add", {"y", "bias"}, {"z"});
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  ASSERT_NE(r.graph().input("bias"), nullptr);
  ASSERT_NE(r.graph().initializer("bias"), nullptr);
  EXPECT_EQ(r.graph().initializer("bias")->as<float>(), (std::vector<float>{0.5f, 1.5f, 2.5f}));
}

TEST(OnnxGraph, NodesKeepOmittedOptionalValuesAndNormalizeDomain) {
  ::onnx::ModelProto m = relu_model();
  auto& g = *m.mutable_graph();
  // Clip(x, "", max) -> c; Dropout with an omitted mask output; a custom-domain node.
  ::onnx::NodeProto& clip = add_node(g, "Clip", {"y", "", "max"}, {"c"}, "clip");
  clip.set_domain("ai.onnx");
  add_node(g, "Dropout", {"c"}, {"d", ""});
  add_node(g, "FusedGemm", {"d"}, {"e"}).set_domain("com.microsoft");
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  auto& nodes = r.graph().nodes;
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[1]->name, "clip");
  EXPECT_EQ(nodes[1]->domain, "");
  EXPECT_EQ(nodes[1]->inputs, (std::vector<std::string>{"y", "", "max"}));
  EXPECT_EQ(nodes[2]->name, "");
  EXPECT_EQ(nodes[2]->outputs, (std::vector<std::string>{"d", ""}));
  EXPECT_EQ(nodes[3]->domain, "com.microsoft");
}

TEST(OnnxGraph, AttributesOfEveryRepresentableType) {
  ::onnx::ModelProto m = relu_model();
  ::onnx::NodeProto& n = add_node(*m.mutable_graph(), "Custom", {"y"}, {"z"}, "custom");
  auto add = [&](const std::string& name, AP::AttributeType type) {
    AP* a = n.add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  };
  add("i", AP::INT)->set_i(-3);
  add("f", AP::FLOAT)->set_f(0.25f);
  add("s", AP::STRING)->set_s(std::string("a\0b", 3));
  AP* ints = add("ints", AP::INTS);
  ints->add_ints(1);
  ints->add_ints(-2);
  AP* fl = add("floats", AP::FLOATS);
  fl->add_floats(1.5f);
  AP* strs = add("strings", AP::STRINGS);
  strs->add_strings("u");
  strs->add_strings("v");
  AP* t = add("t", AP::TENSOR);
  t->mutable_t()->set_data_type(TP::INT64);
  t->mutable_t()->add_dims(2);
  t->mutable_t()->add_int64_data(4);
  t->mutable_t()->add_int64_data(5);
  add("empty_ints", AP::INTS);
  // Pre-IR-3 attributes carry no type: the one value that is set decides.
  AP* untyped = n.add_attribute();
  untyped->set_name("legacy");
  untyped->set_f(2.f);
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedNode& c = *r.graph().nodes.back();
  EXPECT_EQ(c.attr("i")->type, LOOM_ATTR_INT);
  EXPECT_EQ(c.attr("i")->i, -3);
  EXPECT_EQ(c.attr("f")->f, 0.25f);
  EXPECT_EQ(c.attr("s")->s, std::string("a\0b", 3));
  EXPECT_EQ(c.attr("ints")->ints, (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(c.attr("floats")->floats, (std::vector<float>{1.5f}));
  EXPECT_EQ(c.attr("strings")->strings, (std::vector<std::string>{"u", "v"}));
  EXPECT_EQ(c.attr("t")->type, LOOM_ATTR_TENSOR);
  EXPECT_EQ(c.attr("t")->tensor.dtype, LOOM_DTYPE_INT64);
  EXPECT_EQ(c.attr("t")->tensor.as<int64_t>(), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(c.attr("empty_ints")->type, LOOM_ATTR_INTS);
  EXPECT_TRUE(c.attr("empty_ints")->ints.empty());
  EXPECT_EQ(c.attr("legacy")->type, LOOM_ATTR_FLOAT);
  EXPECT_EQ(c.attr("legacy")->f, 2.f);
}

TEST(OnnxGraph, UnrepresentableAttributeTypeIsUnsupported) {
  ::onnx::ModelProto m = relu_model();
  ::onnx::NodeProto& n = add_node(*m.mutable_graph(), "Custom", {"y"}, {"z"}, "custom");
  AP* a = n.add_attribute();
  a->set_name("many");
  a->set_type(AP::TENSORS);
  a->add_tensors()->set_data_type(TP::FLOAT);
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_UNSUPPORTED);
  EXPECT_EQ(r.outcome.message,
            "node 'custom' (Custom) attribute 'many' has type TENSORS, which Loom's graph builder "
            "cannot represent");
}

// If(cond) { then: Add(x_outer, one) } else { Identity(x_outer) }: bodies use outer names.
::onnx::GraphProto branch(const std::string& name, bool add) {
  ::onnx::GraphProto g;
  g.set_name(name);
  if (add) {
    TP& one = add_initializer(g, "one", TP::FLOAT, {});
    one.add_float_data(1.f);
    add_node(g, "Add", {"y", "one"}, {name + "_out"});
  } else {
    add_node(g, "Identity", {"y"}, {name + "_out"});
  }
  add_output(g, name + "_out", TP::FLOAT, {std::string("N"), int64_t{3}});
  return g;
}

TEST(OnnxGraph, NestedIfBranches) {
  ::onnx::ModelProto m = relu_model();
  auto& g = *m.mutable_graph();
  add_input(g, "cond", TP::BOOL, {});
  ::onnx::NodeProto& node = add_node(g, "If", {"cond"}, {"r"}, "if");
  AP* then_attr = node.add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(AP::GRAPH);
  *then_attr->mutable_g() = branch("then", true);
  AP* else_attr = node.add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(AP::GRAPH);
  *else_attr->mutable_g() = branch("else", false);
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedNode& n = *r.graph().nodes.back();
  ASSERT_EQ(n.op_type, "If");
  const RecordedAttr* then_g = n.attr("then_branch");
  ASSERT_TRUE(then_g && then_g->graph);
  EXPECT_FALSE(then_g->graph->top_level);
  ASSERT_EQ(then_g->graph->nodes.size(), 1u);
  EXPECT_EQ(then_g->graph->nodes[0]->inputs, (std::vector<std::string>{"y", "one"}));
  ASSERT_NE(then_g->graph->initializer("one"), nullptr);
  ASSERT_EQ(then_g->graph->outputs.size(), 1u);
  EXPECT_EQ(then_g->graph->outputs[0].name, "then_out");
  const RecordedAttr* else_g = n.attr("else_branch");
  ASSERT_TRUE(else_g && else_g->graph);
  EXPECT_EQ(else_g->graph->nodes[0]->op_type, "Identity");
}

TEST(OnnxGraph, NestedLoopBodyWithItsOwnInputsAndNestedIf) {
  ::onnx::ModelProto m = relu_model();
  auto& g = *m.mutable_graph();
  add_input(g, "trip", TP::INT64, {});
  add_input(g, "cond", TP::BOOL, {});
  ::onnx::NodeProto& loop = add_node(g, "Loop", {"trip", "cond", "y"}, {"acc_final"}, "loop");
  AP* body_attr = loop.add_attribute();
  body_attr->set_name("body");
  body_attr->set_type(AP::GRAPH);
  ::onnx::GraphProto& body = *body_attr->mutable_g();
  body.set_name("body");
  add_input(body, "i", TP::INT64, {});
  add_input(body, "c_in", TP::BOOL, {});
  add_input(body, "acc", TP::FLOAT, {std::string("N"), int64_t{3}});
  add_node(body, "Identity", {"c_in"}, {"c_out"});
  ::onnx::NodeProto& inner_if = add_node(body, "If", {"c_in"}, {"acc_out"}, "inner_if");
  AP* t = inner_if.add_attribute();
  t->set_name("then_branch");
  t->set_type(AP::GRAPH);
  *t->mutable_g() = branch("then", true);
  AP* e = inner_if.add_attribute();
  e->set_name("else_branch");
  e->set_type(AP::GRAPH);
  *e->mutable_g() = branch("else", false);
  add_output(body, "c_out", TP::BOOL, {});
  add_output(body, "acc_out", TP::FLOAT, {std::string("N"), int64_t{3}});
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedAttr* b = r.graph().nodes.back()->attr("body");
  ASSERT_TRUE(b && b->graph);
  EXPECT_EQ(b->graph->inputs.size(), 3u);
  EXPECT_EQ(b->graph->outputs.size(), 2u);
  ASSERT_EQ(b->graph->nodes.size(), 2u);
  const RecordedAttr* inner = b->graph->nodes[1]->attr("then_branch");
  ASSERT_TRUE(inner && inner->graph);
  EXPECT_EQ(inner->graph->nodes[0]->op_type, "Add");
}

TEST(OnnxGraph, ErrorsInNestedGraphsNameTheirScope) {
  ::onnx::ModelProto m = relu_model();
  auto& g = *m.mutable_graph();
  add_input(g, "cond", TP::BOOL, {});
  ::onnx::NodeProto& node = add_node(g, "If", {"cond"}, {"r"}, "if");
  AP* then_attr = node.add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(AP::GRAPH);
  ::onnx::GraphProto bad = branch("then", true);
  bad.mutable_initializer(0)->set_raw_data("xx");
  bad.mutable_initializer(0)->clear_float_data();
  *then_attr->mutable_g() = bad;
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "graph 'then' of node 'if' (If) attribute 'then_branch': initializer 'one': raw_data "
            "has 2 bytes but shape scalar float32 needs 4");
}

TEST(OnnxGraph, SequenceTypedInputIsDeclaredAsASequence) {
  ::onnx::ModelProto m = relu_model();
  auto* in = m.mutable_graph()->add_input();
  in->set_name("seq");
  in->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(TP::FLOAT);
  Loaded r = load_model(m);
  ASSERT_EQ(r.outcome.code, LOOM_OK) << r.outcome.message;
  const RecordedValue* seq = r.builder->graph().input("seq");
  ASSERT_NE(seq, nullptr);
  EXPECT_EQ(seq->container_flags, LOOM_VALUE_SEQUENCE);
  EXPECT_EQ(seq->dtype, LOOM_DTYPE_FLOAT32);  // the elements' type
}

TEST(OnnxGraph, OptionalOutputsLoadAndMapOutputsAreUnsupported) {
  ::onnx::ModelProto m = relu_model();
  auto* out = m.mutable_graph()->add_output();
  out->set_name("opt");
  out->mutable_type()
      ->mutable_optional_type()
      ->mutable_elem_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(TP::INT64);
  Loaded r = load_model(m);
  ASSERT_EQ(r.outcome.code, LOOM_OK) << r.outcome.message;
  ASSERT_EQ(r.builder->graph().outputs.size(), 2u);
  EXPECT_EQ(r.builder->graph().outputs[1].container_flags,
            LOOM_VALUE_SEQUENCE | LOOM_VALUE_OPTIONAL);

  ::onnx::ModelProto m2 = relu_model();
  auto* map = m2.mutable_graph()->add_output();
  map->set_name("probs");
  auto* mt = map->mutable_type()->mutable_map_type();
  mt->set_key_type(TP::INT64);
  mt->mutable_value_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  Loaded r2 = load_model(m2);
  EXPECT_EQ(r2.outcome.code, LOOM_ERROR_UNSUPPORTED);
  EXPECT_NE(r2.outcome.message.find("'probs' has type map(int64,tensor(float32))"),
            std::string::npos)
      << r2.outcome.message;
}

TEST(OnnxGraph, SequenceValueInfoIsOnlyAHintAndSkipped) {
  ::onnx::ModelProto m = relu_model();
  auto* vi = m.mutable_graph()->add_value_info();
  vi->set_name("inner_seq");
  vi->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(TP::FLOAT);
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_TRUE(r.graph().value_infos.empty());
}

TEST(OnnxGraph, BuilderErrorsPropagateAndReleaseBorrowedData) {
  // Fail each builder call in turn: the load must stop with that error, never crash.
  ::onnx::ModelProto m = relu_model();
  TP& b = add_initializer(*m.mutable_graph(), "b", TP::FLOAT, {1});
  b.add_float_data(1.f);
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  for (int call = 0; call < 12; ++call) {
    sdk::set_host(&fake_host());
    FakeBuilder builder;
    builder.fail_at_call = call;
    loom_load_args_t args{sizeof args, "m.onnx", nullptr,
                          reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0u};
    Outcome o = take(format_descriptor().load(nullptr, &args, &builder.api(), builder.handle()));
    if (o.code == LOOM_OK) {
      EXPECT_GE(call, 8) << "every call before the last one must be reached";
      continue;
    }
    EXPECT_EQ(o.code, LOOM_ERROR_INVALID_ARGUMENT) << o.message;
    EXPECT_EQ(o.message, "injected builder failure");
  }
  EXPECT_EQ(live_statuses(), 0);
}

}  // namespace
}  // namespace loom::onnx::testing
