// RNN (opsets 7, 14): the simple recurrent cell h' = f(x·Wᵀ + h·Rᵀ + Wb + Rb) with clip, any
// activation, three directions, sequence_lens and layout.
#include <type_traits>

#include "rnn_common.hpp"

namespace loom::cpu {
namespace {

template <typename Acc>
void run_rnn(KernelContext& ctx, const rnn::RnnConfig& cfg, loom_dtype_t dtype) {
  const int64_t S = cfg.seq, N = cfg.batch, I = cfg.input, H = cfg.hidden, D = cfg.dirs;
  auto X = rnn::read_input_view<Acc>(ctx, cfg, 0, "X", {S, N, I}, true);
  auto W = rnn::read_input_view<Acc>(ctx, cfg, 1, "W", {D, H, I}, false);
  auto R = rnn::read_input_view<Acc>(ctx, cfg, 2, "R", {D, H, H}, false);
  auto B = rnn::read_input_view<Acc>(ctx, cfg, 3, "B", {D, 2 * H}, false);
  auto h_state = rnn::read_input<Acc>(ctx, cfg, 5, "initial_h", {D, N, H}, true);

  const ParallelFor parallel = parallel_for_of(ctx);
  std::vector<Acc> Y(static_cast<size_t>(S * D * N * H), Acc(0));
  std::vector<Acc> xw(static_cast<size_t>(S * N * H));
  std::vector<Acc> hr(static_cast<size_t>(N * H));
  for (int64_t d = 0; d < D; ++d) {
    const rnn::Activation& act = cfg.activations[d];
    const Acc* Wb = B.data() + d * 2 * H;
    const Acc* Rb = Wb + H;
    rnn::matmul_bt<Acc>(S * N, H, I, X.data(), W.data() + d * H * I, xw.data(), parallel);
    Acc* h = h_state.data() + d * N * H;
    for (int64_t step = 0; step < S; ++step) {
      rnn::matmul_bt<Acc>(N, H, H, h, R.data() + d * H * H, hr.data(), parallel);
      for (int64_t b = 0; b < N; ++b) {
        const int64_t len = cfg.seq_lens[b];
        if (step >= len) continue;
        const int64_t t = cfg.reversed(d) ? len - 1 - step : step;
        const Acc* gx = xw.data() + (t * N + b) * H;
        for (int64_t j = 0; j < H; ++j)
          h[b * H + j] = act(cfg.clipped(gx[j] + hr[b * H + j] + Wb[j] + Rb[j]));
        std::copy_n(h + b * H, H, Y.begin() + ((t * D + d) * N + b) * H);
      }
    }
  }
  rnn::write_y<Acc>(ctx, cfg, dtype, Y);
  rnn::write_state<Acc>(ctx, cfg, 1, dtype, h_state);
}

constexpr const char* kDefaultActivations[] = {"Tanh"};

void rnn_kernel(KernelContext& ctx) {
  rnn::RnnConfig cfg = rnn::parse_config(ctx, 1, kDefaultActivations);
  const loom_dtype_t dtype = ctx.required_input(0).dtype;
  dispatch<kFloats>(dtype, ctx, [&]<typename T>() {
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    run_rnn<Acc>(ctx, cfg, dtype);
  });
}

}  // namespace

// Opset 1 differs only by the output_sequence attribute, which does not change any value.
LOOM_CPU_KERNEL("RNN", 1, rnn_kernel, nullptr);
LOOM_CPU_KERNEL("RNN", 7, rnn_kernel, nullptr);
LOOM_CPU_KERNEL("RNN", 14, rnn_kernel, nullptr);

}  // namespace loom::cpu
