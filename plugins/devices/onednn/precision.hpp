// Which parts of a bf16 program keep float32 (`precision=bf16` with the `bf16_f32` option).
//
// Rounding every activation to bfloat16 (8 bits of mantissa) costs most where values are summed
// or normalized: a transformer's residual stream and its layer normalizations, the softmax's
// exponentials, and the last layer, whose rounding nothing averages out. Computing convolutions
// and matrix products in bf16 is where the speed is; the rest is a small share of the time. So,
// as OpenVINO's CPU plugin does for normalizations and softmax, the device can keep in f32:
//   norm      normalizations (Batch-, Layer-, RMS-, Instance-, GroupNormalization): input and
//             output f32, and so, backwards through the elementwise ops that make the input, the
//             residual sum before a transformer's LayerNormalization and its operands;
//   softmax   Softmax and LogSoftmax: input and output f32;
//   residual  every Add or Sum of activations of the same shape (a residual connection):
//             operands and result f32, so a CNN's residual stream is never rounded either;
//   final     the convolutions and matrix products no other one follows (a classifier, a
//             pooler, a language model's head): weights, inputs and result f32.
// The default is norm, softmax and final. `residual` beyond what `norm` keeps measured no
// accuracy gain on ResNet-50 and MobileNetV2 (cosine to f32 0.99532 vs 0.99531 and 0.99614 vs
// 0.99600 over 8 inputs) for 6% and 3.5% more time: every block's first convolution then
// converts the f32 stream back to bf16 (docs/onednn-device.md, "bf16").
// A value kept in f32 is written in f32 by the convolution or matrix product that produces it
// (bf16 inputs and weights, f32 result: no second rounding), also through the elementwise ops
// between them (the scale and mask before a softmax, the bias before a residual sum).
#pragma once

#include <string>
#include <vector>

#include "ir.hpp"

namespace loom::onednn {

struct Bf16Keep {
  bool norm = true, softmax = true, residual = false, final = true;  // the option's default
};

// From the option's items (norm, softmax, residual, final; none: everything in bf16), and back.
Bf16Keep bf16_keep_from(const std::vector<std::string>& names);
std::vector<std::string> bf16_keep_names(const Bf16Keep& keep);

struct PrecisionPlan {
  std::vector<bool> f32_values;  // per value: stored in f32 by the op that produces it
  std::vector<bool> f32_nodes;   // per node: computes in f32
};

// Conv, ConvTranspose, MatMul, Gemm: the ops that compute in bf16 under precision=bf16.
bool bf16_compute_op(const std::string& op);
// The plan for a bf16 program over `g` (after the rewrite passes, before emission).
PrecisionPlan plan_precision(const IrGraph& g, const Bf16Keep& keep);

}  // namespace loom::onednn
