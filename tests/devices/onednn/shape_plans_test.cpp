// Plans by the shapes of the run on onednn: a model with symbolic dimensions runs wholly on the
// device at every shape, and the plan cache stays within its bounds, freeing what it evicts.
#include <gtest/gtest.h>

#include <loom/loom.hpp>
#include <utility>

#include "onednn_test_util.hpp"

namespace loom::onednn_testing {
namespace {

TEST(OnednnShapePlans, SymbolicBatchAndImageSizeRunOnTheDevice) {
  expect_symbolic_model_runs_on("onednn");
}

// Models hostile at run time (docs/limits.md) with onednn first in the device list: the Loop
// runs as a host step of the core, which enforces the limits and cancellation itself.
TEST(OnednnHostileRuntime, EachEndsInAClearError) {
  expect_hostile_runtime_models_fail_cleanly("onednn");
}

// onednn polls the run's cancel flag and deadline before every primitive.
TEST(OnednnHostileRuntime, ALongSubgraphStopsWhenCancelled) {
  expect_long_subgraph_cancelled("onednn");
}

constexpr int64_t kK = 512, kN = 2048;  // 4 MiB of weights, which onednn copies per plan

// x [N, 512] x w [512, 2048] -> Relu, with a symbolic N.
std::filesystem::path matmul_model() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {-1, kK});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {kK, kN}, 1, -0.1, 0.1));
  m.node("MatMul", {"x", "w"}, {"p"});
  m.node("Relu", {"p"}, {"y"});
  m.output("y");
  return m.save();
}


TestSession bounded_session(loom_runtime_t* runtime, loom_model_t* model, int64_t entries,
                            int64_t bytes) {
  loom_session_options_t o{};
  o.struct_size = sizeof o;
  o.devices = "onednn";
  o.no_fallback = true;
  o.threads = 1;
  o.plan_cache_entries = entries;
  o.plan_cache_bytes = bytes;
  return open_session(runtime, model, o);
}

std::vector<std::pair<std::string, Tensor>> batch_inputs(int64_t batch) {
  return {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {batch, kK}, 7)}};
}

TEST(OnednnShapePlans, EvictedPlansFreeTheirMemory) {
  const auto path = matmul_model();
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  ModelHandle model = load_model(runtime.get(), path);
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  TestSession session = bounded_session(runtime.get(), model.get(), 2, 0);
  // Two shapes fill the cache; ten more each evict one plan.
  for (int64_t batch : {3, 4}) session.run(batch_inputs(batch));
  const size_t filled = heap_in_use();
  for (int64_t batch = 5; batch < 15; ++batch) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    expect_outputs_match(session.run(batch_inputs(batch)), reference.run(batch_inputs(batch)));
  }
  const size_t after = heap_in_use();
  const loom_plan_cache_stats_t stats = session.cache_stats();
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.misses, 12u);
  EXPECT_EQ(stats.evictions, 10u);
  const size_t weight_bytes = kK * kN * sizeof(float);
  EXPECT_GE(stats.bytes, 2 * weight_bytes) << "each plan holds onednn's copy of the weights";
  // Ten plans made and evicted: without freeing, the heap would have grown by ten copies.
  EXPECT_LT(after, filled + weight_bytes)
      << "the heap grew from " << filled << " to " << after << " bytes over ten evictions";
  std::filesystem::remove(path);
}

TEST(OnednnShapePlans, TheByteBoundEvictsAllButTheCurrentPlan) {
  const auto path = matmul_model();
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  ModelHandle model = load_model(runtime.get(), path);
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  // Room for one plan's weights and a half: every new plan evicts the one before.
  TestSession session = bounded_session(runtime.get(), model.get(), 0, kK * kN * 6);
  for (int64_t batch : {1, 2, 3, 1}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    expect_outputs_match(session.run(batch_inputs(batch)), reference.run(batch_inputs(batch)));
    EXPECT_EQ(session.cache_stats().entries, 1u);
  }
  EXPECT_EQ(session.cache_stats().evictions, 3u);
  EXPECT_EQ(session.cache_stats().capacity_entries, 16u);
  std::filesystem::remove(path);
}

// An If branch as PyTorch exports F.pad: the pads come from a chain of constant nodes
// (Constant -> Transpose -> Reshape), then Pad reads x from the enclosing graph. `table` is the
// [2, 4] constant whose transpose, flattened, is the pads.
void pad_branch(::onnx::GraphProto& g, const std::string& tag, std::vector<int64_t> table) {
  g.set_name(tag);
  auto constant = [&](const std::string& out, std::vector<int64_t> dims,
                      const std::vector<int64_t>& values) {
    auto* n = g.add_node();
    n->set_op_type("Constant");
    n->add_output(out);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(::onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
  };
  auto node = [&](const char* op, std::vector<std::string> in, const std::string& out) {
    auto* n = g.add_node();
    n->set_op_type(op);
    for (const auto& i : in) n->add_input(i);
    n->add_output(out);
  };
  constant(tag + "_table", {2, 4}, table);
  node("Transpose", {tag + "_table"}, tag + "_t");
  constant(tag + "_shape", {1}, {8});
  node("Reshape", {tag + "_t", tag + "_shape"}, tag + "_pads");
  node("Pad", {"x", tag + "_pads"}, tag + "_padded");
  g.add_output()->set_name(tag + "_padded");
}

// Both branches pad x [1, 4, 6, 6] to [1, 4, 8, 8] (1 on each side; 2 above and 2 right), and a
// Conv reads the If's output. Folded and inferred through the branches, the If's output shape
// is static, so onednn takes the Conv; it used to run on cpu ("input shape depends on data").
TEST(OnednnShapePlans, NodesAfterAnIfWithStaticBranchShapesRunOnTheDevice) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 6, 6});
  m.input("flag", LOOM_DTYPE_BOOL, {});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {8, 4, 3, 3}, 3));
  NodeRef branch = m.node("If", {"flag"}, {"padded"}, "if");
  for (const auto& [name, table] :
       {std::pair<std::string, std::vector<int64_t>>{"then_branch", {0, 1, 0, 1, 0, 1, 0, 1}},
        {"else_branch", {0, 2, 0, 0, 0, 0, 0, 2}}}) {
    auto* a = branch.proto().add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::GRAPH);
    pad_branch(*a->mutable_g(), name.substr(0, 4), table);
  }
  m.node("Conv", {"padded", "w"}, {"y"}, "conv");
  m.output("y");
  RunOptions options;
  options.devices = "onednn,cpu";
  for (bool flag : {true, false}) {
    SCOPED_TRACE(flag ? "then" : "else");
    Tensor f;
    f.dtype = LOOM_DTYPE_BOOL;
    f.bytes = {static_cast<uint8_t>(flag)};
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4, 6, 6}, 4)}, {"flag", f}},
                       options);
  }
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  const auto path = m.save();
  ModelHandle model = load_model(runtime.get(), path);
  TestSession session = open_session(runtime.get(), model.get(), "onednn,cpu");
  const std::string plan = session.plan_json();
  // The Conv is onednn's: a subgraph there with one node (the If runs as a host step).
  EXPECT_NE(plan.find("{\"device\":\"onednn\",\"nodes\":1"), std::string::npos) << plan;
  std::filesystem::remove(path);
}

// Each branch convolves x with a weight of the enclosing graph: the branch's child session sees
// it as a constant (not an input fed per run), so onednn, which needs constant weights, takes
// the Conv. With fallback off, the run would otherwise fail.
TEST(OnednnShapePlans, BranchesReadTheEnclosingGraphsWeightsAsConstants) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 6, 6});
  m.input("flag", LOOM_DTYPE_BOOL, {});
  m.initializer("w3", random_tensor(LOOM_DTYPE_FLOAT32, {8, 4, 3, 3}, 3));
  m.initializer("w1", random_tensor(LOOM_DTYPE_FLOAT32, {8, 4, 1, 1}, 4));
  NodeRef branch = m.node("If", {"flag"}, {"y"}, "if");
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* a = branch.proto().add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::GRAPH);
    ::onnx::GraphProto& g = *a->mutable_g();
    g.set_name(name);
    bool then = std::string(name) == "then_branch";
    auto* conv = g.add_node();
    conv->set_op_type("Conv");
    conv->add_input("x");
    conv->add_input(then ? "w3" : "w1");
    conv->add_output(std::string(name) + "_y");
    if (then) {
      auto* pads = conv->add_attribute();
      pads->set_name("pads");
      pads->set_type(::onnx::AttributeProto::INTS);
      for (int i = 0; i < 4; ++i) pads->add_ints(1);
    }
    g.add_output()->set_name(std::string(name) + "_y");
  }
  m.output("y");
  for (bool flag : {true, false}) {
    SCOPED_TRACE(flag ? "then" : "else");
    Tensor f;
    f.dtype = LOOM_DTYPE_BOOL;
    f.bytes = {static_cast<uint8_t>(flag)};
    expect_matches_cpu(m, {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4, 6, 6}, 5)}, {"flag", f}},
                       onednn_only());
  }
}

// A decode step's Attention with key-value caches of symbolic length, fed back as a generation
// loop does: q [1, 4, 1, 8], the new key/value [1, 2, 1, 8], caches [1, 2, P, 8]. When
// `shape_read` is set, the graph also adds the cache length (Shape -> Gather -> Cast) to the
// query, as exports that derive position ids from the cache do: a plan's folding then bakes
// that length in.
std::filesystem::path cache_model(bool shape_read) {
  ModelBuilder m(23);
  m.input("q", LOOM_DTYPE_FLOAT32, {1, 4, 1, 8});
  m.input("k", LOOM_DTYPE_FLOAT32, {1, 2, 1, 8});
  m.input("v", LOOM_DTYPE_FLOAT32, {1, 2, 1, 8});
  m.input("past_k", LOOM_DTYPE_FLOAT32, {1, 2, -1, 8});
  m.input("past_v", LOOM_DTYPE_FLOAT32, {1, 2, -1, 8});
  std::string query = "q";
  if (shape_read) {
    m.initializer("axis2", int64_tensor({}, {2}));
    m.node("Shape", {"past_k"}, {"shape"});
    m.node("Gather", {"shape", "axis2"}, {"length"});
    m.node("Cast", {"length"}, {"length_f"}).i("to", LOOM_DTYPE_FLOAT32);
    m.node("Add", {"q", "length_f"}, {"q_shifted"});
    query = "q_shifted";
  }
  m.node("Attention", {query, "k", "v", "", "past_k", "past_v"}, {"y", "present_k", "present_v"})
      .i("is_causal", 1);
  m.output("y");
  m.output("present_k");
  m.output("present_v");
  return m.save();
}

std::vector<std::pair<std::string, Tensor>> step_inputs(const Tensor& past_k, const Tensor& past_v,
                                                        uint32_t seed) {
  return {{"q", random_tensor(LOOM_DTYPE_FLOAT32, {1, 4, 1, 8}, seed)},
          {"k", random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, 1, 8}, seed + 1)},
          {"v", random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, 1, 8}, seed + 2)},
          {"past_k", past_k},
          {"past_v", past_v}};
}

// Plugin ABI 1.8: the device runs the caches at any length, so the loop plans once. Each step
// matches cpu, including a shorter cache and an empty one after the plan was made.
TEST(OnednnShapePlans, AGrowingCacheRunsOnOnePlan) {
  const auto path = cache_model(false);
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  ModelHandle model = load_model(runtime.get(), path);
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  TestSession session = bounded_session(runtime.get(), model.get(), 0, 0);
  Tensor past_k = random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, 5, 8}, 1);
  Tensor past_v = random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, 5, 8}, 2);
  for (uint32_t step = 0; step < 4; ++step) {
    SCOPED_TRACE("cache of " + std::to_string(5 + step));
    const auto in = step_inputs(past_k, past_v, 10 + 3 * step);
    std::vector<Tensor> got = session.run(in);
    expect_outputs_match(got, reference.run(in));
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[1].shape, (std::vector<int64_t>{1, 2, 6 + step, 8}));
    past_k = got[1];
    past_v = got[2];
  }
  for (int64_t length : {3, 0}) {
    SCOPED_TRACE("a new cache of " + std::to_string(length));
    const auto in = step_inputs(random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, length, 8}, 3),
                                random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, length, 8}, 4), 30);
    expect_outputs_match(session.run(in), reference.run(in));
  }
  const loom_plan_cache_stats_t stats = session.cache_stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, 5u);
  EXPECT_EQ(stats.entries, 1u);
  // Caches of two lengths reach the device's check, which names them.
  const auto bad = step_inputs(random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, 6, 8}, 5),
                               random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, 7, 8}, 6), 40);
  try {
    session.run(bad);
    ADD_FAILURE() << "caches of two lengths ran";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("past_key holds 6 positions and past_value 7"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

// Where the plan's folding read the cache length, each length plans anew: reusing the plan
// would add the first step's length to every later query.
TEST(OnednnShapePlans, AGraphThatReadsTheCacheLengthPlansEachLength) {
  const auto path = cache_model(true);
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  ModelHandle model = load_model(runtime.get(), path);
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  // The symbolic model's own plan leaves Shape and Gather to cpu; each length's plan folds them.
  TestSession session = open_session(runtime.get(), model.get(), "onednn,cpu");
  for (int64_t length : {5, 6, 7}) {
    SCOPED_TRACE("cache of " + std::to_string(length));
    const auto in = step_inputs(random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, length, 8}, 1),
                                random_tensor(LOOM_DTYPE_FLOAT32, {1, 2, length, 8}, 2), 10);
    expect_outputs_match(session.run(in), reference.run(in));
  }
  EXPECT_EQ(session.cache_stats().misses, 3u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::onednn_testing
