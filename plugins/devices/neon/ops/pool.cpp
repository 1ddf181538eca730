// MaxPool, AveragePool (2-D, float32) and GlobalAveragePool / GlobalMaxPool (any rank >= 3).
#include "kernels/pool.hpp"

#include <algorithm>

#include "kernels/pack4.hpp"
#include "kernels/pool_pack4.hpp"
#include "ops/window_attrs.hpp"

namespace loom::neon {
namespace {

std::string pool_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  if (input_rank(graph, node, 0) != 4) return "only 2-D pooling (NCHW input of rank 4)";
  if (output_requested(node, 1)) return "the Indices output is not implemented";
  Attributes attrs(node);
  auto k = attrs.get_ints("kernel_shape");
  if (!k || k->size() != 2 || (*k)[0] < 1 || (*k)[1] < 1)
    return "kernel_shape must hold two positive extents";
  if (attrs.get_int("storage_order", 0) != 0) return "storage_order 1 is not implemented";
  return check_window_attrs(node, /*allow_dilations=*/true);
}

class PoolOp final : public Op {
 public:
  PoolOp(const loom_node_t& node, bool max) : max_(max) {
    Attributes attrs(node);
    auto k = *attrs.get_ints("kernel_shape");
    attrs_ = read_window_attrs(node, k[0], k[1]);
    count_include_pad_ = attrs.get_int("count_include_pad", 0) != 0;
  }

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& x = *in[0];
    if (x.rank() != 4)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "input of shape " + shape_text(x.dims) + " is not NCHW");
    const Window2d g = make_window(attrs_, x.dims[2], x.dims[3]);
    if (x.packed4) {
      run_pack4(x, g, out[0], rt);
      return;
    }
    out[0] = make_tensor({x.dims[0], x.dims[1], g.oh, g.ow});
    const size_t in_plane = static_cast<size_t>(g.ih * g.iw);
    const size_t out_plane = static_cast<size_t>(g.oh * g.ow);
    float* y = out[0].data;
    rt.parallel_for(static_cast<size_t>(x.dims[0] * x.dims[1]), 1, [&](size_t begin, size_t end) {
      for (size_t p = begin; p < end; ++p) {
        if (max_)
          max_pool_plane(x.data + p * in_plane, y + p * out_plane, g);
        else
          average_pool_plane(x.data + p * in_plane, y + p * out_plane, g, count_include_pad_);
      }
    });
  }

  bool pack4_input(size_t i) const override { return i == 0; }

 private:
  void run_pack4(const Tensor& x, const Window2d& g, Tensor& y, const Runtime& rt) const {
    y = make_pack4_tensor({x.dims[0], x.dims[1], g.oh, g.ow});
    const size_t in_block = x.plane() * 4, out_block = y.plane() * 4;
    rt.parallel_for(static_cast<size_t>(x.dims[0]) * x.blocks(), 1, [&](size_t begin, size_t end) {
      for (size_t p = begin; p < end; ++p) {
        if (max_)
          max_pool_pack4_block(x.data + p * in_block, y.data + p * out_block, g);
        else
          average_pool_pack4_block(x.data + p * in_block, y.data + p * out_block, g,
                                   count_include_pad_);
      }
    });
    // An empty window leaves -inf or NaN in the padding lanes too.
    zero_pack4_padding(y.data, static_cast<size_t>(y.dims[0]), static_cast<size_t>(y.dims[1]),
                       y.plane());
  }

  bool max_;
  bool count_include_pad_ = false;
  WindowAttrs attrs_;
};

std::string global_pool_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  if (input_rank(graph, node, 0) < 3) return "the input needs a known rank of at least 3";
  return "";
}

class GlobalPoolOp final : public Op {
 public:
  explicit GlobalPoolOp(bool max) : max_(max) {}

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& x = *in[0];
    if (x.rank() < 3)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "input of shape " + shape_text(x.dims) + " has no spatial dimensions");
    std::vector<int64_t> dims(x.dims.begin(), x.dims.begin() + 2);
    dims.resize(x.dims.size(), 1);
    if (x.packed4) {
      if (x.plane() == 0)
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             "cannot pool an empty spatial extent " + shape_text(x.dims));
      out[0] = make_pack4_tensor(dims);
      const size_t blocks = static_cast<size_t>(x.dims[0]) * x.blocks(), plane = x.plane();
      rt.parallel_for(blocks, 4, [&](size_t begin, size_t end) {
        for (size_t p = begin; p < end; ++p)
          global_pool_pack4_block(x.data + p * plane * 4, plane, max_, out[0].data + p * 4);
      });
      return;
    }
    out[0] = make_tensor(dims);
    const size_t planes = static_cast<size_t>(x.dims[0] * x.dims[1]);
    const size_t plane = planes ? x.size() / planes : 0;
    if (plane == 0 && planes)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "cannot pool an empty spatial extent " + shape_text(x.dims));
    float* y = out[0].data;
    rt.parallel_for(planes, 16, [&](size_t begin, size_t end) {
      for (size_t p = begin; p < end; ++p)
        y[p] = max_ ? plane_max(x.data + p * plane, plane)
                    : plane_sum(x.data + p * plane, plane) / static_cast<float>(plane);
    });
  }

  bool pack4_input(size_t i) const override { return i == 0; }

 private:
  bool max_;
};

std::unique_ptr<Op> max_pool_create(const loom_graph_t&, const loom_node_t& n,
                                    const CompileOptions&) {
  return std::make_unique<PoolOp>(n, true);
}
std::unique_ptr<Op> average_pool_create(const loom_graph_t&, const loom_node_t& n,
                                        const CompileOptions&) {
  return std::make_unique<PoolOp>(n, false);
}
std::unique_ptr<Op> global_max_create(const loom_graph_t&, const loom_node_t&,
                                      const CompileOptions&) {
  return std::make_unique<GlobalPoolOp>(true);
}
std::unique_ptr<Op> global_average_create(const loom_graph_t&, const loom_node_t&,
                                          const CompileOptions&) {
  return std::make_unique<GlobalPoolOp>(false);
}

}  // namespace

LOOM_NEON_OP("MaxPool", 1, pool_supports, max_pool_create);
LOOM_NEON_OP("AveragePool", 1, pool_supports, average_pool_create);
LOOM_NEON_OP("GlobalMaxPool", 1, global_pool_supports, global_max_create);
LOOM_NEON_OP("GlobalAveragePool", 1, global_pool_supports, global_average_create);

}  // namespace loom::neon
