// libFuzzer target: models hostile at run time (docs/limits.md, "The run-time fuzzer").
//
// The input bytes are decoded (structure-aware, FuzzedDataProvider) into a small ONNX model: one
// node from a table of op templates (Reshape, Expand, Resize, Loop, Conv...), sometimes followed
// by a second node reading its output, whose shapes, attributes and input data come from the
// bytes: small extents mostly, but also zero, negative, huge and int64-wrapping ones, and int64
// tensors that become shapes. The model goes through libloom's public C API exactly as an
// application's would: written to a memfd, loaded by the ONNX format plugin, a session on the
// cpu device under tight limits (1 thread, 64 MiB per tensor, 256 MiB per run, 10,000 Loop
// iterations, a 2 s deadline), one run (sometimes a second of the same inputs, which reuses the
// plan and must end the same way).
//
// Oracle: no crash, ASan report, leak, uncaught exception or hang (libFuzzer's -timeout); every
// failure status carries a non-empty one-line message; a successful run's outputs hold exactly
// the bytes their shapes say and agree with the shapes the model declares (inferred at load).
// A violation ends in __builtin_trap() after printing what was wrong.
//
// Environment:
//   LOOM_FUZZ_VERBOSE=1       print each case's template and outcome on stderr
//   LOOM_FUZZ_MAKE_SEEDS=DIR  write a seed corpus (inputs that reach every template and run)
//                             into DIR and exit (tests/fuzz/corpus_run_cpu was made this way)
#include <fuzzer/FuzzedDataProvider.h>
#include <loom/loom.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using Dims = std::vector<int64_t>;
using FDP = FuzzedDataProvider;

bool verbose = false;

[[noreturn]] void violation(const std::string& what) {
  std::fprintf(stderr, "fuzz_run_cpu: oracle violated: %s\n", what.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

// ---- values the bytes choose ---------------------------------------------------------------

// Extents of the tensors fed to the model: small, sometimes empty.
int64_t small_dim(FDP& f) {
  uint8_t b = f.ConsumeIntegral<uint8_t>();
  if (b < 200) return 1 + b % 4;  // 1..4 (0 bytes, i.e. an exhausted input, give 1)
  if (b < 230) return 0;
  return 5 + b % 4;  // 5..8
}

Dims small_dims(FDP& f, int min_rank, int max_rank) {
  int rank = f.ConsumeIntegralInRange<int>(min_rank, max_rank);
  // Sometimes a rank at LOOM_MAX_RANK (16) or past it: ops that add axes (Unsqueeze, OneHot,
  // Expand) must refuse results of rank 17, not write past a dims array. Extents of 1 keep
  // the tensor small; past 16 it can only be a constant (see tensor()).
  if (f.ConsumeIntegral<uint8_t>() == 255)
    return Dims(static_cast<size_t>(f.ConsumeIntegralInRange<int>(15, 18)), 1);
  Dims d(static_cast<size_t>(rank));
  for (auto& e : d) e = small_dim(f);
  return d;
}

const int64_t kSpecial[] = {
    std::numeric_limits<int64_t>::max(),
    std::numeric_limits<int64_t>::min(),
    std::numeric_limits<int64_t>::max() - 1,
    std::numeric_limits<int64_t>::min() + 1,
    int64_t{1} << 62,
    (int64_t{1} << 62) + 1,
    -(int64_t{1} << 62),
    int64_t{1} << 32,
    (int64_t{1} << 32) + 1,
    int64_t{1} << 31,
    std::numeric_limits<int32_t>::max(),
    std::numeric_limits<int32_t>::min(),
    3037000500,  // its square passes int64
    65536,
    100000,
    1 << 20,
    4096,
    -65536,
};

// A value that becomes an extent, an index or a count: mostly small, sometimes -1, negative,
// zero, huge or wrapping.
int64_t shape_value(FDP& f) {
  uint8_t b = f.ConsumeIntegral<uint8_t>();
  if (b < 150) return 1 + b % 4;  // 1..4
  if (b < 175) return 0;
  if (b < 195) return -1;
  if (b < 210) return -2 - b % 4;
  if (b < 225) return 5 + b % 12;
  return kSpecial[b % (sizeof kSpecial / sizeof kSpecial[0])];
}

// An index-like value: small signed, sometimes special.
int64_t index_value(FDP& f) {
  uint8_t b = f.ConsumeIntegral<uint8_t>();
  if (b < 220) return static_cast<int64_t>(b % 13) - 6 + (b < 110 ? 6 : 0);  // bias to >= 0
  return kSpecial[b % (sizeof kSpecial / sizeof kSpecial[0])];
}

// An attribute integer in [lo, hi] mostly; sometimes special.
int64_t attr_int(FDP& f, int64_t lo, int64_t hi) {
  uint8_t b = f.ConsumeIntegral<uint8_t>();
  if (b < 230) return lo + static_cast<int64_t>(b) % (hi - lo + 1);
  if (b < 240) return -1 - b % 3;
  return kSpecial[b % (sizeof kSpecial / sizeof kSpecial[0])];
}

double data_value(FDP& f) {
  uint8_t b = f.ConsumeIntegral<uint8_t>();
  if (b < 240) return (static_cast<double>(b) - 100.0) / 16.0;
  switch (b % 8) {
    case 0:
      return std::numeric_limits<double>::quiet_NaN();
    case 1:
      return std::numeric_limits<double>::infinity();
    case 2:
      return -std::numeric_limits<double>::infinity();
    case 3:
      return 1e30;
    case 4:
      return -1e30;
    case 5:
      return -0.0;
    case 6:
      return 3e9;
    default:
      return 1e-30;
  }
}

// ---- tensors -------------------------------------------------------------------------------

size_t dtype_bytes(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_BOOL:
    case LOOM_DTYPE_UINT8:
    case LOOM_DTYPE_INT8:
      return 1;
    case LOOM_DTYPE_FLOAT16:
    case LOOM_DTYPE_BFLOAT16:
    case LOOM_DTYPE_INT16:
    case LOOM_DTYPE_UINT16:
      return 2;
    case LOOM_DTYPE_FLOAT32:
    case LOOM_DTYPE_INT32:
    case LOOM_DTYPE_UINT32:
      return 4;
    default:
      return 8;
  }
}

uint16_t to_half(float v) {
  uint32_t x;
  std::memcpy(&x, &v, 4);
  uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xff, man = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(e) << 10) | (man >> 13));
}

// Stores `v` as one element of `t` (integers saturate, as a fuzzer's values need not fit).
void put(std::vector<uint8_t>& out, loom_dtype_t t, double v, int64_t iv, bool use_int) {
  auto sat = [&](double lo, double hi) {
    double x = use_int ? static_cast<double>(iv) : v;
    if (std::isnan(x)) return 0.0;
    return x < lo ? lo : (x > hi ? hi : x);
  };
  uint8_t buf[8] = {};
  switch (t) {
    case LOOM_DTYPE_FLOAT32: {
      float x = static_cast<float>(use_int ? static_cast<double>(iv) : v);
      std::memcpy(buf, &x, 4);
      break;
    }
    case LOOM_DTYPE_FLOAT64: {
      double x = use_int ? static_cast<double>(iv) : v;
      std::memcpy(buf, &x, 8);
      break;
    }
    case LOOM_DTYPE_FLOAT16: {
      uint16_t h = to_half(static_cast<float>(use_int ? static_cast<double>(iv) : v));
      std::memcpy(buf, &h, 2);
      break;
    }
    case LOOM_DTYPE_INT64: {
      int64_t x = use_int ? iv : static_cast<int64_t>(sat(-1e18, 1e18));
      std::memcpy(buf, &x, 8);
      break;
    }
    case LOOM_DTYPE_INT32: {
      auto x = static_cast<int32_t>(sat(-2147483648.0, 2147483647.0));
      std::memcpy(buf, &x, 4);
      break;
    }
    case LOOM_DTYPE_UINT8:
      buf[0] = static_cast<uint8_t>(sat(0, 255));
      break;
    case LOOM_DTYPE_INT8:
      buf[0] = static_cast<uint8_t>(static_cast<int8_t>(sat(-128, 127)));
      break;
    case LOOM_DTYPE_BOOL:
      buf[0] = (use_int ? iv != 0 : v > 0) ? 1 : 0;
      break;
    default:
      break;
  }
  out.insert(out.end(), buf, buf + dtype_bytes(t));
}

int64_t count_of(const Dims& d) {
  int64_t n = 1;
  for (int64_t e : d) n *= e;  // the extents of fed tensors are small (checked by callers)
  return n;
}

enum class Fill { kData, kIndex, kShape };

struct Feed {
  std::string name;
  loom_dtype_t dtype;
  Dims dims;
  std::vector<uint8_t> bytes;
};

struct Case {
  int opset = 17;
  onnx::ModelProto model;
  onnx::GraphProto* g = nullptr;
  std::vector<Feed> feeds;
  int next = 0;
  std::string name(const char* base) { return std::string(base) + std::to_string(next++); }
};

void set_type(onnx::ValueInfoProto* vi, loom_dtype_t dtype, const Dims* dims, bool symbolic) {
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(dtype));
  if (!dims) return;
  auto* shape = tt->mutable_shape();
  int k = 0;
  for (int64_t e : *dims) {
    auto* d = shape->add_dim();
    if (symbolic)
      d->set_dim_param(vi->name() + "_d" + std::to_string(k++));
    else
      d->set_dim_value(e);
  }
}

std::vector<uint8_t> make_bytes(FDP& f, loom_dtype_t dtype, int64_t n, Fill fill) {
  std::vector<uint8_t> bytes;
  for (int64_t i = 0; i < n; ++i) {
    switch (fill) {
      case Fill::kData:
        put(bytes, dtype, data_value(f), 0, false);
        break;
      case Fill::kIndex:
        put(bytes, dtype, 0, index_value(f), true);
        break;
      case Fill::kShape:
        put(bytes, dtype, 0, shape_value(f), true);
        break;
    }
  }
  return bytes;
}

// A tensor the node reads: a graph input fed at the run (its declared shape static or
// symbolic), or, when `may_be_constant` and the bytes say so, an initializer (then shape
// inference and constant folding see its values at session creation).
std::string tensor(Case& c, FDP& f, const char* base, loom_dtype_t dtype, const Dims& dims,
                   Fill fill, bool may_be_constant = true) {
  std::string name = c.name(base);
  std::vector<uint8_t> bytes = make_bytes(f, dtype, count_of(dims), fill);
  uint8_t how = f.ConsumeIntegral<uint8_t>();
  if ((may_be_constant && how >= 128) || dims.size() > LOOM_MAX_RANK) {
    auto* t = c.g->add_initializer();
    t->set_name(name);
    t->set_data_type(static_cast<int32_t>(dtype));
    for (int64_t e : dims) t->add_dims(e);
    t->set_raw_data(bytes.data(), bytes.size());
    return name;
  }
  auto* vi = c.g->add_input();
  vi->set_name(name);
  set_type(vi, dtype, &dims, how % 4 == 1);
  c.feeds.push_back({name, dtype, dims, std::move(bytes)});
  return name;
}

std::string data(Case& c, FDP& f, loom_dtype_t dtype, const Dims& dims) {
  return tensor(c, f, "x", dtype, dims, Fill::kData);
}

// How many values a shape-like tensor holds: up to `most` usually, sometimes 15 to 18 (ranks at
// and past LOOM_MAX_RANK).
size_t shape_len(FDP& f, size_t most) {
  if (f.ConsumeIntegral<uint8_t>() >= 250) return f.ConsumeIntegralInRange<size_t>(15, 18);
  return f.ConsumeIntegralInRange<size_t>(0, most);
}

// A 1-D int64 tensor of `n` shape values (a target shape, pads, repeats...).
std::string shape_tensor(Case& c, FDP& f, const char* base, size_t n) {
  return tensor(c, f, base, LOOM_DTYPE_INT64, {static_cast<int64_t>(n)}, Fill::kShape);
}

std::string scalar_i64(Case& c, FDP& f, const char* base, bool rank1 = false) {
  return tensor(c, f, base, LOOM_DTYPE_INT64, rank1 ? Dims{1} : Dims{}, Fill::kShape);
}

loom_dtype_t float_type(FDP& f) {
  static const loom_dtype_t k[] = {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT32,
                                   LOOM_DTYPE_FLOAT64, LOOM_DTYPE_FLOAT16};
  return f.PickValueInArray(k);
}

loom_dtype_t any_type(FDP& f) {
  static const loom_dtype_t k[] = {LOOM_DTYPE_FLOAT32, LOOM_DTYPE_FLOAT32, LOOM_DTYPE_INT64,
                                   LOOM_DTYPE_INT32,   LOOM_DTYPE_UINT8,   LOOM_DTYPE_FLOAT64,
                                   LOOM_DTYPE_FLOAT16, LOOM_DTYPE_BOOL,    LOOM_DTYPE_INT8};
  return f.PickValueInArray(k);
}

onnx::NodeProto* node(Case& c, const char* op, const std::vector<std::string>& in,
                      const std::vector<std::string>& out, onnx::GraphProto* g = nullptr) {
  auto* n = (g ? g : c.g)->add_node();
  n->set_op_type(op);
  n->set_name(std::string(op) + "_" + std::to_string(c.next++));
  for (const auto& s : in) n->add_input(s);
  for (const auto& s : out) n->add_output(s);
  return n;
}

void attr_i(onnx::NodeProto* n, const char* name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void attr_f(onnx::NodeProto* n, const char* name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void attr_s(onnx::NodeProto* n, const char* name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

void attr_ints(onnx::NodeProto* n, const char* name, const Dims& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t e : v) a->add_ints(e);
}

onnx::GraphProto* attr_graph(onnx::NodeProto* n, const char* name) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

// `n` attribute integers, each in [lo, hi] mostly.
Dims attr_ints_of(FDP& f, size_t n, int64_t lo, int64_t hi) {
  Dims v(n);
  for (auto& e : v) e = attr_int(f, lo, hi);
  return v;
}

// The rank an attribute list should have, sometimes off by one.
size_t fuzzy_len(FDP& f, size_t n) {
  uint8_t b = f.ConsumeIntegral<uint8_t>();
  if (b < 240) return n;
  return b % 2 ? n + 1 : (n ? n - 1 : 0);
}

bool coin(FDP& f, uint8_t one_in = 2) {
  return f.ConsumeIntegral<uint8_t>() % one_in == 0;
}

void body_io(onnx::ValueInfoProto* vi, const std::string& name, loom_dtype_t dtype,
             const Dims* dims) {
  vi->set_name(name);
  set_type(vi, dtype, dims, false);
}

// ---- op templates ---------------------------------------------------------------------------
// Each adds its node(s) reading the tensors it makes and returns the names of its outputs.

using Outputs = std::vector<std::string>;

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

// Loop: trip count and condition from the data; the body doubles, concatenates or adds to the
// carried value and may emit a scan output each iteration.
Outputs t_loop(Case& c, FDP& f) {
  loom_dtype_t t = coin(f, 4) ? LOOM_DTYPE_INT64 : LOOM_DTYPE_FLOAT32;
  Dims d = small_dims(f, 0, 3);
  std::string m = coin(f, 5) ? "" : scalar_i64(c, f, "M", coin(f, 8));
  std::string cond = coin(f, 3) ? "" : tensor(c, f, "cond", LOOM_DTYPE_BOOL, {}, Fill::kIndex);
  std::string v = data(c, f, t, d);
  bool scan = coin(f);
  Outputs o = {"v_final"};
  if (scan) o.push_back("scan");
  auto* n = node(c, "Loop", {m, cond, v}, o);
  auto* b = attr_graph(n, "body");
  Dims none;
  body_io(b->add_input(), "iter", LOOM_DTYPE_INT64, &none);
  body_io(b->add_input(), "cond_in", LOOM_DTYPE_BOOL, &none);
  body_io(b->add_input(), "v_in", t, nullptr);
  // The condition: the incoming one, or iter < a limit from the data (an outer-scope value).
  switch (f.ConsumeIntegralInRange<int>(0, 2)) {
    case 0:
      node(c, "Identity", {"cond_in"}, {"cond_out"}, b);
      break;
    case 1: {
      std::string limit = scalar_i64(c, f, "limit");
      node(c, "Less", {"iter", limit}, {"cond_out"}, b);
      break;
    }
    default: {
      // A condition that ignores the trip count: only the loop limit ends it without M.
      auto* k = node(c, "Constant", {}, {"cond_out"}, b);
      auto* a = k->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
      a->mutable_t()->add_int32_data(1);
      break;
    }
  }
  switch (f.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      node(c, "Add", {"v_in", "v_in"}, {"v_out"}, b);
      break;
    case 1: {
      auto* cc = node(c, "Concat", {"v_in", "v_in"}, {"v_out"}, b);
      attr_i(cc, "axis", attr_int(f, -3, 2));
      break;
    }
    case 2:
      node(c, "Identity", {"v_in"}, {"v_out"}, b);
      break;
    default: {
      // Expand the carried value to a shape from the data (outer scope).
      std::string s = shape_tensor(c, f, "shape", shape_len(f, 3));
      node(c, "Expand", {"v_in", s}, {"v_out"}, b);
      break;
    }
  }
  body_io(b->add_output(), "cond_out", LOOM_DTYPE_BOOL, &none);
  body_io(b->add_output(), "v_out", t, nullptr);
  if (scan) {
    node(c, coin(f) ? "Identity" : "Neg", {"v_in"}, {"s_out"}, b);
    body_io(b->add_output(), "s_out", t, nullptr);
  }
  return o;
}

// Loop carrying a sequence (SequenceEmpty -> SequenceInsert per iteration ->
// ConcatFromSequence): the core runs such control flow itself, on the host, whatever the
// devices are.
Outputs t_sequence_loop(Case& c, FDP& f) {
  std::string m = scalar_i64(c, f, "M");
  std::string x = data(c, f, LOOM_DTYPE_FLOAT32, small_dims(f, 0, 3));
  auto* e = node(c, "SequenceEmpty", {}, {"seq0"});
  attr_i(e, "dtype", 1);
  auto* n = node(c, "Loop", {m, "", "seq0"}, {"seq"});
  auto* b = attr_graph(n, "body");
  Dims none;
  body_io(b->add_input(), "iter", LOOM_DTYPE_INT64, &none);
  body_io(b->add_input(), "cond_in", LOOM_DTYPE_BOOL, &none);
  auto* sin = b->add_input();
  sin->set_name("s_in");
  sin->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(1);
  node(c, "Identity", {"cond_in"}, {"cond_out"}, b);
  if (coin(f)) {
    node(c, "SequenceInsert", {"s_in", x}, {"s_out"}, b);
  } else {
    // Insert at a position from the data.
    std::string pos = scalar_i64(c, f, "pos");
    node(c, "SequenceInsert", {"s_in", x, pos}, {"s_out"}, b);
  }
  body_io(b->add_output(), "cond_out", LOOM_DTYPE_BOOL, &none);
  auto* sout = b->add_output();
  sout->set_name("s_out");
  sout->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(1);
  auto* cat = node(c, "ConcatFromSequence", {"seq"}, {"y"});
  attr_i(cat, "axis", attr_int(f, -3, 2));
  if (coin(f, 3)) attr_i(cat, "new_axis", attr_int(f, 0, 1));
  return {"y"};
}

Outputs t_scan(Case& c, FDP& f) {
  Dims sd = small_dims(f, 0, 2);
  Dims xd = small_dims(f, 1, 3);
  std::string s0 = data(c, f, LOOM_DTYPE_FLOAT32, sd);
  std::string x = data(c, f, LOOM_DTYPE_FLOAT32, xd);
  auto* n = node(c, "Scan", {s0, x}, {"s_final", "ys"});
  attr_i(n, "num_scan_inputs", coin(f, 8) ? attr_int(f, 0, 3) : 1);
  if (coin(f, 3)) attr_ints(n, "scan_input_axes", attr_ints_of(f, fuzzy_len(f, 1), -3, 2));
  if (coin(f, 3)) attr_ints(n, "scan_output_axes", attr_ints_of(f, fuzzy_len(f, 1), -3, 2));
  if (coin(f, 3)) attr_ints(n, "scan_input_directions", attr_ints_of(f, fuzzy_len(f, 1), 0, 1));
  if (coin(f, 3)) attr_ints(n, "scan_output_directions", attr_ints_of(f, fuzzy_len(f, 1), 0, 1));
  auto* b = attr_graph(n, "body");
  body_io(b->add_input(), "s_in", LOOM_DTYPE_FLOAT32, nullptr);
  body_io(b->add_input(), "x_in", LOOM_DTYPE_FLOAT32, nullptr);
  switch (f.ConsumeIntegralInRange<int>(0, 2)) {
    case 0:
      node(c, "Add", {"s_in", "x_in"}, {"s_out"}, b);
      break;
    case 1:
      node(c, "Identity", {"s_in"}, {"s_out"}, b);
      break;
    default: {
      auto* cc = node(c, "Concat", {"s_in", "s_in"}, {"s_out"}, b);
      attr_i(cc, "axis", 0);
      break;
    }
  }
  node(c, coin(f) ? "Identity" : "Abs", {"x_in"}, {"y_out"}, b);
  body_io(b->add_output(), "s_out", LOOM_DTYPE_FLOAT32, nullptr);
  body_io(b->add_output(), "y_out", LOOM_DTYPE_FLOAT32, nullptr);
  return {"s_final", "ys"};
}

// If: the branches give tensors of different shapes (one from the data).
Outputs t_if(Case& c, FDP& f) {
  std::string cond =
      tensor(c, f, "cond", LOOM_DTYPE_BOOL, coin(f, 8) ? Dims{1} : Dims{}, Fill::kIndex);
  std::string x = data(c, f, LOOM_DTYPE_FLOAT32, small_dims(f, 0, 3));
  std::string s = shape_tensor(c, f, "shape", shape_len(f, 3));
  auto* n = node(c, "If", {cond}, {"y"});
  const char* branches[] = {"then_branch", "else_branch"};
  for (const char* br : branches) {
    auto* b = attr_graph(n, br);
    switch (f.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
        node(c, "Identity", {x}, {"r"}, b);
        break;
      case 1:
        node(c, "Expand", {x, s}, {"r"}, b);
        break;
      case 2:
        node(c, "Reshape", {x, s}, {"r"}, b);
        break;
      default:
        node(c, "ConstantOfShape", {s}, {"r"}, b);
        break;
    }
    body_io(b->add_output(), "r", LOOM_DTYPE_FLOAT32, nullptr);
  }
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

struct Template {
  const char* name;
  Outputs (*make)(Case&, FDP&);
};

const Template kTemplates[] = {
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
constexpr size_t kNumTemplates = sizeof kTemplates / sizeof kTemplates[0];

// A second node reading the first output, sometimes: what a device does with a tensor whose
// shape came from the data (a chain of data-dependent shapes).
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

// ---- running --------------------------------------------------------------------------------

loom_runtime_t* the_runtime() {
  static loom_runtime_t* runtime = [] {
    const char* paths[] = {LOOM_FUZZ_ONNX_PLUGIN, LOOM_FUZZ_CPU_PLUGIN};
    loom_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.num_plugin_paths = 2;
    o.plugin_paths = paths;
    o.use_env_path = false;
    o.use_default_paths = false;
    o.log_level = LOOM_LOG_ERROR;
    o.log_fn = [](void*, loom_log_level_t, const char*, const char*) {};
    o.allow_newer_opsets = -1;
    loom_runtime_t* r = nullptr;
    if (loom_status_t* s = loom_runtime_create(&o, &r)) {
      std::fprintf(stderr, "fuzz_run_cpu: runtime: %s\n", loom_status_message(s));
      std::abort();
    }
    for (size_t i = 0; i < loom_runtime_num_plugins(r); ++i) {
      loom_plugin_record_t rec{};
      rec.struct_size = sizeof rec;
      if (loom_status_t* s = loom_runtime_plugin(r, i, &rec)) {
        loom_status_free(s);
        continue;
      }
      if (!rec.loaded) {
        std::fprintf(stderr, "fuzz_run_cpu: plugin %s did not load: %s\n", rec.path, rec.error);
        std::abort();
      }
    }
    return r;
  }();
  return runtime;
}

// Checks a failure's message and frees it; returns its code.
loom_status_code_t check_status(loom_status_t* s, const char* what) {
  if (!s) return LOOM_OK;
  loom_status_code_t code = loom_status_code(s);
  const char* m = loom_status_message(s);
  std::string msg = m ? m : "";
  loom_status_free(s);
  if (verbose) std::fprintf(stderr, "  %s: [%d] %s\n", what, static_cast<int>(code), msg.c_str());
  if (code == LOOM_OK) violation(std::string(what) + ": a status with code OK");
  if (msg.empty()) violation(std::string(what) + ": a failure with an empty message");
  if (msg.find('\n') != std::string::npos || msg.find('\r') != std::string::npos)
    violation(std::string(what) + ": a message of several lines: " + msg);
  if (code == LOOM_ERROR_INTERNAL) violation(std::string(what) + ": an internal error: " + msg);
  return code;
}

struct Memfd {
  int fd = -1;
  ~Memfd() {
    if (fd >= 0) ::close(fd);
  }
};

// The outputs of a successful run against their shapes and the model's declarations.
void check_outputs(loom_model_t* model, std::vector<loom_host_tensor_t>& outs) {
  for (size_t i = 0; i < outs.size(); ++i) {
    const loom_host_tensor_t& t = outs[i];
    std::string what = "output " + std::to_string(i);
    if (t.rank < 0 || t.rank > LOOM_MAX_RANK) violation(what + ": rank " + std::to_string(t.rank));
    unsigned __int128 n = 1;
    for (int32_t k = 0; k < t.rank; ++k) {
      if (t.dims[k] < 0) violation(what + ": a negative extent");
      n *= static_cast<unsigned __int128>(t.dims[k]);
      if (n > (static_cast<unsigned __int128>(1) << 62)) violation(what + ": an absurd shape");
    }
    size_t es = loom_dtype_size(t.dtype);
    if (t.dtype != LOOM_DTYPE_STRING && n * es != t.byte_size)
      violation(what + ": " + std::to_string(t.byte_size) + " bytes for " +
                std::to_string(static_cast<uint64_t>(n)) + " elements of " +
                loom_dtype_name(t.dtype));
    if (t.byte_size > 0 && !t.data) violation(what + ": no data");
    // Touch every byte: ASan sees a buffer shorter than it claims.
    volatile uint8_t sink = 0;
    for (size_t b = 0; b < t.byte_size; b += 64)
      sink = sink ^ static_cast<const uint8_t*>(t.data)[b];
    if (t.byte_size) sink = sink ^ static_cast<const uint8_t*>(t.data)[t.byte_size - 1];
    (void)sink;
    loom_io_info_t info{};
    info.struct_size = sizeof info;
    if (loom_status_t* s = loom_model_output(model, i, &info)) {
      check_status(s, "loom_model_output");
      continue;
    }
    if (info.dtype != LOOM_DTYPE_UNDEFINED && info.dtype != t.dtype)
      violation(what + ": dtype " + loom_dtype_name(t.dtype) + ", declared " +
                loom_dtype_name(info.dtype));
    if (info.rank < 0) continue;
    if (info.rank != t.rank)
      violation(what + ": rank " + std::to_string(t.rank) + ", declared " +
                std::to_string(info.rank));
    for (int32_t k = 0; k < t.rank; ++k)
      if (info.dims[k] >= 0 && info.dims[k] != t.dims[k])
        violation(what + ": extent " + std::to_string(k) + " is " + std::to_string(t.dims[k]) +
                  ", declared " + std::to_string(info.dims[k]));
  }
}

// Builds and runs one case; returns whether the run succeeded.
bool run_case(const uint8_t* bytes, size_t size) {
  FDP f(bytes, size);
  Case c;
  static const int opsets[] = {17, 13, 18, 19};
  c.opset = f.PickValueInArray(opsets);
  c.model.set_ir_version(8);
  auto* op = c.model.add_opset_import();
  op->set_domain("");
  op->set_version(c.opset);
  c.g = c.model.mutable_graph();
  c.g->set_name("fuzz");
  const Template& tpl = kTemplates[f.ConsumeIntegralInRange<size_t>(0, kNumTemplates - 1)];
  Outputs outs = tpl.make(c, f);
  maybe_follow(c, f, outs);
  for (const auto& o : outs) c.g->add_output()->set_name(o);

  std::string wire;
  if (!c.model.SerializeToString(&wire)) return false;
  if (verbose)
    std::fprintf(stderr, "case: %s, opset %d, %zu feeds, %zu bytes\n", tpl.name, c.opset,
                 c.feeds.size(), wire.size());

  Memfd file;
  file.fd = memfd_create("fuzz_run_cpu.onnx", MFD_CLOEXEC);
  if (file.fd < 0) std::abort();
  for (size_t off = 0; off < wire.size();) {
    ssize_t w = ::write(file.fd, wire.data() + off, wire.size() - off);
    if (w <= 0) std::abort();
    off += static_cast<size_t>(w);
  }
  std::string path = "/proc/self/fd/" + std::to_string(file.fd);

  loom_runtime_t* runtime = the_runtime();
  loom_model_t* model = nullptr;
  if (check_status(loom_model_load(runtime, path.c_str(), &model), "load")) return false;

  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = "cpu";
  so.threads = 1;
  so.max_tensor_bytes = int64_t{64} << 20;
  so.max_run_bytes = int64_t{256} << 20;
  so.max_loop_iterations = 10000;
  so.deadline_ms = 2000;
  loom_session_t* session = nullptr;
  loom_status_t* s = loom_session_create(runtime, model, &so, &session);
  if (check_status(s, "session")) {
    loom_model_free(model);
    return false;
  }

  std::vector<const char*> names;
  std::vector<loom_host_tensor_t> inputs;
  static uint8_t empty[8];
  for (const Feed& feed : c.feeds) {
    loom_host_tensor_t t{};
    t.struct_size = sizeof t;
    t.dtype = feed.dtype;
    t.rank = static_cast<int32_t>(feed.dims.size());
    for (size_t k = 0; k < feed.dims.size(); ++k) t.dims[k] = feed.dims[k];
    t.data = feed.bytes.empty() ? empty : const_cast<uint8_t*>(feed.bytes.data());
    t.byte_size = feed.bytes.size();
    names.push_back(feed.name.c_str());
    inputs.push_back(t);
  }
  size_t num_outputs = loom_model_num_outputs(model);
  bool ok = false;
  // Two runs: the second reuses the plan the first made (and must do the same again).
  for (int run = 0; run < 2; ++run) {
    std::vector<loom_host_tensor_t> outputs(num_outputs);
    for (auto& o : outputs) o.struct_size = sizeof o;
    s = loom_session_run(session, inputs.size(), names.data(), inputs.data(), outputs.size(),
                         outputs.data());
    bool this_ok = check_status(s, "run") == LOOM_OK;
    if (this_ok) check_outputs(model, outputs);
    for (auto& o : outputs) loom_host_tensor_release(&o);
    if (run == 1 && this_ok != ok) violation("a second run of the same inputs ended otherwise");
    ok = this_ok;
    if (!coin(f, 4)) break;
  }
  if (verbose) std::fprintf(stderr, "  -> %s\n", ok ? "ran" : "refused");
  loom_session_destroy(session);
  loom_model_free(model);
  return ok;
}

// Writes seeds: for every template, inputs whose choices are the bytes' most common ones, a
// few of them that run and one that is refused, so that the fuzzer starts from every template.
void make_seeds(const char* dir) {
  std::filesystem::create_directories(dir);
  std::mt19937 rng(20240530);
  for (size_t t = 0; t < kNumTemplates; ++t) {
    int ran = 0, refused = 0;
    for (int attempt = 0; attempt < 400 && (ran < 2 || refused < 1); ++attempt) {
      // Bytes below 150 keep every value small and sane; a few larger ones vary the choices.
      std::vector<uint8_t> bytes(static_cast<size_t>(48 + rng() % 160));
      for (auto& b : bytes) b = static_cast<uint8_t>(rng() % 8 == 0 ? rng() % 256 : rng() % 100);
      // FuzzedDataProvider takes integers from the end: the opset, then the template.
      bytes.push_back(static_cast<uint8_t>(t));
      bytes.push_back(static_cast<uint8_t>(attempt % 4));
      bool ok = run_case(bytes.data(), bytes.size());
      if ((ok && ran >= 2) || (!ok && refused >= 1)) continue;
      (ok ? ran : refused)++;
      std::string name = std::string(dir) + "/" + kTemplates[t].name +
                         (ok ? "-ran-" : "-refused-") + std::to_string(ok ? ran : refused);
      std::ofstream(name, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
    }
    std::fprintf(stderr, "%s: %d ran, %d refused\n", kTemplates[t].name, ran, refused);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  verbose = std::getenv("LOOM_FUZZ_VERBOSE") != nullptr;
  if (const char* dir = std::getenv("LOOM_FUZZ_MAKE_SEEDS")) {
    make_seeds(dir);
    std::exit(0);
  }
  the_runtime();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  run_case(bytes, size);
  return 0;
}
