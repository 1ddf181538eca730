#include "instance.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "common.hpp"

namespace loom::triton {

namespace {

void log_error(TRITONSERVER_Error* error, const std::string& what) {
  if (error == nullptr) return;
  log(TRITONSERVER_LOG_ERROR, "loom: " + what + ": " + TRITONSERVER_ErrorMessage(error));
  TRITONSERVER_ErrorDelete(error);
}

[[noreturn]] void request_error(const std::string& message) {
  throw BackendError(TRITONSERVER_ERROR_INVALID_ARG, message);
}

// Triton's BYTES elements: each a 4-byte little-endian length and that many bytes.
void put_u32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}
uint32_t get_u32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

// The shape the model takes for an input, with -1 for the batch dimension, for messages.
std::vector<int64_t> expected_shape(const TensorSpec& spec, int64_t max_batch_size) {
  std::vector<int64_t> shape = spec.model_dims;  // Triton has applied any reshape
  if (max_batch_size > 0) shape.insert(shape.begin(), -1);
  return shape;
}

// Sends `request` its error response.
void send_error(TRITONBACKEND_Request* request, TRITONSERVER_Error_Code code,
                const std::string& message) {
  TRITONBACKEND_Response* response = nullptr;
  TRITONSERVER_Error* error = TRITONBACKEND_ResponseNew(&response, request);
  if (error) {
    log_error(error, "creating an error response (" + message + ")");
    return;
  }
  TRITONSERVER_Error* reply = TRITONSERVER_ErrorNew(code, message.c_str());
  log_error(TRITONBACKEND_ResponseSend(response, LOOM_TRITON_RESPONSE_COMPLETE_FINAL, reply),
            "sending an error response");
  TRITONSERVER_ErrorDelete(reply);
}

struct HostTensorsReleaser {
  std::vector<loom_host_tensor_t>* tensors = nullptr;
  ~HostTensorsReleaser() {
    if (tensors)
      for (auto& t : *tensors) loom_host_tensor_release(&t);
  }
};

}  // namespace

// One request on its way through execute.
struct InstanceState::PendingInput {
  std::vector<int64_t> shape;
  std::vector<std::pair<const void*, size_t>> buffers;
  size_t byte_size = 0;
  // A STRING input: its elements, viewing the request's bytes (or string_bytes, their copy
  // when the request split them over several buffers).
  std::vector<loom_string_t> strings;
  std::vector<char> string_bytes;
};

struct InstanceState::Pending {
  using Input = PendingInput;
  TRITONBACKEND_Request* request = nullptr;
  std::vector<Input> inputs;    // in the configuration's input order
  std::vector<size_t> outputs;  // requested outputs, as indices among the model's outputs
  int64_t batch = 1;            // rows it adds to a batch
  bool failed = false;
  TRITONSERVER_Error_Code code = TRITONSERVER_ERROR_INTERNAL;
  std::string message;
};

namespace {

// Splits a STRING input's bytes into its `elements` strings, which must use up every byte.
void decode_strings(const std::string& name, uint64_t elements, InstanceState::PendingInput& data) {
  const char* bytes = nullptr;
  size_t size = data.byte_size;
  if (data.buffers.size() == 1) {
    bytes = static_cast<const char*>(data.buffers[0].first);
  } else {
    data.string_bytes.reserve(size);
    for (const auto& [ptr, n] : data.buffers)
      data.string_bytes.insert(data.string_bytes.end(), static_cast<const char*>(ptr),
                               static_cast<const char*>(ptr) + n);
    bytes = data.string_bytes.data();
  }
  size_t pos = 0;
  data.strings.reserve(static_cast<size_t>(std::min<uint64_t>(elements, size / 4)));
  for (uint64_t e = 0; e < elements; ++e) {
    if (size - pos < 4) break;
    uint32_t length = get_u32(bytes + pos);
    pos += 4;
    if (size - pos < length) {
      pos = size + 1;  // marks the error below
      break;
    }
    data.strings.push_back(loom_string_t{bytes + pos, length});
    pos += length;
  }
  if (data.strings.size() != elements || pos != size)
    request_error("input '" + name + "': its " + std::to_string(size) + " bytes are not the " +
                  std::to_string(elements) + " length-prefixed strings its shape " +
                  dims_text(data.shape) + " holds");
}

}  // namespace

InstanceState::InstanceState(TRITONBACKEND_ModelInstance* instance, ModelState& model)
    : instance_(instance), model_(model) {
  const char* name = nullptr;
  check(TRITONBACKEND_ModelInstanceName(instance, &name), "instance name");
  name_ = name;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  check(TRITONBACKEND_ModelInstanceKind(instance, &kind), "instance kind");
  if (kind == TRITONSERVER_INSTANCEGROUPKIND_GPU)
    throw BackendError(TRITONSERVER_ERROR_UNSUPPORTED,
                       "instance_group kind KIND_GPU: the loom backend places work with the "
                       "'devices' parameter; use KIND_CPU or KIND_MODEL");
  // The model's session, shared by every instance (it runs one inference per instance at once).
  session_ = model_.session();
}

InstanceState::~InstanceState() = default;

void InstanceState::parse(Pending& pending) const {
  const auto& specs = model_.inputs();
  const int64_t max_batch = model_.max_batch_size();
  pending.inputs.assign(specs.size(), {});
  std::vector<bool> seen(specs.size(), false);
  bool batch_known = false;
  std::string batch_from;

  uint32_t count = 0;
  check(TRITONBACKEND_RequestInputCount(pending.request, &count), "request inputs");
  for (uint32_t i = 0; i < count; ++i) {
    TRITONBACKEND_Input* input = nullptr;
    check(TRITONBACKEND_RequestInputByIndex(pending.request, i, &input), "request input");
    const char* name = nullptr;
    TRITONSERVER_DataType dtype = TRITONSERVER_TYPE_INVALID;
    const int64_t* shape = nullptr;
    uint32_t rank = 0;
    uint64_t byte_size = 0;
    uint32_t buffers = 0;
    check(TRITONBACKEND_InputProperties(input, &name, &dtype, &shape, &rank, &byte_size, &buffers),
          "request input");
    const TensorSpec* spec = model_.find_input(name);
    if (spec == nullptr) {
      std::string names;
      for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.name;
      request_error("unknown input '" + std::string(name) + "'; the model's inputs are: " + names);
    }
    size_t index = static_cast<size_t>(spec - specs.data());
    if (seen[index]) request_error("input '" + spec->name + "' is given twice");
    seen[index] = true;
    Pending::Input& data = pending.inputs[index];
    data.shape.assign(shape, shape + rank);

    if (dtype != spec->triton_dtype)
      request_error("input '" + spec->name + "' is " + wire_dtype_name(dtype) +
                    ", the model takes " + wire_dtype_name(spec->triton_dtype));
    std::vector<int64_t> expected = expected_shape(*spec, max_batch);
    bool fits = data.shape.size() == expected.size();
    for (size_t d = 0; fits && d < expected.size(); ++d)
      fits = data.shape[d] >= 0 && (expected[d] < 0 || expected[d] == data.shape[d]);
    if (!fits)
      request_error("input '" + spec->name + "' has shape " + dims_text(data.shape) +
                    ", the model takes " + dims_text(expected));
    // Element count with an overflow check: the shape is the client's.
    uint64_t elements = 1;
    for (int64_t d : data.shape) {
      if (d != 0 && elements > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
        request_error("input '" + spec->name + "': shape " + dims_text(data.shape) +
                      " is too large");
      elements *= static_cast<uint64_t>(d);
    }
    uint64_t element_size = loom_dtype_size(spec->dtype);
    if (spec->dtype != LOOM_DTYPE_STRING &&
        (elements > std::numeric_limits<uint64_t>::max() / element_size ||
         elements * element_size != byte_size))
      request_error("input '" + spec->name + "' holds " + std::to_string(byte_size) +
                    " bytes, its shape " + dims_text(data.shape) + " of " + wire_dtype_name(dtype) +
                    " needs " + std::to_string(elements * element_size));
    data.byte_size = byte_size;
    if (max_batch > 0) {
      int64_t rows = data.shape[0];
      if (rows > max_batch)
        request_error("input '" + spec->name + "' has a batch of " + std::to_string(rows) +
                      ", more than max_batch_size " + std::to_string(max_batch));
      if (batch_known && rows != pending.batch)
        request_error("inputs disagree on the batch size: '" + batch_from + "' has " +
                      std::to_string(pending.batch) + ", '" + spec->name + "' has " +
                      std::to_string(rows));
      pending.batch = rows;
      batch_known = true;
      batch_from = spec->name;
    }
    for (uint32_t b = 0; b < buffers; ++b) {
      const void* buffer = nullptr;
      uint64_t size = 0;
      TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
      int64_t memory_id = 0;
      check(TRITONBACKEND_InputBuffer(input, b, &buffer, &size, &memory, &memory_id),
            "input '" + spec->name + "'");
      if (memory == TRITONSERVER_MEMORY_GPU)
        throw BackendError(TRITONSERVER_ERROR_UNSUPPORTED,
                           "input '" + spec->name +
                               "' is in GPU memory; the loom backend "
                               "reads host memory");
      if (size) data.buffers.emplace_back(buffer, static_cast<size_t>(size));
    }
    if (spec->dtype == LOOM_DTYPE_STRING) decode_strings(spec->name, elements, data);
  }
  for (size_t i = 0; i < specs.size(); ++i)
    if (!seen[i]) request_error("missing input '" + specs[i].name + "'");

  uint32_t outputs = 0;
  check(TRITONBACKEND_RequestOutputCount(pending.request, &outputs), "requested outputs");
  const auto& names = model_.model_output_names();
  for (uint32_t i = 0; i < outputs; ++i) {
    const char* name = nullptr;
    check(TRITONBACKEND_RequestOutputName(pending.request, i, &name), "requested output");
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) request_error("unknown output '" + std::string(name) + "'");
    pending.outputs.push_back(static_cast<size_t>(it - names.begin()));
  }
}

void InstanceState::finish(Pending& pending, bool success, uint64_t exec_start,
                           uint64_t compute_start, uint64_t compute_end,
                           uint64_t exec_end) noexcept {
  // Statistics belong to the request: report them before it is released.
  log_error(
      TRITONBACKEND_ModelInstanceReportStatistics(instance_, pending.request, success, exec_start,
                                                  compute_start, compute_end, exec_end),
      "reporting request statistics");
  log_error(TRITONBACKEND_RequestRelease(pending.request, LOOM_TRITON_REQUEST_RELEASE_ALL),
            "releasing a request");
  pending.request = nullptr;
}

void InstanceState::run_group(Pending* const* group, size_t size) noexcept {
  const uint64_t exec_start = now_ns();
  const auto& specs = model_.inputs();
  const int64_t max_batch = model_.max_batch_size();
  uint64_t compute_start = exec_start, compute_end = exec_start;
  int64_t rows = 0;
  for (size_t r = 0; r < size; ++r) rows += group[r]->batch;

  std::vector<loom_host_tensor_t> outputs(model_.num_model_outputs());
  try {
    // Inputs: the request's own bytes when it is alone and in one buffer; otherwise the
    // requests' rows stacked along the first dimension in one buffer per input.
    std::vector<std::unique_ptr<std::byte[]>> storage;
    std::vector<std::vector<loom_string_t>> string_storage;
    std::vector<loom_host_tensor_t> tensors(specs.size());
    std::vector<const char*> names(specs.size());
    for (size_t k = 0; k < specs.size(); ++k) {
      const Pending::Input& first = group[0]->inputs[k];
      loom_host_tensor_t& t = tensors[k];
      t.struct_size = sizeof t;
      t.dtype = specs[k].dtype;
      t.rank = static_cast<int32_t>(first.shape.size());
      std::copy(first.shape.begin(), first.shape.end(), t.dims);
      if (max_batch > 0) t.dims[0] = rows;
      names[k] = specs[k].name.c_str();
      if (t.dtype == LOOM_DTYPE_STRING) {
        // Strings go to Loom as loom_string_t arrays viewing the requests' bytes.
        const std::vector<loom_string_t>* strings = &first.strings;
        if (size > 1) {
          string_storage.emplace_back();
          for (size_t r = 0; r < size; ++r) {
            const auto& part = group[r]->inputs[k].strings;
            string_storage.back().insert(string_storage.back().end(), part.begin(), part.end());
          }
          strings = &string_storage.back();
        }
        t.data = const_cast<loom_string_t*>(strings->data());
        t.byte_size = strings->size() * sizeof(loom_string_t);
        continue;
      }
      size_t total = 0;
      for (size_t r = 0; r < size; ++r) total += group[r]->inputs[k].byte_size;
      t.byte_size = total;
      const bool aligned =
          first.buffers.size() == 1 &&
          reinterpret_cast<uintptr_t>(first.buffers[0].first) % alignof(std::max_align_t) == 0;
      if (size == 1 && aligned) {
        t.data = const_cast<void*>(first.buffers[0].first);  // borrowed for the run only
        continue;
      }
      storage.emplace_back(new std::byte[std::max<size_t>(total, 1)]);
      std::byte* out = storage.back().get();
      for (size_t r = 0; r < size; ++r)
        for (const auto& [ptr, bytes] : group[r]->inputs[k].buffers) {
          std::memcpy(out, ptr, bytes);
          out += bytes;
        }
      t.data = storage.back().get();
    }
    for (auto& o : outputs) o.struct_size = sizeof o;

    compute_start = now_ns();
    loom_status_t* status = loom_session_run(session_, tensors.size(), names.data(), tensors.data(),
                                             outputs.size(), outputs.data());
    compute_end = now_ns();
    check(status, "");
  } catch (...) {
    compute_end = now_ns();
    TRITONSERVER_Error* error = current_error();
    std::string message = TRITONSERVER_ErrorMessage(error);
    TRITONSERVER_Error_Code code = TRITONSERVER_ErrorCode(error);
    TRITONSERVER_ErrorDelete(error);
    for (size_t r = 0; r < size; ++r) {
      send_error(group[r]->request, code, message);
      finish(*group[r], false, exec_start, compute_start, compute_end, now_ns());
    }
    return;
  }
  HostTensorsReleaser release_outputs{&outputs};

  // Outputs: each request gets its rows of every output it asked for.
  std::string batch_problem;
  if (max_batch > 0)
    for (size_t o = 0; o < outputs.size(); ++o)
      if (outputs[o].rank < 1 || outputs[o].dims[0] != rows)
        batch_problem = "output '" + model_.model_output_names()[o] + "' does not have the " +
                        std::to_string(rows) +
                        " rows of the batch (max_batch_size > 0 needs "
                        "outputs whose first dimension is the inputs' batch)";
  int64_t row = 0;
  for (size_t r = 0; r < size; ++r) {
    Pending& p = *group[r];
    TRITONBACKEND_Response* response = nullptr;
    try {
      if (!batch_problem.empty()) throw BackendError(TRITONSERVER_ERROR_INTERNAL, batch_problem);
      check(TRITONBACKEND_ResponseNew(&response, p.request), "creating the response");
      for (size_t o : p.outputs) {
        const loom_host_tensor_t& t = outputs[o];
        const std::string& name = model_.model_output_names()[o];
        TRITONSERVER_DataType dtype = triton_dtype(t.dtype);
        if (dtype == TRITONSERVER_TYPE_INVALID)
          throw BackendError(TRITONSERVER_ERROR_UNSUPPORTED,
                             "output '" + name + "' is " + loom_dtype_name(t.dtype) +
                                 ", which the loom backend does not return");
        std::vector<int64_t> shape(t.dims, t.dims + t.rank);
        // The request's rows: [offset, offset + bytes) of the output's bytes (of its
        // loom_string_t array for strings).
        size_t offset = 0, bytes = t.byte_size;
        if (max_batch > 0) {
          size_t row_bytes = rows > 0 ? t.byte_size / static_cast<size_t>(rows) : 0;
          shape[0] = p.batch;
          offset = row_bytes * static_cast<size_t>(row);
          bytes = row_bytes * static_cast<size_t>(p.batch);
        }
        const loom_string_t* strings = nullptr;
        size_t num_strings = 0;
        if (t.dtype == LOOM_DTYPE_STRING) {
          // Triton's BYTES: each element a 4-byte length and its bytes.
          strings = static_cast<const loom_string_t*>(t.data) + offset / sizeof(loom_string_t);
          num_strings = bytes / sizeof(loom_string_t);
          bytes = 0;
          for (size_t e = 0; e < num_strings; ++e) {
            if (strings[e].size > std::numeric_limits<uint32_t>::max())
              throw BackendError(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "output '" + name + "' has a string over 4 GiB");
            bytes += 4 + strings[e].size;
          }
        }
        TRITONBACKEND_Output* output = nullptr;
        check(TRITONBACKEND_ResponseOutput(response, &output, name.c_str(), dtype, shape.data(),
                                           static_cast<uint32_t>(shape.size())),
              "output '" + name + "'");
        void* buffer = nullptr;
        TRITONSERVER_MemoryType memory = TRITONSERVER_MEMORY_CPU;
        int64_t memory_id = 0;
        check(TRITONBACKEND_OutputBuffer(output, &buffer, bytes, &memory, &memory_id),
              "output '" + name + "'");
        if (memory == TRITONSERVER_MEMORY_GPU)
          throw BackendError(TRITONSERVER_ERROR_UNSUPPORTED,
                             "output '" + name + "': the server gave GPU memory");
        if (strings) {
          char* out = static_cast<char*>(buffer);
          for (size_t e = 0; e < num_strings; ++e) {
            put_u32(out, static_cast<uint32_t>(strings[e].size));
            if (strings[e].size) std::memcpy(out + 4, strings[e].data, strings[e].size);
            out += 4 + strings[e].size;
          }
        } else if (bytes) {
          std::memcpy(buffer, static_cast<const std::byte*>(t.data) + offset, bytes);
        }
      }
      TRITONSERVER_Error* sent =
          TRITONBACKEND_ResponseSend(response, LOOM_TRITON_RESPONSE_COMPLETE_FINAL, nullptr);
      // The server owns the response now, sent or not: no second response for this request.
      response = nullptr;
      bool success = sent == nullptr;
      log_error(sent, "sending a response");
      finish(p, success, exec_start, compute_start, compute_end, now_ns());
    } catch (...) {
      if (response) log_error(TRITONBACKEND_ResponseDelete(response), "dropping a response");
      TRITONSERVER_Error* error = current_error();
      send_error(p.request, TRITONSERVER_ErrorCode(error), TRITONSERVER_ErrorMessage(error));
      TRITONSERVER_ErrorDelete(error);
      finish(p, false, exec_start, compute_start, compute_end, now_ns());
    }
    row += p.batch;
  }
  // One execution of the model for all of them: Triton's batch statistics (execution count,
  // batch sizes in v2/models/<m>/stats) come from this.
  log_error(TRITONBACKEND_ModelInstanceReportBatchStatistics(
                instance_, static_cast<uint64_t>(max_batch > 0 ? rows : 1), exec_start,
                compute_start, compute_end, now_ns()),
            "reporting batch statistics");
}

void InstanceState::execute(TRITONBACKEND_Request** requests, uint32_t count) noexcept {
  std::vector<Pending> pending(count);
  for (uint32_t i = 0; i < count; ++i) {
    pending[i].request = requests[i];
    try {
      parse(pending[i]);
    } catch (...) {
      TRITONSERVER_Error* error = current_error();
      pending[i].failed = true;
      pending[i].code = TRITONSERVER_ErrorCode(error);
      pending[i].message = TRITONSERVER_ErrorMessage(error);
      TRITONSERVER_ErrorDelete(error);
    }
  }
  for (auto& p : pending)
    if (p.failed) {
      uint64_t t = now_ns();
      send_error(p.request, p.code, p.message);
      finish(p, false, t, t, t, t);
    }

  // Runs: consecutive requests whose inputs agree beyond the batch dimension share one run,
  // up to max_batch_size rows (Triton's batcher already keeps to it); a model without a batch
  // dimension runs each request alone.
  const int64_t max_batch = model_.max_batch_size();
  std::vector<Pending*> group;
  int64_t rows = 0;
  auto same_shapes = [](const Pending& a, const Pending& b) {
    for (size_t k = 0; k < a.inputs.size(); ++k)
      if (!std::equal(a.inputs[k].shape.begin() + 1, a.inputs[k].shape.end(),
                      b.inputs[k].shape.begin() + 1, b.inputs[k].shape.end()))
        return false;
    return true;
  };
  for (auto& p : pending) {
    if (p.failed) continue;
    bool joins = max_batch > 0 && !group.empty() && rows + p.batch <= max_batch &&
                 same_shapes(*group.front(), p);
    if (!group.empty() && !joins) {
      run_group(group.data(), group.size());
      group.clear();
      rows = 0;
    }
    group.push_back(&p);
    rows += p.batch;
  }
  if (!group.empty()) run_group(group.data(), group.size());
}

}  // namespace loom::triton
