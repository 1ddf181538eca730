#include "executable.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <loom/arena_plan.hpp>
#include <loom/half.hpp>
#include <loom/plugin.hpp>
#include <loom/shared_constants.hpp>
#include <map>

#include "ops/ops.hpp"
#include "transfers.hpp"

namespace loom::opencl {
namespace {

constexpr size_t kAlign = 64;

size_t align_up(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
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
      if (LOOM_HAS_MEMBER(info, loom_value_info_t, content_id)) v.content_id = info->content_id;
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
  step.nodes = current_nodes_;
  step.name = current_nodes_.empty() ? step.label : graph_->nodes[current_nodes_[0]]->name;
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

// The arena over the lowered ops (sdk::plan_memory): a lifetime spans the ops whose kernels
// reference the value, both ends included, so an op never writes where it reads.
void Executable::plan_arena() {
  std::vector<int> ids;
  std::vector<sdk::BufferRequest> requests;
  for (size_t id = 0; id < values_.size(); ++id) {
    const Value& v = values_[id];
    if (v.storage != Storage::Arena || v.first_use < 0 || v.bytes() == 0) continue;
    ids.push_back(static_cast<int>(id));
    requests.push_back({v.bytes(), v.first_use, v.last_use});
  }
  const sdk::MemoryPlan plan = sdk::plan_memory(requests, kAlign);
  for (size_t r = 0; r < ids.size(); ++r) values_[ids[r]].byte_offset = plan.offsets[r];
  arena_size_ = std::max(arena_size_, plan.arena_size);
}

bool activation_bounds(const NodeInfo& node, float& lo, float& hi);  // ops/elementwise.cpp
bool foldable_batch_norm(const NodeInfo& node);                      // ops/conv.cpp
bool conv_accepts_batch_norm(const NodeInfo& conv);                  // ops/conv.cpp

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
    fusions[k].nodes = {static_cast<int32_t>(k)};
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
        fusions[k].nodes.push_back(static_cast<int32_t>(j));
        fusions[k].output = next.outputs[0];
        break;  // one activation ends the chain
      }
      skipped[j] = true;
      fusions[k].nodes.push_back(static_cast<int32_t>(j));
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
    const size_t first_step = steps_.size();
    current_nodes_ = fusions[k].nodes;
    find_op(node.op())->lower(*this, node, fusions[k]);
    current_nodes_.clear();
    ++current_op_;
    if (steps_.size() == first_step)  // an empty result: nothing to launch
      for (int32_t n : fusions[k].nodes)
        step_free_nodes_.push_back({first_step, n, g.nodes[n]->name,
                                    "no kernel of its own (" + node.op() +
                                        "): an empty result or a value passed through"});
  }
}

void Executable::finalize() {
  // Constants that kernels read, each in a buffer of its own, uploaded once per process: the
  // plans of a symbolic model's input shapes (one executable each) and the sessions of one
  // model share them by content (loom/shared_constants.hpp). Each used to upload every weight
  // again, holding one copy per plan in device memory.
  std::lock_guard<std::mutex> lock(device_.mutex());
  cl_command_queue queue = device_.queue();
  // The buffer lives in the device's context; float constants stored as fp16 are rounded once.
  char context_text[48];
  std::snprintf(context_text, sizeof context_text, "opencl %p ",
                static_cast<void*>(device_.context()));
  for (const Step& s : steps_)
    for (const BufferArg& a : s.buffers) {
      Value& v = values_[a.value];
      if (v.storage != Storage::Constant || v.needed_on_device || v.bytes() == 0) continue;
      if (v.host_size < host_bytes(v) || !v.host_data)
        sdk::fail(LOOM_ERROR_INVALID_MODEL,
                  "opencl: constant '" + v.name + "' has " + std::to_string(v.host_size) +
                      " bytes of data, its shape needs " + std::to_string(host_bytes(v)));
      v.needed_on_device = true;
      const bool f16 = stored_as_f16(v);
      const std::string form =
          context_text + std::string(f16 ? "f16 " : "") + std::to_string(static_cast<int>(v.dtype));
      std::shared_ptr<void> buffer = sdk::shared_constant(
          v.host_data, host_bytes(v), form, v.graph_constant ? v.content_id : 0, v.bytes(), [&] {
            auto mem = std::make_shared<MemHandle>(device_.allocate(v.bytes(), "a constant"));
            std::vector<uint16_t> halves;
            const void* data = v.host_data;
            if (f16) {
              const auto* floats = static_cast<const float*>(v.host_data);
              halves.resize(static_cast<size_t>(v.elements));
              for (size_t i = 0; i < halves.size(); ++i) {
                float f;
                std::memcpy(&f, floats + i, sizeof f);  // graph data need not be 4-byte aligned
                halves[i] = sdk::float_to_half(f);
              }
              data = halves.data();
            }
            check_cl(clEnqueueWriteBuffer(queue, mem->get(), CL_TRUE, 0, v.bytes(), data, 0,
                                          nullptr, nullptr),
                     "uploading constant '" + v.name + "'");
            return std::shared_ptr<void>(mem, mem.get());
          });
      v.device_mem = static_cast<MemHandle*>(buffer.get())->get();
      constant_buffers_.push_back(std::move(buffer));
    }
  if (arena_size_) arena_ = device_.allocate(arena_size_, "the arena");
  if (scratch_size_) scratch_ = device_.allocate(scratch_size_, "scratch space");
  placeholder_ = device_.allocate(kAlign, "a placeholder");
  std::vector<std::pair<cl_mem, size_t>> no_inputs;
  std::vector<Buffer*> no_outputs;
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
  check_cl(clFinish(queue), "binding the steps' arguments");
}

}  // namespace loom::opencl
