// TfIdfVectorizer (9): counts the pool's n-grams (lengths min_gram_length..max_gram_length,
// with up to max_skip_count skipped tokens between consecutive items) in each row of an
// int32 / int64 / string input and maps them to output slots through ngram_indexes.
// mode TF = counts, IDF = weight (or 1) where the count is non-zero, TFIDF = count * weight.
// Unigrams are counted once per position (skipping does not apply to them).
#include <map>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

template <typename Token>
void vectorize(KernelContext& ctx, const std::vector<Token>& tokens,
               const std::vector<Token>& pool) {
  const std::string where = ctx.where();
  const Attributes& a = ctx.attrs();
  const loom_tensor_t& x = ctx.required_input(0);
  const int64_t min_n = a.get_int("min_gram_length", 0), max_n = a.get_int("max_gram_length", 0);
  const int64_t max_skip = a.get_int("max_skip_count", 0);
  const std::string mode = a.get_string("mode", "");
  if (min_n < 1 || max_n < min_n || max_skip < 0)
    fail(LOOM_ERROR_INVALID_MODEL, where +
                                       ": need 1 <= min_gram_length <= max_gram_length and "
                                       "max_skip_count >= 0");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    fail(LOOM_ERROR_INVALID_MODEL, where + ": mode must be TF, IDF or TFIDF");
  auto counts_attr = a.get_ints("ngram_counts");
  auto indexes_attr = a.get_ints("ngram_indexes");
  if (!counts_attr || !indexes_attr)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": ngram_counts and ngram_indexes are required");
  std::vector<int64_t> starts(counts_attr->begin(), counts_attr->end());
  std::vector<int64_t> indexes(indexes_attr->begin(), indexes_attr->end());
  std::vector<float> weights;
  if (auto w = a.get_floats("weights")) weights.assign(w->begin(), w->end());

  // Pool: (n-gram -> output slot), n-gram length k occupies pool[starts[k-1], starts[k]).
  std::map<std::vector<Token>, int64_t> slot_of;
  size_t gram_number = 0;
  int64_t out_size = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t begin = starts[k];
    const int64_t end = k + 1 < starts.size() ? starts[k + 1] : static_cast<int64_t>(pool.size());
    const int64_t len = static_cast<int64_t>(k) + 1;
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) ||
        (end - begin) % len != 0)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": ngram_counts does not partition the pool");
    for (int64_t p = begin; p < end; p += len, ++gram_number) {
      if (gram_number >= indexes.size())
        fail(LOOM_ERROR_INVALID_MODEL,
             where + ": ngram_indexes has fewer entries than the pool has n-grams");
      if (indexes[gram_number] < 0)
        fail(LOOM_ERROR_INVALID_MODEL, where + ": negative ngram index");
      slot_of[std::vector<Token>(pool.begin() + p, pool.begin() + p + len)] = indexes[gram_number];
      out_size = std::max(out_size, indexes[gram_number] + 1);
    }
  }
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < out_size)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": weights has fewer entries than output slots");
  misc::check_output_size(out_size, where);

  const int64_t rows = x.rank == 2 ? x.dims[0] : 1;
  const int64_t cols = x.rank == 2 ? x.dims[1] : (x.rank == 1 ? x.dims[0] : 0);
  if (x.rank != 1 && x.rank != 2)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": input must be 1-D or 2-D");
  std::vector<double> out(static_cast<size_t>(rows * out_size), 0.0);
  std::vector<Token> gram;
  for (int64_t r = 0; r < rows; ++r) {
    const Token* row = tokens.data() + r * cols;
    double* counts = out.data() + r * out_size;
    for (int64_t start = 0; start < cols; ++start)
      for (int64_t n = min_n; n <= max_n; ++n)
        for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip) {
          const int64_t step = skip + 1;
          if (start + (n - 1) * step >= cols) break;
          gram.clear();
          for (int64_t k = 0; k < n; ++k) gram.push_back(row[start + k * step]);
          if (auto it = slot_of.find(gram); it != slot_of.end()) counts[it->second] += 1.0;
        }
    for (int64_t s = 0; s < out_size; ++s) {
      const double w = weights.empty() ? 1.0 : weights[s];
      if (mode == "IDF")
        counts[s] = counts[s] > 0 ? w : 0.0;
      else if (mode == "TFIDF")
        counts[s] *= w;
    }
  }
  std::vector<int64_t> dims =
      x.rank == 2 ? std::vector<int64_t>{rows, out_size} : std::vector<int64_t>{out_size};
  misc::write_as<double>(ctx.allocate_output(0, LOOM_DTYPE_FLOAT32, dims), out, where);
}

void tfidf_vectorizer(KernelContext& ctx) {
  const loom_tensor_t& x = ctx.required_input(0);
  if (x.dtype == LOOM_DTYPE_STRING) {
    std::vector<std::string> tokens, pool;
    const auto* s = sdk::data_of<const loom_string_t>(x);
    for (size_t i = 0; i < misc::count_of(x); ++i) tokens.emplace_back(s[i].data, s[i].size);
    if (auto p = ctx.attrs().get_strings("pool_strings"))
      for (const loom_string_t& v : *p) pool.emplace_back(v.data, v.size);
    else
      fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": string input needs pool_strings");
    vectorize(ctx, tokens, pool);
    return;
  }
  if (x.dtype != LOOM_DTYPE_INT32 && x.dtype != LOOM_DTYPE_INT64)
    fail(LOOM_ERROR_UNSUPPORTED, ctx.where() + ": input must be int32, int64 or string");
  auto p = ctx.attrs().get_ints("pool_int64s");
  if (!p) fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": integer input needs pool_int64s");
  vectorize(ctx, misc::read_ints(x, ctx.where()), std::vector<int64_t>(p->begin(), p->end()));
}

}  // namespace

LOOM_CPU_KERNEL("TfIdfVectorizer", 9, tfidf_vectorizer, nullptr);

}  // namespace loom::cpu
