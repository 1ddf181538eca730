#include "executable.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <loom/arena_plan.hpp>
#include <loom/half.hpp>
#include <loom/shared_constants.hpp>
#include <map>
#include <set>
#include <variant>

#include "handles.hpp"
#include "ops/ops.hpp"
#include "steps.hpp"
#include "vk_check.hpp"

namespace loom::vulkan {
namespace {

constexpr uint64_t kAlign = 256;  // sub-range alignment inside our own regions
uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

}  // namespace

uint32_t u32(int64_t v, const char* what) {
  if (v < 0 || v > static_cast<int64_t>(UINT32_MAX))
    sdk::fail(LOOM_ERROR_UNSUPPORTED, std::string("vulkan: ") + what + " = " + std::to_string(v) +
                                          " does not fit the kernels' 32-bit indices");
  return static_cast<uint32_t>(v);
}

std::array<uint32_t, 3> Builder::grid_for(uint64_t groups) {
  uint64_t max_x = context().limits().maxComputeWorkGroupCount[0];
  uint64_t x = std::min<uint64_t>(std::max<uint64_t>(groups, 1), max_x);
  uint64_t y = (groups + x - 1) / x;
  if (y > context().limits().maxComputeWorkGroupCount[1])
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "vulkan: " + std::to_string(groups) +
                                          " workgroups exceed the device's dispatch limits");
  return {static_cast<uint32_t>(x), static_cast<uint32_t>(std::max<uint64_t>(y, 1)), 1};
}

void Builder::dispatch_1d(std::string_view shader, std::vector<uint32_t> spec,
                          const std::vector<Loc>& bindings, uint64_t count) {
  if (count == 0) return;
  uint32_t local = std::min<uint32_t>({256u, context().limits().maxComputeWorkGroupSize[0],
                                       context().limits().maxComputeWorkGroupInvocations});
  spec.at(0) = local;
  dispatch(shader, spec, bindings, grid_for((count + local - 1) / local));
}

void Builder::dispatch_rows(std::string_view shader, std::vector<uint32_t> spec,
                            const std::vector<Loc>& bindings, uint64_t rows, uint64_t row_length) {
  if (rows == 0) return;
  uint32_t limit = std::min<uint32_t>({256u, context().limits().maxComputeWorkGroupSize[0],
                                       context().limits().maxComputeWorkGroupInvocations});
  // A power of two (the shaders' tree reduction needs it), no larger than the row.
  uint32_t local = 1;
  while (local * 2 <= limit && local < row_length) local *= 2;
  local = std::max<uint32_t>(local, std::min<uint32_t>(32, limit));
  spec.at(0) = local;
  dispatch(shader, spec, bindings, grid_for(rows));
}

// Builds the steps of one executable.
class SubgraphBuilder final : public Builder {
 public:
  SubgraphBuilder(Executable& exe) : exe_(exe), g_(exe.graph_) {
    consumers_.resize(g_.num_values);
    for (size_t n = 0; n < g_.num_nodes; ++n)
      for (size_t i = 0; i < g_.nodes[n]->num_inputs; ++i)
        if (int id = g_.nodes[n]->inputs[i]; id >= 0) consumers_[id].push_back(n);
    skipped_.assign(g_.num_nodes, false);
  }

  void build_all() {
    for (size_t i = 0; i < g_.num_inputs; ++i) {
      TensorInfo& t = place(g_.inputs[i]);
      if (stored_as_f16(t)) {  // the host gives f32: converted in the first kernels
        t.host_in = scratch(static_cast<uint64_t>(t.elements()) * 4);
        dispatch_1d("f16_convert", {0, u32(t.elements(), "elements"), 1}, {t.host_in, t.loc},
                    static_cast<uint64_t>(t.elements()));
      }
    }
    for (size_t n = 0; n < g_.num_nodes; ++n) {
      current_ = n;
      if (skipped_[n]) continue;
      const size_t first_step = exe_.steps_.size();
      const std::vector<bool> skipped_before = skipped_;
      build_node(n);
      // The node's steps compute it and every node it absorbed meanwhile.
      std::vector<int32_t> nodes{static_cast<int32_t>(n)};
      for (size_t m = 0; m < g_.num_nodes; ++m)
        if (skipped_[m] && !skipped_before[m]) nodes.push_back(static_cast<int32_t>(m));
      for (size_t i = first_step; i < exe_.steps_.size(); ++i) {
        exe_.steps_[i].nodes = nodes;
        exe_.steps_[i].name = g_.nodes[n]->name;
      }
      if (exe_.steps_.size() == first_step)
        for (int32_t m : nodes)
          exe_.step_free_nodes_.push_back({first_step, m, g_.nodes[m]->name,
                                           std::string("no dispatch of its own (") +
                                               g_.nodes[n]->op_type +
                                               "): an empty result or a value passed through"});
    }
    for (size_t i = 0; i < g_.num_outputs; ++i) {
      TensorInfo& t = place(g_.outputs[i]);
      if (stored_as_f16(t) && t.host_out.bytes == 0 && t.elements() > 0) {
        t.host_out = scratch(static_cast<uint64_t>(t.elements()) * 4);
        dispatch_1d("f16_convert", {0, u32(t.elements(), "elements"), 0}, {t.host_out, t.loc},
                    static_cast<uint64_t>(t.elements()));
      }
    }
  }

  void build_node(size_t n) {
    const loom_node_t& node = *g_.nodes[n];
    const OpDef* op = find_op(node.domain ? node.domain : "", node.op_type);
    if (!op)
      sdk::fail(LOOM_ERROR_UNSUPPORTED, std::string("vulkan: no kernel for ") + node.op_type +
                                            " (node '" + node.name + "')");
    bool any_output = false;
    for (size_t o = 0; o < node.num_outputs; ++o)
      if (node.outputs[o] >= 0 && value(node.outputs[o]).elements() > 0) any_output = true;
    for (size_t o = 0; o < node.num_outputs; ++o)
      if (node.outputs[o] >= 0) place(node.outputs[o]);
    if (!any_output) return;
    op->build(*this, node);
  }

  const loom_graph_t& graph() const override { return g_; }
  Context& context() override { return exe_.context_; }

  bool has_input(const loom_node_t& node, size_t i) const override {
    return i < node.num_inputs && node.inputs[i] >= 0;
  }
  const TensorInfo& input(const loom_node_t& node, size_t i) override {
    if (!has_input(node, i))
      sdk::fail(LOOM_ERROR_INVALID_MODEL, std::string(node.op_type) + " node '" + node.name +
                                              "': input " + std::to_string(i) + " is missing");
    return place(node.inputs[i]);
  }
  const TensorInfo& output(const loom_node_t& node, size_t i) override {
    if (i >= node.num_outputs || node.outputs[i] < 0)
      sdk::fail(LOOM_ERROR_INVALID_MODEL, std::string(node.op_type) + " node '" + node.name +
                                              "': output " + std::to_string(i) + " is missing");
    return place(node.outputs[i]);
  }

  Loc upload(const void* data, size_t bytes) override {
    auto& c = exe_.constant_bytes_;
    uint64_t offset = align_up(c.size(), kAlign);
    c.resize(offset + align_up(std::max<size_t>(bytes, 4), kAlign));
    if (bytes) std::memcpy(c.data() + offset, data, bytes);
    return {Region::kConstants, offset, bytes};
  }
  Loc upload_floats(std::span<const float> values) override {
    if (!context().f16_storage()) return upload(values.data(), values.size_bytes());
    std::vector<uint16_t> halves(values.size());
    for (size_t i = 0; i < values.size(); ++i) halves[i] = sdk::float_to_half(values[i]);
    Loc loc = upload(halves.data(), halves.size() * sizeof(uint16_t));
    loc.unit = 2;
    return loc;
  }
  Loc scratch(size_t bytes) override {
    uint64_t offset = align_up(exe_.private_bytes_, kAlign);
    exe_.private_bytes_ = offset + align_up(std::max<size_t>(bytes, 4), kAlign);
    return {Region::kPrivate, offset, bytes};
  }
  Loc error_word() override {
    if (!exe_.uses_error_word_) {
      exe_.error_word_ = scratch(4);
      exe_.uses_error_word_ = true;
    }
    return exe_.error_word_;
  }

  const loom_node_t* sole_consumer(const loom_node_t& node) override {
    if (node.num_outputs < 1 || node.outputs[0] < 0) return nullptr;
    int id = node.outputs[0];
    if ((g_.values[id]->flags & LOOM_VALUE_GRAPH_OUTPUT) || consumers_[id].size() != 1)
      return nullptr;
    size_t c = consumers_[id][0];
    const loom_node_t& next = *g_.nodes[c];
    if (c <= current_ || skipped_[c] || next.num_inputs < 1 || next.inputs[0] != id ||
        next.num_outputs < 1 || next.outputs[0] < 0)
      return nullptr;
    for (size_t i = 1; i < next.num_inputs; ++i)
      if (next.inputs[i] == id) return nullptr;
    return &next;
  }
  void absorb(const loom_node_t& node) override {
    for (size_t n = 0; n < g_.num_nodes; ++n)
      if (g_.nodes[n] == &node) skipped_[n] = true;
  }
  std::pair<Epilogue, const TensorInfo*> fuse_activation(const loom_node_t& node) override {
    if (const loom_node_t* next = sole_consumer(node))
      if (std::optional<Epilogue> e = as_epilogue(g_, *next)) {
        absorb(*next);
        return {*e, &output(*next, 0)};
      }
    return {Epilogue{}, &output(node, 0)};
  }

  void dispatch(std::string_view shader, const std::vector<uint32_t>& spec,
                const std::vector<Loc>& bindings, std::array<uint32_t, 3> groups) override {
    if (bindings.size() > kMaxBindings)
      sdk::fail(LOOM_ERROR_INTERNAL, "vulkan: too many bindings for " + std::string(shader));
    std::string name(shader);
    if (context().f16_storage() && name != "copy" && name != "gather" && !name.ends_with("_f16") &&
        !name.starts_with("f16_"))
      name += "_f16";
    DispatchStep d;
    d.pipeline = &context().pipelines().get(name, static_cast<uint32_t>(bindings.size()), spec);
    d.bindings = bindings;
    d.groups = groups;
    exe_.steps_.push_back({d, {}, name, name});
  }
  void copy(const Loc& src, const Loc& dst, uint64_t bytes) override {
    if (bytes) exe_.steps_.push_back({CopyStep{src, dst, bytes}, {}, "copy", "copy"});
  }

 private:
  TensorInfo& value(int id) {
    TensorInfo& t = exe_.values_.at(static_cast<size_t>(id));
    if (t.id >= 0) return t;
    const loom_value_info_t* v = g_.values[id];
    t.id = id;
    t.info = v;
    t.dtype = exe_.context_.f16_storage() && v->dtype == LOOM_DTYPE_FLOAT32 ? LOOM_DTYPE_FLOAT16
                                                                            : v->dtype;
    if (v->rank < 0)
      sdk::fail(LOOM_ERROR_UNSUPPORTED,
                std::string("vulkan: value '") + v->name + "' has an unknown rank at compile time");
    for (int32_t d = 0; d < v->rank; ++d) {
      if (v->dims[d] < 0)
        sdk::fail(LOOM_ERROR_UNSUPPORTED, std::string("vulkan: value '") + v->name +
                                              "' has an unknown extent at compile time");
      t.dims.push_back(v->dims[d]);
    }
    return t;
  }

  // Gives a value its location on first use.
  TensorInfo& place(int id) {
    TensorInfo& t = value(id);
    if (placed_.count(id)) return t;
    placed_.insert(id);
    const loom_value_info_t* v = t.info;
    size_t elem = sdk::dtype_size(t.dtype);
    if (elem == 0 || t.dtype == LOOM_DTYPE_STRING)
      sdk::fail(LOOM_ERROR_UNSUPPORTED, std::string("vulkan: value '") + v->name + "' has type " +
                                            sdk::dtype_name(t.dtype));
    uint64_t bytes = static_cast<uint64_t>(t.elements()) * elem;
    uint64_t host_bytes = static_cast<uint64_t>(t.elements()) * sdk::dtype_size(v->dtype);
    if (v->flags & LOOM_VALUE_CONSTANT) {
      if (!v->data || v->data_size < host_bytes)
        sdk::fail(LOOM_ERROR_INVALID_MODEL,
                  std::string("vulkan: constant '") + v->name + "' has no or too little data");
      if (stored_as_f16(t)) {
        std::vector<float> values(static_cast<size_t>(t.elements()));
        std::memcpy(values.data(), v->data, host_bytes);
        t.loc = upload_floats(values);
      } else {
        t.loc = upload(v->data, bytes);
      }
    } else if (!(v->flags & (LOOM_VALUE_GRAPH_INPUT | LOOM_VALUE_GRAPH_OUTPUT)) && bytes > 0) {
      t.loc = {Region::kArena, 0, bytes, id};
    } else {
      t.loc = scratch(bytes);
    }
    t.loc.unit = elem == 2 ? 2 : 4;
    return t;
  }

  Executable& exe_;
  const loom_graph_t& g_;
  std::vector<std::vector<size_t>> consumers_;
  std::vector<bool> skipped_;
  std::set<int> placed_;
  size_t current_ = 0;
};

Executable::Executable(Context& context, const loom_graph_t& graph, size_t arena_size)
    : context_(context), graph_(graph), arena_bytes_(arena_size) {
  values_.resize(graph.num_values);
  try {
    SubgraphBuilder builder(*this);
    builder.build_all();
    plan_arena();
    arena_ = context_.memory().allocate(arena_bytes_);
    private_ = context_.memory().allocate(private_bytes_);
    share_constants();
    // The host copy is no longer needed; the graph view keeps the originals alive anyway.
    std::vector<uint8_t>().swap(constant_bytes_);
    record();
  } catch (...) {
    release();
    throw;
  }
}

void Executable::share_constants() {
  // The plans of a symbolic model's input shapes (one executable each) and the sessions of one
  // model upload the same constants: the block is uploaded once per context and shared by
  // content (loom/shared_constants.hpp). Each executable used to hold its own copy in device
  // memory. The block is freed when its last executable is.
  char form[48];
  std::snprintf(form, sizeof form, "vulkan %p", static_cast<void*>(&context_));
  const size_t bytes = constant_bytes_.size();
  MemoryPool& pool = context_.memory();
  bool uploaded = false;
  shared_constants_ = sdk::shared_constant(constant_bytes_.data(), bytes, form, 0, bytes, [&] {
    uploaded = true;
    auto block =
        std::shared_ptr<Allocation>(new Allocation(pool.allocate(bytes)), [&pool](Allocation* a) {
          pool.release(*a);
          delete a;
        });
    context_.upload(constant_bytes_.data(), *block, 0, bytes);
    return std::shared_ptr<void>(block, block.get());
  });
  constants_ = *static_cast<const Allocation*>(shared_constants_.get());
  sdk::log(LOOM_LOG_DEBUG, "vulkan",
           uploaded ? std::to_string(bytes) + " bytes of constants uploaded"
                    : std::to_string(bytes) +
                          " bytes of constants shared with another executable of this device");
}

std::vector<int> Executable::uploaded_constants() const {
  std::vector<int> ids;
  for (size_t id = 0; id < graph_.num_values; ++id)
    if ((graph_.values[id]->flags & LOOM_VALUE_CONSTANT) && values_[id].id >= 0 &&
        values_[id].loc.region == Region::kConstants)
      ids.push_back(static_cast<int>(id));
  return ids;
}

Executable::~Executable() {
  release();
}

void Executable::release() {
  VkDevice dev = context_.device();
  for (VkFence fence : fences_) vkDestroyFence(dev, fence, nullptr);
  fences_.clear();
  segments_.clear();  // freed with their pool
  single_steps_.clear();
  if (command_pool_) vkDestroyCommandPool(dev, command_pool_, nullptr);
  if (descriptor_pool_) vkDestroyDescriptorPool(dev, descriptor_pool_, nullptr);
  command_pool_ = VK_NULL_HANDLE;
  descriptor_pool_ = VK_NULL_HANDLE;
  context_.memory().release(arena_);
  context_.memory().release(private_);
  shared_constants_.reset();  // the block goes with the last executable that shares it
  arena_ = private_ = constants_ = Allocation{};
}

std::pair<VkBuffer, uint64_t> Executable::absolute(const Loc& loc) const {
  const Allocation& region = loc.region == Region::kArena       ? arena_
                             : loc.region == Region::kConstants ? constants_
                                                                : private_;
  uint64_t base =
      loc.region == Region::kArena ? value_offsets_.at(static_cast<size_t>(loc.value)) : 0;
  return {region.buffer, region.offset + base + loc.offset};
}

// The core plans the arena from the graph's node order, but fused kernels write a value
// (the fused activation's output) earlier than that plan assumes, so the plan could overlap it
// with a value still being read. The arena is therefore planned here, over the recorded steps:
// a value lives from the first to the last step that binds it (sdk::plan_memory places them).
void Executable::plan_arena() {
  std::map<int, sdk::BufferRequest> live;  // by value id
  auto touch = [&](const Loc& loc, size_t step) {
    if (loc.region != Region::kArena) return;
    size_t bytes = values_.at(static_cast<size_t>(loc.value)).loc.bytes;
    int at = static_cast<int>(step);
    auto [it, fresh] = live.try_emplace(loc.value, sdk::BufferRequest{bytes, at, at});
    if (!fresh) it->second.last_use = at;
  };
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (auto* d = std::get_if<DispatchStep>(&steps_[i].what)) {
      for (const Loc& l : d->bindings) touch(l, i);
    } else {
      const CopyStep& c = std::get<CopyStep>(steps_[i].what);
      touch(c.src, i);
      touch(c.dst, i);
    }
  }
  std::vector<sdk::BufferRequest> requests;
  for (const auto& [id, request] : live) requests.push_back(request);
  const sdk::MemoryPlan plan = sdk::plan_memory(requests, kAlign);
  value_offsets_.assign(values_.size(), 0);
  size_t r = 0;
  for (const auto& [id, request] : live)
    value_offsets_[static_cast<size_t>(id)] = plan.offsets[r++];
  arena_bytes_ = plan.arena_size;
}

VkDescriptorBufferInfo Executable::resolve(const Loc& loc, uint32_t* word_offset) const {
  auto [buffer, absolute] = this->absolute(loc);
  uint64_t align = std::max<uint64_t>(context_.limits().minStorageBufferOffsetAlignment, 4);
  uint64_t base = absolute / align * align;
  uint64_t delta = absolute - base;
  uint64_t range = align_up(delta + std::max<uint64_t>(loc.bytes, 4), 4);
  if (range > context_.limits().maxStorageBufferRange)
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "vulkan: a tensor of " + std::to_string(loc.bytes) +
                                          " bytes exceeds the device's maxStorageBufferRange (" +
                                          std::to_string(context_.limits().maxStorageBufferRange) +
                                          ")");
  if (delta % loc.unit)
    sdk::fail(LOOM_ERROR_INTERNAL, "vulkan: a binding is not aligned to its element size");
  if (word_offset) *word_offset = static_cast<uint32_t>(delta / loc.unit);
  return {buffer, base, range};
}

}  // namespace loom::vulkan
