// Models that are well formed and hostile only at run time (docs/limits.md), shared by every
// device's tests: each ends in one clear error naming the node and the limit (or is cancelled
// promptly), never in an out-of-bounds read, an unbounded allocation or a hang. Under
// ASan/UBSan in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <loom/loom.hpp>
#include <thread>

#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

const loom::Runtime& hostile_runtime() {
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  return runtime;
}

struct Outcome {
  loom_status_code_t code = LOOM_OK;
  std::string message;
  double ms = 0;
};

// One run through the C API, keeping the status code the C++ helpers would turn into text.
Outcome run_once(loom_session_t* session, size_t num_outputs,
                 const std::vector<std::pair<std::string, Tensor>>& inputs) {
  std::vector<const char*> names;
  std::vector<loom_host_tensor_t> views;
  for (const auto& [name, tensor] : inputs) {
    names.push_back(name.c_str());
    views.push_back(tensor.view());
  }
  std::vector<loom_host_tensor_t> raw(num_outputs);
  for (auto& r : raw) r.struct_size = sizeof r;
  const auto start = std::chrono::steady_clock::now();
  loom_status_t* status =
      loom_session_run(session, names.size(), names.data(), views.data(), raw.size(), raw.data());
  Outcome o;
  o.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!status) {
    for (auto& r : raw) loom_host_tensor_release(&r);
    return o;
  }
  o.code = loom_status_code(status);
  o.message = loom_status_message(status);
  loom_status_free(status);
  return o;
}

loom_session_options_t options_for(const std::string& devices) {
  loom_session_options_t o{};
  o.struct_size = sizeof o;
  o.devices = devices.c_str();
  return o;
}

// A session of `model` on `devices` with `options` (devices filled in), the model freed.
TestSession session_of(const ModelBuilder& model, const std::string& devices,
                       loom_session_options_t options) {
  const auto path = model.save();
  ModelHandle handle = load_model(hostile_runtime().get(), path);
  options.devices = devices.c_str();
  TestSession s = open_session(hostile_runtime().get(), handle.get(), options);
  std::filesystem::remove(path);
  return s;
}

void expect_error(const Outcome& o, loom_status_code_t code,
                  std::initializer_list<const char*> words, const std::string& what) {
  std::printf("  %s (%.1f ms): %s\n", what.c_str(), o.ms, o.message.c_str());  // for the log
  EXPECT_EQ(o.code, code) << what << ": " << o.message;
  for (const char* w : words)
    EXPECT_NE(o.message.find(w), std::string::npos)
        << what << ": '" << w << "' not in: " << o.message;
  EXPECT_EQ(o.message.find('\n'), std::string::npos) << what << ": not one line: " << o.message;
}

// y = Gather(Reshape(x, s), [1]): with s = [2^62 + 1, 4] the element count wraps int64 to 4, the
// Reshape would be accepted and the Gather would read row 1 past the 16-byte buffer.
ModelBuilder reshape_model() {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {4});
  m.input("s", LOOM_DTYPE_INT64, {2});
  m.initializer("i", int64_tensor({1}, {1}));
  m.node("Reshape", {"x", "s"}, {"r"}, "reshape");
  m.node("Gather", {"r", "i"}, {"y"}, "gather");
  m.output("y");
  return m;
}

// A Loop whose condition never turns false (no trip count): v = v + 1 forever, and, with
// `scan_bytes` > 0, a scan output of that many bytes per iteration.
ModelBuilder endless_loop_model(int64_t scan_floats = 0) {
  ModelBuilder m(17);
  m.input("x", LOOM_DTYPE_FLOAT32, {1});
  m.initializer("yes", [] {
    Tensor t;
    t.dtype = LOOM_DTYPE_BOOL;
    t.bytes = {1};
    return t;
  }());
  NodeRef loop = m.node("Loop", {"", "yes", "x"}, {"v"}, "endless");
  if (scan_floats > 0) loop.proto().add_output("stacked");
  onnx::AttributeProto* attribute = loop.proto().add_attribute();
  attribute->set_name("body");
  attribute->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& body = *attribute->mutable_g();
  body.set_name("endless_body");
  auto add_value = [](google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                      const std::string& name, int elem, std::vector<int64_t> dims) {
    onnx::ValueInfoProto* v = list->Add();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    auto* shape = t->mutable_shape();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  };
  add_value(body.mutable_input(), "iter", onnx::TensorProto::INT64, {});
  add_value(body.mutable_input(), "cond_in", onnx::TensorProto::BOOL, {});
  add_value(body.mutable_input(), "v_in", onnx::TensorProto::FLOAT, {1});
  onnx::NodeProto* keep = body.add_node();
  keep->set_op_type("Identity");
  keep->add_input("cond_in");
  keep->add_output("cond_out");
  onnx::NodeProto* add = body.add_node();
  add->set_op_type("Add");
  add->add_input("v_in");
  add->add_input("v_in");
  add->add_output("v_out");
  add_value(body.mutable_output(), "cond_out", onnx::TensorProto::BOOL, {});
  add_value(body.mutable_output(), "v_out", onnx::TensorProto::FLOAT, {1});
  if (scan_floats > 0) {
    onnx::NodeProto* expand = body.add_node();
    expand->set_op_type("Expand");
    expand->add_input("v_in");
    expand->add_input("scan_shape");
    expand->add_output("item");
    onnx::TensorProto* shape = body.add_initializer();
    shape->set_name("scan_shape");
    shape->set_data_type(onnx::TensorProto::INT64);
    shape->add_dims(1);
    shape->add_int64_data(scan_floats);
    add_value(body.mutable_output(), "item", onnx::TensorProto::FLOAT, {scan_floats});
    m.output("stacked");
  }
  m.output("v");
  return m;
}

// Resize to `sizes` taken from the input data.
ModelBuilder resize_model() {
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 1, 2, 2});
  m.input("sizes", LOOM_DTYPE_INT64, {4});
  m.node("Resize", {"x", "", "", "sizes"}, {"y"}, "up").s("mode", "linear");
  m.output("y");
  return m;
}

// ConstantOfShape of a shape taken from the input data.
ModelBuilder constant_of_shape_model() {
  ModelBuilder m;
  m.input("s", LOOM_DTYPE_INT64, {2});
  m.node("ConstantOfShape", {"s"}, {"y"}, "fill");
  m.output("y");
  return m;
}

// A code of either kind of refusal: a product that wraps int64 is INVALID_ARGUMENT, one that fits
// but passes the tensor limit LIMIT_EXCEEDED; which one a size reaches first depends on the op.
void expect_refused(const Outcome& o, const char* node, const std::string& what) {
  std::printf("  %s (%.1f ms): %s\n", what.c_str(), o.ms, o.message.c_str());
  EXPECT_TRUE(o.code == LOOM_ERROR_INVALID_ARGUMENT || o.code == LOOM_ERROR_LIMIT_EXCEEDED)
      << what << ": code " << o.code << ": " << o.message;
  EXPECT_NE(o.message.find(node), std::string::npos) << what << ": node not named: " << o.message;
  EXPECT_EQ(o.message.find('\n'), std::string::npos) << what << ": not one line: " << o.message;
}

// One op whose output shape comes from int64 data: `op`(x, shape) on a float input `x`.
ModelBuilder data_shaped_model(const std::string& op, std::vector<int64_t> x_dims,
                               int64_t shape_len) {
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, x_dims);
  m.input("s", LOOM_DTYPE_INT64, {shape_len});
  m.node(op, {"x", "s"}, {"y"}, "op_" + op);
  m.output("y");
  return m;
}

// Runs `model` on (x, s) for each hostile `s` (each must be refused naming the node), then on a
// sane `s`, which must run.
void expect_data_shapes_refused(const std::string& devices, const std::string& op,
                                std::vector<int64_t> x_dims,
                                std::vector<std::vector<int64_t>> hostile,
                                std::vector<int64_t> sane) {
  const auto len = static_cast<int64_t>(sane.size());
  TestSession s = session_of(data_shaped_model(op, x_dims, len), devices, options_for(devices));
  Tensor x = random_tensor(LOOM_DTYPE_FLOAT32, x_dims, 3);
  const std::string node = "op_" + op;
  for (const auto& shape : hostile) {
    std::string what = op + " to [";
    for (int64_t v : shape) what += std::to_string(v) + " ";
    what += "]";
    expect_refused(run_once(s.handle.get(), 1, {{"x", x}, {"s", int64_tensor({len}, shape)}}),
                   node.c_str(), what);
  }
  Outcome ok = run_once(s.handle.get(), 1, {{"x", x}, {"s", int64_tensor({len}, sane)}});
  EXPECT_EQ(ok.code, LOOM_OK) << op << " with a sane shape: " << ok.message;
}

std::vector<std::pair<std::string, Tensor>> loop_inputs() {
  return {{"x", float_tensor({1}, {1.0f})}};
}

}  // namespace

void expect_hostile_runtime_models_fail_cleanly(const std::string& devices) {
  const loom_session_options_t defaults = options_for(devices);

  {  // Shape arithmetic that wraps int64: refused, nothing read out of bounds.
    TestSession s = session_of(reshape_model(), devices, defaults);
    auto in = std::vector<std::pair<std::string, Tensor>>{
        {"x", float_tensor({4}, {1, 2, 3, 4})},
        {"s", int64_tensor({2}, {(int64_t{1} << 62) + 1, 4})}};
    expect_error(run_once(s.handle.get(), 1, in), LOOM_ERROR_INVALID_ARGUMENT, {"reshape"},
                 "Reshape to a wrapping shape");
    // The same model with a sane shape still runs.
    in[1].second = int64_tensor({2}, {2, 2});
    EXPECT_EQ(run_once(s.handle.get(), 1, in).code, LOOM_OK);
  }

  {  // A Loop that never ends stops at the loop limit, naming the node and the option.
    loom_session_options_t o = defaults;
    o.max_loop_iterations = 1000;
    TestSession s = session_of(endless_loop_model(), devices, o);
    expect_error(run_once(s.handle.get(), 1, loop_inputs()), LOOM_ERROR_LIMIT_EXCEEDED,
                 {"endless", "max_loop_iterations"}, "endless Loop");
  }

  {  // The default limit holds too (10,000,000 iterations would take long: the deadline ends it
     // first, which is what a server sets).
    loom_session_options_t o = defaults;
    o.deadline_ms = 100;
    TestSession s = session_of(endless_loop_model(), devices, o);
    Outcome out = run_once(s.handle.get(), 1, loop_inputs());
    expect_error(out, LOOM_ERROR_CANCELLED, {"deadline", "100 ms"}, "endless Loop, deadline");
    // Bounded by how often a run looks, not a timing claim: well under the seconds a hang takes.
    EXPECT_LT(out.ms, 5000.0);
  }

  {  // loom_session_cancel from another thread ends the run in progress.
    loom_session_options_t o = defaults;
    o.max_loop_iterations = -1;  // no bound: only the cancel ends it
    TestSession s = session_of(endless_loop_model(), devices, o);
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      loom_session_cancel(s.handle.get());
    });
    Outcome out = run_once(s.handle.get(), 1, loop_inputs());
    canceller.join();
    expect_error(out, LOOM_ERROR_CANCELLED, {"cancelled"}, "cancelled endless Loop");
    // A cancel only ends the runs in progress: the next one runs (and is cancelled again
    // here, since its loop has no end).
    std::thread again([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      loom_session_cancel(s.handle.get());
    });
    out = run_once(s.handle.get(), 1, loop_inputs());
    again.join();
    EXPECT_EQ(out.code, LOOM_ERROR_CANCELLED) << out.message;
    EXPECT_GE(out.ms, 40.0) << "the second run ended before the second cancel";
  }

  {  // Scan outputs that pile up: refused at the tensor limit, not after they took memory.
    loom_session_options_t o = defaults;
    o.max_tensor_bytes = 1 << 20;
    o.max_loop_iterations = -1;
    TestSession s = session_of(endless_loop_model(256), devices, o);
    expect_error(run_once(s.handle.get(), 2, loop_inputs()), LOOM_ERROR_LIMIT_EXCEEDED,
                 {"endless", "max_tensor_bytes"}, "stacked scan outputs");
  }

  {  // Resize to sizes from the data: the output is checked before the coordinate tables.
    loom_session_options_t o = defaults;
    o.max_tensor_bytes = 64 << 20;
    TestSession s = session_of(resize_model(), devices, o);
    auto in = std::vector<std::pair<std::string, Tensor>>{
        {"x", float_tensor({1, 1, 2, 2}, {1, 2, 3, 4})},
        {"sizes", int64_tensor({4}, {1, 1, 100000, 100000})}};
    expect_error(run_once(s.handle.get(), 1, in), LOOM_ERROR_LIMIT_EXCEEDED,
                 {"up", "max_tensor_bytes"}, "Resize bomb");
    // With the default limit (physical memory), 4 TB is refused the same way.
    TestSession d = session_of(resize_model(), devices, defaults);
    in[1].second = int64_tensor({4}, {1, 1, 1000000, 1000000});
    expect_error(run_once(d.handle.get(), 1, in), LOOM_ERROR_LIMIT_EXCEEDED, {"up"},
                 "Resize bomb, default limit");
    in[1].second = int64_tensor({4}, {1, 1, 4, 4});
    EXPECT_EQ(run_once(d.handle.get(), 1, in).code, LOOM_OK);
  }

  {  // ConstantOfShape: a wrapping shape and a huge one.
    TestSession s = session_of(constant_of_shape_model(), devices, defaults);
    auto in = std::vector<std::pair<std::string, Tensor>>{
        {"s", int64_tensor({2}, {int64_t{1} << 40, int64_t{1} << 40})}};
    expect_error(run_once(s.handle.get(), 1, in), LOOM_ERROR_INVALID_ARGUMENT, {"fill"},
                 "ConstantOfShape, wrapping");
    in[0].second = int64_tensor({2}, {int64_t{1} << 20, int64_t{1} << 20});
    expect_error(run_once(s.handle.get(), 1, in), LOOM_ERROR_LIMIT_EXCEEDED,
                 {"fill", "max_tensor_bytes"}, "ConstantOfShape, 4 TiB");
  }
  // Each op family whose output size comes from the data: a size that wraps int64 and one that
  // fits int64 but not memory, then a sane one.
  constexpr int64_t k40 = int64_t{1} << 40, k62 = int64_t{1} << 62;
  expect_data_shapes_refused(devices, "Expand", {1, 1}, {{k40, k40}, {int64_t{1} << 20, 1 << 20}},
                             {3, 2});
  expect_data_shapes_refused(devices, "Tile", {2, 1}, {{k62, k62}, {k40, 1}}, {2, 3});
  expect_data_shapes_refused(devices, "Pad", {2}, {{k62, k62}, {k40, 0}, {-5, 0}}, {1, 2});
  // An empty output with a huge extent elsewhere: no index maps for what has no elements.
  expect_data_shapes_refused(devices, "Pad", {2, 0}, {{k62, 0, k62, 0}}, {k40, 0, 0, 0});
  expect_data_shapes_refused(devices, "Reshape", {4}, {{k62 + 1, 4}, {-1, -1}}, {2, 2});

  {  // Range: a count that does not fit int64, and one that fits but not memory.
    ModelBuilder m(13);
    m.input("a", LOOM_DTYPE_INT64, {});
    m.input("b", LOOM_DTYPE_INT64, {});
    m.input("d", LOOM_DTYPE_INT64, {});
    m.node("Range", {"a", "b", "d"}, {"y"}, "count_up");
    m.output("y");
    TestSession s = session_of(m, devices, defaults);
    auto range = [&](int64_t a, int64_t b, int64_t d) {
      return run_once(s.handle.get(), 1,
                      {{"a", int64_tensor({}, {a})},
                       {"b", int64_tensor({}, {b})},
                       {"d", int64_tensor({}, {d})}});
    };
    expect_refused(range(INT64_MIN, INT64_MAX, 1), "count_up", "Range over all of int64");
    expect_refused(range(0, int64_t{1} << 60, 1), "count_up", "Range of 2^60 elements");
    expect_refused(range(INT64_MAX, INT64_MIN, -1), "count_up", "Range down over all of int64");
    EXPECT_EQ(range(0, 10, 3).code, LOOM_OK);
  }
  {  // Range on floats: a count of 1e60 is refused, not cast to int64 (undefined behaviour).
    ModelBuilder m(13);
    m.input("a", LOOM_DTYPE_FLOAT32, {});
    m.input("b", LOOM_DTYPE_FLOAT32, {});
    m.input("d", LOOM_DTYPE_FLOAT32, {});
    m.node("Range", {"a", "b", "d"}, {"y"}, "count_up_f");
    m.output("y");
    TestSession s = session_of(m, devices, defaults);
    auto range = [&](float a, float b, float d) {
      return run_once(s.handle.get(), 1,
                      {{"a", float_tensor({}, {a})},
                       {"b", float_tensor({}, {b})},
                       {"d", float_tensor({}, {d})}});
    };
    expect_refused(range(0.f, 1e30f, 1e-30f), "count_up_f", "float Range of 1e60 elements");
    expect_refused(range(0.f, 1.f, 0.f), "count_up_f", "float Range with delta 0");
    EXPECT_EQ(range(0.f, 1.f, 0.25f).code, LOOM_OK);
  }
  {  // OneHot: a depth from the data.
    ModelBuilder m(11);
    m.input("i", LOOM_DTYPE_INT64, {2});
    m.input("depth", LOOM_DTYPE_INT64, {1});
    m.initializer("values", float_tensor({2}, {0.f, 1.f}));
    m.node("OneHot", {"i", "depth", "values"}, {"y"}, "hot");
    m.output("y");
    TestSession s = session_of(m, devices, defaults);
    auto one_hot = [&](int64_t depth) {
      return run_once(s.handle.get(), 1,
                      {{"i", int64_tensor({2}, {0, 1})}, {"depth", int64_tensor({1}, {depth})}});
    };
    expect_refused(one_hot(k62), "hot", "OneHot of depth 2^62");
    expect_refused(one_hot(k40), "hot", "OneHot of depth 2^40");
    EXPECT_EQ(one_hot(4).code, LOOM_OK);
  }
  {  // OneHot of no indices (an empty inner axis) at depth 2^61: an empty output, at once (the
     // kernel used to count to the depth for each outer index: the run-time fuzzer's timeout).
    ModelBuilder m(11);
    m.input("i", LOOM_DTYPE_INT64, {3, 0});
    m.input("depth", LOOM_DTYPE_INT64, {1});
    m.initializer("values", float_tensor({2}, {0.f, 1.f}));
    m.node("OneHot", {"i", "depth", "values"}, {"y"}, "hot").i("axis", 1);
    m.output("y");
    TestSession s = session_of(m, devices, defaults);
    Outcome o = run_once(
        s.handle.get(), 1,
        {{"i", int64_tensor({3, 0}, {})}, {"depth", int64_tensor({1}, {int64_t{1} << 61})}});
    EXPECT_EQ(o.code, LOOM_OK) << o.message;
    EXPECT_LT(o.ms, 5000.0) << "an empty OneHot must not count to its depth";
  }
  {  // Slice with extreme starts, ends and steps from the data: clamped without overflow (the
     // element count of a naive ceil((end - start) / step) wraps), and a step of 0 refused.
    ModelBuilder m(13);
    m.input("x", LOOM_DTYPE_FLOAT32, {4});
    m.input("starts", LOOM_DTYPE_INT64, {1});
    m.input("ends", LOOM_DTYPE_INT64, {1});
    m.initializer("axes", int64_tensor({1}, {0}));
    m.input("steps", LOOM_DTYPE_INT64, {1});
    m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"}, "cut");
    m.output("y");
    TestSession s = session_of(m, devices, defaults);
    auto slice = [&](int64_t a, int64_t b, int64_t d, std::vector<Tensor>* out) {
      std::vector<std::pair<std::string, Tensor>> in = {{"x", float_tensor({4}, {1, 2, 3, 4})},
                                                        {"starts", int64_tensor({1}, {a})},
                                                        {"ends", int64_tensor({1}, {b})},
                                                        {"steps", int64_tensor({1}, {d})}};
      if (!out) return run_once(s.handle.get(), 1, in);
      *out = s.run(in);
      return Outcome{};
    };
    std::vector<Tensor> out;
    slice(0, INT64_MAX, INT64_MAX, &out);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].elements(), 1);
    EXPECT_EQ(out[0].data<float>()[0], 1.f);
    slice(INT64_MAX, INT64_MIN, INT64_MIN, &out);
    ASSERT_EQ(out[0].elements(), 1);
    EXPECT_EQ(out[0].data<float>()[0], 4.f);
    slice(INT64_MIN, INT64_MAX, 3, &out);
    ASSERT_EQ(out[0].elements(), 2);
    EXPECT_EQ(out[0].data<float>()[1], 4.f);
    expect_refused(slice(0, 4, 0, nullptr), "cut", "Slice with step 0");
  }
}

void expect_long_subgraph_cancelled(const std::string& devices) {
  // A chain of MatMuls by the identity: one subgraph on a device that takes the whole model, so
  // only the device's own polling between its steps can end the run early. The rows (symbolic)
  // are scaled until a run takes about 400 ms on this machine, whatever the device's speed.
  constexpr int kNodes = 64, kWidth = 128;
  ModelBuilder m(13);
  m.input("x", LOOM_DTYPE_FLOAT32, {-1, kWidth});
  std::vector<float> eye(kWidth * kWidth, 0.f);
  for (int i = 0; i < kWidth; ++i) eye[static_cast<size_t>(i * kWidth + i)] = 1.f;
  m.initializer("w", float_tensor({kWidth, kWidth}, eye));
  std::string prev = "x";
  for (int k = 0; k < kNodes; ++k) {
    std::string out = k + 1 == kNodes ? "y" : "h" + std::to_string(k);
    m.node("MatMul", {prev, "w"}, {out}, "mm" + std::to_string(k));
    prev = out;
  }
  m.output("y");
  loom_session_options_t o = options_for(devices);
  o.no_fallback = 1;
  TestSession s = session_of(m, devices, o);
  auto inputs = [](int64_t rows) {
    return std::vector<std::pair<std::string, Tensor>>{
        {"x", random_tensor(LOOM_DTYPE_FLOAT32, {rows, kWidth}, 5)}};
  };
  int64_t rows = 64;
  Outcome full;
  for (int attempt = 0; attempt < 6; ++attempt) {
    run_once(s.handle.get(), 1, inputs(rows));  // compiles the plan of this shape
    full = run_once(s.handle.get(), 1, inputs(rows));
    ASSERT_EQ(full.code, LOOM_OK) << full.message;
    if (full.ms >= 300 || rows >= (int64_t{1} << 16)) break;
    rows = std::min<int64_t>(rows * std::max<int64_t>(2, static_cast<int64_t>(400 / (full.ms + 1))),
                             int64_t{1} << 16);
  }
  std::printf("  %s: %lld rows run in %.1f ms\n", devices.c_str(), static_cast<long long>(rows),
              full.ms);
  Outcome cancelled;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const auto input = inputs(rows);  // made before the clock starts
    std::atomic<bool> cancel_sent{false};
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(full.ms / 10));
      loom_session_cancel(s.handle.get());
      cancel_sent = true;
    });
    cancelled = run_once(s.handle.get(), 1, input);
    const bool finished_before_the_cancel = !cancel_sent;
    canceller.join();
    // On a loaded machine the timing run can take far longer than this one (a CI runner under
    // ASan measured 362 ms for a 17 ms run), so the run may end before the cancel is sent:
    // nothing was tested then; measure a longer run again and retry.
    if (cancelled.code != LOOM_OK || !finished_before_the_cancel || rows >= (int64_t{1} << 16))
      break;
    rows = std::min<int64_t>(rows * 4, int64_t{1} << 16);
    run_once(s.handle.get(), 1, inputs(rows));
    full = run_once(s.handle.get(), 1, inputs(rows));
    ASSERT_EQ(full.code, LOOM_OK) << full.message;
    std::printf("  the run ended before the cancel; again with %lld rows (%.1f ms)\n",
                static_cast<long long>(rows), full.ms);
  }
  expect_error(cancelled, LOOM_ERROR_CANCELLED, {"cancelled"}, "cancelled MatMul chain");
  // Stopped within a few of its 64 steps of the cancel, not at the end of the subgraph (a
  // ratio of two runs on the same machine, not a speed claim).
  EXPECT_LT(cancelled.ms, full.ms * 0.6) << "the run went on after the cancel";
}

void expect_absurd_session_options_refused(const std::string& devices) {
  const auto path = reshape_model().save();
  ModelHandle handle = load_model(hostile_runtime().get(), path);
  auto refused = [&](loom_session_options_t o, const char* word) {
    o.devices = devices.c_str();
    loom_session_t* s = nullptr;
    loom_status_t* status = loom_session_create(hostile_runtime().get(), handle.get(), &o, &s);
    ASSERT_NE(status, nullptr) << word;
    EXPECT_EQ(loom_status_code(status), LOOM_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(loom_status_message(status)).find(word), std::string::npos)
        << loom_status_message(status);
    loom_status_free(status);
  };
  loom_session_options_t o = options_for(devices);
  o.threads = 100000;
  refused(o, "threads");
  o = options_for(devices);
  o.max_tensor_bytes = -7;
  refused(o, "max_tensor_bytes");
  o = options_for(devices);
  o.deadline_ms = -1;
  refused(o, "deadline_ms");
  std::filesystem::remove(path);
}

}  // namespace loom::device_testing
