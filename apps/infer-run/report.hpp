// What a run produced, and its two renderings: text for people, one JSON object for tools.
#pragma once

#include <loom/loom.h>

#include <loom_apps/host_tensor.hpp>
#include <string>
#include <vector>

#include "cli_options.hpp"
#include "input_feeds.hpp"
#include "latency.hpp"

namespace loom::infer_run {

struct RunReport {
  const Options* options = nullptr;
  std::string model_json;  // model_summary_json, taken before the model is freed
  const std::vector<InputFeed>* inputs = nullptr;
  std::vector<std::string> output_names;
  std::vector<loom::apps::HostTensor> outputs;
  LatencyStats latency;
  int32_t threads_per_session = 0;  // the session option (0: every core)
  double load_ms = 0;
  double session_ms = 0;    // session creation, compilation included where shapes are known
  double first_run_ms = 0;  // the first run, before the timed ones
  std::string plan_json;    // from loom_session_plan_json; empty when unavailable
  size_t planned_peak_bytes = 0;
  // --profile-summary: the core's table (text) and the numbers (JSON) of session 0's timed runs.
  std::string profile_summary;
  std::string profile_json;
  std::string profile_trace;  // --profile: where the trace was written
  size_t profile_runs = 0;
};

// The JSON report's "model" object: path, format, node and initializer counts, metadata, inputs
// and outputs.
std::string model_summary_json(const Options& options, const loom_model_t* model);

std::string format_text_report(const RunReport& report);
std::string format_json_report(const RunReport& report);

// Element `i` of a tensor as text: floats with 6 significant digits, ints exactly, bools as
// true/false, complex as (re,im), strings quoted.
std::string format_element(const loom::apps::HostTensor& t, size_t i);

}  // namespace loom::infer_run
