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

}  // namespace loom_fuzz
