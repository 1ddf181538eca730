// Executable, part 2: a run. Binds the run's input and output buffers to the steps' kernel
// arguments, enqueues the steps on the device's in-order queue and waits for this run's work;
// then reports any out-of-range index the kernels flagged. Part 1 (executable.cpp) compiles.
#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <loom/plugin.hpp>

#include "executable.hpp"
#include "transfers.hpp"

namespace loom::opencl {

cl_mem Executable::memory_of(const Value& v, const std::vector<std::pair<cl_mem, size_t>>& inputs,
                             const std::vector<Buffer*>& outputs, size_t* byte_offset) const {
  *byte_offset = v.byte_offset;
  switch (v.storage) {
    case Storage::Input:
      *byte_offset = inputs[v.index].second;
      return inputs[v.index].first;
    case Storage::Output:
      *byte_offset = 0;
      return outputs[v.index]->mem.get();
    case Storage::Constant:
      *byte_offset = 0;
      return v.device_mem;
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

void Executable::report_step_free_nodes(const sdk::RunControl& control, size_t before_step,
                                        size_t& next) const {
  for (; next < step_free_nodes_.size() && step_free_nodes_[next].before_step <= before_step;
       ++next) {
    const StepFreeNode& f = step_free_nodes_[next];
    const uint64_t now = sdk::RunControl::now_ns();
    control.profile(f.name.c_str(), f.detail.c_str(), std::span<const int32_t>(&f.node, 1), now,
                    now);
  }
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
  // The kit checked the counts, the dtypes and that each input lies inside its buffer.
  std::vector<std::pair<cl_mem, size_t>> inputs(inputs_.size(), {nullptr, 0});
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const loom_tensor_t& t = args.inputs[i];
    const Value& v = values_[inputs_[i]];
    std::vector<int64_t> given(t.dims, t.dims + std::clamp(t.rank, 0, LOOM_MAX_RANK));
    if (t.dtype != v.dtype || given != v.shape)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                "opencl run: input '" + v.name + "' is " + sdk::dtype_name(t.dtype) + " " +
                    sdk::shape_text(given) + ", the subgraph was compiled for " +
                    sdk::dtype_name(v.dtype) + " " + sdk::shape_text(v.shape));
    if (v.bytes() == 0) continue;
    if (!t.buffer)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                "opencl run: input '" + v.name + "' is not in an opencl buffer");
    Buffer& buffer = buffer_of(t.buffer);
    if (t.offset > buffer.size || v.bytes() > buffer.size - t.offset)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                "opencl run: input '" + v.name + "' extends past the end of its buffer");
    inputs[i] = {buffer.mem.get(), t.offset};
  }
  // Uploads into the inputs may still be running on the transfer queue: the kernels wait for
  // them (a barrier on the events), the host does not.
  struct Events {
    std::vector<cl_event> list;
    ~Events() { release_events(list); }
  } uploads;
  for (size_t i = 0; i < inputs_.size(); ++i)
    if (args.inputs[i].buffer && values_[inputs_[i]].bytes() > 0)
      for (cl_event e : pending_writes(buffer_of(args.inputs[i].buffer))) uploads.list.push_back(e);
  std::vector<std::unique_ptr<Buffer>> owned(outputs_.size());
  std::vector<Buffer*> outputs(outputs_.size());
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Value& v = values_[outputs_[i]];
    if (!v.shape_known)
      sdk::fail(LOOM_ERROR_INTERNAL, "opencl run: output '" + v.name + "' has no static shape");
    owned[i] = std::make_unique<Buffer>();
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
  // A cancel or a deadline is noticed between chunks of steps. Enqueueing takes no time, so the
  // host stays at most two chunks ahead of the device: each chunk ends in a marker, and before
  // enqueueing past chunk k the host waits for chunk k - 1 and polls. A cancelled run leaves at
  // most two chunks of kernels behind, which finish on the in-order queue before any later run
  // (OpenCL keeps the buffers they use alive until then).
  const sdk::RunControl control(&args);
  const bool polled = control.raw() && control.raw()->poll;
  control.poll();
  // Profiled (plugin ABI 1.5): every launch is waited for with clFinish before the next one is
  // enqueued, so that each step's time is its own kernel's (launch and wait included), not the
  // time it sat in the queue. Profiling therefore serializes the device's work: a profiled run
  // is slower than a normal one. What the queue held before this run (uploads, the clearing of
  // the index checks, earlier runs) is finished first so that it does not count as a step.
  const bool profiling = control.profiling();
  size_t next_free = 0;
  if (profiling) check_cl(clFinish(queue), "waiting for the work before a profiled run");
  std::deque<EventHandle> chunks;
  for (size_t k = 0; k < steps_.size(); ++k) {
    Step& s = steps_[k];
    if (polled && k > 0 && k % kStepsPerPoll == 0) {
      cl_event end = nullptr;
      check_cl(clEnqueueMarkerWithWaitList(queue, 0, nullptr, &end), "marking a chunk of steps");
      chunks.emplace_back(end);
      check_cl(clFlush(queue), "submitting a chunk of steps");
      if (chunks.size() > 1) {
        cl_event previous = chunks.front().get();
        check_cl(clWaitForEvents(1, &previous), "running a chunk of steps");
        chunks.pop_front();
      }
      control.poll();
    }
    if (profiling) report_step_free_nodes(control, k, next_free);
    const uint64_t start = profiling ? sdk::RunControl::now_ns() : 0;
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
    if (profiling) {
      check_cl(clFinish(queue), "running " + s.label);
      control.profile(s.name.c_str(), s.kernel_name.c_str(), s.nodes, start,
                      sdk::RunControl::now_ns());
    }
  }
  if (profiling) report_step_free_nodes(control, steps_.size(), next_free);
  // Outputs no kernel wrote: a graph input or a constant handed straight through.
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Value& v = values_[outputs_[i]];
    if (v.storage == Storage::Output || v.bytes() == 0) continue;
    // A copy of the device's own (it computes no node), timed like the launches.
    const uint64_t start = profiling ? sdk::RunControl::now_ns() : 0;
    auto report_copy = [&] {
      if (!profiling) return;
      check_cl(clFinish(queue), "copying output '" + v.name + "'");
      control.profile(("output '" + v.name + "'").c_str(), "copy", {}, start,
                      sdk::RunControl::now_ns());
    };
    if (v.storage == Storage::Constant) {
      // From the host data (f32), not the constants buffer, which may hold fp16 halves.
      if (!v.host_data || v.host_size < host_bytes(v))
        sdk::fail(LOOM_ERROR_INVALID_MODEL, "opencl run: constant output '" + v.name +
                                                "' has fewer bytes than its shape needs");
      check_cl(clEnqueueWriteBuffer(queue, outputs[i]->mem.get(), CL_FALSE, 0, host_bytes(v),
                                    v.host_data, 0, nullptr, nullptr),
               "writing output '" + v.name + "'");
      report_copy();
      continue;
    }
    size_t offset = 0;
    cl_mem src = memory_of(v, inputs, outputs, &offset);
    check_cl(clEnqueueCopyBuffer(queue, src, outputs[i]->mem.get(), offset, 0, v.bytes(), 0,
                                 nullptr, nullptr),
             "copying output '" + v.name + "'");
    report_copy();
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
    out.buffer = sdk::kit::handle(owned[i].release());
  }
}

}  // namespace loom::opencl
