// Tensors stored outside the model file (TensorProto.data_location = EXTERNAL).
//
// The file named by `location` must lie inside the model's directory: absolute paths, ".."
// components and symlinks resolving outside it are refused, as are non-regular files (a FIFO
// would block the load). Offsets and lengths are checked against the file size before anything
// is read. Each file is mapped read-only once and shared by the tensors that live in it.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

namespace loom::onnx {

class ExternalData {
 public:
  // `directory` is the model's directory (loom_load_args_t::directory); NULL when the model did
  // not come from a file, which makes any external tensor an error.
  explicit ExternalData(const char* directory);

  struct View {
    const uint8_t* data = nullptr;
    size_t size = 0;
    std::shared_ptr<const void> keep_alive;  // holds the mapping `data` points into
  };

  // The bytes of tensor `t`, which must need exactly `expected_size` bytes. `what` names the
  // tensor in errors ("initializer 'w'").
  View read(const ::onnx::TensorProto& t, const std::string& what, size_t expected_size);

  // Drops the whole pages of [data, data + size), which must lie inside a View's mapping, from
  // the process. Those are clean pages of a private read-only mapping: nothing is lost, a later
  // read faults them back in from the page cache. Called once the host copied a tensor, so
  // external weights are not resident twice while a model loads.
  static void drop_pages(const void* data, size_t size);

 private:
  struct MappedFile;
  std::shared_ptr<MappedFile> open(const std::string& location, const std::string& what);

  std::string directory_;
  bool has_directory_;
  std::filesystem::path root_;  // canonical directory, resolved on first use
  std::map<std::filesystem::path, std::shared_ptr<MappedFile>> files_;
};

}  // namespace loom::onnx
