// Reordered weights are shared between the programs of one process (shared_constants.hpp):
// the plans of a symbolic model's input shapes and the sessions of one model hold one copy of
// each weight in each layout, not one per program. Measured in-process on the heap.
#include "shared_constants.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <loom/loom.hpp>

#include "device_test_support.hpp"

namespace loom::device_testing {
namespace {

loom_session_options_t onednn_only() {
  loom_session_options_t o{};
  o.struct_size = sizeof o;
  o.devices = "onednn";
  o.no_fallback = true;
  o.threads = 1;
  // Direct convolutions: on AVX-512 oneDNN picks Winograd for these 3x3 layers, whose per-shape
  // scratchpad (about 2.5 MiB at 9x9) would count as growth here though no weight was copied.
  o.device_options = "onednn.winograd=off";
  return o;
}

TEST(OnednnSharedConstants, PlansAndSessionsOfOneModelShareTheReorderedWeights) {
  expect_plans_share_weights(onednn_only());
}

// Weights that differ by one element are not confused, whatever their addresses.
TEST(OnednnSharedConstants, DifferentWeightsAreNeverShared) {
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  auto model_with = [](float corner) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 16, 5, 5});
    Tensor w = random_tensor(LOOM_DTYPE_FLOAT32, {32, 16, 3, 3}, 4, -.5, .5);
    w.data<float>()[0] = corner;
    m.initializer("w", w);
    m.node("Conv", {"x", "w"}, {"y"});
    m.output("y");
    return m.save();
  };
  const auto a = model_with(1.f), b = model_with(-1.f);
  ModelHandle ma = load_model(runtime.get(), a), mb = load_model(runtime.get(), b);
  TestSession sa = open_session(runtime.get(), ma.get(), onednn_only());
  TestSession sb = open_session(runtime.get(), mb.get(), onednn_only());
  TestSession ra = open_session(runtime.get(), ma.get(), "cpu");
  TestSession rb = open_session(runtime.get(), mb.get(), "cpu");
  const auto in = std::vector<std::pair<std::string, Tensor>>{
      {"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 16, 5, 5}, 5)}};
  expect_outputs_match(sa.run(in), ra.run(in));
  expect_outputs_match(sb.run(in), rb.run(in));
  std::filesystem::remove(a);
  std::filesystem::remove(b);
}

// Bytes the host vouches for by content id (plugin ABI 1.7) are hashed once, whatever layouts
// they are reordered into; bytes without an id are hashed at every request.
TEST(OnednnSharedConstants, ContentIdsAreHashedOnce) {
  std::vector<float> w(64 * 48);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 97) * 0.25f;
  const size_t bytes = w.size() * sizeof(float);
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::desc src({64, 48}, dnnl::memory::data_type::f32, tag::ab);
  const dnnl::memory::desc transposed({64, 48}, dnnl::memory::data_type::f32, tag::ba);
  std::vector<std::shared_ptr<void>> held;
  auto request = [&](const dnnl::memory::desc& md, uint64_t id, const char* packing = "") {
    held.push_back(onednn::shared_reordered_constant(
        w.data(), src, md,
        [&] {
          return std::shared_ptr<void>(new char[bytes],
                                       [](void* p) { delete[] static_cast<char*>(p); });
        },
        [&](void* block) { std::memcpy(block, w.data(), bytes); }, packing, id));
    return held.back().get();
  };
  // An id no other test of this process uses (the core's start at 1 and count up).
  const uint64_t id = uint64_t{1} << 62;
  const uint64_t start = onednn::shared_constant_stats().hashed_bytes;
  void* a = request(src, id);
  EXPECT_EQ(onednn::shared_constant_stats().hashed_bytes - start, bytes);
  EXPECT_EQ(request(src, id), a);            // a hit, not hashed again
  EXPECT_NE(request(transposed, id), a);     // another layout: a new block, still not hashed
  EXPECT_NE(request(src, id, "matvec"), a);  // another packing of the same bytes: a new block
  EXPECT_EQ(onednn::shared_constant_stats().hashed_bytes - start, bytes);
  EXPECT_EQ(request(src, 0), a);  // the same bytes without an id: found by their hash
  EXPECT_EQ(onednn::shared_constant_stats().hashed_bytes - start, 2 * bytes);
}

// A matrix-vector product's packed weights (matvec.hpp) are shared between the plans of a
// model's input shapes, like reordered ones: a generation loop plans every step anew.
TEST(OnednnSharedConstants, PackedMatvecWeightsAreShared) {
  constexpr int64_t k = 256, n = 1024;
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, k});
  m.input("s", LOOM_DTYPE_FLOAT32, {1, -1});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {k, n}, 1, -.05, .05));
  m.node("MatMul", {"x", "w"}, {"y"});
  m.node("Relu", {"s"}, {"r"});
  m.output("y");
  m.output("r");
  const auto path = m.save();
  static const loom::Runtime runtime({plugin_dir()}, /*default_paths=*/false);
  ModelHandle model = load_model(runtime.get(), path);
  TestSession reference = open_session(runtime.get(), model.get(), "cpu");
  TestSession session = open_session(runtime.get(), model.get(), onednn_only());
  auto inputs = [](int64_t length) {
    return std::vector<std::pair<std::string, Tensor>>{
        {"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, k}, 2)},
        {"s", random_tensor(LOOM_DTYPE_FLOAT32, {1, length}, 3)}};
  };
  expect_outputs_match(session.run(inputs(5)), reference.run(inputs(5)));
  const size_t before = heap_in_use();
  for (int64_t length = 6; length < 10; ++length)
    expect_outputs_match(session.run(inputs(length)), reference.run(inputs(length)));
  const size_t grown = heap_in_use() - std::min(heap_in_use(), before);
  EXPECT_LT(grown, size_t{k * n * sizeof(float)}) << "a plan packed the weights again";
  std::filesystem::remove(path);
}

// The host's content ids (plugin ABI 1.7) spare the plans of further shapes hashing the weights:
// the first compile hashes them, the next ones nothing (the device's debug log tells).
TEST(OnednnSharedConstants, LaterPlansHashNoWeights) {
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {1, 256});
  m.input("s", LOOM_DTYPE_FLOAT32, {-1, 64});
  m.initializer("w", random_tensor(LOOM_DTYPE_FLOAT32, {256, 512}, 1, -.05, .05));
  m.initializer("v", random_tensor(LOOM_DTYPE_FLOAT32, {64, 256}, 2, -.05, .05));
  m.node("MatMul", {"x", "w"}, {"y"});
  m.node("MatMul", {"s", "v"}, {"z"});  // a product of a shape-dependent M: oneDNN's reorder
  m.node("Relu", {"s"}, {"r"});
  m.output("y");
  m.output("z");
  m.output("r");
  std::vector<std::vector<std::pair<std::string, Tensor>>> runs;
  for (int64_t rows : {3, 4, 5}) {
    runs.push_back({{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 256}, 3)},
                    {"s", random_tensor(LOOM_DTYPE_FLOAT32, {rows, 64}, 4)}});
  }
  RunOptions options;
  options.devices = "onednn";
  options.no_fallback = true;
  options.threads = 1;
  std::vector<std::string> hashed;
  for (const std::string& line : run_model_capturing_log(m, runs, options, "onednn")) {
    const size_t at = line.find("weights hashed ");
    if (at != std::string::npos) hashed.push_back(line.substr(at, line.find(" KiB", at) - at));
  }
  ASSERT_EQ(hashed.size(), 3u) << "one compile per input shape";
  EXPECT_NE(hashed[0], "weights hashed 0");
  EXPECT_EQ(hashed[1], "weights hashed 0");
  EXPECT_EQ(hashed[2], "weights hashed 0");
}

}  // namespace
}  // namespace loom::device_testing
