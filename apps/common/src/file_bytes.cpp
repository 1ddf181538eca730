#include "file_bytes.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <loom_apps/host_tensor.hpp>

namespace loom::apps::detail {

std::string read_file_bytes(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw TensorIoError(fmt::format("{}: is a directory, expected a tensor file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TensorIoError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) throw TensorIoError(fmt::format("{}: cannot determine the file size", path));
  if (static_cast<uint64_t>(size) > max_bytes)
    throw TensorIoError(fmt::format("{}: file of {} bytes is too large", path, size));
  in.seekg(0, std::ios::beg);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (!in.read(bytes.data(), size))
    throw TensorIoError(fmt::format("{}: read error: {}", path, std::strerror(errno)));
  return bytes;
}

void write_file_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw TensorIoError(fmt::format("{}: cannot create: {}", path, std::strerror(errno)));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw TensorIoError(fmt::format("{}: write error: {}", path, std::strerror(errno)));
}

}  // namespace loom::apps::detail
