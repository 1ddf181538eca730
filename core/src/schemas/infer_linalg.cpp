// Matrix products: MatMul (numpy batch broadcast, 1-D promotion), MatMulInteger,
// QLinearMatMul, Gemm, Einsum, Det.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "infer_util.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::NodeView;

void matmul_like(NodeView& v, size_t a_index, size_t b_index, loom_dtype_t dtype) {
  std::optional<Dims> a = v.shape(a_index), b = v.shape(b_index);
  if (!a || !b) return v.set_output_dtype(0, dtype);
  if (a->empty() || b->empty())
    v.fail("inputs " + dims_to_string(*a) + " and " + dims_to_string(*b) + " must have rank >= 1");
  Dims a2 = *a, b2 = *b;
  bool a_vector = a2.size() == 1, b_vector = b2.size() == 1;
  if (a_vector) a2.insert(a2.begin(), 1);
  if (b_vector) b2.push_back(1);
  int64_t k_a = a2.back(), k_b = b2[b2.size() - 2];
  if (k_a >= 0 && k_b >= 0 && k_a != k_b)
    v.fail("inner dimensions disagree: A " + dims_to_string(*a) + " has " + std::to_string(k_a) +
           " columns but B " + dims_to_string(*b) + " has " + std::to_string(k_b) + " rows");
  Dims out = infer::broadcast(v, Dims(a2.begin(), a2.end() - 2), Dims(b2.begin(), b2.end() - 2));
  if (!a_vector) out.push_back(a2[a2.size() - 2]);
  if (!b_vector) out.push_back(b2.back());
  v.set_output(0, dtype, out);
}

void matmul(NodeView& v) {
  matmul_like(v, 0, 1, v.dtype(0));
}
void matmul_integer(NodeView& v) {
  matmul_like(v, 0, 1, LOOM_DTYPE_INT32);
}
// QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): y has y_zp's type.
void qlinear_matmul(NodeView& v) {
  matmul_like(v, 0, 3, v.has_input(7) ? v.dtype(7) : v.dtype(0));
}

// Gemm: Y[M, N] = alpha * A' B' + beta * C, C broadcastable to [M, N].
void gemm(NodeView& v) {
  std::optional<Dims> a = v.shape(0), b = v.shape(1), c = v.shape(2);
  for (const std::optional<Dims>* s : {&a, &b})
    if (*s && (*s)->size() != 2) v.fail("A and B must be matrices, got " + dims_to_string(**s));
  bool trans_a = v.attrs().get_int("transA", 0) != 0;
  bool trans_b = v.attrs().get_int("transB", 0) != 0;
  int64_t m = a ? (*a)[trans_a ? 1 : 0] : kUnknownDim;
  int64_t k_a = a ? (*a)[trans_a ? 0 : 1] : kUnknownDim;
  int64_t k_b = b ? (*b)[trans_b ? 1 : 0] : kUnknownDim;
  int64_t n = b ? (*b)[trans_b ? 0 : 1] : kUnknownDim;
  if (k_a >= 0 && k_b >= 0 && k_a != k_b)
    v.fail("inner dimensions disagree: A " + dims_to_string(*a) + (trans_a ? " (transposed)" : "") +
           " gives K=" + std::to_string(k_a) + " but B " + dims_to_string(*b) +
           (trans_b ? " (transposed)" : "") + " gives K=" + std::to_string(k_b));
  Dims out{m, n};
  if (c) {
    infer::check_broadcasts_to(v, *c, out, "C");
  }
  v.set_output(0, v.dtype(0), out);
}

// Det: [*, M, M] -> [*].
void det(NodeView& v) {
  std::optional<Dims> x = v.shape(0);
  if (!x) return v.set_output_dtype(0, v.dtype(0));
  if (x->size() < 2) v.fail("input " + dims_to_string(*x) + " must have rank >= 2");
  infer::merge_dim(v, (*x)[x->size() - 1], (*x)[x->size() - 2], "the square matrix extents");
  v.set_output(0, v.dtype(0), Dims(x->begin(), x->end() - 2));
}

// One operand or the result of an Einsum equation: labels, with '.' marking the ellipsis.
struct Term {
  std::string labels;  // letters; '.' stands for the whole ellipsis
  size_t ellipsis_at = std::string::npos;
};

Term parse_term(const NodeView& v, const std::string& text) {
  Term t;
  for (size_t k = 0; k < text.size(); ++k) {
    char c = text[k];
    if (c == ' ') continue;
    if (c == '.') {
      if (t.ellipsis_at != std::string::npos || text.compare(k, 3, "...") != 0)
        v.fail("malformed ellipsis in equation term '" + text + "'");
      t.ellipsis_at = t.labels.size();
      t.labels += '.';
      k += 2;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      t.labels += c;
    } else {
      v.fail(std::string("invalid character '") + c + "' in equation term '" + text + "'");
    }
  }
  return t;
}

void einsum(NodeView& v) {
  std::string equation = v.attrs().get_string("equation", "");
  if (equation.empty()) v.fail("attribute equation is required");
  size_t arrow = equation.find("->");
  std::string lhs = equation.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t begin = 0;;) {
    size_t comma = lhs.find(',', begin);
    terms.push_back(parse_term(v, lhs.substr(begin, comma - begin)));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (terms.size() != v.num_inputs())
    v.fail("equation '" + equation + "' has " + std::to_string(terms.size()) +
           " operands but the node has " + std::to_string(v.num_inputs()) + " inputs");
  std::map<char, int64_t> extent;
  std::map<char, int> occurrences;
  std::optional<Dims> ellipsis = Dims{};
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    for (char c : t.labels)
      if (c != '.') occurrences[c]++;
    std::optional<Dims> s = v.shape(i);
    if (!s) {
      for (char c : t.labels)
        if (c != '.') extent.try_emplace(c, kUnknownDim);
      if (t.ellipsis_at != std::string::npos) ellipsis.reset();
      continue;
    }
    size_t letters = t.labels.size() - (t.ellipsis_at != std::string::npos ? 1 : 0);
    if (t.ellipsis_at == std::string::npos ? s->size() != letters : s->size() < letters)
      v.fail("operand " + std::to_string(i) + " " + dims_to_string(*s) + " does not match term '" +
             t.labels + "' of equation '" + equation + "'");
    size_t ellipsis_rank = s->size() - letters;
    size_t d = 0;
    for (char c : t.labels) {
      if (c == '.') {
        Dims part(s->begin() + static_cast<ptrdiff_t>(d),
                  s->begin() + static_cast<ptrdiff_t>(d + ellipsis_rank));
        if (ellipsis) ellipsis = infer::broadcast(v, *ellipsis, part);
        d += ellipsis_rank;
        continue;
      }
      int64_t got = (*s)[d++];
      auto [it, first] = extent.try_emplace(c, got);
      if (first) continue;
      // Labels broadcast like numpy: an extent of 1 yields to the other one.
      int64_t& e = it->second;
      if (e == 1 || e < 0)
        e = e < 0 && got == 1 ? e : got;
      else if (got >= 0 && got != 1 && got != e)
        v.fail("label '" + std::string(1, c) + "' has extents " + std::to_string(e) + " and " +
               std::to_string(got) + " in equation '" + equation + "'");
    }
  }
  Term result;
  if (arrow != std::string::npos) {
    result = parse_term(v, equation.substr(arrow + 2));
    for (char c : result.labels)
      if (c != '.' && !extent.count(c))
        v.fail("output label '" + std::string(1, c) + "' does not occur in the inputs of '" +
               equation + "'");
  } else {
    // Implicit output: the ellipsis, then the labels seen once, in alphabetical order.
    bool any_ellipsis = std::any_of(terms.begin(), terms.end(), [](const Term& t) {
      return t.ellipsis_at != std::string::npos;
    });
    if (any_ellipsis) result.labels += '.', result.ellipsis_at = 0;
    for (auto [c, n] : occurrences)
      if (n == 1) result.labels += c;
  }
  if (result.ellipsis_at != std::string::npos && !ellipsis)
    return v.set_output_dtype(0, v.dtype(0));
  Dims out;
  for (char c : result.labels) {
    if (c == '.')
      out.insert(out.end(), ellipsis->begin(), ellipsis->end());
    else
      out.push_back(extent[c]);
  }
  v.set_output(0, v.dtype(0), out);
}

const InferEntry kEntries[] = {
    {"", "MatMul", adapt<matmul>},
    {"", "MatMulInteger", adapt<matmul_integer>},
    {"", "QLinearMatMul", adapt<qlinear_matmul>},
    {"", "Gemm", adapt<gemm>},
    {"", "Einsum", adapt<einsum>},
    {"", "Det", adapt<det>},
};

}  // namespace

std::span<const InferEntry> linalg_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
