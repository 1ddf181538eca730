// MatMul (batched, numpy batch broadcasting) and Gemm through the matmul primitive. Constant
// weights are reordered once into the layout oneDNN picks (format_tag::any); a following
// bias Add becomes the primitive's bias, later activations (GELU included), scalings and the
// residual Add become post-ops.
#include <tuple>

#include "builder.hpp"
#include "matvec.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

namespace {

// A constant that broadcasts along everything but the last axis (extent n): a bias.
bool is_bias_like(const IrGraph& g, int value, int64_t n) {
  if (value < 0 || !g.value(value).constant()) return false;
  const std::vector<int64_t>& d = g.value(value).dims;
  if (d.empty() || d.back() != n) return false;
  for (size_t i = 0; i + 1 < d.size(); ++i)
    if (d[i] != 1) return false;
  return g.value(value).dtype == LOOM_DTYPE_FLOAT32;
}

// Row-major view of a matrix operand; `transposed` swaps the last two axes.
dnnl::memory::desc matrix_view(const std::vector<int64_t>& dims, dt type, bool transposed) {
  dnnl::memory::dims strides = row_major_strides(dims);
  std::vector<int64_t> d = dims;
  size_t r = d.size();
  if (transposed) {
    std::swap(d[r - 1], d[r - 2]);
    std::swap(strides[r - 1], strides[r - 2]);
  }
  return dnnl::memory::desc(d, type, strides);
}

struct MatmulPlan {
  int a = -1, b = -1, y = -1;
  bool trans_a = false, trans_b = false;
  float alpha = 1.f;
  int bias = -1;  // constant bias value ([.., N])
  float bias_scale = 1.f;
  std::vector<FusionCandidate> cands;
  size_t leading = 0;   // cands consumed before post-ops (a bias Add)
  size_t required = 0;  // post-ops that must be fused (Gemm's C)
};

// One row times a constant matrix in f32 (a batch-1 classifier): matvec.hpp's kernel, which
// streams the weights from memory 2-3x faster than oneDNN's matmul does. Gemm's C must be a
// bias (or absent); followers stay separate nodes.
bool matvec_applies(Builder& bld, const MatmulPlan& p) {
  IrGraph& g = bld.ir();
  if (bld.compute_type() != dt::f32 || p.required != 0 || !g.value(p.b).constant()) return false;
  const std::vector<int64_t>& ad = g.value(p.a).dims;
  const std::vector<int64_t>& bd = g.value(p.b).dims;
  if (ad.empty() || bd.size() < 2) return false;
  int64_t rows = 1;
  for (int64_t d : ad) rows *= d;
  for (size_t i = 0; i + 2 < bd.size(); ++i)
    if (bd[i] != 1) return false;
  int64_t k = p.trans_b ? bd.back() : bd[bd.size() - 2];
  return rows == k && g.value(p.b).dtype == LOOM_DTYPE_FLOAT32;
}

void emit_matvec(Builder& bld, int node, const MatmulPlan& p) {
  IrGraph& g = bld.ir();
  const IrNode& n = g.nodes[node];
  const std::vector<int64_t>& bd = g.value(p.b).dims;
  int64_t k = p.trans_b ? bd.back() : bd[bd.size() - 2];
  int64_t cols = p.trans_b ? bd[bd.size() - 2] : bd.back();
  // Packed straight from the core's f32 bytes (matvec_applies checked the type): no
  // intermediate copy of the (largest) weights of the network.
  const float* b = static_cast<const float*>(g.value(p.b).data);
  bool trans_b = p.trans_b;
  // Shared across programs (the plans of other input shapes: a generation loop's every step has
  // a new cache length, and packing a 0.5B-model layer's weights anew took 2/3 of its compile).
  int weights = bld.shared_constant_slot(
      b, plain_md({k * cols}, dt::f32), plain_md({matvec_packed_size(k, cols)}, dt::f32),
      trans_b ? "matvec, transposed" : "matvec",
      [&](void* block) { pack_matvec_weights(b, k, cols, trans_b, static_cast<float*>(block)); },
      g.value(p.b).owned_data.empty() ? g.value(p.b).content_id : 0);
  std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC, bld.as_plain(p.a, dt::f32)},
                                        {DNNL_ARG_WEIGHTS, weights}};
  if (p.bias >= 0) {
    // oneDNN's path scales (acc + bias) by alpha; here y = alpha * acc + beta * C.
    std::vector<float> bias = constant_floats(g, p.bias);
    for (float& v : bias) v *= p.bias_scale * p.alpha;
    args.emplace_back(DNNL_ARG_BIAS, bld.constant_slot(bias, {cols}, plain_md({cols}, dt::f32)));
  }
  int dst = bld.define(p.y, plain_md(g.value(p.y).dims, dt::f32));
  args.emplace_back(DNNL_ARG_DST, dst);
  bld.absorb(p.cands, p.leading, dst);
  float alpha = p.alpha;
  bld.add_kernel_step(
      [k, cols, alpha](const std::unordered_map<int, dnnl::memory>& mem) {
        auto data = [&](int arg) {
          auto it = mem.find(arg);
          return it == mem.end() ? nullptr : static_cast<float*>(it->second.get_data_handle());
        };
        matvec(data(DNNL_ARG_SRC), data(DNNL_ARG_WEIGHTS), data(DNNL_ARG_BIAS), alpha,
               data(DNNL_ARG_DST), k, cols);
      },
      args, n.op + " " + n.view->name + " [loom matvec, " + std::to_string(p.leading) + " fused]",
      "loom matvec");
}

void emit_plan(Builder& bld, int node, MatmulPlan& p) {
  IrGraph& g = bld.ir();
  const IrNode& n = g.nodes[node];
  dt ct = bld.compute_type();
  const std::vector<int64_t>& out_dims = g.value(p.y).dims;
  std::vector<int64_t> yd = out_dims;
  size_t r = yd.size();
  std::vector<int64_t> ad = pad_rank(g.value(p.a).dims, r), bd = pad_rank(g.value(p.b).dims, r);
  int64_t nn = yd[r - 1];
  std::vector<FusionCandidate> rest(p.cands.begin() + static_cast<long>(p.leading), p.cands.end());

  // A batched A against an unbatched B ([b.., M, K] x [K, N]) is one [b..*M, K] x [K, N]
  // product: oneDNN 2.6 would run b.. separate products that each read all of B, as b.. matrix-
  // vector products when M is 1 (ViT's attention input projection, [197, 1, 768] x
  // [768, 2304], ran at a quarter of the speed). Row-major A and the result are the same bytes
  // either way. The product is described in 2-D even for a batch of 1 when B is constant:
  // oneDNN 2.6 picks a blocked layout for constant 2-D weights but keeps 3-D ones plain, whose
  // rows a multiple of 4 KiB apart (BERT's 768x3072 intermediate weights) hit one cache set:
  // 7.9 ms against 4.0 ms blocked on a 2-thread Sapphire Rapids. Post-ops whose operand is
  // neither per-column nor of the result's full shape stay separate nodes.
  bool collapse = false;
  if (r >= 3 && !p.trans_a) {
    int64_t batch = 1;
    bool b_batched = false, a_broadcast = false;
    for (size_t i = 0; i + 2 < r; ++i) {
      batch *= yd[i];
      b_batched |= bd[i] != 1;
      a_broadcast |= ad[i] != yd[i];
    }
    collapse = (batch > 1 || g.value(p.b).constant()) && !b_batched && !a_broadcast;
    if (collapse) {
      ad = {batch * ad[r - 2], ad[r - 1]};
      yd = {batch * yd[r - 2], yd[r - 1]};
      bd = {bd[r - 2], bd[r - 1]};
      size_t keep = 0;
      for (; keep < rest.size(); ++keep) {
        const FusionCandidate& f = rest[keep];
        if (f.kind == FusionCandidate::Kind::kEltwise) continue;
        std::vector<int64_t> od = pad_rank(g.value(f.operand).dims, r);
        bool full = od == out_dims;
        if (f.kind == FusionCandidate::Kind::kSum && !(full && is_plain(bld.md_of(f.operand))))
          break;
        bool per_column = true;
        for (size_t i = 0; i + 1 < r; ++i) per_column &= od[i] == 1;
        if (f.kind == FusionCandidate::Kind::kBinary && !full && !per_column) break;
      }
      rest.resize(keep);
    }
  }
  // The rank of every descriptor of the product (its post-ops' operands folded to it).
  size_t rank = yd.size();

  dnnl::memory::desc src_md = matrix_view(ad, ct, p.trans_a);
  bool const_b = g.value(p.b).constant();
  dnnl::memory::desc b_view = matrix_view(bd, ct, p.trans_b);
  // An operand that is a permuted view (a Transpose left as one, ops_layout.cpp) is read in
  // place when oneDNN has a non-reference kernel for its strides; else it is reordered.
  auto strided = [&](int value, const std::vector<int64_t>& dims, bool transposed) {
    if (transposed || collapse) return false;
    const dnnl::memory::desc& md = bld.md_of(value);
    return md.data_type() == ct && !is_plain(md) && md.dims() == dims &&
           md.data.format_kind == dnnl_blocked && md.data.format_desc.blocking.inner_nblks == 0;
  };
  bool a_strided = strided(p.a, ad, p.trans_a);
  bool b_strided = !const_b && strided(p.b, bd, p.trans_b);
  if (a_strided) src_md = bld.md_of(p.a);
  if (b_strided) b_view = bld.md_of(p.b);
  std::vector<int64_t> logical_b = b_view.dims();
  dnnl::memory::desc w_md = const_b ? dnnl::memory::desc(logical_b, ct, tag::any) : b_view;
  std::vector<int64_t> bias_dims(rank, 1);
  bias_dims[rank - 1] = nn;
  dnnl::memory::desc bias_md = plain_md(bias_dims, dt::f32);

  // A result read outside the subgraph stays f32 under bf16 (no second rounding), as does one
  // the bf16 plan keeps in f32 (precision.hpp).
  dt dst_type = bld.keeps_f32(p.y) ? dt::f32 : ct;
  for (const FusionCandidate& c : p.cands)
    if (c.out_value >= 0 && bld.keeps_f32(c.out_value)) dst_type = dt::f32;
  std::vector<std::pair<int, int>> post_args;
  // A result read only by a Transpose (attention's [b, h, t, d] -> [b, t, h, d] before the
  // output projection) is written straight into the Transpose's output through a permuted
  // view, when oneDNN has a non-reference kernel for those strides: the Transpose emits nothing.
  int transpose = -1;
  dnnl::memory::desc transposed_dst;
  if (!collapse && rest.empty() && p.leading == 0 && p.bias < 0 && !g.value(p.y).graph_output) {
    int c = g.sole_consumer(p.y);
    if (c >= 0 && g.nodes[c].op == "Transpose" && g.nodes[c].outputs[0] >= 0) {
      std::vector<int64_t> perm = transpose_perm(g.nodes[c], r);
      std::vector<int64_t> td = g.value(g.nodes[c].outputs[0]).dims;
      dnnl::memory::dims t_strides = row_major_strides(td), strides(r);
      for (size_t k = 0; k < r; ++k) strides[static_cast<size_t>(perm[k])] = t_strides[k];
      transpose = c;
      transposed_dst = dnnl::memory::desc(yd, dst_type, strides);
    }
  }
  auto create = [&](dnnl::primitive_attr attr, size_t count) {
    if (p.alpha != 1.f) attr.set_output_scales(0, {p.alpha});
    dnnl::memory::desc dst = transpose >= 0 ? transposed_dst
                             : collapse     ? plain_md(yd, dst_type)
                                            : dnnl::memory::desc(yd, dst_type, tag::any);
    for (size_t i = 0; i < count; ++i)
      if (rest[i].kind == FusionCandidate::Kind::kSum)
        dst = collapse ? plain_md(yd, bld.md_of(rest[i].operand).data_type())
                       : bld.md_of(rest[i].operand);
    auto d = p.bias >= 0 ? dnnl::matmul::desc(src_md, w_md, bias_md, dst)
                         : dnnl::matmul::desc(src_md, w_md, dst);
    return dnnl::matmul::primitive_desc(d, attr, bld.engine());
  };
  auto [pd, fused] = create_with_post_ops<dnnl::matmul::primitive_desc>(
      bld, rest, static_cast<int>(rank), create, post_args, p.required);
  if (transpose >= 0 && is_reference(pd)) {
    transpose = -1;
    std::tie(pd, fused) = create_with_post_ops<dnnl::matmul::primitive_desc>(
        bld, rest, static_cast<int>(rank), create, post_args, p.required);
  }
  if ((a_strided || b_strided) && is_reference(pd)) {
    a_strided = b_strided = false;
    src_md = matrix_view(ad, ct, p.trans_a);
    b_view = matrix_view(bd, ct, p.trans_b);
    if (!const_b) w_md = b_view;
    std::tie(pd, fused) = create_with_post_ops<dnnl::matmul::primitive_desc>(
        bld, rest, static_cast<int>(rank), create, post_args, p.required);
  }

  int src = a_strided ? bld.slot_of(p.a) : bld.view(bld.as_plain(p.a, ct), src_md);
  int weights;
  if (const_b) {
    weights = bld.value_constant_slot(p.b, matrix_view(bd, dt::f32, p.trans_b), pd.weights_desc());
  } else {
    weights = b_strided ? bld.slot_of(p.b) : bld.view(bld.as_plain(p.b, ct), b_view);
  }
  std::vector<std::pair<int, int>> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}};
  if (p.bias >= 0) {
    std::vector<float> bv = constant_floats(g, p.bias);
    for (float& v : bv) v *= p.bias_scale;
    args.emplace_back(
        DNNL_ARG_BIAS,
        bld.constant_slot(bv, bias_dims, pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_BIAS)));
  }
  int dst = -1;
  for (size_t i = 0; i < fused; ++i)
    if (rest[i].kind == FusionCandidate::Kind::kSum)
      dst = collapse ? bld.view(bld.slot_of(rest[i].operand), pd.dst_desc())
                     : bld.slot_of(rest[i].operand);
  if (dst < 0 && transpose >= 0) {
    IrNode& t = g.nodes[transpose];
    int t_out = bld.define(t.outputs[0], plain_md(g.value(t.outputs[0]).dims, dst_type));
    bld.alias(p.y, t_out, transposed_dst);
    dst = bld.slot_of(p.y);
    t.absorbed = true;
  }
  if (dst < 0) dst = bld.define(collapse ? -1 : p.y, pd.dst_desc());
  args.emplace_back(DNNL_ARG_DST, dst);
  args.insert(args.end(), post_args.begin(), post_args.end());
  bld.absorb(p.cands, p.leading + fused, dst);
  if (collapse) {
    // The result (or the last fused follower's) in its own shape, over the same bytes.
    size_t done = p.leading + fused;
    int result = done ? p.cands[done - 1].out_value : p.y;
    bld.alias(result, dst, plain_md(out_dims, pd.dst_desc().data_type()));
  }
  bld.add_step(dnnl::matmul(pd), args,
               n.op + " " + n.view->name + " [" + pd.impl_info_str() + ", " +
                   std::to_string(p.leading + fused) + " fused]");
}

}  // namespace

void emit_matmul(Builder& bld, int node) {
  IrGraph& g = bld.ir();
  const IrNode& n = g.nodes[node];
  MatmulPlan p;
  p.a = n.inputs[0];
  p.b = n.inputs[1];
  p.y = n.outputs[0];
  int64_t nn = g.value(p.y).dims.back();
  if (n.op == "Gemm") {
    sdk::Attributes attrs(*n.view);
    p.trans_a = attrs.get_int("transA", 0) != 0;
    p.trans_b = attrs.get_int("transB", 0) != 0;
    p.alpha = attrs.get_float("alpha", 1.f);
    float beta = attrs.get_float("beta", 1.f);
    int c = g.in(n, 2);
    if (c >= 0 && beta != 0.f) {
      if (is_bias_like(g, c, nn)) {
        // oneDNN scales (acc + bias) by alpha: pre-divide so that beta * C survives.
        p.bias = c;
        p.bias_scale = beta / p.alpha;
      } else {
        // A full or column-broadcast C: an added binary post-op (beta 1 only, see support).
        FusionCandidate f{};
        f.kind = FusionCandidate::Kind::kBinary;
        f.alg = dnnl::algorithm::binary_add;
        f.operand = c;
        f.node = -1;
        f.out_value = -1;
        p.cands.push_back(f);
      }
    }
    std::vector<FusionCandidate> more = bld.fusion_candidates(node, p.y);
    p.cands.insert(p.cands.end(), more.begin(), more.end());
    // The C post-op (node -1) must be fused: without it the result would be wrong.
    p.required = !p.cands.empty() && p.cands[0].node == -1 ? 1 : 0;
  } else {
    p.cands = bld.fusion_candidates(node, p.y);
    if (!p.cands.empty() && p.cands[0].kind == FusionCandidate::Kind::kBinary &&
        p.cands[0].alg == dnnl::algorithm::binary_add && is_bias_like(g, p.cands[0].operand, nn)) {
      p.bias = p.cands[0].operand;
      p.leading = 1;
    }
  }
  if (matvec_applies(bld, p))
    emit_matvec(bld, node, p);
  else
    emit_plan(bld, node, p);
}

namespace {

std::string check_matmul(const loom_graph_t& graph, const loom_node_t& node) {
  if (sdk::node_input(graph, node, 0)->rank < 2 || sdk::node_input(graph, node, 1)->rank < 2)
    return "MatMul of a vector";
  return "";
}

std::string check_gemm(const loom_graph_t& graph, const loom_node_t& node) {
  sdk::Attributes attrs(node);
  float alpha = attrs.get_float("alpha", 1.f), beta = attrs.get_float("beta", 1.f);
  if (alpha == 0.f) return "Gemm with alpha 0";
  Info c = sdk::node_input(graph, node, 2), y = sdk::node_output(graph, node, 0);
  if (c && beta != 0.f) {
    bool bias_like = (is_constant(c) || dequantized_constant(graph, node.inputs[2])) &&
                     c->rank >= 1 && known_shape(y) && c->dims[c->rank - 1] == y->dims[1];
    for (int32_t i = 0; bias_like && i + 1 < c->rank; ++i) bias_like = c->dims[i] == 1;
    if (!bias_like && (beta != 1.f || c->rank > 2)) return "Gemm with a scaled full C";
  }
  return "";
}

}  // namespace

LOOM_ONEDNN_OP("MatMul", check_matmul, emit_matmul);
LOOM_ONEDNN_OP("Gemm", check_gemm, emit_matmul);

}  // namespace loom::onednn
