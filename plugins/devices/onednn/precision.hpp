// Which parts of a bf16 program keep float32 (`precision=bf16` with the `bf16_f32` option).
//
// Rounding every activation to bfloat16 (8 bits of mantissa) costs most where values are summed
// or normalized: a transformer's residual stream and its layer normalizations, the softmax's
// exponentials, and the last layer, whose rounding nothing averages out. Computing convolutions
// and matrix products in bf16 is where the speed is; the rest is a small share of the time. So,
// as OpenVINO's CPU plugin does, the device keeps these in f32 by default:
//   norm      normalizations (Batch-, Layer-, RMS-, Instance-, GroupNormalization...): input and
//             output f32;
//   softmax   Softmax and LogSoftmax: input and output f32;
//   residual  an Add or Sum of activations of the same shape (a residual connection): operands
//             and result f32, so the stream that carries a network's state is never rounded;
//   final     the convolutions and matrix products no other one follows (a classifier, the last
//             projection): weights, inputs and result f32.
// A value kept in f32 is written in f32 by the convolution or matrix product that produces it
// (bf16 inputs and weights, f32 result: no second rounding), also through the elementwise ops
// between them (the scale and mask before a softmax, the bias before a residual sum).
#pragma once

#include <string>
#include <vector>

#include "ir.hpp"

namespace loom::onednn {

struct Bf16Keep {
  bool norm = true, softmax = true, residual = true, final = true;
};

// From the option's items (norm, softmax, residual, final; none: everything in bf16).
Bf16Keep bf16_keep_from(const std::vector<std::string>& names);

struct PrecisionPlan {
  std::vector<bool> f32_values;  // per value: stored in f32 by the op that produces it
  std::vector<bool> f32_nodes;   // per node: computes in f32
};

// Conv, ConvTranspose, MatMul, Gemm: the ops that compute in bf16 under precision=bf16.
bool bf16_compute_op(const std::string& op);
// The plan for a bf16 program over `g` (after the rewrite passes, before emission).
PrecisionPlan plan_precision(const IrGraph& g, const Bf16Keep& keep);

}  // namespace loom::onednn
