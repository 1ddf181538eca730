// The application's tensors and the session: each input checked against the graph input it
// names (rank, dims, dtype, byte count, declared extents) and bound as the graph holds it, and
// the host copies of outputs the application owns.
#include <cstdlib>
#include <cstring>

#include "session.hpp"
#include "status.hpp"

namespace loom::core {

void copy_to_host_tensor(const loom_tensor_t& t, loom_host_tensor_t& out) {
  const void* host_data = t.data;
  out.struct_size = sizeof out;
  out.dtype = t.dtype;
  out.rank = t.rank;
  for (int32_t i = 0; i < t.rank; ++i) out.dims[i] = t.dims[i];
  size_t count = 1;
  for (int32_t i = 0; i < t.rank; ++i) count *= static_cast<size_t>(t.dims[i]);
  if (t.dtype == LOOM_DTYPE_STRING) {
    const auto* in = static_cast<const loom_string_t*>(host_data);
    size_t bytes = count * sizeof(loom_string_t);
    for (size_t i = 0; i < count; ++i) bytes += in[i].size;
    char* block = static_cast<char*>(std::malloc(bytes ? bytes : 1));
    if (!block) fail(LOOM_ERROR_OUT_OF_MEMORY, "out of memory copying an output");
    auto* views = reinterpret_cast<loom_string_t*>(block);
    char* cursor = block + count * sizeof(loom_string_t);
    for (size_t i = 0; i < count; ++i) {
      if (in[i].size) std::memcpy(cursor, in[i].data, in[i].size);
      views[i] = {cursor, in[i].size};
      cursor += in[i].size;
    }
    out.data = block;
    out.byte_size = count * sizeof(loom_string_t);
    return;
  }
  size_t bytes = count * dtype_size(t.dtype);
  void* p = std::malloc(bytes ? bytes : 1);
  if (!p) fail(LOOM_ERROR_OUT_OF_MEMORY, "out of memory copying an output");
  if (bytes) std::memcpy(p, host_data, bytes);
  out.data = p;
  out.byte_size = bytes;
}

HostValue borrow_host_tensor(const std::string& name, const loom_host_tensor_t& t) {
  if (t.rank < 0 || t.rank > LOOM_MAX_RANK)
    fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' has an invalid rank");
  HostValue h;
  h.present = true;
  h.t.struct_size = sizeof h.t;
  h.t.dtype = t.dtype;
  h.t.rank = t.rank;
  for (int32_t d = 0; d < t.rank; ++d) h.t.dims[d] = t.dims[d];
  h.t.data = t.data;
  h.t.byte_size = t.byte_size;
  return h;
}

namespace {

// Checks a tensor the application gave (`what` names it): rank, dims, dtype against `dtype`
// (UNDEFINED: any), byte count; and, when `check_extents`, the shape against `declared`.
void check_tensor(const std::string& what, const loom_tensor_t& t, loom_dtype_t dtype,
                  const Shape& declared, bool check_extents) {
  if (t.rank < 0 || t.rank > LOOM_MAX_RANK)
    fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has an invalid rank");
  Shape s;
  s.rank = t.rank;
  s.dims.assign(t.dims, t.dims + t.rank);
  for (int64_t d : s.dims)
    if (d < 0) fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has a negative dimension");
  if (dtype != LOOM_DTYPE_UNDEFINED && t.dtype != dtype)
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         what + " is " + dtype_name(t.dtype) + " but the model expects " + dtype_name(dtype));
  if (check_extents && declared.rank >= 0) {
    bool ok = declared.rank == t.rank;
    for (int32_t d = 0; ok && d < t.rank; ++d)
      if (declared.dims[d] >= 0 && declared.dims[d] != t.dims[d]) ok = false;
    if (!ok)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           what + " has shape " + s.to_string() + " but the model expects " + declared.to_string());
  }
  if (t.dtype != LOOM_DTYPE_STRING && dtype_size(t.dtype) == 0)
    fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has an unsupported element type");
  size_t expect = t.dtype == LOOM_DTYPE_STRING
                      ? static_cast<size_t>(s.element_count()) * sizeof(loom_string_t)
                      : tensor_bytes(t.dtype, s);
  if (t.byte_size != expect || (expect && !t.data))
    fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has " + std::to_string(t.byte_size) +
                                          " bytes of data, but shape " + s.to_string() + " " +
                                          dtype_name(t.dtype) + " needs " + std::to_string(expect));
}

// Checks the application's value for graph input `v` and returns it as the graph holds it: a
// tensor or sequence given for an optional input becomes an optional holding it. A body
// (not `top_level`) checks no extents: it takes what its step feeds.
HostValue bind_input(const Value& v, const HostValue& in, bool top_level) {
  const std::string what = "input '" + v.name + "'";
  if (!in.present) fail(LOOM_ERROR_INVALID_ARGUMENT, what + " is not present");
  // A tensor input with a default (initializer) may take any shape the user feeds.
  bool extents = top_level && !v.constant;
  if (v.kind == ValueKind::kTensor) {
    // A body input declared without a type takes whatever its step carries.
    if (!in.is_tensor() && !top_level && v.dtype == LOOM_DTYPE_UNDEFINED && v.shape.rank < 0)
      return in;
    if (!in.is_tensor())
      fail(LOOM_ERROR_INVALID_ARGUMENT, what + " is a tensor in the model but a value of type " +
                                            value_kind_name(in.kind) + " was given");
    check_tensor(what, in.t, v.dtype, v.shape, extents);
    return in;
  }
  bool optional = v.kind == ValueKind::kOptionalTensor || v.kind == ValueKind::kOptionalSequence;
  ValueKind inner =
      v.kind == ValueKind::kOptionalTensor ? ValueKind::kTensor : ValueKind::kSequence;
  HostValue value = in;
  if (optional && in.kind == inner) {  // a present optional given as its content
    value = HostValue{};
    value.present = true;
    value.kind = v.kind;
    value.elem_dtype = inner == ValueKind::kTensor ? in.t.dtype : in.elem_dtype;
    value.elements.push_back(in);
  }
  if (value.kind != v.kind)
    fail(LOOM_ERROR_INVALID_ARGUMENT, what + " is of type " + value_kind_name(v.kind) +
                                          " in the model but a value of type " +
                                          value_kind_name(in.kind) + " was given" +
                                          (in.is_tensor() ? " (pass sequences and optionals "
                                                            "with loom_session_run_values)"
                                                          : ""));
  if (optional && value.elements.size() > 1)
    fail(LOOM_ERROR_INVALID_ARGUMENT, what + " is an optional with more than one value");
  loom_dtype_t dtype = v.dtype != LOOM_DTYPE_UNDEFINED ? v.dtype : value.elem_dtype;
  if (value.elem_dtype != LOOM_DTYPE_UNDEFINED && dtype != LOOM_DTYPE_UNDEFINED &&
      value.elem_dtype != dtype)
    fail(LOOM_ERROR_INVALID_ARGUMENT, what + " holds " + dtype_name(value.elem_dtype) +
                                          " tensors but the model expects " + dtype_name(dtype));
  // Elements may differ in shape (a sequence's declared element shape is a join), so only their
  // rank, type and bytes are checked.
  Shape any_extent;
  auto check_sequence = [&](const HostValue& seq, const std::string& seq_what) {
    if (seq.kind != ValueKind::kSequence)
      fail(LOOM_ERROR_INVALID_ARGUMENT, seq_what + " must be a sequence");
    for (size_t e = 0; e < seq.elements.size(); ++e) {
      if (!seq.elements[e].is_tensor() || !seq.elements[e].present)
        fail(LOOM_ERROR_INVALID_ARGUMENT,
             seq_what + " element " + std::to_string(e) + " must be a tensor");
      check_tensor(seq_what + " element " + std::to_string(e), seq.elements[e].t, dtype, any_extent,
                   false);
    }
  };
  if (value.kind == ValueKind::kSequence) check_sequence(value, what);
  if (value.kind == ValueKind::kOptionalSequence && !value.elements.empty())
    check_sequence(value.elements[0], what);
  if (value.kind == ValueKind::kOptionalTensor && !value.elements.empty()) {
    if (!value.elements[0].is_tensor())
      fail(LOOM_ERROR_INVALID_ARGUMENT, what + " must hold a tensor");
    check_tensor(what, value.elements[0].t, dtype, v.shape, extents);
  }
  if (value.elem_dtype == LOOM_DTYPE_UNDEFINED) value.elem_dtype = dtype;
  return value;
}

}  // namespace

Session::BoundInputs Session::bind_inputs(const std::vector<std::string>& names,
                                          const std::vector<HostValue>& inputs) const {
  const Graph& g = *model_->graph;
  if (names.size() != inputs.size())
    fail(LOOM_ERROR_INVALID_ARGUMENT, "input names and values differ in number");
  BoundInputs result;
  std::vector<HostValue>& bound = result.values;
  // Per graph input, not per value: a run of a small model must not make and destroy a slot
  // for every value of its graph (a streaming model's chunk costs little more than that).
  bound.resize(g.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = names[i];
    const int id = g.find(name);
    size_t k = 0;  // its position in g.inputs (none for an unknown name: find gives -1)
    while (k < g.inputs.size() && g.inputs[k] != id) ++k;
    if (k == g.inputs.size()) {
      std::string list;
      for (int in : g.inputs)
        if (!g.values[in].constant) list += (list.empty() ? "" : ", ") + g.values[in].name;
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "the model has no input '" + name + "' (its inputs: " + list + ")");
    }
    if (bound[k].present) fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' is given twice");
    // Bodies take what the step feeds (see finish_construction).
    bound[k] = bind_input(g.values[id], inputs[i], depth_ == 0);
    if (g.values[id].constant) result.fed.insert(id);
  }
  for (size_t k = 0; k < g.inputs.size(); ++k)
    if (const int id = g.inputs[k]; !bound[k].present && !g.values[id].constant)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "input '" + g.values[id].name + "' is required but was not given");
  return result;
}

}  // namespace loom::core
