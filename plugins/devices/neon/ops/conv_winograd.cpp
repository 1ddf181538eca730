#include "ops/conv_winograd.hpp"

#include <algorithm>
#include <vector>

#include "kernels/winograd.hpp"

namespace loom::neon {
namespace {

// Scratch budget of one chunk of tiles: V and M together stay under 4 MiB of floats.
constexpr size_t kChunkFloats = size_t{1} << 20;

}  // namespace

bool WinogradConv::applies(const WindowAttrs& attrs, int64_t cin_per_group,
                           int64_t cout_per_group) {
  return attrs.kernel[0] == 3 && attrs.kernel[1] == 3 && attrs.strides[0] == 1 &&
         attrs.strides[1] == 1 && attrs.dilations[0] == 1 && attrs.dilations[1] == 1 &&
         !attrs.ceil_mode && cin_per_group >= kMinChannels && cout_per_group >= kMinChannels;
}

WinogradConv::WinogradConv(const float* weights, int64_t cout, int64_t cin_per_group, int64_t group,
                           bool fp16)
    : cout_per_group_(static_cast<size_t>(cout / group)),
      cin_per_group_(static_cast<size_t>(cin_per_group)),
      group_(static_cast<size_t>(group)) {
  const size_t m = cout_per_group_, k = cin_per_group_;
  matrix_stride_ = packed_a_floats(m, k);
  const size_t total = matrix_stride_ * kWinogradPositions * group_;
  packed_.half = fp16;
  if (fp16)
    packed_.f16.resize(total);
  else
    packed_.f32.resize(total);
  std::vector<float> u(kWinogradPositions * m * k);
  for (size_t grp = 0; grp < group_; ++grp) {
    winograd_transform_weights(weights + grp * m * k * 9, m, k, u.data());
    for (size_t xi = 0; xi < kWinogradPositions; ++xi) {
      const float* src = u.data() + xi * m * k;
      const size_t offset = (grp * kWinogradPositions + xi) * matrix_stride_;
      if (fp16)
        pack_a_as<uint16_t>(src, k, 1, m, k, packed_.f16.data() + offset, 0,
                            gemm_panels(m, kGemmMR));
      else
        pack_a_as<float>(src, k, 1, m, k, packed_.f32.data() + offset, 0, gemm_panels(m, kGemmMR));
    }
  }
}

void WinogradConv::run(const float* x, int64_t n, const Window2d& g, const float* bias, float* y,
                       const Runtime& rt) const {
  if (packed_.half)
    run_as<uint16_t>(packed_.f16.data(), x, n, g, bias, y, rt);
  else
    run_as<float>(packed_.f32.data(), x, n, g, bias, y, rt);
}

template <typename T>
void WinogradConv::run_as(const T* packed, const float* x, int64_t n, const Window2d& g,
                          const float* bias, float* y, const Runtime& rt) const {
  const WinogradTiles tiles = winograd_tiles(g);
  const size_t total = tiles.count();
  const size_t cin = cin_per_group_, cout = cout_per_group_;
  // Tiles per chunk: a multiple of the GEMM panel width, at least one panel.
  size_t chunk = kChunkFloats / (kWinogradPositions * (cin + cout));
  chunk = std::max(kGemmNR, chunk / kGemmNR * kGemmNR);
  chunk = std::min(chunk, total);
  auto v = scratch_floats(kWinogradPositions * cin * chunk);
  auto m = scratch_floats(kWinogradPositions * cout * chunk);
  const size_t in_plane = static_cast<size_t>(g.ih * g.iw);
  const size_t out_plane = static_cast<size_t>(g.oh * g.ow);
  const size_t channels_in = cin * group_, channels_out = cout * group_;
  for (int64_t img = 0; img < n; ++img) {
    for (size_t grp = 0; grp < group_; ++grp) {
      const float* src = x + (static_cast<size_t>(img) * channels_in + grp * cin) * in_plane;
      float* dst = y + (static_cast<size_t>(img) * channels_out + grp * cout) * out_plane;
      const float* group_bias = bias ? bias + grp * cout : nullptr;
      for (size_t first = 0; first < total; first += chunk) {
        const size_t count = std::min(chunk, total - first);
        rt.parallel_for(cin, 1, [&](size_t begin, size_t end) {
          for (size_t ch = begin; ch < end; ++ch)
            winograd_transform_input(src + ch * in_plane, g, tiles, first, count, v.get(),
                                     cin * count, ch, count);
        });
        for (size_t xi = 0; xi < kWinogradPositions; ++xi)
          gemm_with_packed_a<T>(
              rt, cout, count, cin, packed + (grp * kWinogradPositions + xi) * matrix_stride_,
              v.get() + xi * cin * count, count, 1, nullptr, m.get() + xi * cout * count, count);
        rt.parallel_for(cout, 1, [&](size_t begin, size_t end) {
          for (size_t o = begin; o < end; ++o)
            winograd_transform_output(m.get(), cout * count, o, count, g, tiles, first, count,
                                      group_bias ? group_bias[o] : 0.0f, dst + o * out_plane);
        });
      }
    }
  }
}

}  // namespace loom::neon
