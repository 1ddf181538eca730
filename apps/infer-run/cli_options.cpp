#include "cli_options.hpp"

#include <fmt/format.h>
#include <loom/loom.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>

#include "app_error.hpp"

namespace loom::infer_run {
namespace {

constexpr const char* kFooter = R"(
Without --input, every input is generated from --seed: floats uniform in [0, 1), integers
in [0, 10), bools 0/1, strings of random letters. Dynamic dimensions need --shape. When some
inputs are given with --input, the others are generated only with --random-inputs.

Exit codes:
  0  success
  2  usage error: bad option or value, unknown input name, unreadable or mismatching input file
  3  model error: the model file is missing, malformed or fails validation
  4  runtime error: session creation (e.g. no device for a node with --no-fallback),
     inference, or writing --output failed
  5  plugin error: a plugin named with --plugin failed to load (its reason is printed)
Every error is one line on stderr: "infer-run: error: ...".)";

std::pair<std::string, std::string> split_assignment(const std::string& text,
                                                     const std::string& option) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw AppError(kExitUsage, fmt::format("{} expects NAME=VALUE, got '{}'", option, text));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

loom_log_level_t parse_log_level(const std::string& text) {
  if (text == "debug") return LOOM_LOG_DEBUG;
  if (text == "info") return LOOM_LOG_INFO;
  if (text == "warning") return LOOM_LOG_WARNING;
  if (text == "error") return LOOM_LOG_ERROR;
  throw AppError(kExitUsage,
                 fmt::format("--log-level must be debug, info, warning or error, not '{}'", text));
}

// "a, b,c" -> "a,b,c"; refuses empty names.
std::string normalize_device_list(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    std::string name = text.substr(start, comma == std::string::npos ? comma : comma - start);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (name.empty())
      throw AppError(kExitUsage, fmt::format("--device: empty device name in '{}'", text));
    out += (out.empty() ? "" : ",") + name;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// Numeric bounds with a readable message: CLI11's NonNegativeNumber and PositiveNumber print
// the largest double in full (309 digits) as the upper bound.
CLI::Validator at_least(double min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value))
          return fmt::format("'{}' is not a number", text);
        if (value < min) return fmt::format("must be >= {}, not {}", min, text);
        return {};
      },
      fmt::format(">= {}", min));
}

CLI::Validator between(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value))
          return fmt::format("'{}' is not a number", text);
        if (value < min || value > max)
          return fmt::format("must be between {} and {}, not {}", min, max, text);
        return {};
      },
      fmt::format("{} to {}", min, max));
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "unknown option --repet; did you mean --repeat?" for the first argument that looks like an
// option and is none of the app's; empty when no argument looks like an option.
std::string unknown_option_message(const CLI::App& app, const std::vector<std::string>& extras) {
  std::vector<std::string> known;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) known.push_back("--" + name);
    for (const auto& name : option->get_snames()) known.push_back("-" + name);
  }
  for (const std::string& arg : extras) {
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") continue;
    std::string flag = arg.substr(0, arg.find('='));
    std::string best;
    size_t best_distance = std::string::npos;
    for (const auto& name : known) {
      size_t d = edit_distance(flag, name);
      if (d < best_distance) best_distance = d, best = name;
    }
    std::string message = fmt::format("unknown option '{}'", flag);
    if (flag.rfind("--", 0) == 0 && best_distance <= std::max<size_t>(2, flag.size() / 4))
      message += fmt::format("; did you mean '{}'?", best);
    return message;
  }
  return {};
}

}  // namespace

std::vector<int64_t> parse_shape(const std::string& text, const std::string& what) {
  std::vector<int64_t> dims;
  if (text.empty()) return dims;
  size_t start = 0;
  while (true) {
    size_t x = text.find('x', start);
    std::string part = text.substr(start, x == std::string::npos ? x : x - start);
    int64_t value = -1;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || value < 0)
      throw AppError(kExitUsage, fmt::format("{}: bad shape '{}' (expected e.g. 1x3x224x224 with "
                                             "non-negative integers)",
                                             what, text));
    dims.push_back(value);
    if (dims.size() > LOOM_MAX_RANK)
      throw AppError(kExitUsage, fmt::format("{}: rank above {}", what, LOOM_MAX_RANK));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return dims;
}

std::optional<Options> parse_command_line(int argc, char** argv) {
  Options o;
  CLI::App app{"infer-run: run a neural-network model with Loom", "infer-run"};
  app.footer(kFooter);
  app.set_version_flag("--version",
                       fmt::format("infer-run {} (libloom {}, plugin ABI {}.{})", LOOM_VERSION_TEXT,
                                   loom_version(), LOOM_ABI_VERSION_MAJOR, LOOM_ABI_VERSION_MINOR));
  std::vector<std::string> inputs, shapes, device_options, placements, costs;
  std::string log_level = "warning";
  std::string precision = "f32";
  bool verbose = false;

  app.add_option("model,--model", o.model, "Model file (format detected by content)")
      ->type_name("FILE");
  app.add_option("--input,-i", inputs, "Input tensor NAME=FILE (.npy or ONNX TensorProto .pb)")
      ->type_name("NAME=FILE")
      ->allow_extra_args(false);  // one value per flag: a positional model is never swallowed
  app.add_option("--shape", shapes,
                 "Shape of input NAME, NAME=1x3x224x224 ('NAME=' for a scalar): a generated "
                 "input takes it, and the session fixes the input's symbolic dimensions to it "
                 "and compiles at creation")
      ->type_name("NAME=DIMS")
      ->allow_extra_args(false);
  app.add_option("--seed", o.seed, "Seed of the generated inputs (0 to 2^64-1)")
      ->check(at_least(0))
      ->capture_default_str();
  app.add_flag("--random-inputs", o.random_inputs,
               "Generate the inputs not given with --input (needed when some are given)");
  app.add_option("--output,-o", o.output_dir, "Write each output to DIR/<name>.npy")
      ->type_name("DIR");
  app.add_option("--device,-d", o.devices, "Devices in priority order, e.g. onednn,cpu")
      ->capture_default_str();
  app.add_flag("--no-fallback", o.no_fallback,
               "Fail (listing the nodes) instead of falling back to the cpu device");
  app.add_option("--plugin,-p", o.plugins, "Plugin file or directory, searched first")
      ->type_name("FILE|DIR")
      ->allow_extra_args(false);
  app.add_flag("--no-default-plugins", o.no_default_plugins,
               "Load plugins only from --plugin (ignore LOOM_PLUGIN_PATH, the install directory "
               "and the build tree)");
  app.add_flag("--allow-newer-opsets", o.allow_newer_opsets,
               "Accept a model that imports an opset newer than this Loom knows, with a warning "
               "(it is validated and run with the newest schemas known)");
  app.add_flag("--isolate-plugin-probe", o.isolate_plugin_probe,
               "Load each plugin in a forked child first: one that crashes, exits or hangs (10 s) "
               "while loading is named and skipped instead of ending infer-run");
  app.add_option("--device-option", device_options, "Option for the devices, KEY=VALUE")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  app.add_option("--precision", precision,
                 "Arithmetic precision the devices may use: f32, or bf16/f16 where a device "
                 "supports it (passed to every device as the option precision=VALUE)")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))
      ->capture_default_str();
  app.add_option("--place", placements,
                 "Pin the nodes whose name or op type matches PATTERN (* and ? wildcards) to "
                 "DEVICE, one of --device's (repeatable; later ones win)")
      ->type_name("PATTERN=DEVICE")
      ->allow_extra_args(false);
  app.add_option("--cost", costs,
                 "Override the scheduler's cost model for a device (or * for all); KEY is "
                 "gflops, transfer_gbps, transfer_latency_us or launch_us (repeatable)")
      ->type_name("DEVICE.KEY=VALUE")
      ->allow_extra_args(false);
  app.add_option("--threads,-t", o.threads,
                 "Threads per device (0: all cores; at most the larger of 64 and 4 per core)")
      ->check(at_least(0))
      ->capture_default_str();
  app.add_option("--plan-cache", o.plan_cache,
                 "Plans kept for distinct input shapes of a model with symbolic dimensions, "
                 "least recently used evicted first (0: the default, 16)")
      ->check(between(0, 1 << 20))
      ->capture_default_str();
  // Limits of every run (docs/limits.md): a model hostile at run time ends with an error that
  // names the limit instead of exhausting the machine. Sizes take K, M, G suffixes (1024-based).
  app.add_option("--max-tensor-bytes", o.max_tensor_bytes,
                 "Most bytes one tensor made while running may take (0: the default, the "
                 "machine's physical memory)")
      ->transform(CLI::AsSizeValue(false))
      ->check(at_least(0))
      ->type_name("SIZE");
  app.add_option("--max-run-bytes", o.max_run_bytes,
                 "Most bytes a device's run-time allocations may hold at once in one run (0: the "
                 "default, the machine's physical memory)")
      ->transform(CLI::AsSizeValue(false))
      ->check(at_least(0))
      ->type_name("SIZE");
  app.add_option("--max-loop-iterations", o.max_loop_iterations,
                 "Most iterations one Loop may run, whatever its trip count and condition say "
                 "(0: the default, 10000000)")
      ->check(at_least(0))
      ->capture_default_str();
  app.add_option("--deadline", o.deadline_ms,
                 "End a run that takes longer than MS milliseconds (0: no deadline); Ctrl-C "
                 "(SIGINT) and SIGTERM also end the run in progress")
      ->check(at_least(0))
      ->type_name("MS");
  app.add_option("--warmup", o.warmup,
                 "Runs before measuring (the first is reported apart as the first run)")
      ->check(at_least(0))
      ->capture_default_str();
  CLI::Option* repeat = app.add_option("--repeat,-r", o.repeat, "Timed runs")
                            ->check(at_least(1))
                            ->capture_default_str();
  app.add_option("--time", o.time_s,
                 "Timed runs for this many seconds instead of a count (at least one run); the "
                 "report gives the throughput beside the latencies")
      ->check(between(0.001, 1e6))
      ->type_name("SECONDS")
      ->excludes(repeat);
  app.add_option("--concurrency", o.concurrency,
                 "Sessions of the model running at once, each from a thread of its own, for "
                 "throughput; --threads (or every core) is split between them")
      ->check(between(1, kMaxConcurrency))
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--profile", o.profile_file,
                 "Profile the timed runs (not the warm-up) and write them to FILE as a Chrome "
                 "trace, for Perfetto or chrome://tracing (written whole or not at all); with "
                 "--concurrency, session 0's runs (docs/profiling.md)")
      ->type_name("FILE.json");
  app.add_flag("--profile-summary", o.profile_summary,
               "Profile the timed runs and print their time per op type and per node after the "
               "results (a \"profile\" object with --json)");
  app.add_flag("--json", o.json, "Print one JSON object on stdout instead of text");
  app.add_option("--json-max-values", o.json_max_values,
                 "Leave out the values of outputs with more elements than this")
      ->check(between(0, 4294967296.0))
      ->capture_default_str();
  app.add_flag("--explain", o.explain, "Print the execution plan (stderr with --json)");
  app.add_flag("--describe", o.describe,
               "Print the model's inputs and outputs (name, type, shape) and exit without "
               "creating a session or running (the report's \"model\" object with --json)");
  app.add_option("--dot", o.dot_file,
                 "Write the plan as a Graphviz digraph to FILE (subgraphs colored by device)")
      ->type_name("FILE");
  app.add_flag("--list-plugins", o.list_plugins, "List the plugins found, loaded or skipped");
  app.add_flag("--list-devices", o.list_devices, "List the device instances of loaded plugins");
  app.add_option("--log-level", log_level, "debug, info, warning or error")->capture_default_str();
  app.add_flag("--verbose,-v", verbose, "Same as --log-level info");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return std::nullopt;
  } catch (const CLI::CallForAllHelp&) {
    fmt::print("{}", app.help("", CLI::AppFormatMode::All));
    return std::nullopt;
  } catch (const CLI::CallForVersion&) {
    fmt::print("{}\n", app.version());
    return std::nullopt;
  } catch (const CLI::ExtrasError& e) {
    std::string message = unknown_option_message(app, app.remaining());
    throw AppError(kExitUsage,
                   fmt::format("{} (see --help)", message.empty() ? e.what() : message));
  } catch (const CLI::ParseError& e) {
    throw AppError(kExitUsage, fmt::format("{} (see --help)", e.what()));
  }

  for (const auto& text : inputs) o.inputs.push_back(split_assignment(text, "--input"));
  for (const auto& text : shapes) {
    auto [name, dims] = split_assignment(text, "--shape");
    o.shapes.emplace_back(name, parse_shape(dims, "--shape " + name));
  }
  for (const auto& text : device_options) {
    split_assignment(text, "--device-option");  // validates the form
    if (text.find(';') != std::string::npos)
      throw AppError(kExitUsage, fmt::format("--device-option '{}' must not contain ';'", text));
    o.device_options += (o.device_options.empty() ? "" : ";") + text;
  }
  for (const std::string& text : placements) {
    auto [pattern, device] = split_assignment(text, "--place");
    if (device.empty() || text.find(';') != std::string::npos)
      throw AppError(kExitUsage,
                     fmt::format("--place expects PATTERN=DEVICE without ';', got '{}'", text));
    o.placements += (o.placements.empty() ? "" : ";") + text;
  }
  for (const std::string& text : costs) {
    auto [key, value] = split_assignment(text, "--cost");
    if (key.find('.') == std::string::npos || value.empty() || text.find(';') != std::string::npos)
      throw AppError(
          kExitUsage,
          fmt::format("--cost expects DEVICE.KEY=VALUE, e.g. vulkan.gflops=2000, got '{}'", text));
    o.cost_model += (o.cost_model.empty() ? "" : ";") + text;
  }
  // f32 is every device's default, so it is passed only when asked for something else.
  if (precision != "f32")
    o.device_options += (o.device_options.empty() ? "" : ";") + ("precision=" + precision);
  // The session's bound, checked before anything starts a thread: every device starts a pool
  // of this many.
  const int32_t max_threads = loom_max_threads();
  if (o.threads > max_threads)
    throw AppError(kExitUsage,
                   fmt::format("--threads {} is more than {}, the most a session takes (the "
                               "larger of 64 and 4 per core of this machine; 0: one per core)",
                               o.threads, max_threads));
  o.devices = normalize_device_list(o.devices);
  o.log_level = verbose ? LOOM_LOG_INFO : parse_log_level(log_level);
  if (o.model.empty() && !o.list_plugins && !o.list_devices)
    throw AppError(kExitUsage, "no model given: use --model FILE (see --help)");
  return o;
}

}  // namespace loom::infer_run
