// NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// Supported descriptors (little-endian or byte-order-free only): f2 f4 f8 i1 i2 i4 i8 u1 u2 u4
// u8 b1 c8 c16, byte strings |S<n> and unicode <U<n> (read into / written from STRING tensors,
// UTF-8 inside Loom), and bfloat16 by convention as '<V2' -- the descriptor NumPy writes for
// ml_dtypes.bfloat16 arrays; Loom reads every '<V2' file as bfloat16 and writes bfloat16 so.
// Refused with a clear error: Fortran order, big-endian data, structured/object dtypes, and any
// header or data size that does not match the file.
#pragma once

#include <loom_apps/host_tensor.hpp>
#include <string>

namespace loom::apps {

// `expected`, when known (e.g. the model input's dtype), lets a '|V1' file -- numpy's descr for
// every one-byte ml_dtypes array (float8, int4, ...) -- be read as that narrow dtype.
HostTensor read_npy(const std::string& path, loom_dtype_t expected = LOOM_DTYPE_UNDEFINED);
// Parses an in-memory .npy image; `what` names it in errors.
HostTensor parse_npy(const std::string& bytes, const std::string& what,
                     loom_dtype_t expected = LOOM_DTYPE_UNDEFINED);

// Writes version 1.0 (2.0 when the header needs it). Throws TensorIoError.
void write_npy(const std::string& path, const HostTensor& tensor);
std::string serialize_npy(const HostTensor& tensor);

}  // namespace loom::apps
