// Softmax (all opsets: the old 2-D coercion and the single axis of opset 13) and
// LayerNormalization (opset 17, the normalised output only).
#include <algorithm>

#include "kernels/normalize.hpp"
#include "ops/op.hpp"

namespace loom::neon {
namespace {

std::string softmax_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  if (input_rank(graph, node, 0) < 1) return "the input needs a known rank of at least 1";
  return "";
}

class SoftmaxOp final : public Op {
 public:
  explicit SoftmaxOp(const loom_node_t& node)
      : coerce_2d_(node.opset < 13),
        axis_(Attributes(node).get_int("axis", node.opset < 13 ? 1 : -1)) {}

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& x = *in[0];
    const int64_t rank = x.rank();
    const int64_t hi = coerce_2d_ ? rank : rank - 1;
    if (axis_ < -rank || axis_ > hi)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "axis " + std::to_string(axis_) + " is out of range for rank " + std::to_string(rank));
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    size_t outer = 1, len = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(x.dims[static_cast<size_t>(d)]);
    if (coerce_2d_) {
      for (int64_t d = axis; d < rank; ++d)
        len *= static_cast<size_t>(x.dims[static_cast<size_t>(d)]);
    } else {
      len = static_cast<size_t>(x.dims[static_cast<size_t>(axis)]);
      for (int64_t d = axis + 1; d < rank; ++d)
        inner *= static_cast<size_t>(x.dims[static_cast<size_t>(d)]);
    }
    out[0] = make_tensor(x.dims);
    if (x.size() == 0) return;
    const size_t grain = std::max<size_t>(1, 8192 / (len * inner));
    rt.parallel_for(outer, grain, [&](size_t begin, size_t end) {
      if (inner == 1)
        softmax_rows(x.data, out[0].data, len, begin, end);
      else
        softmax_strided(x.data, out[0].data, len, inner, begin, end);
    });
  }

 private:
  bool coerce_2d_;
  int64_t axis_;
};

std::unique_ptr<Op> softmax_create(const loom_graph_t&, const loom_node_t& node,
                                   const CompileOptions&) {
  return std::make_unique<SoftmaxOp>(node);
}

std::string layer_norm_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  if (output_requested(node, 1) || output_requested(node, 2))
    return "the Mean and InvStdDev outputs are not implemented";
  if (Attributes(node).get_int("stash_type", 1) != 1)
    return "only stash_type 1 (float) is implemented";
  if (input_rank(graph, node, 0) < 1) return "the input needs a known rank";
  return "";
}

class LayerNormOp final : public Op {
 public:
  explicit LayerNormOp(const loom_node_t& node)
      : axis_(Attributes(node).get_int("axis", -1)),
        epsilon_(Attributes(node).get_float("epsilon", 1e-5f)) {}

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& x = *in[0];
    const int64_t rank = x.rank();
    if (axis_ < -rank || axis_ >= rank)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "axis " + std::to_string(axis_) + " is out of range for rank " + std::to_string(rank));
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    size_t len = 1;
    for (int64_t d = axis; d < rank; ++d)
      len *= static_cast<size_t>(x.dims[static_cast<size_t>(d)]);
    // Scale and bias broadcast to the normalised shape; the kernel takes full rows, so a
    // broadcast (smaller) operand is expanded once per run.
    std::vector<float> scale_rows, bias_rows;
    const float* scale = expand(*in[1], x, axis, scale_rows);
    const float* bias = in.size() > 2 && in[2] ? expand(*in[2], x, axis, bias_rows) : nullptr;
    out[0] = make_tensor(x.dims);
    if (x.size() == 0) return;
    const size_t rows = x.size() / len;
    rt.parallel_for(rows, std::max<size_t>(1, 8192 / len), [&](size_t begin, size_t end) {
      layer_norm_rows(x.data, out[0].data, len, scale, bias, epsilon_, begin, end);
    });
  }

 private:
  // The operand as `len` contiguous values: itself when it already has them, else broadcast
  // into `storage`.
  static const float* expand(const Tensor& t, const Tensor& x, int64_t axis,
                             std::vector<float>& storage) {
    const size_t norm_rank = static_cast<size_t>(x.rank() - axis);
    if (static_cast<size_t>(t.rank()) > norm_rank)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "scale/bias of shape " + shape_text(t.dims) +
                                            " has more dimensions than the normalised shape");
    std::vector<int64_t> norm(x.dims.begin() + axis, x.dims.end());
    std::vector<int64_t> padded(norm_rank, 1);
    std::copy(t.dims.begin(), t.dims.end(), padded.end() - t.rank());
    bool same = true;
    for (size_t d = 0; d < norm_rank; ++d) {
      if (padded[d] != norm[d] && padded[d] != 1)
        fail(LOOM_ERROR_INVALID_ARGUMENT, "scale/bias of shape " + shape_text(t.dims) +
                                              " does not broadcast to " + shape_text(norm));
      same = same && padded[d] == norm[d];
    }
    if (same) return t.data;
    size_t len = 1;
    for (int64_t d : norm) len *= static_cast<size_t>(d);
    storage.resize(len);
    for (size_t i = 0; i < len; ++i) {
      size_t rest = i, offset = 0, stride = 1;
      for (size_t d = norm_rank; d-- > 0;) {
        const size_t idx = rest % static_cast<size_t>(norm[d]);
        rest /= static_cast<size_t>(norm[d]);
        if (padded[d] != 1) offset += idx * stride;
        stride *= static_cast<size_t>(padded[d]);
      }
      storage[i] = t.data[offset];
    }
    return storage.data();
  }

  int64_t axis_;
  float epsilon_;
};

std::unique_ptr<Op> layer_norm_create(const loom_graph_t&, const loom_node_t& node,
                                      const CompileOptions&) {
  return std::make_unique<LayerNormOp>(node);
}

}  // namespace

LOOM_NEON_OP("Softmax", 1, softmax_supports, softmax_create);
LOOM_NEON_OP("LayerNormalization", 17, layer_norm_supports, layer_norm_create);

}  // namespace loom::neon
