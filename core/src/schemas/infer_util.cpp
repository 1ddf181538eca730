#include "infer_util.hpp"

#include <algorithm>
#include <cstring>
#include <loom/op_semantics.hpp>

namespace loom::core::infer {

std::string dims_to_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ',';
    s += dims[i] < 0 ? std::string("?") : std::to_string(dims[i]);
  }
  return s + "]";
}

std::string dims_to_string(const std::optional<Dims>& dims) {
  return dims ? dims_to_string(*dims) : std::string("[unknown rank]");
}

loom_dtype_t NodeView::dtype(size_t i) const {
  const loom_value_info_t* in = input(i);
  return in ? in->dtype : LOOM_DTYPE_UNDEFINED;
}

int32_t NodeView::rank(size_t i) const {
  const loom_value_info_t* in = input(i);
  return in && in->rank >= 0 && (in->rank == 0 || in->dims) ? in->rank : -1;
}

std::optional<Dims> NodeView::shape(size_t i) const {
  int32_t r = rank(i);
  if (r < 0) return std::nullopt;
  Dims dims(input(i)->dims, input(i)->dims + r);
  for (int64_t& d : dims)
    if (d < 0) d = kUnknownDim;
  return dims;
}

namespace {

template <typename Src, typename Dst>
void append_as(const void* data, size_t count, std::vector<Dst>& out) {
  out.reserve(count);
  for (size_t k = 0; k < count; ++k) {
    Src x;
    std::memcpy(&x, static_cast<const char*>(data) + k * sizeof(Src), sizeof(Src));
    out.push_back(static_cast<Dst>(x));
  }
}

// Element count of a constant, checked against its byte size so a malformed constant can
// never make us read past its data.
std::optional<size_t> constant_count(const NodeView& v, size_t i) {
  const loom_value_info_t* in = v.input(i);
  if (!in || !(in->flags & LOOM_VALUE_CONSTANT)) return std::nullopt;
  std::optional<Dims> dims = v.shape(i);
  if (!dims) return std::nullopt;
  int64_t count = element_count(v, *dims);
  if (count < 0) return std::nullopt;
  if (count == 0) return 0;  // an empty constant may have no data pointer at all
  if (!in->data) return std::nullopt;
  size_t elem = sdk::dtype_size(in->dtype);
  if (elem == 0 || static_cast<uint64_t>(count) > in->data_size / elem)
    v.fail(std::string("constant input '") + (in->name ? in->name : "") + "' of shape " +
           dims_to_string(*dims) + " holds only " + std::to_string(in->data_size) + " bytes");
  return static_cast<size_t>(count);
}

}  // namespace

std::optional<std::vector<int64_t>> NodeView::const_ints(size_t i) const {
  const loom_value_info_t* in = input(i);
  if (!in || (in->dtype != LOOM_DTYPE_INT64 && in->dtype != LOOM_DTYPE_INT32)) return std::nullopt;
  std::optional<size_t> count = constant_count(*this, i);
  if (!count) return std::nullopt;
  std::vector<int64_t> out;
  if (in->dtype == LOOM_DTYPE_INT64)
    append_as<int64_t>(in->data, *count, out);
  else
    append_as<int32_t>(in->data, *count, out);
  return out;
}

std::optional<std::vector<double>> NodeView::const_doubles(size_t i) const {
  const loom_value_info_t* in = input(i);
  if (!in) return std::nullopt;
  std::optional<size_t> count = constant_count(*this, i);
  if (!count) return std::nullopt;
  std::vector<double> out;
  switch (in->dtype) {
    case LOOM_DTYPE_FLOAT32:
      append_as<float>(in->data, *count, out);
      break;
    case LOOM_DTYPE_FLOAT64:
      append_as<double>(in->data, *count, out);
      break;
    case LOOM_DTYPE_INT64:
      append_as<int64_t>(in->data, *count, out);
      break;
    case LOOM_DTYPE_INT32:
      append_as<int32_t>(in->data, *count, out);
      break;
    case LOOM_DTYPE_INT16:
      append_as<int16_t>(in->data, *count, out);
      break;
    case LOOM_DTYPE_INT8:
      append_as<int8_t>(in->data, *count, out);
      break;
    case LOOM_DTYPE_UINT8:
      append_as<uint8_t>(in->data, *count, out);
      break;
    case LOOM_DTYPE_UINT16:
      append_as<uint16_t>(in->data, *count, out);
      break;
    case LOOM_DTYPE_UINT32:
      append_as<uint32_t>(in->data, *count, out);
      break;
    case LOOM_DTYPE_UINT64:
      append_as<uint64_t>(in->data, *count, out);
      break;
    default:
      return std::nullopt;  // float16/bfloat16/bool/string: not needed for shapes
  }
  return out;
}

std::optional<std::vector<int64_t>> NodeView::ints_attr(const char* name) const {
  auto a = attrs_.get_ints(name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->begin(), a->end());
}

std::optional<std::vector<float>> NodeView::floats_attr(const char* name) const {
  auto a = attrs_.get_floats(name);
  if (!a) return std::nullopt;
  return std::vector<float>(a->begin(), a->end());
}

void NodeView::set_output(size_t i, loom_dtype_t dtype, std::span<const int64_t> dims) {
  if (i >= outputs_.size()) return;
  if (dims.size() > LOOM_MAX_RANK)
    fail("output " + std::to_string(i) + " would have rank " + std::to_string(dims.size()) +
         ", more than the supported " + std::to_string(LOOM_MAX_RANK));
  loom_inferred_t& out = outputs_[i];
  out.dtype = dtype;
  out.rank = static_cast<int32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) out.dims[d] = dims[d] < 0 ? kUnknownDim : dims[d];
}

void NodeView::set_output(size_t i, loom_dtype_t dtype, const std::optional<Dims>& dims) {
  if (dims)
    set_output(i, dtype, std::span<const int64_t>(*dims));
  else
    set_output_dtype(i, dtype);
}

void NodeView::set_output_rank(size_t i, loom_dtype_t dtype, int32_t rank) {
  if (rank < 0) return set_output_dtype(i, dtype);
  set_output(i, dtype, Dims(static_cast<size_t>(rank), kUnknownDim));
}

void NodeView::set_output_dtype(size_t i, loom_dtype_t dtype) {
  if (i >= outputs_.size()) return;
  outputs_[i].dtype = dtype;
  outputs_[i].rank = -1;
}

void NodeView::propagate(size_t j, size_t i) {
  set_output(i, dtype(j), shape(j));
}

void NodeView::fail(const std::string& what) const {
  throw sdk::Error(LOOM_ERROR_INVALID_MODEL, std::string(node_.op_type ? node_.op_type : "?") +
                                                 " node '" + (node_.name ? node_.name : "") +
                                                 "': " + what);
}

int64_t NodeView::normalize_axis(int64_t axis, int64_t rank, const char* what) const {
  std::optional<int64_t> a = sdk::try_normalize_axis(axis, rank);
  if (!a)
    fail(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
         std::to_string(rank));
  return *a;
}

Dims broadcast(const NodeView& v, const Dims& a, const Dims& b) {
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t x = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t y = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (x == 1)
      out[k] = y;
    else if (y == 1)
      out[k] = x;
    else if (x < 0)
      out[k] = y;  // unknown vs known n > 1: the unknown one must be 1 or n
    else if (y < 0)
      out[k] = x;
    else if (x == y)
      out[k] = x;
    else
      v.fail("shapes " + dims_to_string(a) + " and " + dims_to_string(b) +
             " cannot be broadcast (dimension " + std::to_string(k) + ": " + std::to_string(x) +
             " vs " + std::to_string(y) + ")");
  }
  return out;
}

int64_t checked_mul(const NodeView& v, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) v.fail("element count overflows int64");
  return r;
}

int64_t checked_add(const NodeView& v, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) v.fail("extent arithmetic overflows int64");
  return r;
}

int64_t element_count(const NodeView& v, std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return kUnknownDim;
    n = checked_mul(v, n, d);
  }
  return n;
}

int64_t merge_dim(const NodeView& v, int64_t a, int64_t b, const std::string& what) {
  if (a < 0) return b;
  if (b < 0 || a == b) return a;
  v.fail(what + " disagree: " + std::to_string(a) + " vs " + std::to_string(b));
}

Axes read_axes(const NodeView& v, size_t input_index) {
  Axes a;
  if (std::optional<Dims> attr = v.ints_attr("axes")) {
    a.given = true;
    a.values = *attr;
  } else if (v.has_input(input_index)) {
    a.given = true;
    a.values = v.const_ints(input_index);
    if (std::optional<Dims> s = v.shape(input_index); s && s->size() == 1) a.count = (*s)[0];
  }
  if (a.values) a.count = static_cast<int64_t>(a.values->size());
  return a;
}

void check_broadcasts_to(const NodeView& v, const Dims& from, const Dims& to,
                         const std::string& what) {
  bool ok = from.size() <= to.size();
  for (size_t k = 0; ok && k < from.size(); ++k) {
    int64_t f = from[from.size() - 1 - k], t = to[to.size() - 1 - k];
    ok = f == 1 || f < 0 || t < 0 || f == t;
  }
  if (!ok)
    v.fail(what + " " + dims_to_string(from) + " does not broadcast to " + dims_to_string(to));
}

void same_as_input(NodeView& v) {
  v.propagate(0, 0);
}

}  // namespace loom::core::infer
