#include "control_flow.hpp"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <loom/op_semantics.hpp>
#include <optional>

#include "run_guard.hpp"
#include "status.hpp"

namespace loom::core {

size_t element_size(loom_dtype_t dtype) {
  return dtype == LOOM_DTYPE_STRING ? sizeof(loom_string_t) : dtype_size(dtype);
}

std::vector<int64_t> dims_of(const loom_tensor_t& t) {
  return {t.dims, t.dims + t.rank};
}

namespace {

// Owns a malloc'd block and the owners of whatever its STRING views point into.
struct Block {
  void* data = nullptr;
  std::vector<std::shared_ptr<void>> deps;
  ~Block() { std::free(data); }
};

int64_t element_count(const loom_tensor_t& t) {
  return sdk::element_count(t);
}

// A new host tensor of `dtype` and `dims`, its bytes uninitialized; `deps` keep STRING views'
// targets alive.
HostValue allocate(loom_dtype_t dtype, const std::vector<int64_t>& dims,
                   std::vector<std::shared_ptr<void>> deps = {}) {
  if (dims.size() > LOOM_MAX_RANK)
    fail(LOOM_ERROR_UNSUPPORTED, "a result would have rank " + std::to_string(dims.size()) +
                                     ", more than " + std::to_string(LOOM_MAX_RANK));
  HostValue v;
  v.present = true;
  v.t.struct_size = sizeof v.t;
  v.t.dtype = dtype;
  v.t.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) v.t.dims[i] = dims[i];
  // Checked, and held to the run's tensor limit before anything is allocated: the shapes of a
  // step's results come from the run's data (docs/limits.md).
  if (element_count(v.t) < 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "a result would have the negative shape " + sdk::shape_text(dims));
  std::optional<size_t> bytes = sdk::try_byte_size(element_count(v.t), element_size(dtype));
  if (!bytes)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "a result of shape " + sdk::shape_text(dims) + " has more bytes than memory can address");
  if (const RunGuard* guard = RunGuard::current())
    guard->check_tensor_bytes(*bytes, [&] {
      return std::string("a ") + dtype_name(dtype) + " result of shape " + sdk::shape_text(dims);
    });
  v.t.byte_size = *bytes;
  auto block = std::make_shared<Block>();
  block->data = std::malloc(v.t.byte_size ? v.t.byte_size : 1);
  if (!block->data) fail(LOOM_ERROR_OUT_OF_MEMORY, "out of memory in a control-flow step");
  block->deps = std::move(deps);
  v.t.data = block->data;
  v.owner = block;
  return v;
}

// A copy that owns its bytes, for values that pass through a step unchanged (the session frees
// the input's memory after its last reader).
HostValue owned(const HostValue& in) {
  if (!in.present || in.owner || !in.is_tensor()) return in;  // containers own their elements
  std::vector<std::shared_ptr<void>> deps;
  HostValue out = allocate(in.t.dtype, dims_of(in.t));
  if (in.t.byte_size) std::memcpy(out.t.data, in.t.data, in.t.byte_size);
  if (in.t.dtype == LOOM_DTYPE_STRING) {
    // The views point into memory the step does not own: copy the characters too.
    auto* views = static_cast<loom_string_t*>(out.t.data);
    auto* block = static_cast<Block*>(out.owner.get());
    for (int64_t i = 0; i < element_count(in.t); ++i) {
      auto text = std::make_shared<std::string>(views[i].data, views[i].size);
      views[i].data = text->data();
      block->deps.push_back(text);
    }
  }
  return out;
}

// The single element of a scalar-like tensor (ONNX allows shape [] or [1]).
template <typename T>
T read_scalar(const HostValue& v, loom_dtype_t dtype, const std::string& what) {
  if (!v.present || v.t.dtype != dtype || element_count(v.t) != 1 || !v.t.data)
    fail(LOOM_ERROR_INVALID_ARGUMENT, what + " must be one " + dtype_name(dtype) + " element");
  T x;
  std::memcpy(&x, v.t.data, sizeof x);
  return x;
}

bool read_bool(const HostValue& v, const std::string& what) {
  return read_scalar<uint8_t>(v, LOOM_DTYPE_BOOL, what) != 0;
}

// Slice `index` of `in` along `axis`, the axis removed.
HostValue slice_along(const HostValue& in, int axis, int64_t index) {
  std::vector<int64_t> dims = dims_of(in.t);
  size_t esize = element_size(in.t.dtype);
  size_t outer = 1, inner = esize;
  for (int i = 0; i < axis; ++i) outer *= static_cast<size_t>(dims[i]);
  for (size_t i = axis + 1; i < dims.size(); ++i) inner *= static_cast<size_t>(dims[i]);
  size_t len = static_cast<size_t>(dims[axis]);
  dims.erase(dims.begin() + axis);
  HostValue out = allocate(in.t.dtype, dims, {in.owner});
  auto* dst = static_cast<char*>(out.t.data);
  const auto* src = static_cast<const char*>(in.t.data);
  for (size_t o = 0; o < outer; ++o)
    if (inner)
      std::memcpy(dst + o * inner, src + (o * len + static_cast<size_t>(index)) * inner, inner);
  return out;
}

// Stacks equally shaped `parts` along a new axis `axis` (0..rank); reversed when `reverse`.
// `empty_template` gives dtype and per-item dims when there are no parts.
HostValue stack_along(const std::vector<HostValue>& parts, int axis, bool reverse,
                      loom_dtype_t dtype, const std::vector<int64_t>& item_dims) {
  std::vector<int64_t> dims = item_dims;
  dims.insert(dims.begin() + axis, static_cast<int64_t>(parts.size()));
  std::vector<std::shared_ptr<void>> deps;
  if (dtype == LOOM_DTYPE_STRING)
    for (const HostValue& p : parts) deps.push_back(p.owner);
  HostValue out = allocate(dtype, dims, std::move(deps));
  size_t esize = element_size(dtype);
  size_t outer = 1, inner = esize;
  for (int i = 0; i < axis; ++i) outer *= static_cast<size_t>(item_dims[i]);
  for (size_t i = axis; i < item_dims.size(); ++i) inner *= static_cast<size_t>(item_dims[i]);
  auto* dst = static_cast<char*>(out.t.data);
  size_t count = parts.size();
  for (size_t t = 0; t < count; ++t) {
    const auto* src = static_cast<const char*>(parts[reverse ? count - 1 - t : t].t.data);
    for (size_t o = 0; o < outer; ++o)
      if (inner) std::memcpy(dst + (o * count + t) * inner, src + o * inner, inner);
  }
  return out;
}

// Collects one scan output per iteration; every iteration must give the same type and shape.
struct ScanCollector {
  std::vector<HostValue> items;
  void add(const HostValue& v, const std::string& what) {
    if (!v.present) fail(LOOM_ERROR_INVALID_ARGUMENT, what + " was not produced");
    if (!items.empty() && (v.t.dtype != items[0].t.dtype || dims_of(v.t) != dims_of(items[0].t)))
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           what + " changes its type or shape between iterations, so it cannot be stacked");
    // The stacked result will hold every item: a loop that runs long enough must not gather
    // more than one tensor may take before it is refused at the stacking.
    bytes += v.t.byte_size;
    if (const RunGuard* guard = RunGuard::current())
      guard->check_tensor_bytes(bytes, [&] {
        return what + " stacked over " + std::to_string(items.size() + 1) + " iterations";
      });
    items.push_back(v);
  }
  uint64_t bytes = 0;
  // With no iterations: the body's declared type and, when static, shape.
  HostValue stack(int axis_or_minus1, bool reverse, const Graph& body, int body_output) const {
    if (!items.empty()) {
      int rank = items[0].t.rank;
      int axis = axis_or_minus1 < 0 ? 0 : axis_or_minus1;
      if (axis > rank) fail(LOOM_ERROR_INVALID_ARGUMENT, "scan output axis is out of range");
      return stack_along(items, axis, reverse, items[0].t.dtype, dims_of(items[0].t));
    }
    const Value& v = body.values[body.outputs[body_output]];
    std::vector<int64_t> item_dims;
    if (v.shape.is_static()) item_dims = v.shape.dims;
    int axis = std::min<int>(std::max(axis_or_minus1, 0), static_cast<int>(item_dims.size()));
    loom_dtype_t dtype = v.dtype == LOOM_DTYPE_UNDEFINED ? LOOM_DTYPE_FLOAT32 : v.dtype;
    return stack_along({}, axis, reverse, dtype, item_dims);
  }
};

std::vector<int64_t> int_list(const Node& node, const char* name, size_t count) {
  const Attribute* a = node.find_attribute(name);
  if (!a) return std::vector<int64_t>(count, 0);
  if (a->ints.size() != count)
    fail(LOOM_ERROR_INVALID_ARGUMENT, std::string("attribute ") + name + " has " +
                                          std::to_string(a->ints.size()) + " entries, expected " +
                                          std::to_string(count));
  return a->ints;
}

void expect_outputs(const std::vector<HostValue>& got, size_t want, const std::string& body) {
  if (got.size() != want)
    fail(LOOM_ERROR_INVALID_ARGUMENT, body + " produced " + std::to_string(got.size()) +
                                          " outputs, expected " + std::to_string(want));
}

std::vector<HostValue> run_if(const Node& node, const std::vector<HostValue>& inputs,
                              BodyRunner& bodies) {
  if (inputs.empty()) fail(LOOM_ERROR_INVALID_ARGUMENT, "the condition input is missing");
  const char* branch = read_bool(inputs[0], "the condition") ? "then_branch" : "else_branch";
  std::vector<HostValue> out = bodies.run_body(branch, {});
  expect_outputs(out, node.outputs.size(), std::string("branch ") + branch);
  return out;
}

std::vector<HostValue> run_loop(const Node& node, const std::vector<HostValue>& inputs,
                                BodyRunner& bodies) {
  const Graph& body = bodies.body("body");
  if (inputs.size() < 2) fail(LOOM_ERROR_INVALID_ARGUMENT, "inputs M and cond are missing");
  size_t carried = inputs.size() - 2;
  if (body.outputs.size() < 1 + carried)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "the body has fewer outputs than cond + carried values");
  size_t scans = body.outputs.size() - 1 - carried;
  if (node.outputs.size() != carried + scans)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "the node has " + std::to_string(node.outputs.size()) +
                                          " outputs, its body " + std::to_string(carried + scans));
  int64_t trips = inputs[0].present ? read_scalar<int64_t>(inputs[0], LOOM_DTYPE_INT64, "M")
                                    : std::numeric_limits<int64_t>::max();
  bool has_cond = inputs[1].present;
  bool cond = has_cond ? read_bool(inputs[1], "cond") : true;
  std::vector<HostValue> state(inputs.begin() + 2, inputs.end());
  std::vector<ScanCollector> collected(scans);
  const RunGuard* guard = RunGuard::current();
  const int64_t limit = guard && guard->limits().max_loop_iterations > 0
                            ? guard->limits().max_loop_iterations
                            : std::numeric_limits<int64_t>::max();
  for (int64_t i = 0; i < trips && cond; ++i) {
    // Whatever M and the condition say, the run's loop limit ends it; cancellation too.
    if (i >= limit)
      fail(LOOM_ERROR_LIMIT_EXCEEDED,
           "stopped after " + std::to_string(limit) +
               " iterations, the loop limit (session option max_loop_iterations, infer-run "
               "--max-loop-iterations)");
    if (guard) guard->poll();
    std::vector<HostValue> body_in{scalar_int64(i), scalar_bool(cond)};
    body_in.insert(body_in.end(), state.begin(), state.end());
    std::vector<HostValue> out;
    try {
      out = bodies.run_body("body", body_in);
      expect_outputs(out, 1 + carried + scans, "the body");
      // Without a cond input the body's cond output is ignored (a for loop).
      if (has_cond) cond = read_bool(out[0], "the body's cond output");
      for (size_t c = 0; c < carried; ++c) state[c] = out[1 + c];
      for (size_t s = 0; s < scans; ++s)
        collected[s].add(out[1 + carried + s], "scan output " + std::to_string(s));
    } catch (const Error& e) {
      fail(e.code(), "iteration " + std::to_string(i) + ": " + e.what());
    }
  }
  std::vector<HostValue> result;
  for (HostValue& v : state) result.push_back(owned(v));
  for (size_t s = 0; s < scans; ++s)
    result.push_back(collected[s].stack(0, false, body, static_cast<int>(1 + carried + s)));
  return result;
}

// The sdk's axis rule; a bad axis here comes from the run's data (INVALID_ARGUMENT).
int normalize_axis(int64_t axis, int rank, const std::string& what) {
  std::optional<int64_t> a = sdk::try_normalize_axis(axis, rank);
  if (!a)
    fail(LOOM_ERROR_INVALID_ARGUMENT, what + " axis " + std::to_string(axis) +
                                          " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(*a);
}

std::vector<HostValue> run_scan(const Node& node, const std::vector<HostValue>& inputs,
                                BodyRunner& bodies) {
  const Graph& body = bodies.body("body");
  const Attribute* m_attr = node.find_attribute("num_scan_inputs");
  if (!m_attr || m_attr->i < 1 || static_cast<size_t>(m_attr->i) > inputs.size())
    fail(LOOM_ERROR_INVALID_ARGUMENT, "attribute num_scan_inputs is missing or out of range");
  size_t num_scan = static_cast<size_t>(m_attr->i);
  size_t num_state = inputs.size() - num_scan;
  if (body.outputs.size() < num_state)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "the body has fewer outputs than state values");
  size_t num_out = body.outputs.size() - num_state;
  std::vector<int64_t> in_axes = int_list(node, "scan_input_axes", num_scan);
  std::vector<int64_t> in_dirs = int_list(node, "scan_input_directions", num_scan);
  std::vector<int64_t> out_axes = int_list(node, "scan_output_axes", num_out);
  std::vector<int64_t> out_dirs = int_list(node, "scan_output_directions", num_out);

  int64_t length = -1;
  std::vector<int> axes(num_scan);
  for (size_t j = 0; j < num_scan; ++j) {
    const HostValue& x = inputs[num_state + j];
    std::string what = "scan input " + std::to_string(j);
    if (!x.present) fail(LOOM_ERROR_INVALID_ARGUMENT, what + " is missing");
    axes[j] = normalize_axis(in_axes[j], x.t.rank, what);
    int64_t len = x.t.dims[axes[j]];
    if (length >= 0 && len != length)
      fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has " + std::to_string(len) +
                                            " steps along its scan axis, the first has " +
                                            std::to_string(length));
    length = len;
  }
  std::vector<HostValue> state(inputs.begin(), inputs.begin() + num_state);
  std::vector<ScanCollector> collected(num_out);
  const RunGuard* guard = RunGuard::current();
  for (int64_t t = 0; t < length; ++t) {
    if (guard) guard->poll();
    try {
      std::vector<HostValue> body_in = state;
      for (size_t j = 0; j < num_scan; ++j)
        body_in.push_back(
            slice_along(inputs[num_state + j], axes[j], in_dirs[j] ? length - 1 - t : t));
      std::vector<HostValue> out = bodies.run_body("body", body_in);
      expect_outputs(out, num_state + num_out, "the body");
      for (size_t s = 0; s < num_state; ++s) state[s] = out[s];
      for (size_t k = 0; k < num_out; ++k)
        collected[k].add(out[num_state + k], "scan output " + std::to_string(k));
    } catch (const Error& e) {
      fail(e.code(), "iteration " + std::to_string(t) + ": " + e.what());
    }
  }
  std::vector<HostValue> result;
  for (HostValue& v : state) result.push_back(owned(v));
  for (size_t k = 0; k < num_out; ++k) {
    int item_rank = collected[k].items.empty() ? -1 : collected[k].items[0].t.rank;
    int axis = item_rank < 0
                   ? static_cast<int>(out_axes[k])
                   : normalize_axis(out_axes[k], item_rank + 1, "scan output " + std::to_string(k));
    result.push_back(
        collected[k].stack(axis, out_dirs[k] != 0, body, static_cast<int>(num_state + k)));
  }
  return result;
}

}  // namespace

HostValue scalar_int64(int64_t x) {
  HostValue v = allocate_host_value(LOOM_DTYPE_INT64, {});
  std::memcpy(v.t.data, &x, sizeof x);
  return v;
}

HostValue scalar_bool(bool x) {
  HostValue v = allocate_host_value(LOOM_DTYPE_BOOL, {});
  *static_cast<uint8_t*>(v.t.data) = x ? 1 : 0;
  return v;
}

HostValue allocate_host_value(loom_dtype_t dtype, const std::vector<int64_t>& dims,
                              std::vector<std::shared_ptr<void>> deps) {
  return allocate(dtype, dims, std::move(deps));
}

HostValue owned_host_value(const HostValue& in) {
  return owned(in);
}

size_t host_value_bytes(const loom_tensor_t& t) {
  return static_cast<size_t>(element_count(t)) * element_size(t.dtype);
}

bool is_host_control_flow(const Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return false;
  if (node.op_type == "If" || node.op_type == "Loop") return true;
  // Scan-8 has a batch axis and sequence_lens; it stays whole on a device.
  return node.op_type == "Scan" && node.opset >= 9;
}

std::vector<HostValue> run_control_flow(const Node& node, const std::vector<HostValue>& inputs,
                                        BodyRunner& bodies) {
  try {
    if (node.op_type == "If") return run_if(node, inputs, bodies);
    if (node.op_type == "Loop") return run_loop(node, inputs, bodies);
    if (node.op_type == "Scan") return run_scan(node, inputs, bodies);
    fail(LOOM_ERROR_INTERNAL, "not a control-flow op");
  } catch (const Error& e) {
    fail(e.code(), node.describe() + ": " + e.what());
  }
}

}  // namespace loom::core
