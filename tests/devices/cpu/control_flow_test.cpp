// If, Loop and Scan of the cpu device. The kernel harness cannot run nested graphs, so this
// file has its own KernelContext double whose run_subgraph calls a C++ function standing in
// for the body graph. (The ONNX backend tests test_if*/test_loop*/test_scan* run the real
// interpreter through the conformance runner.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <functional>

#include "kernels/data_movement.hpp"
#include "testing/kernel_harness.hpp"

namespace loom::cpu {
namespace {

using Body = std::function<std::vector<Tensor>(std::span<const Tensor* const>)>;

// A nested graph view with the given input/output counts; outputs are declared float32 of
// unknown rank (used only when no iteration runs).
struct FakeGraph {
  FakeGraph(size_t inputs, size_t outputs) {
    values.resize(inputs + outputs);
    for (size_t i = 0; i < values.size(); ++i) {
      values[i].struct_size = sizeof(loom_value_info_t);
      values[i].name = "v";
      values[i].dtype = LOOM_DTYPE_FLOAT32;
      values[i].rank = 0;
      value_ptrs.push_back(&values[i]);
    }
    for (size_t i = 0; i < inputs; ++i) input_ids.push_back(static_cast<int32_t>(i));
    for (size_t i = 0; i < outputs; ++i) output_ids.push_back(static_cast<int32_t>(inputs + i));
    graph.struct_size = sizeof graph;
    graph.name = "body";
    graph.num_values = values.size();
    graph.values = value_ptrs.data();
    graph.num_inputs = inputs;
    graph.inputs = input_ids.data();
    graph.num_outputs = outputs;
    graph.outputs = output_ids.data();
  }
  std::vector<loom_value_info_t> values;
  std::vector<const loom_value_info_t*> value_ptrs;
  std::vector<int32_t> input_ids, output_ids;
  loom_graph_t graph{};
};

class FlowContext : public KernelContext {
 public:
  FlowContext(const char* op, int64_t opset) : KernelContext(attrs_), attrs_(node_), op_(op) {
    node_.struct_size = sizeof node_;
    node_.opset = opset;
    graph_.struct_size = sizeof graph_;
  }
  void input(Tensor t) {
    inputs_.push_back(std::move(t));
    present_.push_back(true);
  }
  void omitted_input() {
    inputs_.emplace_back();
    present_.push_back(false);
  }
  void attr_int(const char* name, int64_t v) { add(name, LOOM_ATTR_INT).i = v; }
  void attr_ints(const char* name, std::vector<int64_t> v) {
    lists_.push_back(std::move(v));
    auto& a = add(name, LOOM_ATTR_INTS);
    a.ints = lists_.back().data();
    a.count = lists_.back().size();
  }
  void attr_graph(const char* name, const FakeGraph& g, Body body) {
    add(name, LOOM_ATTR_GRAPH).graph = &g.graph;
    bodies_.emplace_back(&g.graph, std::move(body));
  }
  int body_runs = 0;

  std::vector<Tensor> run(size_t outputs) {
    const KernelDef* def = KernelRegistry::instance().find("", op_, node_.opset);
    if (!def) throw std::runtime_error("no kernel");
    ids_.clear();
    for (size_t i = 0; i < inputs_.size(); ++i) ids_.push_back(present_[i] ? int32_t(i) : -1);
    out_ids_.clear();
    for (size_t i = 0; i < outputs; ++i) out_ids_.push_back(int32_t(100 + i));
    ptrs_.clear();
    for (auto& a : attrs_storage_) ptrs_.push_back(&a);
    node_.op_type = op_;
    node_.domain = "";
    node_.name = "flow";
    node_.num_inputs = ids_.size();
    node_.inputs = ids_.data();
    node_.num_outputs = out_ids_.size();
    node_.outputs = out_ids_.data();
    node_.num_attributes = ptrs_.size();
    node_.attributes = ptrs_.data();
    outputs_.assign(outputs, Tensor{});
    def->fn(*this);
    return outputs_;
  }

  const loom_graph_t& graph() const override { return graph_; }
  const loom_node_t& node() const override { return node_; }
  const loom_tensor_t* input(size_t i) const override {
    return i < inputs_.size() && present_[i] ? &inputs_[i].view : nullptr;
  }
  const Tensor* input_tensor(size_t i) const override {
    return i < inputs_.size() && present_[i] ? &inputs_[i] : nullptr;
  }
  loom_tensor_t& allocate_output(size_t i, loom_dtype_t d, std::span<const int64_t> dims) override {
    outputs_.at(i) = make_tensor(d, dims);
    return outputs_[i].view;
  }
  void set_output(size_t i, Tensor t) override { outputs_.at(i) = std::move(t); }
  void parallel_for(size_t n, size_t,
                    const std::function<void(size_t, size_t)>& fn) const override {
    if (n) fn(0, n);
  }
  int threads() const override { return 1; }
  std::vector<Tensor> run_subgraph(const loom_graph_t& g,
                                   std::span<const Tensor* const> inputs) override {
    for (auto& [graph, body] : bodies_)
      if (graph == &g) {
        EXPECT_EQ(inputs.size(), g.num_inputs);
        ++body_runs;
        return body(inputs);
      }
    throw std::runtime_error("unknown body graph");
  }

 private:
  loom_attribute_t& add(const char* name, loom_attr_type_t type) {
    loom_attribute_t a{};
    a.struct_size = sizeof a;
    a.name = name;
    a.type = type;
    attrs_storage_.push_back(a);
    return attrs_storage_.back();
  }
  loom_node_t node_{};
  loom_graph_t graph_{};
  Attributes attrs_;
  const char* op_;
  std::vector<Tensor> inputs_, outputs_;
  std::vector<bool> present_;
  std::vector<int32_t> ids_, out_ids_;
  std::deque<loom_attribute_t> attrs_storage_;
  std::vector<const loom_attribute_t*> ptrs_;
  std::deque<std::vector<int64_t>> lists_;
  std::vector<std::pair<const loom_graph_t*, Body>> bodies_;
};

Tensor floats(std::vector<int64_t> dims, std::vector<float> v) {
  Tensor t = make_tensor(LOOM_DTYPE_FLOAT32, dims);
  std::copy(v.begin(), v.end(), static_cast<float*>(t.view.data));
  return t;
}
Tensor scalar_i64(int64_t v) {
  Tensor t = make_tensor(LOOM_DTYPE_INT64, {});
  *static_cast<int64_t*>(t.view.data) = v;
  return t;
}
Tensor scalar_bool(bool v) {
  Tensor t = make_tensor(LOOM_DTYPE_BOOL, {});
  *static_cast<bool*>(t.view.data) = v;
  return t;
}
std::vector<float> values(const Tensor& t) {
  const float* p = static_cast<const float*>(t.view.data);
  return {p, p + sdk::element_count(t.view)};
}
using testing::shape;
float f(const Tensor* t) {
  return *static_cast<const float*>(t->view.data);
}
int64_t i64(const Tensor* t) {
  return *static_cast<const int64_t*>(t->view.data);
}

TEST(If, RunsTheChosenBranchAndPassesItsOutputThrough) {
  FakeGraph then_g(0, 1), else_g(0, 1);
  Tensor then_value = floats({2}, {1, 2});
  FlowContext ctx("If", 16);
  ctx.input(scalar_bool(false));
  ctx.attr_graph("then_branch", then_g, [&](auto) { return std::vector<Tensor>{then_value}; });
  Tensor else_value = floats({1}, {7});
  ctx.attr_graph("else_branch", else_g, [&](auto) { return std::vector<Tensor>{else_value}; });
  auto out = ctx.run(1);
  EXPECT_EQ(values(out[0]), (std::vector<float>{7}));
  EXPECT_EQ(out[0].view.data, else_value.view.data) << "If must not copy the branch output";
}

// Loop body: x' = x + iter; scan output = x'; cond' = iter < stop_after.
Body accumulate(int64_t stop_after) {
  return [stop_after](std::span<const Tensor* const> in) {
    const int64_t iter = i64(in[0]);
    const float x = f(in[2]) + static_cast<float>(iter);
    return std::vector<Tensor>{scalar_bool(iter < stop_after), floats({}, {x}), floats({1}, {x})};
  };
}

TEST(Loop, TripCountWithScanOutputs) {
  FakeGraph body(3, 3);
  FlowContext ctx("Loop", 16);
  ctx.input(scalar_i64(4));
  ctx.input(scalar_bool(true));
  ctx.input(floats({}, {10}));
  ctx.attr_graph("body", body, accumulate(100));
  auto out = ctx.run(2);
  EXPECT_EQ(values(out[0]), (std::vector<float>{16}));  // 10 + 0 + 1 + 2 + 3
  EXPECT_EQ(shape(out[1]), (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{10, 11, 13, 16}));
}

TEST(Loop, ConditionStopsAWhileLoop) {
  FakeGraph body(3, 3);
  FlowContext ctx("Loop", 13);
  ctx.omitted_input();
  ctx.input(scalar_bool(true));
  ctx.input(floats({}, {0}));
  ctx.attr_graph("body", body, accumulate(2));  // cond false after iteration 2
  auto out = ctx.run(2);
  EXPECT_EQ(ctx.body_runs, 3);
  EXPECT_EQ(shape(out[1]), (std::vector<int64_t>{3, 1}));
}

TEST(Loop, WithoutCondInputTheBodyConditionIsIgnored) {
  FakeGraph body(3, 3);
  FlowContext ctx("Loop", 13);
  ctx.input(scalar_i64(5));
  ctx.omitted_input();
  ctx.input(floats({}, {0}));
  ctx.attr_graph("body", body, accumulate(0));  // body says stop at once: ignored (for loop)
  ctx.run(2);
  EXPECT_EQ(ctx.body_runs, 5);
}

TEST(Loop, ZeroIterationsGiveInitialValuesAndEmptyScans) {
  FakeGraph body(3, 3);
  FlowContext ctx("Loop", 13);
  ctx.input(scalar_i64(0));
  ctx.input(scalar_bool(true));
  ctx.input(floats({}, {5}));
  ctx.attr_graph("body", body, accumulate(100));
  auto out = ctx.run(2);
  EXPECT_EQ(ctx.body_runs, 0);
  EXPECT_EQ(values(out[0]), (std::vector<float>{5}));
  EXPECT_EQ(shape(out[1]), (std::vector<int64_t>{0}));
}

TEST(Loop, RunawayLoopIsStoppedWithAClearError) {
  ASSERT_EQ(setenv("LOOM_CPU_MAX_LOOP_ITERATIONS", "50", 1), 0);
  FakeGraph body(3, 2);
  FlowContext ctx("Loop", 13);
  ctx.omitted_input();
  ctx.input(scalar_bool(true));
  ctx.input(floats({}, {0}));
  ctx.attr_graph("body", body, [](std::span<const Tensor* const> in) {
    return std::vector<Tensor>{scalar_bool(true), *in[2]};
  });
  try {
    ctx.run(1);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_RUNTIME);
    EXPECT_NE(std::string(e.what()).find("Loop node 'flow'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ctx.body_runs, 50);
  unsetenv("LOOM_CPU_MAX_LOOP_ITERATIONS");
}

TEST(Scan, ReverseInputAlongAxisOneAndOutputAxisOne) {
  // Scan input [2, 3] scanned along axis 1 in reverse: slices are columns 2, 1, 0.
  // Body: state' = state + slice (elementwise over 2), scan out = state'.
  FakeGraph body(2, 2);
  FlowContext ctx("Scan", 16);
  ctx.input(floats({2}, {0, 0}));
  ctx.input(floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  ctx.attr_int("num_scan_inputs", 1);
  ctx.attr_ints("scan_input_axes", {1});
  ctx.attr_ints("scan_input_directions", {1});
  ctx.attr_ints("scan_output_axes", {-1});
  ctx.attr_graph("body", body, [](std::span<const Tensor* const> in) {
    std::vector<float> s = values(*in[0]), x = values(*in[1]);
    Tensor next = floats({2}, {s[0] + x[0], s[1] + x[1]});
    return std::vector<Tensor>{next, next};
  });
  auto out = ctx.run(2);
  EXPECT_EQ(values(out[0]), (std::vector<float>{6, 15}));
  EXPECT_EQ(shape(out[1]), (std::vector<int64_t>{2, 3}));
  // Per step states: [3, 6], [5, 11], [6, 15], stacked on the last axis.
  EXPECT_EQ(values(out[1]), (std::vector<float>{3, 5, 6, 6, 11, 15}));
}

TEST(Scan, ReverseOutputDirection) {
  FakeGraph body(1, 1);
  FlowContext ctx("Scan", 11);
  ctx.input(floats({3}, {1, 2, 3}));
  ctx.attr_int("num_scan_inputs", 1);
  ctx.attr_ints("scan_output_directions", {1});
  ctx.attr_graph("body", body, [](std::span<const Tensor* const> in) {
    return std::vector<Tensor>{floats({}, {f(in[0]) * 10})};
  });
  auto out = ctx.run(1);
  EXPECT_EQ(values(out[0]), (std::vector<float>{30, 20, 10}));
}

TEST(Scan, Opset8BatchWithSequenceLengths) {
  // batch 2, max length 3; lengths [2, 3]; body: state' = state + x, scan out = state'.
  FakeGraph body(2, 2);
  FlowContext ctx("Scan", 8);
  Tensor lens = make_tensor(LOOM_DTYPE_INT64, std::vector<int64_t>{2});
  static_cast<int64_t*>(lens.view.data)[0] = 2;
  static_cast<int64_t*>(lens.view.data)[1] = 3;
  ctx.input(lens);
  ctx.input(floats({2}, {0, 100}));
  ctx.input(floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  ctx.attr_int("num_scan_inputs", 1);
  ctx.attr_graph("body", body, [](std::span<const Tensor* const> in) {
    Tensor next = floats({}, {f(in[0]) + f(in[1])});
    return std::vector<Tensor>{next, next};
  });
  auto out = ctx.run(2);
  EXPECT_EQ(values(out[0]), (std::vector<float>{3, 115}));
  EXPECT_EQ(shape(out[1]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{1, 3, 0, 104, 109, 115}));
}

}  // namespace
}  // namespace loom::cpu
