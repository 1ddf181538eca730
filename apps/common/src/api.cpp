#include <fmt/format.h>

#include <cstring>
#include <deque>
#include <loom_apps/api.hpp>
#include <loom_apps/dtype.hpp>

namespace loom::apps {

void check(loom_status_t* status) {
  if (status == nullptr) return;
  loom_status_code_t code = loom_status_code(status);
  const char* message = loom_status_message(status);
  std::string text = message != nullptr && *message != '\0' ? message : "unknown error";
  loom_status_free(status);
  throw ApiError(code, text);
}

RuntimePtr create_runtime(const loom_runtime_options_t& options) {
  loom_runtime_t* runtime = nullptr;
  check(loom_runtime_create(&options, &runtime));
  return RuntimePtr(runtime);
}

ModelPtr load_model(loom_runtime_t* runtime, const std::string& path) {
  loom_model_t* model = nullptr;
  check(loom_model_load(runtime, path.c_str(), &model));
  return ModelPtr(model);
}

SessionPtr create_session(loom_runtime_t* runtime, loom_model_t* model,
                          const loom_session_options_t& options) {
  loom_session_t* session = nullptr;
  check(loom_session_create(runtime, model, &options, &session));
  return SessionPtr(session);
}

std::vector<loom_plugin_record_t> plugin_records(const loom_runtime_t* runtime) {
  std::vector<loom_plugin_record_t> records(loom_runtime_num_plugins(runtime));
  for (size_t i = 0; i < records.size(); ++i) {
    records[i] = loom_plugin_record_t{};
    records[i].struct_size = sizeof(loom_plugin_record_t);
    check(loom_runtime_plugin(runtime, i, &records[i]));
  }
  return records;
}

namespace {
template <typename Getter>
std::vector<loom_io_info_t> io_list(const loom_model_t* model, size_t count, Getter get) {
  std::vector<loom_io_info_t> list(count);
  for (size_t i = 0; i < count; ++i) {
    list[i] = loom_io_info_t{};
    list[i].struct_size = sizeof(loom_io_info_t);
    check(get(model, i, &list[i]));
  }
  return list;
}
}  // namespace

std::vector<loom_io_info_t> model_inputs(const loom_model_t* model) {
  return io_list(model, loom_model_num_inputs(model), loom_model_input);
}

std::vector<loom_io_info_t> model_outputs(const loom_model_t* model) {
  return io_list(model, loom_model_num_outputs(model), loom_model_output);
}

std::vector<int64_t> io_dims(const loom_io_info_t& info) {
  if (info.rank <= 0) return {};
  int32_t rank = info.rank > LOOM_MAX_RANK ? LOOM_MAX_RANK : info.rank;
  return std::vector<int64_t>(info.dims, info.dims + rank);
}

std::string take_string(char* text) {
  std::string s = text != nullptr ? text : "";
  loom_string_free(text);
  return s;
}

namespace {

HostTensor from_core(const loom_host_tensor_t& t) {
  HostTensor out;
  out.dtype = t.dtype;
  if (t.rank < 0 || t.rank > LOOM_MAX_RANK)
    throw ApiError(LOOM_ERROR_INTERNAL,
                   fmt::format("the core returned an output of rank {}", t.rank));
  out.dims.assign(t.dims, t.dims + t.rank);
  size_t count = checked_element_count(out.dims, "output");
  if (t.dtype == LOOM_DTYPE_STRING) {
    if (t.byte_size != count * sizeof(loom_string_t) || (count > 0 && t.data == nullptr))
      throw ApiError(LOOM_ERROR_INTERNAL, "the core returned a string output of the wrong size");
    const auto* strings = static_cast<const loom_string_t*>(t.data);
    out.strings.reserve(count);
    for (size_t i = 0; i < count; ++i) out.strings.emplace_back(strings[i].data, strings[i].size);
    return out;
  }
  size_t expected = count * dtype_size(t.dtype);
  if (dtype_size(t.dtype) == 0 || t.byte_size != expected || (expected > 0 && t.data == nullptr))
    throw ApiError(LOOM_ERROR_INTERNAL,
                   fmt::format("the core returned an output of {} bytes for shape {} of {}",
                               t.byte_size, out.shape_string(), dtype_name(t.dtype)));
  out.data.resize(expected);
  if (expected > 0) std::memcpy(out.data.data(), t.data, expected);
  return out;
}

}  // namespace

namespace {

// Borrowed loom_host_tensor_t views of HostTensors (STRING tensors as loom_string_t arrays that
// view the HostTensor's strings); the views live as long as this object.
class TensorViews {
 public:
  loom_host_tensor_t* add(const std::vector<HostTensor>& tensors) {
    auto& views = groups_.emplace_back(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) views[i] = view(tensors[i]);
    return views.data();
  }

  loom_host_tensor_t view(const HostTensor& in) {
    loom_host_tensor_t v{};
    v.struct_size = sizeof(loom_host_tensor_t);
    v.dtype = in.dtype;
    v.rank = static_cast<int32_t>(in.dims.size());
    for (size_t d = 0; d < in.dims.size() && d < LOOM_MAX_RANK; ++d) v.dims[d] = in.dims[d];
    if (in.dtype == LOOM_DTYPE_STRING) {
      auto& strings = strings_.emplace_back();
      for (const auto& s : in.strings) strings.push_back({s.data(), s.size()});
      v.data = strings.data();
      v.byte_size = strings.size() * sizeof(loom_string_t);
    } else {
      v.data = const_cast<std::byte*>(in.data.data());  // borrowed, read-only by contract
      v.byte_size = in.data.size();
    }
    return v;
  }

 private:
  std::deque<std::vector<loom_host_tensor_t>> groups_;
  std::deque<std::vector<loom_string_t>> strings_;
};

loom_value_kind_t to_core_kind(ValueKind k) {
  switch (k) {
    case ValueKind::kTensor:
      return LOOM_VALUE_KIND_TENSOR;
    case ValueKind::kSequence:
      return LOOM_VALUE_KIND_SEQUENCE;
    case ValueKind::kOptionalTensor:
      return LOOM_VALUE_KIND_OPTIONAL_TENSOR;
    case ValueKind::kOptionalSequence:
      return LOOM_VALUE_KIND_OPTIONAL_SEQUENCE;
  }
  return LOOM_VALUE_KIND_TENSOR;
}

ValueKind from_core_kind(loom_value_kind_t k) {
  switch (k) {
    case LOOM_VALUE_KIND_TENSOR:
      return ValueKind::kTensor;
    case LOOM_VALUE_KIND_SEQUENCE:
      return ValueKind::kSequence;
    case LOOM_VALUE_KIND_OPTIONAL_TENSOR:
      return ValueKind::kOptionalTensor;
    case LOOM_VALUE_KIND_OPTIONAL_SEQUENCE:
      return ValueKind::kOptionalSequence;
  }
  throw ApiError(LOOM_ERROR_INTERNAL, "the core returned a value of unknown kind");
}

}  // namespace

ValueKind model_input_kind(const loom_model_t* model, size_t index) {
  return from_core_kind(loom_model_input_kind(model, index));
}

ValueKind model_output_kind(const loom_model_t* model, size_t index) {
  return from_core_kind(loom_model_output_kind(model, index));
}

std::vector<HostValue> run_session_values(loom_session_t* session, size_t num_outputs,
                                          const std::vector<std::string>& input_names,
                                          const std::vector<const HostValue*>& inputs) {
  TensorViews views;
  std::vector<loom_value_t> values(inputs.size());
  std::vector<const char*> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostValue& in = *inputs[i];
    loom_value_t& v = values[i];
    v = loom_value_t{};
    v.struct_size = sizeof v;
    v.kind = to_core_kind(in.kind);
    v.elem_dtype = in.elem_dtype;
    v.has_value = in.has_value;
    v.num_tensors = in.tensors.size();
    v.tensors = views.add(in.tensors);
    names.push_back(input_names[i].c_str());
  }
  std::vector<loom_value_t> outputs(num_outputs);
  for (auto& o : outputs) {
    o = loom_value_t{};
    o.struct_size = sizeof o;
  }
  check(loom_session_run_values(session, values.size(), names.data(), values.data(), outputs.size(),
                                outputs.data()));
  std::vector<HostValue> result;
  result.reserve(outputs.size());
  try {
    for (auto& o : outputs) {
      HostValue& r = result.emplace_back();
      r.kind = from_core_kind(o.kind);
      r.has_value = o.has_value;
      r.elem_dtype = o.elem_dtype;
      for (size_t t = 0; t < o.num_tensors; ++t) r.tensors.push_back(from_core(o.tensors[t]));
    }
  } catch (...) {
    for (auto& o : outputs) loom_value_release(&o);
    throw;
  }
  for (auto& o : outputs) loom_value_release(&o);
  return result;
}

std::vector<HostTensor> run_session(loom_session_t* session, size_t num_outputs,
                                    const std::vector<std::string>& input_names,
                                    const std::vector<const HostTensor*>& inputs) {
  TensorViews tensor_views;  // owns the STRING inputs' loom_string_t arrays
  std::vector<loom_host_tensor_t> views;
  std::vector<const char*> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    views.push_back(tensor_views.view(*inputs[i]));
    names.push_back(input_names[i].c_str());
  }
  std::vector<loom_host_tensor_t> outputs(num_outputs);
  for (auto& o : outputs) {
    o = loom_host_tensor_t{};
    o.struct_size = sizeof(loom_host_tensor_t);
  }
  check(loom_session_run(session, views.size(), names.data(), views.data(), outputs.size(),
                         outputs.data()));
  std::vector<HostTensor> result;
  result.reserve(outputs.size());
  try {
    for (auto& o : outputs) result.push_back(from_core(o));
  } catch (...) {
    for (auto& o : outputs) loom_host_tensor_release(&o);
    throw;
  }
  for (auto& o : outputs) loom_host_tensor_release(&o);
  return result;
}

}  // namespace loom::apps
