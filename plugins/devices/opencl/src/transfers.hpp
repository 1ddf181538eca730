// Copies between the host and device buffers that overlap with kernels: an upload copies the
// caller's bytes into a staging vector owned by the buffer and returns; the write runs on the
// transfer queue, and the kernels that read the buffer wait for its event (pending_writes).
#pragma once

#include <cstddef>
#include <vector>

#include "device.hpp"

namespace loom::opencl {

// copy_from_host: returns once `src` is no longer needed (captured in a staging copy).
void upload(Device& device, Buffer& dst, size_t offset, const void* src, size_t size);

// copy_to_host: blocks until `dst` holds the bytes. Reads run on the transfer queue, after the
// uploads to the same buffer; kernel results are complete when the run that made them returns.
void download(Device& device, Buffer& src, size_t offset, void* dst, size_t size);

// The events of the uploads into `buffer` still in flight, each retained: the caller waits on
// them (an event wait list) and releases them with release_events.
std::vector<cl_event> pending_writes(Buffer& buffer);
void release_events(std::vector<cl_event>& events);

}  // namespace loom::opencl
