// Post-op fusion: which single-consumer followers of a convolution or matmul (activations,
// scalings, binary operands, the residual Add) can run inside its primitive, and how they
// become oneDNN post-ops (Builder::fusion_candidates, append_post_ops, absorb).
#include <algorithm>

#include "builder.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;

bool Builder::residual_is_dead_after(int residual, int node, int add_node) {
  const IrValue& r = g_.value(residual);
  if (r.graph_input || r.graph_output || r.constant()) return false;
  int s = slot_of(residual);
  const Slot& slot = program_->slots[s];
  if (slot.root != s || slot.kind != SlotKind::kInternal) return false;
  // Every value held in these bytes (the residual, values written in place into them before,
  // values in views of them) must have no reader left but `node`'s Add: other readers must
  // have run before `node`, and `node` itself must not read it (a primitive cannot read and
  // overwrite the same buffer). A reader folded into `node` (the residual's
  // DequantizeLinear, quantized.cpp) reads nothing at run time.
  const std::vector<int>& folded = g_.nodes[static_cast<size_t>(node)].folded;
  auto read_later = [&](int v) {
    const IrValue& held = g_.value(v);
    if (held.graph_output) return true;
    for (int c : held.consumers)
      if (c != add_node && position_[c] >= position_[node] &&
          std::find(folded.begin(), folded.end(), c) == folded.end())
        return true;
    return false;
  };
  auto in_buffer = [&](int slot_id) {
    return slot_id >= 0 && program_->slots[static_cast<size_t>(slot_id)].root == s;
  };
  for (size_t v = 0; v < value_slot_.size(); ++v)
    if (in_buffer(value_slot_[v]) && read_later(static_cast<int>(v))) return false;
  for (const auto& [v, copy] : converted_)  // a reordered copy another reader may take
    if (in_buffer(copy) && read_later(v)) return false;
  return true;
}

std::vector<FusionCandidate> Builder::fusion_candidates(int node, int value, size_t max_count) {
  std::vector<FusionCandidate> out;
  int v = value;
  while (out.size() < max_count) {
    int c = g_.sole_consumer(v);
    if (c < 0) break;
    const IrNode& cn = g_.nodes[c];
    if (cn.outputs.empty() || cn.outputs[0] < 0 ||
        g_.value(cn.outputs[0]).dtype != LOOM_DTYPE_FLOAT32)
      break;
    FusionCandidate f{};
    f.node = c;
    f.out_value = cn.outputs[0];
    const auto& vdims = g_.value(v).dims;
    if (auto e = eltwise_form(g_, cn); e && cn.inputs[e->data_input] == v) {
      f.kind = FusionCandidate::Kind::kEltwise;
      f.alg = e->alg;
      f.alpha = e->alpha;
      f.beta = e->beta;
      f.then = e->then;
    } else if ((cn.op == "Add" || cn.op == "Sub" || cn.op == "Mul" || cn.op == "Div" ||
                cn.op == "Max" || cn.op == "Min") &&
               cn.inputs.size() == 2) {
      int pos = cn.inputs[0] == v ? 0 : 1;
      int other = cn.inputs[1 - pos];
      if (other == v || g_.value(cn.outputs[0]).dims != vdims) break;
      bool v_first = pos == 0;
      if (auto k = scalar_constant(g_, other);
          k &&
          (cn.op == "Mul" || cn.op == "Add" || (v_first && (cn.op == "Div" || cn.op == "Sub")))) {
        f.kind = FusionCandidate::Kind::kEltwise;
        f.alg = dnnl::algorithm::eltwise_linear;
        if (cn.op == "Mul")
          f.alpha = *k, f.beta = 0.f;
        else if (cn.op == "Div")
          f.alpha = 1.f / *k, f.beta = 0.f;
        else if (cn.op == "Add")
          f.alpha = 1.f, f.beta = *k;
        else
          f.alpha = 1.f, f.beta = -*k;
      } else {
        if (!v_first && (cn.op == "Sub" || cn.op == "Div")) break;
        const IrValue& o = g_.value(other);
        if (o.dtype != LOOM_DTYPE_FLOAT32 || o.dims.size() > vdims.size()) break;
        std::vector<int64_t> od = pad_rank(o.dims, vdims.size());
        bool broadcastable = true;
        for (size_t i = 0; i < od.size(); ++i)
          if (od[i] != 1 && od[i] != vdims[i]) broadcastable = false;
        if (!broadcastable) break;
        // The other operand must exist before the primitive runs.
        if (!o.constant() && !o.graph_input &&
            (o.producer < 0 || position_[o.producer] > position_[node]))
          break;
        f.operand = other;
        if (cn.op == "Add" && od == vdims && residual_is_dead_after(other, node, c)) {
          f.kind = FusionCandidate::Kind::kSum;
        } else {
          f.kind = FusionCandidate::Kind::kBinary;
          f.alg = cn.op == "Add"   ? dnnl::algorithm::binary_add
                  : cn.op == "Sub" ? dnnl::algorithm::binary_sub
                  : cn.op == "Mul" ? dnnl::algorithm::binary_mul
                  : cn.op == "Div" ? dnnl::algorithm::binary_div
                  : cn.op == "Max" ? dnnl::algorithm::binary_max
                                   : dnnl::algorithm::binary_min;
        }
      }
    } else {
      break;
    }
    // oneDNN 2.6 computes wrong results when one primitive carries two eltwise_linear post-ops
    // (seen on binary: (k1 - (k0 - x)) came out off by a constant). Consecutive linear maps
    // compose into one, a*(c*x + d) + b = (a*c)*x + (a*d + b); a second, separate one ends the
    // chain.
    if (f.kind == FusionCandidate::Kind::kEltwise && f.alg == dnnl::algorithm::eltwise_linear) {
      FusionCandidate* prev = out.empty() ? nullptr : &out.back();
      if (prev && prev->kind == FusionCandidate::Kind::kEltwise &&
          prev->alg == dnnl::algorithm::eltwise_linear && !prev->then && !f.then) {
        prev->alpha = f.alpha * prev->alpha;
        prev->beta = f.alpha * prev->beta + f.beta;
        prev->merged_nodes.push_back(f.node);
        prev->out_value = f.out_value;
        v = f.out_value;
        continue;
      }
      bool has_linear = false;
      for (const FusionCandidate& e : out)
        has_linear |=
            e.kind == FusionCandidate::Kind::kEltwise && e.alg == dnnl::algorithm::eltwise_linear;
      if (has_linear) break;
    }
    out.push_back(f);
    v = f.out_value;
  }
  return out;
}

void append_eltwise_post_ops(const FusionCandidate& f, dnnl::post_ops& ops) {
  ops.append_eltwise(1.f, f.alg, f.alpha, f.beta);
  if (f.then) ops.append_eltwise(1.f, f.then->alg, f.then->alpha, f.then->beta);
}

std::vector<std::pair<int, int>> Builder::append_post_ops(const std::vector<FusionCandidate>& c,
                                                          size_t count, dnnl::post_ops& ops,
                                                          int dst_rank) {
  std::vector<std::pair<int, int>> args;
  for (size_t i = 0; i < count; ++i) {
    const FusionCandidate& f = c[i];
    switch (f.kind) {
      case FusionCandidate::Kind::kEltwise:
        append_eltwise_post_ops(f, ops);
        break;
      case FusionCandidate::Kind::kSum:
        ops.append_sum(1.f);
        break;
      case FusionCandidate::Kind::kBinary: {
        const IrValue& o = g_.value(f.operand);
        // An operand of higher rank than the destination (a product computed in 2-D,
        // ops_matmul.cpp) is seen with its leading axes folded into one.
        std::vector<int64_t> padded = pad_rank(o.dims, static_cast<size_t>(dst_rank));
        while (padded.size() > static_cast<size_t>(dst_rank)) {
          padded[1] *= padded[0];
          padded.erase(padded.begin());
        }
        int s;
        if (static_cast<int>(o.dims.size()) == dst_rank && !o.constant()) {
          s = slot_of(f.operand);
        } else {
          int plain = as_plain(f.operand, dt::f32);
          s = view(plain, plain_md(padded, dt::f32));
        }
        ops.append_binary(f.alg, program_->slots[s].md);
        args.emplace_back(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1, s);
        break;
      }
    }
  }
  return args;
}

void Builder::absorb(const std::vector<FusionCandidate>& c, size_t count, int dst_slot) {
  for (size_t i = 0; i < count; ++i) {
    if (c[i].node >= 0) g_.nodes[c[i].node].absorbed = true;
    for (int merged : c[i].merged_nodes) g_.nodes[merged].absorbed = true;
  }
  if (count && c[count - 1].out_value >= 0) value_slot_[c[count - 1].out_value] = dst_slot;
}

}  // namespace loom::onednn
