// Unique (11): the distinct elements (or, with `axis`, distinct slices along that axis) of a
// tensor, sorted ascending (sorted = 1, lexicographic for slices) or in order of first
// occurrence, with all four outputs: Y, indices (first occurrence in X), inverse_indices (for
// every element/slice of X its position in Y) and counts. NaNs compare equal to each other and
// above every number so that the order is total. Strings are supported.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

template <typename T>
auto key_of(const T& v) {
  if constexpr (is_half_like_v<T>)
    return static_cast<float>(v);
  else if constexpr (std::is_same_v<T, loom_string_t>)
    return std::string_view(v.data, v.size);
  else
    return v;
}

// -1, 0, 1 with NaN == NaN and NaN above everything.
template <typename K>
int compare(const K& a, const K& b) {
  if constexpr (std::is_floating_point_v<K>) {
    const bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : (na ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

void write_int64(KernelContext& ctx, size_t index, const std::vector<int64_t>& v) {
  if (!ctx.output_requested(index)) return;
  const int64_t n = static_cast<int64_t>(v.size());
  loom_tensor_t& t = ctx.allocate_output(index, LOOM_DTYPE_INT64, std::span<const int64_t>(&n, 1));
  std::copy(v.begin(), v.end(), sdk::data_of<int64_t>(t));
}

void unique_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  const loom_tensor_t& x = ctx.required_input(0);
  const bool sorted = ctx.attrs().get_int("sorted", 1) != 0;
  const bool has_axis = ctx.attrs().has("axis");
  int64_t slices = 0, outer = 1, inner = 1;
  int64_t axis = 0;
  if (has_axis) {
    if (x.rank < 1) fail(LOOM_ERROR_INVALID_MODEL, where + ": axis given for a scalar input");
    axis = sdk::normalize_axis(ctx.attrs().get_int("axis", 0), x.rank, where);
    slices = x.dims[axis];
    for (int64_t i = 0; i < axis; ++i) outer *= x.dims[i];
    for (int64_t i = axis + 1; i < x.rank; ++i) inner *= x.dims[i];
  } else {
    slices = sdk::element_count(x);
  }
  dispatch<kAll>(x.dtype, where, [&]<typename T>() {
    const T* in = sdk::data_of<const T>(x);
    // Element e (in outer-major, inner-minor order) of slice s.
    auto elem = [&](int64_t s, int64_t e) -> const T& {
      const int64_t o = e / inner, i = e % inner;
      return in[(o * slices + s) * inner + i];
    };
    const int64_t slice_len = outer * inner;
    auto cmp = [&](int64_t a, int64_t b) {
      for (int64_t e = 0; e < slice_len; ++e) {
        const int c = compare(key_of(elem(a, e)), key_of(elem(b, e)));
        if (c != 0) return c;
      }
      return 0;
    };
    std::vector<int64_t> order(static_cast<size_t>(slices));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
    // Groups of equal slices, each represented by its first occurrence (stable sort).
    std::vector<int64_t> first, counts, group_of(static_cast<size_t>(slices));
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
        first.push_back(order[i]);
        counts.push_back(0);
      }
      ++counts.back();
      group_of[order[i]] = static_cast<int64_t>(first.size()) - 1;
    }
    std::vector<int64_t> rank(first.size());  // output position of each group
    std::iota(rank.begin(), rank.end(), int64_t{0});
    if (!sorted) {
      std::vector<int64_t> by_first(first.size());
      std::iota(by_first.begin(), by_first.end(), int64_t{0});
      std::sort(by_first.begin(), by_first.end(),
                [&](int64_t a, int64_t b) { return first[a] < first[b]; });
      for (size_t pos = 0; pos < by_first.size(); ++pos)
        rank[by_first[pos]] = static_cast<int64_t>(pos);
    }
    const int64_t u = static_cast<int64_t>(first.size());
    std::vector<int64_t> indices(first.size()), out_counts(first.size()), inverse(order.size());
    for (int64_t g = 0; g < u; ++g) {
      indices[rank[g]] = first[g];
      out_counts[rank[g]] = counts[g];
    }
    for (size_t s = 0; s < inverse.size(); ++s) inverse[s] = rank[group_of[s]];

    std::vector<int64_t> y_dims = has_axis ? misc::dims_of(x) : std::vector<int64_t>{u};
    if (has_axis) y_dims[axis] = u;
    auto copy_out = [&](auto&& store) {
      for (int64_t pos = 0; pos < u; ++pos)
        for (int64_t e = 0; e < slice_len; ++e) {
          const int64_t o = e / inner, i = e % inner;
          store((o * u + pos) * inner + i, elem(indices[pos], e));
        }
    };
    if constexpr (std::is_same_v<T, loom_string_t>) {
      Tensor y = make_tensor(LOOM_DTYPE_STRING, y_dims);
      auto* views = sdk::data_of<loom_string_t>(y.view);
      copy_out(
          [&](int64_t at, const loom_string_t& s) { (*y.strings)[at].assign(s.data, s.size); });
      for (size_t i = 0; i < y.strings->size(); ++i)
        views[i] = loom_string_t{(*y.strings)[i].data(), (*y.strings)[i].size()};
      ctx.set_output(0, std::move(y));
    } else {
      loom_tensor_t& y = ctx.allocate_output(0, x.dtype, y_dims);
      T* out = sdk::data_of<T>(y);
      copy_out([&](int64_t at, const T& v) { out[at] = v; });
    }
    write_int64(ctx, 1, indices);
    write_int64(ctx, 2, inverse);
    write_int64(ctx, 3, out_counts);
  });
}

}  // namespace

LOOM_CPU_KERNEL("Unique", 11, unique_kernel, nullptr);

}  // namespace loom::cpu
