// RotaryEmbedding (opset 23) on the onednn device: rotates the pairs (x1, x2) of each head's
// first rotary_embedding_dim elements (the two halves, or adjacent elements when interleaved)
// by the angle whose cos/sin the caches hold for the token's position. The cpu device's kernel
// (plugins/devices/cpu/kernels/transformer.cpp) is the reference.
//
// Here so that a decoder layer stays one onednn subgraph: on the cpu device the two rotations
// of a layer cut it into three (each cut costs the core a dispatch per run, ~10% of a decode
// step of a small model). position_ids are int64, a type oneDNN has no memory for: such a
// graph input is held as its bytes (Builder::slot_of), and only this kernel reads them.
#include <cstring>

#include "builder.hpp"

namespace loom::onednn {
namespace {

enum : int { kArgX = DNNL_ARG_MULTIPLE_SRC, kArgCos, kArgSin, kArgIds, kArgY = DNNL_ARG_DST };

struct Rotary {
  int64_t batch = 0, seq = 0, heads = 0, head = 0, half = 0;
  int64_t stride_b = 0, stride_s = 0, stride_h = 0;  // of X, in elements
  bool interleaved = false;
  // With position_ids: the caches are [max_position, width] and ids [ids_b, ids_s] (extents 1
  // broadcast). Without: the caches are [cache_b, cache_s, width].
  bool with_ids = false;
  int64_t width = 0, max_position = 0, ids_b = 0, ids_s = 0, cache_b = 0, cache_s = 0;
};

std::optional<Rotary> rotary_of(const std::vector<int64_t>& x, const std::vector<int64_t>& cache,
                                const std::vector<int64_t>* ids, int64_t num_heads,
                                int64_t rotary_attr, bool interleaved) {
  Rotary r;
  r.interleaved = interleaved;
  if (x.size() == 4) {
    r.batch = x[0];
    r.heads = x[1];
    r.seq = x[2];
    r.head = x[3];
    r.stride_s = r.head;
    r.stride_h = r.seq * r.head;
    r.stride_b = r.heads * r.stride_h;
  } else if (x.size() == 3) {
    if (num_heads <= 0 || x[2] % num_heads) return std::nullopt;
    r.batch = x[0];
    r.seq = x[1];
    r.heads = num_heads;
    r.head = x[2] / num_heads;
    r.stride_h = r.head;
    r.stride_s = x[2];
    r.stride_b = r.seq * x[2];
  } else {
    return std::nullopt;
  }
  const int64_t rotary_dim = rotary_attr > 0 ? rotary_attr : r.head;
  if (rotary_attr < 0 || rotary_dim > r.head || rotary_dim % 2) return std::nullopt;
  r.half = rotary_dim / 2;
  r.with_ids = ids != nullptr;
  if (cache.size() != (r.with_ids ? 2u : 3u) || cache.back() < r.half) return std::nullopt;
  r.width = cache.back();
  auto fits = [](int64_t extent, int64_t want) { return extent == want || extent == 1; };
  if (r.with_ids) {
    if (ids->size() != 2 || !fits((*ids)[0], r.batch) || !fits((*ids)[1], r.seq))
      return std::nullopt;
    r.max_position = cache[0];
    r.ids_b = (*ids)[0];
    r.ids_s = (*ids)[1];
  } else {
    if (!fits(cache[0], r.batch) || !fits(cache[1], r.seq)) return std::nullopt;
    r.cache_b = cache[0];
    r.cache_s = cache[1];
  }
  return r;
}

void run_rotary(const Rotary& r, const float* x, const float* cos, const float* sin,
                const int64_t* ids, float* y) {
  // The caches' row of every token, checked before the parallel loop (an error cannot leave an
  // OpenMP region).
  std::vector<int64_t> rows(static_cast<size_t>(r.batch * r.seq));
  for (int64_t b = 0; b < r.batch; ++b)
    for (int64_t s = 0; s < r.seq; ++s) {
      int64_t row;
      if (r.with_ids) {
        row = ids[(r.ids_b == 1 ? 0 : b) * r.ids_s + (r.ids_s == 1 ? 0 : s)];
        if (row < 0 || row >= r.max_position)
          sdk::fail(LOOM_ERROR_INVALID_ARGUMENT,
                    "RotaryEmbedding: position id " + std::to_string(row) +
                        " is outside the caches' " + std::to_string(r.max_position) +
                        " positions; pass ids in [0, " + std::to_string(r.max_position) + ")");
      } else {
        row = (r.cache_b == 1 ? 0 : b) * r.cache_s + (r.cache_s == 1 ? 0 : s);
      }
      rows[static_cast<size_t>(b * r.seq + s)] = row;
    }
  const int64_t tokens = r.batch * r.seq, half = r.half, head = r.head;
  const int64_t step = r.interleaved ? 2 : 1, other = r.interleaved ? 1 : half;
#pragma omp parallel for schedule(static) if (tokens * r.heads * head >= (int64_t{1} << 15))
  for (int64_t t = 0; t < tokens; ++t) {
    const float* c = cos + rows[static_cast<size_t>(t)] * r.width;
    const float* sn = sin + rows[static_cast<size_t>(t)] * r.width;
    const int64_t b = t / r.seq, s = t % r.seq;
    for (int64_t h = 0; h < r.heads; ++h) {
      const int64_t base = b * r.stride_b + s * r.stride_s + h * r.stride_h;
      const float* in = x + base;
      float* out = y + base;
      // The pair of element i: i (first half) and i + half, or 2i and 2i + 1.
#pragma omp simd
      for (int64_t i = 0; i < half; ++i) {
        const float x1 = in[i * step], x2 = in[i * step + other];
        out[i * step] = c[i] * x1 - sn[i] * x2;
        out[i * step + other] = sn[i] * x1 + c[i] * x2;
      }
      if (2 * half < head)
        std::memcpy(out + 2 * half, in + 2 * half,
                    static_cast<size_t>(head - 2 * half) * sizeof(float));
    }
  }
}

void emit_rotary(Builder& b, int node) {
  IrGraph& g = b.ir();
  const IrNode& n = g.nodes[node];
  sdk::Attributes attrs(*n.view);
  const int ids = g.in(n, 3);
  const std::optional<Rotary> r =
      rotary_of(g.value(n.inputs[0]).dims, g.value(n.inputs[1]).dims,
                ids >= 0 ? &g.value(ids).dims : nullptr, attrs.get_int("num_heads", 0),
                attrs.get_int("rotary_embedding_dim", 0), attrs.get_int("interleaved", 0) != 0);
  if (!r) sdk::fail(LOOM_ERROR_INTERNAL, "onednn RotaryEmbedding: shapes the check refused");
  // The kernel reads f32 (a bf16 producer's result is converted once).
  constexpr dnnl::memory::data_type f32 = dnnl::memory::data_type::f32;
  std::vector<std::pair<int, int>> args{{kArgX, b.as_plain(n.inputs[0], f32)},
                                        {kArgCos, b.as_plain(n.inputs[1], f32)},
                                        {kArgSin, b.as_plain(n.inputs[2], f32)}};
  // Constant ids are copied into the step; others are read where the input's bytes are.
  std::vector<int64_t> constant_ids;
  if (ids >= 0 && g.value(ids).constant()) {
    const IrValue& v = g.value(ids);
    constant_ids.resize(static_cast<size_t>(v.elements()));
    std::memcpy(constant_ids.data(), v.data, constant_ids.size() * sizeof(int64_t));
  } else if (ids >= 0) {
    args.emplace_back(kArgIds, b.slot_of(ids));
  }
  const int y = n.outputs[0];
  args.emplace_back(kArgY, b.define(y, plain_md(g.value(y).dims, dnnl::memory::data_type::f32)));
  b.add_kernel_step(
      [rotary = *r, constant_ids](const std::unordered_map<int, dnnl::memory>& mem) {
        auto data = [&](int arg) -> void* {
          auto it = mem.find(arg);
          return it == mem.end() ? nullptr : it->second.get_data_handle();
        };
        const auto* ids =
            constant_ids.empty() ? static_cast<const int64_t*>(data(kArgIds)) : constant_ids.data();
        run_rotary(rotary, static_cast<const float*>(data(kArgX)),
                   static_cast<const float*>(data(kArgCos)),
                   static_cast<const float*>(data(kArgSin)), ids, static_cast<float*>(data(kArgY)));
      },
      args, "RotaryEmbedding " + std::string(n.view->name) + " [loom rotary]", "loom rotary");
}

std::string check_rotary(const loom_graph_t& graph, const loom_node_t& node) {
  sdk::Attributes attrs(node);
  Info x = sdk::node_input(graph, node, 0), cos = sdk::node_input(graph, node, 1),
       sin = sdk::node_input(graph, node, 2);
  Info ids = node.num_inputs > 3 && node.inputs[3] >= 0 ? sdk::node_input(graph, node, 3) : nullptr;
  if (!known_shape(x) || !known_shape(cos) || !known_shape(sin) || (ids && !known_shape(ids)))
    return "shape unknown";
  if (dims_of(cos) != dims_of(sin)) return "the caches differ in shape";
  if (ids && ids->dtype != LOOM_DTYPE_INT64) return "position_ids not int64";
  if (ids && ids->data == nullptr && (ids->flags & LOOM_VALUE_CONSTANT))
    return "position_ids a constant without bytes";
  const std::vector<int64_t> id_dims = ids ? dims_of(ids) : std::vector<int64_t>{};
  if (!rotary_of(dims_of(x), dims_of(cos), ids ? &id_dims : nullptr, attrs.get_int("num_heads", 0),
                 attrs.get_int("rotary_embedding_dim", 0), attrs.get_int("interleaved", 0) != 0))
    return "inconsistent shapes";
  return "";
}

}  // namespace

LOOM_ONEDNN_OP("RotaryEmbedding", check_rotary, emit_rotary);

}  // namespace loom::onednn
