// LinearAttention (opset 27): the recurrent form of linear attention, token by token.
//
//   query [B, T, Hq*dk], key [B, T, Hkv*dk], value [B, T, Hkv*dv] (heads packed in the last
//   axis); past_state [B, Hkv, dk, dv] (optional, zeros when omitted); decay [B, T, Hkv] (one
//   log-gate per head) or [B, T, Hkv*dk] (one per key dimension), required by the gated rules
//   and refused by the others; beta [B, T, Hkv] or [B, T, 1], required by the delta rules and
//   refused by the others. Per token t of each key/value head, with S the dk x dv state:
//     gated rules:  S *= exp(g_t)                      (row d scaled by exp(g_t[d]))
//     delta rules:  v_t <- beta_t * (v_t - S^T k_t)   (read after the decay)
//     all rules:    S += k_t v_t^T ;  o_t = scale * q_t^T S   for every query head of the group
//   Query head h reads key/value head h / (Hq / Hkv). scale 0 means 1 / sqrt(dk).
//   Outputs: output [B, T, Hq*dv] in the inputs' type, present_state (the final S) in
//   past_state's type, or the inputs' when past_state is omitted.
//
// The arithmetic follows the ONNX reference: every input is widened to float32 and the state
// and the products stay in float32 whatever the storage types (float64 inputs, outside the
// schema's types, compute in double); only the two outputs round to their storage types.
// chunk_size is a tuning hint of chunk-parallel implementations: the token-by-token recurrence
// is the definition, so it is ignored.
//
// Work is split by (batch, key/value head): each task owns its state and writes the output
// columns of its group's query heads, so no two tasks touch the same memory.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "nn_common.hpp"

namespace loom::cpu {
namespace {

struct Geometry {
  size_t batch = 0, seq = 0, q_heads = 0, kv_heads = 0, dk = 0, dv = 0;
  bool gated = false, delta = false;
  bool decay_per_key = false;  // decay [B, T, Hkv*dk] rather than [B, T, Hkv]
  bool beta_per_head = false;  // beta [B, T, Hkv] rather than [B, T, 1]
  double scale = 0;
};

std::string shape_of(const loom_tensor_t& t) {
  return sdk::shape_text(sdk::shape_of(t));
}

// Reads the attributes and checks every input against the others; fails on any inconsistency
// before anything is allocated.
Geometry geometry_of(const KernelContext& ctx) {
  const Attributes& a = ctx.attrs();
  Geometry g;
  const std::string rule = a.get_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": update_rule '" + rule +
                                       "' is not 'linear', 'gated', 'delta' or 'gated_delta'");
  g.gated = rule == "gated" || rule == "gated_delta";
  g.delta = rule == "delta" || rule == "gated_delta";
  if (!a.has("q_num_heads") || !a.has("kv_num_heads"))
    fail(LOOM_ERROR_INVALID_MODEL,
         ctx.where() + ": the q_num_heads and kv_num_heads attributes are required");
  const int64_t hq = a.get_int("q_num_heads", 0);
  const int64_t hkv = a.get_int("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": q_num_heads " + std::to_string(hq) +
                                       " must be a positive multiple of kv_num_heads " +
                                       std::to_string(hkv));

  const loom_tensor_t& q = ctx.required_input(0);
  const loom_tensor_t& k = ctx.required_input(1);
  const loom_tensor_t& v = ctx.required_input(2);
  const loom_tensor_t* past = ctx.input(3);
  const loom_tensor_t* decay = ctx.input(4);
  const loom_tensor_t* beta = ctx.input(5);
  nn::require_same_dtype(ctx, {1, 2, 4, 5});
  if (g.gated != (decay != nullptr))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": update_rule '" + rule + "' " +
                                       (g.gated ? "requires" : "does not take") +
                                       " the decay input");
  if (g.delta != (beta != nullptr))
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": update_rule '" + rule + "' " +
                                       (g.delta ? "requires" : "does not take") +
                                       " the beta input");

  const std::string shapes =
      " (query " + shape_of(q) + ", key " + shape_of(k) + ", value " + shape_of(v) + ")";
  if (q.rank != 3 || k.rank != 3 || v.rank != 3)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": query, key and value must be 3-D [batch, sequence, heads*size]" + shapes);
  if (k.dims[0] != q.dims[0] || v.dims[0] != q.dims[0] || k.dims[1] != q.dims[1] ||
      v.dims[1] != q.dims[1])
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": query, key and value differ in batch or sequence length" + shapes);
  if (q.dims[2] % hq != 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": query's last extent " + std::to_string(q.dims[2]) +
             " is not a multiple of q_num_heads " + std::to_string(hq));
  const int64_t dk = q.dims[2] / hq;
  // dk <= q.dims[2] and hkv <= hq, so the product cannot overflow.
  if (k.dims[2] != hkv * dk)
    fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": key's last extent " +
                                          std::to_string(k.dims[2]) + " must be kv_num_heads * " +
                                          "head size = " + std::to_string(hkv) + " * " +
                                          std::to_string(dk) + shapes);
  if (v.dims[2] % hkv != 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": value's last extent " + std::to_string(v.dims[2]) +
             " is not a multiple of kv_num_heads " + std::to_string(hkv));
  const int64_t dv = v.dims[2] / hkv;
  const int64_t B = q.dims[0], T = q.dims[1];

  if (past && (past->rank != 4 || past->dims[0] != B || past->dims[1] != hkv ||
               past->dims[2] != dk || past->dims[3] != dv))
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         ctx.where() + ": past_state " + shape_of(*past) + " must be [" + std::to_string(B) + ", " +
             std::to_string(hkv) + ", " + std::to_string(dk) + ", " + std::to_string(dv) +
             "] (batch, kv_num_heads, key head size, value head size)");
  if (decay) {
    // A per-head decay is the reading the reference tries first (they agree when dk is 1).
    const int64_t last = decay->rank == 3 ? decay->dims[2] : -1;
    if (decay->rank != 3 || decay->dims[0] != B || decay->dims[1] != T ||
        (last != hkv && last != hkv * dk))
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": decay " + shape_of(*decay) + " must be [" +
                                            std::to_string(B) + ", " + std::to_string(T) + ", " +
                                            std::to_string(hkv) + "] (per head) or [" +
                                            std::to_string(B) + ", " + std::to_string(T) + ", " +
                                            std::to_string(hkv * dk) + "] (per key dimension)");
    g.decay_per_key = last != hkv;
  }
  if (beta) {
    const int64_t last = beta->rank == 3 ? beta->dims[2] : -1;
    if (beta->rank != 3 || beta->dims[0] != B || beta->dims[1] != T || (last != hkv && last != 1))
      fail(LOOM_ERROR_INVALID_ARGUMENT, ctx.where() + ": beta " + shape_of(*beta) + " must be [" +
                                            std::to_string(B) + ", " + std::to_string(T) + ", " +
                                            std::to_string(hkv) + "] or [" + std::to_string(B) +
                                            ", " + std::to_string(T) + ", 1]");
    g.beta_per_head = last == hkv && hkv != 1;
  }

  g.batch = static_cast<size_t>(B);
  g.seq = static_cast<size_t>(T);
  g.q_heads = static_cast<size_t>(hq);
  g.kv_heads = static_cast<size_t>(hkv);
  g.dk = static_cast<size_t>(dk);
  g.dv = static_cast<size_t>(dv);
  const float scale = a.get_float("scale", 0.0f);
  // The reference's default 1/sqrt(dk) is a float64 scalar; an explicit scale is a float32.
  // Both multiply a float32 sum, in double here: exact for a float32 scale, so rounding the
  // product to float32 gives the reference's float32 multiplication too.
  g.scale = scale == 0.0f ? 1.0 / std::sqrt(static_cast<double>(dk)) : static_cast<double>(scale);
  return g;
}

template <typename T>
void linear_attention(KernelContext& ctx, const Geometry& g) {
  using C = nn::compute_t<T>;
  const loom_tensor_t& q_t = ctx.required_input(0);
  const loom_tensor_t* past = ctx.input(3);
  const loom_tensor_t* decay_t = ctx.input(4);
  const loom_tensor_t* beta_t = ctx.input(5);
  const T* q = sdk::data_of<const T>(q_t);
  const T* k = sdk::data_of<const T>(ctx.required_input(1));
  const T* v = sdk::data_of<const T>(ctx.required_input(2));
  const T* decay = decay_t ? sdk::data_of<const T>(*decay_t) : nullptr;
  const T* beta = beta_t ? sdk::data_of<const T>(*beta_t) : nullptr;

  const int64_t B = static_cast<int64_t>(g.batch), L = static_cast<int64_t>(g.seq),
                Hkv = static_cast<int64_t>(g.kv_heads), Dk = static_cast<int64_t>(g.dk),
                Dv = static_cast<int64_t>(g.dv);
  // The state's extents come from two different inputs, so dk * dv can be far larger than any
  // input: count and check it against the run's limits before allocating anything.
  const int64_t state_dims[4] = {B, Hkv, Dk, Dv};
  const std::optional<int64_t> state_count = sdk::try_element_count(state_dims);
  const std::optional<size_t> state_bytes =
      state_count ? sdk::try_byte_size(*state_count, sizeof(C)) : std::nullopt;
  if (!state_bytes)
    fail(LOOM_ERROR_LIMIT_EXCEEDED,
         ctx.where() + ": the state " + sdk::shape_text(state_dims) + " is too large");
  check_scratch_bytes(*state_bytes, ctx.where() + ": the state " + sdk::shape_text(state_dims));

  // q_num_heads is an attribute, bounded by no tensor when dk is 0: Hq * dv may overflow.
  const std::optional<int64_t> out_hidden = sdk::checked_mul(static_cast<int64_t>(g.q_heads), Dv);
  if (!out_hidden)
    fail(LOOM_ERROR_LIMIT_EXCEEDED, ctx.where() + ": q_num_heads * value head size overflows");
  const int64_t out_dims[3] = {B, L, *out_hidden};
  T* out = sdk::data_of<T>(ctx.allocate_output(0, q_t.dtype, out_dims));
  const loom_dtype_t state_type = past ? past->dtype : q_t.dtype;
  loom_tensor_t* present =
      ctx.output_requested(1) ? &ctx.allocate_output(1, state_type, state_dims) : nullptr;

  // Nothing to compute. Otherwise every loop below is bounded by the state or the output, both
  // allocated (and checked) above: an empty state with a non-empty output means dk is 0, and
  // then the tasks are no more than the output's elements.
  if (*state_count == 0 && sdk::element_count(std::span<const int64_t>(out_dims)) == 0) return;

  std::vector<C> state(static_cast<size_t>(*state_count), C(0));
  if (past)
    dispatch<kFloats>(past->dtype, ctx.where() + " past_state", [&]<typename S>() {
      const S* src = sdk::data_of<const S>(*past);
      for (size_t i = 0; i < state.size(); ++i) state[i] = convert<C>(src[i]);
    });

  const size_t group = g.q_heads / g.kv_heads;
  const size_t q_stride = g.q_heads * g.dk, k_stride = g.kv_heads * g.dk,
               v_stride = g.kv_heads * g.dv, o_stride = g.q_heads * g.dv;
  const size_t decay_stride = g.decay_per_key ? k_stride : g.kv_heads;
  const size_t beta_stride = g.beta_per_head ? g.kv_heads : 1;
  nn::parallel_range(ctx, g.batch * g.kv_heads, 1, [&](size_t t0, size_t t1) {
    std::vector<C> kt(g.dk), vt(g.dv), acc(g.dv), gate(g.dk);
    for (size_t task = t0; task < t1; ++task) {
      const size_t b = task / g.kv_heads, kvh = task % g.kv_heads;
      C* S = state.data() + task * g.dk * g.dv;
      for (size_t t = 0; t < g.seq; ++t) {
        const size_t token = b * g.seq + t;
        const T* k_row = k + token * k_stride + kvh * g.dk;
        const T* v_row = v + token * v_stride + kvh * g.dv;
        for (size_t d = 0; d < g.dk; ++d) kt[d] = convert<C>(k_row[d]);
        for (size_t m = 0; m < g.dv; ++m) vt[m] = convert<C>(v_row[m]);
        if (g.gated) {
          const T* g_row = decay + token * decay_stride;
          for (size_t d = 0; d < g.dk; ++d)
            gate[d] = std::exp(convert<C>(g.decay_per_key ? g_row[kvh * g.dk + d] : g_row[kvh]));
          for (size_t d = 0; d < g.dk; ++d)
            for (size_t m = 0; m < g.dv; ++m) S[d * g.dv + m] *= gate[d];
        }
        if (g.delta) {
          // What the (decayed) state already returns for k_t; only the difference is written.
          std::fill(acc.begin(), acc.end(), C(0));
          for (size_t d = 0; d < g.dk; ++d)
            for (size_t m = 0; m < g.dv; ++m) acc[m] += S[d * g.dv + m] * kt[d];
          const C rate = convert<C>(beta[token * beta_stride + (g.beta_per_head ? kvh : 0)]);
          for (size_t m = 0; m < g.dv; ++m) vt[m] = rate * (vt[m] - acc[m]);
        }
        for (size_t d = 0; d < g.dk; ++d)
          for (size_t m = 0; m < g.dv; ++m) S[d * g.dv + m] += kt[d] * vt[m];
        for (size_t h = kvh * group; h < (kvh + 1) * group; ++h) {
          const T* q_row = q + token * q_stride + h * g.dk;
          std::fill(acc.begin(), acc.end(), C(0));
          for (size_t d = 0; d < g.dk; ++d) {
            const C qd = convert<C>(q_row[d]);
            for (size_t m = 0; m < g.dv; ++m) acc[m] += qd * S[d * g.dv + m];
          }
          T* o_row = out + token * o_stride + h * g.dv;
          for (size_t m = 0; m < g.dv; ++m)
            o_row[m] = convert<T>(static_cast<C>(static_cast<double>(acc[m]) * g.scale));
        }
      }
    }
  });

  if (present)
    dispatch<kFloats>(state_type, ctx.where() + " present_state", [&]<typename S>() {
      S* dst = sdk::data_of<S>(*present);
      for (size_t i = 0; i < state.size(); ++i) dst[i] = convert<S>(state[i]);
    });
}

void linear_attention_kernel(KernelContext& ctx) {
  const Geometry g = geometry_of(ctx);
  dispatch<kFloats>(ctx.required_input(0).dtype, ctx,
                    [&]<typename T>() { linear_attention<T>(ctx, g); });
}

}  // namespace

LOOM_CPU_KERNEL("LinearAttention", 27, linear_attention_kernel, nullptr);

}  // namespace loom::cpu
