#include "executable.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <loom/plugin.hpp>
#include <map>

#include "half.hpp"
#include "ops.hpp"
#include "transfers.hpp"

namespace loom::opencl {
namespace {

constexpr size_t kAlign = 64;
// One index check's slot in the error buffer: an int flag (at int 4 * slot, so the kernels'
// atomic_cmpxchg works on it) and the bad index as a long (at long 2 * slot + 1).
constexpr size_t kIndexSlotInts = 4;

size_t align_up(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// The bytes of a value as the host sees it (float32 stays 4 bytes under fp16 storage).
size_t host_bytes(const Value& v) {
  return static_cast<size_t>(v.elements) * sdk::dtype_size(v.dtype);
}

bool dynamic_storage(Storage s) {
  return s == Storage::Input || s == Storage::Output;
}

}  // namespace

// ---- KernelCall ---------------------------------------------------------------------------

KernelCall::KernelCall(Executable& exe, const char* kernel, std::string label) : exe_(exe) {
  step_.label = std::move(label);
  step_.kernel_name = kernel;
  step_.kernel = exe.device().create_kernel(kernel);
}

KernelCall& KernelCall::buffer(int value, int64_t extra_elements) {
  const Value& v = exe_.value(value);
  if (!v.shape_known)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "opencl: " + step_.label + ": the shape of '" + v.name +
                                          "' is not known when the subgraph is compiled");
  step_.buffers.push_back({next_, value, extra_elements});
  exe_.note_use(value);
  next_ += 2;
  return *this;
}

KernelCall& KernelCall::i32(int64_t v) {
  if (v < INT_MIN || v > INT_MAX)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "opencl: " + step_.label + ": the value " +
                                          std::to_string(v) +
                                          " does not fit the kernels' 32-bit indices");
  cl_int x = static_cast<cl_int>(v);
  return bytes(&x, sizeof x);
}

KernelCall& KernelCall::f32(float v) {
  return bytes(&v, sizeof v);
}

KernelCall& KernelCall::vec8(std::span<const int64_t> values, int64_t pad) {
  if (values.size() > static_cast<size_t>(kMaxRank))
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              "opencl: " + step_.label + ": rank " + std::to_string(values.size()) + " exceeds 8");
  cl_int v[8];
  size_t lead = 8 - values.size();
  for (size_t i = 0; i < 8; ++i) {
    int64_t x = i < lead ? pad : values[i - lead];
    if (x < INT_MIN || x > INT_MAX)
      sdk::fail(LOOM_ERROR_UNSUPPORTED, "opencl: " + step_.label + ": extent or stride " +
                                            std::to_string(x) + " exceeds 32 bits");
    v[i] = static_cast<cl_int>(x);
  }
  return bytes(v, sizeof v);
}

KernelCall& KernelCall::bytes(const void* data, size_t size) {
  check_cl(clSetKernelArg(step_.kernel.get(), next_, size, data),
           "setting argument " + std::to_string(next_) + " of " + step_.label);
  ++next_;
  return *this;
}

KernelCall& KernelCall::index_check(int slot) {
  step_.error_arg = static_cast<int>(next_);
  step_.error_slot = slot;
  ++next_;  // bound by finalize (placeholder) and, for a slot, by every run
  return i32(slot);
}

void KernelCall::launch_1d(int64_t n) {
  if (n <= 0) return;  // nothing to compute: no step
  size_t lanes = exe_.device().lanes();
  size_t global = (static_cast<size_t>(n) + lanes - 1) / lanes * lanes;
  launch(1, {global, 1, 1}, {lanes, 1, 1});
}

void KernelCall::launch_rows(int64_t rows) {
  if (rows <= 0) return;
  launch(1, {static_cast<size_t>(rows) * 64, 1, 1}, {64, 1, 1});
}

void KernelCall::launch(cl_uint dims, std::array<size_t, 3> global, std::array<size_t, 3> local) {
  step_.dims = dims;
  step_.global = global;
  step_.local = local;
  exe_.add_step(std::move(step_));
}

// ---- compile --------------------------------------------------------------------------------

Executable::Executable(Device& device, const loom_graph_t& graph, size_t arena_size)
    : device_(device), graph_(&graph), arena_size_(arena_size) {
  const char* profile = std::getenv("LOOM_OPENCL_PROFILE");
  profile_ = profile && *profile && std::string(profile) != "0";
  values_.resize(graph.num_values);
  for (size_t id = 0; id < graph.num_values; ++id) {
    const loom_value_info_t* info = graph.values[id];
    Value& v = values_[id];
    v.name = info->name ? info->name : "";
    v.dtype = info->dtype;
    v.elem_size = storage_size(info->dtype);
    v.shape_known = shape_known(info);
    v.shape = shape_of(info);
    v.elements = v.shape_known ? elements_of(v.shape) : 0;
    if (v.shape_known && v.elements > INT_MAX)
      sdk::fail(LOOM_ERROR_UNSUPPORTED, "opencl: '" + v.name + "' has " +
                                            std::to_string(v.elements) +
                                            " elements; the kernels index with 32 bits");
    if (info->flags & LOOM_VALUE_CONSTANT) {
      v.storage = Storage::Constant;
      v.host_data = info->data;
      v.host_size = info->data_size;
      v.graph_constant = true;
    }
  }
  for (size_t i = 0; i < graph.num_inputs; ++i) {
    Value& v = values_[graph.inputs[i]];
    v.storage = Storage::Input;
    v.index = i;
    inputs_.push_back(graph.inputs[i]);
  }
  for (size_t i = 0; i < graph.num_outputs; ++i) {
    Value& v = values_[graph.outputs[i]];
    // Stored as fp16, a float output is made in the arena and converted into its f32 buffer.
    if (stored_as_f16(v)) {
      outputs_.push_back(graph.outputs[i]);
      continue;
    }
    if (v.storage != Storage::Input && v.storage != Storage::Constant) {
      v.storage = Storage::Output;
      v.index = i;
    }
    outputs_.push_back(graph.outputs[i]);
  }
  // Everything else a node makes lives in the arena (placed by plan_arena).
  for (size_t k = 0; k < graph.num_nodes; ++k) {
    const loom_node_t* node = graph.nodes[k];
    for (size_t o = 0; o < node->num_outputs; ++o) {
      if (node->outputs[o] < 0) continue;
      Value& v = values_[node->outputs[o]];
      if (v.storage == Storage::None && v.bytes() > 0) v.storage = Storage::Arena;
    }
  }
  arena_size_ = 0;
  std::map<int, int> input_boundaries = convert_inputs_to_storage();
  lower_nodes();
  convert_outputs_to_f32(input_boundaries);
  plan_arena();
  finalize();
  graph_ = nullptr;
}

size_t Executable::storage_size(loom_dtype_t dtype) const {
  if (dtype == LOOM_DTYPE_FLOAT32 && device_.f16_storage()) return 2;
  return sdk::dtype_size(dtype);
}

bool Executable::stored_as_f16(const Value& v) const {
  return v.dtype == LOOM_DTYPE_FLOAT32 && v.elem_size == 2;
}

// The host hands float inputs over as f32: under fp16 storage each such input gets an f32
// boundary value (the run's input buffer) and a first kernel that rounds it into the graph's
// value, which then lives in the arena like any intermediate.
std::map<int, int> Executable::convert_inputs_to_storage() {
  std::map<int, int> boundaries;  // graph value -> its f32 boundary value
  for (int& id : inputs_) {
    if (!stored_as_f16(values_[id]) || !values_[id].shape_known) continue;
    Value boundary = values_[id];
    boundary.elem_size = sizeof(float);
    values_.push_back(std::move(boundary));
    int b = static_cast<int>(values_.size() - 1);
    Value& v = values_[id];
    v.storage = v.bytes() ? Storage::Arena : Storage::None;
    v.index = 0;
    KernelCall(*this, "storage_from_f32", "fp16 storage of input '" + v.name + "'")
        .buffer(b)
        .buffer(id)
        .i32(v.elements)
        .launch_1d(v.elements);
    boundaries[id] = b;
    id = b;
  }
  ++current_op_;
  return boundaries;
}

// The mirror image: float outputs kept as fp16 get an f32 boundary value (the run's output
// buffer) and a last kernel each that widens them. A graph input handed straight through is
// returned from its f32 boundary; a constant output is written from its host data by run().
void Executable::convert_outputs_to_f32(const std::map<int, int>& input_boundaries) {
  for (size_t i = 0; i < outputs_.size(); ++i) {
    int id = outputs_[i];
    if (auto it = input_boundaries.find(id); it != input_boundaries.end()) {
      outputs_[i] = it->second;
      continue;
    }
    Value& v = values_[id];
    if (!stored_as_f16(v) || !v.shape_known || v.storage == Storage::Constant) continue;
    if (v.storage == Storage::None && v.bytes() > 0) v.storage = Storage::Arena;
    Value boundary = v;
    boundary.elem_size = sizeof(float);
    boundary.storage = Storage::Output;
    boundary.index = i;
    boundary.first_use = boundary.last_use = -1;
    values_.push_back(std::move(boundary));
    int b = static_cast<int>(values_.size() - 1);
    KernelCall(*this, "storage_to_f32", "f32 output '" + values_[id].name + "'")
        .buffer(id)
        .buffer(b)
        .i32(values_[id].elements)
        .launch_1d(values_[id].elements);
    outputs_[i] = b;
  }
  ++current_op_;
}

Value& Executable::value(int id) {
  if (id < 0 || static_cast<size_t>(id) >= values_.size())
    sdk::fail(LOOM_ERROR_INTERNAL, "opencl: value id " + std::to_string(id) + " out of range");
  return values_[static_cast<size_t>(id)];
}

std::vector<int> Executable::release_uploaded_constants() {
  std::vector<bool> is_output(values_.size(), false);
  for (int id : outputs_) is_output[static_cast<size_t>(id)] = true;
  std::vector<int> released;
  for (size_t id = 0; id < values_.size(); ++id) {
    Value& v = values_[id];
    if (v.storage != Storage::Constant || !v.graph_constant || !v.needed_on_device || is_output[id])
      continue;
    v.host_data = nullptr;
    v.host_size = 0;
    released.push_back(static_cast<int>(id));
  }
  return released;
}

int Executable::add_constant(loom_dtype_t dtype, std::vector<int64_t> shape,
                             std::vector<uint8_t> bytes) {
  Value v;
  v.name = "(folded constant)";
  v.dtype = dtype;
  v.elem_size = storage_size(dtype);
  v.shape = std::move(shape);
  v.shape_known = true;
  v.elements = elements_of(v.shape);
  // Host data is in the graph's types (f32 for floats); fp16 storage converts it on upload.
  if (bytes.size() != static_cast<size_t>(v.elements) * sdk::dtype_size(dtype))
    sdk::fail(LOOM_ERROR_INTERNAL, "opencl: a folded constant has the wrong byte count");
  v.storage = Storage::Constant;
  owned_constants_.push_back(std::move(bytes));
  v.host_data = owned_constants_.back().data();
  v.host_size = owned_constants_.back().size();
  values_.push_back(std::move(v));
  return static_cast<int>(values_.size() - 1);
}

int Executable::add_float_constant(std::vector<int64_t> shape, const std::vector<float>& data) {
  std::vector<uint8_t> bytes(data.size() * sizeof(float));
  if (!bytes.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
  return add_constant(LOOM_DTYPE_FLOAT32, std::move(shape), std::move(bytes));
}

int Executable::add_scratch(loom_dtype_t dtype, std::vector<int64_t> shape) {
  Value v;
  v.name = "(scratch)";
  v.dtype = dtype;
  v.elem_size = storage_size(dtype);
  v.shape = std::move(shape);
  v.shape_known = true;
  v.elements = elements_of(v.shape);
  v.storage = Storage::Scratch;
  v.byte_offset = scratch_cursor_;
  scratch_cursor_ = align_up(scratch_cursor_ + v.bytes());
  scratch_size_ = std::max(scratch_size_, scratch_cursor_);
  values_.push_back(std::move(v));
  return static_cast<int>(values_.size() - 1);
}

void Executable::add_step(Step step) {
  steps_.push_back(std::move(step));
}

int Executable::add_index_check(IndexCheck check) {
  index_checks_.push_back(std::move(check));
  return static_cast<int>(index_checks_.size() - 1);
}

void Executable::note_use(int id) {
  Value& v = value(id);
  if (v.first_use < 0) v.first_use = current_op_;
  v.last_use = current_op_;
}

// Greedy interval placement: values sorted by size (largest first), each at the lowest offset
// that no value with an overlapping lifetime occupies. A lifetime spans the lowered ops whose
// kernels reference the value, both ends included, so an op never writes where it reads.
void Executable::plan_arena() {
  std::vector<int> order;
  for (size_t id = 0; id < values_.size(); ++id)
    if (values_[id].storage == Storage::Arena && values_[id].first_use >= 0 &&
        values_[id].bytes() > 0)
      order.push_back(static_cast<int>(id));
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return values_[a].bytes() > values_[b].bytes(); });
  std::vector<int> placed;
  for (int id : order) {
    Value& v = values_[id];
    std::vector<std::pair<size_t, size_t>> taken;  // [begin, end) of overlapping lifetimes
    for (int other : placed) {
      const Value& o = values_[other];
      if (o.first_use <= v.last_use && v.first_use <= o.last_use)
        taken.emplace_back(o.byte_offset, o.byte_offset + align_up(o.bytes()));
    }
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + v.bytes() <= begin) break;
      offset = std::max(offset, end);
    }
    v.byte_offset = offset;
    arena_size_ = std::max(arena_size_, align_up(offset + v.bytes()));
    placed.push_back(id);
  }
}

bool activation_bounds(const NodeInfo& node, float& lo, float& hi);  // ops_elementwise.cpp
bool foldable_batch_norm(const NodeInfo& node);                      // ops_conv.cpp
bool conv_accepts_batch_norm(const NodeInfo& conv);                  // ops_conv.cpp

void Executable::plan_fusions(std::vector<Fusion>& fusions, std::vector<bool>& skipped) {
  const loom_graph_t& g = *graph_;
  std::vector<std::vector<size_t>> readers(g.num_values);
  for (size_t k = 0; k < g.num_nodes; ++k)
    for (size_t i = 0; i < g.nodes[k]->num_inputs; ++i)
      if (g.nodes[k]->inputs[i] >= 0) readers[g.nodes[k]->inputs[i]].push_back(k);
  std::vector<bool> is_output(g.num_values, false);
  for (size_t i = 0; i < g.num_outputs; ++i) is_output[g.outputs[i]] = true;

  for (size_t k = 0; k < g.num_nodes; ++k) {
    const loom_node_t& node = *g.nodes[k];
    fusions[k].output = node.num_outputs ? node.outputs[0] : -1;
    if (skipped[k]) continue;
    std::string op = node.op_type;
    bool conv = op == "Conv";
    if (!conv && op != "Gemm" && op != "MatMul") continue;
    int v = fusions[k].output;
    while (v >= 0 && !is_output[v] && readers[v].size() == 1) {
      size_t j = readers[v][0];
      const loom_node_t& next = *g.nodes[j];
      NodeInfo info(g, next);
      if (next.num_inputs == 0 || next.inputs[0] != v || info.present_outputs() != 1) break;
      std::string next_op = next.op_type;
      if (conv && next_op == "BatchNormalization" && fusions[k].batch_norm < 0 &&
          std::isinf(fusions[k].act_max) && foldable_batch_norm(info) &&
          conv_accepts_batch_norm(NodeInfo(g, node))) {
        fusions[k].batch_norm = static_cast<int>(j);
      } else {
        float lo = 0, hi = 0;
        if (!activation_bounds(info, lo, hi)) break;
        fusions[k].act_min = lo;
        fusions[k].act_max = hi;
        skipped[j] = true;
        fusions[k].output = next.outputs[0];
        break;  // one activation ends the chain
      }
      skipped[j] = true;
      v = fusions[k].output = next.outputs[0];
    }
  }
}

void Executable::lower_nodes() {
  const loom_graph_t& g = *graph_;
  std::vector<Fusion> fusions(g.num_nodes);
  std::vector<bool> skipped(g.num_nodes, false);
  plan_fusions(fusions, skipped);
  for (size_t k = 0; k < g.num_nodes; ++k) {
    if (skipped[k]) continue;
    NodeInfo node(g, *g.nodes[k]);
    std::string reason = why_unsupported(g, *g.nodes[k]);
    if (!reason.empty())
      sdk::fail(LOOM_ERROR_UNSUPPORTED,
                "opencl: cannot compile " + node.describe() + ": " + reason);
    for (size_t o = 0; o < node.node.num_outputs; ++o) {
      int id = node.output_id(o);
      if (id >= 0 && !values_[id].shape_known)
        sdk::fail(LOOM_ERROR_UNSUPPORTED, "opencl: " + node.describe() + ": the shape of '" +
                                              values_[id].name +
                                              "' is not known when the subgraph is compiled");
    }
    scratch_cursor_ = 0;
    find_op(node.op())->lower(*this, node, fusions[k]);
    ++current_op_;
  }
}

void Executable::finalize() {
  // Constants that kernels read, uploaded once. Each lands 64-byte aligned in one buffer.
  size_t constants_size = 0;
  for (const Step& s : steps_)
    for (const BufferArg& a : s.buffers) {
      Value& v = values_[a.value];
      if (v.storage == Storage::Constant && !v.needed_on_device && v.bytes() > 0) {
        if (v.host_size < host_bytes(v) || !v.host_data)
          sdk::fail(LOOM_ERROR_INVALID_MODEL,
                    "opencl: constant '" + v.name + "' has " + std::to_string(v.host_size) +
                        " bytes of data, its shape needs " + std::to_string(host_bytes(v)));
        v.needed_on_device = true;
        v.byte_offset = constants_size;
        constants_size = align_up(constants_size + v.bytes());
      }
    }
  // Float constants stored as fp16 are rounded here, once; the halves stay alive until the
  // clFinish below, since the writes do not block.
  std::vector<std::vector<uint16_t>> halves;
  std::lock_guard<std::mutex> lock(device_.mutex());
  cl_command_queue queue = device_.queue();
  if (constants_size) {
    constants_ = device_.allocate(constants_size, "the constants");
    for (const Value& v : values_) {
      if (!v.needed_on_device) continue;
      const void* data = v.host_data;
      if (stored_as_f16(v)) {
        const auto* floats = static_cast<const float*>(v.host_data);
        std::vector<uint16_t>& h = halves.emplace_back(static_cast<size_t>(v.elements));
        for (size_t i = 0; i < h.size(); ++i) {
          float f;
          std::memcpy(&f, floats + i, sizeof f);  // graph data need not be 4-byte aligned
          h[i] = float_to_half(f);
        }
        data = h.data();
      }
      check_cl(clEnqueueWriteBuffer(queue, constants_.get(), CL_FALSE, v.byte_offset, v.bytes(),
                                    data, 0, nullptr, nullptr),
               "uploading constant '" + v.name + "'");
    }
  }
  if (arena_size_) arena_ = device_.allocate(arena_size_, "the arena");
  if (scratch_size_) scratch_ = device_.allocate(scratch_size_, "scratch space");
  placeholder_ = device_.allocate(kAlign, "a placeholder");
  std::vector<std::pair<cl_mem, size_t>> no_inputs;
  std::vector<loom_buffer_t*> no_outputs;
  for (Step& s : steps_) {
    for (const BufferArg& a : s.buffers) {
      const Value& v = values_[a.value];
      if (dynamic_storage(v.storage)) continue;
      size_t offset = 0;
      cl_mem mem = memory_of(v, no_inputs, no_outputs, &offset);
      set_buffer_arg(s, a, mem, offset);
    }
    // Every argument must be valid; runs bind their own error buffer to checking steps.
    if (s.error_arg >= 0) {
      cl_mem mem = placeholder_.get();
      check_cl(clSetKernelArg(s.kernel.get(), static_cast<cl_uint>(s.error_arg), sizeof mem, &mem),
               "binding the error buffer of " + s.label);
    }
  }
  check_cl(clFinish(queue), "uploading the constants");
}

cl_mem Executable::memory_of(const Value& v, const std::vector<std::pair<cl_mem, size_t>>& inputs,
                             const std::vector<loom_buffer_t*>& outputs,
                             size_t* byte_offset) const {
  *byte_offset = v.byte_offset;
  switch (v.storage) {
    case Storage::Input:
      *byte_offset = inputs[v.index].second;
      return inputs[v.index].first;
    case Storage::Output:
      *byte_offset = 0;
      return outputs[v.index]->mem.get();
    case Storage::Constant:
      return constants_.get();
    case Storage::Arena:
      return arena_.get();
    case Storage::Scratch:
      return scratch_.get();
    case Storage::None:
      break;
  }
  // Empty tensors: kernels are never launched on them, but their arguments must be valid.
  *byte_offset = 0;
  return nullptr;
}

void Executable::set_buffer_arg(Step& step, const BufferArg& a, cl_mem mem, size_t byte_offset) {
  const Value& v = values_[a.value];
  size_t elem = v.elem_size ? v.elem_size : 1;
  if (byte_offset % elem)
    sdk::fail(LOOM_ERROR_INTERNAL, "opencl: '" + v.name + "' is not aligned to its element size");
  int64_t offset = static_cast<int64_t>(byte_offset / elem) + a.extra;
  if (offset > INT_MAX)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "opencl: '" + v.name +
                                          "' lies beyond the 32-bit element "
                                          "offsets the kernels use");
  if (!mem) mem = placeholder_.get();  // an empty value: nothing is read or written
  cl_int off = static_cast<cl_int>(offset);
  check_cl(clSetKernelArg(step.kernel.get(), a.arg, sizeof(cl_mem), &mem),
           "binding a buffer of " + step.label);
  check_cl(clSetKernelArg(step.kernel.get(), a.arg + 1, sizeof off, &off),
           "binding an offset of " + step.label);
}

// Time per kernel, summed over the steps that use it, largest first (LOOM_OPENCL_PROFILE=1:
// each step then waits for the previous one, so the sum exceeds a normal run's latency).
void Executable::log_profile(const std::vector<double>& step_ms) const {
  std::map<std::string, std::pair<double, int>> per_kernel;
  double total = 0;
  for (size_t i = 0; i < step_ms.size(); ++i) {
    auto& entry = per_kernel[steps_[i].kernel_name];
    entry.first += step_ms[i];
    entry.second += 1;
    total += step_ms[i];
  }
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [name, entry] : per_kernel) {
    char line[160];
    std::snprintf(line, sizeof line, "%-24s %4d launches %10.2f ms", name.c_str(), entry.second,
                  entry.first);
    order.emplace_back(entry.first, line);
  }
  std::sort(order.rbegin(), order.rend());
  std::string text = "profile of " + std::to_string(step_ms.size()) + " steps, " +
                     std::to_string(static_cast<int64_t>(total)) + " ms:";
  for (const auto& [ms, line] : order) text += "\n  " + line;
  sdk::log(LOOM_LOG_INFO, "opencl", text);
}

void Executable::report_index_errors(const std::vector<cl_int>& flags) const {
  for (size_t slot = 0; slot < index_checks_.size(); ++slot) {
    if (flags[slot * kIndexSlotInts] == 0) continue;
    int64_t index = 0;
    std::memcpy(&index, flags.data() + slot * kIndexSlotInts + 2, sizeof index);
    const IndexCheck& c = index_checks_[slot];
    sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
              c.where + ": index " + std::to_string(index) + " is out of range for axis " +
                  std::to_string(c.axis) + " of size " + std::to_string(c.axis_len));
  }
}

// ---- run ------------------------------------------------------------------------------------

void Executable::run(const loom_run_args_t& args) {
  if (args.num_inputs != inputs_.size() || args.num_outputs != outputs_.size())
    sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
              "opencl run: the subgraph takes " + std::to_string(inputs_.size()) + " inputs and " +
                  std::to_string(outputs_.size()) + " outputs, got " +
                  std::to_string(args.num_inputs) + " and " + std::to_string(args.num_outputs));
  std::vector<std::pair<cl_mem, size_t>> inputs(inputs_.size(), {nullptr, 0});
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const loom_tensor_t& t = args.inputs[i];
    const Value& v = values_[inputs_[i]];
    std::vector<int64_t> given(t.dims, t.dims + std::clamp(t.rank, 0, LOOM_MAX_RANK));
    if (t.dtype != v.dtype || given != v.shape)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                "opencl run: input '" + v.name + "' is " + sdk::dtype_name(t.dtype) + " " +
                    shape_text(given) + ", the subgraph was compiled for " +
                    sdk::dtype_name(v.dtype) + " " + shape_text(v.shape));
    if (v.bytes() == 0) continue;
    if (!t.buffer)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                "opencl run: input '" + v.name + "' is not in an opencl buffer");
    if (t.offset > t.buffer->size || v.bytes() > t.buffer->size - t.offset)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                "opencl run: input '" + v.name + "' extends past the end of its buffer");
    inputs[i] = {t.buffer->mem.get(), t.offset};
  }
  // Uploads into the inputs may still be running on the transfer queue: the kernels wait for
  // them (a barrier on the events), the host does not.
  struct Events {
    std::vector<cl_event> list;
    ~Events() { release_events(list); }
  } uploads;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (args.inputs[i].buffer && values_[inputs_[i]].bytes() > 0)
      for (cl_event e : pending_writes(*args.inputs[i].buffer)) uploads.list.push_back(e);
  std::vector<std::unique_ptr<loom_buffer_t>> owned(outputs_.size());
  std::vector<loom_buffer_t*> outputs(outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Value& v = values_[outputs_[i]];
    if (!v.shape_known)
      sdk::fail(LOOM_ERROR_INTERNAL, "opencl run: output '" + v.name + "' has no static shape");
    owned[i] = std::make_unique<loom_buffer_t>();
    owned[i]->mem = device_.allocate(host_bytes(v), "an output");
    owned[i]->size = host_bytes(v);
    outputs[i] = owned[i].get();
  }

  // The index checks get a buffer per run, so that concurrent runs never clear or read each
  // other's flags. Its read-back lands in `checks` once the run's marker completes; on an
  // error path the destructor waits for it, so the read never writes into freed memory.
  MemHandle errors;
  struct PendingRead {
    std::vector<cl_int> flags;
    cl_event done = nullptr;
    ~PendingRead() {
      if (!done) return;
      clWaitForEvents(1, &done);
      clReleaseEvent(done);
    }
  } checks;
  if (!index_checks_.empty()) {
    checks.flags.assign(index_checks_.size() * kIndexSlotInts, 0);
    errors = device_.allocate(checks.flags.size() * sizeof(cl_int), "the index checks");
  }

  std::unique_lock<std::mutex> lock(device_.mutex());
  cl_command_queue queue = device_.queue();
  if (errors) {
    const cl_int zero = 0;
    check_cl(clEnqueueFillBuffer(queue, errors.get(), &zero, sizeof zero, 0,
                                 checks.flags.size() * sizeof(cl_int), 0, nullptr, nullptr),
             "clearing the index checks");
  }
  if (!uploads.list.empty())
    check_cl(clEnqueueBarrierWithWaitList(queue, static_cast<cl_uint>(uploads.list.size()),
                                          uploads.list.data(), nullptr),
             "waiting for the uploads of the inputs");
  std::vector<double> step_ms;
  for (Step& s : steps_) {
    auto start = std::chrono::steady_clock::now();
    for (const BufferArg& a : s.buffers) {
      const Value& v = values_[a.value];
      if (!dynamic_storage(v.storage)) continue;
      size_t offset = 0;
      cl_mem mem = memory_of(v, inputs, outputs, &offset);
      set_buffer_arg(s, a, mem, offset);
    }
    if (s.error_slot >= 0) {
      cl_mem mem = errors.get();
      check_cl(clSetKernelArg(s.kernel.get(), static_cast<cl_uint>(s.error_arg), sizeof mem, &mem),
               "binding the error buffer of " + s.label);
    }
    const size_t* local = s.local[0] ? s.local.data() : nullptr;
    check_cl(clEnqueueNDRangeKernel(queue, s.kernel.get(), s.dims, nullptr, s.global.data(), local,
                                    0, nullptr, nullptr),
             "launching " + s.label);
    if (profile_) {
      check_cl(clFinish(queue), "running " + s.label);
      step_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  if (profile_) log_profile(step_ms);
  // Outputs no kernel wrote: a graph input or a constant handed straight through.
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Value& v = values_[outputs_[i]];
    if (v.storage == Storage::Output || v.bytes() == 0) continue;
    if (v.storage == Storage::Constant) {
      // From the host data (f32), not the constants buffer, which may hold fp16 halves.
      if (!v.host_data || v.host_size < host_bytes(v))
        sdk::fail(LOOM_ERROR_INVALID_MODEL, "opencl run: constant output '" + v.name +
                                                "' has fewer bytes than its shape needs");
      check_cl(clEnqueueWriteBuffer(queue, outputs[i]->mem.get(), CL_FALSE, 0, host_bytes(v),
                                    v.host_data, 0, nullptr, nullptr),
               "writing output '" + v.name + "'");
      continue;
    }
    size_t offset = 0;
    cl_mem src = memory_of(v, inputs, outputs, &offset);
    check_cl(clEnqueueCopyBuffer(queue, src, outputs[i]->mem.get(), offset, 0, v.bytes(), 0,
                                 nullptr, nullptr),
             "copying output '" + v.name + "'");
  }
  if (errors)
    check_cl(
        clEnqueueReadBuffer(queue, errors.get(), CL_FALSE, 0, checks.flags.size() * sizeof(cl_int),
                            checks.flags.data(), 0, nullptr, &checks.done),
        "reading the index checks");
  // Wait for this run's work only: later runs may queue theirs meanwhile (in order, so they
  // never overlap this run's use of the arena).
  cl_event marker = nullptr;
  check_cl(clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker), "marking the end of a run");
  EventHandle done(marker);
  check_cl(clFlush(queue), "submitting the subgraph");
  lock.unlock();
  check_cl(clWaitForEvents(1, &marker), "running the subgraph");
  if (errors) report_index_errors(checks.flags);

  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Value& v = values_[outputs_[i]];
    loom_tensor_t& out = args.outputs[i];
    out = sdk::empty_tensor();
    out.dtype = v.dtype;
    out.rank = static_cast<int32_t>(v.shape.size());
    for (size_t d = 0; d < v.shape.size(); ++d) out.dims[d] = v.shape[d];
    out.byte_size = host_bytes(v);
    out.buffer = owned[i].release();
  }
}

}  // namespace loom::opencl
