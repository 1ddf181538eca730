// Winograd F(2x2, 3x3) transforms for 3x3 stride-1 convolutions (Lavin & Gray, 2015).
//
// Each 2x2 block of outputs ("tile") is computed from the 4x4 input patch under it:
//   Y = A^T [ (G g G^T) .* (B^T d B) ] A
// The element-wise product summed over input channels is, for each of the 16 positions of the
// 4x4 transformed tile, one matrix product U[xi] (Cout x Cin) * V[xi] (Cin x tiles), which
// the packed GEMM computes: 2.25x fewer multiplies than the direct 3x3 (16 instead of 36 per
// tile and channel pair). The weight transform U runs once at compile time; the input and
// output transforms are additions only.
//
// Layouts: U, V and M are 16 matrices back to back (xi = 4 * row + column of the 4x4 tile);
// V[xi] is Cin x tiles and M[xi] is Cout x tiles, both row-major with row stride `ld`.
#pragma once

#include <cstddef>

#include "kernels/window.hpp"

namespace loom::neon {

inline constexpr size_t kWinogradPositions = 16;  // 4x4 transformed tile

// Output tiles of a plane: ceil(oh / 2) x ceil(ow / 2).
struct WinogradTiles {
  size_t rows = 0, cols = 0;
  size_t count() const { return rows * cols; }
};
WinogradTiles winograd_tiles(const Window2d& g);

// u[xi * cout * cin + o * cin + i] = (G g[o][i] G^T)[xi] for weights g of shape
// [cout][cin][3][3].
void winograd_transform_weights(const float* g, size_t cout, size_t cin, float* u);

// Transforms tiles [first, first + count) of one input channel plane into row `ch` of every
// V[xi]: v[xi * v_matrix + ch * ld + (t - first)]. Padding reads as zero.
void winograd_transform_input(const float* plane, const Window2d& g, const WinogradTiles& tiles,
                              size_t first, size_t count, float* v, size_t v_matrix, size_t ch,
                              size_t ld);

// Inverse-transforms row `o` of every M[xi] (tiles [first, first + count)) into the output
// plane of channel o, adding `bias`; tiles hanging over the bottom/right edge are clipped.
void winograd_transform_output(const float* m, size_t m_matrix, size_t o, size_t ld,
                               const Window2d& g, const WinogradTiles& tiles, size_t first,
                               size_t count, float bias, float* plane);

}  // namespace loom::neon
