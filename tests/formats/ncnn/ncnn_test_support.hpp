// Helpers of the ncnn format tests: a runtime with the ncnn and cpu plugins (and onednn when
// built), running an ncnn model on a device list, and writing hand-made model files.
#pragma once

#include <filesystem>
#include <loom_apps/api.hpp>
#include <loom_apps/host_tensor.hpp>
#include <string>
#include <vector>

namespace loom::ncnnfmt::testing {

loom::apps::RuntimePtr make_runtime();
bool have_onednn();

// The directory of the committed test models (LOOM_NCNN_TEST_MODELS overrides it, which the
// regeneration test uses).
std::filesystem::path models_dir();

// Loads `param` and runs it on `devices` with one input; returns the first output.
loom::apps::HostTensor run_model(const std::string& param, const loom::apps::HostTensor& input,
                                 const std::string& devices);

// The error of loading `param` ("" if it loads): "CODE: message".
std::string load_error(const std::string& param);

// Largest |a - b| / (atol + rtol |b|) over the elements (>1 means out of tolerance); both must
// hold float32 and the same number of elements (shapes may differ by a leading batch of 1).
double tolerance_ratio(const loom::apps::HostTensor& a, const loom::apps::HostTensor& b,
                       double atol, double rtol);

void write_file(const std::filesystem::path& path, const std::string& bytes);

// A fresh directory, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace loom::ncnnfmt::testing
