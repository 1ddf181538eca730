// Shared machinery of the recurrent kernels RNN, LSTM and GRU: attribute parsing (direction,
// activations with their alpha/beta, clip, layout), input validation and normalisation to the
// layout-0 shapes, and writing the Y / Y_h / Y_c outputs. The cells themselves live in rnn.cpp,
// lstm.cpp and gru.cpp.
//
// Everything is computed in Acc (double for float64 models, float otherwise); inputs are
// copied into Acc vectors in layout 0:
//   X [seq, batch, input]   W [dirs, G*H, input]   R [dirs, G*H, H]   B [dirs, 2*G*H]
//   initial_h/initial_c [dirs, batch, H]          Y [seq, dirs, batch, H]
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "gemm.hpp"
#include "misc_math_helpers.hpp"

namespace loom::cpu::rnn {

// One activation function of the ONNX RNN family with its (optional) alpha and beta.
struct Activation {
  enum Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  };
  Kind kind = kTanh;
  float alpha = 0.f;
  float beta = 0.f;

  template <typename Acc>
  Acc operator()(Acc x) const {
    const Acc a = static_cast<Acc>(alpha), b = static_cast<Acc>(beta);
    switch (kind) {
      case kRelu:
        return x > 0 ? x : Acc(0);
      case kTanh:
        return std::tanh(x);
      case kSigmoid:
        return Acc(1) / (Acc(1) + std::exp(-x));
      case kAffine:
        return a * x + b;
      case kLeakyRelu:
        return x >= 0 ? x : a * x;
      case kThresholdedRelu:
        return x > a ? x : Acc(0);
      case kScaledTanh:
        return a * std::tanh(b * x);
      case kHardSigmoid:
        return std::max(Acc(0), std::min(Acc(1), a * x + b));
      case kElu:
        return x >= 0 ? x : a * (std::exp(x) - Acc(1));
      case kSoftsign:
        return x / (Acc(1) + std::abs(x));
      case kSoftplus:
        return std::log1p(std::exp(-std::abs(x))) + std::max(x, Acc(0));
    }
    return x;
  }

  // v[i] = f(v[i]) for a whole gate at once: sigmoid and tanh on floats take AVX-512 vectors
  // where the CPU has them (rnn_common.cpp), everything else the scalar form above.
  void apply(float* v, size_t n) const;
  void apply(double* v, size_t n) const;
};

// Attributes and shapes common to the three recurrent ops.
struct RnnConfig {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  int gates = 1;              // 1 (RNN), 3 (GRU), 4 (LSTM)
  bool reverse_only = false;  // direction == "reverse"
  int64_t layout = 0;
  float clip = 0.f;  // 0 = no clipping
  bool has_clip = false;
  // activations[d * per_dir + k]
  std::vector<Activation> activations;
  // sequence_lens per batch entry (all == seq when omitted).
  std::vector<int64_t> seq_lens;

  // Is direction slot d processed back to front?
  bool reversed(int64_t d) const { return reverse_only || d == 1; }

  template <typename Acc>
  Acc clipped(Acc x) const {
    if (!has_clip) return x;
    const Acc c = static_cast<Acc>(clip);
    return std::max(-c, std::min(c, x));
  }
  template <typename Acc>
  void clip_all(Acc* v, size_t n) const {
    if (has_clip)
      for (size_t i = 0; i < n; ++i) v[i] = clipped(v[i]);
  }
};

// Reads direction, hidden_size, clip, layout, activations and sequence_lens and validates
// X/W/R shapes. `default_acts` = the per-direction default activation names.
RnnConfig parse_config(const KernelContext& ctx, int gates,
                       std::span<const char* const> default_acts);

// "<node>: input <name>" for errors about an input, built only when one is reported.
struct InputWhere {
  const KernelContext& ctx;
  const char* name;
  std::string where() const { return ctx.where() + " input " + name; }
};

// Copies input i (optional ones may be missing) into a layout-0 Acc vector of `expect` dims;
// missing optional inputs give zeros. `batch_major` marks tensors whose layout-1 form swaps
// the first two dims (X: [batch, seq, ...], initial states: [batch, dirs, H]).
template <typename Acc>
std::vector<Acc> read_input(const KernelContext& ctx, const RnnConfig& cfg, size_t index,
                            const char* name, const std::vector<int64_t>& expect,
                            bool batch_major) {
  const loom_tensor_t* t = ctx.input(index);
  size_t count = 1;
  for (int64_t d : expect) count *= static_cast<size_t>(d);
  if (!t) return std::vector<Acc>(count, Acc(0));
  std::vector<int64_t> want = expect;
  const bool swap = batch_major && cfg.layout == 1;
  if (swap) std::swap(want[0], want[1]);
  if (misc::dims_of(*t) != want) {
    auto text = [](const std::vector<int64_t>& dims) {
      std::string s;
      for (int64_t d : dims) s += (s.empty() ? "" : ",") + std::to_string(d);
      return "[" + s + "]";
    };
    fail(LOOM_ERROR_INVALID_MODEL, ctx.where() + ": input '" + name + "' must have shape " +
                                       text(want) + ", got " + text(misc::dims_of(*t)));
  }
  std::vector<Acc> v = misc::read_as<Acc>(*t, InputWhere{ctx, name});
  if (!swap) return v;
  // [a, b, rest] -> [b, a, rest]
  const size_t a = static_cast<size_t>(want[0]), b = static_cast<size_t>(want[1]);
  const size_t rest = count / (a * b);
  std::vector<Acc> out(count);
  for (size_t i = 0; i < a; ++i)
    for (size_t j = 0; j < b; ++j)
      std::copy_n(v.begin() + (i * b + j) * rest, rest, out.begin() + (j * a + i) * rest);
  return out;
}

// A read-only input in layout 0 as Acc: the tensor's own memory when it already is that (the
// common case: float weights and a layout-0 X), else a converted copy. Recurrent models of
// streaming audio run once per chunk; copying W and R every run cost more than their math.
template <typename Acc>
struct InputData {
  std::vector<Acc> owned;
  const Acc* view = nullptr;
  const Acc* data() const { return view; }
};

template <typename Acc>
InputData<Acc> read_input_view(const KernelContext& ctx, const RnnConfig& cfg, size_t index,
                               const char* name, const std::vector<int64_t>& expect,
                               bool batch_major) {
  const loom_tensor_t* t = ctx.input(index);
  constexpr loom_dtype_t same =
      std::is_same_v<Acc, double> ? LOOM_DTYPE_FLOAT64 : LOOM_DTYPE_FLOAT32;
  const bool swap = batch_major && cfg.layout == 1;
  if (t && t->dtype == same && !swap && misc::dims_of(*t) == expect)
    return {{}, sdk::data_of<const Acc>(*t)};
  InputData<Acc> copy;
  copy.owned = read_input<Acc>(ctx, cfg, index, name, expect, batch_major);
  copy.view = copy.owned.data();
  return copy;
}

// Writes Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]) if requested.
template <typename Acc>
void write_y(KernelContext& ctx, const RnnConfig& cfg, loom_dtype_t dtype,
             const std::vector<Acc>& y) {
  if (!ctx.output_requested(0)) return;
  const int64_t s = cfg.seq, d = cfg.dirs, b = cfg.batch, h = cfg.hidden;
  std::vector<int64_t> dims =
      cfg.layout == 0 ? std::vector<int64_t>{s, d, b, h} : std::vector<int64_t>{b, s, d, h};
  loom_tensor_t& out = ctx.allocate_output(0, dtype, dims);
  if (cfg.layout == 0) {
    misc::write_as<Acc>(out, y, ctx);
    return;
  }
  std::vector<Acc> t(y.size());
  for (int64_t si = 0; si < s; ++si)
    for (int64_t di = 0; di < d; ++di)
      for (int64_t bi = 0; bi < b; ++bi)
        std::copy_n(y.begin() + ((si * d + di) * b + bi) * h, h,
                    t.begin() + ((bi * s + si) * d + di) * h);
  misc::write_as<Acc>(out, t, ctx);
}

// Writes a final state [dirs, batch, H] (layout 1: [batch, dirs, H]) to output `index`.
template <typename Acc>
void write_state(KernelContext& ctx, const RnnConfig& cfg, size_t index, loom_dtype_t dtype,
                 const std::vector<Acc>& state) {
  if (!ctx.output_requested(index)) return;
  const int64_t d = cfg.dirs, b = cfg.batch, h = cfg.hidden;
  std::vector<int64_t> dims =
      cfg.layout == 0 ? std::vector<int64_t>{d, b, h} : std::vector<int64_t>{b, d, h};
  loom_tensor_t& out = ctx.allocate_output(index, dtype, dims);
  if (cfg.layout == 0) {
    misc::write_as<Acc>(out, state, ctx);
    return;
  }
  std::vector<Acc> t(state.size());
  for (int64_t di = 0; di < d; ++di)
    for (int64_t bi = 0; bi < b; ++bi)
      std::copy_n(state.begin() + (di * b + bi) * h, h, t.begin() + (bi * d + di) * h);
  misc::write_as<Acc>(out, t, ctx);
}

// out[r][j] = sum_k a[r][k] * w[j][k] for r < rows, j < cols: the x·Wᵀ / h·Rᵀ products.
template <typename Acc>
void matmul_bt(size_t rows, size_t cols, size_t inner, const Acc* a, const Acc* w, Acc* out,
               const ParallelFor& parallel) {
  if (rows == 0 || cols == 0) return;
  if (inner == 0) {
    std::fill_n(out, rows * cols, Acc(0));
    return;
  }
  gemm(false, true, rows, cols, inner, Acc(1), a, inner, w, inner, Acc(0), out, cols, parallel);
}

}  // namespace loom::cpu::rnn
