// TensorProto reader/writer: raw_data and typed fields, the ONNX test data, malformed input.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <loom_apps/dtype.hpp>
#include <loom_apps/npy.hpp>
#include <loom_apps/tensor_proto.hpp>

namespace loom::apps {
namespace {

std::string serialized(const onnx::TensorProto& p) {
  std::string s;
  p.SerializeToString(&s);
  return s;
}

void expect_error(const std::string& bytes, const std::string& fragment) {
  try {
    parse_tensor_proto(bytes, "t.pb");
    FAIL() << "expected an error containing '" << fragment << "'";
  } catch (const TensorIoError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(TensorProto, RoundTripsEveryDtype) {
  for (int d = LOOM_DTYPE_FLOAT32; d <= LOOM_DTYPE_BFLOAT16; ++d) {
    auto dtype = static_cast<loom_dtype_t>(d);
    HostTensor t = HostTensor::zeros(dtype, {2, 3});
    if (dtype == LOOM_DTYPE_STRING) {
      t.strings = {"a", "", "ccc", "d", "e\xc3\xa9", "f"};
    } else {
      for (size_t i = 0; i < t.data.size(); ++i)
        t.data[i] = static_cast<std::byte>(dtype == LOOM_DTYPE_BOOL ? (i + 1) % 2 : i * 7 + 1);
    }
    NamedTensor back = parse_tensor_proto(serialize_tensor_proto("x", t), "t.pb");
    EXPECT_EQ(back.name, "x");
    EXPECT_EQ(back.tensor.dtype, dtype) << dtype_name(dtype);
    EXPECT_EQ(back.tensor.dims, t.dims);
    EXPECT_EQ(back.tensor.data, t.data) << dtype_name(dtype);
    EXPECT_EQ(back.tensor.strings, t.strings);
  }
}

TEST(TensorProto, ReadsTypedFields) {
  onnx::TensorProto f;
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(3);
  for (float v : {1.5f, -2.0f, 3.25f}) f.add_float_data(v);
  HostTensor ft = parse_tensor_proto(serialized(f), "t.pb").tensor;
  EXPECT_EQ(ft.as<float>()[2], 3.25f);

  onnx::TensorProto i8;
  i8.set_data_type(onnx::TensorProto::INT8);
  i8.add_dims(2);
  i8.add_int32_data(-5);
  i8.add_int32_data(7);
  HostTensor it = parse_tensor_proto(serialized(i8), "t.pb").tensor;
  EXPECT_EQ(it.as<int8_t>()[0], -5);
  EXPECT_EQ(it.as<int8_t>()[1], 7);

  onnx::TensorProto h;
  h.set_data_type(onnx::TensorProto::FLOAT16);
  h.add_int32_data(float_to_half(0.5f));  // scalar
  HostTensor ht = parse_tensor_proto(serialized(h), "t.pb").tensor;
  EXPECT_TRUE(ht.dims.empty());
  EXPECT_EQ(half_to_float(ht.as<uint16_t>()[0]), 0.5f);

  onnx::TensorProto u;
  u.set_data_type(onnx::TensorProto::UINT64);
  u.add_dims(1);
  u.add_uint64_data(UINT64_MAX);
  EXPECT_EQ(parse_tensor_proto(serialized(u), "t.pb").tensor.as<uint64_t>()[0], UINT64_MAX);

  onnx::TensorProto c;
  c.set_data_type(onnx::TensorProto::COMPLEX128);
  c.add_dims(1);
  c.add_double_data(1.0);
  c.add_double_data(-1.0);
  HostTensor ct = parse_tensor_proto(serialized(c), "t.pb").tensor;
  EXPECT_EQ(ct.as<double>()[1], -1.0);
}

TEST(TensorProto, ReadsOnnxBackendTestData) {
  const std::string dir = "/usr/share/libonnx-testdata/data/node/test_add/test_data_set_0/";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "libonnx-testdata is not installed";
  NamedTensor x = read_tensor_proto(dir + "input_0.pb");
  NamedTensor y = read_tensor_proto(dir + "input_1.pb");
  NamedTensor sum = read_tensor_proto(dir + "output_0.pb");
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.tensor.dtype, LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(x.tensor.dims, (std::vector<int64_t>{3, 4, 5}));
  for (size_t i = 0; i < 60; ++i)
    EXPECT_FLOAT_EQ(sum.tensor.as<float>()[i], x.tensor.as<float>()[i] + y.tensor.as<float>()[i]);
}

TEST(TensorProto, ProbesFileKindByContent) {
  HostTensor t = HostTensor::zeros(LOOM_DTYPE_INT32, {2});
  t.as<int32_t>()[1] = 42;
  auto dir = std::filesystem::temp_directory_path();
  // Deliberately misleading extensions: the content decides.
  auto npy_path = (dir / "loom_probe_test.pb").string();
  auto pb_path = (dir / "loom_probe_test.npy").string();
  write_npy(npy_path, t);
  write_tensor_proto(pb_path, "named", t);
  EXPECT_EQ(read_tensor_file(npy_path).tensor.as<int32_t>()[1], 42);
  NamedTensor pb = read_tensor_file(pb_path);
  EXPECT_EQ(pb.name, "named");
  EXPECT_EQ(pb.tensor.as<int32_t>()[1], 42);
  std::filesystem::remove(npy_path);
  std::filesystem::remove(pb_path);
}

TEST(TensorProto, RefusesMalformedTensors) {
  expect_error(std::string("\xff\xff\xff\xff\xff", 5), "not a valid ONNX TensorProto");

  onnx::TensorProto no_type;
  no_type.add_dims(2);
  expect_error(serialized(no_type), "data_type");

  onnx::TensorProto short_raw;
  short_raw.set_data_type(onnx::TensorProto::FLOAT);
  short_raw.add_dims(4);
  short_raw.set_raw_data(std::string(12, '\0'));
  expect_error(serialized(short_raw), "raw_data holds 12 bytes");

  onnx::TensorProto short_typed;
  short_typed.set_data_type(onnx::TensorProto::INT64);
  short_typed.add_dims(3);
  short_typed.add_int64_data(1);
  expect_error(serialized(short_typed), "int64_data holds 1 values");

  onnx::TensorProto external;
  external.set_data_type(onnx::TensorProto::FLOAT);
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  expect_error(serialized(external), "external data");

  onnx::TensorProto negative;
  negative.set_data_type(onnx::TensorProto::FLOAT);
  negative.add_dims(-1);
  expect_error(serialized(negative), "negative dimension");

  // Billions of elements claimed by a tiny file: refused before any allocation.
  onnx::TensorProto huge;
  huge.set_data_type(onnx::TensorProto::DOUBLE);
  huge.add_dims(int64_t{1} << 40);
  huge.add_double_data(1.0);
  expect_error(serialized(huge), "more elements than the file holds");
}

TEST(TensorProto, EveryTruncationIsHandled) {
  HostTensor t = HostTensor::zeros(LOOM_DTYPE_FLOAT32, {4, 4});
  std::string bytes = serialize_tensor_proto("name", t);
  for (size_t len = 0; len < bytes.size(); ++len) {
    try {
      // A prefix may still be a valid message (fields are optional); it must then be
      // self-consistent, never a tensor whose data does not match its shape.
      NamedTensor back = parse_tensor_proto(bytes.substr(0, len), "t.pb");
      EXPECT_EQ(back.tensor.data.size(),
                back.tensor.element_count() * dtype_size(back.tensor.dtype));
    } catch (const TensorIoError&) {
    }
  }
}

}  // namespace
}  // namespace loom::apps
