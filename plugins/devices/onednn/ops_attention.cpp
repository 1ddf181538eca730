// Attention (opsets 23 to 25) on the onednn device: softmax(Q K^T * scale + bias) V per head,
// with grouped-query heads, past/present key-value caches, attn_mask (float or bool), is_causal,
// softcap and opset 25's sliding window; the cpu device's kernel (plugins/devices/cpu/kernels/
// attention.cpp) is the reference it is tested against.
//
// oneDNN 2.6 has no attention primitive, and one built from its matmul and softmax primitives
// would hold the whole [heads, queries, keys] score tensor and compute the causally masked half
// of it for nothing. This kernel works per (batch, key/value head, block of query rows): the
// block's rows of all query heads that share the key/value head are scored together against
// only the keys the causal or window bound leaves them, so each key block is read once per
// group, not once per query head; the products are oneDNN's sgemm (jit kernels on any x86
// CPU) and the softmax the device's row kernel (softmax_rows.hpp). Scratch per thread: the
// block's scores, linear in the key count.
//
// Claimed for float32 tensors; left to the cpu device: softmax_precision other than float,
// the qk_matmul_output output, opset 24's nonpad_kv_seqlen, and inconsistent shapes (whose
// errors the cpu kernel words).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "builder.hpp"
#include "softmax_rows.hpp"

namespace loom::onednn {
namespace {

// Arg ids of the kernel step (any distinct ints: the step's map is all that reads them).
enum : int {
  kArgQ = DNNL_ARG_MULTIPLE_SRC,
  kArgK,
  kArgV,
  kArgMask,
  kArgPastK,
  kArgPastV,
  kArgY = DNNL_ARG_MULTIPLE_DST,
  kArgPresentK,
  kArgPresentV,
};

// Query rows per task, times the group size: enough rows that a key block read into cache
// serves many of them, few enough that a prompt still splits into several tasks per thread.
constexpr int64_t kRowsPerTask = 128;

struct Shape {
  bool three_d = false;
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, past = 0, total = 0,
          head = 0, v_head = 0;
  int64_t group() const { return q_heads / kv_heads; }
};

struct Params {
  float scale = 0, softcap = 0;
  bool causal = false;
  int64_t left = -1, right = -1;
  // attn_mask, broadcast to [B, Hq, Sq, *] by these element strides (0 where broadcast); keys
  // at or past mask_len are masked.
  bool has_mask = false, bool_mask = false;
  int64_t mask_len = 0, stride_b = 0, stride_h = 0, stride_i = 0;
};

std::optional<Shape> shape_of(const std::vector<std::vector<int64_t>>& in, int64_t q_heads_attr,
                              int64_t kv_heads_attr) {
  const std::vector<int64_t>&q = in[0], &k = in[1], &v = in[2];
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4))
    return std::nullopt;
  Shape s;
  s.three_d = q.size() == 3;
  if (s.three_d) {
    if (q_heads_attr <= 0 || kv_heads_attr <= 0 || q[2] % q_heads_attr || k[2] % kv_heads_attr ||
        v[2] % kv_heads_attr)
      return std::nullopt;
    s.q_heads = q_heads_attr;
    s.kv_heads = kv_heads_attr;
    s.q_len = q[1];
    s.kv_len = k[1];
    s.head = q[2] / q_heads_attr;
    if (k[2] / kv_heads_attr != s.head || v[1] != k[1]) return std::nullopt;
    s.v_head = v[2] / kv_heads_attr;
  } else {
    if (k[1] != v[1] || k[2] != v[2] || k[3] != q[3]) return std::nullopt;
    s.q_heads = q[1];
    s.kv_heads = k[1];
    s.q_len = q[2];
    s.kv_len = k[2];
    s.head = q[3];
    s.v_head = v[3];
  }
  if (k[0] != q[0] || v[0] != q[0] || s.kv_heads <= 0 || s.q_heads % s.kv_heads)
    return std::nullopt;
  s.batch = q[0];
  if (!in[4].empty() || !in[5].empty()) {
    const std::vector<int64_t>&pk = in[4], &pv = in[5];
    if (pk.size() != 4 || pv.size() != 4 || pk[0] != s.batch || pv[0] != s.batch ||
        pk[1] != s.kv_heads || pv[1] != s.kv_heads || pk[2] != pv[2] || pk[3] != s.head ||
        pv[3] != s.v_head)
      return std::nullopt;
    s.past = pk[2];
  }
  s.total = s.past + s.kv_len;
  return s;
}

// Fills the mask fields of `p` from attn_mask's dims, or returns false when they do not
// broadcast to [B, Hq, Sq, total] (the last extent may be shorter: the keys past it are masked).
bool mask_strides(const std::vector<int64_t>& m, const Shape& s, Params& p) {
  if (m.empty() || m.size() > 4) return false;
  const int64_t target[4] = {s.batch, s.q_heads, s.q_len, s.total};
  const size_t lead = 4 - m.size();
  if (m.back() > s.total) return false;
  int64_t strides[3] = {0, 0, 0};
  int64_t stride = m.back();
  for (size_t d = 3; d-- > lead;) {
    const int64_t extent = m[d - lead];
    if (extent != 1 && extent != target[d]) return false;
    if (extent != 1) strides[d] = stride;
    stride *= extent;
  }
  p.has_mask = true;
  p.mask_len = m.back();
  p.stride_b = strides[0];
  p.stride_h = strides[1];
  p.stride_i = strides[2];
  return true;
}

// The input dims the checks and the emitter read (empty for an omitted input).
template <typename DimsOf>
std::vector<std::vector<int64_t>> input_dims(size_t count, DimsOf dims_of_input) {
  std::vector<std::vector<int64_t>> in(6);
  for (size_t i = 0; i < 6 && i < count; ++i) in[i] = dims_of_input(i);
  return in;
}

// Copies a [B, S, H*D] (three_d) or [B, H, S, D] tensor's rows of head `h`, batch `b` into
// dst[at, at + S) of a [S', D] head-major block.
void gather_head(const float* src, bool three_d, int64_t b, int64_t h, int64_t heads, int64_t len,
                 int64_t width, float* dst) {
  if (!three_d) {
    std::memcpy(dst, src + (b * heads + h) * len * width,
                static_cast<size_t>(len * width) * sizeof(float));
    return;
  }
  for (int64_t s = 0; s < len; ++s)
    std::memcpy(dst + s * width, src + ((b * len + s) * heads + h) * width,
                static_cast<size_t>(width) * sizeof(float));
}

// One scratch area per thread, grown to the largest task it has run (bounded by the scores of
// kRowsPerTask rows against every key of the largest plan).
float* scratch(size_t floats) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer.data();
}

struct Buffers {
  const float *q, *k, *v, *mask, *past_k, *past_v;
  float *y, *present_k, *present_v;
};

void sgemm(char transb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (dnnl_sgemm('N', transb, m, n, k, alpha, a, lda, b, ldb, 0.f, c, ldc) != dnnl_success)
    sdk::fail(LOOM_ERROR_INTERNAL, "onednn Attention: sgemm failed");
}

void run_attention(const Shape& s, const Params& p, const Buffers& io) {
  const int64_t G = s.group(), D = s.head, Dv = s.v_head, T = s.total;
  // Keys and values: from the present outputs (written first: past, then the new ones) when
  // there is a past or those are outputs, else where K and V are ([B, S, H*D] rows need a
  // stride, [B, H, S, D] none).
  const bool from_present = io.present_k != nullptr;
  if (from_present) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.kv_heads; ++h) {
        const int64_t bh = b * s.kv_heads + h;
        float* pk = io.present_k + bh * T * D;
        float* pv = io.present_v + bh * T * Dv;
        if (s.past) {
          std::memcpy(pk, io.past_k + bh * s.past * D, static_cast<size_t>(s.past * D) * 4);
          std::memcpy(pv, io.past_v + bh * s.past * Dv, static_cast<size_t>(s.past * Dv) * 4);
        }
        gather_head(io.k, s.three_d, b, h, s.kv_heads, s.kv_len, D, pk + s.past * D);
        gather_head(io.v, s.three_d, b, h, s.kv_heads, s.kv_len, Dv, pv + s.past * Dv);
      }
  }
  const int64_t k_ld = from_present || !s.three_d ? D : s.kv_heads * D;
  const int64_t v_ld = from_present || !s.three_d ? Dv : s.kv_heads * Dv;
  auto keys = [&](int64_t b, int64_t h) -> const float* {
    if (from_present) return io.present_k + (b * s.kv_heads + h) * T * D;
    return s.three_d ? io.k + b * T * s.kv_heads * D + h * D : io.k + (b * s.kv_heads + h) * T * D;
  };
  auto values = [&](int64_t b, int64_t h) -> const float* {
    if (from_present) return io.present_v + (b * s.kv_heads + h) * T * Dv;
    return s.three_d ? io.v + b * T * s.kv_heads * Dv + h * Dv
                     : io.v + (b * s.kv_heads + h) * T * Dv;
  };

  const int64_t rows = std::max<int64_t>(1, std::min(s.q_len, kRowsPerTask / G));
  const int64_t blocks = (s.q_len + rows - 1) / rows;
  const int64_t tasks = s.batch * s.kv_heads * blocks;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t b = task / (s.kv_heads * blocks), h = task / blocks % s.kv_heads;
    const int64_t i0 = task % blocks * rows, n = std::min(rows, s.q_len - i0), m = G * n;
    // Keys past the last row's causal or right-window bound are masked for every row here.
    int64_t keys_end = T;
    if (p.causal) keys_end = std::min(keys_end, s.past + i0 + n);
    if (p.right >= 0) keys_end = std::min(keys_end, s.past + i0 + n + p.right);
    keys_end = std::max<int64_t>(keys_end, 0);
    float* q = scratch(static_cast<size_t>(m * (D + Dv + keys_end)));
    float* out = q + m * D;
    float* scores = out + m * Dv;
    // Row (g, r) is query i0 + r of head h * G + g.
    for (int64_t g = 0; g < G; ++g) {
      const int64_t hq = h * G + g;
      for (int64_t r = 0; r < n; ++r) {
        const int64_t i = i0 + r;
        const float* src = s.three_d ? io.q + ((b * s.q_len + i) * s.q_heads + hq) * D
                                     : io.q + ((b * s.q_heads + hq) * s.q_len + i) * D;
        std::memcpy(q + (g * n + r) * D, src, static_cast<size_t>(D) * sizeof(float));
      }
    }
    if (keys_end > 0) sgemm('T', m, keys_end, D, p.scale, q, D, keys(b, h), k_ld, scores, keys_end);
    for (int64_t g = 0; g < G; ++g) {
      const int64_t hq = h * G + g;
      for (int64_t r = 0; r < n; ++r) {
        const int64_t i = i0 + r, pos = s.past + i;
        float* row = scores + (g * n + r) * keys_end;
        if (p.softcap > 0)
          for (int64_t j = 0; j < keys_end; ++j) row[j] = p.softcap * std::tanh(row[j] / p.softcap);
        if (p.has_mask) {
          const int64_t at = b * p.stride_b + hq * p.stride_h + i * p.stride_i;
          const int64_t len = std::min(p.mask_len, keys_end);
          if (p.bool_mask) {
            const auto* mk = reinterpret_cast<const uint8_t*>(io.mask) + at;
            for (int64_t j = 0; j < len; ++j)
              if (!mk[j]) row[j] = kNegInf;
          } else {
            const float* mk = io.mask + at;
            for (int64_t j = 0; j < len; ++j) row[j] += mk[j];
          }
          for (int64_t j = len; j < keys_end; ++j) row[j] = kNegInf;
        }
        // The keys this row may see: [lo, hi) (causal: up to its own position; window: within
        // left/right of it). The softmax runs over them only; the rest weigh 0.
        int64_t lo = 0, hi = keys_end;
        if (p.causal) hi = std::min(hi, pos + 1);
        if (p.right >= 0) hi = std::min(hi, pos + p.right + 1);
        if (p.left >= 0) lo = std::max<int64_t>(lo, pos - p.left);
        if (lo >= hi) {
          std::fill(row, row + keys_end, 0.f);
          continue;
        }
        std::fill(row, row + lo, 0.f);
        std::fill(row + hi, row + keys_end, 0.f);
        softmax_row_inplace(row + lo, hi - lo);
      }
    }
    if (keys_end > 0)
      sgemm('N', m, Dv, keys_end, 1.f, scores, keys_end, values(b, h), v_ld, out, Dv);
    else
      std::fill(out, out + m * Dv, 0.f);
    for (int64_t g = 0; g < G; ++g) {
      const int64_t hq = h * G + g;
      for (int64_t r = 0; r < n; ++r) {
        const int64_t i = i0 + r;
        float* dst = s.three_d ? io.y + ((b * s.q_len + i) * s.q_heads + hq) * Dv
                               : io.y + ((b * s.q_heads + hq) * s.q_len + i) * Dv;
        std::memcpy(dst, out + (g * n + r) * Dv, static_cast<size_t>(Dv) * sizeof(float));
      }
    }
  }
}

void emit_attention(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  sdk::Attributes attrs(*n.view);
  const auto in = input_dims(n.inputs.size(), [&](size_t i) {
    return g.in(n, i) >= 0 ? g.value(n.inputs[i]).dims : std::vector<int64_t>{};
  });
  const std::optional<Shape> shape =
      shape_of(in, attrs.get_int("q_num_heads", 0), attrs.get_int("kv_num_heads", 0));
  if (!shape) sdk::fail(LOOM_ERROR_INTERNAL, "onednn Attention: shapes the check refused");
  const Shape s = *shape;
  Params p;
  p.scale = attrs.has("scale") ? attrs.get_float("scale", 1.f)
                               : static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.head)));
  p.softcap = attrs.get_float("softcap", 0.f);
  p.causal = attrs.get_int("is_causal", 0) != 0;
  if (n.opset >= 25) {
    p.left = attrs.get_int("left_window_size", -1);
    p.right = attrs.get_int("right_window_size", -1);
  }
  std::vector<std::pair<int, int>> args;
  auto input = [&](size_t i, int arg) {
    if (g.in(n, i) < 0) return;
    // The kernel reads float tensors as f32 (a bf16 product's result is converted once); a
    // boolean mask keeps its type.
    dnnl::memory::data_type type = b.md_of(n.inputs[i]).data_type();
    if (type == dnnl::memory::data_type::bf16) type = dnnl::memory::data_type::f32;
    args.emplace_back(arg, b.as_plain(n.inputs[i], type));
  };
  input(0, kArgQ);
  input(1, kArgK);
  input(2, kArgV);
  if (g.in(n, 3) >= 0) {
    mask_strides(in[3], s, p);
    p.bool_mask = g.value(n.inputs[3]).dtype == LOOM_DTYPE_BOOL;
    input(3, kArgMask);
  }
  // An empty past (the first step of a generation) is never read: it has no bytes to bind.
  if (s.past > 0) {
    input(4, kArgPastK);
    input(5, kArgPastV);
  }
  const int y = n.outputs[0];
  args.emplace_back(kArgY, b.define(y, plain_md(g.value(y).dims, dnnl::memory::data_type::f32)));
  // The caches are written whenever the products read them from there: with a past, the keys
  // are only contiguous once concatenated.
  const bool wants_present = s.past > 0 || (n.outputs.size() > 1 && n.outputs[1] >= 0) ||
                             (n.outputs.size() > 2 && n.outputs[2] >= 0);
  int present_k = -1, present_v = -1;
  if (wants_present) {
    for (int i : {1, 2}) {
      const std::vector<int64_t> dims{s.batch, s.kv_heads, s.total, i == 1 ? s.head : s.v_head};
      const dnnl::memory::desc md = plain_md(dims, dnnl::memory::data_type::f32);
      const int out = static_cast<size_t>(i) < n.outputs.size() ? n.outputs[i] : -1;
      // An output nothing asked for still needs bytes: a scratch slot bound to no value.
      const int slot = b.define(out, md);
      (i == 1 ? present_k : present_v) = slot;
    }
    args.emplace_back(kArgPresentK, present_k);
    args.emplace_back(kArgPresentV, present_v);
  }
  // A generation loop feeds each step's present cache back as the next past, one key longer
  // each time: the kernel takes the past length from the run, so the host need not compile
  // again per length (plugin ABI 1.8). Only where nothing else was compiled for that length:
  // the caches are graph inputs this node alone reads, the presents graph outputs nothing
  // reads, and no mask (its key extent is the compiled total).
  int past_axis = -1;
  if (s.past > 0 && g.in(n, 3) < 0 && n.outputs.size() > 2 && b.free_axis_allowed(n.inputs[4], 2) &&
      b.free_axis_allowed(n.inputs[5], 2) && n.inputs[4] != n.inputs[5] &&
      b.growing_output_allowed(n.outputs[1]) && b.growing_output_allowed(n.outputs[2])) {
    past_axis = b.free_input_axis(n.inputs[4], 2);
    const int past_v_axis = b.free_input_axis(n.inputs[5], 2);
    if (past_axis < 0 || past_v_axis != past_axis + 1)
      sdk::fail(LOOM_ERROR_INTERNAL, "onednn Attention: a free cache axis was refused");
    b.output_follows(n.outputs[1], 2, past_axis);
    b.output_follows(n.outputs[2], 2, past_v_axis);
  }
  b.add_kernel_step(
      [s, p, past_axis,
       extents = b.run_extents()](const std::unordered_map<int, dnnl::memory>& mem) {
        auto data = [&](int arg) -> float* {
          auto it = mem.find(arg);
          return it == mem.end() ? nullptr : static_cast<float*>(it->second.get_data_handle());
        };
        Shape run = s;
        if (past_axis >= 0) {
          run.past = (*extents)[static_cast<size_t>(past_axis)];
          if ((*extents)[static_cast<size_t>(past_axis) + 1] != run.past)
            sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                      "Attention: past_key holds " + std::to_string(run.past) +
                          " positions and past_value " +
                          std::to_string((*extents)[static_cast<size_t>(past_axis) + 1]) +
                          "; feed caches of one length");
          run.total = run.past + run.kv_len;
        }
        run_attention(
            run, p,
            Buffers{data(kArgQ), data(kArgK), data(kArgV), data(kArgMask), data(kArgPastK),
                    data(kArgPastV), data(kArgY), data(kArgPresentK), data(kArgPresentV)});
      },
      args, "Attention " + std::string(n.view->name) + " [loom attention]", "loom attention");
}

std::string check_attention(const loom_graph_t& graph, const loom_node_t& node) {
  sdk::Attributes attrs(node);
  if (node.num_outputs > 3 && node.outputs[3] >= 0) return "qk_matmul_output requested";
  if (attrs.has("softmax_precision") &&
      attrs.get_int("softmax_precision", LOOM_DTYPE_FLOAT32) != LOOM_DTYPE_FLOAT32)
    return "softmax_precision other than float";
  if (node.num_inputs > 6 && node.inputs[6] >= 0) return "nonpad_kv_seqlen";
  for (size_t i = 0; i < node.num_inputs && i < 6; ++i)
    if (node.inputs[i] >= 0 && !known_shape(sdk::node_input(graph, node, i)))
      return "input shape unknown";
  const auto in = input_dims(node.num_inputs, [&](size_t i) {
    return node.inputs[i] >= 0 ? dims_of(sdk::node_input(graph, node, i)) : std::vector<int64_t>{};
  });
  if ((node.num_inputs > 4 && node.inputs[4] >= 0) != (node.num_inputs > 5 && node.inputs[5] >= 0))
    return "past_key without past_value";
  const std::optional<Shape> s =
      shape_of(in, attrs.get_int("q_num_heads", 0), attrs.get_int("kv_num_heads", 0));
  if (!s) return "inconsistent shapes";
  if (s->head == 0 || s->v_head == 0 || s->q_len == 0 || s->kv_len == 0) return "empty tensor";
  Params p;
  if (node.num_inputs > 3 && node.inputs[3] >= 0 && !mask_strides(in[3], *s, p))
    return "attn_mask does not broadcast";
  if (node.opset >= 25 &&
      (attrs.get_int("left_window_size", -1) < -1 || attrs.get_int("right_window_size", -1) < -1))
    return "window size below -1";
  return "";
}

}  // namespace

LOOM_ONEDNN_OP("Attention", check_attention, emit_attention);

}  // namespace loom::onednn
