// Hostile and broken ncnn files: each load fails with one clear line naming the problem.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ncnn_test_support.hpp"

namespace loom::ncnnfmt::testing {
namespace {

using ::testing::HasSubstr;

class MalformedNcnnTest : public ::testing::Test {
 protected:
  // Writes NAME.param (and NAME.bin when `weights` is given) and returns the load error.
  std::string load(const std::string& param, const std::string* weights = nullptr,
                   const std::string& name = "model.param") {
    write_file(dir_ / name, param);
    if (weights) write_file(dir_ / "model.bin", *weights);
    return load_error((dir_ / name).string());
  }
  static std::string floats(size_t n) { return std::string(n * 4, '\0'); }
  TempDir dir_;
};

constexpr const char* kConv =
    "7767517\n2 2\nInput data 0 1 data 0=4 1=4 2=1\n"
    "Convolution conv 1 1 data out 0=2 1=3 5=1 6=18\n";

TEST_F(MalformedNcnnTest, ValidModelLoads) {
  std::string weights = std::string(4, '\0') + floats(18) + floats(2);
  EXPECT_EQ(load(kConv, &weights), "");
}

// A codebook-quantized blob (any other non-zero tag): 256 floats, then one index byte per
// element padded to 4 bytes. A 1x1 convolution shows the decoded weight.
TEST_F(MalformedNcnnTest, CodebookWeightsDecode) {
  std::string weights = std::string("\x01\x00\x00\x00", 4);
  for (int i = 0; i < 256; ++i) {
    float v = 0.5f * static_cast<float>(i);
    weights.append(reinterpret_cast<const char*>(&v), 4);
  }
  weights += std::string("\x07\x00\x00\x00", 4);
  write_file(dir_ / "model.param",
             "7767517\n2 2\nInput data 0 1 data 0=1 1=1 2=1\n"
             "Convolution conv 1 1 data out 0=1 1=1 6=1\n");
  write_file(dir_ / "model.bin", weights);
  loom::apps::HostTensor x;
  x.dtype = LOOM_DTYPE_FLOAT32;
  x.dims = {1, 1, 1, 1};
  float two = 2.f;
  x.data.resize(4);
  std::memcpy(x.data.data(), &two, 4);
  loom::apps::HostTensor y = run_model((dir_ / "model.param").string(), x, "cpu");
  ASSERT_EQ(y.element_count(), 1u);
  EXPECT_FLOAT_EQ(y.as<float>()[0], 7.f);  // 2 * codebook[7] = 2 * 3.5
}

TEST_F(MalformedNcnnTest, WeightsTooShort) {
  std::string weights = std::string(4, '\0') + floats(10);
  std::string err = load(kConv, &weights);
  EXPECT_THAT(err, HasSubstr("is too short"));
  EXPECT_THAT(err, HasSubstr("conv weight"));
}

TEST_F(MalformedNcnnTest, WeightsFileMissing) {
  EXPECT_THAT(load(kConv), HasSubstr("model.bin, which does not exist"));
}

TEST_F(MalformedNcnnTest, Int8WeightsRefused) {
  std::string weights = "\x38\x4b\x0d\x00" + std::string(20, '\0') + floats(2);
  EXPECT_THAT(load(kConv, &weights), HasSubstr("int8-quantized"));
}

TEST_F(MalformedNcnnTest, LayerCountMismatch) {
  EXPECT_THAT(load("7767517\n3 2\nInput data 0 1 data\nReLU r 1 1 data out\n"),
              HasSubstr("the header says 3 layers but the file has 2"));
}

TEST_F(MalformedNcnnTest, AbsurdCounts) {
  EXPECT_THAT(load("7767517\n2000000000 1\n"), HasSubstr("layer count 2000000000 is out of range"));
  EXPECT_THAT(load("7767517\n1 1\nInput data 0 99999999 data\n"), HasSubstr("top count 99999999"));
}

TEST_F(MalformedNcnnTest, BadNumber) {
  EXPECT_THAT(load("7767517\n2 2\nInput data 0 1 data 0=4x\nReLU r 1 1 data out\n"),
              HasSubstr("'4x' is not an integer"));
  EXPECT_THAT(load("7767517\n2 2\nInput data 0 1 data\nReLU r 1 1 data out 0=1.5.5\n"),
              HasSubstr("is not a finite number"));
}

TEST_F(MalformedNcnnTest, MissingBlobAndCycle) {
  EXPECT_THAT(load("7767517\n2 2\nInput data 0 1 data\nReLU r 1 1 nothere out\n"),
              HasSubstr("reads blob 'nothere', which no earlier layer produces"));
  // A cycle: b reads c, which only a later layer produces.
  EXPECT_THAT(load("7767517\n3 3\nInput data 0 1 data\nReLU b 1 1 c bb\nReLU c 1 1 bb c\n"),
              HasSubstr("no earlier layer produces"));
}

TEST_F(MalformedNcnnTest, DuplicateNames) {
  EXPECT_THAT(load("7767517\n3 2\nInput data 0 1 data\nReLU r 1 1 data out\nReLU r 1 1 out out2\n"),
              HasSubstr("two layers are named 'r'"));
  EXPECT_THAT(load("7767517\n3 2\nInput data 0 1 data\nReLU r 1 1 data out\nReLU s 1 1 data out\n"),
              HasSubstr("blob 'out' is produced twice"));
}

TEST_F(MalformedNcnnTest, ParameterIdOutOfRange) {
  EXPECT_THAT(load("7767517\n2 2\nInput data 0 1 data\nReLU r 1 1 data out "
                   "-9223372036854775808=1\n"),
              HasSubstr("id -9223372036854775808 is out of range"));
}

TEST_F(MalformedNcnnTest, ArrayLengthLies) {
  EXPECT_THAT(load("7767517\n2 2\nInput data 0 1 data\nReLU r 1 1 data out -23300=1000000,1,2\n"),
              HasSubstr("claims 1000000 items"));
}

TEST_F(MalformedNcnnTest, UnsupportedLayer) {
  std::string err = load("7767517\n2 2\nInput data 0 1 data\nLSTM r 1 1 data out\n");
  EXPECT_THAT(err, HasSubstr("has type LSTM, which the ncnn plugin does not convert"));
}

TEST_F(MalformedNcnnTest, AbsurdWeightSize) {
  std::string weights = std::string(4, '\0') + floats(18);
  EXPECT_THAT(load("7767517\n2 2\nInput data 0 1 data 0=4 1=4 2=1\n"
                   "Convolution conv 1 1 data out 0=1 1=1 6=2000000000\n",
                   &weights),
              HasSubstr("has 2000000000 elements but"));
}

TEST_F(MalformedNcnnTest, BinaryParamTruncatedAndBadBlob) {
  auto word = [](int32_t v) {
    std::string s(4, '\0');
    std::memcpy(s.data(), &v, 4);
    return s;
  };
  std::string header = word(7767517) + word(1) + word(1);
  EXPECT_THAT(load(header + word(16) + word(0) + word(1) + word(0), nullptr, "m.param.bin"),
              HasSubstr("ends early"));
  EXPECT_THAT(
      load(header + word(16) + word(0) + word(1) + word(5) + word(-233), nullptr, "m.param.bin"),
      HasSubstr("names blob 5 but there are 1 blobs"));
  EXPECT_THAT(
      load(header + word(200) + word(0) + word(1) + word(0) + word(-233), nullptr, "m.param.bin"),
      HasSubstr("unknown layer type index 200"));
}

TEST_F(MalformedNcnnTest, NotAParam) {
  EXPECT_THAT(load("7767517 junk\n"), HasSubstr("the first line is not the magic number"));
  EXPECT_THAT(load("7767517\n"), HasSubstr("the layer and blob counts are missing"));
}

}  // namespace
}  // namespace loom::ncnnfmt::testing
