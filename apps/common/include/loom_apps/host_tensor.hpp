// A host tensor owned by an application: what infer-run and the conformance runner read from
// files, feed to the core and compare. Independent of libloom (only the dtype enum of the ABI).
#pragma once

#include <loom/plugin.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::apps {

// Every reader/writer error: one line naming the file and the problem.
class TensorIoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct HostTensor {
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  std::vector<int64_t> dims;         // empty = scalar
  std::vector<std::byte> data;       // element bytes, little-endian, row-major (not STRING)
  std::vector<std::string> strings;  // elements of a STRING tensor

  // Product of dims (1 for a scalar). Throws TensorIoError on negative dims or overflow.
  size_t element_count() const;
  // "[1, 3, 224, 224]"
  std::string shape_string() const;

  // A zero-filled tensor of the given dtype and shape (strings: empty).
  static HostTensor zeros(loom_dtype_t dtype, std::vector<int64_t> dims);

  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data.data());
  }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data.data());
  }
};

// What a graph input or output holds (the public API's loom_value_kind_t, without libloom).
enum class ValueKind { kTensor, kSequence, kOptionalTensor, kOptionalSequence };
// "tensor", "seq(tensor)", "optional(tensor)", "optional(seq(tensor))"
const char* value_kind_name(ValueKind kind);

// A value of any kind: a tensor (tensors[0]), a sequence of tensors, or an optional of either
// (has_value false: none).
struct HostValue {
  ValueKind kind = ValueKind::kTensor;
  bool has_value = true;                           // optionals only
  loom_dtype_t elem_dtype = LOOM_DTYPE_UNDEFINED;  // containers: element type, if known
  std::vector<HostTensor> tensors;

  static HostValue of_tensor(HostTensor t) {
    HostValue v;
    v.elem_dtype = t.dtype;
    v.tensors.push_back(std::move(t));
    return v;
  }
  bool is_tensor() const { return kind == ValueKind::kTensor; }
  const char* kind_name() const { return value_kind_name(kind); }
};

// Checked product of dims; throws TensorIoError naming `what` when a dim is negative or the
// product does not fit in size_t / exceeds `max_elements`.
size_t checked_element_count(const std::vector<int64_t>& dims, const std::string& what,
                             size_t max_elements = SIZE_MAX);

}  // namespace loom::apps
