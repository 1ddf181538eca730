// A model instance: one Loom session, and the execution of the requests Triton gives it
// (batched along the first dimension when the model has max_batch_size > 0).
#pragma once

#include <loom/loom.h>

#include <string>

#include "model.hpp"
#include "triton_api.h"

namespace loom::triton {

class InstanceState {
 public:
  InstanceState(TRITONBACKEND_ModelInstance* instance, ModelState& model);
  ~InstanceState();
  InstanceState(const InstanceState&) = delete;
  InstanceState& operator=(const InstanceState&) = delete;

  // Answers and releases every request; never throws (a request that cannot be served gets an
  // error response, the others are still served).
  void execute(TRITONBACKEND_Request** requests, uint32_t count) noexcept;

  struct PendingInput;  // one input of a request (public for the decoding helper)
 private:
  struct Pending;
  void parse(Pending& pending) const;
  void run_group(Pending* const* group, size_t size) noexcept;
  void finish(Pending& pending, bool success, uint64_t exec_start, uint64_t compute_start,
              uint64_t compute_end, uint64_t exec_end) noexcept;

  TRITONBACKEND_ModelInstance* instance_;
  ModelState& model_;
  std::string name_;
  loom_session_t* session_ = nullptr;
};

}  // namespace loom::triton
