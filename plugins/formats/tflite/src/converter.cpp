// The conversion driver: graph inputs/outputs, value forms (layouts), constants, quantization
// helpers and node emission (see converter.hpp).
#include "converter.hpp"

#include <cstring>
#include <loom/plugin.hpp>

namespace loom::tflite {
namespace {

// Copies `src` (dims, element size) into a new buffer permuted by `perm`
// (output dim i = input dim perm[i]).
std::vector<uint8_t> permute_bytes(std::span<const uint8_t> src, const std::vector<int64_t>& dims,
                                   size_t elem, std::span<const int64_t> perm) {
  const size_t rank = dims.size();
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * dims[i];
  std::vector<int64_t> out_dims = permute_dims(dims, perm);
  std::vector<uint8_t> out(src.size());
  std::vector<int64_t> index(rank, 0);
  const size_t count = elem ? src.size() / elem : 0;
  for (size_t o = 0; o < count; ++o) {
    int64_t offset = 0;
    for (size_t i = 0; i < rank; ++i) offset += index[i] * in_strides[perm[i]];
    std::memcpy(out.data() + o * elem, src.data() + offset * elem, elem);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < out_dims[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

std::string activation_name(int activation) {
  switch (activation) {
    case 1:
      return "RELU";
    case 2:
      return "RELU_N1_TO_1";
    case 3:
      return "RELU6";
    case 4:
      return "TANH";
    case 5:
      return "SIGN_BIT";
    default:
      return "activation " + std::to_string(activation);
  }
}

}  // namespace

std::vector<int64_t> permute_dims(const std::vector<int64_t>& dims, std::span<const int64_t> perm) {
  std::vector<int64_t> out(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) out[i] = dims[perm[i]];
  return out;
}

Converter::Converter(const ModelView& model, const loom_builder_api_t& api,
                     loom_graph_builder_t* builder)
    : model_(model), api_(api), builder_(builder) {
  const size_t n = model.tensors().size();
  native_.resize(n);
  nchw_.resize(n);
  float_native_.resize(n);
  float_nchw_.resize(n);
}

void Converter::run() {
  sdk::check(api_.set_opset(builder_, "", 17));
  if (!model_.description().empty())
    sdk::check(api_.set_metadata(builder_, "tflite.description", model_.description().c_str()));
  add_graph_inputs();
  for (const auto& op : model_.operators()) {
    current_ = &op;
    convert_operator(op);
  }
  current_ = nullptr;
  add_graph_outputs();
}

void Converter::add_graph_inputs() {
  for (int32_t index : model_.inputs()) {
    const TensorView& t = model_.tensor(index);
    if (t.is_constant()) continue;  // a constant listed as input stays a constant
    sdk::check(api_.add_input(builder_, t.name.c_str(), t.dtype, static_cast<int32_t>(t.rank()),
                              t.shape.data(), nullptr));
    native_[index] = t.name;
  }
}

void Converter::add_graph_outputs() {
  for (int32_t index : model_.outputs()) {
    const TensorView& t = model_.tensor(index);
    value(t, Layout::kNative);  // transposes back from nchw where needed
    sdk::check(api_.add_output(builder_, t.name.c_str(), t.dtype, static_cast<int32_t>(t.rank()),
                               t.shape.data(), nullptr));
  }
}

void Converter::convert_operator(const OperatorView& op) {
  if (op.custom) {
    convert_custom(*this);
    return;
  }
  const int32_t code = op.builtin_code;
  if (convert_conv_pool(*this, code) || convert_elementwise(*this, code) ||
      convert_math(*this, code) || convert_reduce(*this, code) || convert_matmul(*this, code) ||
      convert_quantize(*this, code) || convert_shape(*this, code) || convert_layout(*this, code) ||
      convert_generate(*this, code) || convert_recurrent(*this, code))
    return;
  sdk::fail(LOOM_ERROR_UNSUPPORTED, "tflite: " + where() +
                                        ": the operator is not supported by Loom's tflite plugin "
                                        "(docs/tflite-format.md lists the supported ones)");
}

std::string Converter::where() const {
  if (!current_) return "model";
  std::string text = "operator " + std::to_string(current_->index) + " (" + current_->op_name + ")";
  if (!current_->outputs.empty())
    text += " producing tensor '" + model_.tensor(current_->outputs[0]).name + "'";
  return text;
}

void Converter::unsupported(const std::string& what) const {
  sdk::fail(LOOM_ERROR_UNSUPPORTED, "tflite: " + where() + ": " + what);
}
void Converter::invalid(const std::string& what) const {
  sdk::fail(LOOM_ERROR_INVALID_MODEL, "tflite: " + where() + ": " + what);
}

bool Converter::has_input(size_t i) const {
  return i < current_->inputs.size() && current_->inputs[i] >= 0;
}
const TensorView& Converter::input(size_t i) const {
  if (!has_input(i))
    invalid("input " + std::to_string(i) + " is missing (the operator has " +
            std::to_string(current_->inputs.size()) + " inputs)");
  return model_.tensor(current_->inputs[i]);
}
const TensorView& Converter::output(size_t i) const {
  if (i >= current_->outputs.size())
    invalid("output " + std::to_string(i) + " is missing (the operator has " +
            std::to_string(current_->outputs.size()) + " outputs)");
  return model_.tensor(current_->outputs[i]);
}

bool Converter::has_form(const TensorView& t, Layout layout) const {
  return layout == Layout::kNative ? native_[t.index].has_value() : nchw_[t.index].has_value();
}

Layout Converter::preferred_layout(std::initializer_list<const TensorView*> inputs) const {
  for (const TensorView* t : inputs)
    if (t && !t->is_constant() && t->rank() == 4 && has_form(*t, Layout::kNchw) &&
        !has_form(*t, Layout::kNative))
      return Layout::kNchw;
  return Layout::kNative;
}

std::string Converter::fresh(const std::string& base) {
  int& n = name_counts_[base];
  return base + "/" + std::to_string(++n);
}

void Converter::emit(const std::string& op_type, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, const std::vector<Attr>& attrs,
                     const std::string& domain) {
  std::vector<const char*> in, out;
  for (const auto& s : inputs) in.push_back(s.c_str());
  for (const auto& s : outputs) out.push_back(s.c_str());
  const std::string node_name =
      fresh(current_ ? "op" + std::to_string(current_->index) + ":" + op_type : op_type);
  if (!domain.empty()) sdk::check(api_.set_opset(builder_, domain.c_str(), 1));
  loom_node_builder_t* node = nullptr;
  sdk::check(api_.add_node(builder_, node_name.c_str(), op_type.c_str(), domain.c_str(), in.size(),
                           in.data(), out.size(), out.data(), &node));
  for (const Attr& a : attrs) {
    switch (a.kind) {
      case Attr::kInt:
        sdk::check(api_.set_attr_int(node, a.name.c_str(), a.i));
        break;
      case Attr::kFloat:
        sdk::check(api_.set_attr_float(node, a.name.c_str(), a.f));
        break;
      case Attr::kString:
        sdk::check(api_.set_attr_string(node, a.name.c_str(), a.s.data(), a.s.size()));
        break;
      case Attr::kInts:
        sdk::check(api_.set_attr_ints(node, a.name.c_str(), a.ints.data(), a.ints.size()));
        break;
      case Attr::kFloats:
        sdk::check(api_.set_attr_floats(node, a.name.c_str(), a.floats.data(), a.floats.size()));
        break;
    }
  }
}

std::string Converter::constant_raw(const std::string& base, loom_dtype_t dtype,
                                    const std::vector<int64_t>& dims,
                                    std::span<const uint8_t> bytes) {
  const std::string name = fresh(base);
  sdk::check(api_.add_initializer(builder_, name.c_str(), dtype, static_cast<int32_t>(dims.size()),
                                  dims.data(), bytes.data(), bytes.size()));
  return name;
}

std::string Converter::constant_i64(const std::string& base, const std::vector<int64_t>& values,
                                    std::vector<int64_t> dims) {
  if (dims.size() == 1 && dims[0] == -2) dims = {static_cast<int64_t>(values.size())};
  return constant_raw(base, LOOM_DTYPE_INT64, dims,
                      {reinterpret_cast<const uint8_t*>(values.data()), values.size() * 8});
}

std::string Converter::constant_f32(const std::string& base, const std::vector<float>& values,
                                    std::vector<int64_t> dims) {
  if (dims.size() == 1 && dims[0] == -2) dims = {static_cast<int64_t>(values.size())};
  return constant_raw(base, LOOM_DTYPE_FLOAT32, dims,
                      {reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4});
}

std::string Converter::permuted(const TensorView& t, std::span<const int64_t> perm, bool as_float) {
  if (static_cast<size_t>(t.rank()) != perm.size())
    invalid("tensor '" + t.name + "' has rank " + std::to_string(t.rank()) + ", expected " +
            std::to_string(perm.size()));
  if (!t.is_constant()) {
    const std::string source =
        as_float ? float_value(t, Layout::kNative) : value(t, Layout::kNative);
    const std::string name = fresh(t.name + "/permuted");
    emit("Transpose", {source}, {name}, {Attr::Ints("perm", {perm.begin(), perm.end()})});
    return name;
  }
  if (as_float && t.dtype != LOOM_DTYPE_FLOAT32) {
    const std::vector<float> data = dequantized_data(t);
    const auto bytes = permute_bytes(
        {reinterpret_cast<const uint8_t*>(data.data()), data.size() * 4}, t.shape, 4, perm);
    return constant_raw(t.name + "/float_permuted", LOOM_DTYPE_FLOAT32, permute_dims(t.shape, perm),
                        bytes);
  }
  const auto bytes = permute_bytes(t.data, t.shape, sdk::dtype_size(t.dtype), perm);
  return constant_raw(t.name + "/permuted", t.dtype, permute_dims(t.shape, perm), bytes);
}

std::string Converter::value(const TensorView& t, Layout layout) {
  auto& slot = layout == Layout::kNative ? native_[t.index] : nchw_[t.index];
  if (slot) return *slot;
  if (t.is_constant()) {
    if (layout == Layout::kNative) {
      sdk::check(api_.add_initializer(builder_, t.name.c_str(), t.dtype,
                                      static_cast<int32_t>(t.rank()), t.shape.data(), t.data.data(),
                                      t.data.size()));
      slot = t.name;
    } else if (t.rank() == 0) {
      slot = value(t, Layout::kNative);
    } else {
      if (t.rank() > 4) invalid("constant '" + t.name + "' of rank > 4 used in NCHW layout");
      // Broadcasting aligns trailing dimensions, so a lower-rank operand of an NHWC op is
      // first padded to rank 4 with leading 1s, then permuted like the NHWC operand.
      TensorView padded = t;
      padded.shape.insert(padded.shape.begin(), 4 - t.rank(), 1);
      const auto bytes = permute_bytes(t.data, padded.shape, sdk::dtype_size(t.dtype), kToNchw);
      slot = constant_raw(t.name + "/nchw", t.dtype, permute_dims(padded.shape, kToNchw), bytes);
    }
    return *slot;
  }
  auto& other = layout == Layout::kNative ? nchw_[t.index] : native_[t.index];
  if (!other) invalid("tensor '" + t.name + "' is read before it is produced");
  if (t.rank() != 4)
    invalid("tensor '" + t.name + "' of rank " + std::to_string(t.rank()) +
            " cannot change layout (internal layout error)");
  const std::string source = *other;
  const std::string name = layout == Layout::kNative ? t.name : t.name + "/nchw";
  emit(
      "Transpose", {source}, {name},
      {Attr::Ints("perm", layout == Layout::kNative ? std::vector<int64_t>(kToNhwc, kToNhwc + 4)
                                                    : std::vector<int64_t>(kToNchw, kToNchw + 4))});
  slot = name;
  return name;
}

std::string Converter::define(const TensorView& t, Layout layout) {
  auto& slot = layout == Layout::kNative ? native_[t.index] : nchw_[t.index];
  if (slot) invalid("tensor '" + t.name + "' is produced twice");
  if (layout == Layout::kNchw && t.rank() != 4)
    invalid("tensor '" + t.name + "' has rank " + std::to_string(t.rank()) + ", expected 4");
  slot = layout == Layout::kNative ? t.name : t.name + "/nchw";
  return *slot;
}

std::vector<int64_t> Converter::constant_ints(const TensorView& t) const {
  if (!t.is_constant()) unsupported("tensor '" + t.name + "' must be a constant");
  std::vector<int64_t> result;
  if (t.dtype == LOOM_DTYPE_INT32) {
    for (size_t i = 0; i < t.data.size(); i += 4) {
      int32_t v;
      std::memcpy(&v, t.data.data() + i, 4);
      result.push_back(v);
    }
  } else if (t.dtype == LOOM_DTYPE_INT64) {
    for (size_t i = 0; i < t.data.size(); i += 8) {
      int64_t v;
      std::memcpy(&v, t.data.data() + i, 8);
      result.push_back(v);
    }
  } else {
    invalid("tensor '" + t.name + "' must be int32 or int64, not " + sdk::dtype_name(t.dtype));
  }
  return result;
}

std::vector<float> Converter::dequantized_data(const TensorView& t) const {
  const size_t n = t.data.size() / sdk::dtype_size(t.dtype);
  std::vector<float> result(n);
  if (t.dtype == LOOM_DTYPE_FLOAT32) {
    std::memcpy(result.data(), t.data.data(), n * 4);
    return result;
  }
  if (!t.quantized) unsupported("constant '" + t.name + "' has no quantization parameters");
  // Channel of flat element i along the quantized axis (per-channel), else 0.
  int64_t inner = 1, channels = 1;
  if (t.quant.per_channel()) {
    channels = t.shape[t.quant.axis];
    for (size_t d = t.quant.axis + 1; d < t.shape.size(); ++d) inner *= t.shape[d];
  }
  for (size_t i = 0; i < n; ++i) {
    const size_t ch = t.quant.per_channel() ? (i / inner) % channels : 0;
    int64_t q = 0;
    switch (t.dtype) {
      case LOOM_DTYPE_INT8:
        q = reinterpret_cast<const int8_t*>(t.data.data())[i];
        break;
      case LOOM_DTYPE_UINT8:
        q = t.data[i];
        break;
      case LOOM_DTYPE_INT16: {
        int16_t v;
        std::memcpy(&v, t.data.data() + 2 * i, 2);
        q = v;
        break;
      }
      case LOOM_DTYPE_INT32: {
        int32_t v;
        std::memcpy(&v, t.data.data() + 4 * i, 4);
        q = v;
        break;
      }
      default:
        unsupported("constant '" + t.name + "' is quantized as " + sdk::dtype_name(t.dtype) +
                    "; only int8, uint8, int16 and int32 are supported");
    }
    result[i] = static_cast<float>(static_cast<double>(t.quant.scales[ch]) *
                                   static_cast<double>(q - t.quant.zero_points[ch]));
  }
  return result;
}

std::string Converter::scale_of(const TensorView& t) {
  if (t.quant.per_channel()) return constant_f32(t.name + "/scale", t.quant.scales);
  return constant_f32(t.name + "/scale", {t.quant.scales[0]}, {});
}

std::string Converter::zero_point_of(const TensorView& t) {
  const size_t n = t.quant.zero_points.size();
  std::vector<uint8_t> bytes;
  for (int64_t z : t.quant.zero_points) {
    if (t.dtype == LOOM_DTYPE_INT8) {
      if (z < -128 || z > 127)
        invalid("tensor '" + t.name + "' has int8 zero point " + std::to_string(z));
      bytes.push_back(static_cast<uint8_t>(static_cast<int8_t>(z)));
    } else if (t.dtype == LOOM_DTYPE_UINT8) {
      if (z < 0 || z > 255)
        invalid("tensor '" + t.name + "' has uint8 zero point " + std::to_string(z));
      bytes.push_back(static_cast<uint8_t>(z));
    } else if (t.dtype == LOOM_DTYPE_INT32) {
      int32_t v = static_cast<int32_t>(z);
      const auto* p = reinterpret_cast<const uint8_t*>(&v);
      bytes.insert(bytes.end(), p, p + 4);
    } else {
      unsupported("tensor '" + t.name + "' is quantized as " + sdk::dtype_name(t.dtype) +
                  "; only int8 and uint8 activations are supported");
    }
  }
  std::vector<int64_t> dims;
  if (t.quant.per_channel()) dims = {static_cast<int64_t>(n)};
  return constant_raw(t.name + "/zero_point", t.dtype, dims, bytes);
}

std::string Converter::float_value(const TensorView& t, Layout layout) {
  auto& slot = layout == Layout::kNative ? float_native_[t.index] : float_nchw_[t.index];
  if (slot) return *slot;
  if (t.dtype == LOOM_DTYPE_FLOAT32) return value(t, layout);
  if (t.is_constant() && (t.quantized || t.dtype == LOOM_DTYPE_FLOAT32)) {
    // Weights are dequantized once, here, not by a node at run time.
    const std::vector<float> data = dequantized_data(t);
    const std::span<const uint8_t> bytes{reinterpret_cast<const uint8_t*>(data.data()),
                                         data.size() * 4};
    if (layout == Layout::kNative || t.rank() == 0) {
      slot = constant_raw(t.name + "/float", LOOM_DTYPE_FLOAT32, t.shape, bytes);
    } else {
      std::vector<int64_t> dims = t.shape;
      dims.insert(dims.begin(), 4 - t.rank(), 1);
      const auto permuted = permute_bytes(bytes, dims, 4, kToNchw);
      slot = constant_raw(t.name + "/float_nchw", LOOM_DTYPE_FLOAT32, permute_dims(dims, kToNchw),
                          permuted);
    }
    return *slot;
  }
  const std::string source = value(t, layout);
  const std::string name = fresh(t.name + "/float");
  if (t.dtype == LOOM_DTYPE_FLOAT16) {
    emit("Cast", {source}, {name}, {Attr::Int("to", LOOM_DTYPE_FLOAT32)});
  } else if (t.quantized) {
    std::vector<Attr> attrs;
    if (t.quant.per_channel())
      attrs.push_back(
          Attr::Int("axis", layout == Layout::kNchw ? nchw_axis(t.quant.axis) : t.quant.axis));
    emit("DequantizeLinear", {source, scale_of(t), zero_point_of(t)}, {name}, attrs);
  } else {
    unsupported("tensor '" + t.name + "' is " + sdk::dtype_name(t.dtype) +
                " without quantization parameters where a float value is needed");
  }
  slot = name;
  return name;
}

std::string Converter::float_output(const TensorView& t, Layout layout, int activation) {
  if (activation == 0 && t.dtype == LOOM_DTYPE_FLOAT32) return define(t, layout);
  return fresh(t.name + "/float");
}

void Converter::finish_output(const TensorView& t, Layout layout, const std::string& produced,
                              int activation) {
  std::string x = produced;
  const bool quantize = t.dtype != LOOM_DTYPE_FLOAT32;
  if (quantize && !t.quantized)
    unsupported("output '" + t.name + "' is " + sdk::dtype_name(t.dtype) +
                " without quantization parameters; only float32 and quantized int8/uint8 "
                "results are supported for this operator");
  if (activation != 0) {
    const std::string target = quantize ? fresh(t.name + "/act") : define(t, layout);
    switch (activation) {
      case 1:
        emit("Relu", {x}, {target});
        break;
      case 2:
        emit("Clip", {x, constant_f32("clip_min", {-1.f}, {}), constant_f32("clip_max", {1.f}, {})},
             {target});
        break;
      case 3:
        emit("Clip", {x, constant_f32("clip_min", {0.f}, {}), constant_f32("clip_max", {6.f}, {})},
             {target});
        break;
      case 4:
        emit("Tanh", {x}, {target});
        break;
      default:
        unsupported("fused activation " + activation_name(activation) + " is not supported");
    }
    x = target;
  }
  if (quantize) {
    std::vector<Attr> attrs;
    if (t.quant.per_channel())
      attrs.push_back(
          Attr::Int("axis", layout == Layout::kNchw ? nchw_axis(t.quant.axis) : t.quant.axis));
    emit("QuantizeLinear", {x, scale_of(t), zero_point_of(t)}, {define(t, layout)}, attrs);
  }
}

}  // namespace loom::tflite
