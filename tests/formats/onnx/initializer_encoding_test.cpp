// Every way an ONNX file can carry initializer data, and the errors for inconsistent data.
#include <gtest/gtest.h>

#include <cstring>

#include "model_helpers.hpp"

namespace loom::onnx::testing {
namespace {

using TP = ::onnx::TensorProto;

// relu_model plus one initializer "w" shaped by `fill`.
Loaded load_with_initializer(int32_t data_type, std::initializer_list<int64_t> dims,
                             const std::function<void(TP&)>& fill) {
  ::onnx::ModelProto m = relu_model();
  TP& t = add_initializer(*m.mutable_graph(), "w", data_type, dims);
  fill(t);
  return load_model(m);
}

template <typename T>
std::string raw_bytes(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), std::data(values), s.size());
  return s;
}

TEST(OnnxInitializer, RawDataFloat) {
  Loaded r = load_with_initializer(TP::FLOAT, {2, 3}, [](TP& t) {
    t.set_raw_data(raw_bytes<float>({1, 2, 3, 4, 5, 6.5f}));
  });
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedTensor* w = r.graph().initializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(w->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(w->as<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6.5f}));
}

TEST(OnnxInitializer, RawDataInt64) {
  Loaded r = load_with_initializer(TP::INT64, {3}, [](TP& t) {
    t.set_raw_data(raw_bytes<int64_t>({-1, int64_t{1} << 40, 7}));
  });
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_EQ(r.graph().initializer("w")->as<int64_t>(),
            (std::vector<int64_t>{-1, int64_t{1} << 40, 7}));
}

TEST(OnnxInitializer, FloatData) {
  Loaded r = load_with_initializer(TP::FLOAT, {2}, [](TP& t) {
    t.add_float_data(-1.5f);
    t.add_float_data(3.25f);
  });
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_EQ(r.graph().initializer("w")->as<float>(), (std::vector<float>{-1.5f, 3.25f}));
}

TEST(OnnxInitializer, ScalarWithoutDims) {
  Loaded r = load_with_initializer(TP::FLOAT, {}, [](TP& t) { t.add_float_data(42.f); });
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_TRUE(r.graph().initializer("w")->dims.empty());
  EXPECT_EQ(r.graph().initializer("w")->as<float>(), (std::vector<float>{42.f}));
}

TEST(OnnxInitializer, Int32DataCarriesNarrowIntegerTypes) {
  struct Case {
    int32_t type;
    loom_dtype_t dtype;
    std::vector<int32_t> values;
    std::vector<uint8_t> expected_bytes;
  };
  const Case cases[] = {
      {TP::INT8, LOOM_DTYPE_INT8, {-128, 5, 127}, {0x80, 0x05, 0x7f}},
      {TP::UINT8, LOOM_DTYPE_UINT8, {0, 200, 255}, {0x00, 0xc8, 0xff}},
      {TP::INT16, LOOM_DTYPE_INT16, {-2, 300}, {0xfe, 0xff, 0x2c, 0x01}},
      {TP::UINT16, LOOM_DTYPE_UINT16, {65535, 1}, {0xff, 0xff, 0x01, 0x00}},
      {TP::BOOL, LOOM_DTYPE_BOOL, {1, 0, 1}, {1, 0, 1}},
  };
  for (const Case& c : cases) {
    Loaded r = load_with_initializer(c.type, {static_cast<int64_t>(c.values.size())}, [&](TP& t) {
      for (int32_t v : c.values) t.add_int32_data(v);
    });
    ASSERT_TRUE(r.ok()) << c.type << ": " << r.outcome.message;
    const RecordedTensor* w = r.graph().initializer("w");
    EXPECT_EQ(w->dtype, c.dtype);
    EXPECT_EQ(w->bytes, c.expected_bytes) << "ONNX type " << c.type;
  }
}

TEST(OnnxInitializer, Float16AndBfloat16BitPatternsInInt32Data) {
  // 1.0 and -2.0 in IEEE half, and 1.0 in bfloat16.
  Loaded r = load_with_initializer(TP::FLOAT16, {2}, [](TP& t) {
    t.add_int32_data(0x3C00);
    t.add_int32_data(0xC000);
  });
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_EQ(r.graph().initializer("w")->dtype, LOOM_DTYPE_FLOAT16);
  EXPECT_EQ(r.graph().initializer("w")->as<uint16_t>(), (std::vector<uint16_t>{0x3C00, 0xC000}));

  Loaded b = load_with_initializer(TP::BFLOAT16, {1}, [](TP& t) { t.add_int32_data(0x3F80); });
  ASSERT_TRUE(b.ok()) << b.outcome.message;
  EXPECT_EQ(b.graph().initializer("w")->dtype, LOOM_DTYPE_BFLOAT16);
  EXPECT_EQ(b.graph().initializer("w")->as<uint16_t>(), (std::vector<uint16_t>{0x3F80}));
}

TEST(OnnxInitializer, Int32Int64DoubleUint64Fields) {
  Loaded i32 = load_with_initializer(TP::INT32, {2}, [](TP& t) {
    t.add_int32_data(-7);
    t.add_int32_data(1 << 30);
  });
  ASSERT_TRUE(i32.ok()) << i32.outcome.message;
  EXPECT_EQ(i32.graph().initializer("w")->as<int32_t>(), (std::vector<int32_t>{-7, 1 << 30}));

  Loaded i64 =
      load_with_initializer(TP::INT64, {1}, [](TP& t) { t.add_int64_data(-(int64_t{1} << 50)); });
  ASSERT_TRUE(i64.ok()) << i64.outcome.message;
  EXPECT_EQ(i64.graph().initializer("w")->as<int64_t>(),
            (std::vector<int64_t>{-(int64_t{1} << 50)}));

  Loaded f64 = load_with_initializer(TP::DOUBLE, {1}, [](TP& t) { t.add_double_data(0.1); });
  ASSERT_TRUE(f64.ok()) << f64.outcome.message;
  EXPECT_EQ(f64.graph().initializer("w")->as<double>(), (std::vector<double>{0.1}));

  Loaded u64 =
      load_with_initializer(TP::UINT64, {1}, [](TP& t) { t.add_uint64_data(~uint64_t{0}); });
  ASSERT_TRUE(u64.ok()) << u64.outcome.message;
  EXPECT_EQ(u64.graph().initializer("w")->as<uint64_t>(), (std::vector<uint64_t>{~uint64_t{0}}));

  Loaded u32 = load_with_initializer(TP::UINT32, {2}, [](TP& t) {
    t.add_uint64_data(4000000000u);
    t.add_uint64_data(3);
  });
  ASSERT_TRUE(u32.ok()) << u32.outcome.message;
  EXPECT_EQ(u32.graph().initializer("w")->dtype, LOOM_DTYPE_UINT32);
  EXPECT_EQ(u32.graph().initializer("w")->as<uint32_t>(), (std::vector<uint32_t>{4000000000u, 3}));
}

TEST(OnnxInitializer, Complex64UsesTwoFloatsPerElement) {
  Loaded r = load_with_initializer(TP::COMPLEX64, {2}, [](TP& t) {
    for (float v : {1.f, 2.f, 3.f, 4.f}) t.add_float_data(v);
  });
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_EQ(r.graph().initializer("w")->dtype, LOOM_DTYPE_COMPLEX64);
  EXPECT_EQ(r.graph().initializer("w")->as<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(OnnxInitializer, StringData) {
  Loaded r = load_with_initializer(TP::STRING, {3}, [](TP& t) {
    t.add_string_data("alpha");
    t.add_string_data("");
    t.add_string_data(std::string("nul\0inside", 10));
  });
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedTensor* w = r.graph().initializer("w");
  EXPECT_EQ(w->dtype, LOOM_DTYPE_STRING);
  EXPECT_EQ(w->strings, (std::vector<std::string>{"alpha", "", std::string("nul\0inside", 10)}));
}

TEST(OnnxInitializer, EmptyTensorNeedsNoData) {
  Loaded r = load_with_initializer(TP::FLOAT, {0, 4}, [](TP&) {});
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  EXPECT_EQ(r.graph().initializer("w")->dims, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(r.graph().initializer("w")->bytes.empty());
}

TEST(OnnxInitializer, RawDataSizeMismatchNamesTensorAndShape) {
  ::onnx::ModelProto m = relu_model();
  TP& t = add_initializer(*m.mutable_graph(), "conv1.weight", TP::FLOAT, {64, 3, 7, 7});
  t.set_raw_data(std::string(100, '\0'));
  Loaded r = load_model(m);
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "initializer 'conv1.weight': raw_data has 100 bytes but shape 64x3x7x7 float32 needs "
            "37632");
}

TEST(OnnxInitializer, TypedFieldCountMismatch) {
  Loaded r = load_with_initializer(TP::FLOAT, {2, 3}, [](TP& t) {
    for (int i = 0; i < 5; ++i) t.add_float_data(1.f);
  });
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "initializer 'w': float_data has 5 values but shape 2x3 float32 needs 6");
}

TEST(OnnxInitializer, ValueOutOfRangeForNarrowType) {
  Loaded r = load_with_initializer(TP::UINT8, {2}, [](TP& t) {
    t.add_int32_data(1);
    t.add_int32_data(300);
  });
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message, "initializer 'w': int32_data[1] = 300 does not fit uint8");
}

TEST(OnnxInitializer, DataInTwoPlacesIsRefused) {
  Loaded r = load_with_initializer(TP::FLOAT, {1}, [](TP& t) {
    t.add_float_data(1.f);
    t.set_raw_data(raw_bytes<float>({1.f}));
  });
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("holds data both in raw_data and in float_data"),
            std::string::npos)
      << r.outcome.message;
}

TEST(OnnxInitializer, WrongTypedFieldForDtype) {
  Loaded r = load_with_initializer(TP::FLOAT, {1}, [](TP& t) { t.add_int64_data(1); });
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "initializer 'w': float32 data must be in float_data, not int64_data");
}

TEST(OnnxInitializer, MissingDataAndMissingType) {
  Loaded none = load_with_initializer(TP::FLOAT, {4}, [](TP&) {});
  EXPECT_EQ(none.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(none.outcome.message,
            "initializer 'w': shape 4 float32 has 4 elements but the tensor holds no data");

  Loaded untyped = load_with_initializer(0, {1}, [](TP& t) { t.add_float_data(1.f); });
  EXPECT_EQ(untyped.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(untyped.outcome.message, "initializer 'w': data_type is not set");
}

TEST(OnnxInitializer, StringsInRawDataAreRefused) {
  Loaded r = load_with_initializer(TP::STRING, {1}, [](TP& t) { t.set_raw_data("abc"); });
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("string tensors cannot use raw_data"), std::string::npos);
}

TEST(OnnxInitializer, ElementTypeFromNewerOnnxIsUnsupported) {
  // 29 is past FLOAT6E3M2 (28), the last type of onnx 1.23 and of plugin ABI 1.6.
  Loaded r = load_with_initializer(29, {1}, [](TP& t) { t.set_raw_data("x"); });
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_UNSUPPORTED);
  EXPECT_NE(r.outcome.message.find("initializer 'w': element type"), std::string::npos)
      << r.outcome.message;
  EXPECT_NE(r.outcome.message.find("not supported by Loom"), std::string::npos)
      << r.outcome.message;
}

TEST(OnnxInitializer, PackedInt4RawDataIsUnpackedOnePerByte) {
  // Three int4 in two bytes, low nibble first: 7, -8, -1 (the last high nibble is padding).
  Loaded r = load_with_initializer(22 /* INT4 */, {3}, [](TP& t) {
    t.set_raw_data(std::string{static_cast<char>(0x87), static_cast<char>(0x0F)});
  });
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedTensor* w = r.graph().initializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, LOOM_DTYPE_INT4);
  EXPECT_EQ(w->as<int8_t>(), (std::vector<int8_t>{7, -8, -1}));
  // Two bytes hold four int4, not five: a short raw_data is refused, never read past.
  Loaded short_data = load_with_initializer(22, {5}, [](TP& t) { t.set_raw_data("ab"); });
  EXPECT_EQ(short_data.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(short_data.outcome.message.find("'w'"), std::string::npos)
      << short_data.outcome.message;
}

TEST(OnnxInitializer, Float8RawDataKeepsItsBytes) {
  Loaded r = load_with_initializer(17 /* FLOAT8E4M3FN */, {2}, [](TP& t) {
    t.set_raw_data(std::string{static_cast<char>(0x38), static_cast<char>(0xC0)});
  });
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedTensor* w = r.graph().initializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->dtype, LOOM_DTYPE_FLOAT8E4M3FN);
  EXPECT_EQ(w->as<uint8_t>(), (std::vector<uint8_t>{0x38, 0xC0}));  // 1.0, -2.0
}

TEST(OnnxInitializer, NegativeDimensionIsRefused) {
  Loaded r = load_with_initializer(TP::FLOAT, {2, -3}, [](TP&) {});
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message, "initializer 'w': negative dimension in shape 2x-3");
}

}  // namespace
}  // namespace loom::onnx::testing
