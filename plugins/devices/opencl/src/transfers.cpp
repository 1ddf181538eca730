#include "transfers.hpp"

#include <cstring>
#include <loom/plugin.hpp>
#include <string>

namespace loom::opencl {
namespace {

// CL_COMPLETE (0) when done, a negative error code when the command failed, else > 0. A
// failed query counts as a failed command (never throws: it runs inside erase_if).
cl_int execution_status(cl_event event) {
  cl_int status = CL_COMPLETE;
  cl_int err =
      clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  return err == CL_SUCCESS ? status : err;
}

// Drops the finished uploads (their staging copies go with them); fails if one failed.
// Called with the buffer's pending_mutex held.
void retire_finished(Buffer& buffer) {
  cl_int failed = CL_SUCCESS;
  size_t failed_bytes = 0;
  std::erase_if(buffer.pending, [&](const Buffer::PendingWrite& w) {
    cl_int status = execution_status(w.done.get());
    if (status < 0 && failed == CL_SUCCESS) {
      failed = status;
      failed_bytes = w.staging.size();
    }
    return status <= CL_COMPLETE;  // ended, successfully or not
  });
  check_cl(failed, "writing " + std::to_string(failed_bytes) + " bytes to the device");
}

}  // namespace

void upload(Device& device, Buffer& dst, size_t offset, const void* src, size_t size) {
  Buffer::PendingWrite write;
  write.staging.resize(size);
  std::memcpy(write.staging.data(), src, size);
  std::lock_guard<std::mutex> lock(dst.pending_mutex);
  retire_finished(dst);
  cl_event done = nullptr;
  check_cl(clEnqueueWriteBuffer(device.transfer_queue(), dst.mem.get(), CL_FALSE, offset, size,
                                write.staging.data(), 0, nullptr, &done),
           "writing " + std::to_string(size) + " bytes to the device");
  write.done = EventHandle(done);
  // The vector's heap block does not move with the PendingWrite, so the driver's pointer
  // stays valid until the event completes.
  dst.pending.push_back(std::move(write));
  // Submit now: some drivers hold commands back until a flush, which would serialize the
  // upload behind the next wait instead of overlapping it with the kernels.
  check_cl(clFlush(device.transfer_queue()), "submitting an upload");
}

void download(Device& device, Buffer& src, size_t offset, void* dst, size_t size) {
  check_cl(clEnqueueReadBuffer(device.transfer_queue(), src.mem.get(), CL_TRUE, offset, size, dst,
                               0, nullptr, nullptr),
           "reading " + std::to_string(size) + " bytes from the device");
  std::lock_guard<std::mutex> lock(src.pending_mutex);
  retire_finished(src);  // the in-order queue finished every earlier upload into it
}

std::vector<cl_event> pending_writes(Buffer& buffer) {
  std::lock_guard<std::mutex> lock(buffer.pending_mutex);
  retire_finished(buffer);
  std::vector<cl_event> events;
  for (const Buffer::PendingWrite& w : buffer.pending) {
    check_cl(clRetainEvent(w.done.get()), "retaining an upload's event");
    events.push_back(w.done.get());
  }
  return events;
}

void release_events(std::vector<cl_event>& events) {
  for (cl_event e : events) clReleaseEvent(e);
  events.clear();
}

Buffer::~Buffer() {
  // Never throws: a destructor. A failed wait still lets the memory go, since the driver
  // reports the command as ended (with an error) when clWaitForEvents returns.
  for (PendingWrite& w : pending) {
    cl_event e = w.done.get();
    clWaitForEvents(1, &e);
  }
}

}  // namespace loom::opencl
