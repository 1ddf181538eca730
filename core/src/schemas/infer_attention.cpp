// Shape inference of Attention (opsets 23-25; see newer_schema_table.cpp) and FlexAttention
// (ai.onnx.preview 1, at the end).
//
// Attention(Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen? (24+))
//   -> Y, present_key?, present_value?, qk_matmul_output?
// Q/K/V are all 4-D [B, heads, seq, head_size] or all 3-D [B, seq, heads * head_size] with the
// head counts in q_num_heads/kv_num_heads. past_* are 4-D and prepend P keys, so with
// total = P + kv_sequence_length:
//   Y: [B, Hq, Sq, Dv] (4-D) or [B, Sq, Hq * Dv] (3-D), Q's type
//   present_key [B, Hkv, total, D] (K's type), present_value [B, Hkv, total, Dv] (V's type)
//   qk_matmul_output [B, Hq, Sq, total], Q's type
#include <string>

#include "infer_util.hpp"
#include "schema_rows.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::merge_dim;
using infer::NodeView;

// extent / heads when known, failing when the heads do not divide it.
int64_t per_head(const NodeView& v, int64_t extent, int64_t heads, const char* what) {
  if (extent < 0) return kUnknownDim;
  if (extent % heads != 0)
    v.fail(std::string(what) + " hidden size " + std::to_string(extent) +
           " is not a multiple of the " + std::to_string(heads) + " heads");
  return extent / heads;
}

int64_t mul_known(const NodeView& v, int64_t a, int64_t b) {
  return a < 0 || b < 0 ? kUnknownDim : infer::checked_mul(v, a, b);
}

int64_t add_known(const NodeView& v, int64_t a, int64_t b) {
  return a < 0 || b < 0 ? kUnknownDim : infer::checked_add(v, a, b);
}

void check_attributes(const NodeView& v) {
  const sdk::Attributes& a = v.attrs();
  const int64_t mode = a.get_int("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    v.fail("qk_matmul_output_mode " + std::to_string(mode) + " is not 0, 1, 2 or 3");
  if (a.has("softmax_precision")) {
    const int64_t sp = a.get_int("softmax_precision", 0);
    if (sp != LOOM_DTYPE_FLOAT32 && sp != LOOM_DTYPE_FLOAT16 && sp != LOOM_DTYPE_FLOAT64 &&
        sp != LOOM_DTYPE_BFLOAT16)
      v.fail("softmax_precision " + std::to_string(sp) +
             " is not FLOAT (1), FLOAT16 (10), DOUBLE (11) or BFLOAT16 (16)");
  }
  if (v.node().opset >= 25)
    for (const char* name : {"left_window_size", "right_window_size"})
      if (a.get_int(name, -1) < -1)
        v.fail(std::string(name) + " " + std::to_string(a.get_int(name, -1)) +
               " must be -1 or >= 0");
}

// The extents Q, K, V (and past_key/past_value) agree on; kUnknownDim where open.
struct Extents {
  int64_t batch, hq, hkv, sq, skv, d, dv;
};

// The input types that must agree, and the optional inputs that go (or not) together.
void check_inputs(const NodeView& v, loom_dtype_t t1, loom_dtype_t tk) {
  if (t1 != LOOM_DTYPE_UNDEFINED && tk != LOOM_DTYPE_UNDEFINED && tk != t1)
    v.fail(std::string("K is ") + sdk::dtype_name(tk) + " but Q is " + sdk::dtype_name(t1));
  if (v.has_input(4) != v.has_input(5)) v.fail("past_key and past_value must be given together");
  if (v.node().opset >= 24 && v.has_input(6) && v.has_input(4))
    v.fail("nonpad_kv_seqlen cannot be combined with past_key/past_value");
}

// The rank Q, K and V share (3 or 4), or -1 when none is known.
int32_t common_rank(const NodeView& v) {
  int32_t rank = -1;
  for (size_t i = 0; i < 3; ++i) {
    const int32_t r = v.rank(i);
    if (r < 0) continue;
    if (r != 3 && r != 4)
      v.fail("Q, K and V must be 3-D or 4-D, input " + std::to_string(i) + " has rank " +
             std::to_string(r));
    if (rank >= 0 && r != rank) v.fail("Q, K and V must all be 3-D or all be 4-D");
    rank = r;
  }
  const bool has_heads = v.attrs().has("q_num_heads") || v.attrs().has("kv_num_heads");
  if (rank == 4 && has_heads && v.node().opset >= 25)
    v.fail("q_num_heads and kv_num_heads must not be given with 4-D inputs");
  return rank;
}

// The extents of Q, K and V of rank `rank` (3: heads from the attributes).
Extents qkv_extents(const NodeView& v, int32_t rank) {
  const auto dims = [&](size_t i) {
    std::optional<Dims> d = v.shape(i);
    return d ? *d : Dims(static_cast<size_t>(rank), kUnknownDim);
  };
  const Dims q = dims(0), k = dims(1), val = dims(2);
  Extents e;
  e.batch =
      merge_dim(v, merge_dim(v, q[0], k[0], "Q and K batch sizes"), val[0], "Q and V batch sizes");
  if (rank == 3) {
    e.hq = v.attrs().get_int("q_num_heads", 0);
    e.hkv = v.attrs().get_int("kv_num_heads", 0);
    if (e.hq <= 0 || e.hkv <= 0) v.fail("3-D inputs need positive q_num_heads and kv_num_heads");
    e.sq = q[1];
    e.skv = merge_dim(v, k[1], val[1], "K and V sequence lengths");
    e.d = merge_dim(v, per_head(v, q[2], e.hq, "Q"), per_head(v, k[2], e.hkv, "K"),
                    "Q and K head sizes");
    e.dv = per_head(v, val[2], e.hkv, "V");
  } else {
    e.hq = q[1];
    e.hkv = merge_dim(v, k[1], val[1], "K and V head counts");
    e.sq = q[2];
    e.skv = merge_dim(v, k[2], val[2], "K and V sequence lengths");
    e.d = merge_dim(v, q[3], k[3], "Q and K head sizes");
    e.dv = val[3];
  }
  if (e.hq >= 0 && e.hkv >= 0 && (e.hkv == 0 ? e.hq != 0 : e.hq % e.hkv != 0))
    v.fail(std::to_string(e.hq) + " query heads are not a multiple of " + std::to_string(e.hkv) +
           " key/value heads");
  return e;
}

// The past sequence length past_key/past_value prepend (0 without them), merging their other
// extents into `e`.
int64_t merge_past(const NodeView& v, Extents& e) {
  if (!v.has_input(4)) return 0;
  int64_t past = kUnknownDim;
  for (size_t i = 4; i <= 5; ++i) {
    std::optional<Dims> p = v.shape(i);
    if (!p) continue;
    const char* what = i == 4 ? "past_key" : "past_value";
    if (p->size() != 4) v.fail(std::string(what) + " " + dims_to_string(*p) + " must be 4-D");
    e.batch = merge_dim(v, e.batch, (*p)[0], std::string(what) + " and Q batch sizes");
    e.hkv = merge_dim(v, e.hkv, (*p)[1], std::string(what) + " and K head counts");
    past = merge_dim(v, past, (*p)[2], "past_key and past_value sequence lengths");
    if (i == 4)
      e.d = merge_dim(v, e.d, (*p)[3], "past_key and K head sizes");
    else
      e.dv = merge_dim(v, e.dv, (*p)[3], "past_value and V head sizes");
  }
  return past;
}

// attn_mask must broadcast to [batch, hq, sq, total]; nonpad_kv_seqlen is int64 [batch].
void check_mask_and_seqlen(const NodeView& v, const Extents& e, int64_t total) {
  if (std::optional<Dims> m = v.shape(3)) {
    const Dims target = {e.batch, e.hq, e.sq, total};
    const bool fits = [&] {
      if (m->empty() || m->size() > 4) return false;
      const size_t lead = 4 - m->size();
      for (size_t i = 0; i < m->size(); ++i) {
        const int64_t x = (*m)[i], t = target[lead + i];
        if (x < 0 || t < 0) continue;
        // The key extent may be shorter (padded with -inf); the others broadcast.
        if (lead + i == 3 ? x > t : x != 1 && x != t) return false;
      }
      return true;
    }();
    if (!fits)
      v.fail("attn_mask " + dims_to_string(*m) + " does not broadcast to " +
             dims_to_string(target));
  }
  if (v.node().opset >= 24 && v.has_input(6)) {
    if (v.dtype(6) != LOOM_DTYPE_INT64) v.fail("nonpad_kv_seqlen must be int64");
    if (std::optional<Dims> n = v.shape(6)) {
      if (n->size() != 1) v.fail("nonpad_kv_seqlen " + dims_to_string(*n) + " must be 1-D");
      merge_dim(v, e.batch, (*n)[0], "nonpad_kv_seqlen and Q batch sizes");
    }
  }
}

void attention(NodeView& v) {
  check_attributes(v);
  const loom_dtype_t t1 = v.dtype(0), tk = v.dtype(1), t2 = v.dtype(2);
  check_inputs(v, t1, tk);
  const int32_t rank = common_rank(v);
  if (rank < 0) {  // extents unknown; the ranks of everything but Y still are
    v.set_output_dtype(0, t1);
    v.set_output_rank(1, tk, 4);
    v.set_output_rank(2, t2, 4);
    v.set_output_rank(3, t1, 4);
    return;
  }
  Extents e = qkv_extents(v, rank);
  const int64_t past = merge_past(v, e);
  const int64_t total = add_known(v, past, e.skv);
  check_mask_and_seqlen(v, e, total);

  if (rank == 3)
    v.set_output(0, t1, Dims{e.batch, e.sq, mul_known(v, e.hq, e.dv)});
  else
    v.set_output(0, t1, Dims{e.batch, e.hq, e.sq, e.dv});
  v.set_output(1, tk, Dims{e.batch, e.hkv, total, e.d});
  v.set_output(2, t2, Dims{e.batch, e.hkv, total, e.dv});
  v.set_output(3, t1, Dims{e.batch, e.hq, e.sq, total});
}

// FlexAttention (ai.onnx.preview 1): Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev], all
// of one type, Hq a multiple of Hkv -> Y [B, Hq, L, Ev]. The score_mod/prob_mod subgraphs keep
// the [B, Hq, L, S] shape (the kernel checks what they return).
void flex_attention(NodeView& v) {
  const loom_dtype_t t = v.dtype(0);
  for (size_t i = 1; i < 3; ++i)
    if (t != LOOM_DTYPE_UNDEFINED && v.dtype(i) != LOOM_DTYPE_UNDEFINED && v.dtype(i) != t)
      v.fail(std::string("Q, K and V must share a type, input ") + std::to_string(i) + " is " +
             sdk::dtype_name(v.dtype(i)) + " and Q " + sdk::dtype_name(t));
  for (size_t i = 0; i < 3; ++i)
    if (v.rank(i) >= 0 && v.rank(i) != 4)
      v.fail("Q, K and V must be 4-D, input " + std::to_string(i) + " has rank " +
             std::to_string(v.rank(i)));
  const auto dims = [&](size_t i) {
    std::optional<Dims> d = v.shape(i);
    return d ? *d : Dims(4, kUnknownDim);
  };
  const Dims q = dims(0), k = dims(1), val = dims(2);
  const int64_t batch =
      merge_dim(v, merge_dim(v, q[0], k[0], "Q and K batch sizes"), val[0], "Q and V batch sizes");
  const int64_t hkv = merge_dim(v, k[1], val[1], "K and V head counts");
  if (q[1] >= 0 && hkv > 0 && q[1] % hkv != 0)
    v.fail("Q's " + std::to_string(q[1]) + " heads are not a multiple of K's " +
           std::to_string(hkv));
  merge_dim(v, k[2], val[2], "K and V sequence lengths");
  merge_dim(v, q[3], k[3], "Q and K head sizes");
  v.set_output(0, t, Dims{batch, q[1], q[2], val[3]});
}

const InferEntry kEntries[] = {
    {"", "Attention", adapt<attention>, 23},
    {"ai.onnx.preview", "FlexAttention", adapt<flex_attention>, 1},
};

}  // namespace

std::span<const InferEntry> attention_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
