// The run-time fuzzer's op templates (fuzz_model.hpp): each decodes one op, its attributes and
// inputs from the bytes.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_model.hpp"

namespace loom_fuzz {
namespace {

// ---- op templates ---------------------------------------------------------------------------
// Each adds its node(s) reading the tensors it makes and returns the names of its outputs.

Outputs t_reshape(Case& c, FDP& f) {
  Dims d = small_dims(f, 0, 4);
  std::string x = data(c, f, any_type(f), d);
  std::string s = shape_tensor(c, f, "shape", shape_len(f, 5));
  auto* n = node(c, "Reshape", {x, s}, {"y"});
  if (coin(f, 3)) attr_i(n, "allowzero", attr_int(f, 0, 1));
  return {"y"};
}

Outputs t_expand(Case& c, FDP& f) {
  std::string x = data(c, f, any_type(f), small_dims(f, 0, 3));
  std::string s = shape_tensor(c, f, "shape", shape_len(f, 5));
  node(c, "Expand", {x, s}, {"y"});
  return {"y"};
}

Outputs t_tile(Case& c, FDP& f) {
  Dims d = small_dims(f, 1, 4);
  std::string x = data(c, f, any_type(f), d);
  std::string r = shape_tensor(c, f, "repeats", fuzzy_len(f, d.size()));
  node(c, "Tile", {x, r}, {"y"});
  return {"y"};
}

Outputs t_pad(Case& c, FDP& f) {
  Dims d = small_dims(f, 1, 4);
  loom_dtype_t t = float_type(f);
  std::string x = data(c, f, t, d);
  std::vector<std::string> in = {x};
  size_t axes = d.size();
  bool with_axes = c.opset >= 18 && coin(f, 3);
  if (with_axes) axes = f.ConsumeIntegralInRange<size_t>(0, d.size());
  in.push_back(tensor(c, f, "pads", LOOM_DTYPE_INT64,
                      {static_cast<int64_t>(fuzzy_len(f, 2 * axes))}, Fill::kIndex));
  // constant_value: absent, empty (when axes follow) or a scalar from the data.
  if (coin(f) || with_axes) in.push_back(coin(f) ? data(c, f, t, {}) : "");
  if (with_axes)
    in.push_back(
        tensor(c, f, "axes", LOOM_DTYPE_INT64, {static_cast<int64_t>(axes)}, Fill::kIndex));
  auto* n = node(c, "Pad", in, {"y"});
  static const char* modes[] = {"constant", "reflect", "edge", "wrap", "bogus"};
  attr_s(n, "mode", f.PickValueInArray(modes));
  return {"y"};
}

Outputs t_slice(Case& c, FDP& f) {
  Dims d = small_dims(f, 1, 4);
  std::string x = data(c, f, any_type(f), d);
  size_t n = fuzzy_len(f, f.ConsumeIntegralInRange<size_t>(1, d.size()));
  std::vector<std::string> in = {x};
  in.push_back(tensor(c, f, "starts", LOOM_DTYPE_INT64, {static_cast<int64_t>(n)}, Fill::kIndex));
  in.push_back(tensor(c, f, "ends", LOOM_DTYPE_INT64, {static_cast<int64_t>(n)}, Fill::kIndex));
  if (coin(f))
    in.push_back(tensor(c, f, "axes", LOOM_DTYPE_INT64, {static_cast<int64_t>(n)}, Fill::kIndex));
  if (in.size() == 4 && coin(f))
    in.push_back(tensor(c, f, "steps", LOOM_DTYPE_INT64, {static_cast<int64_t>(n)}, Fill::kIndex));
  node(c, "Slice", in, {"y"});
  return {"y"};
}

Outputs t_range(Case& c, FDP& f) {
  static const loom_dtype_t k[] = {LOOM_DTYPE_INT64, LOOM_DTYPE_FLOAT32, LOOM_DTYPE_INT32,
                                   LOOM_DTYPE_FLOAT64};
  loom_dtype_t t = f.PickValueInArray(k);
  bool ints = t == LOOM_DTYPE_INT64 || t == LOOM_DTYPE_INT32;
  Fill fill = ints ? Fill::kShape : Fill::kData;
  std::string a = tensor(c, f, "start", t, {}, fill);
  std::string b = tensor(c, f, "limit", t, {}, fill);
  std::string d = tensor(c, f, "delta", t, {}, ints ? Fill::kIndex : Fill::kData);
  node(c, "Range", {a, b, d}, {"y"});
  return {"y"};
}

Outputs t_onehot(Case& c, FDP& f) {
  std::string i = tensor(c, f, "indices", coin(f) ? LOOM_DTYPE_INT64 : LOOM_DTYPE_FLOAT32,
                         small_dims(f, 0, 3), Fill::kIndex);
  std::string d = tensor(c, f, "depth", coin(f) ? LOOM_DTYPE_INT64 : LOOM_DTYPE_FLOAT32,
                         coin(f) ? Dims{} : Dims{1}, Fill::kShape);
  std::string v = tensor(c, f, "values", any_type(f), {fuzzy_len(f, 2) == 2 ? 2 : 3}, Fill::kData);
  auto* n = node(c, "OneHot", {i, d, v}, {"y"});
  if (coin(f)) attr_i(n, "axis", attr_int(f, -4, 3));
  return {"y"};
}

Outputs t_resize(Case& c, FDP& f) {
  Dims d = small_dims(f, 1, 5);
  std::string x = data(c, f, coin(f, 4) ? LOOM_DTYPE_UINT8 : LOOM_DTYPE_FLOAT32, d);
  std::vector<std::string> in = {x, ""};
  size_t n = fuzzy_len(f, d.size());
  bool with_axes = c.opset >= 18 && coin(f, 3);
  if (with_axes) n = f.ConsumeIntegralInRange<size_t>(1, d.size());
  if (coin(f, 4))
    in[1] = tensor(c, f, "roi", LOOM_DTYPE_FLOAT32, {static_cast<int64_t>(2 * n)}, Fill::kData);
  if (coin(f)) {
    in.push_back(
        tensor(c, f, "scales", LOOM_DTYPE_FLOAT32, {static_cast<int64_t>(n)}, Fill::kData));
  } else {
    in.push_back("");
    in.push_back(shape_tensor(c, f, "sizes", n));
  }
  auto* node_ = node(c, "Resize", in, {"y"});
  static const char* modes[] = {"nearest", "linear", "cubic", "bogus"};
  attr_s(node_, "mode", f.PickValueInArray(modes));
  static const char* ctm[] = {"half_pixel",         "asymmetric",         "align_corners",
                              "pytorch_half_pixel", "tf_crop_and_resize", "half_pixel_symmetric"};
  if (coin(f)) attr_s(node_, "coordinate_transformation_mode", f.PickValueInArray(ctm));
  static const char* nm[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (coin(f)) attr_s(node_, "nearest_mode", f.PickValueInArray(nm));
  if (coin(f, 4)) attr_f(node_, "cubic_coeff_a", static_cast<float>(data_value(f)));
  if (coin(f, 4)) attr_i(node_, "exclude_outside", attr_int(f, 0, 1));
  if (coin(f, 4)) attr_f(node_, "extrapolation_value", static_cast<float>(data_value(f)));
  if (c.opset >= 18) {
    if (with_axes) attr_ints(node_, "axes", attr_ints_of(f, n, -5, 4));
    if (coin(f, 3)) attr_i(node_, "antialias", attr_int(f, 0, 1));
    static const char* kp[] = {"stretch", "not_larger", "not_smaller"};
    if (coin(f, 3)) attr_s(node_, "keep_aspect_ratio_policy", f.PickValueInArray(kp));
  }
  return {"y"};
}

Outputs t_constant_of_shape(Case& c, FDP& f) {
  std::string s = shape_tensor(c, f, "shape", shape_len(f, 5));
  auto* n = node(c, "ConstantOfShape", {s}, {"y"});
  if (coin(f)) {
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    loom_dtype_t t = any_type(f);
    auto* v = a->mutable_t();
    v->set_data_type(static_cast<int32_t>(t));
    size_t count = fuzzy_len(f, 1);
    if (count != 1 || coin(f, 16)) v->add_dims(static_cast<int64_t>(count));
    std::vector<uint8_t> bytes = make_bytes(f, t, static_cast<int64_t>(count), Fill::kData);
    v->set_raw_data(bytes.data(), bytes.size());
  }
  return {"y"};
}

Outputs t_gather(Case& c, FDP& f) {
  Dims d = small_dims(f, 1, 4);
  std::string x = data(c, f, any_type(f), d);
  static const char* ops[] = {"Gather", "GatherElements"};
  const char* op = f.PickValueInArray(ops);
  Dims id = std::string(op) == "Gather" ? small_dims(f, 0, 3) : d;
  if (std::string(op) == "GatherElements" && coin(f, 3)) id = small_dims(f, 1, 4);
  std::string i =
      tensor(c, f, "indices", coin(f, 4) ? LOOM_DTYPE_INT32 : LOOM_DTYPE_INT64, id, Fill::kIndex);
  auto* n = node(c, op, {x, i}, {"y"});
  if (coin(f)) attr_i(n, "axis", attr_int(f, -4, 3));
  return {"y"};
}

Outputs t_concat(Case& c, FDP& f) {
  Dims d = small_dims(f, 1, 4);
  loom_dtype_t t = any_type(f);
  std::vector<std::string> in;
  int k = f.ConsumeIntegralInRange<int>(1, 3);
  int64_t axis = attr_int(f, -4, 3);
  for (int i = 0; i < k; ++i) {
    Dims di = d;
    if (coin(f)) {
      int64_t a = axis < 0 ? axis + static_cast<int64_t>(d.size()) : axis;
      if (a >= 0 && a < static_cast<int64_t>(d.size())) di[static_cast<size_t>(a)] = small_dim(f);
    }
    if (coin(f, 16)) di = small_dims(f, 0, 4);
    in.push_back(data(c, f, t, di));
  }
  auto* n = node(c, "Concat", in, {"y"});
  attr_i(n, "axis", axis);
  return {"y"};
}

Outputs t_split(Case& c, FDP& f) {
  Dims d = small_dims(f, 1, 4);
  std::string x = data(c, f, any_type(f), d);
  size_t outs = f.ConsumeIntegralInRange<size_t>(1, 4);
  std::vector<std::string> in = {x};
  bool num_outputs = c.opset >= 18 && coin(f);
  if (!num_outputs && coin(f))
    in.push_back(tensor(c, f, "split", LOOM_DTYPE_INT64, {static_cast<int64_t>(fuzzy_len(f, outs))},
                        Fill::kShape));
  Outputs o;
  for (size_t i = 0; i < outs; ++i) o.push_back("y" + std::to_string(i));
  auto* n = node(c, "Split", in, o);
  if (coin(f)) attr_i(n, "axis", attr_int(f, -4, 3));
  if (num_outputs) attr_i(n, "num_outputs", coin(f, 8) ? attr_int(f, 0, 5) : int64_t(outs));
  return o;
}

Outputs t_transpose(Case& c, FDP& f) {
  Dims d = small_dims(f, 0, 5);
  std::string x = data(c, f, any_type(f), d);
  auto* n = node(c, "Transpose", {x}, {"y"});
  if (coin(f, 4)) return {"y"};
  Dims perm(d.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  for (size_t i = perm.size(); i > 1; --i)
    std::swap(perm[i - 1], perm[f.ConsumeIntegralInRange<size_t>(0, i - 1)]);
  if (coin(f, 8) && !perm.empty())
    perm[f.ConsumeIntegralInRange<size_t>(0, perm.size() - 1)] = attr_int(f, -2, 6);
  if (coin(f, 16)) perm.push_back(attr_int(f, 0, 5));
  attr_ints(n, "perm", perm);
  return {"y"};
}

// Spatial attributes of Conv/ConvTranspose/pools for `s` spatial dimensions.
void spatial_attrs(FDP& f, onnx::NodeProto* n, size_t s, bool dilations, bool kernel) {
  if (kernel) attr_ints(n, "kernel_shape", attr_ints_of(f, fuzzy_len(f, s), 1, 3));
  if (coin(f)) attr_ints(n, "strides", attr_ints_of(f, fuzzy_len(f, s), 1, 3));
  if (dilations && coin(f, 3)) attr_ints(n, "dilations", attr_ints_of(f, fuzzy_len(f, s), 1, 3));
  if (coin(f)) attr_ints(n, "pads", attr_ints_of(f, fuzzy_len(f, 2 * s), 0, 2));
  static const char* ap[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "bogus"};
  if (coin(f, 4)) attr_s(n, "auto_pad", f.PickValueInArray(ap));
}

Outputs t_conv(Case& c, FDP& f) {
  size_t s = f.ConsumeIntegralInRange<size_t>(1, 3);
  int64_t group = coin(f, 4) ? attr_int(f, 1, 3) : 1;
  int64_t cin = small_dim(f), cout = small_dim(f);
  Dims xd = {small_dim(f), cin};
  Dims wd = {cout, group > 0 && cin % group == 0 ? cin / group : cin};
  for (size_t i = 0; i < s; ++i) xd.push_back(small_dim(f) + (coin(f) ? 3 : 0));
  for (size_t i = 0; i < s; ++i) wd.push_back(small_dim(f) % 4);
  if (coin(f, 16)) wd = small_dims(f, 1, 5);
  loom_dtype_t t = coin(f, 8) ? LOOM_DTYPE_FLOAT64 : LOOM_DTYPE_FLOAT32;
  std::vector<std::string> in = {data(c, f, t, xd), data(c, f, t, wd)};
  if (coin(f)) in.push_back(data(c, f, t, {coin(f, 8) ? small_dim(f) : cout}));
  auto* n = node(c, "Conv", in, {"y"});
  spatial_attrs(f, n, s, true, coin(f));
  if (group != 1 || coin(f, 8)) attr_i(n, "group", group);
  return {"y"};
}

Outputs t_conv_transpose(Case& c, FDP& f) {
  size_t s = f.ConsumeIntegralInRange<size_t>(1, 3);
  int64_t group = coin(f, 4) ? attr_int(f, 1, 3) : 1;
  int64_t cin = small_dim(f), cout = small_dim(f);
  Dims xd = {small_dim(f), cin};
  Dims wd = {cin, cout};
  for (size_t i = 0; i < s; ++i) xd.push_back(small_dim(f));
  for (size_t i = 0; i < s; ++i) wd.push_back(small_dim(f) % 4);
  std::vector<std::string> in = {data(c, f, LOOM_DTYPE_FLOAT32, xd),
                                 data(c, f, LOOM_DTYPE_FLOAT32, wd)};
  if (coin(f))
    in.push_back(data(c, f, LOOM_DTYPE_FLOAT32, {coin(f, 8) ? small_dim(f) : cout * group}));
  auto* n = node(c, "ConvTranspose", in, {"y"});
  spatial_attrs(f, n, s, true, coin(f));
  if (group != 1 || coin(f, 8)) attr_i(n, "group", group);
  if (coin(f, 3)) attr_ints(n, "output_padding", attr_ints_of(f, fuzzy_len(f, s), 0, 2));
  if (coin(f, 4)) {
    Dims os(fuzzy_len(f, s));
    for (auto& e : os) e = shape_value(f);
    attr_ints(n, "output_shape", os);
  }
  return {"y"};
}

Outputs t_pool(Case& c, FDP& f) {
  static const char* ops[] = {"MaxPool", "AveragePool", "LpPool"};
  const char* op = f.PickValueInArray(ops);
  size_t s = f.ConsumeIntegralInRange<size_t>(1, 3);
  Dims xd = {small_dim(f), small_dim(f)};
  for (size_t i = 0; i < s; ++i) xd.push_back(small_dim(f) + (coin(f) ? 3 : 0));
  if (coin(f, 16)) xd = small_dims(f, 0, 5);
  bool max = std::string(op) == "MaxPool";
  std::string x = data(c, f, max && coin(f, 4) ? LOOM_DTYPE_UINT8 : LOOM_DTYPE_FLOAT32, xd);
  Outputs o = {"y"};
  if (max && coin(f, 3)) o.push_back("indices");
  auto* n = node(c, op, {x}, o);
  spatial_attrs(f, n, s, max || c.opset >= 19, true);
  if (coin(f, 3)) attr_i(n, "ceil_mode", attr_int(f, 0, 1));
  if (!max && coin(f, 3)) attr_i(n, "count_include_pad", attr_int(f, 0, 1));
  if (max && coin(f, 4)) attr_i(n, "storage_order", attr_int(f, 0, 1));
  if (std::string(op) == "LpPool" && coin(f)) attr_i(n, "p", attr_int(f, 0, 3));
  return o;
}

Outputs t_matmul(Case& c, FDP& f) {
  loom_dtype_t t = coin(f, 6) ? any_type(f) : LOOM_DTYPE_FLOAT32;
  Dims a = small_dims(f, 1, 4), b = small_dims(f, 1, 4);
  if (coin(f, 4) == false && a.size() >= 1 && b.size() >= 2) b[b.size() - 2] = a.back();
  node(c, "MatMul", {data(c, f, t, a), data(c, f, t, b)}, {"y"});
  return {"y"};
}

Outputs t_gemm(Case& c, FDP& f) {
  int64_t m = small_dim(f), k = small_dim(f), nn = small_dim(f);
  bool ta = coin(f), tb = coin(f);
  Dims a = ta ? Dims{k, m} : Dims{m, k};
  Dims b = tb ? Dims{nn, k} : Dims{k, nn};
  if (coin(f, 8)) a = small_dims(f, 0, 3);
  if (coin(f, 8)) b = small_dims(f, 0, 3);
  loom_dtype_t t = coin(f, 8) ? LOOM_DTYPE_FLOAT64 : LOOM_DTYPE_FLOAT32;
  std::vector<std::string> in = {data(c, f, t, a), data(c, f, t, b)};
  if (coin(f)) {
    static const int kShapes = 5;
    switch (f.ConsumeIntegralInRange<int>(0, kShapes - 1)) {
      case 0:
        in.push_back(data(c, f, t, {m, nn}));
        break;
      case 1:
        in.push_back(data(c, f, t, {nn}));
        break;
      case 2:
        in.push_back(data(c, f, t, {}));
        break;
      case 3:
        in.push_back(data(c, f, t, {m, 1}));
        break;
      default:
        in.push_back(data(c, f, t, small_dims(f, 0, 3)));
        break;
    }
  }
  auto* n = node(c, "Gemm", in, {"y"});
  if (ta) attr_i(n, "transA", 1);
  if (tb) attr_i(n, "transB", 1);
  if (coin(f, 3)) attr_f(n, "alpha", static_cast<float>(data_value(f)));
  if (coin(f, 3)) attr_f(n, "beta", static_cast<float>(data_value(f)));
  return {"y"};
}

Outputs t_topk(Case& c, FDP& f) {
  Dims d = small_dims(f, 1, 4);
  std::string x = data(c, f, coin(f, 4) ? LOOM_DTYPE_INT64 : LOOM_DTYPE_FLOAT32, d);
  std::string k = tensor(c, f, "k", LOOM_DTYPE_INT64, coin(f, 8) ? Dims{} : Dims{1}, Fill::kShape);
  auto* n = node(c, "TopK", {x, k}, {"values", "indices"});
  if (coin(f)) attr_i(n, "axis", attr_int(f, -4, 3));
  if (coin(f, 3)) attr_i(n, "largest", attr_int(f, 0, 1));
  if (coin(f, 3)) attr_i(n, "sorted", attr_int(f, 0, 1));
  return {"values", "indices"};
}

Outputs t_nonzero(Case& c, FDP& f) {
  node(c, "NonZero", {data(c, f, any_type(f), small_dims(f, 0, 4))}, {"y"});
  return {"y"};
}

Outputs t_where(Case& c, FDP& f) {
  loom_dtype_t t = any_type(f);
  std::string cond = data(c, f, LOOM_DTYPE_BOOL, small_dims(f, 0, 3));
  node(c, "Where", {cond, data(c, f, t, small_dims(f, 0, 3)), data(c, f, t, small_dims(f, 0, 3))},
       {"y"});
  return {"y"};
}

Outputs t_cast(Case& c, FDP& f) {
  std::string x = data(c, f, any_type(f), small_dims(f, 0, 3));
  static const int32_t to[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 0, 99};
  if (coin(f, 4)) {
    node(c, "CastLike", {x, data(c, f, any_type(f), small_dims(f, 0, 1))}, {"y"});
    return {"y"};
  }
  auto* n = node(c, "Cast", {x}, {"y"});
  attr_i(n, "to", f.PickValueInArray(to));
  if (c.opset >= 19 && coin(f, 3)) attr_i(n, "saturate", attr_int(f, 0, 1));
  return {"y"};
}

Outputs t_reduce(Case& c, FDP& f) {
  static const char* ops[] = {"ReduceSum", "ReduceMean",      "ReduceMax", "ReduceProd",
                              "ReduceL2",  "ReduceLogSumExp", "ArgMax",    "ArgMin"};
  const char* op = f.PickValueInArray(ops);
  Dims d = small_dims(f, 0, 4);
  std::string x = data(c, f, coin(f, 6) ? any_type(f) : LOOM_DTYPE_FLOAT32, d);
  std::vector<std::string> in = {x};
  bool arg = op[0] == 'A';
  bool axes_input = std::string(op) == "ReduceSum" || c.opset >= 18;
  if (!arg && axes_input && coin(f))
    in.push_back(tensor(c, f, "axes", LOOM_DTYPE_INT64, {static_cast<int64_t>(shape_len(f, 4))},
                        Fill::kIndex));
  auto* n = node(c, op, in, {"y"});
  if (coin(f)) attr_i(n, "keepdims", attr_int(f, 0, 1));
  if (arg && coin(f)) attr_i(n, "axis", attr_int(f, -4, 3));
  if (arg && coin(f, 3)) attr_i(n, "select_last_index", attr_int(f, 0, 1));
  if (!arg && !axes_input && coin(f))
    attr_ints(n, "axes", attr_ints_of(f, f.ConsumeIntegralInRange<size_t>(0, 4), -4, 3));
  if (!arg && axes_input && coin(f, 3)) attr_i(n, "noop_with_empty_axes", attr_int(f, 0, 1));
  return {"y"};
}

Outputs t_softmax(Case& c, FDP& f) {
  static const char* ops[] = {"Softmax", "LogSoftmax", "Hardmax"};
  auto* n =
      node(c, f.PickValueInArray(ops), {data(c, f, float_type(f), small_dims(f, 0, 4))}, {"y"});
  if (coin(f)) attr_i(n, "axis", attr_int(f, -4, 3));
  return {"y"};
}

Outputs t_cumsum(Case& c, FDP& f) {
  std::string x =
      data(c, f, coin(f, 4) ? LOOM_DTYPE_INT64 : LOOM_DTYPE_FLOAT32, small_dims(f, 0, 4));
  std::string axis = tensor(c, f, "axis", coin(f, 4) ? LOOM_DTYPE_INT32 : LOOM_DTYPE_INT64,
                            coin(f, 8) ? Dims{1} : Dims{}, Fill::kIndex);
  auto* n = node(c, "CumSum", {x, axis}, {"y"});
  if (coin(f)) attr_i(n, "exclusive", attr_int(f, 0, 1));
  if (coin(f)) attr_i(n, "reverse", attr_int(f, 0, 1));
  return {"y"};
}

Outputs t_scatter(Case& c, FDP& f) {
  Dims d = small_dims(f, 1, 4);
  loom_dtype_t t = coin(f, 4) ? LOOM_DTYPE_INT64 : LOOM_DTYPE_FLOAT32;
  std::string x = data(c, f, t, d);
  static const char* red[] = {"none", "add", "mul", "max", "min", "bogus"};
  if (coin(f)) {
    // ScatterND: indices [.., k], updates indices.shape[:-1] + data.shape[k:].
    Dims id = small_dims(f, 1, 3);
    int64_t k = coin(f, 8) ? small_dim(f)
                           : f.ConsumeIntegralInRange<int64_t>(1, static_cast<int64_t>(d.size()));
    id.back() = k;
    Dims ud(id.begin(), id.end() - 1);
    for (size_t i = static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(d.size())));
         i < d.size(); ++i)
      ud.push_back(d[i]);
    if (coin(f, 8)) ud = small_dims(f, 0, 4);
    std::string i = tensor(c, f, "indices", LOOM_DTYPE_INT64, id, Fill::kIndex);
    std::string u = data(c, f, t, ud);
    auto* n = node(c, "ScatterND", {x, i, u}, {"y"});
    if (coin(f, 3)) attr_s(n, "reduction", f.PickValueInArray(red));
    return {"y"};
  }
  // ScatterElements: indices and updates of one shape, rank of data.
  Dims id = d;
  for (auto& e : id) e = std::min<int64_t>(e, small_dim(f));
  if (coin(f, 8)) id = small_dims(f, 1, 4);
  std::string i = tensor(c, f, "indices", LOOM_DTYPE_INT64, id, Fill::kIndex);
  std::string u = data(c, f, t, coin(f, 8) ? small_dims(f, 1, 4) : id);
  auto* n = node(c, "ScatterElements", {x, i, u}, {"y"});
  if (coin(f)) attr_i(n, "axis", attr_int(f, -4, 3));
  if (coin(f, 3)) attr_s(n, "reduction", f.PickValueInArray(red));
  return {"y"};
}

Outputs t_gather_nd(Case& c, FDP& f) {
  Dims d = small_dims(f, 1, 4);
  std::string x = data(c, f, any_type(f), d);
  Dims id = small_dims(f, 1, 3);
  id.back() = coin(f, 8) ? small_dim(f)
                         : f.ConsumeIntegralInRange<int64_t>(1, static_cast<int64_t>(d.size()));
  std::string i = tensor(c, f, "indices", LOOM_DTYPE_INT64, id, Fill::kIndex);
  auto* n = node(c, "GatherND", {x, i}, {"y"});
  if (coin(f, 3)) attr_i(n, "batch_dims", attr_int(f, 0, 2));
  return {"y"};
}

Outputs t_depth_to_space(Case& c, FDP& f) {
  static const char* ops[] = {"DepthToSpace", "SpaceToDepth"};
  const char* op = f.PickValueInArray(ops);
  int64_t bs = attr_int(f, 1, 3);
  Dims d = {small_dim(f), small_dim(f) * (coin(f) ? 4 : 1), small_dim(f), small_dim(f)};
  if (coin(f, 8)) d = small_dims(f, 0, 5);
  auto* n = node(c, op, {data(c, f, any_type(f), d)}, {"y"});
  attr_i(n, "blocksize", bs);
  if (op[0] == 'D' && coin(f)) attr_s(n, "mode", coin(f) ? "CRD" : "DCR");
  return {"y"};
}

Outputs t_squeeze(Case& c, FDP& f) {
  static const char* ops[] = {"Squeeze", "Unsqueeze", "Flatten"};
  const char* op = f.PickValueInArray(ops);
  Dims d = small_dims(f, 0, 4);
  std::string x = data(c, f, any_type(f), d);
  if (op[0] == 'F') {
    auto* n = node(c, op, {x}, {"y"});
    if (coin(f)) attr_i(n, "axis", attr_int(f, -4, 4));
    return {"y"};
  }
  std::vector<std::string> in = {x};
  if (op[0] == 'U' || coin(f))
    in.push_back(tensor(c, f, "axes", LOOM_DTYPE_INT64, {static_cast<int64_t>(shape_len(f, 4))},
                        Fill::kIndex));
  node(c, op, in, {"y"});
  return {"y"};
}

}  // namespace

extern const Template kTemplates[] = {
    {"Reshape", t_reshape},
    {"Expand", t_expand},
    {"Tile", t_tile},
    {"Pad", t_pad},
    {"Slice", t_slice},
    {"Range", t_range},
    {"OneHot", t_onehot},
    {"Resize", t_resize},
    {"ConstantOfShape", t_constant_of_shape},
    {"Gather", t_gather},
    {"Concat", t_concat},
    {"Split", t_split},
    {"Transpose", t_transpose},
    {"Conv", t_conv},
    {"Pool", t_pool},
    {"ConvTranspose", t_conv_transpose},
    {"MatMul", t_matmul},
    {"Gemm", t_gemm},
    {"TopK", t_topk},
    {"NonZero", t_nonzero},
    {"Where", t_where},
    {"Cast", t_cast},
    {"Reduce", t_reduce},
    {"Softmax", t_softmax},
    {"Loop", t_loop},
    {"SequenceLoop", t_sequence_loop},
    {"Scan", t_scan},
    {"If", t_if},
    {"CumSum", t_cumsum},
    {"Scatter", t_scatter},
    {"GatherND", t_gather_nd},
    {"DepthToSpace", t_depth_to_space},
    {"Squeeze", t_squeeze},
};
extern const size_t kNumTemplates = sizeof kTemplates / sizeof kTemplates[0];

void maybe_follow(Case& c, FDP& f, Outputs& outs) {
  switch (f.ConsumeIntegralInRange<int>(0, 7)) {
    case 1:
      node(c, "Shape", {outs[0]}, {"post"});
      break;
    case 2:
      node(c, "Identity", {outs[0]}, {"post"});
      break;
    case 3: {
      auto* n = node(c, "Flatten", {outs[0]}, {"post"});
      attr_i(n, "axis", attr_int(f, -2, 2));
      break;
    }
    case 4: {
      // The first output as the shape of a ConstantOfShape (int64 outputs only make sense).
      node(c, "Shape", {outs[0]}, {"s"});
      node(c, "ConstantOfShape", {"s"}, {"post"});
      break;
    }
    case 5:
      node(c, "Size", {outs[0]}, {"post"});
      break;
    default:
      return;
  }
  outs.push_back("post");
}

}  // namespace loom_fuzz
