// Model-local functions are inlined: calls become the function's nodes with bound names,
// resolved attribute references and merged opsets; recursive or exploding functions are
// refused.
#include <gtest/gtest.h>

#include "function_inliner.hpp"
#include "model_helpers.hpp"

namespace loom::onnx::testing {
namespace {

using TP = ::onnx::TensorProto;
using AP = ::onnx::AttributeProto;

::onnx::FunctionProto& add_function(::onnx::ModelProto& m, const std::string& name,
                                    std::initializer_list<std::string> inputs,
                                    std::initializer_list<std::string> outputs) {
  auto* f = m.add_functions();
  f->set_name(name);
  f->set_domain("custom");
  for (const auto& i : inputs) f->add_input(i);
  for (const auto& o : outputs) f->add_output(o);
  auto* op = f->add_opset_import();
  op->set_domain("");
  op->set_version(17);
  return *f;
}

::onnx::NodeProto& add_body_node(::onnx::FunctionProto& f, const std::string& op,
                                 std::initializer_list<std::string> inputs,
                                 std::initializer_list<std::string> outputs,
                                 const std::string& domain = "") {
  auto* n = f.add_node();
  n->set_op_type(op);
  n->set_domain(domain);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

::onnx::NodeProto& add_call(::onnx::GraphProto& g, const std::string& fn,
                            std::initializer_list<std::string> inputs,
                            std::initializer_list<std::string> outputs, const std::string& name) {
  ::onnx::NodeProto& n = add_node(g, fn, inputs, outputs, name);
  n.set_domain("custom");
  return n;
}

TEST(OnnxFunctions, CallsAreReplacedByBodiesWithUniqueIntermediates) {
  ::onnx::ModelProto m = relu_model();
  ::onnx::FunctionProto& f = add_function(m, "AddRelu", {"a", "b"}, {"out"});
  add_body_node(f, "Add", {"a", "b"}, {"t"}).set_name("add");
  add_body_node(f, "Relu", {"t"}, {"out"});
  auto& g = *m.mutable_graph();
  add_call(g, "AddRelu", {"y", "x"}, {"z1"}, "f1");
  add_call(g, "AddRelu", {"z1", "x"}, {"z2"}, "f2");
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  auto& nodes = r.graph().nodes;
  ASSERT_EQ(nodes.size(), 5u);
  EXPECT_EQ(nodes[1]->op_type, "Add");
  EXPECT_EQ(nodes[1]->name, "f1/add");
  EXPECT_EQ(nodes[1]->inputs, (std::vector<std::string>{"y", "x"}));
  EXPECT_EQ(nodes[1]->outputs, (std::vector<std::string>{"f1/t"}));
  EXPECT_EQ(nodes[2]->inputs, (std::vector<std::string>{"f1/t"}));
  EXPECT_EQ(nodes[2]->outputs, (std::vector<std::string>{"z1"}));
  EXPECT_EQ(nodes[3]->inputs, (std::vector<std::string>{"z1", "x"}));
  EXPECT_EQ(nodes[3]->outputs, (std::vector<std::string>{"f2/t"}));
  EXPECT_EQ(nodes[4]->outputs, (std::vector<std::string>{"z2"}));
  for (const auto& n : nodes) EXPECT_EQ(n->domain, "");
}

TEST(OnnxFunctions, AttributeReferencesTakeTheCallsValueOrTheDefault) {
  ::onnx::ModelProto m = relu_model();
  ::onnx::FunctionProto& f = add_function(m, "Leaky", {"x"}, {"y"});
  f.add_attribute("alpha");
  AP* ref = add_body_node(f, "LeakyRelu", {"x"}, {"y"}).add_attribute();
  ref->set_name("alpha");
  ref->set_type(AP::FLOAT);
  ref->set_ref_attr_name("alpha");
  auto& g = *m.mutable_graph();
  AP* given = add_call(g, "Leaky", {"y"}, {"l1"}, "given").add_attribute();
  given->set_name("alpha");
  given->set_type(AP::FLOAT);
  given->set_f(0.3f);
  add_call(g, "Leaky", {"y"}, {"l2"}, "absent");
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  ASSERT_EQ(r.graph().nodes.size(), 3u);
  ASSERT_NE(r.graph().nodes[1]->attr("alpha"), nullptr);
  EXPECT_EQ(r.graph().nodes[1]->attr("alpha")->f, 0.3f);
  EXPECT_EQ(r.graph().nodes[2]->attr("alpha"), nullptr);  // the op's default applies

  // IR 9 attribute defaults (FunctionProto.attribute_proto, field 11) fill in absent values.
  AP def;
  def.set_name("alpha");
  def.set_type(AP::FLOAT);
  def.set_f(0.5f);
  m.mutable_functions(0)->mutable_unknown_fields()->AddLengthDelimited(11, def.SerializeAsString());
  Loaded d = load_model(m);
  ASSERT_TRUE(d.ok()) << d.outcome.message;
  ASSERT_NE(d.graph().nodes[2]->attr("alpha"), nullptr);
  EXPECT_EQ(d.graph().nodes[2]->attr("alpha")->f, 0.5f);
  EXPECT_EQ(d.graph().nodes[1]->attr("alpha")->f, 0.3f);
}

TEST(OnnxFunctions, NestedCallsSubgraphsAndOmittedValues) {
  ::onnx::ModelProto m = relu_model();
  // Inner(a) -> Neg(a); Outer(a, cond) -> If(cond){ Identity(a) }{ Inner(a) }, plus an unused
  // second output the call omits.
  ::onnx::FunctionProto& inner = add_function(m, "Inner", {"a"}, {"b"});
  add_body_node(inner, "Neg", {"a"}, {"b"});
  ::onnx::FunctionProto& outer = add_function(m, "Outer", {"a", "cond"}, {"r", "extra"});
  ::onnx::NodeProto& branch = add_body_node(outer, "If", {"cond"}, {"r"});
  AP* then_g = branch.add_attribute();
  then_g->set_name("then_branch");
  then_g->set_type(AP::GRAPH);
  add_node(*then_g->mutable_g(), "Identity", {"a"}, {"then_out"});
  add_output(*then_g->mutable_g(), "then_out", TP::FLOAT, {});
  AP* else_g = branch.add_attribute();
  else_g->set_name("else_branch");
  else_g->set_type(AP::GRAPH);
  ::onnx::NodeProto& call_in_branch = add_node(*else_g->mutable_g(), "Inner", {"a"}, {"else_out"});
  call_in_branch.set_domain("custom");
  add_output(*else_g->mutable_g(), "else_out", TP::FLOAT, {});
  add_body_node(outer, "Identity", {"a"}, {"extra"});
  auto& g = *m.mutable_graph();
  add_input(g, "c", TP::BOOL, {});
  add_call(g, "Outer", {"y", "c"}, {"res", ""}, "outer");
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  auto& nodes = r.graph().nodes;
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[1]->op_type, "If");
  EXPECT_EQ(nodes[1]->outputs, (std::vector<std::string>{"res"}));
  const RecordedGraph& then_sub = *nodes[1]->attr("then_branch")->graph;
  EXPECT_EQ(then_sub.nodes[0]->inputs, (std::vector<std::string>{"y"}));  // outer name bound
  const RecordedGraph& else_sub = *nodes[1]->attr("else_branch")->graph;
  ASSERT_EQ(else_sub.nodes.size(), 1u);
  EXPECT_EQ(else_sub.nodes[0]->op_type, "Neg");  // the call inside the subgraph was inlined
  EXPECT_EQ(else_sub.nodes[0]->inputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(else_sub.nodes[0]->outputs, (std::vector<std::string>{"else_out"}));
  EXPECT_EQ(nodes[2]->op_type, "Identity");
  EXPECT_EQ(nodes[2]->outputs, (std::vector<std::string>{"outer/extra"}));  // omitted: fresh
}

TEST(OnnxFunctions, OpsetsOfFunctionsAreMergedOrConflictsRefused) {
  ::onnx::ModelProto m = relu_model();
  ::onnx::FunctionProto& f = add_function(m, "Fused", {"a"}, {"b"});
  auto* ms = f.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  add_body_node(f, "Gelu", {"a"}, {"b"}, "com.microsoft");
  add_call(*m.mutable_graph(), "Fused", {"y"}, {"z"}, "fused");
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_EQ(r.graph().opsets.at("com.microsoft"), 1);
  EXPECT_EQ(r.graph().nodes[1]->domain, "com.microsoft");

  m.mutable_functions(0)->mutable_opset_import(0)->set_version(13);
  Loaded c = load_model(m);
  EXPECT_EQ(c.outcome.code, LOOM_ERROR_UNSUPPORTED);
  EXPECT_EQ(c.outcome.message,
            "model-local function 'custom.Fused' imports opset 'ai.onnx' version 13 but the "
            "model imports version 17; Loom cannot mix versions of one domain in one graph");
}

TEST(OnnxFunctions, RecursionIsRefused) {
  ::onnx::ModelProto m = relu_model();
  ::onnx::FunctionProto& f = add_function(m, "Loop", {"a"}, {"b"});
  add_body_node(f, "Loop", {"a"}, {"b"}, "custom");
  add_call(*m.mutable_graph(), "Loop", {"y"}, {"z"}, "rec");
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("nest more than 32 levels deep (recursive functions are not "
                                   "allowed)"),
            std::string::npos)
      << r.outcome.message;
  EXPECT_LT(r.outcome.message.size(), 300u);
}

TEST(OnnxFunctions, ExponentialInliningIsBounded) {
  // F0 calls F1 twice, F1 calls F2 twice, ... 30 levels: 2^30 nodes if inlined naively.
  ::onnx::ModelProto m = relu_model();
  const int levels = 30;
  for (int i = 0; i < levels; ++i) {
    ::onnx::FunctionProto& f = add_function(m, "F" + std::to_string(i), {"a"}, {"b"});
    if (i + 1 < levels) {
      add_body_node(f, "F" + std::to_string(i + 1), {"a"}, {"t"}, "custom");
      add_body_node(f, "F" + std::to_string(i + 1), {"t"}, {"b"}, "custom");
    } else {
      add_body_node(f, "Neg", {"a"}, {"b"});
    }
  }
  add_call(*m.mutable_graph(), "F0", {"y"}, {"z"}, "bomb");
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message, "inlining the model-local functions would create more than " +
                                   std::to_string(kMaxInlinedNodes) + " nodes");
}

TEST(OnnxFunctions, CallWithMoreInputsThanDeclared) {
  ::onnx::ModelProto m = relu_model();
  ::onnx::FunctionProto& f = add_function(m, "One", {"a"}, {"b"});
  add_body_node(f, "Neg", {"a"}, {"b"});
  add_call(*m.mutable_graph(), "One", {"y", "x"}, {"z"}, "bad");
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "node 'bad' of function 'custom.One' passes 2 inputs and 1 outputs; the function "
            "declares 1 and 1");
}

TEST(OnnxFunctions, DeeplyNestedGraphsAreBoundedWhileInlining) {
  ::onnx::ModelProto m = relu_model();
  add_body_node(add_function(m, "Unused", {"a"}, {"b"}), "Neg", {"a"}, {"b"});
  ::onnx::GraphProto* g = m.mutable_graph();
  for (int i = 0; i < 70; ++i) {
    AP* a = add_node(*g, "If", {"cond"}, {"r"}).add_attribute();
    a->set_name("then_branch");
    a->set_type(AP::GRAPH);
    g = a->mutable_g();
  }
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("nested more than 64 levels deep"), std::string::npos)
      << r.outcome.message;
}

}  // namespace
}  // namespace loom::onnx::testing
