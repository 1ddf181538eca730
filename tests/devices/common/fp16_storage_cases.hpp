// Models for the fp16-storage tests of the accelerator devices (opencl and vulkan with
// precision=f16): one per kernel family that storing float tensors as halves touches, each
// compared by the device's test against the f32 cpu reference device with the fp16 tolerance.
// Every op here is claimed by both devices, so the tests run them with --no-fallback; a device
// adds its own cases for what only it covers.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "device_test_support.hpp"

namespace loom::device_testing {

struct ModelCase {
  std::string name;
  ModelBuilder model;
  std::vector<std::pair<std::string, Tensor>> inputs;
};

// Conv (pointwise, 3x3 stride 2, depthwise, 7x7 stride 2) + BatchNormalization + Relu,
// standalone BatchNormalization, Gemm, batched MatMul, the four pools, unary and broadcast
// binary elementwise ops, Softmax, LayerNormalization, reductions over two axes, and the
// movement kernels (Transpose, negative-step Slice, Concat, Split, float and int64 Gather, a
// Constant node, Reshape) together with Resize nearest and linear.
std::vector<ModelCase> fp16_storage_cases();

// The nearest binary16 value of `v` (normal range), to predict what fp16 storage keeps.
float round_to_half(float v);

}  // namespace loom::device_testing
