// Text ops: StringNormalizer keeps the rank ([C] or [1, C]) but stop words may drop
// elements, so the last extent is unknown unless no stop words are given.
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

const InferEntry kEntries[] = {
    {"", "StringNormalizer", adapt<string_normalizer>},
};

}  // namespace

std::span<const InferEntry> text_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
