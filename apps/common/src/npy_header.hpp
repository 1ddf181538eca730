// The Python-literal dictionary in a .npy header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Internal to loom_tensor_io.
#pragma once

#include <cstdint>
#include <loom_apps/host_tensor.hpp>
#include <string>
#include <vector>

namespace loom::apps::npy_detail {

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Throws TensorIoError with `what` in the message.
NpyHeader parse_header_dict(const std::string& text, const std::string& what);

// Mapping between descriptors and Loom dtypes. `itemsize` is the element width of |S<n> and
// <U<n> descriptors (bytes, resp. UTF-32 code units).
struct NpyType {
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  enum class Text { kNone, kBytes, kUnicode } text = Text::kNone;
  size_t itemsize = 0;
};
// `expected` resolves '|V1', which numpy writes for every one-byte ml_dtypes type (float8,
// int4, ...): it is accepted only when the caller knows which narrow dtype it must be.
NpyType parse_descr(const std::string& descr, const std::string& what,
                    loom_dtype_t expected = LOOM_DTYPE_UNDEFINED);
std::string descr_for(const HostTensor& tensor);

}  // namespace loom::apps::npy_detail
