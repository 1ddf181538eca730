// ncnn's ModelBin: the .bin file is the layers' weights back to back, in layer order, each blob
// read by the layer that owns it. A "tagged" blob (ncnn's type 0) starts with a 4-byte tag
// saying how it is stored: fp32, fp16, int8 or a 256-entry codebook; a "raw" blob (type 1) is
// plain fp32 without a tag. Everything comes back as fp32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace loom::ncnnfmt {

enum class BlobStorage { kTagged = 0, kRawFloat = 1 };

class WeightReader {
 public:
  // `missing`: the .bin does not exist; the first read fails naming it.
  WeightReader(const uint8_t* data, size_t size, std::string file, bool missing = false)
      : data_(data), size_(size), file_(std::move(file)), missing_(missing) {}

  // Reads `count` elements for `what` (e.g. "layer 'conv1' weight"). Throws a clear error when
  // the file is too short, the tag is unknown or the blob is int8-quantized.
  std::vector<float> read(int64_t count, BlobStorage storage, const std::string& what);

  size_t bytes_left() const { return size_ - pos_; }

 private:
  const uint8_t* take(size_t bytes, const std::string& what);

  const uint8_t* data_;
  size_t size_;
  std::string file_;
  bool missing_;
  size_t pos_ = 0;
};

}  // namespace loom::ncnnfmt
