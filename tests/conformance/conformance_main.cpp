// loom-conformance: runs the ONNX backend test data against a device set through the public C
// API and checks the result against an expected-failures file.
#include <fmt/format.h>
#include <loom/loom.h>

#include <CLI/CLI.hpp>
#include <loom_apps/api.hpp>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "child_pool.hpp"
#include "expected_failures.hpp"
#include "test_case.hpp"

namespace loom::conformance {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailures = 1;  // unexpected failures or unexpected passes
constexpr int kExitUsage = 2;
constexpr int kExitPlugin = 5;

#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kDefaultMemoryLimitMb = 0;  // ASan reserves terabytes of address space
#else
constexpr size_t kDefaultMemoryLimitMb = 8192;
#endif

struct Options {
  std::vector<std::string> roots = {"/usr/share/libonnx-testdata/data/node",
                                    "/usr/share/libonnx-testdata/data/pytorch-converted",
                                    "/usr/share/libonnx-testdata/data/pytorch-operator",
                                    "/usr/share/libonnx-testdata/data/simple"};
  RunSettings run;
  std::vector<std::string> plugins;
  std::string filter;
  std::string expected_failures;
  std::string write_failures;
  size_t jobs = std::max(1u, std::thread::hardware_concurrency());
  int timeout_s = 60;
  size_t memory_limit_mb = kDefaultMemoryLimitMb;
  bool no_default_plugins = false;
  bool verbose = false;
};

// An expected-failures entry whose reason starts with "nondeterministic:" accepts both
// outcomes: the test's expected values come from a random generator Loom cannot reproduce.
bool is_nondeterministic(const std::string& reason) {
  return reason.rfind("nondeterministic:", 0) == 0;
}

struct Totals {
  size_t passed = 0, failed = 0, skipped = 0;
  size_t expected = 0, unexpected = 0, xpass = 0;
};

int run(int argc, char** argv) {
  Options o;
  CLI::App app{"loom-conformance: the ONNX backend test data against Loom devices",
               "loom-conformance"};
  app.footer(
      "\nExit codes: 0 all results as expected, 1 unexpected failures or passes, 2 usage "
      "error, 5 a --plugin failed to load.");
  app.add_option("roots", o.roots, "Test roots (directories of test case directories)")
      ->capture_default_str();
  app.add_option("--devices,-d", o.run.devices, "Device priority list")->capture_default_str();
  auto* no_fallback =
      app.add_flag("--no-fallback", o.run.no_fallback, "No fallback to the cpu device");
  app.add_flag("--skip-unclaimed", o.run.skip_unclaimed,
               "With --no-fallback: a test with a node no listed device supports is skipped, "
               "not failed")
      ->needs(no_fallback);
  app.add_option("--plugin,-p", o.plugins, "Plugin file or directory (repeatable)");
  app.add_flag("--no-default-plugins", o.no_default_plugins,
               "Load plugins only from --plugin (ignore LOOM_PLUGIN_PATH, the install "
               "directory and the build tree)");
  app.add_option("--threads", o.run.threads, "Threads per session")->capture_default_str();
  app.add_option("--expected-failures", o.expected_failures,
                 "File of '<suite>/<test>  # reason' lines");
  app.add_option("--write-failures", o.write_failures,
                 "Write this run's failures in the expected-failures format");
  app.add_option("--filter", o.filter, "Only tests whose <suite>/<test> matches this regex");
  app.add_option("--jobs,-j", o.jobs, "Test cases run in parallel")->capture_default_str();
  app.add_option("--timeout", o.timeout_s, "Seconds per test case")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--memory-limit-mb", o.memory_limit_mb,
                 "Address-space limit per test case (0: none)")
      ->capture_default_str();
  app.add_flag("--verbose,-v", o.verbose, "Print passes, skips and expected failures too");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  std::map<std::string, std::string> expected;
  std::vector<TestCase> cases;
  std::regex filter;
  try {
    if (!o.expected_failures.empty()) expected = read_expected_failures(o.expected_failures);
    cases = discover_test_cases(o.roots);
    filter = std::regex(o.filter.empty() ? ".*" : o.filter);
  } catch (const std::exception& e) {
    fmt::print(stderr, "loom-conformance: error: {}\n", e.what());
    return kExitUsage;
  }
  // Entries for tests that no longer exist would hide nothing but rot: say so (not an error,
  // since a run over fewer roots legitimately misses them).
  std::set<std::string> known;
  for (const auto& t : cases) known.insert(t.id());
  for (const auto& [id, reason] : expected)
    if (!known.count(id))
      fmt::print(stderr, "loom-conformance: warning: {} is listed in {} but not under the roots\n",
                 id, o.expected_failures);
  std::erase_if(cases, [&](const TestCase& t) { return !std::regex_search(t.id(), filter); });

  // Plugins load once, in the parent; every child inherits the loaded runtime.
  std::vector<const char*> paths;
  for (const auto& p : o.plugins) paths.push_back(p.c_str());
  loom_runtime_options_t ro{};
  ro.struct_size = sizeof(ro);
  ro.num_plugin_paths = paths.size();
  ro.plugin_paths = paths.data();
  ro.use_env_path = !o.no_default_plugins;
  ro.use_default_paths = o.plugins.empty() && !o.no_default_plugins;
  ro.log_level = o.verbose ? LOOM_LOG_WARNING : LOOM_LOG_ERROR;
  loom::apps::RuntimePtr runtime;
  try {
    runtime = loom::apps::create_runtime(ro);
    for (const auto& r : loom::apps::plugin_records(runtime.get())) {
      if (r.explicit_request && !r.loaded) {
        fmt::print(stderr, "loom-conformance: error: plugin {} failed to load: {}\n", r.path,
                   r.error);
        return kExitPlugin;
      }
    }
  } catch (const loom::apps::ApiError& e) {
    fmt::print(stderr, "loom-conformance: error: {}\n", e.what());
    return kExitPlugin;
  }

  PoolSettings pool;
  pool.jobs = o.jobs;
  pool.timeout = std::chrono::seconds(o.timeout_s);
  pool.memory_limit_mb = o.memory_limit_mb;
  pool.quiet_children = !o.verbose;
  Totals totals;
  std::map<std::string, std::string> failures;
  run_in_children(
      cases.size(), pool, [&](size_t i) { return run_test_case(runtime.get(), cases[i], o.run); },
      [&](size_t i, const CaseResult& r) {
        std::string id = cases[i].id();
        auto entry = expected.find(id);
        bool listed = entry != expected.end();
        // Ops that draw random numbers (Bernoulli...) cannot reproduce NumPy's generator: their
        // entries may pass or fail, and keep their reason when the file is rewritten.
        bool random = listed && is_nondeterministic(entry->second);
        if (random) failures[id] = entry->second;
        switch (r.outcome) {
          case Outcome::kSkip:
            ++totals.skipped;
            if (o.verbose) fmt::print("SKIP {}: {}\n", id, r.reason);
            break;
          case Outcome::kPass:
            ++totals.passed;
            if (listed && !random) {
              ++totals.xpass;
              fmt::print("XPASS {}: remove it from {}\n", id, o.expected_failures);
            } else if (o.verbose) {
              fmt::print("PASS {}{}\n", id, random ? " (nondeterministic)" : "");
            }
            break;
          case Outcome::kFail:
            ++totals.failed;
            if (!random) failures[id] = r.reason;
            if (listed) {
              ++totals.expected;
              if (o.verbose) fmt::print("XFAIL {}: {}\n", id, r.reason);
            } else {
              ++totals.unexpected;
              fmt::print("FAIL {}: {}\n", id, r.reason);
            }
            break;
        }
        std::fflush(stdout);
      });

  if (!o.write_failures.empty()) {
    try {
      write_expected_failures(
          o.write_failures, failures,
          fmt::format("Expected failures of the ONNX backend tests on devices \"{}\".\n"
                      "Generated by loom-conformance --write-failures; review every reason.\n"
                      "Format: <suite>/<test>  # reason   (a reason starting 'nondeterministic:' "
                      "accepts a pass too)",
                      o.run.devices));
    } catch (const std::exception& e) {
      fmt::print(stderr, "loom-conformance: error: {}\n", e.what());
      return kExitUsage;
    }
  }
  if (!expected.empty())
    fmt::print("{} expected failures, {} unexpected failures, {} unexpected passes\n",
               totals.expected, totals.unexpected, totals.xpass);
  fmt::print("{} passed, {} failed, {} skipped\n", totals.passed, totals.failed, totals.skipped);
  return totals.unexpected == 0 && totals.xpass == 0 ? kExitOk : kExitFailures;
}

}  // namespace
}  // namespace loom::conformance

int main(int argc, char** argv) {
  try {
    return loom::conformance::run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "loom-conformance: error: {}\n", e.what());
    return 1;
  }
}
