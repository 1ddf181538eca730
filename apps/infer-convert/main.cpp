// infer-convert: loads a model with whichever format plugin recognizes it, applies the
// format-independent simplifications and writes it in Loom's native format, so the converted
// model loads by mmap and runs with no further work.
#include <fmt/format.h>
#include <loom/loom.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <loom_apps/api.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// Exit codes, the same as infer-run's.
enum ExitCode : int {
  kExitOk = 0,
  kExitUsage = 2,    // bad command line
  kExitModel = 3,    // the input model cannot be loaded or fails validation
  kExitRuntime = 4,  // simplification or writing failed
  kExitPlugin = 5,   // a plugin named with --plugin failed to load
};

constexpr const char* kFooter = R"(Exit codes:
  0  converted
  2  usage error (bad option, missing file)
  3  the input model cannot be loaded or is invalid
  4  the model cannot be simplified or written
  5  a plugin named with --plugin failed to load

Example: infer-convert resnet50.onnx resnet50.loom)";

class AppError : public std::runtime_error {
 public:
  AppError(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

struct Options {
  std::string input, output;
  std::string format = "loom";
  std::vector<std::string> plugins;
  bool no_default_plugins = false;
  bool no_simplify = false;
  bool quiet = false;
};

std::optional<Options> parse_command_line(int argc, char** argv) {
  Options o;
  CLI::App app{"infer-convert: convert a model to Loom's native format (.loom)", "infer-convert"};
  app.footer(kFooter);
  app.set_version_flag(
      "--version", fmt::format("infer-convert {} (libloom {}, plugin ABI {}.{})", LOOM_VERSION_TEXT,
                               loom_version(), LOOM_ABI_VERSION_MAJOR, LOOM_ABI_VERSION_MINOR));
  app.add_option("input", o.input, "Model to convert (format detected by content)")
      ->type_name("IN")
      ->required();
  app.add_option("output", o.output, "File to write")->type_name("OUT")->required();
  app.add_option("--format,-f", o.format, "Format plugin to write with")->capture_default_str();
  app.add_option("--plugin,-p", o.plugins, "Plugin file or directory, searched first")
      ->type_name("FILE|DIR")
      ->allow_extra_args(false);
  app.add_flag("--no-default-plugins", o.no_default_plugins,
               "Load plugins only from --plugin (ignore LOOM_PLUGIN_PATH, the install directory "
               "and the build tree)");
  app.add_flag("--no-simplify", o.no_simplify,
               "Write the graph as loaded, without the format-independent simplifications");
  app.add_flag("--quiet,-q", o.quiet, "Print nothing on success");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return std::nullopt;
  } catch (const CLI::CallForVersion&) {
    fmt::print("{}\n", app.version());
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    throw AppError(kExitUsage, fmt::format("{} (see --help)", e.what()));
  }
  return o;
}

void log_to_stderr(void*, loom_log_level_t level, const char* source, const char* message) {
  static const char* const kLevels[] = {"debug", "info", "warning", "error"};
  const char* name = level >= LOOM_LOG_DEBUG && level <= LOOM_LOG_ERROR ? kLevels[level] : "log";
  if (source && *source)
    fmt::print(stderr, "loom: {}: {}: {}\n", name, source, message);
  else
    fmt::print(stderr, "loom: {}: {}\n", name, message);
}

template <typename F>
auto step(ExitCode code, F&& f) {
  try {
    return f();
  } catch (const loom::apps::ApiError& e) {
    throw AppError(code, e.what());
  }
}

int run(int argc, char** argv) {
  std::optional<Options> parsed = parse_command_line(argc, argv);
  if (!parsed) return kExitOk;
  const Options& o = *parsed;

  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.input, ec))
    throw AppError(kExitUsage, fmt::format("model '{}' does not exist or is not a file", o.input));
  if (std::filesystem::equivalent(o.input, o.output, ec))
    throw AppError(kExitUsage, "IN and OUT are the same file: write the converted model elsewhere");

  std::vector<const char*> paths;
  for (const auto& p : o.plugins) paths.push_back(p.c_str());
  loom_runtime_options_t ro{};
  ro.struct_size = sizeof ro;
  ro.num_plugin_paths = paths.size();
  ro.plugin_paths = paths.data();
  ro.use_env_path = !o.no_default_plugins;
  ro.use_default_paths = !o.no_default_plugins;
  ro.log_level = LOOM_LOG_WARNING;
  ro.log_fn = log_to_stderr;
  auto runtime = step(kExitRuntime, [&] { return loom::apps::create_runtime(ro); });
  for (const auto& r : loom::apps::plugin_records(runtime.get()))
    if (r.explicit_request && !r.loaded)
      throw AppError(kExitPlugin, fmt::format("plugin {} failed to load: {}", r.path ? r.path : "",
                                              r.error && *r.error ? r.error : "unknown reason"));

  auto start = std::chrono::steady_clock::now();
  auto model = step(kExitModel, [&] { return loom::apps::load_model(runtime.get(), o.input); });
  size_t nodes_before = loom_model_num_nodes(model.get());
  loom_simplify_report_t report{};
  report.struct_size = sizeof report;
  if (!o.no_simplify)
    step(kExitRuntime,
         [&] { loom::apps::check(loom_model_simplify(runtime.get(), model.get(), &report)); });
  step(kExitRuntime, [&] {
    loom::apps::check(
        loom_model_save(runtime.get(), model.get(), o.format.c_str(), o.output.c_str()));
  });
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!o.quiet) {
    fmt::print("{} ({}) -> {} ({}): {} nodes -> {}, {:.0f} ms\n", o.input,
               loom_model_format(model.get()), o.output, o.format, nodes_before,
               loom_model_num_nodes(model.get()), ms);
    if (!o.no_simplify)
      fmt::print(
          "simplified: {} Constant nodes folded into initializers; removed {} Identity, {} "
          "Dropout, {} dead nodes, {} unused initializers\n",
          report.constant_nodes, report.identities, report.dropouts, report.dead_nodes,
          report.unused_constants);
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const AppError& e) {
    fmt::print(stderr, "infer-convert: error: {}\n", e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "infer-convert: error: out of memory\n");
    return kExitRuntime;
  } catch (const std::exception& e) {
    fmt::print(stderr, "infer-convert: error: {}\n", e.what());
    return kExitRuntime;
  }
}
