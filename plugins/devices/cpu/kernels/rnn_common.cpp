// Attribute parsing and shape validation shared by RNN, LSTM and GRU (see rnn_common.hpp).
#include "rnn_common.hpp"

#include <cctype>
#include <loom/vector_math.hpp>

namespace loom::cpu::rnn {
namespace {

#if defined(__x86_64__) && defined(__GNUC__)
LOOM_AVX512_WARNINGS_OFF
// sdk::sigmoid_ps / tanh_ps over v, the tail masked (masked-off lanes are neither read nor
// written).
__attribute__((target("avx512f"))) void apply_avx512(bool sigmoid, float* v, size_t n) {
  for (size_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    const __m512 x = _mm512_maskz_loadu_ps(m, v + i);
    _mm512_mask_storeu_ps(v + i, m, sigmoid ? sdk::sigmoid_ps(x) : sdk::tanh_ps(x));
  }
}
LOOM_AVX512_WARNINGS_ON
#endif

template <typename Acc>
void apply_scalar(const Activation& a, Acc* v, size_t n) {
  for (size_t i = 0; i < n; ++i) v[i] = a(v[i]);
}

// ASCII case-insensitive equality of an attribute's activation name and a table name (which
// is lower case).
bool same_name(std::string_view name, std::string_view lower_name) {
  if (name.size() != lower_name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(name[i])) != lower_name[i]) return false;
  return true;
}

struct ActivationInfo {
  const char* name;
  Activation::Kind kind;
  bool uses_alpha, uses_beta;
  float default_alpha, default_beta;
};

// Defaults follow the ONNX operator definitions of the same-named activations.
constexpr ActivationInfo kActivations[] = {
    {"relu", Activation::kRelu, false, false, 0.f, 0.f},
    {"tanh", Activation::kTanh, false, false, 0.f, 0.f},
    {"sigmoid", Activation::kSigmoid, false, false, 0.f, 0.f},
    {"affine", Activation::kAffine, true, true, 1.f, 0.f},
    {"leakyrelu", Activation::kLeakyRelu, true, false, 0.01f, 0.f},
    {"thresholdedrelu", Activation::kThresholdedRelu, true, false, 1.f, 0.f},
    {"scaledtanh", Activation::kScaledTanh, true, true, 1.f, 1.f},
    {"hardsigmoid", Activation::kHardSigmoid, true, true, 0.2f, 0.5f},
    {"elu", Activation::kElu, true, false, 1.f, 0.f},
    {"softsign", Activation::kSoftsign, false, false, 0.f, 0.f},
    {"softplus", Activation::kSoftplus, false, false, 0.f, 0.f},
};

// `where` is asked for the node's name only on an error: recurrent models of streaming audio
// run these once per chunk, and building the name cost more than the lookup.
template <typename Where>
const ActivationInfo& find_activation(std::string_view name, const Where& where) {
  for (const ActivationInfo& info : kActivations)
    if (same_name(name, info.name)) return info;
  fail(LOOM_ERROR_UNSUPPORTED,
       where() + ": unknown activation function '" + std::string(name) + "'");
}

}  // namespace

RnnConfig parse_config(const KernelContext& ctx, int gates,
                       std::span<const char* const> default_acts) {
  RnnConfig cfg;
  cfg.gates = gates;
  auto where = [&] { return ctx.where(); };  // built only for an error
  const Attributes& attrs = ctx.attrs();

  const std::string direction = attrs.get_string("direction", "forward");
  if (direction == "forward") {
    cfg.dirs = 1;
  } else if (direction == "reverse") {
    cfg.dirs = 1;
    cfg.reverse_only = true;
  } else if (direction == "bidirectional") {
    cfg.dirs = 2;
  } else {
    fail(LOOM_ERROR_INVALID_MODEL, where() +
                                       ": direction must be forward, reverse or "
                                       "bidirectional, got '" +
                                       direction + "'");
  }
  cfg.layout = ctx.opset() >= 14 ? attrs.get_int("layout", 0) : 0;
  if (cfg.layout != 0 && cfg.layout != 1)
    fail(LOOM_ERROR_INVALID_MODEL, where() + ": layout must be 0 or 1");
  if (attrs.has("clip")) {
    cfg.has_clip = true;
    cfg.clip = attrs.get_float("clip", 0.f);
    if (!(cfg.clip > 0.f)) fail(LOOM_ERROR_INVALID_MODEL, where() + ": clip must be positive");
  }

  const loom_tensor_t& x = ctx.required_input(0);
  const loom_tensor_t& w = ctx.required_input(1);
  const loom_tensor_t& r = ctx.required_input(2);
  if (x.rank != 3 || w.rank != 3 || r.rank != 3)
    fail(LOOM_ERROR_INVALID_MODEL, where() + ": X, W and R must be 3-D tensors");
  if (x.dtype != w.dtype || x.dtype != r.dtype)
    fail(LOOM_ERROR_INVALID_MODEL, where() + ": X, W and R must have the same element type");
  cfg.seq = cfg.layout == 0 ? x.dims[0] : x.dims[1];
  cfg.batch = cfg.layout == 0 ? x.dims[1] : x.dims[0];
  cfg.input = x.dims[2];
  cfg.hidden = r.dims[2];
  if (attrs.has("hidden_size") && attrs.get_int("hidden_size", 0) != cfg.hidden)
    fail(LOOM_ERROR_INVALID_MODEL,
         where() + ": hidden_size " + std::to_string(attrs.get_int("hidden_size", 0)) +
             " does not match R's last dimension " + std::to_string(cfg.hidden));
  if (w.dims[0] != cfg.dirs || w.dims[1] != gates * cfg.hidden || w.dims[2] != cfg.input)
    fail(LOOM_ERROR_INVALID_MODEL,
         where() + ": W must have shape [num_directions, " + std::to_string(gates) +
             "*hidden_size, input_size] = [" + std::to_string(cfg.dirs) + ", " +
             std::to_string(gates * cfg.hidden) + ", " + std::to_string(cfg.input) + "]");
  if (r.dims[0] != cfg.dirs || r.dims[1] != gates * cfg.hidden)
    fail(LOOM_ERROR_INVALID_MODEL, where() + ": R must have shape [num_directions, " +
                                       std::to_string(gates) + "*hidden_size, hidden_size]");

  // Activations: one list per direction; a single direction's list is reused for both.
  const size_t per_dir = default_acts.size();
  std::vector<std::string_view> names;
  if (auto acts = attrs.get_strings("activations")) {
    for (const loom_string_t& s : *acts) names.emplace_back(s.data, s.size);
    if (names.size() == per_dir && cfg.dirs == 2)
      names.insert(names.end(), names.begin(), names.end());
    if (names.size() != per_dir * static_cast<size_t>(cfg.dirs))
      fail(LOOM_ERROR_INVALID_MODEL, where() + ": expected " + std::to_string(per_dir * cfg.dirs) +
                                         " activations, got " + std::to_string(names.size()));
  } else {
    for (int64_t d = 0; d < cfg.dirs; ++d)
      names.insert(names.end(), default_acts.begin(), default_acts.end());
  }
  std::vector<float> alphas, betas;
  if (auto a = attrs.get_floats("activation_alpha")) alphas.assign(a->begin(), a->end());
  if (auto b = attrs.get_floats("activation_beta")) betas.assign(b->begin(), b->end());
  size_t next_alpha = 0, next_beta = 0;
  cfg.activations.reserve(names.size());
  for (std::string_view name : names) {
    const ActivationInfo& info = find_activation(name, where);
    Activation act{info.kind, info.default_alpha, info.default_beta};
    // alpha/beta lists hold values only for the functions that take them, in order.
    if (info.uses_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (info.uses_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    cfg.activations.push_back(act);
  }

  cfg.seq_lens.assign(static_cast<size_t>(cfg.batch), cfg.seq);
  if (const loom_tensor_t* lens = ctx.input(4)) {
    if (misc::count_of(*lens) != static_cast<size_t>(cfg.batch) || lens->rank != 1)
      fail(LOOM_ERROR_INVALID_MODEL, where() +
                                         ": sequence_lens must be a 1-D tensor of batch_size " +
                                         std::to_string(cfg.batch) + " elements");
    cfg.seq_lens = misc::read_ints(*lens, where() + " sequence_lens");
    for (int64_t len : cfg.seq_lens)
      if (len < 0 || len > cfg.seq)
        fail(LOOM_ERROR_INVALID_MODEL, where() + ": sequence_lens value " + std::to_string(len) +
                                           " is outside [0, " + std::to_string(cfg.seq) + "]");
  }
  return cfg;
}

void Activation::apply(float* v, size_t n) const {
#if defined(__x86_64__) && defined(__GNUC__)
  if ((kind == kSigmoid || kind == kTanh) && sdk::cpu_has_avx512())
    return apply_avx512(kind == kSigmoid, v, n);
#endif
  apply_scalar(*this, v, n);
}

void Activation::apply(double* v, size_t n) const {
  apply_scalar(*this, v, n);
}

}  // namespace loom::cpu::rnn
