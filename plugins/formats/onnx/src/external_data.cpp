#include "external_data.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <loom/plugin.hpp>
#include <optional>

#include "checked_math.hpp"
#include "dtypes.hpp"

namespace loom::onnx {
namespace fs = std::filesystem;

struct ExternalData::MappedFile {
  const uint8_t* data = nullptr;
  size_t size = 0;
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (data && size) munmap(const_cast<uint8_t*>(data), size);
  }
};

namespace {

[[noreturn]] void invalid(const std::string& what, const std::string& message) {
  sdk::fail(LOOM_ERROR_INVALID_MODEL, what + ": " + message);
}

std::optional<uint64_t> parse_decimal(const std::string& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// Closes a file descriptor on every path out of a scope.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

ExternalData::ExternalData(const char* directory)
    : directory_(directory ? directory : ""), has_directory_(directory != nullptr) {
  if (has_directory_ && directory_.empty()) directory_ = ".";
}

std::shared_ptr<ExternalData::MappedFile> ExternalData::open(const std::string& location,
                                                             const std::string& what) {
  if (!has_directory_)
    sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
              what + " is stored in external file " + quote_name(location) +
                  ", but the model was not loaded from a directory; load it from its file");
  if (location.empty()) invalid(what, "external data has an empty 'location'");
  if (location.find('\0') != std::string::npos)
    invalid(what, "external data location contains a NUL byte");
  fs::path rel(location);
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    invalid(what, "external data location " + quote_name(location) +
                      " is an absolute path; only paths relative to the model's directory are "
                      "allowed");
  for (const fs::path& part : rel)
    if (part == "..")
      invalid(what, "external data location " + quote_name(location) +
                        " contains '..'; it must stay inside the model's directory");

  std::error_code ec;
  if (root_.empty()) {
    root_ = fs::canonical(directory_, ec);
    if (ec)
      sdk::fail(LOOM_ERROR_NOT_FOUND, "model directory " + quote_name(directory_) +
                                          " cannot be resolved: " + ec.message());
  }
  fs::path resolved = fs::canonical(root_ / rel, ec);
  if (ec)
    sdk::fail(LOOM_ERROR_NOT_FOUND, what + ": external data file " + quote_name(location) +
                                        " not found in " + quote_name(root_.string()) + " (" +
                                        ec.message() + ")");
  // A symlink inside the directory may point anywhere; what counts is where it resolves.
  auto [root_end, resolved_it] =
      std::mismatch(root_.begin(), root_.end(), resolved.begin(), resolved.end());
  if (root_end != root_.end() || resolved_it == resolved.end())
    invalid(what, "external data location " + quote_name(location) + " resolves to " +
                      quote_name(resolved.string()) + ", outside the model's directory");

  if (auto it = files_.find(resolved); it != files_.end()) return it->second;

  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below.
  Fd f{::open(resolved.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0)
    sdk::fail(LOOM_ERROR_NOT_FOUND, what + ": cannot open external data file " +
                                        quote_name(resolved.string()) + ": " +
                                        std::strerror(errno));
  struct stat st;
  if (fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode))
    invalid(what, "external data location " + quote_name(location) + " is not a regular file");
  auto file = std::make_shared<MappedFile>();
  file->size = static_cast<size_t>(st.st_size);
  if (file->size > 0) {
    void* p = mmap(nullptr, file->size, PROT_READ, MAP_PRIVATE, f.fd, 0);
    if (p == MAP_FAILED) {
      file->size = 0;
      sdk::fail(LOOM_ERROR_OUT_OF_MEMORY, what + ": cannot map external data file " +
                                              quote_name(resolved.string()) + ": " +
                                              std::strerror(errno));
    }
    file->data = static_cast<const uint8_t*>(p);
  }
  files_.emplace(resolved, file);
  return file;
}

void ExternalData::drop_pages(const void* data, size_t size) {
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + size) / page * page;
  // Advisory: when it fails the pages merely stay resident until the file is unmapped.
  if (data && first < last)
    (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

ExternalData::View ExternalData::read(const ::onnx::TensorProto& t, const std::string& what,
                                      size_t expected_size) {
  std::optional<std::string> location;
  std::optional<uint64_t> offset, length;
  for (const auto& kv : t.external_data()) {
    const std::string& key = kv.key();
    if (key == "location") {
      if (location) invalid(what, "external data names 'location' twice");
      location = kv.value();
    } else if (key == "offset" || key == "length") {
      auto v = parse_decimal(kv.value());
      if (!v)
        invalid(what, "external data '" + key + "' is " + quote_name(kv.value()) +
                          ", not a non-negative integer");
      (key == "offset" ? offset : length) = v;
    }
    // "checksum" and keys from newer ONNX versions do not change where the bytes are.
  }
  if (!location) invalid(what, "external data has no 'location'");
  std::shared_ptr<MappedFile> file = open(*location, what);

  uint64_t begin = offset.value_or(0);
  if (begin > file->size)
    invalid(what, "external data offset " + std::to_string(begin) + " is past the end of " +
                      quote_name(*location) + " (" + std::to_string(file->size) + " bytes)");
  uint64_t size = length.value_or(file->size - begin);
  auto end = checked_add(begin, size);
  if (!end || *end > file->size)
    invalid(what, "external data range offset " + std::to_string(begin) + " + length " +
                      std::to_string(size) + " exceeds the size of " + quote_name(*location) +
                      " (" + std::to_string(file->size) + " bytes)");
  if (size != expected_size)
    invalid(what, "external data has " + std::to_string(size) + " bytes but the shape needs " +
                      std::to_string(expected_size));
  View v;
  v.data = file->data ? file->data + begin : nullptr;
  v.size = static_cast<size_t>(size);
  v.keep_alive = file;
  return v;
}

}  // namespace loom::onnx
