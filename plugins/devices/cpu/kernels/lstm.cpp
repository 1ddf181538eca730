// LSTM (opsets 7, 14): gate order i, o, f, c in W/R/B, peepholes P = [i, o, f], optional
// input/forget coupling, clip, any activations, three directions, sequence_lens, layout.
//   i = f(x·Wiᵀ + h·Riᵀ + Pi⊙c + Wbi + Rbi)        f = f(... + Pf⊙c ...)  (or 1 - i if coupled)
//   g = g(x·Wcᵀ + h·Rcᵀ + Wbc + Rbc)               c' = f⊙c + i⊙g
//   o = f(x·Woᵀ + h·Roᵀ + Po⊙c' + Wbo + Rbo)        h' = o⊙h(c')
#include <type_traits>

#include "rnn_common.hpp"

namespace loom::cpu {
namespace {

template <typename Acc>
void run_lstm(KernelContext& ctx, const rnn::RnnConfig& cfg, loom_dtype_t dtype) {
  const int64_t S = cfg.seq, N = cfg.batch, I = cfg.input, H = cfg.hidden, D = cfg.dirs;
  const bool input_forget = ctx.attrs().get_int("input_forget", 0) != 0;
  auto X = rnn::read_input_view<Acc>(ctx, cfg, 0, "X", {S, N, I}, true);
  auto W = rnn::read_input_view<Acc>(ctx, cfg, 1, "W", {D, 4 * H, I}, false);
  auto R = rnn::read_input_view<Acc>(ctx, cfg, 2, "R", {D, 4 * H, H}, false);
  auto B = rnn::read_input_view<Acc>(ctx, cfg, 3, "B", {D, 8 * H}, false);
  auto h_state = rnn::read_input<Acc>(ctx, cfg, 5, "initial_h", {D, N, H}, true);
  auto c_state = rnn::read_input<Acc>(ctx, cfg, 6, "initial_c", {D, N, H}, true);
  auto P = rnn::read_input_view<Acc>(ctx, cfg, 7, "P", {D, 3 * H}, false);

  const ParallelFor parallel = parallel_for_of(ctx);
  std::vector<Acc> Y(static_cast<size_t>(S * D * N * H), Acc(0));
  std::vector<Acc> xw(static_cast<size_t>(S * N * 4 * H));
  std::vector<Acc> hr(static_cast<size_t>(N * 4 * H));
  std::vector<Acc> gates(static_cast<size_t>(4 * H));
  for (int64_t d = 0; d < D; ++d) {
    const rnn::Activation& act_f = cfg.activations[d * 3 + 0];
    const rnn::Activation& act_g = cfg.activations[d * 3 + 1];
    const rnn::Activation& act_h = cfg.activations[d * 3 + 2];
    const Acc* Wd = W.data() + d * 4 * H * I;
    const Acc* Rd = R.data() + d * 4 * H * H;
    const Acc* Wb = B.data() + d * 8 * H;
    const Acc* Rb = Wb + 4 * H;
    const Acc* Pi = P.data() + d * 3 * H;
    const Acc* Po = Pi + H;
    const Acc* Pf = Pi + 2 * H;
    // The input projection of every time step at once.
    rnn::matmul_bt<Acc>(S * N, 4 * H, I, X.data(), Wd, xw.data(), parallel);
    Acc* h = h_state.data() + d * N * H;
    Acc* c = c_state.data() + d * N * H;
    for (int64_t step = 0; step < S; ++step) {
      rnn::matmul_bt<Acc>(N, 4 * H, H, h, Rd, hr.data(), parallel);
      for (int64_t b = 0; b < N; ++b) {
        const int64_t len = cfg.seq_lens[b];
        if (step >= len) continue;
        const int64_t t = cfg.reversed(d) ? len - 1 - step : step;
        const Acc* gx = xw.data() + (t * N + b) * 4 * H;
        const Acc* gh = hr.data() + b * 4 * H;
        Acc* hb = h + b * H;
        Acc* cb = c + b * H;
        // The cell a gate at a time (each activation over H values at once).
        Acc* gi = gates.data();
        Acc* go = gi + H;
        Acc* gf = go + H;
        Acc* gc = gf + H;
        for (int64_t k = 0; k < 4 * H; ++k) gi[k] = gx[k] + gh[k] + Wb[k] + Rb[k];
        for (int64_t j = 0; j < H; ++j) {
          gi[j] += Pi[j] * cb[j];
          gf[j] += Pf[j] * cb[j];
        }
        const size_t h_count = static_cast<size_t>(H);
        cfg.clip_all(gi, h_count);
        cfg.clip_all(gc, h_count);
        act_f.apply(gi, h_count);
        if (input_forget) {
          for (int64_t j = 0; j < H; ++j) gf[j] = Acc(1) - gi[j];
        } else {
          cfg.clip_all(gf, h_count);
          act_f.apply(gf, h_count);
        }
        act_g.apply(gc, h_count);
        for (int64_t j = 0; j < H; ++j) {
          cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
          go[j] += Po[j] * cb[j];
          hb[j] = cb[j];
        }
        cfg.clip_all(go, h_count);
        act_f.apply(go, h_count);
        act_h.apply(hb, h_count);
        for (int64_t j = 0; j < H; ++j) hb[j] *= go[j];
        std::copy_n(hb, H, Y.begin() + ((t * D + d) * N + b) * H);
      }
    }
  }
  rnn::write_y<Acc>(ctx, cfg, dtype, Y);
  rnn::write_state<Acc>(ctx, cfg, 1, dtype, h_state);
  rnn::write_state<Acc>(ctx, cfg, 2, dtype, c_state);
}

constexpr const char* kDefaultActivations[] = {"Sigmoid", "Tanh", "Tanh"};

void lstm_kernel(KernelContext& ctx) {
  rnn::RnnConfig cfg = rnn::parse_config(ctx, 4, kDefaultActivations);
  const loom_dtype_t dtype = ctx.required_input(0).dtype;
  dispatch<kFloats>(dtype, ctx, [&]<typename T>() {
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    run_lstm<Acc>(ctx, cfg, dtype);
  });
}

}  // namespace

// Opset 1 differs only by the output_sequence attribute, which does not change any value.
LOOM_CPU_KERNEL("LSTM", 1, lstm_kernel, nullptr);
LOOM_CPU_KERNEL("LSTM", 7, lstm_kernel, nullptr);
LOOM_CPU_KERNEL("LSTM", 14, lstm_kernel, nullptr);

}  // namespace loom::cpu
