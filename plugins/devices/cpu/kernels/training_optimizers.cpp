// The optimizer steps of ai.onnx.preview.training (opset 1), as the ONNX reference computes
// them, elementwise per tensor X with its gradient G:
//   Adagrad:  r = R / (1 + T decay_factor); g = norm_coefficient X + G; H' = H + g^2;
//             X' = X - r g / (sqrt(H') + epsilon)
//   Adam:     g = norm_coefficient X + G; V' = alpha V + (1 - alpha) g;
//             H' = beta H + (1 - beta) g^2; r = R sqrt(1 - beta^T) / (1 - alpha^T) when T > 0,
//             else R; X' = (1 - norm_coefficient_post) (X - r V' / (sqrt(H') + epsilon))
//   Momentum: g = norm_coefficient X + G; b = beta when T > 0, else 1; V' = alpha V + b g;
//             X' = X - R V' (standard) or X - R (g + alpha V') (nesterov)
// Inputs are R and T (scalars), then the groups X1..Xn, G1..Gn and the states; outputs the new
// X1..Xn, then each state's new tensors. Every tensor of a group must have X's type (float or
// double) and shape. Arithmetic in double, rounded once to the tensor's type.
#include <cmath>
#include <string>
#include <vector>

#include "misc_math_helpers.hpp"

namespace loom::cpu {
namespace {

struct Step {
  size_t n = 0;   // tensors updated
  double r = 0;   // learning rate
  int64_t t = 0;  // update count
};

// Checks the input and output counts for `groups` groups; reads R and T.
Step begin(KernelContext& ctx, size_t groups) {
  const std::string where = ctx.where();
  const size_t inputs = ctx.num_inputs();
  if (inputs < 2 + groups || (inputs - 2) % groups != 0)
    fail(LOOM_ERROR_INVALID_MODEL, where + ": takes R, T and " + std::to_string(groups) +
                                       " groups of n tensors, not " + std::to_string(inputs) +
                                       " inputs");
  Step s;
  s.n = (inputs - 2) / groups;
  if (ctx.num_outputs() != s.n * (groups - 1))
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": has " + std::to_string(ctx.num_outputs()) + " outputs; " + std::to_string(s.n) +
             " tensors to update give " + std::to_string(s.n * (groups - 1)));
  const loom_tensor_t& r = ctx.required_input(0);
  const loom_tensor_t& t = ctx.required_input(1);
  if (sdk::element_count(r) != 1 ||
      (r.dtype != LOOM_DTYPE_FLOAT32 && r.dtype != LOOM_DTYPE_FLOAT64))
    fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": R must be one float or double");
  if (sdk::element_count(t) != 1 || t.dtype != LOOM_DTYPE_INT64)
    fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": T must be one int64");
  s.r = r.dtype == LOOM_DTYPE_FLOAT32 ? *sdk::data_of<const float>(r)
                                      : *sdk::data_of<const double>(r);
  s.t = *sdk::data_of<const int64_t>(t);
  return s;
}

// Runs fn(x, g, states..., outputs..., count) over each tensor i as doubles: `groups` inputs
// per tensor (X, G, the states), the outputs X' and each state's. All of X's type and shape.
template <typename Fn>
void each_tensor(KernelContext& ctx, const Step& s, size_t groups, const Fn& fn) {
  const std::string where = ctx.where();
  for (size_t i = 0; i < s.n; ++i) {
    std::vector<const loom_tensor_t*> in;
    for (size_t group = 0; group < groups; ++group) {
      in.push_back(&ctx.required_input(2 + group * s.n + i));
      const loom_tensor_t& x = *in[0];
      const loom_tensor_t& v = *in.back();
      if (x.dtype != LOOM_DTYPE_FLOAT32 && x.dtype != LOOM_DTYPE_FLOAT64)
        fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": X" + std::to_string(i + 1) + " is " +
                                              sdk::dtype_name(x.dtype) +
                                              "; it takes float or double tensors");
      if (v.dtype != x.dtype || misc::dims_of(v) != misc::dims_of(x))
        fail(LOOM_ERROR_INVALID_ARGUMENT, where + ": input " + std::to_string(2 + group * s.n + i) +
                                              " does not have the type and shape of X" +
                                              std::to_string(i + 1));
    }
    const loom_tensor_t& x = *in[0];
    std::vector<loom_tensor_t*> out;
    out.push_back(&ctx.allocate_output(i, x.dtype, misc::dims_of(x)));
    for (size_t group = 2; group < groups; ++group)
      out.push_back(&ctx.allocate_output((group - 1) * s.n + i, x.dtype, misc::dims_of(x)));
    const auto count = static_cast<size_t>(sdk::element_count(x));
    auto run = [&]<typename T>() {
      std::vector<const T*> a;
      for (const loom_tensor_t* t : in) a.push_back(sdk::data_of<const T>(*t));
      std::vector<T*> b;
      for (loom_tensor_t* t : out) b.push_back(sdk::data_of<T>(*t));
      for (size_t e = 0; e < count; ++e) fn(a, b, e);
    };
    if (x.dtype == LOOM_DTYPE_FLOAT32)
      run.template operator()<float>();
    else
      run.template operator()<double>();
  }
}

void adagrad(KernelContext& ctx) {
  const Step s = begin(ctx, 3);
  const double decay = ctx.attrs().get_float("decay_factor", 0.f);
  const double epsilon = ctx.attrs().get_float("epsilon", 1e-6f);
  const double norm = ctx.attrs().get_float("norm_coefficient", 0.f);
  const double r = s.r / (1 + static_cast<double>(s.t) * decay);
  each_tensor(ctx, s, 3, [&](const auto& in, const auto& out, size_t e) {
    using T = std::remove_pointer_t<typename std::decay_t<decltype(out)>::value_type>;
    const double x = in[0][e], g = norm * x + in[1][e], h = in[2][e] + g * g;
    out[0][e] = static_cast<T>(x - r * g / (std::sqrt(h) + epsilon));
    out[1][e] = static_cast<T>(h);
  });
}

void adam(KernelContext& ctx) {
  const Step s = begin(ctx, 4);
  const double alpha = ctx.attrs().get_float("alpha", 0.9f);
  const double beta = ctx.attrs().get_float("beta", 0.999f);
  const double epsilon = ctx.attrs().get_float("epsilon", 1e-6f);
  const double norm = ctx.attrs().get_float("norm_coefficient", 0.f);
  const double post = ctx.attrs().get_float("norm_coefficient_post", 0.f);
  const double t = static_cast<double>(s.t);
  const double r =
      s.t > 0 ? s.r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : s.r;
  each_tensor(ctx, s, 4, [&](const auto& in, const auto& out, size_t e) {
    using T = std::remove_pointer_t<typename std::decay_t<decltype(out)>::value_type>;
    const double x = in[0][e], g = norm * x + in[1][e];
    const double v = alpha * in[2][e] + (1 - alpha) * g;
    const double h = beta * in[3][e] + (1 - beta) * (g * g);
    out[0][e] = static_cast<T>((1 - post) * (x - r * (v / (std::sqrt(h) + epsilon))));
    out[1][e] = static_cast<T>(v);
    out[2][e] = static_cast<T>(h);
  });
}

void momentum(KernelContext& ctx) {
  const std::string where = ctx.where();
  const Step s = begin(ctx, 3);
  for (const char* name : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!ctx.attrs().has(name))
      fail(LOOM_ERROR_INVALID_MODEL, where + ": the attribute '" + name + "' is required");
  const double alpha = ctx.attrs().get_float("alpha", 0.f);
  const double beta = s.t > 0 ? ctx.attrs().get_float("beta", 0.f) : 1.0;
  const double norm = ctx.attrs().get_float("norm_coefficient", 0.f);
  const std::string mode = ctx.attrs().get_string("mode", "");
  if (mode != "standard" && mode != "nesterov")
    fail(LOOM_ERROR_INVALID_MODEL,
         where + ": mode '" + mode + "' is neither 'standard' nor 'nesterov'");
  const bool nesterov = mode == "nesterov";
  each_tensor(ctx, s, 3, [&](const auto& in, const auto& out, size_t e) {
    using T = std::remove_pointer_t<typename std::decay_t<decltype(out)>::value_type>;
    const double x = in[0][e], g = norm * x + in[1][e];
    const double v = alpha * in[2][e] + beta * g;
    out[0][e] = static_cast<T>(nesterov ? x - s.r * (g + alpha * v) : x - s.r * v);
    out[1][e] = static_cast<T>(v);
  });
}

}  // namespace

LOOM_CPU_KERNEL_DOMAIN("ai.onnx.preview.training", "Adagrad", 1, adagrad, nullptr);
LOOM_CPU_KERNEL_DOMAIN("ai.onnx.preview.training", "Adam", 1, adam, nullptr);
LOOM_CPU_KERNEL_DOMAIN("ai.onnx.preview.training", "Momentum", 1, momentum, nullptr);

}  // namespace loom::cpu
