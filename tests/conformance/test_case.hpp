// Test cases of the ONNX backend test data: <root>/<test>/{model.onnx, test_data_set_N/}.
#pragma once

#include <loom/loom.h>

#include <string>
#include <vector>

namespace loom::conformance {

struct TestCase {
  std::string suite;  // the root's directory name: node, pytorch-converted, ...
  std::string name;   // the test's directory name, e.g. test_add
  std::string dir;
  std::vector<std::string> data_sets;  // test_data_set_N directories, in N order

  std::string id() const { return suite + "/" + name; }
};

// Every directory directly under each root that holds a model.onnx, sorted by id.
// Throws std::runtime_error when a root does not exist.
std::vector<TestCase> discover_test_cases(const std::vector<std::string>& roots);

enum class Outcome { kPass, kFail, kSkip };

struct CaseResult {
  Outcome outcome = Outcome::kFail;
  std::string reason;  // one line for kFail / kSkip
};

struct RunSettings {
  std::string devices = "cpu";
  bool no_fallback = false;
  // With no_fallback: a session that fails because no requested device takes one of the
  // model's nodes is a skip (the test needs an op the devices do not claim), not a failure.
  bool skip_unclaimed = false;
  int32_t threads = 1;
};

// True for the session error of a node that no requested device supports (the core's
// LOOM_ERROR_UNSUPPORTED "N nodes are supported by none of the devices ...").
bool is_unclaimed_node_error(loom_status_code_t code, const std::string& message);

// Loads the model, feeds every data set's input_K.pb, runs and compares with output_K.pb.
// Runs in the forked child; never throws.
CaseResult run_test_case(loom_runtime_t* runtime, const TestCase& test,
                         const RunSettings& settings);

}  // namespace loom::conformance
