#include <loom_apps/npy.hpp>
#include <loom_apps/tensor_proto.hpp>

#include "file_bytes.hpp"

namespace loom::apps {

NamedTensor read_tensor_file(const std::string& path, loom_dtype_t expected) {
  std::string bytes = detail::read_file_bytes(path);
  // A TensorProto starts with the tag of a low-numbered field (dims, data_type, ...), never
  // with the .npy magic "\x93NUMPY", so probing by content is unambiguous.
  if (bytes.size() >= 6 && bytes.compare(0, 6, "\x93NUMPY", 6) == 0)
    return NamedTensor{"", parse_npy(bytes, path, expected)};
  return parse_tensor_proto(bytes, path);
}

}  // namespace loom::apps
