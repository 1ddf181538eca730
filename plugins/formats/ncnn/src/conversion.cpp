#include "conversion.hpp"

#include <cmath>

namespace loom::ncnnfmt {

void layer_error(const Layer& layer, const std::string& message) {
  sdk::fail(LOOM_ERROR_INVALID_MODEL,
            "ncnn " + layer.type + " layer '" + layer.name + "': " + message);
}

void layer_unsupported(const Layer& layer, const std::string& message) {
  sdk::fail(LOOM_ERROR_UNSUPPORTED,
            "ncnn " + layer.type + " layer '" + layer.name + "': " + message);
}

void expect_io(const Layer& layer, size_t bottoms, size_t tops) {
  if (layer.bottoms.size() != bottoms || layer.tops.size() != tops)
    layer_error(layer, "expects " + std::to_string(bottoms) + " input(s) and " +
                           std::to_string(tops) + " output(s), the param gives " +
                           std::to_string(layer.bottoms.size()) + " and " +
                           std::to_string(layer.tops.size()));
}

loom_node_builder_t* Context::node(const std::string& op, const std::string& name,
                                   const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs) {
  std::vector<const char*> in, out;
  for (const std::string& s : inputs) in.push_back(s.c_str());
  for (const std::string& s : outputs) out.push_back(s.c_str());
  loom_node_builder_t* n = nullptr;
  sdk::check(api_.add_node(builder_, name.c_str(), op.c_str(), "", in.size(), in.data(), out.size(),
                           out.data(), &n));
  return n;
}

void Context::attr(loom_node_builder_t* n, const char* name, int64_t value) {
  sdk::check(api_.set_attr_int(n, name, value));
}
void Context::attr(loom_node_builder_t* n, const char* name, float value) {
  sdk::check(api_.set_attr_float(n, name, value));
}
void Context::attr(loom_node_builder_t* n, const char* name, const std::string& value) {
  sdk::check(api_.set_attr_string(n, name, value.data(), value.size()));
}
void Context::attr(loom_node_builder_t* n, const char* name, const std::vector<int64_t>& values) {
  sdk::check(api_.set_attr_ints(n, name, values.data(), values.size()));
}

std::string Context::temp(const std::string& hint) {
  return hint + "#" + std::to_string(next_temp_++);
}

std::string Context::constant(const std::string& hint, const std::vector<int64_t>& dims,
                              const std::vector<float>& values) {
  std::string name = temp(hint);
  add_constant(name, dims, values);
  return name;
}

void Context::add_constant(const std::string& name, const std::vector<int64_t>& dims,
                           const std::vector<float>& values) {
  sdk::check(api_.add_initializer(builder_, name.c_str(), LOOM_DTYPE_FLOAT32,
                                  static_cast<int32_t>(dims.size()), dims.data(), values.data(),
                                  values.size() * sizeof(float)));
}

std::string Context::constant_ints(const std::string& hint, const std::vector<int64_t>& values) {
  std::string name = temp(hint);
  int64_t dims[1] = {static_cast<int64_t>(values.size())};
  sdk::check(api_.add_initializer(builder_, name.c_str(), LOOM_DTYPE_INT64, 1, dims, values.data(),
                                  values.size() * sizeof(int64_t)));
  return name;
}

void Context::add_input(const std::string& name, const Shape& shape) {
  sdk::check(api_.add_input(builder_, name.c_str(), LOOM_DTYPE_FLOAT32,
                            shape.empty() ? -1 : static_cast<int32_t>(shape.size()), shape.data(),
                            nullptr));
}

void Context::add_output(const std::string& name) {
  sdk::check(api_.add_output(builder_, name.c_str(), LOOM_DTYPE_FLOAT32, -1, nullptr, nullptr));
}

const Shape& Context::shape(const std::string& blob) const {
  static const Shape kUnknown;
  auto it = shapes_.find(blob);
  return it == shapes_.end() ? kUnknown : it->second;
}

int Context::rank(const std::string& blob, const std::string& layer) const {
  const Shape& s = shape(blob);
  if (s.empty())
    sdk::fail(LOOM_ERROR_UNSUPPORTED, "ncnn layer '" + layer + "': the rank of blob '" + blob +
                                          "' is not known, and this layer needs it");
  return static_cast<int>(s.size()) - 1;
}

void emit_activation(Context& ctx, const Layer& layer, int kind, const std::vector<float>& params,
                     const std::string& in, const std::string& out) {
  auto param = [&](size_t i, float fallback) { return i < params.size() ? params[i] : fallback; };
  const std::string& name = layer.name;
  switch (kind) {
    case 0:
      ctx.node("Identity", name + "/identity", {in}, {out});
      return;
    case 1:  // ReLU; a slope makes it leaky
      if (param(0, 0.f) == 0.f) {
        ctx.node("Relu", name + "/relu", {in}, {out});
      } else {
        ctx.attr(ctx.node("LeakyRelu", name + "/leakyrelu", {in}, {out}), "alpha", param(0, 0.f));
      }
      return;
    case 2:  // leaky ReLU
      ctx.attr(ctx.node("LeakyRelu", name + "/leakyrelu", {in}, {out}), "alpha", param(0, 0.f));
      return;
    case 3: {  // clip(min, max)
      std::string lo = ctx.constant(name + "/clip_min", {}, {param(0, -INFINITY)});
      std::string hi = ctx.constant(name + "/clip_max", {}, {param(1, INFINITY)});
      ctx.node("Clip", name + "/clip", {in, lo, hi}, {out});
      return;
    }
    case 4:
      ctx.node("Sigmoid", name + "/sigmoid", {in}, {out});
      return;
    case 5: {  // mish: x * tanh(softplus(x))
      std::string sp = ctx.temp(name + "/softplus"), th = ctx.temp(name + "/tanh");
      ctx.node("Softplus", name + "/softplus", {in}, {sp});
      ctx.node("Tanh", name + "/tanh", {sp}, {th});
      ctx.node("Mul", name + "/mish", {in, th}, {out});
      return;
    }
    case 6: {  // hardswish: x * clamp(alpha * x + beta, 0, 1)
      std::string hs = ctx.temp(name + "/hardsigmoid");
      auto* n = ctx.node("HardSigmoid", name + "/hardsigmoid", {in}, {hs});
      ctx.attr(n, "alpha", param(0, 0.2f));
      ctx.attr(n, "beta", param(1, 0.5f));
      ctx.node("Mul", name + "/hardswish", {in, hs}, {out});
      return;
    }
    case 7: {  // swish: x * sigmoid(x) (not an activation_type; used by the Swish layer)
      std::string sg = ctx.temp(name + "/sigmoid");
      ctx.node("Sigmoid", name + "/sigmoid", {in}, {sg});
      ctx.node("Mul", name + "/swish", {in, sg}, {out});
      return;
    }
    case 8:  // hardsigmoid (Loom-internal number, used by the HardSigmoid layer)
    {
      auto* n = ctx.node("HardSigmoid", name + "/hardsigmoid", {in}, {out});
      ctx.attr(n, "alpha", param(0, 0.2f));
      ctx.attr(n, "beta", param(1, 0.5f));
      return;
    }
    case 9:
      ctx.node("Tanh", name + "/tanh", {in}, {out});
      return;
    default:
      layer_unsupported(
          layer, "activation_type " + std::to_string(kind) + " is not supported (known: 0-6)");
  }
}

void emit_fused_activation(Context& ctx, const Layer& layer, const std::string& in,
                           const std::string& out) {
  int kind = layer.params.get_int(9, 0);
  if (kind < 0 || kind > 6)
    layer_unsupported(layer,
                      "activation_type " + std::to_string(kind) + " is not supported (known: 0-6)");
  emit_activation(ctx, layer, kind, layer.params.get_floats(10), in, out);
}

}  // namespace loom::ncnnfmt
