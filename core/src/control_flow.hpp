// Host control-flow steps: If, Loop and Scan run by the core itself, each body being a child
// session partitioned across the session's devices (session.cpp decides which nodes become
// steps). This file holds the ONNX semantics on host tensors; the session supplies the bodies.
#pragma once

#include <loom/plugin.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.hpp"

namespace loom::core {

// A tensor in host memory, kept alive by `owner` (null when someone else owns the bytes), or a
// sequence/optional value (kind != kTensor): a list of host tensors that own their bytes.
struct HostValue {
  bool present = false;  // false: an omitted optional input
  loom_tensor_t t{};     // kTensor only
  std::shared_ptr<void> owner;
  ValueKind kind = ValueKind::kTensor;
  // kSequence: the elements (tensors). kOptionalTensor: none (empty optional) or one tensor.
  // kOptionalSequence: none or one sequence.
  std::vector<HostValue> elements;
  // Containers: the element dtype (what an empty sequence or optional was declared to hold).
  loom_dtype_t elem_dtype = LOOM_DTYPE_UNDEFINED;

  bool is_tensor() const { return kind == ValueKind::kTensor; }
};

// A new host tensor (uninitialized bytes) that owns its memory; `deps` are kept alive with it
// (the owners of whatever its STRING views point into).
HostValue allocate_host_value(loom_dtype_t dtype, const std::vector<int64_t>& dims,
                              std::vector<std::shared_ptr<void>> deps = {});

// A copy of tensor `in` that owns its bytes (STRING characters included); `in` itself when it
// already has an owner. Containers keep tensors after the session frees their producers.
HostValue owned_host_value(const HostValue& in);

// Bytes of a host tensor's data (STRING tensors: the loom_string_t array).
size_t host_value_bytes(const loom_tensor_t& t);

// Helpers the host steps (control flow, sequence ops) share.
// Bytes of one element; STRING elements are loom_string_t views.
size_t element_size(loom_dtype_t dtype);
std::vector<int64_t> dims_of(const loom_tensor_t& t);
// New scalar tensors that own their bytes.
HostValue scalar_int64(int64_t x);
HostValue scalar_bool(bool x);

// What a step needs from its session: run one body (by attribute name) with its formal inputs
// in order (outer-scope values are the session's business), and the body graph itself for
// declared output types.
class BodyRunner {
 public:
  virtual ~BodyRunner() = default;
  virtual std::vector<HostValue> run_body(const std::string& attribute,
                                          const std::vector<HostValue>& inputs) = 0;
  virtual const Graph& body(const std::string& attribute) const = 0;
};

// True for the ops run_control_flow implements (If; Loop; Scan from opset 9).
bool is_host_control_flow(const Node& node);

// Runs `node` with its explicit inputs (omitted ones not present) and returns its outputs in
// order (omitted outputs not present). Errors name the node.
std::vector<HostValue> run_control_flow(const Node& node, const std::vector<HostValue>& inputs,
                                        BodyRunner& bodies);

}  // namespace loom::core
