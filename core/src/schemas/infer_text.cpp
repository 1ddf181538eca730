// Text ops: StringNormalizer keeps the rank ([C] or [1, C]) but stop words may drop
// elements, so the last extent is unknown unless no stop words are given. StringConcat
// broadcasts; StringSplit adds an axis whose extent depends on the strings; RegexFullMatch gives
// one bool per string. ImageDecoder, the other op that decodes bytes it is fed: [H, W, C] uint8,
// H and W known only once the file is read, C from the pixel format.
#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::NodeView;

void string_normalizer(NodeView& v) {
  std::optional<Dims> in = v.shape(0);
  if (in && in->size() != 1 && !(in->size() == 2 && ((*in)[0] == 1 || (*in)[0] < 0)))
    v.fail("input " + dims_to_string(*in) + " must be [C] or [1, C]");
  auto stopwords = v.attrs().get_strings("stopwords");
  if (in && stopwords && !stopwords->empty()) in->back() = kUnknownDim;
  v.set_output(0, LOOM_DTYPE_STRING, in);
}

void string_concat(NodeView& v) {
  for (size_t i = 0; i < 2; ++i)
    if (v.dtype(i) != LOOM_DTYPE_UNDEFINED && v.dtype(i) != LOOM_DTYPE_STRING)
      v.fail("input " + std::to_string(i) + " must be a string tensor");
  std::optional<Dims> a = v.shape(0), b = v.shape(1);
  v.set_output(0, LOOM_DTYPE_STRING,
               a && b ? std::optional<Dims>(infer::broadcast(v, *a, *b)) : std::nullopt);
}

void string_split(NodeView& v) {
  if (v.dtype(0) != LOOM_DTYPE_UNDEFINED && v.dtype(0) != LOOM_DTYPE_STRING)
    v.fail("X must be a string tensor");
  std::optional<Dims> in = v.shape(0);
  std::optional<Dims> parts = in;
  if (parts) parts->push_back(kUnknownDim);
  v.set_output(0, LOOM_DTYPE_STRING, parts);
  v.set_output(1, LOOM_DTYPE_INT64, in);
}

void regex_full_match(NodeView& v) {
  if (v.dtype(0) != LOOM_DTYPE_UNDEFINED && v.dtype(0) != LOOM_DTYPE_STRING)
    v.fail("X must be a string tensor");
  v.set_output(0, LOOM_DTYPE_BOOL, v.shape(0));
}

void image_decoder(NodeView& v) {
  if (v.dtype(0) != LOOM_DTYPE_UNDEFINED && v.dtype(0) != LOOM_DTYPE_UINT8)
    v.fail("encoded_stream must be a uint8 tensor");
  std::optional<Dims> in = v.shape(0);
  if (in && in->size() != 1) v.fail("encoded_stream " + dims_to_string(*in) + " must be 1-D");
  const std::string format = v.attrs().get_string("pixel_format", "RGB");
  if (format != "RGB" && format != "BGR" && format != "Grayscale")
    v.fail("pixel_format '" + format + "' is not one of RGB, BGR, Grayscale");
  v.set_output(0, LOOM_DTYPE_UINT8, Dims{kUnknownDim, kUnknownDim, format == "Grayscale" ? 1 : 3});
}

const InferEntry kEntries[] = {
    {"", "ImageDecoder", adapt<image_decoder>},
    {"", "RegexFullMatch", adapt<regex_full_match>},
    {"", "StringNormalizer", adapt<string_normalizer>},
    {"", "StringConcat", adapt<string_concat>},
    {"", "StringSplit", adapt<string_split>},
};

}  // namespace

std::span<const InferEntry> text_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
