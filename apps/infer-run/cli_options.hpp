// infer-run's command line.
#pragma once

#include <loom/plugin.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::infer_run {

// The most sessions --concurrency runs at once.
inline constexpr int kMaxConcurrency = 64;

struct Options {
  std::string model;
  std::vector<std::pair<std::string, std::string>> inputs;           // name, file
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;  // name, dims
  uint64_t seed = 0;
  bool random_inputs = false;  // --random-inputs: generate the inputs --input does not give
  std::string output_dir;
  std::string devices = "cpu";
  bool no_fallback = false;
  std::vector<std::string> plugins;
  bool no_default_plugins = false;    // only --plugin: no LOOM_PLUGIN_PATH, install dir, build tree
  bool isolate_plugin_probe = false;  // --isolate-plugin-probe: probe each plugin in a child first
  bool allow_newer_opsets = false;    // --allow-newer-opsets: accept them with a warning
  std::string device_options;         // "key=value;..."
  std::string placements;             // "PATTERN=DEVICE;..." from --place
  std::string cost_model;             // "DEVICE.KEY=VALUE;..." from --cost
  std::string dot_file;               // --dot: write the plan as Graphviz here
  int32_t threads = 0;
  int64_t plan_cache = 0;  // --plan-cache: plans kept per input-shape signature (0: default)
  // Limits of a run (docs/limits.md); 0: the session's default.
  int64_t max_tensor_bytes = 0;     // --max-tensor-bytes
  int64_t max_run_bytes = 0;        // --max-run-bytes
  int64_t max_loop_iterations = 0;  // --max-loop-iterations
  int64_t deadline_ms = 0;          // --deadline (0: none)
  int warmup = 0;
  int repeat = 1;
  double time_s = 0;         // --time: timed runs for this many seconds instead of --repeat's count
  int concurrency = 1;       // --concurrency: sessions running at once, each from its own thread
  std::string profile_file;  // --profile: the timed runs' Chrome trace goes here
  bool profile_summary = false;  // --profile-summary: their per-op and per-node table
  bool json = false;
  size_t json_max_values = 1000;
  bool explain = false;
  bool describe = false;
  bool list_plugins = false;
  bool list_devices = false;
  loom_log_level_t log_level = LOOM_LOG_WARNING;
};

// Parses argv. Returns nullopt after printing --help or --version (exit 0); throws AppError
// with kExitUsage on a bad command line.
std::optional<Options> parse_command_line(int argc, char** argv);

// "1x3x224x224" -> {1, 3, 224, 224}; "" -> {} (a scalar). Throws AppError (usage).
std::vector<int64_t> parse_shape(const std::string& text, const std::string& what);

}  // namespace loom::infer_run
