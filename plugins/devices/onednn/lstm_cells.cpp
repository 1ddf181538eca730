#include "lstm_cells.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <loom/vector_math.hpp>

#include "matvec.hpp"

namespace loom::onednn {
namespace {

#if defined(__x86_64__)
// One step of one sequence: `gates` holds the i, o, f, c pre-activations ([4H]); c and h are
// updated in place (c_t = f c_{t-1} + i g, h_t = o tanh(c_t)).
__attribute__((target("avx512f"))) void cells_avx512(const float* gates, float* c, float* h,
                                                     int64_t hidden) {
  for (int64_t j = 0; j < hidden; j += 16) {
    const __mmask16 m = hidden - j >= 16 ? static_cast<__mmask16>(0xFFFF)
                                         : static_cast<__mmask16>((1u << (hidden - j)) - 1u);
    const __m512 i = sdk::sigmoid_ps(_mm512_maskz_loadu_ps(m, gates + j));
    const __m512 o = sdk::sigmoid_ps(_mm512_maskz_loadu_ps(m, gates + hidden + j));
    const __m512 f = sdk::sigmoid_ps(_mm512_maskz_loadu_ps(m, gates + 2 * hidden + j));
    const __m512 g = sdk::tanh_ps(_mm512_maskz_loadu_ps(m, gates + 3 * hidden + j));
    const __m512 cell = _mm512_fmadd_ps(f, _mm512_maskz_loadu_ps(m, c + j), _mm512_mul_ps(i, g));
    _mm512_mask_storeu_ps(c + j, m, cell);
    _mm512_mask_storeu_ps(h + j, m, _mm512_mul_ps(o, sdk::tanh_ps(cell)));
  }
}
#endif

// One direction's recurrence over every step, on the calling thread.
void recurrence(const SmallLstm& l, int64_t d, const float* pre, const float* h0, const float* c0,
                float* y, float* y_h, float* y_c) {
  const int64_t T = l.steps, N = l.batch, H = l.hidden, D = l.directions, G = 4 * H;
  std::vector<float> h(static_cast<size_t>(N * H), 0.f), c(h), gates(static_cast<size_t>(G));
  if (h0) std::copy(h0 + d * N * H, h0 + (d + 1) * N * H, h.begin());
  if (c0) std::copy(c0 + d * N * H, c0 + (d + 1) * N * H, c.begin());
  const bool backward = D == 2 ? d == 1 : l.reverse;
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = backward ? T - 1 - s : s;
    for (int64_t n = 0; n < N; ++n) {
      float* hn = h.data() + n * H;
      float* cn = c.data() + n * H;
      matvec_serial(hn, l.r[static_cast<size_t>(d)].data(), pre + (t * N + n) * D * G + d * G, 1.f,
                    gates.data(), H, G);
#if defined(__x86_64__)
      cells_avx512(gates.data(), cn, hn, H);
#endif
      if (y) std::memcpy(y + ((t * D + d) * N + n) * H, hn, static_cast<size_t>(H) * 4);
    }
  }
  if (y_h) std::copy(h.begin(), h.end(), y_h + d * N * H);
  if (y_c) std::copy(c.begin(), c.end(), y_c + d * N * H);
}

}  // namespace

bool small_lstm_available() {
#if defined(__x86_64__)
  return matvec_kernel_runs_here(MatvecKernel::kAvx512);
#else
  return false;
#endif
}

SmallLstm make_small_lstm(int64_t steps, int64_t batch, int64_t hidden, int64_t directions,
                          bool reverse, const std::vector<float>& r) {
  SmallLstm l;
  l.steps = steps;
  l.batch = batch;
  l.hidden = hidden;
  l.directions = directions;
  l.reverse = reverse;
  const int64_t G = 4 * hidden;
  for (int64_t d = 0; d < directions; ++d) {
    l.r.emplace_back(static_cast<size_t>(matvec_packed_size(hidden, G)));
    pack_matvec_weights(r.data() + d * G * hidden, hidden, G, /*transposed=*/true,
                        l.r.back().data());
  }
  return l;
}

void run_small_lstm(const SmallLstm& l, const float* pre, const float* h0, const float* c0,
                    float* y, float* y_h, float* y_c) {
  // One thread per direction: each step of a direction waits for the one before.
  const int threads = static_cast<int>(std::min<int64_t>(l.directions, omp_get_max_threads()));
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int64_t d = 0; d < l.directions; ++d) recurrence(l, d, pre, h0, c0, y, y_h, y_c);
}

}  // namespace loom::onednn
