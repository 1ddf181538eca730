// ONNX semantics of host control-flow steps (core/src/control_flow.cpp) with bodies played by
// C++ functions: Loop's M/cond/carried/scan outputs, Scan's axes and directions, If's branch
// choice, zero trips, and errors that name the node and the iteration.
#include "control_flow.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>

#include "status.hpp"

namespace loom::core {
namespace {

HostValue floats(std::vector<int64_t> dims, const std::vector<float>& data) {
  HostValue v = allocate_host_value(LOOM_DTYPE_FLOAT32, dims);
  EXPECT_EQ(v.t.byte_size, data.size() * sizeof(float));
  if (!data.empty()) std::memcpy(v.t.data, data.data(), v.t.byte_size);
  return v;
}

template <typename T>
HostValue scalar(loom_dtype_t dtype, T x) {
  HostValue v = allocate_host_value(dtype, {});
  std::memcpy(v.t.data, &x, sizeof x);
  return v;
}

std::vector<float> values(const HostValue& v) {
  const auto* p = static_cast<const float*>(v.t.data);
  return std::vector<float>(p, p + v.t.byte_size / sizeof(float));
}

std::vector<int64_t> dims(const HostValue& v) {
  return {v.t.dims, v.t.dims + v.t.rank};
}

using BodyFn = std::function<std::vector<HostValue>(const std::vector<HostValue>&)>;

// Bodies as functions; `graphs` give the declared outputs (for zero-trip scan outputs).
class FakeBodies final : public BodyRunner {
 public:
  std::map<std::string, BodyFn> fns;
  std::map<std::string, Graph> graphs;
  int calls = 0;
  std::vector<HostValue> run_body(const std::string& attribute,
                                  const std::vector<HostValue>& inputs) override {
    ++calls;
    return fns.at(attribute)(inputs);
  }
  const Graph& body(const std::string& attribute) const override { return graphs.at(attribute); }
};

// A body graph with `outputs` float outputs of the given declared shapes.
Graph body_graph(const std::vector<std::vector<int64_t>>& outputs) {
  Graph g;
  for (size_t i = 0; i < outputs.size(); ++i) {
    int id = g.intern("out" + std::to_string(i));
    g.values[id].dtype = LOOM_DTYPE_FLOAT32;
    g.values[id].shape.rank = static_cast<int32_t>(outputs[i].size());
    g.values[id].shape.dims = outputs[i];
    g.outputs.push_back(id);
  }
  return g;
}

Node control_node(const std::string& op, size_t outputs, int64_t opset = 16) {
  Node n;
  n.name = "cf";
  n.op_type = op;
  n.opset = opset;
  n.outputs.assign(outputs, 1);
  return n;
}

float first(const HostValue& v) {
  return values(v).at(0);
}

Attribute ints_attribute(const std::string& name, std::vector<int64_t> ints) {
  Attribute a;
  a.name = name;
  a.type = LOOM_ATTR_INTS;
  a.ints = std::move(ints);
  return a;
}

TEST(ControlFlowStep, LoopCarriesGrowingValuesAndStacksScanOutputs) {
  // (i, cond, acc) -> (cond, acc ++ [i], scan [i, -i]); M = 3, no cond input.
  FakeBodies b;
  b.graphs["body"] = body_graph({{}, {-1}, {2}});
  b.fns["body"] = [](const std::vector<HostValue>& in) {
    int64_t i;
    std::memcpy(&i, in[0].t.data, sizeof i);
    std::vector<float> acc = values(in[2]);
    acc.push_back(static_cast<float>(i));
    return std::vector<HostValue>{scalar<uint8_t>(LOOM_DTYPE_BOOL, 0),  // ignored: no cond input
                                  floats({static_cast<int64_t>(acc.size())}, acc),
                                  floats({2}, {static_cast<float>(i), -static_cast<float>(i)})};
  };
  Node loop = control_node("Loop", 2);
  HostValue none;
  auto out =
      run_control_flow(loop, {scalar<int64_t>(LOOM_DTYPE_INT64, 3), none, floats({1}, {7})}, b);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{7, 0, 1, 2}));
  EXPECT_EQ(dims(out[1]), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{0, 0, 1, -1, 2, -2}));
}

TEST(ControlFlowStep, LoopStopsOnTheBodysCondAndRunsZeroTrips) {
  FakeBodies b;
  b.graphs["body"] = body_graph({{}, {1}, {3}});
  b.fns["body"] = [](const std::vector<HostValue>& in) {
    int64_t i;
    std::memcpy(&i, in[0].t.data, sizeof i);
    return std::vector<HostValue>{scalar<uint8_t>(LOOM_DTYPE_BOOL, i < 1),
                                  floats({1}, {first(in[2]) * 2}), floats({3}, {1, 2, 3})};
  };
  Node loop = control_node("Loop", 2);
  HostValue none;
  auto out =
      run_control_flow(loop, {none, scalar<uint8_t>(LOOM_DTYPE_BOOL, 1), floats({1}, {1.5f})}, b);
  EXPECT_EQ(b.calls, 2);  // i = 0 keeps going, i = 1 stops
  EXPECT_EQ(values(out[0]), (std::vector<float>{6}));
  EXPECT_EQ(dims(out[1]), (std::vector<int64_t>{2, 3}));
  // Zero trips: the initial value (owned, not borrowed) and an empty scan output shaped from
  // the body's declaration.
  b.calls = 0;
  HostValue borrowed = floats({1}, {4});
  borrowed.owner.reset();  // as if the session's slot owned it
  HostValue keep = floats({1}, {4});
  borrowed.t.data = keep.t.data;
  out = run_control_flow(loop, {scalar<int64_t>(LOOM_DTYPE_INT64, 0), none, borrowed}, b);
  EXPECT_EQ(b.calls, 0);
  EXPECT_NE(out[0].owner, nullptr);
  EXPECT_NE(out[0].t.data, keep.t.data);
  EXPECT_EQ(values(out[0]), (std::vector<float>{4}));
  EXPECT_EQ(dims(out[1]), (std::vector<int64_t>{0, 3}));
  // cond false from the start: no iteration either.
  out = run_control_flow(loop, {none, scalar<uint8_t>(LOOM_DTYPE_BOOL, 0), floats({1}, {2})}, b);
  EXPECT_EQ(b.calls, 0);
  EXPECT_EQ(values(out[0]), (std::vector<float>{2}));
}

TEST(ControlFlowStep, ScanHonoursAxesAndDirections) {
  // State s; scan inputs a [2, 3] along axis 1 forward, c [3] along axis 0 reversed.
  // Body: s' = s + a_t[0] * c_t; outputs y = [a_t0, a_t1] (stacked along axis 1, reversed).
  FakeBodies b;
  b.graphs["body"] = body_graph({{1}, {2}});
  b.fns["body"] = [](const std::vector<HostValue>& in) {
    std::vector<float> a = values(in[1]);
    return std::vector<HostValue>{floats({1}, {first(in[0]) + a[0] * first(in[2])}),
                                  floats({2}, a)};
  };
  Node scan = control_node("Scan", 2);
  Attribute m;
  m.name = "num_scan_inputs";
  m.type = LOOM_ATTR_INT;
  m.i = 2;
  scan.attributes = {m, ints_attribute("scan_input_axes", {-1, 0}),
                     ints_attribute("scan_input_directions", {0, 1}),
                     ints_attribute("scan_output_axes", {1}),
                     ints_attribute("scan_output_directions", {1})};
  auto out = run_control_flow(
      scan, {floats({1}, {0}), floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({3}, {10, 20, 30})}, b);
  ASSERT_EQ(out.size(), 2u);
  // a columns: [1,4], [2,5], [3,6]; c reversed: 30, 20, 10.
  EXPECT_EQ(values(out[0]), (std::vector<float>{1 * 30 + 2 * 20 + 3 * 10}));
  // y[:, t] = column of step (2 - t): [[3, 2, 1], [6, 5, 4]].
  EXPECT_EQ(dims(out[1]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{3, 2, 1, 6, 5, 4}));
  // Scan inputs of different lengths are an error naming the node.
  try {
    run_control_flow(
        scan, {floats({1}, {0}), floats({2, 3}, {1, 2, 3, 4, 5, 6}), floats({2}, {1, 2})}, b);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Scan node 'cf'"), std::string::npos) << e.what();
  }
}

TEST(ControlFlowStep, IfPicksABranchAndBodyErrorsNameNodeAndIteration) {
  FakeBodies b;
  b.fns["then_branch"] = [](const std::vector<HostValue>&) {
    return std::vector<HostValue>{floats({2}, {1, 2})};
  };
  b.fns["else_branch"] = [](const std::vector<HostValue>&) {
    return std::vector<HostValue>{floats({3}, {3, 4, 5})};
  };
  Node cf_if = control_node("If", 1);
  EXPECT_EQ(dims(run_control_flow(cf_if, {scalar<uint8_t>(LOOM_DTYPE_BOOL, 1)}, b)[0]),
            (std::vector<int64_t>{2}));
  EXPECT_EQ(values(run_control_flow(cf_if, {scalar<uint8_t>(LOOM_DTYPE_BOOL, 0)}, b)[0]),
            (std::vector<float>{3, 4, 5}));
  EXPECT_THROW(run_control_flow(cf_if, {floats({1}, {1})}, b), Error);  // not a bool

  FakeBodies failing;
  failing.graphs["body"] = body_graph({{}, {1}});
  failing.fns["body"] = [](const std::vector<HostValue>& in) -> std::vector<HostValue> {
    int64_t i;
    std::memcpy(&i, in[0].t.data, sizeof i);
    if (i == 2) fail(LOOM_ERROR_INVALID_ARGUMENT, "device says no");
    return {scalar<uint8_t>(LOOM_DTYPE_BOOL, 1), in[2]};
  };
  Node loop = control_node("Loop", 1);
  HostValue none;
  try {
    run_control_flow(loop, {scalar<int64_t>(LOOM_DTYPE_INT64, 5), none, floats({1}, {1})}, failing);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "Loop node 'cf': iteration 2: device says no");
  }
}

}  // namespace
}  // namespace loom::core
