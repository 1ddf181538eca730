// The run-time fuzzer's values, tensors and nodes (fuzz_model.hpp).
#include "fuzz_model.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace loom_fuzz {

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

static uint16_t to_half(float v) {
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
static void put(std::vector<uint8_t>& out, loom_dtype_t t, double v, int64_t iv, bool use_int) {
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
                   Fill fill, bool may_be_constant) {
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

std::string scalar_i64(Case& c, FDP& f, const char* base, bool rank1) {
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
                      const std::vector<std::string>& out, onnx::GraphProto* g) {
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

bool coin(FDP& f, uint8_t one_in) {
  return f.ConsumeIntegral<uint8_t>() % one_in == 0;
}

void body_io(onnx::ValueInfoProto* vi, const std::string& name, loom_dtype_t dtype,
             const Dims* dims) {
  vi->set_name(name);
  set_type(vi, dtype, dims, false);
}

}  // namespace loom_fuzz
