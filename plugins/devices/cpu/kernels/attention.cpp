// Attention (opsets 23, 24, 25): softmax(Q K^T * scale, softcapped, + bias) V per head.
//
//   Q [B, Hq, Sq, D] or [B, Sq, Hq*D]; K [B, Hkv, S, D] or [B, S, Hkv*D]; V likewise with Dv.
//   past_key/past_value [B, Hkv, P, *] are prepended to K/V (present_* outputs, P + S keys).
//   Grouped-query attention: query head h reads key/value head h / (Hq / Hkv).
//   The bias of a score is the sum of: attn_mask (bool: 0 / -inf; numbers: added), -inf past its
//   last extent (a short mask pads with -inf), and -inf where is_causal, the opset-25 window or
//   opset 24's nonpad_kv_seqlen rule the key out. Causal and window bounds are bottom-right
//   aligned: query i sits at absolute position i + offset, offset = P, or nonpad[b] - Sq for an
//   external cache, else 0.
//   A row whose bias is -inf everywhere has no key to attend: its probabilities (and so its Y
//   and mode-3 row) are 0, as in the ONNX reference, not NaN.
//
// The arithmetic follows the reference's types: Q and K are each multiplied by sqrt(scale) in
// their own type, and with float16/bfloat16 every step (scores, softcap, bias add, the cast
// back before P @ V) rounds to the storage type, computed in float. The softmax runs in
// softmax_precision, else in the inputs' type, rounding as numpy does in that type (so 16-bit
// results match the reference to the last bit rather than one unit off).
//
// Memory: the inputs are gathered once into head-major compute-type copies (linear in the
// inputs); each task (one batch and query head) holds the scores of a block of kRowBlock query
// rows, so no buffer is quadratic beyond one head's score rows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

// Query rows scored together against one pass over a head's keys (keeps K and V in cache).
constexpr size_t kRowBlock = 16;
// Bounds that the int64 window arithmetic below cannot overflow with (no tensor has 2^61
// positions, so clamping to them changes no comparison).
constexpr int64_t kPosLimit = int64_t{1} << 61;

struct Geometry {
  bool three_d = false;
  size_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, past_len = 0, total = 0,
         head = 0, v_head = 0;
};

struct Params {
  double scale = 0;
  double softcap = 0;  // applied when > 0
  int64_t mode = 0;    // qk_matmul_output_mode
  std::optional<loom_dtype_t> softmax_precision;
  bool causal = false;
  int64_t left = -1, right = -1;
};

// The masking of one node, resolved to per-batch numbers and the mask's values as additive
// bias in the compute type.
template <typename C>
struct Masking {
  bool has_mask = false;
  std::vector<C> mask;  // attn_mask as bias values
  size_t mask_len = 0;  // its last extent (keys past it are masked)
  size_t stride_b = 0, stride_h = 0, stride_i = 0;
  bool causal = false;
  int64_t left = -1, right = -1;
  std::vector<int64_t> offset;  // per batch: absolute position of query 0
  std::vector<int64_t> valid;   // per batch: keys at or past it are padding

  // Fills bias[0, total) for query row i of (b, h); returns true when every key is masked.
  bool row(size_t b, size_t h, size_t i, size_t total, C* bias) const {
    constexpr C kNegInf = -std::numeric_limits<C>::infinity();
    const C* m = !has_mask ? nullptr : mask.data() + b * stride_b + h * stride_h + i * stride_i;
    const int64_t pos = static_cast<int64_t>(i) + offset[b];
    bool all_masked = true;
    for (size_t j = 0; j < total; ++j) {
      C v = 0;
      if (m) v = j < mask_len ? m[j] : kNegInf;
      const int64_t diff = pos - static_cast<int64_t>(j);
      bool ok = static_cast<int64_t>(j) < valid[b];
      if (causal) ok = ok && diff >= 0;
      if (left >= 0) ok = ok && diff <= left;
      if (right >= 0) ok = ok && -diff <= right;
      // Added, not assigned, as the reference does: a +inf mask value under -inf gives NaN.
      if (!ok) v += kNegInf;
      bias[j] = v;
      all_masked = all_masked && v == kNegInf;
    }
    return all_masked;
  }
};

std::string shape_of(const loom_tensor_t& t) {
  return nn::shape_string(t);
}

// Reads the shapes and the head attributes into a Geometry, failing on any inconsistency.
Geometry geometry_of(const KernelContext& ctx) {
  const loom_tensor_t& q = ctx.required_input(0);
  const loom_tensor_t& k = ctx.required_input(1);
  const loom_tensor_t& v = ctx.required_input(2);
  const std::string shapes =
      " (Q " + shape_of(q) + ", K " + shape_of(k) + ", V " + shape_of(v) + ")";
  if (q.rank != k.rank || q.rank != v.rank || (q.rank != 3 && q.rank != 4))
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": Q, K and V must all be 3-D or all be 4-D" + shapes);
  Geometry g;
  g.three_d = q.rank == 3;
  const bool has_heads = ctx.attrs().has("q_num_heads") || ctx.attrs().has("kv_num_heads");
  if (g.three_d) {
    const int64_t qh = ctx.attrs().get_int("q_num_heads", 0);
    const int64_t kvh = ctx.attrs().get_int("kv_num_heads", 0);
    if (qh <= 0 || kvh <= 0)
      fail(LOOM_ERROR_INVALID_MODEL, ctx.where() +
                                         ": 3-D inputs need positive q_num_heads and "
                                         "kv_num_heads attributes");
    if (q.dims[2] % qh != 0 || k.dims[2] % kvh != 0 || v.dims[2] % kvh != 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": the hidden sizes are not multiples of " +
                                            "q_num_heads " + std::to_string(qh) +
                                            " / kv_num_heads " + std::to_string(kvh) + shapes);
    g.q_heads = static_cast<size_t>(qh);
    g.kv_heads = static_cast<size_t>(kvh);
    g.q_len = static_cast<size_t>(q.dims[1]);
    g.kv_len = static_cast<size_t>(k.dims[1]);
    g.head = static_cast<size_t>(q.dims[2] / qh);
    if (k.dims[2] / kvh != q.dims[2] / qh || v.dims[1] != k.dims[1])
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           ctx.where() + ": K must have Q's head size and V K's sequence length" + shapes);
    g.v_head = static_cast<size_t>(v.dims[2] / kvh);
  } else {
    if (has_heads && ctx.opset() >= 25)
      fail(LOOM_ERROR_INVALID_MODEL,
           ctx.where() + ": q_num_heads and kv_num_heads must not be given with 4-D inputs");
    if (k.dims[1] != v.dims[1] || k.dims[2] != v.dims[2] || k.dims[3] != q.dims[3])
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() +
                                            ": K and V must agree in heads and sequence length "
                                            "and K must have Q's head size" +
                                            shapes);
    g.q_heads = static_cast<size_t>(q.dims[1]);
    g.kv_heads = static_cast<size_t>(k.dims[1]);
    g.q_len = static_cast<size_t>(q.dims[2]);
    g.kv_len = static_cast<size_t>(k.dims[2]);
    g.head = static_cast<size_t>(q.dims[3]);
    g.v_head = static_cast<size_t>(v.dims[3]);
  }
  if (k.dims[0] != q.dims[0] || v.dims[0] != q.dims[0])
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": Q, K and V batch sizes differ" + shapes);
  g.batch = static_cast<size_t>(q.dims[0]);
  if (g.kv_heads == 0 ? g.q_heads != 0 : g.q_heads % g.kv_heads != 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": " + std::to_string(g.q_heads) +
                                          " query heads are not a multiple of " +
                                          std::to_string(g.kv_heads) + " key/value heads");

  const loom_tensor_t* past_k = ctx.input(4);
  const loom_tensor_t* past_v = ctx.input(5);
  if (!past_k != !past_v)
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": past_key and past_value must be given together");
  if (past_k) {
    const auto expect = [&](const loom_tensor_t& t, size_t last, const char* what) {
      if (t.rank != 4 || t.dims[0] != q.dims[0] || t.dims[1] != static_cast<int64_t>(g.kv_heads) ||
          t.dims[3] != static_cast<int64_t>(last) || t.dims[2] != past_k->dims[2])
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             ctx.where() + ": " + what + " " + shape_of(t) + " must be [" +
                 std::to_string(g.batch) + ", " + std::to_string(g.kv_heads) +
                 ", past_sequence_length, " + std::to_string(last) + "]");
    };
    expect(*past_k, g.head, "past_key");
    expect(*past_v, g.v_head, "past_value");
    if (past_k->dtype != k.dtype || past_v->dtype != v.dtype)
      fail(LOOM_ERROR_INVALID_MODEL,
           ctx.where() + ": past_key/past_value must have the element types of K/V");
    g.past_len = static_cast<size_t>(past_k->dims[2]);
  }
  g.total = g.past_len + g.kv_len;  // both extents of existing tensors: no overflow
  if (k.dtype != q.dtype)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": K is " + sdk::dtype_name(k.dtype) +
                                       " but Q is " + sdk::dtype_name(q.dtype));
  return g;
}

Params params_of(const KernelContext& ctx, const Geometry& g) {
  const Attributes& a = ctx.attrs();
  Params p;
  p.scale = a.has("scale") ? static_cast<double>(a.get_float("scale", 1.0f))
                           : 1.0 / std::sqrt(static_cast<double>(g.head));
  p.softcap = a.get_float("softcap", 0.0f);
  p.mode = a.get_int("qk_matmul_output_mode", 0);
  if (p.mode < 0 || p.mode > 3)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": qk_matmul_output_mode " +
                                       std::to_string(p.mode) + " is not 0, 1, 2 or 3");
  if (a.has("softmax_precision")) {
    const int64_t sp = a.get_int("softmax_precision", 0);
    if (sp != LOOM_DTYPE_FLOAT32 && sp != LOOM_DTYPE_FLOAT16 && sp != LOOM_DTYPE_FLOAT64 &&
        sp != LOOM_DTYPE_BFLOAT16)
      fail(LOOM_ERROR_INVALID_MODEL,
           ctx.where() + ": softmax_precision " + std::to_string(sp) +
               " is not FLOAT (1), FLOAT16 (10), DOUBLE (11) or BFLOAT16 (16)");
    p.softmax_precision = static_cast<loom_dtype_t>(sp);
  }
  p.causal = a.get_int("is_causal", 0) != 0;
  if (ctx.opset() >= 25) {
    p.left = a.get_int("left_window_size", -1);
    p.right = a.get_int("right_window_size", -1);
    if (p.left < -1 || p.right < -1)
      fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": left_window_size " + std::to_string(p.left) +
                                         " and right_window_size " + std::to_string(p.right) +
                                         " must be -1 or >= 0");
    p.left = std::min(p.left, kPosLimit);
    p.right = std::min(p.right, kPosLimit);
  }
  return p;
}

// attn_mask as additive bias values of the compute type, with the strides that broadcast it to
// [B, Hq, Sq, *] (right-aligned; the last extent may be shorter than the key count).
template <typename C>
void read_mask(const KernelContext& ctx, const Geometry& g, Masking<C>& m) {
  const loom_tensor_t* t = ctx.input(3);
  if (!t) return;
  const int64_t target[4] = {static_cast<int64_t>(g.batch), static_cast<int64_t>(g.q_heads),
                             static_cast<int64_t>(g.q_len), static_cast<int64_t>(g.total)};
  const std::string bad = ctx.where() + ": attn_mask " + shape_of(*t) +
                          " does not broadcast to [batch, q_num_heads, q_sequence_length, "
                          "total_sequence_length] = " +
                          nn::shape_string(std::span<const int64_t>(target, 4));
  if (t->rank < 1 || t->rank > 4) fail(LOOM_ERROR_INVALID_ARGUMENT, bad);
  const int32_t lead = 4 - t->rank;
  if (t->dims[t->rank - 1] > target[3]) fail(LOOM_ERROR_INVALID_ARGUMENT, bad);
  size_t strides[3] = {0, 0, 0};
  size_t stride = static_cast<size_t>(t->dims[t->rank - 1]);
  for (int32_t d = 2; d >= lead; --d) {
    const int64_t extent = t->dims[d - lead];
    if (extent != 1 && extent != target[d]) fail(LOOM_ERROR_INVALID_ARGUMENT, bad);
    if (extent != 1) strides[d] = stride;
    stride *= static_cast<size_t>(extent);
  }
  m.stride_b = strides[0];
  m.stride_h = strides[1];
  m.stride_i = strides[2];
  m.has_mask = true;
  m.mask_len = static_cast<size_t>(t->dims[t->rank - 1]);
  const size_t n = static_cast<size_t>(sdk::element_count(*t));
  m.mask.resize(n);
  if (t->dtype == LOOM_DTYPE_BOOL) {
    const bool* src = sdk::data_of<const bool>(*t);
    for (size_t i = 0; i < n; ++i) m.mask[i] = src[i] ? C(0) : -std::numeric_limits<C>::infinity();
  } else {
    dispatch<kNumeric>(t->dtype, ctx.where() + " attn_mask", [&]<typename M>() {
      const M* src = sdk::data_of<const M>(*t);
      for (size_t i = 0; i < n; ++i) m.mask[i] = convert<C>(src[i]);
    });
  }
}

// Copies a tensor laid out [B, S, H*D] (three_d) or [B, H, S, D] into dst laid out
// [B, H, dst_len, D] from sequence position `at` on, converting each element with f.
template <typename Src, typename Dst, typename F>
void gather_heads(const Src* src, bool three_d, const size_t (&bhsd)[4], Dst* dst, size_t dst_len,
                  size_t at, F&& f) {
  const auto [B, H, S, D] = bhsd;
  if (D == 0) return;  // B*H*S of an empty tensor need not be bounded by anything
  for (size_t b = 0; b < B; ++b)
    for (size_t h = 0; h < H; ++h)
      for (size_t s = 0; s < S; ++s) {
        const Src* row =
            three_d ? src + ((b * S + s) * H + h) * D : src + ((b * H + h) * S + s) * D;
        Dst* out = dst + ((b * H + h) * dst_len + at + s) * D;
        for (size_t d = 0; d < D; ++d) out[d] = f(row[d]);
      }
}

// Scratch of `count` elements of `bytes_each`, checked against the run's limits first.
template <typename C>
std::vector<C> scratch(const KernelContext& ctx, std::span<const int64_t> dims, const char* what) {
  const int64_t count = sdk::element_count(dims);
  const std::optional<size_t> bytes = sdk::try_byte_size(count, sizeof(C));
  if (!bytes)
    fail(LOOM_ERROR_LIMIT_EXCEEDED,
         ctx.where() + ": " + what + " " + nn::shape_string(dims) + " is too large");
  check_scratch_bytes(*bytes, ctx.where() + ": " + what);
  return std::vector<C>(static_cast<size_t>(count));
}

// Rounds a value to the precision of element type D (float16/bfloat16/float/double).
template <typename S>
S round_to(loom_dtype_t d, S x) {
  switch (d) {
    case LOOM_DTYPE_FLOAT16:
      return static_cast<S>(static_cast<float>(Half(static_cast<float>(x))));
    case LOOM_DTYPE_BFLOAT16:
      return static_cast<S>(static_cast<float>(BFloat16(static_cast<float>(x))));
    case LOOM_DTYPE_FLOAT32:
      return static_cast<S>(static_cast<float>(x));
    default:
      return x;
  }
}

// Softmax over row[0, n) in place, as the reference computes it in element type `prec`
// (softmax_precision, else the inputs' type): every step rounds to `prec`, and a bfloat16 sum
// rounds at each addition while a float16 one accumulates in float (numpy's reductions). A row
// holding a NaN is all NaN, a row of only -inf is all 0.
template <typename S, typename C>
void softmax_row(C* row, size_t n, loom_dtype_t prec) {
  const auto rnd = [prec](S x) { return round_to(prec, x); };
  S m = -std::numeric_limits<S>::infinity();
  for (size_t j = 0; j < n; ++j) {
    const S x = rnd(static_cast<S>(row[j]));
    if (std::isnan(x)) {
      std::fill(row, row + n, std::numeric_limits<C>::quiet_NaN());
      return;
    }
    m = std::max(m, x);
  }
  if (m == -std::numeric_limits<S>::infinity()) {
    std::fill(row, row + n, C(0));
    return;
  }
  const bool round_sum = prec == LOOM_DTYPE_BFLOAT16;
  S sum = 0;
  for (size_t j = 0; j < n; ++j) {
    const S e = rnd(std::exp(rnd(rnd(static_cast<S>(row[j])) - m)));
    sum = round_sum ? rnd(sum + e) : sum + e;
    row[j] = static_cast<C>(e);  // exp runs once; a float row holding a double e rounds ~1e-7
  }
  sum = rnd(sum);
  for (size_t j = 0; j < n; ++j) row[j] = static_cast<C>(rnd(static_cast<S>(row[j]) / sum));
}

template <typename T>
void attention(KernelContext& ctx, const Geometry& g, const Params& p) {
  using C = nn::compute_t<T>;
  // Rounds a compute-type value to T, as the function body's ops in T do.
  const auto round_t = [](C x) -> C {
    if constexpr (is_half_like_v<T>)
      return convert<C>(convert<T>(x));
    else
      return x;
  };
  const loom_tensor_t& q = ctx.required_input(0);
  const loom_tensor_t& k = ctx.required_input(1);
  const loom_tensor_t& v = ctx.required_input(2);
  const loom_tensor_t* past_k = ctx.input(4);
  const loom_tensor_t* past_v = ctx.input(5);
  const loom_tensor_t* nonpad = ctx.opset() >= 24 ? ctx.input(6) : nullptr;
  if (nonpad && past_k)
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": nonpad_kv_seqlen cannot be combined with past_key/past_value");
  if (nonpad && (nonpad->dtype != LOOM_DTYPE_INT64 || nonpad->rank != 1 ||
                 nonpad->dims[0] != static_cast<int64_t>(g.batch)))
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": nonpad_kv_seqlen must be int64 [" +
                                          std::to_string(g.batch) + "], got " +
                                          sdk::dtype_name(nonpad->dtype) + " " + shape_of(*nonpad));

  const int64_t B = static_cast<int64_t>(g.batch), Hq = static_cast<int64_t>(g.q_heads),
                Hkv = static_cast<int64_t>(g.kv_heads), Sq = static_cast<int64_t>(g.q_len),
                T_ = static_cast<int64_t>(g.total), D = static_cast<int64_t>(g.head),
                Dv = static_cast<int64_t>(g.v_head);

  // present_key / present_value: the concatenation, in the inputs' own element types.
  const size_t k_src[4] = {g.batch, g.kv_heads, g.kv_len, g.head};
  const size_t v_src[4] = {g.batch, g.kv_heads, g.kv_len, g.v_head};
  const size_t pk_src[4] = {g.batch, g.kv_heads, g.past_len, g.head};
  const size_t pv_src[4] = {g.batch, g.kv_heads, g.past_len, g.v_head};
  const auto present = [&](size_t out, const loom_tensor_t& now, const loom_tensor_t* past,
                           const size_t(&now_dims)[4], const size_t(&past_dims)[4], int64_t last) {
    if (!ctx.output_requested(out)) return;
    const int64_t dims[4] = {B, Hkv, T_, last};
    loom_tensor_t& t = ctx.allocate_output(out, now.dtype, dims);
    dispatch<kFloats>(now.dtype, ctx, [&]<typename E>() {
      E* dst = sdk::data_of<E>(t);
      const auto same = [](E x) { return x; };
      if (past) gather_heads(sdk::data_of<const E>(*past), false, past_dims, dst, g.total, 0, same);
      gather_heads(sdk::data_of<const E>(now), g.three_d, now_dims, dst, g.total, g.past_len, same);
    });
  };
  present(1, k, past_k, k_src, pk_src, D);
  present(2, v, past_v, v_src, pv_src, Dv);

  const std::optional<int64_t> y_hidden = sdk::checked_mul(Hq, Dv);
  if (!y_hidden)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": q_num_heads * v_head_size overflows");
  const std::vector<int64_t> y_dims =
      g.three_d ? std::vector<int64_t>{B, Sq, *y_hidden} : std::vector<int64_t>{B, Hq, Sq, Dv};
  loom_tensor_t& y = ctx.allocate_output(0, q.dtype, y_dims);
  T* qk_out = nullptr;
  int64_t qk_count = 0;
  if (ctx.output_requested(3)) {
    const int64_t dims[4] = {B, Hq, Sq, T_};
    loom_tensor_t& qk = ctx.allocate_output(3, q.dtype, dims);
    qk_out = sdk::data_of<T>(qk);
    qk_count = sdk::element_count(qk);
  }
  // Nothing to compute; also keeps the loops below bounded by an allocated output's size.
  if (sdk::element_count(y) == 0 && qk_count == 0) return;

  // Q and K times sqrt(scale), each rounded to T (the function body's Mul in T1).
  const C root = convert<C>(convert<T>(std::sqrt(p.scale)));
  const auto scaled = [&](T x) { return round_t(convert<C>(x) * root); };
  const int64_t q_dims[4] = {B, Hq, Sq, D};
  const int64_t k_dims[4] = {B, Hkv, T_, D};
  const int64_t v_dims[4] = {B, Hkv, T_, Dv};
  std::vector<C> qc = scratch<C>(ctx, q_dims, "the scaled queries");
  std::vector<C> kc = scratch<C>(ctx, k_dims, "the scaled keys");
  std::vector<C> vc = scratch<C>(ctx, v_dims, "the values");
  const size_t q_src[4] = {g.batch, g.q_heads, g.q_len, g.head};
  gather_heads(sdk::data_of<const T>(q), g.three_d, q_src, qc.data(), g.q_len, 0, scaled);
  if (past_k)
    gather_heads(sdk::data_of<const T>(*past_k), false, pk_src, kc.data(), g.total, 0, scaled);
  gather_heads(sdk::data_of<const T>(k), g.three_d, k_src, kc.data(), g.total, g.past_len, scaled);
  dispatch<kFloats>(v.dtype, ctx.where() + " V", [&]<typename E>() {
    const auto to_c = [](E x) { return convert<C>(x); };
    if (past_v)
      gather_heads(sdk::data_of<const E>(*past_v), false, pv_src, vc.data(), g.total, 0, to_c);
    gather_heads(sdk::data_of<const E>(v), g.three_d, v_src, vc.data(), g.total, g.past_len, to_c);
  });

  Masking<C> mask;
  read_mask(ctx, g, mask);
  mask.causal = p.causal;
  mask.left = p.left;
  mask.right = p.right;
  mask.offset.assign(g.batch, static_cast<int64_t>(g.past_len));
  mask.valid.assign(g.batch, T_);
  if (nonpad) {
    const int64_t* n = sdk::data_of<const int64_t>(*nonpad);
    for (size_t b = 0; b < g.batch; ++b) {
      const int64_t keys = std::clamp<int64_t>(n[b], -1, kPosLimit);
      mask.valid[b] = keys;
      mask.offset[b] = keys - Sq;
    }
  }

  const loom_dtype_t softmax_type = p.softmax_precision.value_or(q.dtype);
  const bool softmax_in_double = std::is_same_v<C, double> || softmax_type == LOOM_DTYPE_FLOAT64;
  T* y_data = sdk::data_of<T>(y);
  const size_t group = g.kv_heads ? g.q_heads / g.kv_heads : 1;
  nn::parallel_range(ctx, g.batch * g.q_heads, 1, [&](size_t t0, size_t t1) {
    std::vector<C> scores(kRowBlock * g.total), bias(g.total), acc(kRowBlock * g.v_head);
    for (size_t task = t0; task < t1; ++task) {
      const size_t b = task / g.q_heads, h = task % g.q_heads;
      const size_t kvh = (b * g.kv_heads) + h / group;
      const C* keys = kc.data() + kvh * g.total * g.head;
      const C* values = vc.data() + kvh * g.total * g.v_head;
      for (size_t i0 = 0; i0 < g.q_len; i0 += kRowBlock) {
        const size_t rows = std::min(kRowBlock, g.q_len - i0);
        const C* queries = qc.data() + (task * g.q_len + i0) * g.head;
        for (size_t j = 0; j < g.total; ++j) {
          const C* key = keys + j * g.head;
          for (size_t r = 0; r < rows; ++r) {
            const C* query = queries + r * g.head;
            C dot = 0;
            for (size_t d = 0; d < g.head; ++d) dot += query[d] * key[d];
            scores[r * g.total + j] = round_t(dot);
          }
        }
        for (size_t r = 0; r < rows; ++r) {
          const size_t i = i0 + r;
          C* row = scores.data() + r * g.total;
          T* qk_row = qk_out ? qk_out + (task * g.q_len + i) * g.total : nullptr;
          if (qk_row && p.mode == 0)
            for (size_t j = 0; j < g.total; ++j) qk_row[j] = convert<T>(row[j]);
          if (p.softcap > 0) {
            const C cap = round_t(static_cast<C>(p.softcap));
            for (size_t j = 0; j < g.total; ++j)
              row[j] = round_t(cap * round_t(std::tanh(round_t(row[j] / cap))));
          }
          if (qk_row && p.mode == 1)
            for (size_t j = 0; j < g.total; ++j) qk_row[j] = convert<T>(row[j]);
          const bool all_masked = mask.row(b, h, i, g.total, bias.data());
          for (size_t j = 0; j < g.total; ++j) row[j] = round_t(row[j] + bias[j]);
          if (qk_row && p.mode == 2)
            for (size_t j = 0; j < g.total; ++j) qk_row[j] = convert<T>(row[j]);
          if (softmax_in_double)
            softmax_row<double>(row, g.total, softmax_type);
          else
            softmax_row<float>(row, g.total, softmax_type);
          // Selected, not multiplied: a NaN softmax row of a fully masked query becomes 0.
          if (all_masked) std::fill(row, row + g.total, C(0));
          for (size_t j = 0; j < g.total; ++j) row[j] = round_t(row[j]);
          if (qk_row && p.mode == 3)
            for (size_t j = 0; j < g.total; ++j) qk_row[j] = convert<T>(row[j]);
        }
        std::fill(acc.begin(), acc.begin() + static_cast<std::ptrdiff_t>(rows * g.v_head), C(0));
        for (size_t j = 0; j < g.total; ++j) {
          const C* value = values + j * g.v_head;
          for (size_t r = 0; r < rows; ++r) {
            const C weight = scores[r * g.total + j];
            C* out = acc.data() + r * g.v_head;
            for (size_t d = 0; d < g.v_head; ++d) out[d] += weight * value[d];
          }
        }
        for (size_t r = 0; r < rows; ++r) {
          const size_t i = i0 + r;
          T* dst = g.three_d ? y_data + ((b * g.q_len + i) * g.q_heads + h) * g.v_head
                             : y_data + (task * g.q_len + i) * g.v_head;
          for (size_t d = 0; d < g.v_head; ++d) dst[d] = convert<T>(acc[r * g.v_head + d]);
        }
      }
    }
  });
}

void attention_kernel(KernelContext& ctx) {
  const Geometry g = geometry_of(ctx);
  const Params p = params_of(ctx, g);
  dispatch<kFloats>(ctx.required_input(0).dtype, ctx,
                    [&]<typename T>() { attention<T>(ctx, g, p); });
}

}  // namespace

LOOM_CPU_KERNEL("Attention", 23, attention_kernel, nullptr);

}  // namespace loom::cpu
