// Exit codes of infer-run and the error that carries one to main().
#pragma once

#include <stdexcept>
#include <string>

namespace loom::infer_run {

enum ExitCode : int {
  kExitOk = 0,
  kExitUsage = 2,    // bad command line, unreadable or mismatching input files
  kExitModel = 3,    // the model cannot be loaded or fails validation
  kExitRuntime = 4,  // session creation, inference or writing results failed
  kExitPlugin = 5,   // a plugin named with --plugin failed to load
};

// An error that ends the program: printed as one "infer-run: error: ..." line.
class AppError : public std::runtime_error {
 public:
  AppError(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

}  // namespace loom::infer_run
