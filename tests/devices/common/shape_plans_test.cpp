// Plans by the shapes of the run, through the public API on the cpu reference device: shape
// overrides (by input name and by symbolic dimension name) fix shapes at session creation, a
// session whose shapes are all known compiles at creation, the plan cache keeps at most its
// bound of plans (least recently used evicted), and bad options end in one clear error.
#include <gtest/gtest.h>

#include <loom/loom.hpp>

#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

const loom::Runtime& cpu_runtime() {
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  return runtime;
}

// y = Relu(x * w) + 1 with x [batch, seq, 4], both extents symbolic (named d0 and d1).
std::filesystem::path symbolic_model() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {-1, -1, 4});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {4, 3}, 1));
  m.initializer("one", float_tensor({1}, {1.0f}));
  m.node("MatMul", {"x", "w"}, {"p"});
  m.node("Relu", {"p"}, {"r"});
  m.node("Add", {"r", "one"}, {"y"});
  m.output("y");
  return m.save();
}

std::vector<std::pair<std::string, Tensor>> inputs_of(std::vector<int64_t> shape) {
  return {{"x", random_tensor(LOOM_DTYPE_FLOAT32, shape, 3)}};
}

loom_session_options_t cpu_options() {
  loom_session_options_t o{};
  o.struct_size = sizeof o;
  o.devices = "cpu";
  return o;
}

// Creating a session must fail; returns its message.
std::string creation_error(loom_model_t* model, const loom_session_options_t& o) {
  try {
    open_session(cpu_runtime().get(), model, o);
  } catch (const loom::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the session was created";
  return "";
}

// The model's output for `x` (weights `w`), computed here.
Tensor expected_output(const Tensor& x, const Tensor& w) {
  const int64_t rows = x.elements() / 4;
  Tensor y;
  y.shape = x.shape;
  y.shape.back() = 3;
  y.bytes.resize(rows * 3 * sizeof(float));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < 3; ++c) {
      float s = 0;
      for (int64_t k = 0; k < 4; ++k) s += x.data<float>()[r * 4 + k] * w.data<float>()[k * 3 + c];
      y.data<float>()[r * 3 + c] = (s > 0 ? s : 0) + 1.0f;
    }
  return y;
}

TEST(ShapePlans, EveryShapeRunsWithAPlanOfItsOwn) {
  const auto path = symbolic_model();
  ModelHandle model = load_model(cpu_runtime().get(), path);
  TestSession session = open_session(cpu_runtime().get(), model.get(), cpu_options());
  EXPECT_EQ(session.cache_stats().entries, 0u);
  const Tensor w = random_tensor(LOOM_DTYPE_FLOAT32, {4, 3}, 1);
  for (const auto& shape : std::vector<std::vector<int64_t>>{{1, 5, 4}, {3, 2, 4}, {1, 5, 4}}) {
    auto in = inputs_of(shape);
    auto out = session.run(in);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(compare(out[0], expected_output(in[0].second, w)), "");
  }
  loom_plan_cache_stats_t stats = session.cache_stats();
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.hits, 1u);
  char* text = nullptr;
  loom::check(loom_session_explain(session.handle.get(), &text));
  std::string explain = text;
  loom_string_free(text);
  EXPECT_NE(explain.find("plan for input shapes x=1x5x4 (the last run's)"), std::string::npos)
      << explain;
  EXPECT_NE(explain.find("2 of at most 16 plans"), std::string::npos) << explain;
  std::filesystem::remove(path);
}

TEST(ShapePlans, TheCacheKeepsTheMostRecentlyUsedPlans) {
  const auto path = symbolic_model();
  ModelHandle model = load_model(cpu_runtime().get(), path);
  loom_session_options_t o = cpu_options();
  o.plan_cache_entries = 2;
  TestSession session = open_session(cpu_runtime().get(), model.get(), o);
  session.run(inputs_of({1, 1, 4}));
  session.run(inputs_of({1, 2, 4}));
  session.run(inputs_of({1, 1, 4}));  // a hit: 1x2x4 is now the least recently used
  session.run(inputs_of({1, 3, 4}));  // evicts 1x2x4
  session.run(inputs_of({1, 1, 4}));  // still cached
  loom_plan_cache_stats_t stats = session.cache_stats();
  EXPECT_EQ(stats.entries, 2u);
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.misses, 3u);
  EXPECT_EQ(stats.evictions, 1u);
  session.run(inputs_of({1, 2, 4}));  // made again, evicting 1x3x4
  stats = session.cache_stats();
  EXPECT_EQ(stats.misses, 4u);
  EXPECT_EQ(stats.evictions, 2u);
  EXPECT_EQ(stats.capacity_entries, 2u);
  std::filesystem::remove(path);
}

TEST(ShapePlans, OverridesFixShapesAndCompileAtCreation) {
  const auto path = symbolic_model();
  ModelHandle model = load_model(cpu_runtime().get(), path);
  for (const char* overrides : {"x=2x3x4", "d0=2;d1=3", "x=2x3x4;"}) {
    SCOPED_TRACE(overrides);
    loom_session_options_t o = cpu_options();
    o.shape_overrides = overrides;
    TestSession session = open_session(cpu_runtime().get(), model.get(), o);
    // Compiled before any run.
    loom_plan_cache_stats_t stats = session.cache_stats();
    EXPECT_EQ(stats.entries, 1u);
    EXPECT_EQ(stats.misses, 1u);
    session.run(inputs_of({2, 3, 4}));
    EXPECT_EQ(session.cache_stats().hits, 1u);
    try {
      session.run(inputs_of({2, 4, 4}));
      ADD_FAILURE() << "a shape other than the override ran";
    } catch (const loom::Error& e) {
      EXPECT_NE(std::string(e.what()).find("input 'x' has shape 2x4x4 but the model expects "
                                           "2x3x4"),
                std::string::npos)
          << e.what();
    }
  }
  std::filesystem::remove(path);
}

TEST(ShapePlans, StaticModelsCompileAtCreation) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 4});
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  const auto path = m.save();
  ModelHandle model = load_model(cpu_runtime().get(), path);
  TestSession session = open_session(cpu_runtime().get(), model.get(), cpu_options());
  EXPECT_EQ(session.cache_stats().entries, 1u);
  EXPECT_GT(session.plan_number("planned_peak_bytes"), -1);
  session.run({{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4}, 1)}});
  EXPECT_EQ(session.cache_stats().hits, 1u);
  EXPECT_EQ(session.cache_stats().misses, 1u);
  std::filesystem::remove(path);
}

TEST(ShapePlans, BadOptionsAreClearErrors) {
  const auto path = symbolic_model();
  ModelHandle model = load_model(cpu_runtime().get(), path);
  struct Case {
    const char* overrides;
    const char* message;
  };
  for (const Case& c : {
           Case{"nope=1x2x4",
                "shape override 'nope=1x2x4' names neither a graph input nor a "
                "symbolic dimension of one (inputs: x"},
           Case{"x=1x2",
                "shape override 'x=1x2' contradicts the model, which declares input "
                "'x' as"},
           Case{"x=1x2x5", "contradicts the model"},
           Case{"x=1xax4", "shape override 'x=1xax4': 'a' is not a dimension"},
           Case{"x=-1x2x4", "'-1' is not a dimension"},
           Case{"d0=1x2", "'d0' is a symbolic dimension and takes one extent"},
           Case{"x=1048576x1048576x4", "more than 2^40 elements"},
           Case{"x=4294967296x4294967296x4", "more than 2^40 elements"},
           Case{"x", "must look like INPUT=DIMS"},
       }) {
    SCOPED_TRACE(c.overrides);
    loom_session_options_t o = cpu_options();
    o.shape_overrides = c.overrides;
    EXPECT_NE(creation_error(model.get(), o).find(c.message), std::string::npos)
        << creation_error(model.get(), o);
  }
  loom_session_options_t o = cpu_options();
  o.plan_cache_entries = -1;
  EXPECT_NE(creation_error(model.get(), o).find("plan cache bounds must not be negative"),
            std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::device_testing
