// Hostile and foreign files: every damaged .loom file fails with one clear line (never a crash
// or an out-of-bounds read; CI runs this under ASan), newer versions are refused naming both
// versions, files of formats without an installed plugin are named, and saving names what is
// missing.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "loom_test_support.hpp"

namespace loom::loomfmt::testing {
namespace {

constexpr size_t kWeightCount = 37;  // floats of the test model's initializer

class LoomFileErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = new_model();
    auto* g = m.mutable_graph();
    add_value(g->add_input(), "x", ::onnx::TensorProto::FLOAT, {kWeightCount});
    add_float_initializer(g, "w", {kWeightCount}, std::vector<float>(kWeightCount, 1.5f));
    add_node(g, "Mul", {"x", "w"}, {"y"});
    add_value(g->add_output(), "y", ::onnx::TensorProto::FLOAT, {kWeightCount});
    save_onnx(m, tmp_ / "m.onnx");
    ASSERT_EQ(convert(rt_.get(), (tmp_ / "m.onnx").string(), (tmp_ / "m.loom").string(), false),
              "");
    good_ = read_file(tmp_ / "m.loom");
  }

  // Loads `bytes` as a file; returns the error ("" when it loads).
  std::string load(const std::string& bytes, loom_runtime_t* rt = nullptr) {
    write_file(tmp_ / "bad.loom", bytes);
    loom_model_t* m = nullptr;
    std::string err =
        take_error(loom_model_load(rt ? rt : rt_.get(), (tmp_ / "bad.loom").string().c_str(), &m));
    loom_model_free(m);
    return err;
  }
  static void put_u32(std::string& b, size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); }
  static void put_u64(std::string& b, size_t at, uint64_t v) { std::memcpy(&b[at], &v, 8); }
  // Position of the initializer's (offset, size) pair in the graph section.
  size_t weight_ref() const {
    std::string pattern(16, '\0');
    uint64_t size = kWeightCount * sizeof(float);
    std::memcpy(&pattern[8], &size, 8);
    size_t at = good_.find(pattern);
    EXPECT_NE(at, std::string::npos);
    return at;
  }

  TempDir tmp_;
  loom::apps::RuntimePtr rt_ = make_runtime();
  std::string good_;
};

TEST_F(LoomFileErrors, TheUntouchedFileLoads) {
  EXPECT_EQ(load(good_), "");
}

TEST_F(LoomFileErrors, EveryTruncationFails) {
  for (size_t n = 1; n < good_.size(); ++n) {
    std::string err = load(good_.substr(0, n));
    EXPECT_NE(err, "") << "truncated to " << n << " bytes";
    if (n >= 64) {
      EXPECT_NE(err.find("damaged .loom file"), std::string::npos) << err;
    }
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

// The graph section cut short anywhere (the header kept consistent): the decoder runs out of
// bytes and says so.
TEST_F(LoomFileErrors, EveryGraphSectionTruncationFails) {
  uint64_t graph_size;
  std::memcpy(&graph_size, &good_[64 + 16], 8);
  for (uint64_t k = 0; k < graph_size; ++k) {
    std::string b = good_;
    put_u64(b, 64 + 16, k);
    std::string err = load(b);
    EXPECT_NE(err.find("damaged .loom file"), std::string::npos)
        << "graph section cut to " << k << ": " << err;
  }
}

TEST_F(LoomFileErrors, NewerVersionsAreRefusedNamingBoth) {
  std::string b = good_;
  put_u32(b, 8, 7);
  std::string err = load(b);
  EXPECT_NE(
      err.find("model file version 7 is newer than this runtime's 1; upgrade loom-format-loom"),
      std::string::npos)
      << err;
  b = good_;
  put_u32(b, 12, 9);
  err = load(b);
  EXPECT_NE(err.find("graph-spec revision 9 is newer than this runtime's 2"), std::string::npos)
      << err;
}

TEST_F(LoomFileErrors, BadHeaderAndSectionTable) {
  std::string b = good_;
  put_u32(b, 24, 0xFFFFFFFFu);
  EXPECT_NE(load(b).find("section count"), std::string::npos);
  b = good_;
  put_u64(b, 16, good_.size() + 1);
  EXPECT_NE(load(b).find("truncated or appended to"), std::string::npos);
  b = good_;
  put_u64(b, 64 + 8, 1ull << 62);  // graph section offset
  EXPECT_NE(load(b).find("lies outside the file"), std::string::npos);
  b = good_;
  put_u64(b, 64 + 16, ~0ull);  // graph section size
  EXPECT_NE(load(b).find("lies outside the file"), std::string::npos);
  b = good_;
  put_u32(b, 64, 99);  // the graph section becomes an unknown (skipped) kind
  EXPECT_NE(load(b).find("no graph section"), std::string::npos);
}

TEST_F(LoomFileErrors, HugeCountsAllocateNothing) {
  std::string b = good_;
  uint64_t graph_offset;
  std::memcpy(&graph_offset, &good_[64 + 8], 8);
  put_u32(b, graph_offset, 0xFFFFFFFFu);  // opset count
  std::string err = load(b);
  EXPECT_NE(err.find("opset count 4294967295 exceeds the section's size"), std::string::npos)
      << err;
}

TEST_F(LoomFileErrors, WeightReferencesAreChecked) {
  size_t at = weight_ref();
  std::string b = good_;
  put_u64(b, at, 8);
  EXPECT_NE(load(b).find("is not 64-byte aligned"), std::string::npos);
  b = good_;
  put_u64(b, at, 1ull << 40);
  EXPECT_NE(load(b).find("outside the weights section"), std::string::npos);
  b = good_;
  put_u64(b, at + 8, 4);
  EXPECT_NE(load(b).find("bytes of data for its shape"), std::string::npos);
}

// Every byte of the header and graph section flipped in turn: loads or fails cleanly.
TEST_F(LoomFileErrors, FlippedBytesNeverCrash) {
  uint64_t weights_offset;
  std::memcpy(&weights_offset, &good_[64 + 24 + 8], 8);
  for (size_t i = 0; i < weights_offset && i < good_.size(); ++i) {
    std::string b = good_;
    b[i] = static_cast<char>(b[i] ^ 0xFF);
    std::string err = load(b);
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}

TEST(LoomForeignFiles, FormatsWithoutAPluginAreNamed) {
  TempDir tmp;
  auto rt = make_runtime();
  auto error_for = [&](const std::string& bytes, loom_runtime_t* runtime) {
    write_file(tmp / "model.bin", bytes);
    loom_model_t* m = nullptr;
    std::string err =
        take_error(loom_model_load(runtime, (tmp / "model.bin").string().c_str(), &m));
    loom_model_free(m);
    return err;
  };
  std::string tflite("\x1c\0\0\0TFL3\0\0\0\0\0\0\0\0", 16);
  EXPECT_NE(error_for(tflite, rt.get())
                .find("looks like a TFLite model; the tflite format plugin is not installed"),
            std::string::npos);
  EXPECT_NE(error_for("7767517\n3 3\nInput data 0 1 data\n", rt.get())
                .find("looks like an ncnn model (.param); the ncnn format plugin is not installed"),
            std::string::npos);
  EXPECT_NE(error_for("PK\x03\x04zipzipzip", rt.get()).find("export the model to ONNX first"),
            std::string::npos);
  EXPECT_NE(error_for("just some text", rt.get())
                .find("is not in a model format the installed plugins recognize"),
            std::string::npos);

  // A .loom file where only the onnx plugin is installed, an ONNX file with no format plugin.
  auto m = new_model();
  add_value(m.mutable_graph()->add_input(), "x", ::onnx::TensorProto::FLOAT, {1});
  add_node(m.mutable_graph(), "Relu", {"x"}, {"y"});
  add_value(m.mutable_graph()->add_output(), "y", ::onnx::TensorProto::FLOAT, {1});
  save_onnx(m, tmp / "r.onnx");
  ASSERT_EQ(convert(rt.get(), (tmp / "r.onnx").string(), (tmp / "r.loom").string(), false), "");
  auto onnx_only = make_runtime({onnx_plugin(), cpu_plugin()});
  EXPECT_NE(
      error_for(read_file(tmp / "r.loom"), onnx_only.get())
          .find("looks like a Loom native model (.loom); the loom format plugin is not installed"),
      std::string::npos);
  auto no_formats = make_runtime({cpu_plugin()});
  EXPECT_NE(error_for(read_file(tmp / "r.onnx"), no_formats.get())
                .find("looks like an ONNX model; the onnx format plugin is not installed"),
            std::string::npos);
}

TEST(LoomSave, NamesAMissingOrReadOnlyFormat) {
  TempDir tmp;
  auto m = new_model();
  add_value(m.mutable_graph()->add_input(), "x", ::onnx::TensorProto::FLOAT, {1});
  add_node(m.mutable_graph(), "Relu", {"x"}, {"y"});
  add_value(m.mutable_graph()->add_output(), "y", ::onnx::TensorProto::FLOAT, {1});
  save_onnx(m, tmp / "r.onnx");
  auto rt = make_runtime();
  auto model = loom::apps::load_model(rt.get(), (tmp / "r.onnx").string());
  std::string out = (tmp / "r.out").string();
  std::string err = take_error(loom_model_save(rt.get(), model.get(), "tflite", out.c_str()));
  EXPECT_EQ(err.rfind("4: ", 0), 0u) << err;  // LOOM_ERROR_NOT_FOUND
  EXPECT_NE(err.find("no format plugin of that name is loaded"), std::string::npos) << err;
  err = take_error(loom_model_save(rt.get(), model.get(), "onnx", out.c_str()));
  EXPECT_EQ(err.rfind("3: ", 0), 0u) << err;  // LOOM_ERROR_UNSUPPORTED
  EXPECT_NE(err.find("can read models but not write them"), std::string::npos) << err;
  err = take_error(loom_model_save(rt.get(), model.get(), "loom",
                                   (tmp / "no/such/dir/r.loom").string().c_str()));
  EXPECT_NE(err.find("cannot create"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "r.out"));
}

}  // namespace
}  // namespace loom::loomfmt::testing
