// Type and shape inference of Attention, opsets 23-25 (core/src/schemas/infer_attention.cpp).
#include "shape_inference_test_util.hpp"

namespace {

constexpr loom_dtype_t F16 = LOOM_DTYPE_FLOAT16;

TEST(AttentionInference, FourDInputsWithPastAndAllOutputs) {
  auto out = TestNode("Attention", 23)
                 .input(F32, {2, 8, 3, 16})
                 .input(F32, {2, 4, 5, 16})
                 .input(F16, {2, 4, 5, 32})
                 .omitted()
                 .input(F32, {2, 4, 7, 16})
                 .input(F16, {2, 4, 7, 32})
                 .outputs(4)
                 .infer();
  EXPECT_INFERRED(out[0], F32, {2, 8, 3, 32});
  EXPECT_INFERRED(out[1], F32, {2, 4, 12, 16});
  EXPECT_INFERRED(out[2], F16, {2, 4, 12, 32});
  EXPECT_INFERRED(out[3], F32, {2, 8, 3, 12});
}

TEST(AttentionInference, ThreeDInputsUseTheHeadAttributes) {
  auto out = TestNode("Attention", 24)
                 .input(F32, {U, 3, 64})
                 .input(F32, {2, 5, 32})
                 .input(F32, {2, U, 48})
                 .attr("q_num_heads", int64_t{4})
                 .attr("kv_num_heads", int64_t{2})
                 .outputs(4)
                 .infer();
  EXPECT_INFERRED(out[0], F32, {2, 3, 96});  // 4 heads of 48 / 2
  EXPECT_INFERRED(out[1], F32, {2, 2, 5, 16});
  EXPECT_INFERRED(out[2], F32, {2, 2, 5, 24});
  EXPECT_INFERRED(out[3], F32, {2, 4, 3, 5});
}

TEST(AttentionInference, UnknownRanksKeepTheTypes) {
  auto out = TestNode("Attention", 23)
                 .unknown_rank_input(F32)
                 .unknown_rank_input(F32)
                 .unknown_rank_input(F16)
                 .outputs(4)
                 .infer();
  EXPECT_EQ(out[0].dtype, F32);
  EXPECT_EQ(out[0].rank, -1);
  EXPECT_EQ(out[2].dtype, F16);
  EXPECT_EQ(out[3].rank, 4);
}

TEST(AttentionInference, Errors) {
  TestNode heads("Attention", 23);
  heads.input(F32, {1, 3, 2, 4}).input(F32, {1, 2, 2, 4}).input(F32, {1, 2, 2, 4});
  expect_invalid(heads, "3 query heads are not a multiple of 2 key/value heads");
  TestNode three_d("Attention", 23);
  three_d.input(F32, {1, 2, 8}).input(F32, {1, 2, 8}).input(F32, {1, 2, 8});
  expect_invalid(three_d, "need positive q_num_heads and kv_num_heads");
  TestNode hidden("Attention", 23);
  hidden.input(F32, {1, 2, 9}).input(F32, {1, 2, 8}).input(F32, {1, 2, 8});
  hidden.attr("q_num_heads", int64_t{2}).attr("kv_num_heads", int64_t{2});
  expect_invalid(hidden, "Q hidden size 9 is not a multiple of the 2 heads");
  TestNode mask("Attention", 23);
  mask.input(F32, {1, 1, 2, 4}).input(F32, {1, 1, 3, 4}).input(F32, {1, 1, 3, 4});
  mask.input(BOOL, {2, 4});
  expect_invalid(mask, "attn_mask [2,4] does not broadcast to [1,1,2,3]");
  TestNode four_d_heads("Attention", 25);
  four_d_heads.input(F32, {1, 1, 2, 4}).input(F32, {1, 1, 2, 4}).input(F32, {1, 1, 2, 4});
  four_d_heads.attr("q_num_heads", int64_t{1});
  expect_invalid(four_d_heads, "must not be given with 4-D inputs");
  TestNode window("Attention", 25);
  window.input(F32, {1, 1, 2, 4}).input(F32, {1, 1, 2, 4}).input(F32, {1, 1, 2, 4});
  window.attr("left_window_size", int64_t{-2});
  expect_invalid(window, "left_window_size -2 must be -1 or >= 0");
  TestNode nonpad("Attention", 24);
  nonpad.input(F32, {1, 1, 2, 4}).input(F32, {1, 1, 2, 4}).input(F32, {1, 1, 2, 4});
  nonpad.omitted().input(F32, {1, 1, 1, 4}).input(F32, {1, 1, 1, 4}).input(I64, {1});
  expect_invalid(nonpad, "cannot be combined with past_key");
}

}  // namespace
