// Building graphs through the builder API (as format plugins do) and validating them.
#include "validate.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "builder.hpp"
#include "schema_registry.hpp"
#include "status.hpp"

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
    // The opset tests decide LOOM_ALLOW_NEWER_OPSETS themselves, whatever the caller's shell has.
    if (const char* v = std::getenv("LOOM_ALLOW_NEWER_OPSETS")) saved_env = v;
    unsetenv("LOOM_ALLOW_NEWER_OPSETS");
  }
  ~BuilderTest() override {
    if (saved_env)
      setenv("LOOM_ALLOW_NEWER_OPSETS", saved_env->c_str(), 1);
    else
      unsetenv("LOOM_ALLOW_NEWER_OPSETS");
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
  loom_node_builder_t* node(const char* op, std::vector<const char*> in,
                            std::vector<const char*> out, const char* name = "") {
    loom_node_builder_t* n = nullptr;
    ok(api->add_node(&b, name, op, "", in.size(), in.data(), out.size(), out.data(), &n));
    return n;
  }
  std::string validate(const ValidateOptions& options = {}) {
    try {
      validate_model(model, schemas, options);
      return "";
    } catch (const Error& e) {
      code = e.code();
      return e.what();
    }
  }
  // x -> Relu -> y; `domain`/`op` add a second node y -> op -> z of that domain when given.
  void relu_model(const char* domain = nullptr, const char* op = nullptr) {
    int64_t d = 4;
    ok(api->add_input(&b, "x", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
    node("Relu", {"x"}, {"y"}, "relu");
    const char* last = "y";
    if (domain) {
      const char* in[] = {"y"};
      const char* out[] = {"z"};
      loom_node_builder_t* n = nullptr;
      ok(api->add_node(&b, "custom", op, domain, 1, in, 1, out, &n));
      last = "z";
    }
    ok(api->add_output(&b, last, LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  }

  Model model;
  loom_graph_builder_t b;
  const loom_builder_api_t* api;
  SchemaRegistry schemas;
  loom_status_code_t code = LOOM_OK;
  std::optional<std::string> saved_env;
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
  EXPECT_NE(err(api->add_node(&b, "", "Neg", "", 1, in, 1, out, &n)).find("already produced"),
            std::string::npos);
  int64_t dims[] = {2, 3};
  float data[5] = {};
  EXPECT_NE(err(api->add_initializer(&b, "w", LOOM_DTYPE_FLOAT32, 2, dims, data, sizeof data))
                .find("20 bytes of data for 6 float32 elements"),
            std::string::npos);
  int64_t huge[] = {1ll << 40, 1ll << 40};
  EXPECT_NE(err(api->add_initializer(&b, "h", LOOM_DTYPE_FLOAT32, 2, huge, data, sizeof data)), "");
  int64_t neg[] = {-3};
  EXPECT_NE(
      err(api->add_initializer(&b, "n", LOOM_DTYPE_FLOAT32, 1, neg, data, 0)).find("negative"),
      std::string::npos);
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
    ok(api->add_node(sub, "", std::string(branch) == "then_branch" ? "Relu" : "Neg", "", 1, in, 1,
                     out, &inner));
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
  EXPECT_NE(e.find("uses domain 'com.example' which the model does not import"), std::string::npos)
      << e;
}

// ---- opset range ----------------------------------------------------------------------------

TEST_F(BuilderTest, DefaultOpsetNewerThanEverySchemaIsRefused) {
  ok(api->set_opset(&b, "", 999));
  relu_model();
  EXPECT_EQ(schemas.newest_version(""), 28);
  EXPECT_EQ(schemas.newest_version("ai.onnx"), 28);
  EXPECT_EQ(validate(),
            "the model imports opset 999 of the default domain (ai.onnx), newer than the newest "
            "this runtime supports (28): re-export the model with opset <= 28 for ai.onnx "
            "(LOOM_ALLOW_NEWER_OPSETS=1 accepts it anyway, with a warning)");
  EXPECT_EQ(code, LOOM_ERROR_UNSUPPORTED);
}

TEST_F(BuilderTest, NewestKnownOpsetIsAcceptedAndTheNextRefused) {
  ok(api->set_opset(&b, "", 28));
  relu_model();
  EXPECT_EQ(validate(), "");
  EXPECT_EQ(model.graph->nodes[0].opset, 28);
  model.opsets[""] = 29;
  std::string e = validate();
  EXPECT_NE(e.find("imports opset 29 of the default domain"), std::string::npos) << e;
}

TEST_F(BuilderTest, NewerOpsetIsAcceptedWithAWarningWhenAllowed) {
  ok(api->set_opset(&b, "", 999));
  relu_model();
  std::vector<std::string> warnings;
  ValidateOptions allow{.allow_newer_opsets = true,
                        .warn = [&](const std::string& w) { warnings.push_back(w); }};
  EXPECT_EQ(validate(allow), "");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("imports opset 999 of the default domain (ai.onnx), newer than the "
                             "newest this runtime supports (28)"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("accepted because of the application's allow-newer-opsets option: "
                             "it is validated and run with the opset-28 schemas"),
            std::string::npos)
      << warnings[0];
  // Validated against the newest schemas: the node keeps the model's opset.
  EXPECT_EQ(model.graph->nodes[0].opset, 999);
}

TEST_F(BuilderTest, EnvironmentVariableDecidesWhenTheOptionIsUnset) {
  ok(api->set_opset(&b, "", 35));
  relu_model();
  std::vector<std::string> warnings;
  ValidateOptions unset{.allow_newer_opsets = std::nullopt,
                        .warn = [&](const std::string& w) { warnings.push_back(w); }};
  setenv("LOOM_ALLOW_NEWER_OPSETS", "1", 1);
  EXPECT_EQ(validate(unset), "");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("opset 35 of the default domain (ai.onnx), newer than the newest "
                             "this runtime supports (28); accepted because of "
                             "LOOM_ALLOW_NEWER_OPSETS=1"),
            std::string::npos)
      << warnings[0];
  // Any other value is not a yes.
  setenv("LOOM_ALLOW_NEWER_OPSETS", "yes", 1);
  EXPECT_NE(validate(unset).find("opset 35"), std::string::npos);
}

TEST_F(BuilderTest, ExplicitRefusalIgnoresTheEnvironment) {
  ok(api->set_opset(&b, "", 35));
  relu_model();
  setenv("LOOM_ALLOW_NEWER_OPSETS", "1", 1);
  ValidateOptions refuse{.allow_newer_opsets = false, .warn = nullptr};
  // The application decided: no hint at a variable that would not help.
  EXPECT_EQ(validate(refuse),
            "the model imports opset 35 of the default domain (ai.onnx), newer than the newest "
            "this runtime supports (28): re-export the model with opset <= 28 for ai.onnx");
}

TEST_F(BuilderTest, OtherDomainsCountOnlyWhenANodeUsesThem) {
  // Exporters import ai.onnx.ml without using it: an unused newer version is harmless.
  ok(api->set_opset(&b, "ai.onnx.ml", 99));
  relu_model("ai.onnx.ml", "Normalizer");
  EXPECT_EQ(schemas.newest_version("ai.onnx.ml"), 5);
  std::string e = validate();
  EXPECT_EQ(e,
            "the model imports opset 99 of domain ai.onnx.ml, newer than the newest this runtime "
            "supports (5): re-export the model with opset <= 5 for ai.onnx.ml "
            "(LOOM_ALLOW_NEWER_OPSETS=1 accepts it anyway, with a warning)");
  model.opsets["ai.onnx.ml"] = 5;
  EXPECT_EQ(validate(), "");
}

TEST_F(BuilderTest, UnusedNewerDomainIsAccepted) {
  ok(api->set_opset(&b, "ai.onnx.ml", 99));
  relu_model();
  EXPECT_EQ(validate(), "");
}

TEST_F(BuilderTest, UseInsideANestedGraphCounts) {
  ok(api->set_opset(&b, "ai.onnx.ml", 7));
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
    ok(api->add_node(sub, "", "Normalizer", "ai.onnx.ml", 1, in, 1, out, &inner));
    ok(api->add_output(sub, "r", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  }
  ok(api->add_output(&b, "y", LOOM_DTYPE_FLOAT32, 1, &d, nullptr));
  std::string e = validate();
  EXPECT_NE(e.find("imports opset 7 of domain ai.onnx.ml"), std::string::npos) << e;
}

TEST_F(BuilderTest, PluginDomainsFollowTheSameRule) {
  loom_op_schema_t swish{};
  swish.struct_size = sizeof swish;
  swish.domain = "com.example";
  swish.op_type = "Swish";
  swish.since_version = 1;
  swish.min_inputs = swish.max_inputs = swish.min_outputs = swish.max_outputs = 1;
  schemas.add(swish, "example-plugin");
  EXPECT_EQ(schemas.newest_version("com.example"), 1);
  ok(api->set_opset(&b, "com.example", 2));
  relu_model("com.example", "Swish");
  std::string e = validate();
  EXPECT_NE(e.find("imports opset 2 of domain com.example, newer than the newest this runtime "
                   "supports (1): re-export the model with opset <= 1 for com.example"),
            std::string::npos)
      << e;
  model.opsets["com.example"] = 1;
  EXPECT_EQ(validate(), "");
}

TEST_F(BuilderTest, DomainWithoutSchemasIsAnUnknownOpNotAnOpsetError) {
  ok(api->set_opset(&b, "com.unknown", 42));
  relu_model("com.unknown", "Mystery");
  EXPECT_EQ(schemas.newest_version("com.unknown"), 0);
  std::string e = validate();
  EXPECT_NE(e.find("ops no installed plugin knows: Mystery (domain com.unknown, opset 42)"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("newer than"), std::string::npos) << e;
}

}  // namespace
