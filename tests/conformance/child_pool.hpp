// Runs test cases in forked child processes, a few at a time, each with a deadline, so that a
// crash or a hang is that test's failure and never the end of the run.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "test_case.hpp"

namespace loom::conformance {

struct PoolSettings {
  size_t jobs = 1;
  std::chrono::seconds timeout{60};
  size_t memory_limit_mb = 0;  // address-space limit of each child, 0 = none
  bool quiet_children = true;  // send the children's stdout/stderr to /dev/null
};

// Calls `work` in a child for every index in [0, count) and `done(index, result)` in the
// parent as results arrive (in completion order). A child that dies by a signal yields
// "crashed: signal N (NAME)"; one past the deadline is killed: "timed out after N s".
void run_in_children(size_t count, const PoolSettings& settings,
                     const std::function<CaseResult(size_t)>& work,
                     const std::function<void(size_t, const CaseResult&)>& done);

}  // namespace loom::conformance
