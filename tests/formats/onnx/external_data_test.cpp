// Initializers stored in external files: reading them, and refusing paths and ranges that
// would read outside the model's directory or the file.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>

#include "model_helpers.hpp"

namespace loom::onnx::testing {
namespace {

using TP = ::onnx::TensorProto;

void set_external(TP& t, const std::string& location, int64_t offset = -1, int64_t length = -1) {
  t.set_data_location(TP::EXTERNAL);
  auto* kv = t.add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  if (offset >= 0) {
    kv = t.add_external_data();
    kv->set_key("offset");
    kv->set_value(std::to_string(offset));
  }
  if (length >= 0) {
    kv = t.add_external_data();
    kv->set_key("length");
    kv->set_value(std::to_string(length));
  }
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * sizeof(float), '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

// relu_model with a float [3] initializer "w" at `location` / offset / length.
Loaded load_external(const TempDir& dir, const std::string& location, int64_t offset = -1,
                     int64_t length = -1) {
  ::onnx::ModelProto m = relu_model();
  set_external(add_initializer(*m.mutable_graph(), "w", TP::FLOAT, {3}), location, offset, length);
  return load_model(m, dir.path().c_str());
}

TEST(OnnxExternalData, ReadsTensorsAtOffsets) {
  TempDir dir;
  dir.write("weights.bin", floats({1, 2, 3, 10, 20, 30, 40}));
  ::onnx::ModelProto m = relu_model();
  auto& g = *m.mutable_graph();
  set_external(add_initializer(g, "a", TP::FLOAT, {3}), "weights.bin", 0, 12);
  set_external(add_initializer(g, "b", TP::FLOAT, {2, 2}), "weights.bin", 12);  // to the end
  Loaded r = load_model(m, dir.path().c_str());
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_EQ(r.graph().initializer("a")->as<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(r.graph().initializer("b")->as<float>(), (std::vector<float>{10, 20, 30, 40}));
  // The page-aligned tensor is handed over without a copy; the unaligned one is copied.
  EXPECT_TRUE(r.graph().initializer("a")->borrowed);
  EXPECT_FALSE(r.graph().initializer("b")->borrowed);
  EXPECT_EQ(r.builder->pending_releases(), 1u);
}

TEST(OnnxExternalData, FileInSubdirectory) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "data");
  dir.write("data/w.bin", floats({7, 8, 9}));
  Loaded r = load_external(dir, "data/w.bin");
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_EQ(r.graph().initializer("w")->as<float>(), (std::vector<float>{7, 8, 9}));
}

TEST(OnnxExternalData, DotDotTraversalIsRefused) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "model");
  dir.write("secret.bin", floats({1, 2, 3}));
  ::onnx::ModelProto m = relu_model();
  set_external(add_initializer(*m.mutable_graph(), "w", TP::FLOAT, {3}), "../secret.bin");
  Loaded r = load_model(m, (dir.path() / "model").c_str());
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "initializer 'w': external data location '../secret.bin' contains '..'; it must stay "
            "inside the model's directory");
}

TEST(OnnxExternalData, AbsolutePathIsRefused) {
  TempDir dir;
  Loaded r = load_external(dir, "/etc/passwd");
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("'/etc/passwd' is an absolute path"), std::string::npos)
      << r.outcome.message;
}

TEST(OnnxExternalData, SymlinkEscapingTheDirectoryIsRefused) {
  TempDir outside, dir;
  outside.write("w.bin", floats({1, 2, 3}));
  std::filesystem::create_symlink(outside.path() / "w.bin", dir.path() / "w.bin");
  Loaded r = load_external(dir, "w.bin");
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("outside the model's directory"), std::string::npos)
      << r.outcome.message;
}

TEST(OnnxExternalData, OffsetPastEndOfFile) {
  TempDir dir;
  dir.write("w.bin", floats({1, 2, 3}));
  Loaded r = load_external(dir, "w.bin", 1000, 12);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "initializer 'w': external data offset 1000 is past the end of 'w.bin' (12 bytes)");
}

TEST(OnnxExternalData, RangeBeyondEndOfFile) {
  TempDir dir;
  dir.write("w.bin", floats({1, 2, 3}));
  Loaded r = load_external(dir, "w.bin", 4, 12);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "initializer 'w': external data range offset 4 + length 12 exceeds the size of "
            "'w.bin' (12 bytes)");
  // An offset + length that overflows 64 bits must not wrap around into range.
  Loaded wrap = load_external(dir, "w.bin", 4, -1);
  EXPECT_EQ(wrap.outcome.code, LOOM_ERROR_INVALID_MODEL);  // 8 bytes left, 12 needed
  ::onnx::ModelProto m = relu_model();
  TP& t = add_initializer(*m.mutable_graph(), "w", TP::FLOAT, {3});
  set_external(t, "w.bin", 4);
  auto* kv = t.add_external_data();
  kv->set_key("length");
  kv->set_value("18446744073709551615");
  Loaded huge = load_model(m, dir.path().c_str());
  EXPECT_EQ(huge.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(huge.outcome.message.find("exceeds the size"), std::string::npos);
}

TEST(OnnxExternalData, LengthMustMatchShape) {
  TempDir dir;
  dir.write("w.bin", floats({1, 2, 3}));
  Loaded r = load_external(dir, "w.bin", 0, 8);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message, "initializer 'w': external data has 8 bytes but the shape needs 12");
}

TEST(OnnxExternalData, MalformedOffset) {
  TempDir dir;
  dir.write("w.bin", floats({1, 2, 3}));
  ::onnx::ModelProto m = relu_model();
  TP& t = add_initializer(*m.mutable_graph(), "w", TP::FLOAT, {3});
  set_external(t, "w.bin");
  auto* kv = t.add_external_data();
  kv->set_key("offset");
  kv->set_value("-4");
  Loaded r = load_model(m, dir.path().c_str());
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "initializer 'w': external data 'offset' is '-4', not a non-negative integer");
}

TEST(OnnxExternalData, MissingFileIsNotFound) {
  TempDir dir;
  Loaded r = load_external(dir, "absent.bin");
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_NOT_FOUND);
  EXPECT_NE(r.outcome.message.find("external data file 'absent.bin' not found"), std::string::npos)
      << r.outcome.message;
}

TEST(OnnxExternalData, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir.path() / "w.bin").c_str(), 0600), 0);
  Loaded r = load_external(dir, "w.bin");
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("is not a regular file"), std::string::npos);
}

TEST(OnnxExternalData, NeedsTheModelDirectory) {
  ::onnx::ModelProto m = relu_model();
  set_external(add_initializer(*m.mutable_graph(), "w", TP::FLOAT, {3}), "w.bin");
  Loaded r = load_model(m, nullptr);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(r.outcome.message.find("not loaded from a directory"), std::string::npos);
}

TEST(OnnxExternalData, StringTensorsCannotBeExternal) {
  TempDir dir;
  dir.write("w.bin", "abc");
  ::onnx::ModelProto m = relu_model();
  set_external(add_initializer(*m.mutable_graph(), "w", TP::STRING, {1}), "w.bin");
  Loaded r = load_model(m, dir.path().c_str());
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("string tensors cannot be stored as external data"),
            std::string::npos);
}

}  // namespace
}  // namespace loom::onnx::testing
