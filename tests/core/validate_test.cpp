// Building graphs through the builder API (as format plugins do) and validating them.
#include "builder.hpp"
#include "schema_registry.hpp"
#include "status.hpp"
#include "validate.hpp"

#include <gtest/gtest.h>

using namespace loom::core;

namespace {

class BuilderTest : public ::testing::Test {
 protected:
  BuilderTest() {
    model.graph = std::make_shared<Graph>();
    b.model = &model;
    b.graph = model.graph.get();
    api = builder_api();
    ok(api->set_opset(&b, "", 13));
  }
  static void ok(loom_status_t* s) {
    if (s) {
      std::string m = s->message;
      delete s;
      FAIL() << m;
    }
  }
  static std::string err(loom_status_t* s) {
    std::string m = s ? s->message : "";
    delete s;
    return m;
  }
  loom_node_builder_t* node(const char* op, std::vector<const char*> in, std::vector<const char*> out,
                            const char* name = "") {
    loom_node_builder_t* n = nullptr;
    ok(api->add_node(&b, name, op, "", in.size(), in.data(), out.size(), out.data(), &n));
    return n;
  }
  std::string validate() {
    try {
      validate_model(model, schemas);
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  }

  Model model;
  loom_graph_builder_t b;
  const loom_builder_api_t* api;
  SchemaRegistry schemas;
};

TEST_F(BuilderTest, SortsNodesTopologically) {
  int64_t d = 4;
  ok(api->add_input(&b, "x", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  node("Neg", {"t"}, {"y"}, "second");  // consumes what the next node makes
  node("Relu", {"x"}, {"t"}, "first");
  ok(api->add_output(&b, "y", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  EXPECT_EQ(validate(), "");
  EXPECT_EQ(model.graph->nodes[0].name, "first");
  EXPECT_EQ(model.graph->nodes[1].name, "second");
  EXPECT_EQ(model.graph->nodes[0].opset, 13);
}

TEST_F(BuilderTest, ReportsDanglingNamesAndCycles) {
  node("Add", {"a", "missing"}, {"b"}, "n1");
  node("Neg", {"b"}, {"a"}, "n2");
  ok(api->add_output(&b, "b", LOOM_DTYPE_FLOAT32, -1, nullptr, nullptr));
  std::string e = validate();
  EXPECT_NE(e.find("value 'missing' is used but not produced"), std::string::npos) << e;
  EXPECT_NE(e.find("the graph has a cycle"), std::string::npos) << e;
}

TEST_F(BuilderTest, RejectsTwoProducersAndBadInitializers) {
  node("Relu", {"x"}, {"y"});
  loom_node_builder_t* n = nullptr;
  const char* in[] = {"x"};
  const char* out[] = {"y"};
  EXPECT_NE(err(api->add_node(&b, "", "Neg", "", 1, in, 1, out, &n)).find("already produced"), std::string::npos);
  int64_t dims[] = {2, 3};
  float data[5] = {};
  EXPECT_NE(err(api->add_initializer(&b, "w", LOOM_DTYPE_FLOAT32, 2, dims, data, sizeof data))
                .find("20 bytes of data for 6 float32 elements"), std::string::npos);
  int64_t huge[] = {1ll << 40, 1ll << 40};
  EXPECT_NE(err(api->add_initializer(&b, "h", LOOM_DTYPE_FLOAT32, 2, huge, data, sizeof data)), "");
  int64_t neg[] = {-3};
  EXPECT_NE(err(api->add_initializer(&b, "n", LOOM_DTYPE_FLOAT32, 1, neg, data, 0)).find("negative"), std::string::npos);
}

TEST_F(BuilderTest, WrongInputCountIsReported) {
  int64_t d = 4;
  ok(api->add_input(&b, "x", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  node("Relu", {"x", "x"}, {"y"}, "r");
  ok(api->add_output(&b, "y", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  std::string e = validate();
  EXPECT_NE(e.find("Relu node 'r' has 2 inputs; opset 13 allows 1"), std::string::npos) << e;
}

TEST_F(BuilderTest, NestedGraphsResolveOuterScopeNames) {
  int64_t d = 1;
  ok(api->add_input(&b, "cond", LOOM_DTYPE_BOOL, 1, &d, nullptr));
  ok(api->add_input(&b, "x", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  loom_node_builder_t* n = node("If", {"cond"}, {"y"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    loom_graph_builder_t* sub = nullptr;
    ok(api->add_attr_graph(n, branch, &sub));
    const char* in[] = {"x"};
    const char* out[] = {"r"};
    loom_node_builder_t* inner = nullptr;
    ok(api->add_node(sub, "", std::string(branch) == "then_branch" ? "Relu" : "Neg", "", 1, in, 1, out, &inner));
    ok(api->add_output(sub, "r", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  }
  ok(api->add_output(&b, "y", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  EXPECT_EQ(validate(), "");
  const Node& if_node = model.graph->nodes[0];
  ASSERT_EQ(if_node.implicit_inputs.size(), 1u);
  EXPECT_EQ(model.graph->values[if_node.implicit_inputs[0]].name, "x");
  const Graph& then_graph = *if_node.attributes[0].graph;
  EXPECT_TRUE(then_graph.values[then_graph.find("x")].outer_scope);
}

TEST_F(BuilderTest, RecursionBombIsRefused) {
  loom_node_builder_t* n = node("If", {"c"}, {"y"});
  loom_graph_builder_t* g = nullptr;
  std::string e;
  for (int depth = 0; depth < 100 && e.empty(); ++depth) {
    loom_status_t* s = api->add_attr_graph(n, "then_branch", &g);
    if (s) {
      e = err(s);
      break;
    }
    const char* in[] = {"c"};
    const char* out[] = {"y"};
    ok(api->add_node(g, "", "If", "", 1, in, 1, out, &n));
  }
  EXPECT_NE(e.find("nested more than 64 levels"), std::string::npos) << e;
}

TEST_F(BuilderTest, UndeclaredDomainIsReported) {
  loom_node_builder_t* n = nullptr;
  const char* in[] = {"x"};
  const char* out[] = {"y"};
  int64_t d = 1;
  ok(api->add_input(&b, "x", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  ok(api->add_node(&b, "c", "Custom", "com.example", 1, in, 1, out, &n));
  ok(api->add_output(&b, "y", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  std::string e = validate();
  EXPECT_NE(e.find("uses domain 'com.example' which the model does not import"), std::string::npos) << e;
}

}  // namespace
