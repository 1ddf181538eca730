// Whole-file reads and writes with one-line errors. Internal to loom_tensor_io.
#pragma once

#include <string>

namespace loom::apps::detail {

// Throws TensorIoError naming the path and the OS reason; refuses files above `max_bytes`.
std::string read_file_bytes(const std::string& path, size_t max_bytes = size_t{1} << 40);
void write_file_bytes(const std::string& path, const std::string& bytes);

}  // namespace loom::apps::detail
