#include "host_eval.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <loom/op_semantics.hpp>
#include <set>
#include <string>

namespace loom::core {
namespace {

using Dims = std::vector<int64_t>;
using Result = std::optional<std::vector<HostTensor>>;

bool integer_dtype(loom_dtype_t t) {
  return t == LOOM_DTYPE_INT64 || t == LOOM_DTYPE_INT32;
}
bool host_dtype(loom_dtype_t t) {
  return integer_dtype(t) || t == LOOM_DTYPE_BOOL;
}

// Element count of `dims` when every dim is known and the count is within the fold bound.
std::optional<int64_t> bounded_count(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d == 0) return 0;
    if (n > kMaxFoldedElements / d) {
      // Another zero dim would make the product 0.
      for (int64_t e : dims)
        if (e == 0) return 0;
      return std::nullopt;
    }
    n *= d;
  }
  return n;
}

int64_t count_of(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// The value in `dtype`'s range: int32 wraps around like a two's-complement store, bool is != 0.
int64_t fit(loom_dtype_t dtype, int64_t v) {
  if (dtype == LOOM_DTYPE_INT32) return static_cast<int32_t>(static_cast<uint32_t>(v));
  if (dtype == LOOM_DTYPE_BOOL) return v != 0;
  return v;
}

int64_t int_attr(const Node& n, const char* name, int64_t fallback) {
  const Attribute* a = n.find_attribute(name);
  return a && a->type == LOOM_ATTR_INT ? a->i : fallback;
}

// The integer list an op reads from attribute `name` (older opsets) or from input `index`
// (newer ones). nullopt: given but not known; an empty optional vector inside: not given.
std::optional<std::optional<Dims>> int_list(const Node& n, const std::vector<HostInput>& in,
                                            bool from_attribute, const char* name, size_t index) {
  if (from_attribute) {
    const Attribute* a = n.find_attribute(name);
    if (!a) return std::optional<Dims>{};
    if (a->type != LOOM_ATTR_INTS) return std::nullopt;
    return std::optional<Dims>{a->ints};
  }
  if (index >= in.size() || !in[index].present) return std::optional<Dims>{};
  const HostTensor* t = in[index].value;
  if (!t || !integer_dtype(t->dtype) || t->dims.size() > 1) return std::nullopt;
  return std::optional<Dims>{t->data};
}

// The multidirectionally broadcast shape of `shapes`, or nullopt when they do not broadcast.
std::optional<Dims> broadcast_dims(const std::vector<const Dims*>& shapes) {
  size_t rank = 0;
  for (const Dims* s : shapes) rank = std::max(rank, s->size());
  Dims out(rank, 1);
  for (const Dims* s : shapes)
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t d = (*s)[i];
      int64_t& o = out[rank - s->size() + i];
      if (d == o || d == 1) continue;
      if (o != 1) return std::nullopt;
      o = d;
    }
  return out;
}

// For each element of a tensor of shape `out`, the flat index of the element of `in` (shape
// broadcast to `out`) it reads.
std::vector<int64_t> broadcast_index(const Dims& in, const Dims& out) {
  int64_t n = count_of(out);
  std::vector<int64_t> map(static_cast<size_t>(n));
  size_t rank = out.size(), lead = rank - in.size();
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat, index = 0, stride = 1;
    for (size_t i = rank; i-- > 0;) {
      int64_t coord = rest % out[i];
      rest /= out[i];
      if (i >= lead) {
        int64_t d = in[i - lead];
        if (d != 1) index += coord * stride;
        stride *= d;
      }
    }
    map[static_cast<size_t>(flat)] = index;
  }
  return map;
}

const HostTensor* value_at(const std::vector<HostInput>& in, size_t i) {
  return i < in.size() ? in[i].value : nullptr;
}

Result one(HostTensor t) {
  return std::vector<HostTensor>{std::move(t)};
}

// ---- the ops --------------------------------------------------------------------------------

Result eval_shape(const Node& n, const std::vector<HostInput>& in) {
  if (in.empty() || !in[0].shape || in[0].shape->rank < 0) return std::nullopt;
  const Shape& s = *in[0].shape;
  int64_t rank = s.rank;
  auto clamp_end = [&](int64_t v) {
    if (v < 0) v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = clamp_end(int_attr(n, "start", 0));
  int64_t end = clamp_end(int_attr(n, "end", rank));
  HostTensor t;
  for (int64_t i = start; i < end; ++i) {
    if (s.dims[static_cast<size_t>(i)] < 0) return std::nullopt;
    t.data.push_back(s.dims[static_cast<size_t>(i)]);
  }
  t.dims = {static_cast<int64_t>(t.data.size())};
  return one(std::move(t));
}

Result eval_size(const std::vector<HostInput>& in) {
  if (in.empty() || !in[0].shape || !in[0].shape->is_static()) return std::nullopt;
  HostTensor t;
  int64_t n = 1;
  for (int64_t d : in[0].shape->dims) {
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  t.data = {n};
  return one(std::move(t));
}

Result eval_cast(const Node& n, const HostTensor& x) {
  auto to = static_cast<loom_dtype_t>(int_attr(n, "to", LOOM_DTYPE_UNDEFINED));
  if (!host_dtype(to)) return std::nullopt;
  HostTensor t{to, x.dims, x.data};
  for (int64_t& v : t.data) v = fit(to, v);
  return one(std::move(t));
}

Result eval_gather(const Node& n, const HostTensor& data, const HostTensor& indices) {
  if (data.dims.empty() || !integer_dtype(indices.dtype)) return std::nullopt;
  auto axis =
      sdk::try_normalize_axis(int_attr(n, "axis", 0), static_cast<int64_t>(data.dims.size()));
  if (!axis) return std::nullopt;
  size_t a = static_cast<size_t>(*axis);
  int64_t dim = data.dims[a];
  HostTensor t;
  t.dtype = data.dtype;
  t.dims.assign(data.dims.begin(), data.dims.begin() + static_cast<ptrdiff_t>(a));
  t.dims.insert(t.dims.end(), indices.dims.begin(), indices.dims.end());
  t.dims.insert(t.dims.end(), data.dims.begin() + static_cast<ptrdiff_t>(a) + 1, data.dims.end());
  if (!bounded_count(t.dims)) return std::nullopt;
  int64_t outer = count_of(Dims(data.dims.begin(), data.dims.begin() + static_cast<ptrdiff_t>(a)));
  int64_t inner =
      count_of(Dims(data.dims.begin() + static_cast<ptrdiff_t>(a) + 1, data.dims.end()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : indices.data) {
      // Out-of-range indices are an error the device running the node reports.
      if (index < -dim || index >= dim) return std::nullopt;
      if (index < 0) index += dim;
      for (int64_t i = 0; i < inner; ++i)
        t.data.push_back(data.data[static_cast<size_t>((o * dim + index) * inner + i)]);
    }
  return one(std::move(t));
}

Result eval_unsqueeze(const Node& n, const std::vector<HostInput>& in) {
  const HostTensor* x = value_at(in, 0);
  auto axes = int_list(n, in, n.opset < 13, "axes", 1);
  if (!x || !axes || !*axes || (*axes)->empty()) return std::nullopt;
  int64_t rank = static_cast<int64_t>(x->dims.size() + (*axes)->size());
  std::set<int64_t> at;
  for (int64_t axis : **axes) {
    auto a = sdk::try_normalize_axis(axis, rank);
    if (!a || !at.insert(*a).second) return std::nullopt;
  }
  HostTensor t{x->dtype, {}, x->data};
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) t.dims.push_back(at.count(i) ? 1 : x->dims[next++]);
  return one(std::move(t));
}

Result eval_squeeze(const Node& n, const std::vector<HostInput>& in) {
  const HostTensor* x = value_at(in, 0);
  auto axes = int_list(n, in, n.opset < 13, "axes", 1);
  if (!x || !axes) return std::nullopt;
  int64_t rank = static_cast<int64_t>(x->dims.size());
  std::set<int64_t> at;
  if (*axes) {
    for (int64_t axis : **axes) {
      auto a = sdk::try_normalize_axis(axis, rank);
      if (!a || x->dims[static_cast<size_t>(*a)] != 1 || !at.insert(*a).second) return std::nullopt;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i)
      if (x->dims[static_cast<size_t>(i)] == 1) at.insert(i);
  }
  HostTensor t{x->dtype, {}, x->data};
  for (int64_t i = 0; i < rank; ++i)
    if (!at.count(i)) t.dims.push_back(x->dims[static_cast<size_t>(i)]);
  return one(std::move(t));
}

Result eval_concat(const Node& n, const std::vector<HostInput>& in) {
  if (in.empty() || !n.find_attribute("axis")) return std::nullopt;
  for (const HostInput& i : in)
    if (!i.value || i.value->dtype != in[0].value->dtype ||
        i.value->dims.size() != in[0].value->dims.size())
      return std::nullopt;
  const Dims& first = in[0].value->dims;
  auto axis = sdk::try_normalize_axis(int_attr(n, "axis", 0), static_cast<int64_t>(first.size()));
  if (!axis) return std::nullopt;
  size_t a = static_cast<size_t>(*axis);
  HostTensor t{in[0].value->dtype, first, {}};
  t.dims[a] = 0;
  for (const HostInput& i : in) {
    for (size_t d = 0; d < first.size(); ++d)
      if (d != a && i.value->dims[d] != first[d]) return std::nullopt;
    t.dims[a] += i.value->dims[a];
  }
  if (!bounded_count(t.dims)) return std::nullopt;
  int64_t outer = count_of(Dims(first.begin(), first.begin() + static_cast<ptrdiff_t>(a)));
  int64_t inner = count_of(Dims(first.begin() + static_cast<ptrdiff_t>(a) + 1, first.end()));
  for (int64_t o = 0; o < outer; ++o)
    for (const HostInput& i : in) {
      int64_t chunk = i.value->dims[a] * inner;
      auto begin = i.value->data.begin() + static_cast<ptrdiff_t>(o * chunk);
      t.data.insert(t.data.end(), begin, begin + static_cast<ptrdiff_t>(chunk));
    }
  return one(std::move(t));
}

Result eval_slice(const Node& n, const std::vector<HostInput>& in) {
  const HostTensor* x = value_at(in, 0);
  bool legacy = n.opset < 10;
  auto starts = int_list(n, in, legacy, "starts", 1);
  auto ends = int_list(n, in, legacy, "ends", 2);
  auto axes = int_list(n, in, legacy, "axes", 3);
  auto steps = int_list(n, in, false, "steps", legacy ? 99 : 4);
  if (!x || !starts || !ends || !axes || !steps || !*starts || !*ends) return std::nullopt;
  size_t k = (*starts)->size();
  if ((*ends)->size() != k || (*axes && (*axes)->size() != k) || (*steps && (*steps)->size() != k))
    return std::nullopt;
  int64_t rank = static_cast<int64_t>(x->dims.size());
  Dims begin(x->dims.size(), 0), step(x->dims.size(), 1), out = x->dims;
  std::set<int64_t> seen;
  for (size_t i = 0; i < k; ++i) {
    auto axis = sdk::try_normalize_axis(*axes ? (**axes)[i] : static_cast<int64_t>(i), rank);
    if (!axis || !seen.insert(*axis).second) return std::nullopt;
    size_t a = static_cast<size_t>(*axis);
    int64_t dim = x->dims[a], s = *steps ? (**steps)[i] : 1;
    int64_t b = (**starts)[i], e = (**ends)[i];
    if (s == 0) return std::nullopt;
    if (b < 0) b += dim;  // no overflow: dim >= 0 and b < 0
    if (e < 0) e += dim;
    int64_t count;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e > b ? (e - b - 1) / s + 1 : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      count = b > e ? (b - e - 1) / -s + 1 : 0;
    }
    begin[a] = b;
    step[a] = s;
    out[a] = count;
  }
  auto total = bounded_count(out);
  if (!total) return std::nullopt;
  HostTensor t{x->dtype, out, {}};
  for (int64_t flat = 0; flat < *total; ++flat) {
    int64_t rest = flat, index = 0, stride = 1;
    for (size_t d = out.size(); d-- > 0;) {
      int64_t coord = rest % out[d];
      rest /= out[d];
      index += (begin[d] + coord * step[d]) * stride;
      stride *= x->dims[d];
    }
    t.data.push_back(x->data[static_cast<size_t>(index)]);
  }
  return one(std::move(t));
}

// Add/Sub/Mul/Div, wrapping around like the devices' integer kernels (computed unsigned, so
// overflow is defined); integer Div truncates toward zero.
Result eval_arith(const Node& n, const HostTensor& a, const HostTensor& b) {
  if (n.opset < 7 || a.dtype != b.dtype || !integer_dtype(a.dtype)) return std::nullopt;
  auto dims = broadcast_dims({&a.dims, &b.dims});
  if (!dims || !bounded_count(*dims)) return std::nullopt;
  std::vector<int64_t> ia = broadcast_index(a.dims, *dims), ib = broadcast_index(b.dims, *dims);
  HostTensor t{a.dtype, *dims, {}};
  for (size_t i = 0; i < ia.size(); ++i) {
    int64_t x = a.data[static_cast<size_t>(ia[i])], y = b.data[static_cast<size_t>(ib[i])];
    auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    int64_t r;
    if (n.op_type == "Add") {
      r = static_cast<int64_t>(ux + uy);
    } else if (n.op_type == "Sub") {
      r = static_cast<int64_t>(ux - uy);
    } else if (n.op_type == "Mul") {
      r = static_cast<int64_t>(ux * uy);
    } else {
      if (y == 0) return std::nullopt;                     // the device reports it
      r = y == -1 ? static_cast<int64_t>(0 - ux) : x / y;  // INT64_MIN / -1 would trap
    }
    t.data.push_back(fit(a.dtype, r));
  }
  return one(std::move(t));
}

Result eval_equal(const Node& n, const HostTensor& a, const HostTensor& b) {
  if (n.opset < 7 || a.dtype != b.dtype) return std::nullopt;
  auto dims = broadcast_dims({&a.dims, &b.dims});
  if (!dims || !bounded_count(*dims)) return std::nullopt;
  std::vector<int64_t> ia = broadcast_index(a.dims, *dims), ib = broadcast_index(b.dims, *dims);
  HostTensor t{LOOM_DTYPE_BOOL, *dims, {}};
  for (size_t i = 0; i < ia.size(); ++i)
    t.data.push_back(a.data[static_cast<size_t>(ia[i])] == b.data[static_cast<size_t>(ib[i])]);
  return one(std::move(t));
}

Result eval_where(const HostTensor& c, const HostTensor& x, const HostTensor& y) {
  if (c.dtype != LOOM_DTYPE_BOOL || x.dtype != y.dtype) return std::nullopt;
  auto dims = broadcast_dims({&c.dims, &x.dims, &y.dims});
  if (!dims || !bounded_count(*dims)) return std::nullopt;
  std::vector<int64_t> ic = broadcast_index(c.dims, *dims), ix = broadcast_index(x.dims, *dims),
                       iy = broadcast_index(y.dims, *dims);
  HostTensor t{x.dtype, *dims, {}};
  for (size_t i = 0; i < ic.size(); ++i)
    t.data.push_back(c.data[static_cast<size_t>(ic[i])] ? x.data[static_cast<size_t>(ix[i])]
                                                        : y.data[static_cast<size_t>(iy[i])]);
  return one(std::move(t));
}

Result eval_constant_of_shape(const Node& n, const HostTensor& shape) {
  if (shape.dtype != LOOM_DTYPE_INT64 || shape.dims.size() != 1) return std::nullopt;
  // Without `value` the output is float32 zeros: not an integer tensor, left to the devices.
  const Attribute* value = n.find_attribute("value");
  if (!value || value->type != LOOM_ATTR_TENSOR || !value->tensor) return std::nullopt;
  auto fill = host_tensor_from_constant(*value->tensor);
  if (!fill || fill->data.size() != 1) return std::nullopt;
  auto count = bounded_count(shape.data);  // also rejects negative dims
  if (!count) return std::nullopt;
  HostTensor t{fill->dtype, shape.data, {}};
  t.data.assign(static_cast<size_t>(*count), fill->data[0]);
  return one(std::move(t));
}

Result eval_range(const HostTensor& start, const HostTensor& limit, const HostTensor& delta) {
  if (!integer_dtype(start.dtype) || limit.dtype != start.dtype || delta.dtype != start.dtype)
    return std::nullopt;
  if (start.data.size() != 1 || limit.data.size() != 1 || delta.data.size() != 1 ||
      !start.dims.empty() || !limit.dims.empty() || !delta.dims.empty())
    return std::nullopt;
  int64_t s = start.data[0], d = delta.data[0], span;
  if (d == 0 || __builtin_sub_overflow(limit.data[0], s, &span)) return std::nullopt;
  // ceil(span / d), from C's truncating division.
  int64_t n = span / d;
  if (span % d != 0 && ((span % d > 0) == (d > 0))) ++n;
  n = std::max<int64_t>(n, 0);
  if (n > kMaxFoldedElements) return std::nullopt;
  HostTensor t{start.dtype, {n}, {}};
  // Every element lies between start and limit, so none overflows.
  for (int64_t i = 0; i < n; ++i) t.data.push_back(s + i * d);
  return one(std::move(t));
}

Result eval_reshape(const Node& n, const HostTensor& x, const HostTensor& shape) {
  if (n.opset < 5 || shape.dtype != LOOM_DTYPE_INT64 || shape.dims.size() != 1) return std::nullopt;
  bool allow_zero = int_attr(n, "allowzero", 0) != 0;
  Dims out = shape.data;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<int>(i);
      continue;
    }
    if (out[i] == 0 && !allow_zero) {
      if (i >= x.dims.size()) return std::nullopt;
      out[i] = x.dims[i];
    }
    if (out[i] < 0) return std::nullopt;
    if (out[i] > kMaxFoldedElements) return std::nullopt;  // x has at most that many elements
    known *= out[i];
    if (known > kMaxFoldedElements) return std::nullopt;
  }
  int64_t total = static_cast<int64_t>(x.data.size());
  if (infer >= 0) {
    if (known == 0 || total % known != 0) return std::nullopt;
    out[static_cast<size_t>(infer)] = total / known;
  } else if (known != total) {
    return std::nullopt;
  }
  return one(HostTensor{x.dtype, out, x.data});
}

}  // namespace

bool host_evaluable_op(const Node& n) {
  static const std::set<std::string> ops = {
      "Shape", "Size",  "Gather", "Unsqueeze", "Squeeze",  "Concat",
      "Slice", "Cast",  "Add",    "Sub",       "Mul",      "Div",
      "Equal", "Where", "Range",  "Reshape",   "Identity", "ConstantOfShape"};
  return (n.domain.empty() || n.domain == "ai.onnx") && ops.count(n.op_type) &&
         n.implicit_inputs.empty();
}

std::optional<std::vector<HostTensor>> evaluate_host_node(const Node& n,
                                                          const std::vector<HostInput>& in) {
  if (!host_evaluable_op(n) || n.outputs.size() != 1) return std::nullopt;
  const std::string& op = n.op_type;
  if (op == "Shape") return eval_shape(n, in);
  if (op == "Size") return eval_size(in);
  if (op == "Unsqueeze") return eval_unsqueeze(n, in);
  if (op == "Squeeze") return eval_squeeze(n, in);
  if (op == "Concat") return eval_concat(n, in);
  if (op == "Slice") return eval_slice(n, in);
  const HostTensor* a = value_at(in, 0);
  const HostTensor* b = value_at(in, 1);
  const HostTensor* c = value_at(in, 2);
  if (!a) return std::nullopt;
  if (op == "Identity") return one(*a);
  if (op == "Cast") return eval_cast(n, *a);
  if (op == "ConstantOfShape") return eval_constant_of_shape(n, *a);
  if (!b) return std::nullopt;
  if (op == "Gather") return eval_gather(n, *a, *b);
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return eval_arith(n, *a, *b);
  if (op == "Equal") return eval_equal(n, *a, *b);
  if (op == "Reshape") return eval_reshape(n, *a, *b);
  if (!c) return std::nullopt;
  if (op == "Where") return eval_where(*a, *b, *c);
  if (op == "Range") return eval_range(*a, *b, *c);
  return std::nullopt;
}

std::optional<HostTensor> host_tensor_from_constant(const ConstantData& c) {
  if (!host_dtype(c.dtype)) return std::nullopt;
  auto count = bounded_count(c.dims);
  size_t elem = dtype_size(c.dtype);
  if (!count || c.size != static_cast<size_t>(*count) * elem || (*count && !c.data))
    return std::nullopt;
  HostTensor t{c.dtype, c.dims, {}};
  const auto* bytes = static_cast<const uint8_t*>(c.data);
  for (int64_t i = 0; i < *count; ++i) {
    const uint8_t* p = bytes + static_cast<size_t>(i) * elem;
    if (c.dtype == LOOM_DTYPE_INT64) {
      int64_t v;
      std::memcpy(&v, p, sizeof v);
      t.data.push_back(v);
    } else if (c.dtype == LOOM_DTYPE_INT32) {
      int32_t v;
      std::memcpy(&v, p, sizeof v);
      t.data.push_back(v);
    } else {
      t.data.push_back(*p != 0);
    }
  }
  return t;
}

std::shared_ptr<ConstantData> constant_from_host_tensor(const HostTensor& t) {
  auto c = std::make_shared<ConstantData>();
  c->dtype = t.dtype;
  c->dims = t.dims;
  size_t elem = dtype_size(t.dtype);
  // At least one byte, so an empty tensor still has a valid data pointer.
  auto bytes = std::make_shared<std::vector<uint8_t>>(std::max<size_t>(t.data.size() * elem, 1));
  for (size_t i = 0; i < t.data.size(); ++i) {
    uint8_t* p = bytes->data() + i * elem;
    if (t.dtype == LOOM_DTYPE_INT64) {
      std::memcpy(p, &t.data[i], sizeof(int64_t));
    } else if (t.dtype == LOOM_DTYPE_INT32) {
      auto v = static_cast<int32_t>(t.data[i]);
      std::memcpy(p, &v, sizeof v);
    } else {
      *p = t.data[i] != 0;
    }
  }
  c->data = bytes->data();
  c->size = t.data.size() * elem;
  c->owner = bytes;
  return c;
}

}  // namespace loom::core
