#include "executable.hpp"

#include <algorithm>
#include <cstring>
#include <loom/arena_plan.hpp>
#include <loom/half.hpp>
#include <map>
#include <set>
#include <variant>

#include "handles.hpp"
#include "ops/ops.hpp"
#include "vk_check.hpp"

namespace loom::vulkan {
namespace {

constexpr uint64_t kAlign = 256;  // sub-range alignment inside our own regions
uint64_t align_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

// Every step waits for the previous ones: kernels of one subgraph mostly form a chain, and a
// global barrier is what drivers handle best for that. Barriers order commands across the
// command buffers of one queue too (submission order), so segments chain the same way.
void full_barrier(VkCommandBuffer cmd) {
  VkMemoryBarrier barrier{};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

}  // namespace

struct DispatchStep {
  const Pipeline* pipeline = nullptr;
  std::vector<Loc> bindings;
  std::array<uint32_t, 3> groups{};
  VkDescriptorSet set = VK_NULL_HANDLE;
  std::array<uint32_t, kMaxBindings> words{};  // push constants: the bindings' element offsets
};
struct CopyStep {
  Loc src, dst;
  uint64_t bytes = 0;
};
struct Executable::Step {
  std::variant<DispatchStep, CopyStep> what;
  // For profiled runs: the nodes of the compiled graph the step computes (its node and those
  // fused into it as epilogues), none for a conversion of the device's own (fp16 storage of
  // inputs and outputs); the first node's name or what the step does; the pipeline's name.
  std::vector<int32_t> nodes;
  std::string name, detail;
};

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
    constants_ = context_.memory().allocate(constant_bytes_.size());
    context_.upload(constant_bytes_.data(), constants_, 0, constant_bytes_.size());
    // The host copy is no longer needed; the graph view keeps the originals alive anyway.
    std::vector<uint8_t>().swap(constant_bytes_);
    record();
  } catch (...) {
    release();
    throw;
  }
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
  context_.memory().release(constants_);
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

void Executable::record() {
  VkDevice dev = context_.device();
  size_t sets = 0, descriptors = 0;
  for (const Step& s : steps_)
    if (auto* d = std::get_if<DispatchStep>(&s.what)) {
      ++sets;
      descriptors += d->bindings.size();
    }
  if (sets) {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                              static_cast<uint32_t>(descriptors)};
    VkDescriptorPoolCreateInfo pool{};
    pool.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    pool.maxSets = static_cast<uint32_t>(sets);
    pool.poolSizeCount = 1;
    pool.pPoolSizes = &size;
    vk_check(vkCreateDescriptorPool(dev, &pool, nullptr, &descriptor_pool_),
             "vkCreateDescriptorPool");
  }
  VkCommandPoolCreateInfo cp{};
  cp.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = context_.queue_family();
  vk_check(vkCreateCommandPool(dev, &cp, nullptr, &command_pool_), "vkCreateCommandPool");
  const size_t segments =
      std::max<size_t>(1, (steps_.size() + kStepsPerSegment - 1) / kStepsPerSegment);
  std::vector<VkCommandBuffer> buffers(segments + 1);
  VkCommandBufferAllocateInfo ca{};
  ca.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ca.commandPool = command_pool_;
  ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ca.commandBufferCount = static_cast<uint32_t>(buffers.size());
  vk_check(vkAllocateCommandBuffers(dev, &ca, buffers.data()), "vkAllocateCommandBuffers");
  transfers_ = buffers[0];
  segments_.assign(buffers.begin() + 1, buffers.end());
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  for (size_t i = 0; i < segments; ++i) {
    VkFence fence = VK_NULL_HANDLE;
    vk_check(vkCreateFence(dev, &fi, nullptr, &fence), "vkCreateFence");
    fences_.push_back(fence);
  }

  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  VkCommandBuffer cmd = segments_[0];
  vk_check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
  full_barrier(cmd);  // after the input copies of the transfer command buffer
  size_t recorded = 0;
  for (Step& s : steps_) {
    if (recorded > 0 && recorded % kStepsPerSegment == 0) {
      vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
      cmd = segments_[recorded / kStepsPerSegment];
      vk_check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
    }
    ++recorded;
    if (auto* d = std::get_if<DispatchStep>(&s.what)) {
      VkDescriptorSetAllocateInfo sa{};
      sa.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
      sa.descriptorPool = descriptor_pool_;
      sa.descriptorSetCount = 1;
      sa.pSetLayouts = &d->pipeline->set_layout;
      vk_check(vkAllocateDescriptorSets(dev, &sa, &d->set), "vkAllocateDescriptorSets");
      std::vector<VkDescriptorBufferInfo> infos(d->bindings.size());
      std::vector<VkWriteDescriptorSet> writes(d->bindings.size());
      for (size_t i = 0; i < d->bindings.size(); ++i) {
        infos[i] = resolve(d->bindings[i], &d->words[i]);
        writes[i] = VkWriteDescriptorSet{};
        writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        writes[i].dstSet = d->set;
        writes[i].dstBinding = static_cast<uint32_t>(i);
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[i].pBufferInfo = &infos[i];
      }
      vkUpdateDescriptorSets(dev, static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    }
    record_step(cmd, s);
  }
  vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
}

void Executable::record_step(VkCommandBuffer cmd, const Step& s) {
  if (const auto* d = std::get_if<DispatchStep>(&s.what)) {
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline->pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->pipeline->layout, 0, 1, &d->set,
                            0, nullptr);
    vkCmdPushConstants(cmd, d->pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       sizeof(uint32_t) * kMaxBindings, d->words.data());
    vkCmdDispatch(cmd, d->groups[0], d->groups[1], d->groups[2]);
  } else {
    const CopyStep& c = std::get<CopyStep>(s.what);
    auto [src_buffer, src_offset] = absolute(c.src);
    auto [dst_buffer, dst_offset] = absolute(c.dst);
    VkBufferCopy region{};
    region.srcOffset = src_offset;
    region.dstOffset = dst_offset;
    region.size = c.bytes;
    vkCmdCopyBuffer(cmd, src_buffer, dst_buffer, 1, &region);
  }
  full_barrier(cmd);
}

void Executable::record_single_steps() {
  if (steps_.empty()) return;
  std::vector<VkCommandBuffer> buffers(steps_.size());
  VkCommandBufferAllocateInfo ca{};
  ca.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ca.commandPool = command_pool_;
  ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ca.commandBufferCount = static_cast<uint32_t>(buffers.size());
  vk_check(vkAllocateCommandBuffers(context_.device(), &ca, buffers.data()),
           "vkAllocateCommandBuffers");
  struct FreeOnError {
    Executable& exe;
    std::vector<VkCommandBuffer>& buffers;
    ~FreeOnError() {
      if (!buffers.empty())
        vkFreeCommandBuffers(exe.context_.device(), exe.command_pool_,
                             static_cast<uint32_t>(buffers.size()), buffers.data());
    }
  } guard{*this, buffers};
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  for (size_t i = 0; i < steps_.size(); ++i) {
    vk_check(vkBeginCommandBuffer(buffers[i], &begin), "vkBeginCommandBuffer");
    full_barrier(buffers[i]);  // after the previous step's (or the input copies') writes
    record_step(buffers[i], steps_[i]);
    vk_check(vkEndCommandBuffer(buffers[i]), "vkEndCommandBuffer");
  }
  single_steps_ = std::move(buffers);  // leaves `buffers` empty: the guard frees nothing
  buffers.clear();
}

// Profiled (plugin ABI 1.5): the input copies, each step and the output copies are submitted
// one at a time and waited for, so that each reported time is that work's own. Profiling thus
// serializes the device's work (no two steps overlap, and the host waits after each), so a
// profiled run is slower than a normal one. Polls between steps.
void Executable::submit_profiled(VkCommandBuffer out_cmd, const sdk::RunControl& control) {
  if (single_steps_.size() != steps_.size()) record_single_steps();
  VkFence fence = fences_[0];
  auto timed = [&](VkCommandBuffer cmd) {
    context_.submit(std::span<const VkCommandBuffer>(&cmd, 1), fence);
    context_.wait(fence);
  };
  uint64_t start = sdk::RunControl::now_ns();
  timed(transfers_);
  control.profile("inputs", "copy", {}, start, sdk::RunControl::now_ns());
  size_t next_free = 0;
  auto report_step_free = [&](size_t before_step) {
    for (; next_free < step_free_nodes_.size() &&
           step_free_nodes_[next_free].before_step <= before_step;
         ++next_free) {
      const StepFreeNode& f = step_free_nodes_[next_free];
      const uint64_t now = sdk::RunControl::now_ns();
      control.profile(f.name.c_str(), f.detail.c_str(), std::span<const int32_t>(&f.node, 1), now,
                      now);
    }
  };
  for (size_t i = 0; i < steps_.size(); ++i) {
    control.poll();
    report_step_free(i);
    start = sdk::RunControl::now_ns();
    timed(single_steps_[i]);
    control.profile(steps_[i].name.c_str(), steps_[i].detail.c_str(), steps_[i].nodes, start,
                    sdk::RunControl::now_ns());
  }
  report_step_free(steps_.size());
  start = sdk::RunControl::now_ns();
  timed(out_cmd);
  control.profile("outputs", "copy", {}, start, sdk::RunControl::now_ns());
}

void Executable::run(std::span<const loom_tensor_t> inputs, std::span<loom_tensor_t> outputs,
                     const sdk::RunControl& control) {
  control.poll();
  if (inputs.size() != graph_.num_inputs)
    sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "vulkan run: the subgraph has " +
                                               std::to_string(graph_.num_inputs) + " inputs, " +
                                               std::to_string(inputs.size()) + " given");
  if (outputs.size() != graph_.num_outputs)
    sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "vulkan run: the subgraph has " +
                                               std::to_string(graph_.num_outputs) + " outputs, " +
                                               std::to_string(outputs.size()) + " requested");
  vk_check(vkResetCommandBuffer(transfers_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(transfers_, &begin), "vkBeginCommandBuffer");
  if (uses_error_word_) {
    auto [buf, off] = absolute(error_word_);
    vkCmdFillBuffer(transfers_, buf, off, 4, 0);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const loom_tensor_t& t = inputs[i];
    const TensorInfo& v = values_[static_cast<size_t>(graph_.inputs[i])];
    if (v.id < 0) continue;  // not read by any kernel
    const Loc& host_side = stored_as_f16(v) ? v.host_in : v.loc;
    if (t.dtype != v.info->dtype || t.byte_size != host_side.bytes)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                std::string("vulkan run: input '") + v.info->name + "' is " +
                    sdk::dtype_name(t.dtype) + " of " + std::to_string(t.byte_size) +
                    " bytes, compiled for " + sdk::dtype_name(v.info->dtype) + " of " +
                    std::to_string(host_side.bytes));
    if (t.byte_size == 0) continue;
    auto [buf, off] = absolute(host_side);
    if (t.buffer) {  // the kit checked that the bytes lie inside the buffer
      const Buffer& in = buffer_of(t.buffer);
      VkBufferCopy region{in.allocation.offset + t.offset, off, t.byte_size};
      vkCmdCopyBuffer(transfers_, in.allocation.buffer, buf, 1, &region);
    } else if (t.data) {
      context_.upload(t.data, private_, off - private_.offset, t.byte_size);
    } else {
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "vulkan run: input without data or buffer");
    }
  }
  vk_check(vkEndCommandBuffer(transfers_), "vkEndCommandBuffer");

  // Output buffers, and the copies into them (a third command buffer recorded per run).
  std::vector<std::unique_ptr<Buffer>> made;  // give their memory back if the run fails
  VkCommandBuffer out_cmd = VK_NULL_HANDLE;
  VkCommandBufferAllocateInfo ca{};
  ca.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ca.commandPool = command_pool_;
  ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ca.commandBufferCount = 1;
  vk_check(vkAllocateCommandBuffers(context_.device(), &ca, &out_cmd), "vkAllocateCommandBuffers");
  struct FreeCmd {
    VkDevice d;
    VkCommandPool p;
    VkCommandBuffer c;
    ~FreeCmd() { vkFreeCommandBuffers(d, p, 1, &c); }
  } free_cmd{context_.device(), command_pool_, out_cmd};
  {
    vk_check(vkBeginCommandBuffer(out_cmd, &begin), "vkBeginCommandBuffer");
    for (size_t i = 0; i < outputs.size(); ++i) {
      const TensorInfo& v = values_[static_cast<size_t>(graph_.outputs[i])];
      const Loc& host_side = stored_as_f16(v) ? v.host_out : v.loc;
      auto buffer = std::make_unique<Buffer>();
      buffer->size = host_side.bytes;
      buffer->allocation = context_.memory().allocate(host_side.bytes);
      buffer->pool = &context_.memory();
      if (host_side.bytes) {
        auto [buf, off] = absolute(host_side);
        VkBufferCopy region{off, buffer->allocation.offset, host_side.bytes};
        vkCmdCopyBuffer(out_cmd, buf, buffer->allocation.buffer, 1, &region);
      }
      made.push_back(std::move(buffer));
    }
    VkMemoryBarrier barrier{};
    barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask =
        VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_SHADER_READ_BIT;
    vkCmdPipelineBarrier(out_cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         0, 1, &barrier, 0, nullptr, 0, nullptr);
    vk_check(vkEndCommandBuffer(out_cmd), "vkEndCommandBuffer");
    if (control.profiling())
      submit_profiled(out_cmd, control);
    else
      submit_segments(out_cmd, control);
    if (uses_error_word_) {
      uint32_t word = 0;
      context_.download(private_, error_word_.offset, &word, 4);
      if (word)
        sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                  "vulkan run: an index input (Gather) is out of range for its data");
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorInfo& v = values_[static_cast<size_t>(graph_.outputs[i])];
    loom_tensor_t& out = outputs[i];
    out = sdk::empty_tensor();
    out.dtype = v.info->dtype;
    out.rank = v.rank();
    for (int d = 0; d < v.rank(); ++d) out.dims[d] = v.dims[static_cast<size_t>(d)];
    out.byte_size = (stored_as_f16(v) ? v.host_out : v.loc).bytes;
    out.buffer = sdk::kit::handle(made[i].release());
  }
}

// The transfers, the segments and the output copies, in order. Without a poll function (or with
// one segment) in one submission; else segment by segment, at most two on the device at once.
void Executable::submit_segments(VkCommandBuffer out_cmd, const sdk::RunControl& control) {
  if (segments_.size() == 1 || !control.raw() || !control.raw()->poll) {
    std::vector<VkCommandBuffer> all{transfers_};
    all.insert(all.end(), segments_.begin(), segments_.end());
    all.push_back(out_cmd);
    context_.submit_and_wait(all, fences_[0]);
    return;
  }
  size_t submitted = 0, finished = 0;
  try {
    for (size_t i = 0; i < segments_.size(); ++i) {
      std::vector<VkCommandBuffer> batch;
      if (i == 0) batch.push_back(transfers_);
      batch.push_back(segments_[i]);
      if (i + 1 == segments_.size()) batch.push_back(out_cmd);
      context_.submit(batch, fences_[i]);
      ++submitted;
      if (i == 0) continue;
      context_.wait(fences_[i - 1]);
      ++finished;
      control.poll();
    }
    context_.wait(fences_.back());
  } catch (...) {
    // Cancelled (or failed): what was submitted may still run and write the arena and the
    // output buffers, which the caller frees. Wait for it first; the fences are left reset.
    for (; finished < submitted; ++finished) {
      VkFence fence = fences_[finished];
      vkWaitForFences(context_.device(), 1, &fence, VK_TRUE, UINT64_MAX);
      vkResetFences(context_.device(), 1, &fence);
    }
    throw;
  }
}

}  // namespace loom::vulkan
