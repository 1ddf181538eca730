#include "ncnn_test_support.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>

namespace loom::ncnnfmt::testing {

loom::apps::RuntimePtr make_runtime() {
  std::vector<std::string> files = {LOOM_TEST_NCNN_PLUGIN, LOOM_TEST_CPU_PLUGIN};
  if (have_onednn()) files.push_back(LOOM_TEST_ONEDNN_PLUGIN);
  std::vector<const char*> paths;
  for (const std::string& f : files) paths.push_back(f.c_str());
  loom_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.num_plugin_paths = paths.size();
  o.plugin_paths = paths.data();
  o.log_level = LOOM_LOG_ERROR;
  return loom::apps::create_runtime(o);
}

bool have_onednn() {
  return std::string(LOOM_TEST_ONEDNN_PLUGIN).size() > 0;
}

std::filesystem::path models_dir() {
  if (const char* dir = std::getenv("LOOM_NCNN_TEST_MODELS"); dir && *dir) return dir;
  return LOOM_TEST_NCNN_MODELS;
}

loom::apps::HostTensor run_model(const std::string& param, const loom::apps::HostTensor& input,
                                 const std::string& devices) {
  auto runtime = make_runtime();
  auto model = loom::apps::load_model(runtime.get(), param);
  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = devices.c_str();
  so.threads = 1;
  auto session = loom::apps::create_session(runtime.get(), model.get(), so);
  auto inputs = loom::apps::model_inputs(model.get());
  if (inputs.size() != 1) throw std::runtime_error("the test models have one input");
  auto outputs = loom::apps::run_session(session.get(), loom_model_num_outputs(model.get()),
                                         {inputs[0].name}, {&input});
  if (outputs.empty()) throw std::runtime_error("the model gave no output");
  return outputs[0];
}

std::string load_error(const std::string& param) {
  auto runtime = make_runtime();
  loom_model_t* model = nullptr;
  loom_status_t* status = loom_model_load(runtime.get(), param.c_str(), &model);
  if (!status) {
    loom_model_free(model);
    return "";
  }
  std::string text = std::to_string(loom_status_code(status)) + ": " + loom_status_message(status);
  loom_status_free(status);
  return text;
}

double tolerance_ratio(const loom::apps::HostTensor& a, const loom::apps::HostTensor& b,
                       double atol, double rtol) {
  if (a.dtype != LOOM_DTYPE_FLOAT32 || b.dtype != LOOM_DTYPE_FLOAT32)
    throw std::runtime_error("tolerance_ratio compares float32 tensors");
  if (a.element_count() != b.element_count())
    throw std::runtime_error("element counts differ: " + a.shape_string() + " vs " +
                             b.shape_string());
  double worst = 0;
  for (size_t i = 0; i < a.element_count(); ++i) {
    double x = a.as<float>()[i], y = b.as<float>()[i];
    double r = std::fabs(x - y) / (atol + rtol * std::fabs(y));
    if (!(r <= worst)) worst = std::isnan(r) ? INFINITY : r;
  }
  return worst;
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

TempDir::TempDir() {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() /
          ("loom-ncnn-test-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace loom::ncnnfmt::testing
