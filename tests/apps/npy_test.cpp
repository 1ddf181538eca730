// .npy reader/writer: round trips over every dtype, files as NumPy writes them, and malformed
// files that must be refused with a clear message.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <loom_apps/dtype.hpp>
#include <loom_apps/npy.hpp>

namespace loom::apps {
namespace {

// A .npy image with the given version, header text (padded like NumPy) and data bytes.
std::string make_npy(int major, const std::string& dict, const std::string& data) {
  std::string header = dict;
  size_t len_width = major == 1 ? 2 : 4;
  size_t unpadded = 6 + 2 + len_width + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_width; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

std::string float_bytes(std::initializer_list<float> values) {
  std::string s(values.size() * 4, '\0');
  std::memcpy(s.data(), values.begin(), s.size());
  return s;
}

void expect_error(const std::string& bytes, const std::string& fragment) {
  try {
    parse_npy(bytes, "t.npy");
    FAIL() << "expected an error containing '" << fragment << "'";
  } catch (const TensorIoError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("t.npy"), std::string::npos) << e.what();
  }
}

TEST(Npy, ReadsWhatNumPyWrites) {
  // np.save(f, np.arange(6, dtype='<f4').reshape(2, 3)), byte for byte.
  std::string file = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                              float_bytes({0, 1, 2, 3, 4, 5}));
  ASSERT_EQ(file.size(), 152u);
  HostTensor t = parse_npy(file, "t.npy");
  EXPECT_EQ(t.dtype, LOOM_DTYPE_FLOAT32);
  EXPECT_EQ(t.dims, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(t.data.size(), 24u);
  EXPECT_EQ(t.as<float>()[5], 5.0f);
}

TEST(Npy, ReadsVersions2And3) {
  for (int major : {2, 3}) {
    std::string file = make_npy(major, "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
                                std::string("\x07\0\0\0\0\0\0\0", 8));
    HostTensor t = parse_npy(file, "t.npy");
    EXPECT_EQ(t.dtype, LOOM_DTYPE_INT64);
    EXPECT_EQ(t.as<int64_t>()[0], 7);
  }
}

TEST(Npy, ReadsUnicodeAndByteStrings) {
  std::string utf32("a\0\0\0b\0\0\0c\0\0\0\xe9\0\0\0", 16);
  HostTensor u = parse_npy(
      make_npy(1, "{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }", utf32), "t.npy");
  ASSERT_EQ(u.dtype, LOOM_DTYPE_STRING);
  EXPECT_EQ(u.strings, (std::vector<std::string>{"ab", "c\xc3\xa9"}));
  HostTensor s = parse_npy(make_npy(1, "{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }",
                                    std::string("xy\0pqr", 6)),
                           "t.npy");
  EXPECT_EQ(s.strings, (std::vector<std::string>{"xy", "pqr"}));
}

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  const loom_dtype_t dtypes[] = {LOOM_DTYPE_FLOAT16,  LOOM_DTYPE_FLOAT32,   LOOM_DTYPE_FLOAT64,
                                 LOOM_DTYPE_INT8,     LOOM_DTYPE_INT16,     LOOM_DTYPE_INT32,
                                 LOOM_DTYPE_INT64,    LOOM_DTYPE_UINT8,     LOOM_DTYPE_UINT16,
                                 LOOM_DTYPE_UINT32,   LOOM_DTYPE_UINT64,    LOOM_DTYPE_BOOL,
                                 LOOM_DTYPE_BFLOAT16, LOOM_DTYPE_COMPLEX64, LOOM_DTYPE_COMPLEX128};
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3, 4}, {0, 3}};
  for (loom_dtype_t dtype : dtypes) {
    for (const auto& shape : shapes) {
      HostTensor t = HostTensor::zeros(dtype, shape);
      for (size_t i = 0; i < t.data.size(); ++i)
        t.data[i] = static_cast<std::byte>(dtype == LOOM_DTYPE_BOOL ? i % 2 : (i * 37 + 11) % 256);
      std::string bytes = serialize_npy(t);
      ASSERT_EQ(bytes.size() % 64, t.data.size() % 64) << "data must start 64-byte aligned";
      HostTensor back = parse_npy(bytes, "t.npy");
      EXPECT_EQ(back.dtype, dtype) << dtype_name(dtype);
      EXPECT_EQ(back.dims, shape);
      EXPECT_EQ(back.data, t.data) << dtype_name(dtype);
    }
  }
}

TEST(Npy, RoundTripsStringsAndFiles) {
  HostTensor t;
  t.dtype = LOOM_DTYPE_STRING;
  t.dims = {3};
  t.strings = {"", "hello", "x"};
  auto path = std::filesystem::temp_directory_path() / "loom_npy_test_strings.npy";
  write_npy(path.string(), t);
  HostTensor back = read_npy(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(back.strings, t.strings);
}

TEST(Npy, WritesVersion1Headers) {
  // Ranks are capped, so headers stay far below the 64 KiB limit of format 1.0, which every
  // NumPy reader understands.
  HostTensor t = HostTensor::zeros(LOOM_DTYPE_INT32, {2});
  std::string bytes = serialize_npy(t);
  EXPECT_EQ(bytes[6], '\x01');
}

TEST(Npy, RefusesMalformedFiles) {
  std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::string data = float_bytes({1, 2});
  expect_error("not numpy at all", "bad magic");
  expect_error(make_npy(1, good_dict, data).substr(0, 20), "past the end");
  std::string bad_version = make_npy(1, good_dict, data);
  bad_version[6] = 4;
  expect_error(bad_version, "version 4.0");
  expect_error(make_npy(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data),
               "Fortran");
  expect_error(make_npy(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data),
               "big-endian");
  expect_error(make_npy(1, good_dict, data.substr(0, 4)), "data size mismatch");
  expect_error(make_npy(1, good_dict, data + "junk"), "data size mismatch");
  expect_error(make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", data),
               "non-negative");
  expect_error(
      make_npy(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", data),
      "structured");
  expect_error(make_npy(1, "{'descr': '<O8', 'fortran_order': False, 'shape': (2,), }", data),
               "unsupported dtype");
  expect_error(make_npy(1, "{'descr': '<f4', 'shape': (2,), }", data), "lacks");
  expect_error(make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", data),
               "malformed");
  // A shape whose byte count overflows must be refused without trying to allocate it.
  expect_error(make_npy(1,
                        "{'descr': '<f8', 'fortran_order': False, 'shape': "
                        "(4294967296, 4294967296), }",
                        data),
               "overflow");
  expect_error(make_npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                        std::string("\x01\x02", 2)),
               "bool element");
}

TEST(Npy, EveryTruncationAndByteFlipIsHandled) {
  HostTensor t = HostTensor::zeros(LOOM_DTYPE_INT16, {3, 5});
  std::string file = serialize_npy(t);
  for (size_t len = 0; len < file.size(); ++len)
    EXPECT_THROW(parse_npy(file.substr(0, len), "t.npy"), TensorIoError) << "prefix " << len;
  // Corrupting any header byte either still parses to a consistent tensor or is refused.
  for (size_t i = 0; i < file.size() - t.data.size(); ++i) {
    for (char junk : {'\0', '(', '\'', '9', '\xff'}) {
      std::string bad = file;
      bad[i] = junk;
      try {
        HostTensor back = parse_npy(bad, "t.npy");
        EXPECT_EQ(back.data.size(), back.element_count() * dtype_size(back.dtype));
      } catch (const TensorIoError&) {
      }
    }
  }
}

TEST(Npy, ReportsMissingFiles) {
  try {
    read_npy("/nonexistent/dir/x.npy");
    FAIL();
  } catch (const TensorIoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.npy: cannot open"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::apps
