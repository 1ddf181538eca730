#include "kernels/binary_pack4.hpp"

#include <arm_neon.h>

namespace loom::neon {
namespace {

template <BinaryOp Op>
float32x4_t apply(float32x4_t a, float32x4_t b) {
  if constexpr (Op == BinaryOp::kAdd) return vaddq_f32(a, b);
  if constexpr (Op == BinaryOp::kSub) return vsubq_f32(a, b);
  if constexpr (Op == BinaryOp::kMul) return vmulq_f32(a, b);
  return vdivq_f32(a, b);
}

template <BinaryOp Op>
void block(const float* a, bool a_full, const float* b, bool b_full, float* out, size_t plane) {
  if (a_full && b_full) {
    for (size_t i = 0; i < plane; ++i)
      vst1q_f32(out + i * 4, apply<Op>(vld1q_f32(a + i * 4), vld1q_f32(b + i * 4)));
  } else if (a_full) {
    const float32x4_t bv = vld1q_f32(b);
    for (size_t i = 0; i < plane; ++i) vst1q_f32(out + i * 4, apply<Op>(vld1q_f32(a + i * 4), bv));
  } else if (b_full) {
    const float32x4_t av = vld1q_f32(a);
    for (size_t i = 0; i < plane; ++i) vst1q_f32(out + i * 4, apply<Op>(av, vld1q_f32(b + i * 4)));
  } else {
    const float32x4_t v = apply<Op>(vld1q_f32(a), vld1q_f32(b));
    for (size_t i = 0; i < plane; ++i) vst1q_f32(out + i * 4, v);
  }
}

}  // namespace

void binary_pack4_block(BinaryOp op, const float* a, bool a_full, const float* b, bool b_full,
                        float* out, size_t plane) {
  switch (op) {
    case BinaryOp::kAdd:
      return block<BinaryOp::kAdd>(a, a_full, b, b_full, out, plane);
    case BinaryOp::kSub:
      return block<BinaryOp::kSub>(a, a_full, b, b_full, out, plane);
    case BinaryOp::kMul:
      return block<BinaryOp::kMul>(a, a_full, b, b_full, out, plane);
    case BinaryOp::kDiv:
      return block<BinaryOp::kDiv>(a, a_full, b, b_full, out, plane);
  }
}

}  // namespace loom::neon
