#include <fmt/format.h>

#include <loom_apps/dtype.hpp>
#include <loom_apps/host_tensor.hpp>

namespace loom::apps {

size_t checked_element_count(const std::vector<int64_t>& dims, const std::string& what,
                             size_t max_elements) {
  size_t count = 1;
  for (int64_t d : dims) {
    if (d < 0) throw TensorIoError(fmt::format("{}: negative dimension {}", what, d));
    if (d != 0 && count > max_elements / static_cast<uint64_t>(d))
      throw TensorIoError(fmt::format("{}: element count overflows (dims too large)", what));
    count *= static_cast<size_t>(d);
  }
  return count;
}

size_t HostTensor::element_count() const {
  return checked_element_count(dims, "tensor");
}

std::string HostTensor::shape_string() const {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

HostTensor HostTensor::zeros(loom_dtype_t dtype, std::vector<int64_t> dims) {
  HostTensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  size_t count = t.element_count();
  if (dtype == LOOM_DTYPE_STRING) {
    t.strings.resize(count);
  } else {
    size_t size = dtype_size(dtype);
    if (size == 0) throw TensorIoError(fmt::format("unsupported dtype {}", dtype_name(dtype)));
    if (count > SIZE_MAX / size) throw TensorIoError("tensor byte size overflows");
    t.data.resize(count * size);
  }
  return t;
}

const char* value_kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::kTensor:
      return "tensor";
    case ValueKind::kSequence:
      return "seq(tensor)";
    case ValueKind::kOptionalTensor:
      return "optional(tensor)";
    case ValueKind::kOptionalSequence:
      return "optional(seq(tensor))";
  }
  return "unknown";
}

}  // namespace loom::apps
