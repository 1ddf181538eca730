// infer-run: loads a model through the public C API, feeds it inputs from files or a seeded
// generator, runs it on the requested devices and reports outputs, timings and the plan.
#include <fmt/format.h>
#include <loom/loom.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <loom_apps/api.hpp>
#include <loom_apps/dtype.hpp>
#include <loom_apps/npy.hpp>
#include <set>
#include <thread>

#include "app_error.hpp"
#include "cli_options.hpp"
#include "input_feeds.hpp"
#include "listings.hpp"
#include "profile_report.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "timed_runs.hpp"

namespace loom::infer_run {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// SIGINT and SIGTERM cancel the run in progress (loom_session_cancel only bumps an atomic
// counter, which a signal handler may do), so infer-run ends with the run's one-line error and
// its exit code. The handler then restores the default action: a second signal kills at once.
// With --concurrency every session's run is cancelled.
std::atomic<loom_session_t*> g_signal_sessions[kMaxConcurrency] = {};

void cancel_from_signal(int sig) {
  for (auto& session : g_signal_sessions)
    if (loom_session_t* s = session.load()) loom_session_cancel(s);
  std::signal(sig, SIG_DFL);
}

class CancelOnSignal {
 public:
  explicit CancelOnSignal(const std::vector<loom::apps::SessionPtr>& sessions) {
    for (size_t i = 0; i < sessions.size() && i < kMaxConcurrency; ++i)
      g_signal_sessions[i].store(sessions[i].get());
    previous_int_ = std::signal(SIGINT, cancel_from_signal);
    previous_term_ = std::signal(SIGTERM, cancel_from_signal);
  }
  ~CancelOnSignal() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
    for (auto& session : g_signal_sessions) session.store(nullptr);
  }
  CancelOnSignal(const CancelOnSignal&) = delete;
  CancelOnSignal& operator=(const CancelOnSignal&) = delete;

 private:
  void (*previous_int_)(int);
  void (*previous_term_)(int);
};

// Turns a failed API call into an AppError with the exit code of the step that failed.
template <typename F>
auto step(ExitCode code, const std::string& context, F&& f) {
  try {
    return f();
  } catch (const loom::apps::ApiError& e) {
    ExitCode c = e.code() == LOOM_ERROR_INVALID_MODEL ? kExitModel : code;
    throw AppError(c, context.empty() ? e.what() : fmt::format("{}: {}", context, e.what()));
  }
}

// The core's log lines go to stderr as "loom: <level>: <source>: <message>". While plugins
// load they are held back: when a plugin the user named fails, infer-run's own error line
// says why, and a second line from the loader saying the same would only add noise.
struct LogSink {
  bool holding = true;
  std::vector<std::string> held;

  void release(bool print) {
    if (print)
      for (const auto& line : held) std::fputs(line.c_str(), stderr);
    held.clear();
    holding = false;
  }
};
LogSink g_log_sink;  // outlives the runtime, which calls it until destroyed

void log_to_stderr(void* user, loom_log_level_t level, const char* source, const char* message) {
  static const char* const kLevels[] = {"debug", "info", "warning", "error"};
  const char* name = level >= LOOM_LOG_DEBUG && level <= LOOM_LOG_ERROR ? kLevels[level] : "log";
  std::string line = source != nullptr && *source
                         ? fmt::format("loom: {}: {}: {}\n", name, source, message)
                         : fmt::format("loom: {}: {}\n", name, message);
  auto* sink = static_cast<LogSink*>(user);
  if (sink->holding)
    sink->held.push_back(std::move(line));
  else
    std::fputs(line.c_str(), stderr);
}

loom::apps::RuntimePtr make_runtime(const Options& o) {
  std::vector<const char*> paths;
  for (const auto& p : o.plugins) paths.push_back(p.c_str());
  loom_runtime_options_t ro{};
  ro.struct_size = sizeof(ro);
  ro.num_plugin_paths = paths.size();
  ro.plugin_paths = paths.data();
  ro.use_env_path = !o.no_default_plugins;
  ro.isolate_plugin_probe = o.isolate_plugin_probe;
  if (o.allow_newer_opsets) ro.allow_newer_opsets = 1;
  ro.use_default_paths = !o.no_default_plugins;
  ro.log_level = o.log_level;
  ro.log_fn = log_to_stderr;
  ro.log_user = &g_log_sink;
  return step(kExitRuntime, "cannot start the runtime",
              [&] { return loom::apps::create_runtime(ro); });
}

// Picks a file name for an output that is safe on every file system.
std::string output_file_name(const std::string& name, size_t index) {
  std::string safe;
  for (char c : name)
    safe +=
        (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  if (safe.empty() || safe[0] == '.') safe = fmt::format("output_{}", index) + safe;
  return safe + ".npy";
}

// --output: made and probed with a file before the model loads, so a directory that cannot be
// written is a usage error found at once, not after every timed run.
void check_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec && !std::filesystem::is_directory(dir, ec))
    ec = std::make_error_code(std::errc::not_a_directory);
  if (ec)
    throw AppError(kExitUsage,
                   fmt::format("--output {}: cannot create the directory: {}", dir, ec.message()));
  std::string probe = (std::filesystem::path(dir) / ".infer-run-probe-XXXXXX").string();
  int fd = mkstemp(probe.data());
  if (fd < 0)
    throw AppError(kExitUsage, fmt::format("--output {}: cannot write in the directory: {}", dir,
                                           std::strerror(errno)));
  close(fd);
  std::remove(probe.c_str());
}

void write_outputs(const Options& o, const RunReport& r) {
  std::error_code ec;
  std::filesystem::create_directories(o.output_dir, ec);
  if (ec) throw AppError(kExitRuntime, fmt::format("--output {}: {}", o.output_dir, ec.message()));
  std::set<std::string> used;
  for (size_t k = 0; k < r.outputs.size(); ++k) {
    std::string file = output_file_name(r.output_names[k], k);
    // Two names may map to one file name ("a/b" and "a_b"): never overwrite an output.
    if (!used.insert(file).second) used.insert(file = fmt::format("output_{}_{}", k, file));
    auto path = std::filesystem::path(o.output_dir) / file;
    try {
      loom::apps::write_npy(path.string(), r.outputs[k]);
    } catch (const loom::apps::TensorIoError& e) {
      throw AppError(kExitRuntime, e.what());
    }
  }
}

// Sequence and optional graph inputs/outputs run through the C API (loom_session_run_values),
// but infer-run's --input files, generated inputs, printing and --output handle tensors only:
// say so before anything else fails on them with a less helpful message.
void refuse_containers(const loom_model_t* model, const std::vector<loom_io_info_t>& inputs,
                       const std::vector<loom_io_info_t>& outputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (auto kind = loom::apps::model_input_kind(model, i); kind != loom::apps::ValueKind::kTensor)
      throw AppError(kExitUsage,
                     fmt::format("input '{}' is a {}; infer-run feeds tensors only (run such "
                                 "models through the C API, loom_session_run_values)",
                                 inputs[i].name, loom::apps::value_kind_name(kind)));
  for (size_t i = 0; i < outputs.size(); ++i)
    if (auto kind = loom::apps::model_output_kind(model, i); kind != loom::apps::ValueKind::kTensor)
      throw AppError(kExitUsage,
                     fmt::format("output '{}' is a {}; infer-run prints and writes tensors only "
                                 "(run such models through the C API, loom_session_run_values)",
                                 outputs[i].name, loom::apps::value_kind_name(kind)));
}

int run(int argc, char** argv) {
  std::optional<Options> parsed = parse_command_line(argc, argv);
  if (!parsed) return kExitOk;  // --help or --version
  const Options& o = *parsed;

  loom::apps::RuntimePtr runtime;
  try {
    runtime = make_runtime(o);
  } catch (const AppError&) {
    g_log_sink.release(true);  // whatever the loader said may explain the failure
    throw;
  }
  if (o.list_plugins) fmt::print("{}", format_plugin_list(runtime.get()));
  try {
    check_requested_plugins(runtime.get());
  } catch (const AppError&) {
    g_log_sink.release(false);
    throw;
  }
  g_log_sink.release(true);
  if (o.list_devices) fmt::print("{}", format_device_list(runtime.get()));
  if (o.model.empty()) return kExitOk;
  // Before the model loads or runs: a trace that cannot be written is a usage error, found
  // in a moment rather than after a long run.
  std::optional<AtomicFile> profile_file;
  if (!o.profile_file.empty()) profile_file.emplace("--profile", o.profile_file);
  const bool profile = profile_file || o.profile_summary;
  if (!o.output_dir.empty()) check_output_dir(o.output_dir);

  RunReport report;
  report.options = &o;
  auto start = Clock::now();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.model, ec))
    throw AppError(kExitModel,
                   fmt::format("model file {} {}", o.model,
                               std::filesystem::exists(o.model, ec) ? "is not a regular file"
                                                                    : "does not exist"));
  loom::apps::ModelPtr model;
  const bool show_progress = progress_enabled(o.json);
  try {
    Progress progress("loading " + std::filesystem::path(o.model).filename().string(),
                      show_progress);
    model = loom::apps::load_model(runtime.get(), o.model);
  } catch (const loom::apps::ApiError& e) {
    // The core's message usually names the file already; name it only when it does not.
    std::string message = e.what();
    if (message.find(o.model) == std::string::npos)
      message = fmt::format("cannot load {}: {}", o.model, message);
    throw AppError(kExitModel, message);
  }
  report.load_ms = ms_since(start);
  report.model_json = model_summary_json(o, model.get());
  if (o.describe) {
    // What a caller needs to prepare inputs (a test harness, a user with a new model), without
    // compiling for a device or running on generated inputs that may be invalid for it.
    if (o.json) {
      fmt::print("{{\"model\": {}}}\n", report.model_json);
      return kExitOk;
    }
    auto describe = [](const char* kind, const std::vector<loom_io_info_t>& list) {
      for (const auto& io : list) {
        std::string dims;
        for (int32_t d = 0; d < io.rank && d < LOOM_MAX_RANK; ++d) {
          if (d) dims += ", ";
          dims += io.dims[d] >= 0
                      ? std::to_string(io.dims[d])
                      : (io.dim_params[d] && *io.dim_params[d] ? io.dim_params[d] : "?");
        }
        fmt::print("{} {}: {}{}\n", kind, io.name, loom::apps::dtype_name(io.dtype),
                   io.rank < 0 ? " (rank unknown)" : "[" + dims + "]");
      }
    };
    const size_t nodes = loom_model_num_nodes(model.get());
    fmt::print("{} ({}, {} node{})\n", o.model, loom_model_format(model.get()), nodes,
               nodes == 1 ? "" : "s");
    describe("input", loom::apps::model_inputs(model.get()));
    describe("output", loom::apps::model_outputs(model.get()));
    return kExitOk;
  }

  auto inputs = step(kExitModel, "", [&] { return loom::apps::model_inputs(model.get()); });
  auto outputs = step(kExitModel, "", [&] { return loom::apps::model_outputs(model.get()); });
  refuse_containers(model.get(), inputs, outputs);
  std::vector<InputFeed> feeds = prepare_inputs(o, inputs);
  report.inputs = &feeds;
  for (const auto& out : outputs) report.output_names.emplace_back(out.name);

  loom_session_options_t so{};
  so.struct_size = sizeof(so);
  so.devices = o.devices.c_str();
  so.threads = o.threads;
  so.no_fallback = o.no_fallback;
  so.device_options = o.device_options.c_str();
  so.placements = o.placements.c_str();
  so.cost_model = o.cost_model.c_str();
  // --shape fixes the session's shapes too, so a model with symbolic dimensions compiles at
  // creation, as a static one does.
  std::string overrides;
  for (const auto& [name, dims] : o.shapes) {
    overrides += (overrides.empty() ? "" : ";") + name + "=";
    for (size_t d = 0; d < dims.size(); ++d) overrides += (d ? "x" : "") + std::to_string(dims[d]);
  }
  so.shape_overrides = overrides.c_str();
  so.plan_cache_entries = o.plan_cache;
  so.max_tensor_bytes = o.max_tensor_bytes;
  so.max_run_bytes = o.max_run_bytes;
  so.max_loop_iterations = o.max_loop_iterations;
  so.deadline_ms = o.deadline_ms;
  // --concurrency N: N sessions of the model, --threads (or every core) split between them.
  // Devices that reorder weights share them between sessions (the onednn device does).
  const int concurrency = o.concurrency;
  if (concurrency > 1) {
    const int budget = o.threads > 0
                           ? o.threads
                           : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    so.threads = std::max(1, budget / concurrency);
  }
  report.threads_per_session = so.threads;
  start = Clock::now();
  std::vector<loom::apps::SessionPtr> sessions;
  try {
    step(kExitRuntime, "cannot create a session", [&] {
      Progress progress(concurrency > 1 ? fmt::format("creating {} sessions (compiling for {})",
                                                      concurrency, o.devices)
                                        : "creating the session (compiling for " + o.devices + ")",
                        show_progress);
      for (int i = 0; i < concurrency; ++i)
        sessions.push_back(loom::apps::create_session(runtime.get(), model.get(), so));
      return 0;
    });
  } catch (const AppError& e) {
    // A device refuses an option it does not know ("<device> device: unknown option 'k'
    // (known: ...)"), which the core reports as the device being unavailable: that is a
    // mistake on the command line, --device-option's.
    std::string message = e.what();
    size_t at = message.find(" device: unknown option '");
    if (at == std::string::npos) throw;
    size_t start = message.rfind(": ", at);
    start = start == std::string::npos ? 0 : start + 2;
    throw AppError(kExitUsage, "--device-option: " + message.substr(start));
  }
  loom_session_t* session = sessions.front().get();
  report.session_ms = ms_since(start);
  // The session keeps its own reference to what it runs. Without ours, the weights its
  // devices copied at compile (repacked for their kernels) are freed after the first run:
  // BERT-base's 418 MiB of weights are not held twice. `inputs` and `outputs` (whose names
  // the model owned) are only counted from here on.
  model.reset();
  CancelOnSignal cancel_on_signal(sessions);

  std::vector<std::string> names;
  std::vector<const loom::apps::HostTensor*> tensors;
  for (const auto& feed : feeds) {
    names.push_back(feed.name);
    tensors.push_back(&feed.tensor);
  }
  auto run_on = [&](int i) {
    return step(kExitRuntime, "inference failed", [&] {
      return loom::apps::run_session(sessions[static_cast<size_t>(i)].get(), outputs.size(), names,
                                     tensors);
    });
  };
  auto run_once = [&] { return run_on(0); };
  // The first run apart: it pays for whatever the session could not prepare at creation (a
  // plan for the shapes of a model with symbolic dimensions). It is the first warm-up run, or
  // one more run when there is none.
  start = Clock::now();
  report.outputs = run_once();
  report.first_run_ms = ms_since(start);
  for (int i = 1; i < o.warmup; ++i) run_once();
  // The other sessions warm up as much (at least one run each: their plans are made then).
  for (int i = 1; i < concurrency; ++i)
    for (int w = 0; w < std::max(1, o.warmup); ++w) run_on(i);
  // --profile, --profile-summary: the timed runs only (the warm-up would add the first run's
  // preparation), and with --concurrency only session 0's. Each session keeps its own
  // profile, with its own clock origin and run numbers; session 0's runs are timed under the
  // load of the others, which run unprofiled, as they would without --profile.
  if (profile)
    step(kExitRuntime, "cannot profile", [&] {
      loom::apps::check(loom_session_profile_start(session, 0));
      return 0;
    });
  // --time: timed runs until that many seconds have passed (at least one), else --repeat runs;
  // with --concurrency from every session at once.
  TimedRuns timed = run_timed(concurrency, o.repeat, o.time_s, [&](int i) {
    auto produced = run_on(i);
    if (i == 0) report.outputs = std::move(produced);
  });
  report.latency = summarize_latency(std::move(timed.samples_ms), timed.wall_ms);
  if (profile) {
    loom_session_profile_stop(session);
    if (profile_file) {
      char* trace = nullptr;
      step(kExitRuntime, "--profile", [&] {
        loom::apps::check(loom_session_profile_trace(session, &trace));
        return 0;
      });
      profile_file->commit(loom::apps::take_string(trace));
      report.profile_trace = o.profile_file;
    }
    const ProfileStats stats = collect_profile(session);
    report.profile_runs = stats.runs;
    if (stats.dropped)
      fmt::print(stderr,
                 "infer-run: warning: the profile holds the first {} events; {} later ones were "
                 "dropped (profile fewer runs)\n",
                 stats.events, stats.dropped);
    if (o.profile_summary && o.json) {
      report.profile_json = profile_json(stats, 0, concurrency, report.profile_trace);
    } else if (o.profile_summary) {
      char* text = nullptr;
      step(kExitRuntime, "--profile-summary", [&] {
        loom::apps::check(loom_session_profile_summary(session, &text));
        return 0;
      });
      report.profile_summary = loom::apps::take_string(text);
    }
  }
  report.planned_peak_bytes = loom_session_planned_peak_bytes(session);
  try {
    char* json = nullptr;
    loom::apps::check(loom_session_plan_json(session, &json));
    report.plan_json = loom::apps::take_string(json);
  } catch (const loom::apps::ApiError& e) {
    fmt::print(stderr, "infer-run: warning: no plan JSON: {}\n", e.what());
  }

  if (!o.output_dir.empty()) write_outputs(o, report);
  if (o.explain) {
    char* text = nullptr;
    step(kExitRuntime, "--explain", [&] {
      loom::apps::check(loom_session_explain(session, &text));
      return 0;
    });
    fmt::print(o.json ? stderr : stdout, "{}\n", loom::apps::take_string(text));
  }
  if (!o.dot_file.empty()) {
    char* dot = nullptr;
    step(kExitRuntime, "--dot", [&] {
      loom::apps::check(loom_session_plan_dot(session, &dot));
      return 0;
    });
    std::string text = loom::apps::take_string(dot);
    std::FILE* f = std::fopen(o.dot_file.c_str(), "w");
    bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (f && std::fclose(f) != 0) ok = false;
    if (!ok)
      throw AppError(kExitRuntime, fmt::format("--dot {}: cannot write the file", o.dot_file));
  }
  fmt::print("{}", o.json ? format_json_report(report) : format_text_report(report));
  return kExitOk;
}

}  // namespace
}  // namespace loom::infer_run

int main(int argc, char** argv) {
  using namespace loom::infer_run;
  try {
    return run(argc, argv);
  } catch (const AppError& e) {
    fmt::print(stderr, "infer-run: error: {}\n", e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "infer-run: error: out of memory\n");
    return kExitRuntime;
  } catch (const std::exception& e) {
    fmt::print(stderr, "infer-run: error: {}\n", e.what());
    return kExitRuntime;
  }
}
