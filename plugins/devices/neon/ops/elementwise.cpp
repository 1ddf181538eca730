// Elementwise ops: Add/Sub/Mul/Div (broadcasting), the activations and unary math of
// kernels/activation.hpp, inference BatchNormalization, Flatten (a free reshape) and float
// Constant nodes.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/activation.hpp"
#include "kernels/binary.hpp"
#include "ops/op.hpp"

namespace loom::neon {
namespace {

constexpr size_t kElementGrain = 16384;  // elements per chunk worth a thread

// ---- binary ------------------------------------------------------------------------------

std::string binary_supports(const loom_graph_t& graph, const loom_node_t& node) {
  return require_float32(graph, node);
}

class BinaryOpImpl final : public Op {
 public:
  explicit BinaryOpImpl(BinaryOp op) : op_(op) {}
  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    const BroadcastPlan plan = plan_broadcast(a.dims, b.dims);
    out[0] = make_tensor(plan.out_dims);
    const size_t rows = plan.outer();
    const size_t grain = std::max<size_t>(1, kElementGrain / std::max<size_t>(plan.inner(), 1));
    rt.parallel_for(rows, grain, [&](size_t begin, size_t end) {
      binary_rows(op_, plan, a.data, b.data, out[0].data, begin, end);
    });
  }

 private:
  BinaryOp op_;
};

template <BinaryOp Kind>
std::unique_ptr<Op> binary_create(const loom_graph_t&, const loom_node_t&, const CompileOptions&) {
  return std::make_unique<BinaryOpImpl>(Kind);
}

// ---- unary -------------------------------------------------------------------------------

class ActivationOp final : public Op {
 public:
  ActivationOp(Activation kind, ActivationParams params) : kind_(kind), params_(params) {}
  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& x = *in[0];
    out[0] = make_tensor(x.dims);
    const size_t n = x.size();
    rt.parallel_for(n, kElementGrain, [&](size_t begin, size_t end) {
      activation(kind_, params_, x.data + begin, out[0].data + begin, end - begin);
    });
  }

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
    const Tensor& x = *in[0];
    out[0] = make_tensor(x.dims);
    rt.parallel_for(x.size(), kElementGrain, [&](size_t begin, size_t end) {
      activation(Activation::kClip, p, x.data + begin, out[0].data + begin, end - begin);
    });
  }

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
    for (size_t i = 0; i < c; ++i) {
      mul_[i] = scale[i] / std::sqrt(var[i] + epsilon);
      add_[i] = bias[i] - mean[i] * mul_[i];
    }
  }

  void run(std::span<const Tensor* const> in, std::span<Tensor> out, const Runtime& rt) override {
    const Tensor& x = *in[0];
    if (x.rank() < 2 || static_cast<size_t>(x.dims[1]) != mul_.size())
      fail(LOOM_ERROR_INVALID_ARGUMENT, "input of shape " + shape_text(x.dims) + " does not have " +
                                            std::to_string(mul_.size()) + " channels");
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
