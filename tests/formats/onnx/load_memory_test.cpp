// Peak memory of loading an ONNX model through the public C API (core + loom_onnx.so).
//
// A model whose weights the core copies (raw_data inside the .onnx file, or external data it
// cannot borrow) must load with about one copy of the weights resident: the core's own. Two
// copies (the file's pages plus protobuf's std::string per initializer, or the file's pages
// left mapped beside the core's copy) is the regression this guards. Each test measures in its own
// process (ctest runs every test case of this binary separately), and the model file is written by
// a forked child, so nothing the generator allocated can be reused by the load and hide its growth.
#include <gtest/gtest.h>
#include <loom/loom.h>
#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

namespace {

namespace fs = std::filesystem;

constexpr int64_t kRows = 1024;
constexpr int64_t kCols = 2048;  // 8 MiB per float initializer
constexpr int kInitializers = 6;
constexpr int64_t kWeightBytes = kInitializers * kRows * kCols * int64_t{sizeof(float)};
// What the process may add beyond one copy of the weights: the parsed graph, the plugin's
// bookkeeping, the partial pages at the tensors' ends, allocator slack (and a sanitizer's).
constexpr int64_t kSlackBytes = 24 << 20;

// VmHWM / VmRSS of this process in bytes, from /proc/self/status.
std::optional<int64_t> status_bytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t key_len = std::strlen(key);
  while (std::getline(in, line))
    if (line.compare(0, key_len, key) == 0 && line.size() > key_len && line[key_len] == ':')
      return std::stoll(line.substr(key_len + 1)) * 1024;  // the kernel reports kB
  return std::nullopt;
}

// Resets VmHWM to the current RSS (Linux 4.0+); false where the kernel refuses it.
bool reset_peak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

enum class Storage {
  kRawData,           // inside the .onnx file
  kUnalignedExternal  // in weights.bin at odd offsets, so the core copies instead of borrowing
};

// x [kRows, kCols] -> Add w0 -> Add w1 -> ... -> y, every w a float initializer.
void write_model(const fs::path& path, Storage storage) {
  std::ofstream weights;
  if (storage == Storage::kUnalignedExternal) {
    weights.open(path.parent_path() / "weights.bin", std::ios::binary);
    weights.put('\0');  // every tensor starts 1 byte past a 64-byte boundary
  }
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  auto* g = model.mutable_graph();
  g->set_name("main");
  auto declare = [](::onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(::onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(kRows);
    t->mutable_shape()->add_dim()->set_dim_value(kCols);
  };
  declare(g->add_input(), "x");
  declare(g->add_output(), "y");
  std::string previous = "x";
  for (int i = 0; i < kInitializers; ++i) {
    const std::string w = "w" + std::to_string(i);
    auto* t = g->add_initializer();
    t->set_name(w);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_dims(kRows);
    t->add_dims(kCols);
    // Distinct non-zero bytes, so no page of the weights is a shared zero page.
    std::string bytes(static_cast<size_t>(kRows * kCols) * sizeof(float), '\0');
    for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<char>(k * 7 + i + 1);
    if (storage == Storage::kRawData) {
      t->set_raw_data(std::move(bytes));
    } else {
      t->set_data_location(::onnx::TensorProto::EXTERNAL);
      auto add = [t](const char* key, const std::string& value) {
        auto* kv = t->add_external_data();
        kv->set_key(key);
        kv->set_value(value);
      };
      add("location", "weights.bin");
      add("offset", std::to_string(static_cast<long long>(weights.tellp())));
      add("length", std::to_string(bytes.size()));
      weights.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    auto* n = g->add_node();
    n->set_op_type("Add");
    n->add_input(previous);
    n->add_input(w);
    previous = i + 1 == kInitializers ? "y" : "a" + std::to_string(i);
    n->add_output(previous);
  }
  if (storage == Storage::kUnalignedExternal) {
    weights.close();
    if (!weights) std::_Exit(4);
  }
  std::ofstream out(path, std::ios::binary);
  if (!model.SerializeToOstream(&out)) std::_Exit(2);
  out.close();
  std::_Exit(out ? 0 : 3);
}

// Writes the model in a child process and waits for it.
bool write_model_in_child(const fs::path& path, Storage storage) {
  pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) write_model(path, storage);  // never returns
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string take_message(loom_status_t* s) {
  std::string m = s ? loom_status_message(s) : "";
  loom_status_free(s);
  return m;
}

void quiet_log(void*, loom_log_level_t, const char*, const char*) {}

struct RuntimeDeleter {
  void operator()(loom_runtime_t* r) const { loom_runtime_destroy(r); }
};

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "loom-load-memory-XXXXXX").string();
    if (::mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Loads the model and checks the process's peak and final RSS growth against one copy of the
// weights.
void expect_weights_resident_once(Storage storage) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty()) << "cannot create a temporary directory";
  const fs::path model_path = dir.path() / "model.onnx";
  ASSERT_TRUE(write_model_in_child(model_path, storage)) << "cannot write " << model_path;

  const char* paths[] = {LOOM_TEST_PLUGIN_DIR};
  loom_runtime_options_t options{};
  options.struct_size = sizeof options;
  options.num_plugin_paths = 1;
  options.plugin_paths = paths;
  options.log_level = LOOM_LOG_ERROR;
  options.log_fn = quiet_log;
  loom_runtime_t* raw_runtime = nullptr;
  loom_status_t* s = loom_runtime_create(&options, &raw_runtime);
  ASSERT_EQ(s, nullptr) << take_message(s);
  std::unique_ptr<loom_runtime_t, RuntimeDeleter> runtime(raw_runtime);

  // Where the kernel cannot reset the peak, the peak so far counts as growth: the bound then
  // only gets stricter.
  reset_peak();
  const auto rss_before = status_bytes("VmRSS");
  ASSERT_TRUE(rss_before) << "no VmRSS in /proc/self/status";

  loom_model_t* model = nullptr;
  s = loom_model_load(runtime.get(), model_path.c_str(), &model);
  ASSERT_EQ(s, nullptr) << take_message(s);
  EXPECT_EQ(loom_model_num_initializers(model), static_cast<size_t>(kInitializers));
  const auto peak = status_bytes("VmHWM");
  const auto rss_after = status_bytes("VmRSS");
  loom_model_free(model);
  ASSERT_TRUE(peak && rss_after);

  const int64_t peak_growth = *peak - *rss_before;
  const int64_t kept = *rss_after - *rss_before;
  std::printf("weights %lld MiB: peak grew %lld MiB during the load, %lld MiB stayed\n",
              static_cast<long long>(kWeightBytes >> 20), static_cast<long long>(peak_growth >> 20),
              static_cast<long long>(kept >> 20));
  // One copy of the weights plus slack; a second copy would add another kWeightBytes.
  EXPECT_LE(peak_growth, kWeightBytes + kSlackBytes)
      << "loading " << (kWeightBytes >> 20) << " MiB of weights raised the peak RSS by "
      << (peak_growth >> 20) << " MiB: a transient second copy of the weights is back";
  // After the load nothing but the core's copy may stay (no file pages, no freed parse buffers).
  EXPECT_LE(kept, kWeightBytes + kSlackBytes)
      << (kept >> 20) << " MiB stayed resident after loading " << (kWeightBytes >> 20)
      << " MiB of weights";
  // And the weights really are resident: the bound is not met by a load that skipped them.
  EXPECT_GE(kept, kWeightBytes - kSlackBytes);
}

TEST(OnnxLoadMemory, RawDataWeightsAreResidentOnce) {
  expect_weights_resident_once(Storage::kRawData);
}

TEST(OnnxLoadMemory, CopiedExternalWeightsAreResidentOnce) {
  expect_weights_resident_once(Storage::kUnalignedExternal);
}

}  // namespace
