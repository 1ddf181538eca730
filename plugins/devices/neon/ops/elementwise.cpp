// Elementwise ops: Add/Sub/Mul/Div (broadcasting), the activations and unary math of
// kernels/activation.hpp, inference BatchNormalization, Flatten (a free reshape) and float
// Constant nodes.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/activation.hpp"
#include "kernels/binary.hpp"
#include "kernels/binary_pack4.hpp"
#include "kernels/pack4.hpp"
#include "ops/op.hpp"

namespace loom::neon {
namespace {

constexpr size_t kElementGrain = 16384;  // elements per chunk worth a thread

// ---- binary ------------------------------------------------------------------------------

std::string binary_supports(const loom_graph_t& graph, const loom_node_t& node) {
  return require_float32(graph, node);
}

// The right-aligned rank-4 view of a shape ([C, 1, 1] -> [1, C, 1, 1]), or empty if its rank is
// above 4.
std::vector<int64_t> as_rank4(std::span<const int64_t> dims) {
  if (dims.size() > 4) return {};
  std::vector<int64_t> r(4 - dims.size(), 1);
  r.insert(r.end(), dims.begin(), dims.end());
  return r;
}

// True if `dims` broadcasts to `out` (rank 4) as one value per image and channel: [1|N, 1|C, 1, 1].
bool per_channel(std::span<const int64_t> dims, std::span<const int64_t> out) {
  const std::vector<int64_t> d = as_rank4(dims);
  return !d.empty() && (d[0] == 1 || d[0] == out[0]) && (d[1] == 1 || d[1] == out[1]) &&
         d[2] == 1 && d[3] == 1;
}

class BinaryOpImpl final : public Op {
 public:
  BinaryOpImpl(const loom_graph_t& graph, const loom_node_t& node, BinaryOp op) : op_(op) {
    // NC4HW4 variant: a static 4-D output with each operand either of the output's shape
    // (read packed) or per-channel / scalar (a packed [N, C, 1, 1] activation, or any such
    // operand read as NCHW and expanded to one vector per block).
    const loom_value_info_t* y = node.num_outputs ? sdk::node_output(graph, node, 0) : nullptr;
    if (!y || y->rank != 4 || node.num_inputs != 2) return;
    const std::span<const int64_t> out(y->dims, 4);
    for (int64_t d : out)
      if (d < 0) return;
    bool any_full = false;
    bool slots[2] = {false, false};
    for (size_t i = 0; i < 2; ++i) {
      const loom_value_info_t* v = sdk::node_input(graph, node, i);
      if (!v || v->rank < 0) return;
      const std::span<const int64_t> dims(v->dims, static_cast<size_t>(v->rank));
      if (v->rank == 4 && std::equal(dims.begin(), dims.end(), out.begin())) {
        slots[i] = any_full = true;
      } else if (per_channel(dims, out)) {
        slots[i] = v->rank == 4 && dims[1] == out[1] && !(v->flags & LOOM_VALUE_CONSTANT);
      } else {
        return;
      }
    }
    if (!any_full) return;
    pack4_[0] = slots[0];
    pack4_[1] = slots[1];
  }

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const BroadcastPlan plan = plan_broadcast(a.dims, b.dims);
    if (a.packed4 || b.packed4) {
      run_pack4(a, b, plan.out_dims, out[0], rt);
      return;
    }
    out[0] = make_tensor(plan.out_dims);
    const size_t rows = plan.outer();
    const size_t grain = std::max<size_t>(1, kElementGrain / std::max<size_t>(plan.inner(), 1));
    rt.parallel_for(rows, grain, [&](size_t begin, size_t end) {
      binary_rows(op_, plan, a.data, b.data, out[0].data, begin, end);
    });
  }

  bool pack4_input(size_t i) const override { return i < 2 && pack4_[i]; }

 private:
  // One operand of the packed run: full (a vector per pixel) or one vector per image and block.
  struct Operand {
    const float* data = nullptr;
    bool full = false;
    size_t image_stride = 0;   // floats between images
    std::vector<float> table;  // the expanded per-channel values of an NCHW operand
  };

  static Operand operand(const Tensor& t, const std::vector<int64_t>& out) {
    const size_t blocks = channel_blocks(static_cast<size_t>(out[1]));
    const size_t plane = static_cast<size_t>(out[2] * out[3]);
    Operand o;
    if (t.packed4 && t.dims == out) {
      o.data = t.data;
      o.full = true;
      o.image_stride = blocks * 4 * plane;
      return o;
    }
    if (!per_channel(t.dims, out) || (t.packed4 && t.dims[1] != out[1]))
      fail(LOOM_ERROR_INTERNAL, "operand of shape " + shape_text(t.dims) +
                                    " does not fit the NC4HW4 broadcast to " + shape_text(out));
    const std::vector<int64_t> d = as_rank4(t.dims);
    o.image_stride = d[0] == 1 ? 0 : blocks * 4;
    if (t.packed4) {  // [N, C, 1, 1] packed: already one vector per image and block
      o.data = t.data;
      return o;
    }
    const auto images = static_cast<size_t>(d[0]), channels = static_cast<size_t>(d[1]);
    o.table.assign(images * blocks * 4, 0.0f);
    for (size_t n = 0; n < images; ++n)
      for (size_t c = 0; c < static_cast<size_t>(out[1]); ++c)
        o.table[n * blocks * 4 + c] = t.data[n * channels + (channels == 1 ? 0 : c)];
    o.data = o.table.data();
    return o;
  }

  void run_pack4(const Tensor& a, const Tensor& b, const std::vector<int64_t>& dims, Tensor& y,
                 const Runtime& rt) const {
    if (dims.size() != 4)
      fail(LOOM_ERROR_INTERNAL, "NC4HW4 operands with an output of shape " + shape_text(dims));
    const Operand oa = operand(a, dims), ob = operand(b, dims);
    y = make_pack4_tensor(dims);
    const size_t blocks = y.blocks(), plane = y.plane();
    const size_t grain = std::max<size_t>(1, kElementGrain / std::max<size_t>(plane * 4, 1));
    rt.parallel_for(static_cast<size_t>(dims[0]) * blocks, grain, [&](size_t begin, size_t end) {
      for (size_t p = begin; p < end; ++p) {
        const size_t img = p / blocks, blk = p % blocks;
        auto at = [&](const Operand& o) {
          return o.data + img * o.image_stride + blk * (o.full ? plane * 4 : 4);
        };
        binary_pack4_block(op_, at(oa), oa.full, at(ob), ob.full, y.data + p * plane * 4, plane);
      }
    });
    // Broadcast scalars fill the padding lanes, and Div turns 0 / 0 into NaN there.
    zero_pack4_padding(y.data, static_cast<size_t>(dims[0]), static_cast<size_t>(dims[1]), plane);
  }

  BinaryOp op_;
  bool pack4_[2] = {false, false};
};

template <BinaryOp Kind>
std::unique_ptr<Op> binary_create(const loom_graph_t& graph, const loom_node_t& node,
                                  const CompileOptions&) {
  return std::make_unique<BinaryOpImpl>(graph, node, Kind);
}

// ---- unary -------------------------------------------------------------------------------

// y = f(x) in x's layout: a packed tensor is one contiguous run too, its padding lanes reset
// to zero afterwards (f(0) need not be 0).
void apply_activation(const Tensor& x, Activation kind, ActivationParams params, Tensor& y,
                      const Runtime& rt) {
  y = x.packed4 ? make_pack4_tensor(x.dims) : make_tensor(x.dims);
  rt.parallel_for(x.storage_floats(), kElementGrain, [&](size_t begin, size_t end) {
    activation(kind, params, x.data + begin, y.data + begin, end - begin);
  });
  if (y.packed4)
    zero_pack4_padding(y.data, static_cast<size_t>(y.dims[0]), static_cast<size_t>(y.dims[1]),
                       y.plane());
}

class ActivationOp final : public Op {
 public:
  ActivationOp(Activation kind, ActivationParams params) : kind_(kind), params_(params) {}
  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    apply_activation(*in[0], kind_, params_, out[0], rt);
  }
  bool pack4_input(size_t i) const override { return i == 0; }

 private:
  Activation kind_;
  ActivationParams params_;
};

std::string unary_supports(const loom_graph_t& graph, const loom_node_t& node) {
  return require_float32(graph, node);
}

template <Activation Kind>
std::unique_ptr<Op> unary_create(const loom_graph_t&, const loom_node_t& node,
                                 const CompileOptions&) {
  Attributes attrs(node);
  ActivationParams p;
  if constexpr (Kind == Activation::kLeakyRelu) p.p0 = attrs.get_float("alpha", 0.01f);
  if constexpr (Kind == Activation::kHardSigmoid) {
    p.p0 = attrs.get_float("alpha", 0.2f);
    p.p1 = attrs.get_float("beta", 0.5f);
  }
  return std::make_unique<ActivationOp>(Kind, p);
}

// Clip: bounds are attributes before opset 11, optional one-element inputs from 11 on
// (initializers or run-time values such as Constant node outputs), read on every run.
std::string clip_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  for (size_t i = 1; i < 3 && i < node.num_inputs; ++i) {
    const loom_value_info_t* v = sdk::node_input(graph, node, i);
    if (v && v->rank > 0 && sdk::element_count(v->rank, v->dims) != 1)
      return "min and max must be scalars";
  }
  return "";
}

class ClipOp final : public Op {
 public:
  explicit ClipOp(ActivationParams bounds) : bounds_(bounds) {}
  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    ActivationParams p = bounds_;
    for (size_t i = 1; i < 3 && i < in.size(); ++i) {
      if (!in[i]) continue;
      if (in[i]->size() != 1)
        fail(LOOM_ERROR_INVALID_ARGUMENT, std::string(i == 1 ? "min" : "max") + " of shape " +
                                              shape_text(in[i]->dims) + " is not a scalar");
      (i == 1 ? p.p0 : p.p1) = in[i]->data[0];
    }
    apply_activation(*in[0], Activation::kClip, p, out[0], rt);
  }
  bool pack4_input(size_t i) const override { return i == 0; }

 private:
  ActivationParams bounds_;  // the attributes (opset < 11) or no bounds
};

std::unique_ptr<Op> clip_create(const loom_graph_t&, const loom_node_t& node,
                                const CompileOptions&) {
  ActivationParams p;
  p.p0 = -std::numeric_limits<float>::infinity();
  p.p1 = std::numeric_limits<float>::infinity();
  if (node.opset < 11) {
    Attributes attrs(node);
    p.p0 = attrs.get_float("min", p.p0);
    p.p1 = attrs.get_float("max", p.p1);
  }
  return std::make_unique<ClipOp>(p);
}

// ---- Constant ----------------------------------------------------------------------------
// A float32 constant (value tensor, value_float or value_floats): copied at compile time (the
// attribute is only valid then) and handed out without a copy on every run. Keeping Constant
// nodes on neon keeps, e.g., ReLU6's bounds in the same subgraph as the Clip.

std::string constant_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  Attributes attrs(node);
  if (const loom_value_info_t* v = attrs.get_tensor("value")) {
    if (v->dtype != LOOM_DTYPE_FLOAT32) return "only float32 constants";
    if (v->rank < 0 || (v->data_size && !v->data) ||
        v->data_size != static_cast<size_t>(sdk::element_count(v->rank, v->dims)) * sizeof(float))
      return "the value tensor has no data of its shape";
    return "";
  }
  if (attrs.has("value_float") || attrs.has("value_floats")) return "";
  return "only float32 values (value, value_float, value_floats)";
}

class ConstantOp final : public Op {
 public:
  explicit ConstantOp(const loom_node_t& node) {
    Attributes attrs(node);
    std::vector<int64_t> dims;
    const float* src = nullptr;
    float scalar = 0.0f;
    if (const loom_value_info_t* v = attrs.get_tensor("value")) {
      dims.assign(v->dims, v->dims + v->rank);
      src = static_cast<const float*>(v->data);
    } else if (auto values = attrs.get_floats("value_floats")) {
      dims = {static_cast<int64_t>(values->size())};
      src = values->data();
    } else {
      scalar = attrs.get_float("value_float", 0.0f);
      src = &scalar;
    }
    value_ = make_tensor(dims);
    if (value_.size()) std::copy(src, src + value_.size(), value_.data);
  }
  void run(std::span<const Tensor* const>, std::span<Tensor> out, const Runtime&) override {
    out[0] = value_;
  }

 private:
  Tensor value_;
};

std::unique_ptr<Op> constant_create(const loom_graph_t&, const loom_node_t& node,
                                    const CompileOptions&) {
  return std::make_unique<ConstantOp>(node);
}

// ---- BatchNormalization (inference) ------------------------------------------------------

std::string batch_norm_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  if (Attributes(node).get_int("training_mode", 0) != 0) return "training_mode is not implemented";
  for (size_t i = 1; i < node.num_outputs; ++i)
    if (output_requested(node, i)) return "the training outputs are not implemented";
  if (input_rank(graph, node, 0) < 2) return "the input needs a known rank of at least 2";
  for (size_t i = 1; i < 5; ++i) {
    const loom_value_info_t* v = constant_input(graph, node, i);
    if (!v || v->rank != 1) return "scale, bias, mean and variance must be constant vectors";
  }
  return "";
}

class BatchNormOp final : public Op {
 public:
  BatchNormOp(const loom_graph_t& graph, const loom_node_t& node) {
    const float epsilon = Attributes(node).get_float("epsilon", 1e-5f);
    const auto* scale = static_cast<const float*>(constant_input(graph, node, 1)->data);
    const auto* bias = static_cast<const float*>(constant_input(graph, node, 2)->data);
    const auto* mean = static_cast<const float*>(constant_input(graph, node, 3)->data);
    const auto* var = static_cast<const float*>(constant_input(graph, node, 4)->data);
    const size_t c = static_cast<size_t>(constant_input(graph, node, 1)->dims[0]);
    for (size_t i = 2; i < 5; ++i)
      if (static_cast<size_t>(constant_input(graph, node, i)->dims[0]) != c)
        fail(LOOM_ERROR_INVALID_MODEL, "scale, bias, mean and variance differ in length");
    // y = x * mul + add per channel.
    mul_.resize(c);
    add_.resize(c);
    // Padded to whole blocks of 4 with zeros for the NC4HW4 path (padding lanes stay 0).
    mul4_.assign(channel_blocks(c) * 4, 0.0f);
    add4_.assign(channel_blocks(c) * 4, 0.0f);
    for (size_t i = 0; i < c; ++i) {
      mul_[i] = mul4_[i] = scale[i] / std::sqrt(var[i] + epsilon);
      add_[i] = add4_[i] = bias[i] - mean[i] * mul_[i];
    }
  }

  bool pack4_input(size_t i) const override { return i == 0; }

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& x = *in[0];
    if (x.rank() < 2 || static_cast<size_t>(x.dims[1]) != mul_.size())
      fail(LOOM_ERROR_INVALID_ARGUMENT, "input of shape " + shape_text(x.dims) + " does not have " +
                                            std::to_string(mul_.size()) + " channels");
    if (x.packed4) {
      out[0] = make_pack4_tensor(x.dims);
      const size_t blocks = x.blocks(), plane = x.plane();
      rt.parallel_for(static_cast<size_t>(x.dims[0]) * blocks, 1, [&](size_t begin, size_t end) {
        for (size_t p = begin; p < end; ++p) {
          const float32x4_t m = vld1q_f32(&mul4_[(p % blocks) * 4]);
          const float32x4_t a = vld1q_f32(&add4_[(p % blocks) * 4]);
          const float* src = x.data + p * plane * 4;
          float* dst = out[0].data + p * plane * 4;
          for (size_t i = 0; i < plane; ++i)
            vst1q_f32(dst + i * 4, vfmaq_f32(a, vld1q_f32(src + i * 4), m));
        }
      });
      return;
    }
    out[0] = make_tensor(x.dims);
    const size_t c = mul_.size();
    const size_t plane = x.size() / std::max<size_t>(1, static_cast<size_t>(x.dims[0]) * c);
    rt.parallel_for(static_cast<size_t>(x.dims[0]) * c, 1, [&](size_t begin, size_t end) {
      for (size_t p = begin; p < end; ++p) {
        const float32x4_t m = vdupq_n_f32(mul_[p % c]), a = vdupq_n_f32(add_[p % c]);
        const float* src = x.data + p * plane;
        float* dst = out[0].data + p * plane;
        size_t i = 0;
        for (; i + 4 <= plane; i += 4) vst1q_f32(dst + i, vfmaq_f32(a, vld1q_f32(src + i), m));
        for (; i < plane; ++i) dst[i] = src[i] * mul_[p % c] + add_[p % c];
      }
    });
  }

 private:
  std::vector<float> mul_, add_;
  std::vector<float> mul4_, add4_;  // the same, zero-padded to whole blocks of 4 channels
};

std::unique_ptr<Op> batch_norm_create(const loom_graph_t& graph, const loom_node_t& node,
                                      const CompileOptions&) {
  return std::make_unique<BatchNormOp>(graph, node);
}

// ---- Flatten -----------------------------------------------------------------------------

std::string flatten_supports(const loom_graph_t& graph, const loom_node_t& node) {
  if (std::string r = require_float32(graph, node); !r.empty()) return r;
  if (input_rank(graph, node, 0) < 0) return "the input rank must be known";
  return "";
}

class FlattenOp final : public Op {
 public:
  explicit FlattenOp(int64_t axis) : axis_(axis) {}
  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime&) override {
    const Tensor& x = *in[0];
    int64_t axis = axis_ < 0 ? axis_ + x.rank() : axis_;
    if (axis < 0 || axis > x.rank())
      fail(LOOM_ERROR_INVALID_ARGUMENT, "axis " + std::to_string(axis_) +
                                            " is out of range for rank " +
                                            std::to_string(x.rank()));
    int64_t rows = 1, cols = 1;
    for (int64_t d = 0; d < x.rank(); ++d)
      (d < axis ? rows : cols) *= x.dims[static_cast<size_t>(d)];
    // The same memory under a 2-D shape: no copy.
    out[0] = x;
    out[0].dims = {rows, cols};
  }

 private:
  int64_t axis_;
};

std::unique_ptr<Op> flatten_create(const loom_graph_t&, const loom_node_t& node,
                                   const CompileOptions&) {
  return std::make_unique<FlattenOp>(Attributes(node).get_int("axis", 1));
}

}  // namespace

LOOM_NEON_OP("Add", 7, binary_supports, binary_create<BinaryOp::kAdd>);
LOOM_NEON_OP("Sub", 7, binary_supports, binary_create<BinaryOp::kSub>);
LOOM_NEON_OP("Mul", 7, binary_supports, binary_create<BinaryOp::kMul>);
LOOM_NEON_OP("Div", 7, binary_supports, binary_create<BinaryOp::kDiv>);
LOOM_NEON_OP("Relu", 6, unary_supports, unary_create<Activation::kRelu>);
LOOM_NEON_OP("LeakyRelu", 6, unary_supports, unary_create<Activation::kLeakyRelu>);
LOOM_NEON_OP("Sigmoid", 6, unary_supports, unary_create<Activation::kSigmoid>);
LOOM_NEON_OP("Tanh", 6, unary_supports, unary_create<Activation::kTanh>);
LOOM_NEON_OP("HardSigmoid", 6, unary_supports, unary_create<Activation::kHardSigmoid>);
LOOM_NEON_OP("HardSwish", 14, unary_supports, unary_create<Activation::kHardSwish>);
LOOM_NEON_OP("Abs", 6, unary_supports, unary_create<Activation::kAbs>);
LOOM_NEON_OP("Neg", 6, unary_supports, unary_create<Activation::kNeg>);
LOOM_NEON_OP("Exp", 6, unary_supports, unary_create<Activation::kExp>);
LOOM_NEON_OP("Sqrt", 6, unary_supports, unary_create<Activation::kSqrt>);
LOOM_NEON_OP("Clip", 6, clip_supports, clip_create);
LOOM_NEON_OP("Constant", 1, constant_supports, constant_create);
LOOM_NEON_OP("BatchNormalization", 9, batch_norm_supports, batch_norm_create);
LOOM_NEON_OP("Flatten", 1, flatten_supports, flatten_create);

}  // namespace loom::neon
