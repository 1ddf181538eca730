#include "weight_reader.hpp"

#include <cmath>
#include <cstring>
#include <loom/half.hpp>
#include <loom/plugin.hpp>

namespace loom::ncnnfmt {
namespace {

constexpr uint32_t kTagFloat16 = 0x01306B47;
constexpr uint32_t kTagInt8 = 0x000D4B38;
constexpr uint32_t kTagFloat32 = 0x0002C056;
constexpr size_t kCodebookSize = 256;

size_t align4(size_t n) {
  return (n + 3) & ~size_t{3};
}

}  // namespace

const uint8_t* WeightReader::take(size_t bytes, const std::string& what) {
  if (bytes > size_ - pos_)
    sdk::fail(LOOM_ERROR_INVALID_MODEL,
              "ncnn weights: " + file_ + " is too short: " + what + " needs " +
                  std::to_string(bytes) + " bytes at offset " + std::to_string(pos_) + " but " +
                  std::to_string(size_ - pos_) + " remain (does the .bin belong to this .param?)");
  const uint8_t* p = data_ + pos_;
  pos_ += bytes;
  return p;
}

std::vector<float> WeightReader::read(int64_t count, BlobStorage storage, const std::string& what) {
  if (missing_ && file_.empty())
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              "ncnn weights: " + what +
                  " is stored in the .bin file, which a model loaded from memory does not have "
                  "(only the .param's bytes were given): load the .param from its file");
  if (missing_)
    sdk::fail(LOOM_ERROR_NOT_FOUND,
              "ncnn weights: " + what + " is stored in " + file_ +
                  ", which does not exist (the .bin must sit next to the .param, with the same "
                  "name up to the extension)");
  // Every element takes at least one byte, so the remaining size bounds any honest count.
  if (count < 0 || static_cast<uint64_t>(count) > size_ - pos_)
    sdk::fail(LOOM_ERROR_INVALID_MODEL, "ncnn weights: " + what + " has " + std::to_string(count) +
                                            " elements but " + file_ + " has only " +
                                            std::to_string(size_ - pos_) + " bytes left");
  size_t n = static_cast<size_t>(count);
  std::vector<float> out;
  auto read_floats = [&] {
    if (n > (size_ - pos_) / 4) take(n * 4, what);  // fails with the standard message
    const uint8_t* p = take(n * 4, what);
    out.resize(n);
    if (n) std::memcpy(out.data(), p, n * 4);
  };
  if (storage == BlobStorage::kRawFloat) {
    read_floats();
    return out;
  }
  const uint8_t* tag_bytes = take(4, what + " tag");
  uint32_t tag;
  std::memcpy(&tag, tag_bytes, 4);
  unsigned flag = 0u + tag_bytes[0] + tag_bytes[1] + tag_bytes[2] + tag_bytes[3];
  if (tag == kTagFloat16) {
    const uint8_t* p = take(align4(n * 2), what + " (fp16)");
    out.resize(n);
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      out[i] = sdk::half_to_float(h);
    }
    return out;
  }
  if (tag == kTagInt8)
    sdk::fail(LOOM_ERROR_UNSUPPORTED,
              "ncnn weights: " + what +
                  " is int8-quantized, which the ncnn plugin does not load; convert the model "
                  "with fp32 or fp16 weights (ncnn2mem/ncnnoptimize without int8)");
  if (tag == kTagFloat32 || flag == 0) {
    read_floats();
    return out;
  }
  // Any other non-zero tag: a 256-entry float codebook followed by one index byte per element.
  const uint8_t* table = take(kCodebookSize * 4, what + " codebook");
  float codebook[kCodebookSize];
  std::memcpy(codebook, table, sizeof codebook);
  const uint8_t* index = take(align4(n), what + " codebook indices");
  out.resize(n);
  for (size_t i = 0; i < n; ++i) out[i] = codebook[index[i]];
  return out;
}

}  // namespace loom::ncnnfmt
