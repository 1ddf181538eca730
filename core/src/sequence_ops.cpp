#include "sequence_ops.hpp"

#include <cstring>
#include <loom/op_semantics.hpp>
#include <string>

#include "status.hpp"

namespace loom::core {
namespace {

int64_t attr_int(const Node& node, const char* name, int64_t fallback) {
  const Attribute* a = node.find_attribute(name);
  return a ? a->i : fallback;
}

[[noreturn]] void invalid(const std::string& what) {
  fail(LOOM_ERROR_INVALID_ARGUMENT, what);
}

const HostValue& tensor_input(const std::vector<HostValue>& inputs, size_t i, const char* what) {
  if (i >= inputs.size() || !inputs[i].present) invalid(std::string(what) + " is missing");
  if (!inputs[i].is_tensor())
    invalid(std::string(what) + " must be a tensor, got a value of type " +
            value_kind_name(inputs[i].kind));
  return inputs[i];
}

const HostValue& sequence_input(const std::vector<HostValue>& inputs, size_t i, const char* what) {
  if (i >= inputs.size() || !inputs[i].present) invalid(std::string(what) + " is missing");
  if (inputs[i].kind != ValueKind::kSequence)
    invalid(std::string(what) + " must be a sequence, got a value of type " +
            value_kind_name(inputs[i].kind));
  return inputs[i];
}

// A position input: one int32 or int64 element (ONNX allows shape [] or [1]).
int64_t read_position(const HostValue& v, const char* what) {
  const loom_tensor_t& t = v.t;
  // One element exactly when the bytes are those of one (the session checked bytes vs shape).
  if (!v.is_tensor() || !t.data || (t.dtype != LOOM_DTYPE_INT64 && t.dtype != LOOM_DTYPE_INT32) ||
      t.byte_size != dtype_size(t.dtype))
    invalid(std::string(what) + " must be one int32 or int64 element");
  if (t.dtype == LOOM_DTYPE_INT32) {
    int32_t x;
    std::memcpy(&x, t.data, sizeof x);
    return x;
  }
  int64_t x;
  std::memcpy(&x, t.data, sizeof x);
  return x;
}

// `position` in [-size, size - 1] (or [-size, size] when `allow_end`), made non-negative.
size_t resolve_position(int64_t position, size_t size, bool allow_end) {
  auto n = static_cast<int64_t>(size);
  int64_t last = allow_end ? n : n - 1;
  if (position < -n || position > last)
    invalid("position " + std::to_string(position) + " is out of range for a sequence of " +
            std::to_string(size) + " elements (valid: " +
            (last < -n ? std::string("none") : std::to_string(-n) + ".." + std::to_string(last)) +
            ")");
  return static_cast<size_t>(position < 0 ? position + n : position);
}

HostValue make_sequence(loom_dtype_t elem_dtype, std::vector<HostValue> elements = {}) {
  HostValue v;
  v.present = true;
  v.kind = ValueKind::kSequence;
  v.elem_dtype = elem_dtype;
  v.elements = std::move(elements);
  return v;
}

// A tensor to keep inside a sequence: it must match the sequence's element type, and it must
// own its bytes (the session frees its producer's memory after the last reader).
HostValue element_for(const HostValue& sequence, const HostValue& tensor) {
  if (sequence.elem_dtype != LOOM_DTYPE_UNDEFINED && tensor.t.dtype != sequence.elem_dtype)
    invalid(std::string("the tensor is ") + dtype_name(tensor.t.dtype) +
            " but the sequence holds " + dtype_name(sequence.elem_dtype) + " tensors");
  return owned_host_value(tensor);
}

// The sdk's axis rule; a bad axis here comes from the run's data (INVALID_ARGUMENT).
int normalize_axis(int64_t axis, int64_t rank, const char* what) {
  std::optional<int64_t> a = sdk::try_normalize_axis(axis, rank);
  if (!a)
    invalid(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
            std::to_string(rank));
  return static_cast<int>(*a);
}

// ---- ops -------------------------------------------------------------------------------------

std::vector<HostValue> sequence_construct(const std::vector<HostValue>& inputs) {
  HostValue seq = make_sequence(LOOM_DTYPE_UNDEFINED);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostValue& x = tensor_input(inputs, i, ("input " + std::to_string(i)).c_str());
    if (i == 0) seq.elem_dtype = x.t.dtype;
    if (x.t.dtype != seq.elem_dtype)
      invalid("input " + std::to_string(i) + " is " + dtype_name(x.t.dtype) + " but input 0 is " +
              dtype_name(seq.elem_dtype) + " (a sequence holds one element type)");
    seq.elements.push_back(owned_host_value(x));
  }
  return {seq};
}

std::vector<HostValue> sequence_insert(const std::vector<HostValue>& inputs) {
  HostValue seq = sequence_input(inputs, 0, "input sequence");
  const HostValue& x = tensor_input(inputs, 1, "input tensor");
  size_t at = seq.elements.size();
  if (inputs.size() > 2 && inputs[2].present)
    at = resolve_position(read_position(inputs[2], "position"), seq.elements.size(), true);
  HostValue element = element_for(seq, x);
  if (seq.elem_dtype == LOOM_DTYPE_UNDEFINED) seq.elem_dtype = x.t.dtype;
  seq.elements.insert(seq.elements.begin() + static_cast<std::ptrdiff_t>(at), element);
  return {seq};
}

std::vector<HostValue> sequence_at(const std::vector<HostValue>& inputs) {
  const HostValue& seq = sequence_input(inputs, 0, "input sequence");
  const HostValue& pos = tensor_input(inputs, 1, "position");
  size_t at = resolve_position(read_position(pos, "position"), seq.elements.size(), false);
  return {seq.elements[at]};
}

std::vector<HostValue> sequence_erase(const std::vector<HostValue>& inputs) {
  HostValue seq = sequence_input(inputs, 0, "input sequence");
  if (seq.elements.empty()) invalid("cannot erase from an empty sequence");
  size_t at = seq.elements.size() - 1;
  if (inputs.size() > 1 && inputs[1].present)
    at = resolve_position(read_position(inputs[1], "position"), seq.elements.size(), false);
  seq.elements.erase(seq.elements.begin() + static_cast<std::ptrdiff_t>(at));
  return {seq};
}

// Copies `count` rows of `row_bytes` from each of `outer` blocks: the strided copy that both
// concatenation and splitting along an axis reduce to.
void copy_rows(const char* src, size_t src_stride, char* dst, size_t dst_stride, size_t outer,
               size_t bytes) {
  if (bytes == 0) return;
  for (size_t o = 0; o < outer; ++o) std::memcpy(dst + o * dst_stride, src + o * src_stride, bytes);
}

std::vector<HostValue> concat_from_sequence(const Node& node,
                                            const std::vector<HostValue>& inputs) {
  const HostValue& seq = sequence_input(inputs, 0, "input sequence");
  bool new_axis = attr_int(node, "new_axis", 0) != 0;
  if (!node.find_attribute("axis")) invalid("attribute 'axis' is required");
  if (seq.elements.empty())
    invalid(
        "the sequence is empty: there is nothing to concatenate (its output would have no "
        "shape)");
  const loom_tensor_t& first = seq.elements[0].t;
  int64_t rank = first.rank;
  int axis = normalize_axis(attr_int(node, "axis", 0), new_axis ? rank + 1 : rank, "axis");
  if (!new_axis && rank == 0) invalid("cannot concatenate scalars without new_axis=1");
  std::vector<int64_t> out_dims = dims_of(first);
  if (new_axis)
    out_dims.insert(out_dims.begin() + axis, 0);
  else
    out_dims[axis] = 0;  // the elements' extents are summed below
  std::vector<std::shared_ptr<void>> deps;
  for (size_t e = 0; e < seq.elements.size(); ++e) {
    const loom_tensor_t& t = seq.elements[e].t;
    bool same = t.rank == rank && t.dtype == first.dtype;
    for (int32_t d = 0; same && d < t.rank; ++d)
      if ((new_axis || d != axis) && t.dims[d] != first.dims[d]) same = false;
    if (!same)
      invalid("element " + std::to_string(e) + " (" + dtype_name(t.dtype) + " " +
              Shape{t.rank, dims_of(t), {}}.to_string() + ") does not match element 0 (" +
              dtype_name(first.dtype) + " " + Shape{first.rank, dims_of(first), {}}.to_string() +
              ") outside the concatenation axis");
    // Zero-sized elements may carry any extents: refuse a sum that does not fit.
    if (__builtin_add_overflow(out_dims[axis], new_axis ? 1 : t.dims[axis], &out_dims[axis]))
      invalid("the concatenated axis would have more than 2^63 elements");
    deps.push_back(seq.elements[e].owner);
  }
  HostValue out = allocate_host_value(first.dtype, out_dims, std::move(deps));
  size_t esize = element_size(first.dtype);
  size_t outer = 1, inner = esize;  // inner: bytes of one step along the axis
  for (int d = 0; d < axis; ++d) outer *= static_cast<size_t>(out_dims[d]);
  for (size_t d = axis + 1; d < out_dims.size(); ++d) inner *= static_cast<size_t>(out_dims[d]);
  size_t out_stride = static_cast<size_t>(out_dims[axis]) * inner, offset = 0;
  for (const HostValue& e : seq.elements) {
    size_t steps = new_axis ? 1 : static_cast<size_t>(e.t.dims[axis]);
    copy_rows(static_cast<const char*>(e.t.data), steps * inner,
              static_cast<char*>(out.t.data) + offset, out_stride, outer, steps * inner);
    offset += steps * inner;
  }
  return {out};
}

// Chunk lengths along the split axis of extent `extent`: from the optional `split` input
// (scalar: equal chunks, the last smaller; 1-D: explicit lengths summing to `extent`), else
// one per index.
std::vector<int64_t> split_lengths(const std::vector<HostValue>& inputs, int64_t extent) {
  std::vector<int64_t> lengths;
  if (inputs.size() < 2 || !inputs[1].present) {
    lengths.assign(static_cast<size_t>(extent), 1);
    return lengths;
  }
  const loom_tensor_t& s = inputs[1].t;
  if (!inputs[1].is_tensor() || (s.dtype != LOOM_DTYPE_INT64 && s.dtype != LOOM_DTYPE_INT32) ||
      s.rank > 1)
    invalid("input 'split' must be an int32 or int64 scalar or 1-D tensor");
  int64_t count = s.rank == 0 ? 1 : s.dims[0];
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[i] = s.dtype == LOOM_DTYPE_INT64 ? static_cast<const int64_t*>(s.data)[i]
                                            : static_cast<const int32_t*>(s.data)[i];
  if (s.rank == 0) {
    int64_t chunk = values[0];
    if (chunk <= 0)
      invalid("split " + std::to_string(chunk) + " must be positive (the length of each chunk)");
    for (int64_t done = 0; done < extent; done += chunk)
      lengths.push_back(std::min(chunk, extent - done));
    return lengths;
  }
  int64_t sum = 0;
  for (int64_t v : values) {
    if (v < 0) invalid("split has a negative length " + std::to_string(v));
    if (v > extent - sum)
      invalid("the split lengths sum to more than the " + std::to_string(extent) +
              " elements of the axis");
    sum += v;
  }
  if (sum != extent)
    invalid("the split lengths sum to " + std::to_string(sum) + " but the axis has " +
            std::to_string(extent) + " elements");
  return values;
}

std::vector<HostValue> split_to_sequence(const Node& node, const std::vector<HostValue>& inputs) {
  // STRING elements' views point into the input's characters: split a copy that owns them, so
  // every element can keep it alive.
  const HostValue& given = tensor_input(inputs, 0, "input");
  HostValue x = given.t.dtype == LOOM_DTYPE_STRING ? owned_host_value(given) : given;
  if (x.t.rank == 0) invalid("cannot split a scalar");
  int axis = normalize_axis(attr_int(node, "axis", 0), x.t.rank, "axis");
  bool split_given = inputs.size() > 1 && inputs[1].present;
  // keepdims only applies without a split input (ONNX: then every chunk has length 1).
  bool squeeze = !split_given && attr_int(node, "keepdims", 1) == 0;
  std::vector<int64_t> dims = dims_of(x.t);
  // An empty tensor may claim any extent; a piece per index of it must not exhaust memory.
  constexpr int64_t kMaxEmptyPieces = int64_t{1} << 20;
  if (x.t.byte_size == 0 && dims[axis] > kMaxEmptyPieces)
    invalid("the tensor is empty but its axis claims " + std::to_string(dims[axis]) +
            " elements; refusing to split it into more than " + std::to_string(kMaxEmptyPieces) +
            " empty pieces");
  std::vector<int64_t> lengths = split_lengths(inputs, dims[axis]);
  size_t esize = element_size(x.t.dtype);
  size_t outer = 1, inner = esize;
  for (int d = 0; d < axis; ++d) outer *= static_cast<size_t>(dims[d]);
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= static_cast<size_t>(dims[d]);
  size_t in_stride = static_cast<size_t>(dims[axis]) * inner, offset = 0;
  HostValue seq = make_sequence(x.t.dtype);
  for (int64_t len : lengths) {
    std::vector<int64_t> piece = dims;
    piece[axis] = len;
    if (squeeze) piece.erase(piece.begin() + axis);
    HostValue e = allocate_host_value(x.t.dtype, piece, {x.owner});
    size_t bytes = static_cast<size_t>(len) * inner;
    copy_rows(static_cast<const char*>(x.t.data) + offset, in_stride, static_cast<char*>(e.t.data),
              bytes, outer, bytes);
    offset += bytes;
    seq.elements.push_back(e);
  }
  return {seq};
}

std::vector<HostValue> sequence_map(const Node& node, const std::vector<HostValue>& inputs,
                                    BodyRunner* bodies) {
  if (!bodies) fail(LOOM_ERROR_INTERNAL, "SequenceMap needs its body");
  const HostValue& first = sequence_input(inputs, 0, "input sequence");
  size_t length = first.elements.size();
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (!inputs[i].present) invalid("additional input " + std::to_string(i) + " is missing");
    if (inputs[i].kind == ValueKind::kSequence && inputs[i].elements.size() != length)
      invalid("input " + std::to_string(i) + " is a sequence of " +
              std::to_string(inputs[i].elements.size()) + " elements, input 0 has " +
              std::to_string(length));
    if (inputs[i].kind != ValueKind::kSequence && !inputs[i].is_tensor())
      invalid("input " + std::to_string(i) +
              " must be a sequence or a tensor, got a value of type " +
              value_kind_name(inputs[i].kind));
  }
  const Graph& body = bodies->body("body");
  std::vector<HostValue> out;
  for (size_t o = 0; o < node.outputs.size(); ++o)
    out.push_back(make_sequence(o < body.outputs.size() ? body.values[body.outputs[o]].dtype
                                                        : LOOM_DTYPE_UNDEFINED));
  for (size_t e = 0; e < length; ++e) {
    std::vector<HostValue> body_in;
    for (const HostValue& in : inputs)
      body_in.push_back(in.kind == ValueKind::kSequence ? in.elements[e] : in);
    std::vector<HostValue> results;
    try {
      results = bodies->run_body("body", body_in);
    } catch (const Error& err) {
      fail(err.code(), "element " + std::to_string(e) + ": " + err.what());
    }
    if (results.size() < out.size())
      invalid("the body returned " + std::to_string(results.size()) + " values, the node has " +
              std::to_string(out.size()) + " outputs");
    for (size_t o = 0; o < out.size(); ++o) {
      if (!results[o].is_tensor())
        invalid("body output " + std::to_string(o) + " must be a tensor");
      if (out[o].elem_dtype == LOOM_DTYPE_UNDEFINED) out[o].elem_dtype = results[o].t.dtype;
      out[o].elements.push_back(element_for(out[o], results[o]));
    }
  }
  return out;
}

std::vector<HostValue> optional_op(const std::vector<HostValue>& inputs) {
  HostValue v;
  v.present = true;
  v.kind = ValueKind::kOptionalTensor;
  if (inputs.empty() || !inputs[0].present) return {v};  // empty; the type comes from inference
  const HostValue& x = inputs[0];
  if (x.kind == ValueKind::kSequence) {
    v.kind = ValueKind::kOptionalSequence;
    v.elem_dtype = x.elem_dtype;
    v.elements.push_back(x);
  } else if (x.is_tensor()) {
    v.elem_dtype = x.t.dtype;
    v.elements.push_back(owned_host_value(x));
  } else {
    invalid("the input is already an optional; optional(optional) is not a valid type");
  }
  return {v};
}

bool is_optional(const HostValue& v) {
  return v.kind == ValueKind::kOptionalTensor || v.kind == ValueKind::kOptionalSequence;
}

std::vector<HostValue> optional_has_element(const std::vector<HostValue>& inputs) {
  // Opset 18 also takes a tensor or sequence (always "has" one) or no input at all (none).
  if (inputs.empty() || !inputs[0].present) return {scalar_bool(false)};
  const HostValue& x = inputs[0];
  return {scalar_bool(!is_optional(x) || !x.elements.empty())};
}

std::vector<HostValue> optional_get_element(const std::vector<HostValue>& inputs) {
  if (inputs.empty() || !inputs[0].present) invalid("the input is missing");
  const HostValue& x = inputs[0];
  if (!is_optional(x)) return {x};  // opset 18: a tensor or sequence passes through
  if (x.elements.empty()) invalid("the optional is empty; check OptionalHasElement first");
  return {x.elements[0]};
}

}  // namespace

bool is_sequence_op(const Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return false;
  const std::string& op = node.op_type;
  return op == "SequenceEmpty" || op == "SequenceConstruct" || op == "SequenceInsert" ||
         op == "SequenceAt" || op == "SequenceErase" || op == "SequenceLength" ||
         op == "ConcatFromSequence" || op == "SplitToSequence" || op == "SequenceMap" ||
         op == "Optional" || op == "OptionalHasElement" || op == "OptionalGetElement";
}

std::vector<HostValue> run_sequence_op(const Node& node, const std::vector<HostValue>& inputs,
                                       BodyRunner* bodies) {
  try {
    const std::string& op = node.op_type;
    if (op == "SequenceEmpty") {
      int64_t dtype = attr_int(node, "dtype", LOOM_DTYPE_FLOAT32);
      if (dtype < LOOM_DTYPE_FLOAT32 || dtype > LOOM_DTYPE_BFLOAT16)
        invalid("attribute 'dtype' " + std::to_string(dtype) +
                " is not a tensor element type (ONNX TensorProto.DataType 1..16)");
      return {make_sequence(static_cast<loom_dtype_t>(dtype))};
    }
    if (op == "SequenceConstruct") return sequence_construct(inputs);
    if (op == "SequenceInsert") return sequence_insert(inputs);
    if (op == "SequenceAt") return sequence_at(inputs);
    if (op == "SequenceErase") return sequence_erase(inputs);
    if (op == "SequenceLength")
      return {scalar_int64(
          static_cast<int64_t>(sequence_input(inputs, 0, "input sequence").elements.size()))};
    if (op == "ConcatFromSequence") return concat_from_sequence(node, inputs);
    if (op == "SplitToSequence") return split_to_sequence(node, inputs);
    if (op == "SequenceMap") return sequence_map(node, inputs, bodies);
    if (op == "Optional") return optional_op(inputs);
    if (op == "OptionalHasElement") return optional_has_element(inputs);
    if (op == "OptionalGetElement") return optional_get_element(inputs);
    if (op == "Identity") {
      if (inputs.empty() || !inputs[0].present) invalid("the input is missing");
      return {inputs[0]};
    }
    fail(LOOM_ERROR_INTERNAL, "not a sequence op");
  } catch (const Error& e) {
    fail(e.code(), node.describe() + ": " + e.what());
  }
}

}  // namespace loom::core
