// The SDK's shared device machinery on its own: the device kit's option reader and instance
// picking, fp16/bf16 conversion, axis and auto_pad semantics and the op registry. The kit's ABI
// entries are exercised against every real device by tests/devices/common/device_abi_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <loom/device_kit.hpp>
#include <loom/half.hpp>
#include <loom/op_registry.hpp>
#include <loom/op_semantics.hpp>
#include <string>
#include <vector>

namespace loom::sdk {
namespace {

// The message of the loom::sdk::Error `fn` throws, or "" when it does not throw.
template <class Fn>
std::string error_of(Fn fn, loom_status_code_t* code = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

TEST(OptionReader, ReadsDeclaredKeysAndRefusesTheRest) {
  int threads = 0;
  std::string precision = "f32", gemm = "auto";
  bool validation = false;
  auto reader = [&] {
    return kit::OptionReader("gpu")
        .threads(&threads)
        .precision(&precision)
        .choice("gemm", {"auto", "tiled", "blocked"}, &gemm)
        .flag("validation", &validation);
  };
  reader().read("threads=3;precision=f16;gpu.gemm=tiled;validation=on;cpu.colour=red");
  EXPECT_EQ(threads, 3);
  EXPECT_EQ(precision, "f16");
  EXPECT_EQ(gemm, "tiled");
  EXPECT_TRUE(validation);
  reader().read(nullptr);  // no options: nothing changes
  EXPECT_EQ(threads, 3);

  loom_status_code_t code = LOOM_OK;
  std::string e = error_of([&] { reader().read("colour=red"); }, &code);
  EXPECT_EQ(code, LOOM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(e.find("unknown option 'colour'"), std::string::npos) << e;
  EXPECT_NE(e.find("threads=N, precision=f32|bf16|f16, gemm=auto|tiled|blocked, validation=0|1"),
            std::string::npos)
      << e;
  e = error_of([&] { reader().read("threads=-1"); });
  EXPECT_NE(e.find("gpu device: option threads='-1' is not a thread count 0..4096"),
            std::string::npos)
      << e;
  EXPECT_NE(error_of([&] { reader().read("threads=5000"); }), "");
  EXPECT_NE(error_of([&] { reader().read("threads=2x"); }), "");
  e = error_of([&] { reader().read("gemm=fast"); });
  EXPECT_NE(e.find("gemm='fast' is not auto, tiled or blocked"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { reader().read("validation=maybe"); }).find("is not 0 or 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { reader().read("threads"); }).find("is not KEY=VALUE"),
            std::string::npos);
  // An ignored key is accepted (and listed), whatever its value.
  kit::OptionReader("gpu").ignore("threads", "N").read("threads=anything");
}

TEST(OptionReader, SubsetsAreListsOfDistinctItemsOrNone) {
  std::vector<std::string> keep{"a", "b"};
  auto reader = [&] { return kit::OptionReader("gpu").subset("keep", {"a", "b", "c"}, &keep); };
  reader().read("keep=c,a");
  EXPECT_EQ(keep, (std::vector<std::string>{"c", "a"}));
  reader().read("gpu.keep=none");
  EXPECT_TRUE(keep.empty());
  reader().read("keep=b");
  EXPECT_EQ(keep, (std::vector<std::string>{"b"}));
  for (const char* bad : {"keep=", "keep=d", "keep=a,a", "keep=a,", "keep=none,a", "keep=A"}) {
    loom_status_code_t code = LOOM_OK;
    std::string e = error_of([&] { reader().read(bad); }, &code);
    EXPECT_EQ(code, LOOM_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_NE(e.find("is not none or a list of distinct items from a,b,c"), std::string::npos) << e;
    EXPECT_EQ(keep, (std::vector<std::string>{"b"})) << bad;  // unchanged
  }
  std::string e = error_of([&] { reader().read("colour=red"); });
  EXPECT_NE(e.find("keep=none|a,b,c"), std::string::npos) << e;
}

TEST(PickInstance, FirstUsableOrTheOneAskedFor) {
  std::vector<kit::InstanceInfo> listed = {{"gpu:0", "old", "driver too old", 0},
                                           {"gpu:1", "new", "", 0}};
  EXPECT_EQ(kit::pick_instance(listed, -1, "gpu"), 1u);
  EXPECT_EQ(kit::pick_instance(listed, 1, "gpu"), 1u);
  loom_status_code_t code = LOOM_OK;
  std::string e = error_of([&] { kit::pick_instance(listed, 0, "gpu"); }, &code);
  EXPECT_EQ(code, LOOM_ERROR_UNAVAILABLE);
  EXPECT_NE(e.find("gpu:0: driver too old"), std::string::npos) << e;
  e = error_of([&] { kit::pick_instance(listed, 7, "gpu"); }, &code);
  EXPECT_EQ(code, LOOM_ERROR_NOT_FOUND);
  EXPECT_NE(e.find("gpu:7 does not exist (there are 2"), std::string::npos) << e;
  listed[1].unavailable = "no memory";
  e = error_of([&] { kit::pick_instance(listed, -1, "gpu"); }, &code);
  EXPECT_EQ(code, LOOM_ERROR_UNAVAILABLE);
  EXPECT_NE(e.find("gpu:0: driver too old; gpu:1: no memory"), std::string::npos) << e;
  EXPECT_GE(kit::resolve_threads(0), 1);
  EXPECT_EQ(kit::resolve_threads(3), 3);
}

// get_info hands the instance's cost hints (ABI 1.9) to a host that reads them and writes
// nothing past the struct_size of a host built before them.
TEST(DeviceInfo, CostHintsFillAsFarAsTheCallerReads) {
  kit::InstanceInfo info{"gpu:0", "a GPU", "", 0, {750, 12, 15, 9}};
  loom_device_info_t out{};
  out.struct_size = sizeof out;
  kit::detail::fill_info(info, &out);
  EXPECT_EQ(out.struct_size, sizeof out);
  EXPECT_STREQ(out.name, "gpu:0");
  EXPECT_EQ(out.cost_gflops, 750);
  EXPECT_EQ(out.cost_transfer_gbps, 12);
  EXPECT_EQ(out.cost_transfer_latency_us, 15);
  EXPECT_EQ(out.cost_launch_us, 9);

  const size_t old_size = offsetof(loom_device_info_t, cost_gflops);  // a 1.8 host
  std::vector<unsigned char> bytes(sizeof(loom_device_info_t), 0xAB);
  loom_device_info_t* old = reinterpret_cast<loom_device_info_t*>(bytes.data());
  old->struct_size = old_size;
  kit::detail::fill_info(info, old);
  EXPECT_EQ(old->struct_size, old_size);
  EXPECT_STREQ(old->name, "gpu:0");
  for (size_t i = old_size; i < bytes.size(); ++i) ASSERT_EQ(bytes[i], 0xAB) << i;
}

TEST(Half, EveryHalfRoundTripsAndFloatsRoundToNearestEven) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const float f = half_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    ASSERT_EQ(float_to_half(f), bits) << bits;
  }
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(float_to_half(-1e9f), 0xfc00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);             // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);             // a tie: to even (zero)
  EXPECT_EQ(float_to_half(std::ldexp(1.5f, -25)), 0x0001);             // above the tie
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie: to even
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie: to even (up)
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  static_assert(float_to_half(2.0f) == 0x4000 && half_to_float(0x4000) == 2.0f);

  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie: to even
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie: to even (up)
  EXPECT_TRUE(
      std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload is only in the low bits stays a NaN instead of becoming infinity.
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::bit_cast<float>(0x7f800001u)))));
}

TEST(OpSemantics, AxesFollowOneRule) {
  EXPECT_EQ(normalize_axis(-1, 4, "Softmax node 's'"), 3);
  EXPECT_EQ(normalize_axis(0, 1, "x"), 0);
  EXPECT_EQ(try_normalize_axis(4, 4), std::nullopt);
  EXPECT_EQ(try_normalize_axis(-5, 4), std::nullopt);
  EXPECT_EQ(try_normalize_axis(0, 0), std::nullopt);  // a scalar has no axis
  loom_status_code_t code = LOOM_OK;
  std::string e = error_of([] { normalize_axis(3, 2, "Concat node 'c'"); }, &code);
  EXPECT_EQ(code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(e.find("Concat node 'c': axis 3 is out of range for rank 2"), std::string::npos) << e;
  const std::vector<int64_t> axes = {0, -1};
  EXPECT_EQ(normalize_axes(axes, 3, "r"), (std::vector<int64_t>{0, 2}));
  const std::vector<int64_t> twice = {1, -2};
  EXPECT_NE(error_of([&] { normalize_axes(twice, 3, "r"); }).find("axis -2 is given twice"),
            std::string::npos);
}

TEST(OpSemantics, AutoPadResolvesLikeOnnx) {
  EXPECT_EQ(parse_auto_pad(""), AutoPad::kNotSet);
  EXPECT_EQ(parse_auto_pad("SAME_LOWER"), AutoPad::kSameLower);
  EXPECT_EQ(parse_auto_pad("same_upper"), std::nullopt);
  // in 5, kernel 2, stride 2 -> out 3 needs one pad: at the end (UPPER) or beginning (LOWER).
  AxisPads upper = resolve_pads(AutoPad::kSameUpper, 5, 3, 2, 2, 1, {});
  AxisPads lower = resolve_pads(AutoPad::kSameLower, 5, 3, 2, 2, 1, {});
  EXPECT_EQ(upper.begin, 0);
  EXPECT_EQ(upper.end, 1);
  EXPECT_EQ(lower.begin, 1);
  EXPECT_EQ(lower.end, 0);
  // in 7, kernel 3, dilation 2 (extent 5), stride 1 -> out 7 needs 4: split evenly.
  AxisPads even = resolve_pads(AutoPad::kSameUpper, 7, 7, 3, 1, 2, {});
  EXPECT_EQ(even.begin, 2);
  EXPECT_EQ(even.end, 2);
  AxisPads valid = resolve_pads(AutoPad::kValid, 7, 3, 3, 2, 1, {5, 5});
  EXPECT_EQ(valid.begin, 0);
  EXPECT_EQ(valid.end, 0);
  AxisPads given = resolve_pads(AutoPad::kNotSet, 7, 4, 3, 2, 1, {1, 2});
  EXPECT_EQ(given.begin, 1);
  EXPECT_EQ(given.end, 2);
}

TEST(OpRegistry, FindsTheNewestVersionNotAboveTheOpset) {
  OpRegistry<int> ops;
  ops.add("Relu", 1);
  ops.add("", "Resize", 10, 10);
  ops.add("ai.onnx", "Resize", 11, 11);
  ops.add("ai.onnx", "Resize", 13, 13);
  ops.add("com.microsoft", "Gelu", 1);
  EXPECT_EQ(*ops.find("", "Relu", 21), 1);
  EXPECT_EQ(*ops.find("ai.onnx", "Resize", 12), 11);
  EXPECT_EQ(*ops.find("", "Resize", 19), 13);
  EXPECT_EQ(ops.find("", "Resize", 9), nullptr);  // only newer versions
  EXPECT_EQ(ops.find("", "Gelu", 20), nullptr);   // another domain
  EXPECT_EQ(*ops.find("com.microsoft", "Gelu", 1), 1);
  EXPECT_TRUE(ops.contains("ai.onnx", "Relu"));
  EXPECT_FALSE(ops.contains("", "Conv"));
  EXPECT_EQ(ops.names(), (std::vector<std::string>{"Relu", "Resize", "com.microsoft::Gelu"}));
}

}  // namespace
}  // namespace loom::sdk
