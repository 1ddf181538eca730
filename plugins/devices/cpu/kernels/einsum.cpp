// Einsum (12): general Einstein summation. Supports explicit ("ij,jk->ik") and implicit
// ("ij,jk": labels seen once, in alphabetical order) outputs, repeated labels within one
// operand (diagonals, traces), ellipsis broadcasting ("...ij,...jk") and size-1 broadcasting.
// Every output element is a plain sum over the contracted labels of the operand product,
// accumulated in double (floats) or int64 (integers).
#include <algorithm>
#include <array>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

constexpr int kLetters = 52;  // a-z -> 0..25, A-Z -> 26..51; ellipsis dims follow

int letter_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// Alphabetical (ASCII) order of a letter id: uppercase before lowercase.
int ascii_of(int id) {
  return id < 26 ? 'a' + id : 'A' + (id - 26);
}

struct Term {
  std::vector<int> labels;  // letter ids; kEllipsis marks where "..." was
  bool has_ellipsis = false;
};
constexpr int kEllipsis = -2;

Term parse_term(std::string_view s, const std::string& where) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      if (t.has_ellipsis || s.substr(i, 3) != "...")
        fail(LOOM_ERROR_INVALID_MODEL,
             where + ": malformed ellipsis in equation term '" + std::string(s) + "'");
      t.has_ellipsis = true;
      t.labels.push_back(kEllipsis);
      i += 2;
      continue;
    }
    const int id = letter_id(s[i]);
    if (id < 0)
      fail(LOOM_ERROR_INVALID_MODEL,
           where + ": invalid character '" + std::string(1, s[i]) + "' in equation");
    t.labels.push_back(id);
  }
  return t;
}

// Replaces the ellipsis of a term of `rank` dims with the ids of the last ellipsis dims.
std::vector<int> expand(const Term& t, int64_t rank, int64_t ellipsis_rank,
                        const std::string& where) {
  const int64_t letters = static_cast<int64_t>(t.labels.size()) - (t.has_ellipsis ? 1 : 0);
  const int64_t e = rank - letters;
  if ((!t.has_ellipsis && e != 0) || e < 0)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": equation term has " + std::to_string(letters) +
                                       " labels but its operand has rank " + std::to_string(rank));
  std::vector<int> out;
  for (int l : t.labels) {
    if (l != kEllipsis) {
      out.push_back(l);
      continue;
    }
    for (int64_t k = ellipsis_rank - e; k < ellipsis_rank; ++k)
      out.push_back(kLetters + static_cast<int>(k));
  }
  return out;
}

void einsum_kernel(KernelContext& ctx) {
  const std::string where = ctx.where();
  std::string eq;
  for (char c : ctx.attrs().get_string("equation", ""))
    if (c != ' ') eq += c;
  if (eq.empty()) fail(LOOM_ERROR_INVALID_MODEL, where + ": attribute 'equation' is required");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(std::string_view(lhs).substr(start, comma - start), where));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const size_t n_in = ctx.num_inputs();
  if (terms.size() != n_in)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": equation has " + std::to_string(terms.size()) +
                                       " operands but the node has " + std::to_string(n_in) +
                                       " inputs");
  const loom_dtype_t dtype = ctx.required_input(0).dtype;
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < n_in; ++i) {
    const loom_tensor_t& t = ctx.required_input(i);
    if (t.dtype != dtype)
      fail(LOOM_ERROR_INVALID_MODEL, where + ": inputs must share one element type");
    if (terms[i].has_ellipsis)
      ellipsis_rank = std::max<int64_t>(
          ellipsis_rank, t.rank - (static_cast<int64_t>(terms[i].labels.size()) - 1));
  }
  std::vector<std::vector<int>> labels(n_in);
  const int max_labels = kLetters + static_cast<int>(ellipsis_rank);
  std::vector<int64_t> size(static_cast<size_t>(max_labels), -1);
  std::vector<int> occurrences(static_cast<size_t>(max_labels), 0);
  for (size_t i = 0; i < n_in; ++i) {
    const loom_tensor_t& t = ctx.required_input(i);
    labels[i] = expand(terms[i], t.rank, ellipsis_rank, where);
    for (size_t a = 0; a < labels[i].size(); ++a) {
      const int l = labels[i][a];
      ++occurrences[l];
      const int64_t d = t.dims[a];
      if (size[l] == -1 || size[l] == 1)
        size[l] = d;
      else if (d != size[l] && d != 1)
        fail(LOOM_ERROR_INVALID_MODEL, where + ": label dimension sizes " + std::to_string(d) +
                                           " and " + std::to_string(size[l]) + " do not match");
    }
  }
  std::vector<int> out_labels;
  if (arrow != std::string::npos) {
    const Term out = parse_term(std::string_view(eq).substr(arrow + 2), where);
    for (int l : out.labels) {
      if (l == kEllipsis) {
        for (int64_t k = 0; k < ellipsis_rank; ++k)
          out_labels.push_back(kLetters + static_cast<int>(k));
        continue;
      }
      if (size[l] < 0)
        fail(LOOM_ERROR_INVALID_MODEL, where + ": output label '" +
                                           std::string(1, char(ascii_of(l))) +
                                           "' does not appear in any input");
      if (std::count(out_labels.begin(), out_labels.end(), l))
        fail(LOOM_ERROR_INVALID_MODEL, where + ": output label repeated");
      out_labels.push_back(l);
    }
  } else {
    for (int64_t k = 0; k < ellipsis_rank; ++k)
      out_labels.push_back(kLetters + static_cast<int>(k));
    std::vector<int> once;
    for (int l = 0; l < kLetters; ++l)
      if (occurrences[l] == 1) once.push_back(l);
    std::sort(once.begin(), once.end(), [](int a, int b) { return ascii_of(a) < ascii_of(b); });
    out_labels.insert(out_labels.end(), once.begin(), once.end());
  }
  std::vector<int> red_labels;
  for (int l = 0; l < max_labels; ++l)
    if (size[l] >= 0 && std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end())
      red_labels.push_back(l);

  // Strides of every operand per output / reduction label (0 where broadcast or absent; the
  // sum of axis strides where a label repeats, which walks the diagonal).
  auto strides_for = [&](const std::vector<int>& which) {
    std::vector<std::vector<int64_t>> s(n_in, std::vector<int64_t>(which.size(), 0));
    for (size_t i = 0; i < n_in; ++i) {
      const loom_tensor_t& t = ctx.required_input(i);
      int64_t stride = 1;
      for (int64_t a = t.rank - 1; a >= 0; --a) {
        const auto it = std::find(which.begin(), which.end(), labels[i][a]);
        if (it != which.end() && t.dims[a] != 1) s[i][it - which.begin()] += stride;
        stride *= t.dims[a];
      }
    }
    return s;
  };
  const auto out_strides = strides_for(out_labels);
  const auto red_strides = strides_for(red_labels);
  std::vector<int64_t> out_dims, red_dims;
  for (int l : out_labels) out_dims.push_back(size[l]);
  for (int l : red_labels) red_dims.push_back(size[l]);
  int64_t red_total = 1;
  for (int64_t d : red_dims) red_total *= d;

  loom_tensor_t& y = ctx.allocate_output(0, dtype, out_dims);
  const int64_t out_total = sdk::element_count(y);
  dispatch<kNumeric>(dtype, where, [&]<typename T>() {
    using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
    std::vector<const T*> in(n_in);
    for (size_t i = 0; i < n_in; ++i) in[i] = sdk::data_of<const T>(ctx.required_input(i));
    T* out = sdk::data_of<T>(y);
    std::vector<int64_t> base(n_in), off(n_in), idx(red_dims.size());
    for (int64_t o = 0; o < out_total; ++o) {
      std::fill(base.begin(), base.end(), 0);
      for (int64_t rem = o, k = static_cast<int64_t>(out_dims.size()) - 1; k >= 0; --k) {
        const int64_t c = rem % out_dims[k];
        rem /= out_dims[k];
        for (size_t i = 0; i < n_in; ++i) base[i] += c * out_strides[i][k];
      }
      off = base;
      std::fill(idx.begin(), idx.end(), 0);
      Acc acc = 0;
      for (int64_t r = 0; r < red_total; ++r) {
        Acc prod = 1;
        for (size_t i = 0; i < n_in; ++i) prod *= convert<Acc>(in[i][off[i]]);
        acc += prod;
        for (int64_t k = static_cast<int64_t>(red_dims.size()) - 1; k >= 0; --k) {
          for (size_t i = 0; i < n_in; ++i) off[i] += red_strides[i][k];
          if (++idx[k] < red_dims[k]) break;
          for (size_t i = 0; i < n_in; ++i) off[i] -= red_dims[k] * red_strides[i][k];
          idx[k] = 0;
        }
      }
      out[o] = convert<T>(acc);
    }
  });
}

}  // namespace

LOOM_CPU_KERNEL("Einsum", 12, einsum_kernel, nullptr);

}  // namespace loom::cpu
