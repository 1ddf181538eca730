// The runtime the run-time fuzzers share (fuzz_run_cpu, fuzz_image_decoder): the ONNX format and
// cpu device plugins of this build only (no environment or default paths), errors only in the
// log and nothing printed, newer opsets allowed. Created once; a plugin that fails to load ends
// the process, since every case would then fail for the same uninteresting reason.
#pragma once

#include <loom/loom.h>

#include <cstdio>
#include <cstdlib>

namespace loom_fuzz {

inline loom_runtime_t* fuzz_runtime(const char* who) {
  static loom_runtime_t* runtime = [who] {
    const char* paths[] = {LOOM_FUZZ_ONNX_PLUGIN, LOOM_FUZZ_CPU_PLUGIN};
    loom_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.num_plugin_paths = 2;
    o.plugin_paths = paths;
    o.use_env_path = false;
    o.use_default_paths = false;
    o.log_level = LOOM_LOG_ERROR;
    o.log_fn = [](void*, loom_log_level_t, const char*, const char*) {};
    o.allow_newer_opsets = -1;
    loom_runtime_t* r = nullptr;
    if (loom_status_t* s = loom_runtime_create(&o, &r)) {
      std::fprintf(stderr, "%s: runtime: %s\n", who, loom_status_message(s));
      std::abort();
    }
    for (size_t i = 0; i < loom_runtime_num_plugins(r); ++i) {
      loom_plugin_record_t rec{};
      rec.struct_size = sizeof rec;
      if (loom_status_t* s = loom_runtime_plugin(r, i, &rec)) {
        loom_status_free(s);
        continue;
      }
      if (!rec.loaded) {
        std::fprintf(stderr, "%s: plugin %s did not load: %s\n", who, rec.path, rec.error);
        std::abort();
      }
    }
    return r;
  }();
  return runtime;
}

// Session options of a fuzz case: the cpu device, 1 thread, 64 MiB per tensor, 256 MiB per run,
// 10,000 Loop iterations, a 2 s deadline (docs/limits.md, "The run-time fuzzer").
inline loom_session_options_t fuzz_session_options() {
  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = "cpu";
  so.threads = 1;
  so.max_tensor_bytes = int64_t{64} << 20;
  so.max_run_bytes = int64_t{256} << 20;
  so.max_loop_iterations = 10000;
  so.deadline_ms = 2000;
  return so;
}

}  // namespace loom_fuzz
