// Probing by content, and the plugin entry's handshake and registration.
#include <gtest/gtest.h>

#include <cstring>
#include <loom/plugin.hpp>

#include "model_helpers.hpp"
#include "onnx_format.hpp"

extern "C" loom_status_t* loom_plugin_entry(const loom_host_api_t*, loom_registrar_t*,
                                            loom_plugin_info_t*);

namespace loom::onnx::testing {
namespace {

int32_t probe_bytes(const std::string& bytes, const char* path = nullptr) {
  const loom_format_t& f = format_descriptor();
  return f.probe(f.user, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

TEST(OnnxProbe, RecognizesExportedModelsByContent) {
  std::string bytes;
  ASSERT_TRUE(relu_model().SerializeToString(&bytes));
  EXPECT_GE(probe_bytes(bytes, nullptr), 90);
  EXPECT_EQ(probe_bytes(bytes, "/models/m.onnx"), 100);
  EXPECT_GE(probe_bytes(bytes, "weird-name.bin"), 90);
  // Only the head is shown: a prefix must still be recognized, and never read past.
  EXPECT_GE(probe_bytes(bytes.substr(0, 6), nullptr), 90);
}

TEST(OnnxProbe, RefusesOtherContentEvenWithOnnxExtension) {
  EXPECT_EQ(probe_bytes("", "m.onnx"), 0);
  EXPECT_EQ(probe_bytes("7767517\n3 3\nInput data 0 1 data\n", "m.onnx"), 0);  // ncnn param
  EXPECT_EQ(probe_bytes(std::string("\x1c\0\0\0TFL3", 8), "m.onnx"), 0);       // TFLite
  EXPECT_EQ(probe_bytes("PK\x03\x04", "m.onnx"), 0);                           // zip
  EXPECT_EQ(probe_bytes(std::string("\x08\x00", 2), "m.onnx"), 0);             // ir_version 0
}

TEST(OnnxProbe, HandMadeFieldOrderStillScores) {
  ::onnx::ModelProto m = relu_model();
  // graph first, then opset_import, no ir_version up front.
  std::string graph, opset;
  ASSERT_TRUE(m.graph().SerializeToString(&graph));
  ASSERT_TRUE(m.opset_import(0).SerializeToString(&opset));
  std::string bytes = "\x3a" + std::string(1, static_cast<char>(graph.size())) + graph + "\x42" +
                      std::string(1, static_cast<char>(opset.size())) + opset;
  ASSERT_LT(graph.size(), 128u);
  EXPECT_GE(probe_bytes(bytes), 60);
}

TEST(OnnxProbe, NeverReadsPastHeadSize) {
  // A buffer whose only valid bytes are the first 2; ASan (fuzz/sanitize builds) catches reads
  // beyond. Here: a length-delimited field claiming more bytes than the head holds.
  std::string head("\x08\x07\x3a\xff\xff\x03", 6);
  auto* copy = new uint8_t[head.size()];
  std::memcpy(copy, head.data(), head.size());
  const loom_format_t& f = format_descriptor();
  EXPECT_GE(f.probe(f.user, copy, head.size(), nullptr), 90);
  delete[] copy;
}

// ---- entry -------------------------------------------------------------------------------

struct Registry {
  std::vector<loom_format_t> formats;
};

loom_status_t* record_format(loom_registrar_t* r, const loom_format_t* f) {
  reinterpret_cast<Registry*>(r)->formats.push_back(*f);
  return nullptr;
}

loom_host_api_t host_with(uint32_t abi) {
  loom_host_api_t h = fake_host();
  h.abi_version = abi;
  h.register_format = record_format;
  return h;
}

TEST(OnnxEntry, RegistersOneFormatNamedOnnx) {
  loom_host_api_t host = host_with(LOOM_ABI_VERSION);
  Registry reg;
  loom_plugin_info_t info{};
  info.struct_size = sizeof info;
  Outcome o = take(loom_plugin_entry(&host, reinterpret_cast<loom_registrar_t*>(&reg), &info));
  ASSERT_EQ(o.code, LOOM_OK) << o.message;
  EXPECT_EQ(info.abi_version, LOOM_ABI_VERSION);
  EXPECT_STREQ(info.name, "onnx");
  EXPECT_STREQ(info.version, LOOM_ONNX_TEST_VERSION);
  ASSERT_EQ(reg.formats.size(), 1u);
  EXPECT_STREQ(reg.formats[0].name, "onnx");
  EXPECT_EQ(reg.formats[0].struct_size, sizeof(loom_format_t));
  EXPECT_NE(reg.formats[0].probe, nullptr);
  EXPECT_NE(reg.formats[0].load, nullptr);
}

TEST(OnnxEntry, NewerMinorHostIsAccepted) {
  loom_host_api_t host = host_with(LOOM_MAKE_ABI_VERSION(LOOM_ABI_VERSION_MAJOR, 7));
  Registry reg;
  loom_plugin_info_t info{};
  info.struct_size = sizeof info;
  Outcome o = take(loom_plugin_entry(&host, reinterpret_cast<loom_registrar_t*>(&reg), &info));
  EXPECT_EQ(o.code, LOOM_OK) << o.message;
  EXPECT_EQ(reg.formats.size(), 1u);
}

TEST(OnnxEntry, OtherMajorIsRefusedNamingBothVersions) {
  loom_host_api_t host = host_with(LOOM_MAKE_ABI_VERSION(2, 3));
  Registry reg;
  loom_plugin_info_t info{};
  info.struct_size = sizeof info;
  Outcome o = take(loom_plugin_entry(&host, reinterpret_cast<loom_registrar_t*>(&reg), &info));
  EXPECT_EQ(o.code, LOOM_ERROR_INCOMPATIBLE);
  EXPECT_EQ(o.message, "onnx format plugin speaks ABI " + std::to_string(LOOM_ABI_VERSION_MAJOR) + "." +
                           std::to_string(LOOM_ABI_VERSION_MINOR) +
                           " but the host speaks ABI 2.3; rebuild the plugin for this host");
  EXPECT_TRUE(reg.formats.empty());
  EXPECT_EQ(info.abi_version, LOOM_ABI_VERSION);  // still tells the host what it speaks
  sdk::set_host(&fake_host());
}

}  // namespace
}  // namespace loom::onnx::testing
