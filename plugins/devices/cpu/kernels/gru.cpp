// GRU (opsets 7, 14): gate order z, r, h in W/R/B, linear_before_reset, clip, any
// activations, three directions, sequence_lens, layout.
//   z = f(x·Wzᵀ + h·Rzᵀ + Wbz + Rbz)      r = f(x·Wrᵀ + h·Rrᵀ + Wbr + Rbr)
//   n = g(x·Whᵀ + (r⊙h)·Rhᵀ + Rbh + Wbh)          (linear_before_reset = 0)
//   n = g(x·Whᵀ + r⊙(h·Rhᵀ + Rbh) + Wbh)          (linear_before_reset != 0)
//   h' = (1 - z)⊙n + z⊙h
#include <type_traits>

#include "rnn_common.hpp"

namespace loom::cpu {
namespace {

template <typename Acc>
void run_gru(KernelContext& ctx, const rnn::RnnConfig& cfg, loom_dtype_t dtype) {
  const int64_t S = cfg.seq, N = cfg.batch, I = cfg.input, H = cfg.hidden, D = cfg.dirs;
  const bool linear_before_reset =
      ctx.opset() >= 3 && ctx.attrs().get_int("linear_before_reset", 0) != 0;
  auto X = rnn::read_input_view<Acc>(ctx, cfg, 0, "X", {S, N, I}, true);
  auto W = rnn::read_input_view<Acc>(ctx, cfg, 1, "W", {D, 3 * H, I}, false);
  auto R = rnn::read_input_view<Acc>(ctx, cfg, 2, "R", {D, 3 * H, H}, false);
  auto B = rnn::read_input_view<Acc>(ctx, cfg, 3, "B", {D, 6 * H}, false);
  auto h_state = rnn::read_input<Acc>(ctx, cfg, 5, "initial_h", {D, N, H}, true);

  const ParallelFor parallel = parallel_for_of(ctx);
  std::vector<Acc> Y(static_cast<size_t>(S * D * N * H), Acc(0));
  std::vector<Acc> xw(static_cast<size_t>(S * N * 3 * H));
  std::vector<Acc> hzr(static_cast<size_t>(N * 2 * H));  // h·[Rz;Rr]ᵀ
  std::vector<Acc> zr(static_cast<size_t>(N * 2 * H));   // activated z, r
  std::vector<Acc> hh_in(static_cast<size_t>(N * H));    // h or r⊙h
  std::vector<Acc> hh(static_cast<size_t>(N * H));       // (..)·Rhᵀ
  for (int64_t d = 0; d < D; ++d) {
    const rnn::Activation& act_f = cfg.activations[d * 2 + 0];
    const rnn::Activation& act_g = cfg.activations[d * 2 + 1];
    const Acc* Wd = W.data() + d * 3 * H * I;
    const Acc* Rd = R.data() + d * 3 * H * H;
    const Acc* Rh = Rd + 2 * H * H;
    const Acc* Wb = B.data() + d * 6 * H;
    const Acc* Rb = Wb + 3 * H;
    rnn::matmul_bt<Acc>(S * N, 3 * H, I, X.data(), Wd, xw.data(), parallel);
    Acc* h = h_state.data() + d * N * H;
    auto time_of = [&](int64_t b, int64_t step) {
      const int64_t len = cfg.seq_lens[b];
      return cfg.reversed(d) ? len - 1 - step : step;
    };
    for (int64_t step = 0; step < S; ++step) {
      rnn::matmul_bt<Acc>(N, 2 * H, H, h, Rd, hzr.data(), parallel);
      for (int64_t b = 0; b < N; ++b) {
        if (step >= cfg.seq_lens[b]) continue;
        const Acc* gx = xw.data() + (time_of(b, step) * N + b) * 3 * H;
        for (int64_t k = 0; k < 2 * H; ++k)
          zr[b * 2 * H + k] = act_f(cfg.clipped(gx[k] + hzr[b * 2 * H + k] + Wb[k] + Rb[k]));
        for (int64_t j = 0; j < H; ++j)
          hh_in[b * H + j] =
              linear_before_reset ? h[b * H + j] : zr[b * 2 * H + H + j] * h[b * H + j];
      }
      rnn::matmul_bt<Acc>(N, H, H, hh_in.data(), Rh, hh.data(), parallel);
      for (int64_t b = 0; b < N; ++b) {
        if (step >= cfg.seq_lens[b]) continue;
        const int64_t t = time_of(b, step);
        const Acc* gx = xw.data() + (t * N + b) * 3 * H;
        for (int64_t j = 0; j < H; ++j) {
          const Acc z = zr[b * 2 * H + j];
          const Acc r = zr[b * 2 * H + H + j];
          const Acc rec = linear_before_reset ? r * (hh[b * H + j] + Rb[2 * H + j])
                                              : hh[b * H + j] + Rb[2 * H + j];
          const Acc n = act_g(cfg.clipped(gx[2 * H + j] + rec + Wb[2 * H + j]));
          h[b * H + j] = (Acc(1) - z) * n + z * h[b * H + j];
        }
        std::copy_n(h + b * H, H, Y.begin() + ((t * D + d) * N + b) * H);
      }
    }
  }
  rnn::write_y<Acc>(ctx, cfg, dtype, Y);
  rnn::write_state<Acc>(ctx, cfg, 1, dtype, h_state);
}

constexpr const char* kDefaultActivations[] = {"Sigmoid", "Tanh"};

void gru_kernel(KernelContext& ctx) {
  rnn::RnnConfig cfg = rnn::parse_config(ctx, 3, kDefaultActivations);
  const loom_dtype_t dtype = ctx.required_input(0).dtype;
  dispatch<kFloats>(dtype, ctx, [&]<typename T>() {
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    run_gru<Acc>(ctx, cfg, dtype);
  });
}

}  // namespace

// Opset 1 differs by output_sequence (no effect on values) and lacks linear_before_reset (3).
LOOM_CPU_KERNEL("GRU", 1, gru_kernel, nullptr);
LOOM_CPU_KERNEL("GRU", 3, gru_kernel, nullptr);
LOOM_CPU_KERNEL("GRU", 7, gru_kernel, nullptr);
LOOM_CPU_KERNEL("GRU", 14, gru_kernel, nullptr);

}  // namespace loom::cpu
