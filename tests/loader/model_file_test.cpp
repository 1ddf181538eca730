// Model files that change while a model loaded from them is in use. The .loom format borrows
// its weights from the file's bytes, so a truncated file used to end the process with SIGBUS
// at the next read. Small files are copied into memory; larger ones are mapped under a read
// lease, whose break copies the mapping before the writer may go on (model_loader.cpp).
//
// The model: the fake format's "y = Neg(Relu(w))" with w a 4096-float initializer, saved as
// .loom and loaded from there, so that w is borrowed from the file's bytes. Its bytes are read
// when the session is created (constant folding or compile) and run, after the truncation.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <loom/loom.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string take(loom_status_t* s) {
  if (!s) return "";
  std::string m = loom_status_message(s);
  loom_status_free(s);
  return m.empty() ? "(empty error)" : m;
}

class ModelFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* paths[] = {FAKE_PLUGIN, LOOM_TEST_LOOM_PLUGIN};
    loom_runtime_options_t o{};
    o.struct_size = sizeof o;
    o.num_plugin_paths = 2;
    o.plugin_paths = paths;
    o.log_level = LOOM_LOG_ERROR;
    ASSERT_EQ(loom_runtime_create(&o, &rt_), nullptr);
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = fs::path(TEST_TMP_DIR) / ("model-file-" + test);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // More than a page of weights, so that a truncated file loses whole pages of them.
    std::string text = "FAKEMODEL const=";
    for (int i = 0; i < 4096; ++i) text += (i ? "," : "") + std::to_string(i % 7 - 3);
    text += " Relu Neg";
    fs::path fake = dir_ / "source.fake";
    std::ofstream(fake) << text;
    loom_model_t* model = nullptr;
    ASSERT_EQ(take(loom_model_load(rt_, fake.c_str(), &model)), "");
    source_ = (dir_ / "source.loom").string();
    std::string err = take(loom_model_save(rt_, model, "loom", source_.c_str()));
    loom_model_free(model);
    ASSERT_EQ(err, "");
  }
  void TearDown() override {
    unsetenv("LOOM_MODEL_COPY_LIMIT");
    loom_runtime_destroy(rt_);
  }

  // A copy of the .loom model.
  std::string copy_model(const std::string& name) {
    fs::path p = dir_ / name;
    fs::copy_file(source_, p, fs::copy_options::overwrite_existing);
    return p.string();
  }

  // Loads `path`; `between` runs after the load, before the session is created and run. The
  // output of a run on an input of ones.
  std::vector<float> load_and_run(const std::string& path, void (*between)(const std::string&)) {
    loom_model_t* model = nullptr;
    std::string err = take(loom_model_load(rt_, path.c_str(), &model));
    EXPECT_EQ(err, "");
    if (!err.empty()) return {};
    if (between) between(path);
    loom_session_options_t so{};
    so.struct_size = sizeof so;
    so.devices = "fakehost";
    loom_session_t* session = nullptr;
    err = take(loom_session_create(rt_, model, &so, &session));
    EXPECT_EQ(err, "");
    std::vector<float> y;
    if (err.empty()) {
      loom_io_info_t info{};
      info.struct_size = sizeof info;
      EXPECT_EQ(loom_model_input(model, 0, &info), nullptr);
      loom_host_tensor_t in{};
      in.struct_size = sizeof in;
      in.dtype = LOOM_DTYPE_FLOAT32;
      in.rank = info.rank;
      size_t count = 1;
      for (int32_t i = 0; i < info.rank; ++i) {
        in.dims[i] = info.dims[i] > 0 ? info.dims[i] : 1;
        count *= static_cast<size_t>(in.dims[i]);
      }
      std::vector<float> x(count, 1.0f);
      in.data = x.data();
      in.byte_size = count * sizeof(float);
      const char* names[] = {info.name};
      loom_host_tensor_t out{};
      out.struct_size = sizeof out;
      EXPECT_EQ(take(loom_session_run(session, 1, names, &in, 1, &out)), "");
      if (out.data) {
        const float* p = static_cast<const float*>(out.data);
        y.assign(p, p + out.byte_size / sizeof(float));
      }
      loom_host_tensor_release(&out);
    }
    loom_session_destroy(session);
    loom_model_free(model);
    return y;
  }

  static void truncate_file(const std::string& path) {
    int rc;
    do rc = ::truncate(path.c_str(), 0);
    while (rc != 0 && errno == EINTR);  // a lease break may interrupt the truncation
    ASSERT_EQ(rc, 0) << std::strerror(errno);
    ASSERT_EQ(fs::file_size(path), 0u);
  }

  loom_runtime_t* rt_ = nullptr;
  fs::path dir_;
  std::string source_;
};

// The weights come from the file, so its outputs depend on them: a reference from an untouched
// copy, and the same model truncated between load and run must give the same outputs.
TEST_F(ModelFileTest, SmallModelIsCopiedSoTruncatingTheFileChangesNothing) {
  std::vector<float> reference = load_and_run(copy_model("reference.loom"), nullptr);
  ASSERT_EQ(reference.size(), 4096u);
  EXPECT_EQ(reference[6], -3.0f);  // y[i] = -relu(i % 7 - 3)
  EXPECT_EQ(reference[1], 0.0f);
  std::vector<float> y = load_and_run(copy_model("truncated.loom"), truncate_file);
  EXPECT_EQ(y, reference);
}

TEST_F(ModelFileTest, ReplacingTheFileByRenameChangesNothing) {
  std::vector<float> reference = load_and_run(copy_model("reference.loom"), nullptr);
  std::string path = copy_model("renamed.loom");
  setenv("LOOM_MODEL_COPY_LIMIT", "0", 1);  // the mapped path: rename never disturbs it
  std::vector<float> y = load_and_run(path, [](const std::string& p) {
    std::string other = p + ".new";
    {
      std::FILE* f = std::fopen(other.c_str(), "w");
      ASSERT_NE(f, nullptr);
      std::fputs("x", f);
      std::fclose(f);
    }
    ASSERT_EQ(std::rename(other.c_str(), p.c_str()), 0);
  });
  EXPECT_EQ(y, reference);
}

// A mapped model (copy limit 0) whose file is truncated in place: the read lease's break
// copies the mapping before the truncation goes on. Skipped where this file system or kernel
// grants no lease, as there the process still dies of SIGBUS (the documented limit).
TEST_F(ModelFileTest, MappedModelUnderLeaseSurvivesTruncation) {
  std::string probe = copy_model("lease-probe.loom");
  int fd = ::open(probe.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const bool leases = ::fcntl(fd, F_SETLEASE, F_RDLCK) == 0;
  const int lease_errno = errno;
  ::close(fd);
  if (!leases) GTEST_SKIP() << "no read lease here: " << std::strerror(lease_errno);
  std::vector<float> reference = load_and_run(copy_model("reference.loom"), nullptr);
  setenv("LOOM_MODEL_COPY_LIMIT", "0", 1);
  std::vector<float> y = load_and_run(copy_model("leased.loom"), truncate_file);
  EXPECT_EQ(y, reference);
}

}  // namespace

namespace {

// A FIFO given as a model is refused at once (the model is opened with O_NONBLOCK), not read
// until some writer comes.
TEST_F(ModelFileTest, FifoAsModelIsRefusedWithoutBlocking) {
  std::string fifo = (dir_ / "model.loom").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  loom_model_t* model = nullptr;
  std::string err = take(loom_model_load(rt_, fifo.c_str(), &model));
  EXPECT_NE(err.find("is not a regular file"), std::string::npos) << err;
  EXPECT_NE(err.find(fifo), std::string::npos) << err;
  EXPECT_EQ(model, nullptr);
}

}  // namespace
