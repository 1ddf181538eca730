// Shape inference of the transformer building blocks of opsets 20+ (RMSNormalization,
// RotaryEmbedding, Gelu, Swish, SwiGLU; see newer_schema_table.cpp).
#include <string>

#include "infer_util.hpp"
#include "schema_rows.hpp"

namespace loom::core {
namespace {

using infer::adapt;
using infer::Dims;
using infer::dims_to_string;
using infer::kUnknownDim;
using infer::NodeView;

bool is_float_code(int64_t code) {
  return code == LOOM_DTYPE_FLOAT32 || code == LOOM_DTYPE_FLOAT64 || code == LOOM_DTYPE_FLOAT16 ||
         code == LOOM_DTYPE_BFLOAT16;
}

// Inputs a and b must have the same element type when both are known.
void check_same_dtype(const NodeView& v, size_t a, size_t b, const char* what_a,
                      const char* what_b) {
  const loom_dtype_t ta = v.dtype(a), tb = v.dtype(b);
  if (ta != LOOM_DTYPE_UNDEFINED && tb != LOOM_DTYPE_UNDEFINED && ta != tb)
    v.fail(std::string(what_b) + " is " + sdk::dtype_name(tb) + " but " + what_a + " is " +
           sdk::dtype_name(ta));
}

// Gelu-20: Y = X; `approximate` is none or tanh.
void gelu(NodeView& v) {
  const std::string approximate = v.attrs().get_string("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    v.fail("approximate='" + approximate + "' is not one of none, tanh");
  v.propagate(0, 0);
}

// SwiGLU-28(A, B): Y = Swish_alpha(A) * B; A and B have identical shapes (no broadcasting) and
// types, and Y has them too.
void swiglu(NodeView& v) {
  check_same_dtype(v, 0, 1, "A", "B");
  std::optional<Dims> a = v.shape(0), b = v.shape(1);
  if (a && b) {
    if (a->size() != b->size())
      v.fail("A " + dims_to_string(*a) + " and B " + dims_to_string(*b) +
             " must have the same shape (SwiGLU does not broadcast)");
    for (size_t k = 0; k < a->size(); ++k)
      (*a)[k] = infer::merge_dim(v, (*a)[k], (*b)[k],
                                 "extents of dimension " + std::to_string(k) + " of A and B");
  }
  const loom_dtype_t dtype = v.dtype(0) != LOOM_DTYPE_UNDEFINED ? v.dtype(0) : v.dtype(1);
  v.set_output(0, dtype, a ? a : b);
}

// RMSNormalization-23(X, scale): Y has X's shape and scale's element type (the schema's V; it
// equals X's type T in every model whose function body is valid). `axis` in [-r, r); scale
// broadcasts unidirectionally to X; stash_type is a float type.
void rms_norm(NodeView& v) {
  const int64_t stash = v.attrs().get_int("stash_type", LOOM_DTYPE_FLOAT32);
  if (!is_float_code(stash))
    v.fail("stash_type " + std::to_string(stash) + " is not a floating-point type");
  const loom_dtype_t dtype = v.dtype(1) != LOOM_DTYPE_UNDEFINED ? v.dtype(1) : v.dtype(0);
  std::optional<Dims> x = v.shape(0);
  if (!x) {
    v.set_output_dtype(0, dtype);
    return;
  }
  const int64_t rank = static_cast<int64_t>(x->size());
  if (rank == 0) v.fail("X must have rank >= 1, got a scalar");
  v.normalize_axis(v.attrs().get_int("axis", -1), rank);
  if (std::optional<Dims> scale = v.shape(1))
    infer::check_broadcasts_to(v, *scale, *x, "scale (input 1)");
  v.set_output(0, dtype, *x);
}

// RotaryEmbedding's attributes, checked.
struct RotaryAttrs {
  int64_t rotary_dim;
  bool has_heads;
  int64_t num_heads;
};

// The input types and attributes of RotaryEmbedding, checked.
RotaryAttrs check_rotary_attributes(const NodeView& v) {
  check_same_dtype(v, 0, 1, "X", "cos_cache");
  check_same_dtype(v, 0, 2, "X", "sin_cache");
  if (v.has_input(3) && v.dtype(3) != LOOM_DTYPE_UNDEFINED && v.dtype(3) != LOOM_DTYPE_INT64)
    v.fail(std::string("position_ids must be int64, got ") + sdk::dtype_name(v.dtype(3)));
  const int64_t interleaved = v.attrs().get_int("interleaved", 0);
  if (interleaved != 0 && interleaved != 1)
    v.fail("interleaved " + std::to_string(interleaved) + " is not 0 or 1");
  const int64_t rotary_dim = v.attrs().get_int("rotary_embedding_dim", 0);
  if (rotary_dim < 0) v.fail("rotary_embedding_dim " + std::to_string(rotary_dim) + " is negative");
  if (rotary_dim % 2 != 0) v.fail("rotary_embedding_dim " + std::to_string(rotary_dim) + " is odd");
  const bool has_heads = v.attrs().has("num_heads");
  const int64_t num_heads = v.attrs().get_int("num_heads", 0);
  if (has_heads && num_heads <= 0)
    v.fail("num_heads " + std::to_string(num_heads) + " must be positive");
  return {rotary_dim, has_heads, num_heads};
}

// X's batch, sequence and head-size extents (kUnknownDim where open).
struct RotaryExtents {
  int64_t batch = kUnknownDim, seq = kUnknownDim, head_size = kUnknownDim;
};

// The extents of X (3-D or 4-D), checked against the attributes.
RotaryExtents rotary_x_extents(const NodeView& v, const std::optional<Dims>& x,
                               const RotaryAttrs& a) {
  RotaryExtents e;
  if (!x) return e;
  if (x->size() != 3 && x->size() != 4)
    v.fail("X " + dims_to_string(*x) +
           " must be 3-D [batch, seq, hidden] or 4-D "
           "[batch, num_heads, seq, head_size]");
  e.batch = (*x)[0];
  if (x->size() == 4) {
    e.seq = (*x)[2];
    e.head_size = (*x)[3];
  } else {
    if (!a.has_heads)
      v.fail("X " + dims_to_string(*x) + " is 3-D: attribute num_heads is required");
    e.seq = (*x)[1];
    const int64_t hidden = (*x)[2];
    if (hidden >= 0) {
      if (hidden % a.num_heads != 0)
        v.fail("hidden size " + std::to_string(hidden) + " is not a multiple of num_heads " +
               std::to_string(a.num_heads));
      e.head_size = hidden / a.num_heads;
    }
  }
  if (e.head_size >= 0) {
    if (a.rotary_dim > e.head_size)
      v.fail("rotary_embedding_dim " + std::to_string(a.rotary_dim) + " exceeds the head size " +
             std::to_string(e.head_size));
    if (a.rotary_dim == 0 && e.head_size % 2 != 0)
      v.fail("head size " + std::to_string(e.head_size) + " is odd");
  }
  return e;
}

// `what` (a cache or position_ids, [batch, seq, ...]) must match X in its batch and sequence
// extents, or be 1 there (broadcast).
void check_batch_seq(const NodeView& v, const std::string& what, const Dims& c,
                     const std::optional<Dims>& x, const RotaryExtents& e) {
  const int64_t want[2] = {e.batch, e.seq};
  for (size_t k = 0; k < 2; ++k)
    if (c[k] > 1 && want[k] >= 0 && c[k] != want[k])
      v.fail(what + " " + dims_to_string(c) + " does not match X " + dims_to_string(*x) +
             " in its " + (k == 0 ? "batch" : "sequence") + " extent");
}

// The caches: same shape, rank 2 with position_ids, rank 3 without, with at least `half`
// values per position.
void check_rotary_caches(const NodeView& v, const std::optional<Dims>& x, const RotaryExtents& e,
                         int64_t half) {
  const bool with_ids = v.has_input(3);
  std::optional<Dims> cos = v.shape(1), sin = v.shape(2);
  for (auto [cache, what] : {std::pair{&cos, "cos_cache"}, std::pair{&sin, "sin_cache"}}) {
    if (!*cache) continue;
    const Dims& c = **cache;
    if (c.size() != (with_ids ? 2u : 3u))
      v.fail(std::string(what) + " " + dims_to_string(c) + " must be " +
             (with_ids ? "2-D [max_position, rotary_dim/2] with position_ids"
                       : "3-D [batch, seq, rotary_dim/2] without position_ids"));
    if (half >= 0 && c.back() >= 0 && c.back() < half)
      v.fail(std::string(what) + " " + dims_to_string(c) + " has fewer than the " +
             std::to_string(half) + " values per position a rotation of " +
             std::to_string(2 * half) + " needs");
    // Without position_ids the caches are per (batch, seq), broadcast where their extent is 1.
    if (!with_ids) check_batch_seq(v, what, c, x, e);
  }
  if (cos && sin && *cos != *sin) {
    bool clash = cos->size() != sin->size();
    for (size_t k = 0; !clash && k < cos->size(); ++k)
      clash = (*cos)[k] >= 0 && (*sin)[k] >= 0 && (*cos)[k] != (*sin)[k];
    if (clash)
      v.fail("cos_cache " + dims_to_string(*cos) + " and sin_cache " + dims_to_string(*sin) +
             " differ in shape");
  }
}

// RotaryEmbedding-23(X, cos_cache, sin_cache, position_ids?): Y = X. X is 4-D
// [batch, num_heads, seq, head_size] or 3-D [batch, seq, hidden] with the num_heads attribute;
// the caches are [max_position, >= rotary_dim/2] with position_ids [batch, seq], or
// [batch, seq, >= rotary_dim/2] without.
void rotary_embedding(NodeView& v) {
  const RotaryAttrs a = check_rotary_attributes(v);
  std::optional<Dims> x = v.shape(0);
  const RotaryExtents e = rotary_x_extents(v, x, a);
  const int64_t half =
      a.rotary_dim > 0 ? a.rotary_dim / 2 : (e.head_size >= 0 ? e.head_size / 2 : -1);
  check_rotary_caches(v, x, e, half);
  if (v.has_input(3)) {
    if (std::optional<Dims> ids = v.shape(3)) {
      if (ids->size() != 2)
        v.fail("position_ids " + dims_to_string(*ids) + " must be 2-D [batch, seq]");
      check_batch_seq(v, "position_ids", *ids, x, e);
    }
  }
  v.propagate(0, 0);
}

constexpr InferEntry kEntries[] = {
    {"", "Gelu", adapt<gelu>},
    {"", "Swish", adapt<infer::same_as_input>},
    {"", "SwiGLU", adapt<swiglu>},
    {"", "RMSNormalization", adapt<rms_norm>},
    {"", "RotaryEmbedding", adapt<rotary_embedding>},
};

}  // namespace

std::span<const InferEntry> transformer_infer_entries() {
  return kEntries;
}

}  // namespace loom::core
