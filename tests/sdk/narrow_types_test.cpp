// loom/narrow_types.hpp against the ONNX reference (vectors generated once by
// gen_narrow_vectors.py from onnx.numpy_helper / ml_dtypes) and against a brute-force
// nearest-value search over every finite pattern of each format.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <loom/narrow_types.hpp>
#include <loom/plugin.hpp>
#include <string>
#include <vector>

namespace {

namespace nt = loom::sdk::narrow;

#include "narrow_types_vectors.inc"

bool same_value(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);  // -0 differs from +0
}

TEST(NarrowTypes, DecodesEveryByteLikeTheReference) {
  for (const DecodeVector& v : kDecode) {
    for (int b = 0; b < v.codes; ++b) {
      float expected = std::bit_cast<float>(v.bits[b]);
      float got = nt::to_float(v.dtype, static_cast<uint8_t>(b));
      EXPECT_TRUE(same_value(got, expected))
          << loom::sdk::dtype_name(v.dtype) << " byte " << b << ": " << got << " vs " << expected;
    }
  }
}

TEST(NarrowTypes, EncodesLikeTheReference) {
  for (const EncodeVector& v : kEncode) {
    for (size_t i = 0; i < std::size(kEncodeInputs); ++i) {
      float x = std::bit_cast<float>(kEncodeInputs[i]);
      uint8_t got = nt::from_double(v.dtype, x, v.saturate);
      uint8_t expected = v.bytes[i];
      // NaN has several patterns in some formats; any NaN is the same value.
      if (std::isnan(nt::to_float(v.dtype, expected))) {
        EXPECT_TRUE(std::isnan(nt::to_float(v.dtype, got)))
            << loom::sdk::dtype_name(v.dtype) << " saturate=" << v.saturate << " x=" << x;
        continue;
      }
      EXPECT_EQ(int{got}, int{expected})
          << loom::sdk::dtype_name(v.dtype) << " saturate=" << v.saturate << " x=" << x;
    }
  }
}

TEST(NarrowTypes, EncodesE8M0LikeTheReference) {
  for (const E8M0Vector& v : kE8M0) {
    auto mode = nt::parse_e8m0_rounding(v.mode);
    ASSERT_TRUE(mode);
    for (size_t i = 0; i < std::size(kEncodeInputs); ++i) {
      float x = std::bit_cast<float>(kEncodeInputs[i]);
      EXPECT_EQ(int{nt::encode_e8m0(x, v.saturate, *mode)}, int{v.bytes[i]})
          << "saturate=" << v.saturate << " mode=" << v.mode << " x=" << x;
    }
  }
  EXPECT_FALSE(nt::parse_e8m0_rounding("sideways"));
}

// Every finite non-negative pattern of a format, by value.
std::vector<std::pair<double, uint8_t>> finite_values(loom_dtype_t t) {
  auto f = *nt::minifloat(t);
  std::vector<std::pair<double, uint8_t>> out;
  for (unsigned code = 0; code <= f.max_code; ++code) {
    float v = nt::to_float(t, static_cast<uint8_t>(code));
    if (std::isfinite(v)) out.emplace_back(v, static_cast<uint8_t>(code));
  }
  return out;
}

// Rounds by searching every finite value: nearest, ties to the even pattern.
uint8_t brute_force_round(const std::vector<std::pair<double, uint8_t>>& values, double a) {
  double best_diff = INFINITY;
  uint8_t best = 0;
  for (auto [v, code] : values) {
    double d = std::fabs(v - a);
    if (d < best_diff || (d == best_diff && (code & 1) == 0)) {
      best_diff = d;
      best = code;
    }
  }
  return best;
}

TEST(NarrowTypes, RoundsToNearestEvenEverywhereInRange) {
  for (loom_dtype_t t : {LOOM_DTYPE_FLOAT8E4M3FN, LOOM_DTYPE_FLOAT8E4M3FNUZ, LOOM_DTYPE_FLOAT8E5M2,
                         LOOM_DTYPE_FLOAT8E5M2FNUZ, LOOM_DTYPE_FLOAT4E2M1, LOOM_DTYPE_FLOAT6E2M3,
                         LOOM_DTYPE_FLOAT6E3M2}) {
    auto values = finite_values(t);
    auto f = *nt::minifloat(t);
    const uint8_t sign = static_cast<uint8_t>(1u << (f.exp_bits + f.man_bits));
    std::vector<double> probes;
    for (size_t i = 0; i < values.size(); ++i) {
      probes.push_back(values[i].first);
      if (i + 1 < values.size()) {
        double mid = (values[i].first + values[i + 1].first) / 2;
        probes.push_back(mid);
        probes.push_back(std::nextafter(mid, 0.0));
        probes.push_back(std::nextafter(mid, INFINITY));
      }
    }
    for (double p : probes) {
      uint8_t expected = brute_force_round(values, p);
      EXPECT_EQ(int{nt::from_double(t, p, true)}, int{expected})
          << loom::sdk::dtype_name(t) << " x=" << p;
      EXPECT_EQ(int{nt::from_double(t, p, false)}, int{expected})
          << loom::sdk::dtype_name(t) << " x=" << p;
      if (p != 0 && f.special != nt::MiniFloat::kNegZeroNan) {
        EXPECT_EQ(int{nt::from_double(t, -p, true)}, int{expected | sign})
            << loom::sdk::dtype_name(t) << " x=" << -p;
      }
      // Decoding what was encoded gives back an exactly representable value unchanged.
      if (p == nt::to_float(t, expected)) {
        EXPECT_EQ(nt::to_float(t, nt::from_double(t, p)), p);
      }
    }
  }
}

TEST(NarrowTypes, IntegersWrapSaturateAndSignExtend) {
  EXPECT_EQ(nt::int_wrap(LOOM_DTYPE_INT4, 8), uint8_t(0xF8));  // -8, sign-extended
  EXPECT_EQ(nt::int_value(LOOM_DTYPE_INT4, nt::int_wrap(LOOM_DTYPE_INT4, -9)), 7);
  EXPECT_EQ(nt::int_value(LOOM_DTYPE_UINT4, nt::int_wrap(LOOM_DTYPE_UINT4, 300)), 12);
  EXPECT_EQ(nt::int_value(LOOM_DTYPE_INT2, nt::int_wrap(LOOM_DTYPE_INT2, 3)), -1);
  EXPECT_EQ(nt::int_value(LOOM_DTYPE_UINT2, nt::int_wrap(LOOM_DTYPE_UINT2, 5)), 1);
  EXPECT_EQ(nt::int_value(LOOM_DTYPE_INT4, nt::int_saturate(LOOM_DTYPE_INT4, -100)), -8);
  EXPECT_EQ(nt::int_value(LOOM_DTYPE_UINT4, nt::int_saturate(LOOM_DTYPE_UINT4, 100)), 15);
  EXPECT_EQ(nt::int_value(LOOM_DTYPE_INT2, nt::int_saturate(LOOM_DTYPE_INT2, 5)), 1);
  EXPECT_EQ(nt::int_value(LOOM_DTYPE_UINT2, nt::int_saturate(LOOM_DTYPE_UINT2, -5)), 0);
  for (int v = -8; v <= 7; ++v)
    EXPECT_EQ(nt::to_float(LOOM_DTYPE_INT4, nt::int_wrap(LOOM_DTYPE_INT4, v)), v);
}

TEST(NarrowTypes, PackedSizes) {
  EXPECT_EQ(nt::packed_size(LOOM_DTYPE_INT4, 5), 3u);
  EXPECT_EQ(nt::packed_size(LOOM_DTYPE_UINT2, 5), 2u);
  EXPECT_EQ(nt::packed_size(LOOM_DTYPE_FLOAT6E2M3, 5), 4u);  // ceil(30 / 8)
  EXPECT_EQ(nt::packed_size(LOOM_DTYPE_FLOAT8E5M2, 5), 5u);
  EXPECT_EQ(nt::packed_size(LOOM_DTYPE_FLOAT4E2M1, 0), 0u);
  EXPECT_FALSE(nt::packed_size(LOOM_DTYPE_FLOAT32, 5));
  EXPECT_FALSE(nt::packed_size(LOOM_DTYPE_INT4, UINT64_MAX));
}

TEST(NarrowTypes, PacksLikeOnnx) {
  // onnx.numpy_helper.from_array(np.array([1, -2, 7, -8, 3], ml_dtypes.int4)).raw_data
  const uint8_t int4_in[] = {1, 0xFE, 7, 0xF8, 3};
  const uint8_t int4_packed[] = {0xE1, 0x87, 0x03};
  // ... of np.array([1, 2, 3, 0, 2], ml_dtypes.uint2)
  const uint8_t uint2_in[] = {1, 2, 3, 0, 2};
  const uint8_t uint2_packed[] = {0x39, 0x02};
  // ... of np.array([0x01, 0x3F, 0x2A, 0x15, 0x0C], dtype=uint8).view(float6_e2m3fn)
  const uint8_t f6_in[] = {0x01, 0x3F, 0x2A, 0x15, 0x0C};
  const uint8_t f6_packed[] = {0xC1, 0xAF, 0x56, 0x0C};
  struct Case {
    loom_dtype_t t;
    const uint8_t* in;
    const uint8_t* packed;
    size_t n;
  };
  for (Case c : {Case{LOOM_DTYPE_INT4, int4_in, int4_packed, 5},
                 Case{LOOM_DTYPE_UINT2, uint2_in, uint2_packed, 5},
                 Case{LOOM_DTYPE_FLOAT6E2M3, f6_in, f6_packed, 5}}) {
    size_t bytes = *nt::packed_size(c.t, c.n);
    std::vector<uint8_t> packed(bytes, 0xAA);
    nt::pack(c.t, c.in, c.n, packed.data());
    EXPECT_EQ(packed, std::vector<uint8_t>(c.packed, c.packed + bytes))
        << loom::sdk::dtype_name(c.t);
    std::vector<uint8_t> back(c.n);
    nt::unpack(c.t, c.packed, c.n, back.data());
    EXPECT_EQ(back, std::vector<uint8_t>(c.in, c.in + c.n)) << loom::sdk::dtype_name(c.t);
  }
}

}  // namespace
