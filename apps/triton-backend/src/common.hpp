// Shared pieces of the Loom backend for Triton: errors crossing the two C APIs, logging to the
// server's log, data-type names and the clock the statistics use.
#pragma once

#include <loom/loom.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "triton_api.h"

namespace loom::triton {

// An error on its way to Triton: its code and a one-line message. Thrown inside the backend and
// turned into a TRITONSERVER_Error at the entry points, so that no exception crosses into the
// server.
class BackendError : public std::runtime_error {
 public:
  BackendError(TRITONSERVER_Error_Code code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  TRITONSERVER_Error_Code code() const { return code_; }

 private:
  TRITONSERVER_Error_Code code_;
};

// Throws BackendError carrying the server's message (and frees the server's error).
void check(TRITONSERVER_Error* error, std::string_view what);
// Throws BackendError carrying Loom's one-line message, prefixed by `what` when not empty.
void check(loom_status_t* status, std::string_view what);
// The Triton code for a Loom status code: a caller's mistake stays INVALID_ARG, and so on.
TRITONSERVER_Error_Code triton_code(loom_status_code_t code);
// A new TRITONSERVER_Error for the exception being handled (call inside a catch block).
TRITONSERVER_Error* current_error();

// To the server's log, with the caller's source file and line (the builtins, because clang 14
// with Debian 12's libstdc++ has no std::source_location).
void log(TRITONSERVER_LogLevel level, const std::string& message,
         const char* file = __builtin_FILE(), int line = __builtin_LINE());

// Steady-clock nanoseconds, the clock Triton's statistics expect.
uint64_t now_ns();

// Data types. Loom's numbering is ONNX's; Triton has three spellings: the enum, the config's
// "TYPE_FP32" and the wire's "FP32".
TRITONSERVER_DataType triton_dtype(loom_dtype_t dtype);             // INVALID when Triton has none
loom_dtype_t loom_dtype_from_config(std::string_view config_name);  // UNDEFINED if unknown
std::string config_dtype_name(loom_dtype_t dtype);         // "TYPE_FP32"; "" when Triton has none
std::string wire_dtype_name(TRITONSERVER_DataType dtype);  // "FP32", "BYTES", ...

// "[-1,3,224,224]".
std::string dims_text(const std::vector<int64_t>& dims);

}  // namespace loom::triton
