// Element conversions and the JSON writer of the apps' common library.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <loom_apps/dtype.hpp>
#include <loom_apps/json_writer.hpp>

namespace loom::apps {
namespace {

TEST(Dtype, HalfConversionsAreExactWhereRepresentable) {
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half(65520.0f), 0x7C00);                      // rounds to infinity
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie rounds to even
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    float f = half_to_float(static_cast<uint16_t>(bits));
    if (std::isnan(f)) continue;  // NaN payloads need not survive
    ASSERT_EQ(float_to_half(f), bits) << bits;
  }
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));
}

TEST(Dtype, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3F80);
  EXPECT_EQ(bfloat16_to_float(0x3F80), 1.0f);
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie, even stays
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
}

TEST(Dtype, SizesAndNames) {
  EXPECT_EQ(dtype_size(LOOM_DTYPE_COMPLEX128), 16u);
  EXPECT_EQ(dtype_size(LOOM_DTYPE_STRING), 0u);
  EXPECT_EQ(dtype_name(LOOM_DTYPE_BFLOAT16), "bfloat16");
  int64_t v[] = {5, -7};
  EXPECT_EQ(element_as_double(LOOM_DTYPE_INT64, v, 1), -7.0);
}

TEST(JsonWriter, WritesNestedDocuments) {
  JsonWriter w;
  w.begin_object();
  w.key("name").value("a\"b\n");
  w.key("values").begin_array().value(1.5).value(int64_t{-3}).value(std::nan("")).end_array();
  w.key("ok").value(true);
  w.key("plan").raw(R"({"x":1})");
  w.key("empty").begin_object().end_object();
  w.end_object();
  EXPECT_EQ(w.str(),
            R"({"name":"a\"b\n","values":[1.5,-3,"NaN"],"ok":true,"plan":{"x":1},"empty":{}})");
}

TEST(JsonWriter, EscapesControlCharacters) {
  EXPECT_EQ(JsonWriter::escape(std::string("\x01", 1)), "\"\\u0001\"");
}

}  // namespace
}  // namespace loom::apps
