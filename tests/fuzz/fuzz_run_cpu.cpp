// libFuzzer target: models hostile at run time (docs/limits.md, "The run-time fuzzer").
// This file runs the cases; fuzz_model.{hpp,cpp} and fuzz_templates.cpp build them.
//
// The input bytes are decoded (structure-aware, FuzzedDataProvider) into a small ONNX model: one
// node from a table of op templates (Reshape, Expand, Resize, Loop, Conv...), sometimes followed
// by a second node reading its output, whose shapes, attributes and input data come from the
// bytes: small extents mostly, but also zero, negative, huge and int64-wrapping ones, and int64
// tensors that become shapes. The model goes through libloom's public C API exactly as an
// application's would: written to a memfd, loaded by the ONNX format plugin, a session on the
// cpu device under tight limits (1 thread, 64 MiB per tensor, 256 MiB per run, 10,000 Loop
// iterations, a 2 s deadline), one run (sometimes a second of the same inputs, which reuses the
// plan and must end the same way).
//
// Oracle: no crash, ASan report, leak, uncaught exception or hang (libFuzzer's -timeout); every
// failure status carries a non-empty one-line message; a successful run's outputs hold exactly
// the bytes their shapes say and agree with the shapes the model declares (inferred at load).
// A violation ends in __builtin_trap() after printing what was wrong.
//
// Environment:
//   LOOM_FUZZ_VERBOSE=1       print each case's template and outcome on stderr
//   LOOM_FUZZ_MAKE_SEEDS=DIR  write a seed corpus (inputs that reach every template and run)
//                             into DIR and exit (tests/fuzz/corpus_run_cpu was made this way)
#include <fuzzer/FuzzedDataProvider.h>
#include <loom/loom.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fuzz_model.hpp"
#include "fuzz_runtime.hpp"

namespace {

using namespace loom_fuzz;

bool verbose = false;

[[noreturn]] void violation(const std::string& what) {
  std::fprintf(stderr, "fuzz_run_cpu: oracle violated: %s\n", what.c_str());
  std::fflush(stderr);
  __builtin_trap();
}

// ---- running --------------------------------------------------------------------------------

loom_runtime_t* the_runtime() {
  return fuzz_runtime("fuzz_run_cpu");
}

// Checks a failure's message and frees it; returns its code.
loom_status_code_t check_status(loom_status_t* s, const char* what) {
  if (!s) return LOOM_OK;
  loom_status_code_t code = loom_status_code(s);
  const char* m = loom_status_message(s);
  std::string msg = m ? m : "";
  loom_status_free(s);
  if (verbose) std::fprintf(stderr, "  %s: [%d] %s\n", what, static_cast<int>(code), msg.c_str());
  if (code == LOOM_OK) violation(std::string(what) + ": a status with code OK");
  if (msg.empty()) violation(std::string(what) + ": a failure with an empty message");
  if (msg.find('\n') != std::string::npos || msg.find('\r') != std::string::npos)
    violation(std::string(what) + ": a message of several lines: " + msg);
  if (code == LOOM_ERROR_INTERNAL) violation(std::string(what) + ": an internal error: " + msg);
  return code;
}

struct Memfd {
  int fd = -1;
  ~Memfd() {
    if (fd >= 0) ::close(fd);
  }
};

// The outputs of a successful run against their shapes and the model's declarations.
void check_outputs(loom_model_t* model, std::vector<loom_host_tensor_t>& outs) {
  for (size_t i = 0; i < outs.size(); ++i) {
    const loom_host_tensor_t& t = outs[i];
    std::string what = "output " + std::to_string(i);
    if (t.rank < 0 || t.rank > LOOM_MAX_RANK) violation(what + ": rank " + std::to_string(t.rank));
    unsigned __int128 n = 1;
    for (int32_t k = 0; k < t.rank; ++k) {
      if (t.dims[k] < 0) violation(what + ": a negative extent");
      n *= static_cast<unsigned __int128>(t.dims[k]);
      if (n > (static_cast<unsigned __int128>(1) << 62)) violation(what + ": an absurd shape");
    }
    size_t es = loom_dtype_size(t.dtype);
    if (t.dtype != LOOM_DTYPE_STRING && n * es != t.byte_size)
      violation(what + ": " + std::to_string(t.byte_size) + " bytes for " +
                std::to_string(static_cast<uint64_t>(n)) + " elements of " +
                loom_dtype_name(t.dtype));
    if (t.byte_size > 0 && !t.data) violation(what + ": no data");
    // Touch every byte: ASan sees a buffer shorter than it claims.
    volatile uint8_t sink = 0;
    for (size_t b = 0; b < t.byte_size; b += 64)
      sink = sink ^ static_cast<const uint8_t*>(t.data)[b];
    if (t.byte_size) sink = sink ^ static_cast<const uint8_t*>(t.data)[t.byte_size - 1];
    (void)sink;
    loom_io_info_t info{};
    info.struct_size = sizeof info;
    if (loom_status_t* s = loom_model_output(model, i, &info)) {
      check_status(s, "loom_model_output");
      continue;
    }
    if (info.dtype != LOOM_DTYPE_UNDEFINED && info.dtype != t.dtype)
      violation(what + ": dtype " + loom_dtype_name(t.dtype) + ", declared " +
                loom_dtype_name(info.dtype));
    if (info.rank < 0) continue;
    if (info.rank != t.rank)
      violation(what + ": rank " + std::to_string(t.rank) + ", declared " +
                std::to_string(info.rank));
    for (int32_t k = 0; k < t.rank; ++k)
      if (info.dims[k] >= 0 && info.dims[k] != t.dims[k])
        violation(what + ": extent " + std::to_string(k) + " is " + std::to_string(t.dims[k]) +
                  ", declared " + std::to_string(info.dims[k]));
  }
}

// Builds and runs one case; returns whether the run succeeded.
bool run_case(const uint8_t* bytes, size_t size) {
  FDP f(bytes, size);
  Case c;
  static const int opsets[] = {17, 13, 18, 19};
  c.opset = f.PickValueInArray(opsets);
  c.model.set_ir_version(8);
  auto* op = c.model.add_opset_import();
  op->set_domain("");
  op->set_version(c.opset);
  c.g = c.model.mutable_graph();
  c.g->set_name("fuzz");
  const Template& tpl = kTemplates[f.ConsumeIntegralInRange<size_t>(0, kNumTemplates - 1)];
  Outputs outs = tpl.make(c, f);
  maybe_follow(c, f, outs);
  for (const auto& o : outs) c.g->add_output()->set_name(o);

  std::string wire;
  if (!c.model.SerializeToString(&wire)) return false;
  if (verbose)
    std::fprintf(stderr, "case: %s, opset %d, %zu feeds, %zu bytes\n", tpl.name, c.opset,
                 c.feeds.size(), wire.size());

  Memfd file;
  file.fd = memfd_create("fuzz_run_cpu.onnx", MFD_CLOEXEC);
  if (file.fd < 0) std::abort();
  for (size_t off = 0; off < wire.size();) {
    ssize_t w = ::write(file.fd, wire.data() + off, wire.size() - off);
    if (w <= 0) std::abort();
    off += static_cast<size_t>(w);
  }
  std::string path = "/proc/self/fd/" + std::to_string(file.fd);

  loom_runtime_t* runtime = the_runtime();
  loom_model_t* model = nullptr;
  if (check_status(loom_model_load(runtime, path.c_str(), &model), "load")) return false;

  const loom_session_options_t so = fuzz_session_options();
  loom_session_t* session = nullptr;
  loom_status_t* s = loom_session_create(runtime, model, &so, &session);
  if (check_status(s, "session")) {
    loom_model_free(model);
    return false;
  }

  std::vector<const char*> names;
  std::vector<loom_host_tensor_t> inputs;
  static uint8_t empty[8];
  for (const Feed& feed : c.feeds) {
    loom_host_tensor_t t{};
    t.struct_size = sizeof t;
    t.dtype = feed.dtype;
    t.rank = static_cast<int32_t>(feed.dims.size());
    for (size_t k = 0; k < feed.dims.size(); ++k) t.dims[k] = feed.dims[k];
    t.data = feed.bytes.empty() ? empty : const_cast<uint8_t*>(feed.bytes.data());
    t.byte_size = feed.bytes.size();
    names.push_back(feed.name.c_str());
    inputs.push_back(t);
  }
  size_t num_outputs = loom_model_num_outputs(model);
  bool ok = false;
  // Two runs: the second reuses the plan the first made (and must do the same again).
  for (int run = 0; run < 2; ++run) {
    std::vector<loom_host_tensor_t> outputs(num_outputs);
    for (auto& o : outputs) o.struct_size = sizeof o;
    s = loom_session_run(session, inputs.size(), names.data(), inputs.data(), outputs.size(),
                         outputs.data());
    bool this_ok = check_status(s, "run") == LOOM_OK;
    if (this_ok) check_outputs(model, outputs);
    for (auto& o : outputs) loom_host_tensor_release(&o);
    if (run == 1 && this_ok != ok) violation("a second run of the same inputs ended otherwise");
    ok = this_ok;
    if (!coin(f, 4)) break;
  }
  if (verbose) std::fprintf(stderr, "  -> %s\n", ok ? "ran" : "refused");
  loom_session_destroy(session);
  loom_model_free(model);
  return ok;
}

// Writes seeds: for every template, inputs whose choices are the bytes' most common ones, a
// few of them that run and one that is refused, so that the fuzzer starts from every template.
void make_seeds(const char* dir) {
  std::filesystem::create_directories(dir);
  std::mt19937 rng(20240530);
  for (size_t t = 0; t < kNumTemplates; ++t) {
    int ran = 0, refused = 0;
    for (int attempt = 0; attempt < 400 && (ran < 2 || refused < 1); ++attempt) {
      // Bytes below 150 keep every value small and sane; a few larger ones vary the choices.
      std::vector<uint8_t> bytes(static_cast<size_t>(48 + rng() % 160));
      for (auto& b : bytes) b = static_cast<uint8_t>(rng() % 8 == 0 ? rng() % 256 : rng() % 100);
      // FuzzedDataProvider takes integers from the end: the opset, then the template.
      bytes.push_back(static_cast<uint8_t>(t));
      bytes.push_back(static_cast<uint8_t>(attempt % 4));
      bool ok = run_case(bytes.data(), bytes.size());
      if ((ok && ran >= 2) || (!ok && refused >= 1)) continue;
      (ok ? ran : refused)++;
      std::string name = std::string(dir) + "/" + kTemplates[t].name +
                         (ok ? "-ran-" : "-refused-") + std::to_string(ok ? ran : refused);
      std::ofstream(name, std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
    }
    std::fprintf(stderr, "%s: %d ran, %d refused\n", kTemplates[t].name, ran, refused);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  verbose = std::getenv("LOOM_FUZZ_VERBOSE") != nullptr;
  if (const char* dir = std::getenv("LOOM_FUZZ_MAKE_SEEDS")) {
    make_seeds(dir);
    std::exit(0);
  }
  the_runtime();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  run_case(bytes, size);
  return 0;
}
