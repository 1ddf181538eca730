#include "common.hpp"

#include <chrono>
#include <exception>
#include <memory>
#include <new>

namespace loom::triton {

void check(TRITONSERVER_Error* error, std::string_view what) {
  if (error == nullptr) return;
  TRITONSERVER_Error_Code code = TRITONSERVER_ErrorCode(error);
  std::string message = std::string(what) + ": " + TRITONSERVER_ErrorMessage(error);
  TRITONSERVER_ErrorDelete(error);
  throw BackendError(code, message);
}

TRITONSERVER_Error_Code triton_code(loom_status_code_t code) {
  switch (code) {
    case LOOM_ERROR_INVALID_ARGUMENT:
    case LOOM_ERROR_LIMIT_EXCEEDED:  // the request asked for more than the model's limits
      return TRITONSERVER_ERROR_INVALID_ARG;
    case LOOM_ERROR_NOT_FOUND:
      return TRITONSERVER_ERROR_NOT_FOUND;
    case LOOM_ERROR_UNSUPPORTED:
    case LOOM_ERROR_INCOMPATIBLE:
      return TRITONSERVER_ERROR_UNSUPPORTED;
    case LOOM_ERROR_UNAVAILABLE:
    case LOOM_ERROR_OUT_OF_MEMORY:
      return TRITONSERVER_ERROR_UNAVAILABLE;
    case LOOM_ERROR_CANCELLED:
      return TRITONSERVER_ERROR_CANCELLED;
    default:
      return TRITONSERVER_ERROR_INTERNAL;
  }
}

void check(loom_status_t* status, std::string_view what) {
  if (status == nullptr) return;
  loom_status_code_t code = loom_status_code(status);
  std::string message(loom_status_message(status));
  loom_status_free(status);
  if (!what.empty()) message = std::string(what) + ": " + message;
  throw BackendError(triton_code(code), message);
}

TRITONSERVER_Error* current_error() {
  try {
    throw;
  } catch (const BackendError& e) {
    return TRITONSERVER_ErrorNew(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "loom backend: out of memory");
  } catch (const std::exception& e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, e.what());
  } catch (...) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "loom backend: unknown exception");
  }
}

void log(TRITONSERVER_LogLevel level, const std::string& message, const char* file, int line) {
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  std::string name(file);
  name.erase(0, name.find_last_of('/') + 1);  // npos + 1 == 0: the whole name
  // A failure to log has nowhere better to go.
  if (TRITONSERVER_Error* error =
          TRITONSERVER_LogMessage(level, name.c_str(), line, message.c_str()))
    TRITONSERVER_ErrorDelete(error);
}

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

namespace {

struct DtypeName {
  loom_dtype_t loom;
  TRITONSERVER_DataType triton;
  const char* wire;
};

constexpr DtypeName kDtypes[] = {
    {LOOM_DTYPE_BOOL, TRITONSERVER_TYPE_BOOL, "BOOL"},
    {LOOM_DTYPE_UINT8, TRITONSERVER_TYPE_UINT8, "UINT8"},
    {LOOM_DTYPE_UINT16, TRITONSERVER_TYPE_UINT16, "UINT16"},
    {LOOM_DTYPE_UINT32, TRITONSERVER_TYPE_UINT32, "UINT32"},
    {LOOM_DTYPE_UINT64, TRITONSERVER_TYPE_UINT64, "UINT64"},
    {LOOM_DTYPE_INT8, TRITONSERVER_TYPE_INT8, "INT8"},
    {LOOM_DTYPE_INT16, TRITONSERVER_TYPE_INT16, "INT16"},
    {LOOM_DTYPE_INT32, TRITONSERVER_TYPE_INT32, "INT32"},
    {LOOM_DTYPE_INT64, TRITONSERVER_TYPE_INT64, "INT64"},
    {LOOM_DTYPE_FLOAT16, TRITONSERVER_TYPE_FP16, "FP16"},
    {LOOM_DTYPE_FLOAT32, TRITONSERVER_TYPE_FP32, "FP32"},
    {LOOM_DTYPE_FLOAT64, TRITONSERVER_TYPE_FP64, "FP64"},
    {LOOM_DTYPE_STRING, TRITONSERVER_TYPE_BYTES, "BYTES"},
    {LOOM_DTYPE_BFLOAT16, TRITONSERVER_TYPE_BF16, "BF16"},
};

}  // namespace

TRITONSERVER_DataType triton_dtype(loom_dtype_t dtype) {
  for (const auto& d : kDtypes)
    if (d.loom == dtype) return d.triton;
  return TRITONSERVER_TYPE_INVALID;
}

std::string config_dtype_name(loom_dtype_t dtype) {
  for (const auto& d : kDtypes)
    if (d.loom == dtype)
      // The configuration spells BYTES as STRING.
      return d.loom == LOOM_DTYPE_STRING ? "TYPE_STRING" : std::string("TYPE_") + d.wire;
  return "";
}

loom_dtype_t loom_dtype_from_config(std::string_view config_name) {
  for (const auto& d : kDtypes)
    if (config_dtype_name(d.loom) == config_name) return d.loom;
  return LOOM_DTYPE_UNDEFINED;
}

std::string wire_dtype_name(TRITONSERVER_DataType dtype) {
  for (const auto& d : kDtypes)
    if (d.triton == dtype) return d.wire;
  return "INVALID";
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) text += ',';
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

}  // namespace loom::triton
