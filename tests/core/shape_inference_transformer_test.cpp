// Type and shape inference of the transformer building blocks of opsets 20-28
// (core/src/schemas/infer_transformer.cpp): RMSNormalization, RotaryEmbedding, Gelu, Swish,
// SwiGLU.
#include "shape_inference_test_util.hpp"

namespace {

constexpr loom_dtype_t F16 = LOOM_DTYPE_FLOAT16;
constexpr loom_dtype_t BF16 = LOOM_DTYPE_BFLOAT16;

TEST(TransformerInference, ActivationsKeepTheInput) {
  EXPECT_INFERRED(TestNode("Gelu", 20).input(F16, {U, 128, 3072}).infer0(), F16, {U, 128, 3072});
  EXPECT_INFERRED(TestNode("Gelu", 20).input(F32, {3}).attr("approximate", "tanh").infer0(), F32,
                  {3});
  TestNode bad_gelu("Gelu", 20);
  bad_gelu.input(F32, {3}).attr("approximate", "fast");
  expect_invalid(bad_gelu, "approximate='fast' is not one of none, tanh");
  EXPECT_INFERRED(TestNode("Swish", 24).input(BF16, {2, U}).attr("alpha", 1.702f).infer0(), BF16,
                  {2, U});
}

TEST(TransformerInference, SwiGLUMergesTheTwoShapes) {
  EXPECT_INFERRED(TestNode("SwiGLU", 28).input(F32, {U, 16, 64}).input(F32, {4, U, 64}).infer0(),
                  F32, {4, 16, 64});
  auto unknown = TestNode("SwiGLU", 28).unknown_rank_input(F16).input(F16, {2, 3}).infer0();
  EXPECT_INFERRED(unknown, F16, {2, 3});
  TestNode broadcast("SwiGLU", 28);
  broadcast.input(F32, {2, 3}).input(F32, {3});
  expect_invalid(broadcast, "must have the same shape");
  TestNode extents("SwiGLU", 28);
  extents.input(F32, {2, 3}).input(F32, {2, 4});
  expect_invalid(extents, "disagree: 3 vs 4");
  TestNode types("SwiGLU", 28);
  types.input(F32, {2}).input(F16, {2});
  expect_invalid(types, "B is float16 but A is float32");
}

TEST(TransformerInference, RMSNormalization) {
  EXPECT_INFERRED(
      TestNode("RMSNormalization", 23).input(F32, {U, 128, 768}).input(F32, {768}).infer0(), F32,
      {U, 128, 768});
  // Y has scale's type (V).
  EXPECT_INFERRED(TestNode("RMSNormalization", 23)
                      .input(F16, {2, 3, 4})
                      .input(F32, {3, 4})
                      .attr("axis", int64_t{1})
                      .infer0(),
                  F32, {2, 3, 4});
  // A scale broadcasting to all of X, leading dimensions included.
  EXPECT_INFERRED(
      TestNode("RMSNormalization", 23).input(F32, {2, 3, 4}).input(F32, {2, 1, 4}).infer0(), F32,
      {2, 3, 4});
  TestNode axis("RMSNormalization", 23);
  axis.input(F32, {2, 3}).input(F32, {3}).attr("axis", int64_t{-3});
  expect_invalid(axis, "axis -3 is out of range for rank 2");
  TestNode scale("RMSNormalization", 23);
  scale.input(F32, {2, 3}).input(F32, {4});
  expect_invalid(scale, "scale (input 1) [4] does not broadcast to [2,3]");
  TestNode stash("RMSNormalization", 23);
  stash.input(F32, {2, 3}).input(F32, {3}).attr("stash_type", int64_t{LOOM_DTYPE_INT8});
  expect_invalid(stash, "stash_type 3 is not a floating-point type");
}

TEST(TransformerInference, RotaryEmbedding) {
  // 4-D X with position_ids, 3-D X with num_heads, 3-D caches without position_ids.
  EXPECT_INFERRED(TestNode("RotaryEmbedding", 23)
                      .input(F32, {2, 4, 3, 8})
                      .input(F32, {50, 4})
                      .input(F32, {50, 4})
                      .input(I64, {2, 3})
                      .infer0(),
                  F32, {2, 4, 3, 8});
  EXPECT_INFERRED(TestNode("RotaryEmbedding", 23)
                      .input(F16, {U, U, 32})
                      .input(F16, {50, 2})
                      .input(F16, {50, 2})
                      .input(I64, {U, U})
                      .attr("num_heads", int64_t{4})
                      .attr("rotary_embedding_dim", int64_t{4})
                      .infer0(),
                  F16, {U, U, 32});
  EXPECT_INFERRED(TestNode("RotaryEmbedding", 23)
                      .input(F32, {2, 4, 3, 8})
                      .input(F32, {1, 3, 4})
                      .input(F32, {1, 3, 4})
                      .infer0(),
                  F32, {2, 4, 3, 8});

  auto node = [](Dims x, Dims cache, std::optional<Dims> ids) {
    TestNode n("RotaryEmbedding", 23);
    n.input(F32, x).input(F32, cache).input(F32, cache);
    if (ids) n.input(I64, *ids);
    return n;
  };
  TestNode no_heads = node({2, 3, 32}, {50, 4}, Dims{2, 3});
  expect_invalid(no_heads, "attribute num_heads is required");
  TestNode uneven = node({2, 3, 30}, {50, 4}, Dims{2, 3});
  uneven.attr("num_heads", int64_t{4});
  expect_invalid(uneven, "hidden size 30 is not a multiple of num_heads 4");
  TestNode rank2 = node({2, 8}, {50, 4}, Dims{2, 3});
  expect_invalid(rank2, "must be 3-D");
  TestNode narrow = node({2, 4, 3, 8}, {50, 3}, Dims{2, 3});
  expect_invalid(narrow, "fewer than the 4 values per position");
  TestNode wide = node({2, 4, 3, 8}, {50, 6}, Dims{2, 3});
  wide.attr("rotary_embedding_dim", int64_t{12});
  expect_invalid(wide, "rotary_embedding_dim 12 exceeds the head size 8");
  TestNode odd = node({2, 4, 3, 8}, {50, 4}, Dims{2, 3});
  odd.attr("rotary_embedding_dim", int64_t{3});
  expect_invalid(odd, "rotary_embedding_dim 3 is odd");
  TestNode cache_rank = node({2, 4, 3, 8}, {2, 3, 4}, Dims{2, 3});
  expect_invalid(cache_rank, "must be 2-D [max_position, rotary_dim/2] with position_ids");
  TestNode cache_batch = node({2, 4, 3, 8}, {3, 3, 4}, std::nullopt);
  expect_invalid(cache_batch, "does not match X [2,4,3,8] in its batch extent");
  TestNode ids = node({2, 4, 3, 8}, {50, 4}, Dims{2, 5});
  expect_invalid(ids, "position_ids [2,5] does not match X [2,4,3,8] in its sequence extent");
  TestNode types("RotaryEmbedding", 23);
  types.input(F32, {2, 4, 3, 8}).input(F16, {50, 4}).input(F32, {50, 4}).input(I64, {2, 3});
  expect_invalid(types, "cos_cache is float16 but X is float32");
}

}  // namespace
