// Control flow: If, Loop and Scan run their bodies through KernelContext::run_subgraph.
// Body outputs come back as owned Tensors; they are passed on (If outputs, loop-carried values)
// without copying. Per-iteration scan outputs are kept until the end and then stacked along
// their scan axis.
//
// Runaway loops: a Loop runs at most M iterations (when M is given) and stops when its
// condition becomes false (when cond is given). Whatever M and the condition say, it stops
// after the run's loop limit (the session option max_loop_iterations, plugin ABI 1.4's
// loom_run_control_t) with LOOM_ERROR_LIMIT_EXCEEDED naming the node, instead of hanging; a
// run without a control (kernels called directly) uses kMaxLoopIterations (10,000,000;
// LOOM_CPU_MAX_LOOP_ITERATIONS overrides it). Every iteration polls for cancellation.
#include <algorithm>
#include <cstdlib>
#include <limits>

#include "data_movement.hpp"

namespace loom::cpu {
namespace {

constexpr int64_t kMaxLoopIterations = 10'000'000;

int64_t loop_iteration_limit() {
  if (const char* env = std::getenv("LOOM_CPU_MAX_LOOP_ITERATIONS")) {
    char* end = nullptr;
    long long v = std::strtoll(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) return v;
  }
  return kMaxLoopIterations;
}

const loom_graph_t& graph_attribute(const KernelContext& ctx, const char* name) {
  const loom_graph_t* g = ctx.attrs().get_graph(name);
  if (!g)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": graph attribute '" + name + "' is missing");
  return *g;
}

bool truth_of(const KernelContext& ctx, const loom_tensor_t& t, const char* what) {
  return read_scalar_as_double(ctx, t, what) != 0;
}

// The input as a shareable Tensor (copied only if the context has no owning tensor).
Tensor tensor_of_input(const KernelContext& ctx, size_t i) {
  if (const Tensor* t = ctx.input_tensor(i)) return *t;
  const loom_tensor_t& v = ctx.required_input(i);
  Tensor t = make_tensor(v.dtype, sdk::shape_of(v));
  if (v.byte_size) std::memcpy(t.view.data, v.data, v.byte_size);
  own_strings(t);
  return t;
}

Tensor scalar_tensor_int64(int64_t v) {
  Tensor t = make_tensor(LOOM_DTYPE_INT64, {});
  *static_cast<int64_t*>(t.view.data) = v;
  return t;
}

Tensor scalar_tensor_bool(bool v) {
  Tensor t = make_tensor(LOOM_DTYPE_BOOL, {});
  *static_cast<bool*>(t.view.data) = v;
  return t;
}

// Element `index` along `axis` of `t`, without that axis. Shares memory when the slice is
// contiguous (axis 0 or only size-1 axes before it), copies otherwise.
Tensor slice_along_axis(const KernelContext& ctx, const Tensor& t, int64_t axis, int64_t index) {
  const auto dims = sdk::shape_of(t.view);
  std::vector<int64_t> out_dims = dims_of(t.view);
  out_dims.erase(out_dims.begin() + axis);
  const size_t esize = element_size(ctx, t.view.dtype);
  const size_t outer = static_cast<size_t>(product(dims, 0, static_cast<size_t>(axis)));
  const size_t inner = static_cast<size_t>(product(dims, static_cast<size_t>(axis) + 1)) * esize;
  const size_t n = static_cast<size_t>(dims[axis]);
  const auto* base = static_cast<const unsigned char*>(t.view.data);
  if (outer == 1) {
    Tensor s = t;
    s.view.rank = static_cast<int32_t>(out_dims.size());
    for (size_t i = 0; i < out_dims.size(); ++i) s.view.dims[i] = out_dims[i];
    s.view.data = const_cast<unsigned char*>(base) + static_cast<size_t>(index) * inner;
    s.view.byte_size = inner;
    return s;
  }
  Tensor s = make_tensor(t.view.dtype, out_dims);
  auto* dst = static_cast<unsigned char*>(s.view.data);
  for (size_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * inner, base + (o * n + static_cast<size_t>(index)) * inner, inner);
  own_strings(s);
  return s;
}

// Shape of a body output when no iteration ran: its declared dims, unknown extents as 0.
std::vector<int64_t> declared_dims(const loom_graph_t& body, size_t output) {
  const loom_value_info_t* v = body.values[body.outputs[output]];
  std::vector<int64_t> dims;
  for (int32_t i = 0; i < std::max<int32_t>(v->rank, 0); ++i)
    dims.push_back(v->dims && v->dims[i] >= 0 ? v->dims[i] : 0);
  return dims;
}

loom_dtype_t declared_dtype(const KernelContext& ctx, const loom_graph_t& body, size_t body_output,
                            size_t node_output) {
  loom_dtype_t d = body.values[body.outputs[body_output]]->dtype;
  if (d == LOOM_DTYPE_UNDEFINED)
    if (const loom_value_info_t* v = sdk::node_output(ctx.graph(), ctx.node(), node_output))
      d = v->dtype;
  if (d == LOOM_DTYPE_UNDEFINED)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": the type of output " +
                                     std::to_string(node_output) +
                                     " is unknown and no iteration produced it");
  return d;
}

// Stacks `parts` (equal shapes) along a new axis `axis`; part t goes to position
// reverse ? T-1-t : t. With no parts the output has the declared shape with extent 0 there.
void stack_output(KernelContext& ctx, size_t out_index, const std::vector<Tensor>& parts,
                  int64_t axis_attr, bool reverse, const loom_graph_t& body, size_t body_output) {
  if (!ctx.output_requested(out_index)) return;
  const int64_t count = static_cast<int64_t>(parts.size());
  std::vector<int64_t> part_dims =
      parts.empty() ? declared_dims(body, body_output) : dims_of(parts[0].view);
  const loom_dtype_t dtype =
      parts.empty() ? declared_dtype(ctx, body, body_output, out_index) : parts[0].view.dtype;
  const int64_t axis = normalize_axis(ctx, axis_attr, static_cast<int64_t>(part_dims.size()) + 1);
  for (int64_t t = 0; t < count; ++t) {
    const loom_tensor_t& v = parts[t].view;
    if (v.dtype != dtype ||
        !std::equal(part_dims.begin(), part_dims.end(), v.dims, v.dims + v.rank))
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": scan output " + std::to_string(body_output) + " has shape " +
               shape_string(sdk::shape_of(v)) + " in iteration " + std::to_string(t) + " but " +
               shape_string(part_dims) + " in iteration 0");
  }
  std::vector<int64_t> out_dims = part_dims;
  out_dims.insert(out_dims.begin() + axis, count);
  OutputBuffer out(ctx, out_index, dtype, out_dims);
  const size_t esize = element_size(ctx, dtype);
  const size_t outer = static_cast<size_t>(product(part_dims, 0, static_cast<size_t>(axis)));
  const size_t inner = static_cast<size_t>(product(part_dims, static_cast<size_t>(axis))) * esize;
  auto* dst = static_cast<unsigned char*>(out.data());
  for (int64_t t = 0; t < count; ++t) {
    const size_t pos = static_cast<size_t>(reverse ? count - 1 - t : t);
    const auto* src = static_cast<const unsigned char*>(parts[t].view.data);
    for (size_t o = 0; o < outer; ++o)
      std::memcpy(dst + (o * static_cast<size_t>(count) + pos) * inner, src + o * inner, inner);
  }
  out.commit();  // strings: copies the bytes while `parts` still holds them
}

void check_body_outputs(const KernelContext& ctx, const std::vector<Tensor>& outs,
                        size_t expected) {
  if (outs.size() != expected)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": body produced " + std::to_string(outs.size()) +
                                       " outputs, expected " + std::to_string(expected));
}

void if_kernel(KernelContext& ctx) {
  const bool cond = truth_of(ctx, ctx.required_input(0), "cond");
  const loom_graph_t& branch = graph_attribute(ctx, cond ? "then_branch" : "else_branch");
  std::vector<Tensor> outs = ctx.run_subgraph(branch, {});
  if (outs.size() < ctx.num_outputs())
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": the " + (cond ? "then" : "else") +
                                       " branch produced " + std::to_string(outs.size()) +
                                       " outputs for " + std::to_string(ctx.num_outputs()));
  for (size_t i = 0; i < ctx.num_outputs(); ++i)
    if (ctx.output_requested(i)) ctx.set_output(i, std::move(outs[i]));
}

void loop_kernel(KernelContext& ctx) {
  const loom_graph_t& body = graph_attribute(ctx, "body");
  const loom_tensor_t* m = ctx.input(0);
  const loom_tensor_t* cond_in = ctx.input(1);
  const size_t carried_count = ctx.num_inputs() >= 2 ? ctx.num_inputs() - 2 : 0;
  if (ctx.num_outputs() < carried_count)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": has fewer outputs than loop-carried values");
  const size_t scan_count = ctx.num_outputs() - carried_count;
  if (body.num_inputs != 2 + carried_count || body.num_outputs != 1 + carried_count + scan_count)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": body takes " + std::to_string(body.num_inputs) +
                                       " inputs and gives " + std::to_string(body.num_outputs) +
                                       " outputs; expected " + std::to_string(2 + carried_count) +
                                       " and " + std::to_string(1 + carried_count + scan_count));

  int64_t trip_count = std::numeric_limits<int64_t>::max();
  if (m) {
    std::vector<int64_t> v = read_int_values(ctx, *m, "M");
    if (v.size() != 1) fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": M must be a scalar");
    trip_count = v[0];
  }
  bool cond = cond_in ? truth_of(ctx, *cond_in, "cond") : true;
  const std::shared_ptr<RunBudget>& budget = current_run_budget();
  int64_t limit = loop_iteration_limit();
  if (budget && budget->control.raw())
    limit = budget->control.max_loop_iterations() > 0 ? budget->control.max_loop_iterations()
                                                      : std::numeric_limits<int64_t>::max();

  std::vector<Tensor> carried;
  for (size_t i = 0; i < carried_count; ++i) carried.push_back(tensor_of_input(ctx, 2 + i));
  std::vector<std::vector<Tensor>> scans(scan_count);
  std::vector<uint64_t> scan_bytes(scan_count, 0);
  // The message of the check below is made only once the limit is passed (every iteration).
  const uint64_t scan_limit =
      budget && budget->control.raw() ? budget->control.raw()->max_tensor_bytes : 0;

  for (int64_t iter = 0; iter < trip_count && cond; ++iter) {
    if (iter >= limit)
      fail(LOOM_ERROR_LIMIT_EXCEEDED,
           ctx.where() + ": stopped after " + std::to_string(limit) +
               " iterations, the loop limit (session option max_loop_iterations, infer-run "
               "--max-loop-iterations; LOOM_CPU_MAX_LOOP_ITERATIONS without a session)");
    if (budget) budget->control.poll();
    Tensor iter_t = scalar_tensor_int64(iter);
    Tensor cond_t = scalar_tensor_bool(cond);
    std::vector<const Tensor*> inputs = {&iter_t, &cond_t};
    for (const Tensor& c : carried) inputs.push_back(&c);
    std::vector<Tensor> outs = ctx.run_subgraph(body, inputs);
    check_body_outputs(ctx, outs, 1 + carried_count + scan_count);
    // Without a cond input the body's condition output is ignored (spec: a for loop).
    if (cond_in) cond = truth_of(ctx, outs[0].view, "cond (body output)");
    for (size_t i = 0; i < carried_count; ++i) carried[i] = std::move(outs[1 + i]);
    for (size_t k = 0; k < scan_count; ++k) {
      // The stacked output will hold every item: refuse at the tensor limit as they pile up,
      // not once they took the memory.
      scan_bytes[k] += outs[1 + carried_count + k].view.byte_size;
      if (scan_limit && scan_bytes[k] > scan_limit)
        check_scratch_bytes(scan_bytes[k], ctx.where() + ": scan output " + std::to_string(k) +
                                               " stacked over " + std::to_string(iter + 1) +
                                               " iterations");
      scans[k].push_back(std::move(outs[1 + carried_count + k]));
    }
  }
  for (size_t i = 0; i < carried_count; ++i)
    if (ctx.output_requested(i)) ctx.set_output(i, std::move(carried[i]));
  for (size_t k = 0; k < scan_count; ++k)
    stack_output(ctx, carried_count + k, scans[k], 0, false, body, 1 + carried_count + k);
}

std::vector<int64_t> ints_attr_or(const KernelContext& ctx, const char* name, size_t n,
                                  int64_t fallback) {
  auto a = ctx.attrs().get_ints(name);
  if (!a) return std::vector<int64_t>(n, fallback);
  if (a->size() != n)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": attribute '" + name + "' has " +
                                       std::to_string(a->size()) + " entries, expected " +
                                       std::to_string(n));
  return {a->begin(), a->end()};
}

// Scan-9+: scan inputs are sliced along scan_input_axes, outputs stacked along
// scan_output_axes; either can run in reverse.
void scan_kernel(KernelContext& ctx) {
  const loom_graph_t& body = graph_attribute(ctx, "body");
  const int64_t m = ctx.attrs().get_int("num_scan_inputs", -1);
  if (m < 1 || static_cast<size_t>(m) > ctx.num_inputs())
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": num_scan_inputs " + std::to_string(m) +
                                       " is invalid for " + std::to_string(ctx.num_inputs()) +
                                       " inputs");
  const size_t scan_in = static_cast<size_t>(m);
  const size_t states = ctx.num_inputs() - scan_in;
  if (ctx.num_outputs() < states || body.num_inputs != states + scan_in ||
      body.num_outputs != ctx.num_outputs())
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": body inputs/outputs do not match the node");
  const size_t scan_out = ctx.num_outputs() - states;
  const std::vector<int64_t> in_axes = ints_attr_or(ctx, "scan_input_axes", scan_in, 0);
  const std::vector<int64_t> in_dirs = ints_attr_or(ctx, "scan_input_directions", scan_in, 0);
  const std::vector<int64_t> out_axes = ints_attr_or(ctx, "scan_output_axes", scan_out, 0);
  const std::vector<int64_t> out_dirs = ints_attr_or(ctx, "scan_output_directions", scan_out, 0);

  std::vector<Tensor> scan_inputs;
  std::vector<int64_t> axes;
  int64_t steps = -1;
  for (size_t k = 0; k < scan_in; ++k) {
    scan_inputs.push_back(tensor_of_input(ctx, states + k));
    const loom_tensor_t& v = scan_inputs.back().view;
    const int64_t axis = normalize_axis(ctx, in_axes[k], v.rank);
    axes.push_back(axis);
    if (steps >= 0 && v.dims[axis] != steps)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": scan input " + std::to_string(k) +
                                            " has " + std::to_string(v.dims[axis]) +
                                            " steps, the first one " + std::to_string(steps));
    steps = v.dims[axis];
  }
  std::vector<Tensor> state;
  for (size_t i = 0; i < states; ++i) state.push_back(tensor_of_input(ctx, i));
  std::vector<std::vector<Tensor>> scans(scan_out);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<Tensor> slices;
    slices.reserve(scan_in);
    for (size_t k = 0; k < scan_in; ++k)
      slices.push_back(
          slice_along_axis(ctx, scan_inputs[k], axes[k], in_dirs[k] ? steps - 1 - t : t));
    std::vector<const Tensor*> inputs;
    for (const Tensor& s : state) inputs.push_back(&s);
    for (const Tensor& s : slices) inputs.push_back(&s);
    std::vector<Tensor> outs = ctx.run_subgraph(body, inputs);
    check_body_outputs(ctx, outs, states + scan_out);
    for (size_t i = 0; i < states; ++i) state[i] = std::move(outs[i]);
    for (size_t k = 0; k < scan_out; ++k) scans[k].push_back(std::move(outs[states + k]));
  }
  for (size_t i = 0; i < states; ++i)
    if (ctx.output_requested(i)) ctx.set_output(i, std::move(state[i]));
  for (size_t k = 0; k < scan_out; ++k)
    stack_output(ctx, states + k, scans[k], out_axes[k], out_dirs[k] != 0, body, states + k);
}

// Scan-8: inputs and outputs carry a batch axis 0, scan inputs have time on axis 1, and the
// optional sequence_lens (input 0) limits the steps per batch entry; scan outputs past a
// sequence's length are zero.
void scan8_kernel(KernelContext& ctx) {
  const loom_graph_t& body = graph_attribute(ctx, "body");
  const int64_t m = ctx.attrs().get_int("num_scan_inputs", -1);
  if (m < 1 || static_cast<size_t>(m) + 1 > ctx.num_inputs())
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": num_scan_inputs " + std::to_string(m) +
                                       " is invalid for " + std::to_string(ctx.num_inputs()) +
                                       " inputs");
  const size_t scan_in = static_cast<size_t>(m);
  const size_t states = ctx.num_inputs() - 1 - scan_in;
  if (ctx.num_outputs() < states || body.num_inputs != states + scan_in ||
      body.num_outputs != ctx.num_outputs())
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": body inputs/outputs do not match the node");
  const size_t scan_out = ctx.num_outputs() - states;
  const std::vector<int64_t> dirs = ints_attr_or(ctx, "directions", scan_in, 0);

  std::vector<Tensor> state_in, scan_inputs;
  for (size_t i = 0; i < states; ++i) state_in.push_back(tensor_of_input(ctx, 1 + i));
  for (size_t k = 0; k < scan_in; ++k) scan_inputs.push_back(tensor_of_input(ctx, 1 + states + k));
  const loom_tensor_t& first = scan_inputs[0].view;
  if (first.rank < 2)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": scan inputs must be [batch, sequence, ...]");
  const int64_t batch = first.dims[0], max_len = first.dims[1];
  for (const Tensor& s : scan_inputs)
    if (s.view.rank < 2 || s.view.dims[0] != batch || s.view.dims[1] != max_len)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": scan inputs differ in batch or length");
  for (const Tensor& s : state_in)
    if (s.view.rank < 1 || s.view.dims[0] != batch)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": initial states must have batch " +
                                            std::to_string(batch) + " on axis 0");
  std::vector<int64_t> lens(static_cast<size_t>(batch), max_len);
  if (const loom_tensor_t* l = ctx.input(0)) {
    lens = read_int_values(ctx, *l, "sequence_lens");
    if (static_cast<int64_t>(lens.size()) != batch)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": sequence_lens must have batch entries");
    for (int64_t v : lens)
      if (v < 0 || v > max_len)
        fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": sequence length " + std::to_string(v) +
                                              " is outside [0, " + std::to_string(max_len) + "]");
  }

  std::vector<std::vector<Tensor>> final_states(states);
  std::vector<std::vector<Tensor>> per_batch_scans(scan_out);  // [batch] of [max_len, ...]
  std::vector<std::vector<Tensor>> steps(scan_out);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> state;
    for (const Tensor& s : state_in) state.push_back(slice_along_axis(ctx, s, 0, b));
    std::vector<Tensor> sequences;
    for (const Tensor& s : scan_inputs) sequences.push_back(slice_along_axis(ctx, s, 0, b));
    for (auto& s : steps) s.clear();
    const int64_t len = lens[b];
    for (int64_t t = 0; t < len; ++t) {
      std::vector<Tensor> slices;
      for (size_t k = 0; k < scan_in; ++k)
        slices.push_back(slice_along_axis(ctx, sequences[k], 0, dirs[k] ? len - 1 - t : t));
      std::vector<const Tensor*> inputs;
      for (const Tensor& s : state) inputs.push_back(&s);
      for (const Tensor& s : slices) inputs.push_back(&s);
      std::vector<Tensor> outs = ctx.run_subgraph(body, inputs);
      check_body_outputs(ctx, outs, states + scan_out);
      for (size_t i = 0; i < states; ++i) state[i] = std::move(outs[i]);
      for (size_t k = 0; k < scan_out; ++k) steps[k].push_back(std::move(outs[states + k]));
    }
    for (size_t i = 0; i < states; ++i) final_states[i].push_back(std::move(state[i]));
    // Pad each scan output to max_len with zeros, then stack this batch entry.
    for (size_t k = 0; k < scan_out; ++k) {
      std::vector<int64_t> part =
          steps[k].empty() ? declared_dims(body, states + k) : dims_of(steps[k][0].view);
      const loom_dtype_t dtype = steps[k].empty()
                                     ? declared_dtype(ctx, body, states + k, states + k)
                                     : steps[k][0].view.dtype;
      while (static_cast<int64_t>(steps[k].size()) < max_len)
        steps[k].push_back(make_tensor(dtype, part));
      std::vector<int64_t> dims = part;
      dims.insert(dims.begin(), max_len);
      Tensor stacked = make_tensor(dtype, dims);
      const size_t bytes = static_cast<size_t>(product(part)) * element_size(ctx, dtype);
      for (int64_t t = 0; t < max_len; ++t) {
        if (dims_of(steps[k][t].view) != part || steps[k][t].view.dtype != dtype)
          fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": scan output " + std::to_string(k) +
                                                " changes shape between iterations");
        std::memcpy(static_cast<unsigned char*>(stacked.view.data) + static_cast<size_t>(t) * bytes,
                    steps[k][t].view.data, bytes);
      }
      own_strings(stacked);
      per_batch_scans[k].push_back(std::move(stacked));
    }
  }
  for (size_t i = 0; i < states; ++i) {
    if (batch == 0) {
      if (ctx.output_requested(i)) ctx.set_output(i, tensor_of_input(ctx, 1 + i));
      continue;
    }
    stack_output(ctx, i, final_states[i], 0, false, body, i);
  }
  for (size_t k = 0; k < scan_out; ++k)
    stack_output(ctx, states + k, per_batch_scans[k], 0, false, body, states + k);
}

}  // namespace

LOOM_CPU_KERNEL("If", 1, if_kernel, nullptr);
LOOM_CPU_KERNEL("Loop", 1, loop_kernel, nullptr);
LOOM_CPU_KERNEL("Scan", 8, scan8_kernel, nullptr);
LOOM_CPU_KERNEL("Scan", 9, scan_kernel, nullptr);

}  // namespace loom::cpu
