// Progress of a long step (loading a model, creating a session) on a terminal: after a delay
// (1 s), "infer-run: loading model.onnx... 2.4 s" on stderr, redrawn in place until the step
// ends, then erased. Nothing when stderr is not a terminal or the output is --json.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace loom::infer_run {

class Progress {
 public:
  // Shows nothing unless `enabled` (see progress_enabled).
  Progress(std::string label, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  void tick();

  std::string label_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

// True when stderr is a terminal and the output is not JSON. INFER_RUN_PROGRESS_DELAY_MS
// (default 1000) sets how long a step runs before its progress shows (the tests set 0).
bool progress_enabled(bool json);

}  // namespace loom::infer_run
