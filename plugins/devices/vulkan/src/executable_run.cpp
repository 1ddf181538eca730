// Running an Executable: its steps recorded into command buffers once (or one per step when
// profiled), the segments submitted per run with the run's deadline and cancellation.
#include <algorithm>
#include <cstring>

#include "executable.hpp"
#include "handles.hpp"
#include "steps.hpp"
#include "vk_check.hpp"

namespace loom::vulkan {
namespace {

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
