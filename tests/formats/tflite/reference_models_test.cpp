// The committed TFLite models (generate_models.py) loaded by the tflite plugin and run on the
// cpu device (and onednn,cpu when built) against the TFLite reference interpreter's outputs.
// Tolerances per dtype: float32 |loom - tflite| <= 1e-5 + 1e-4 * |tflite|; int8/uint8 within one
// quantization step (Loom requantizes in float with round-half-even, TFLite with fixed-point
// multipliers, so a value on a rounding boundary may land one step away).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "tflite_test_support.hpp"

namespace loom::tflite::testing {
namespace {

using loom::apps::HostTensor;

HostTensor input_for(loom_model_t* model, const std::string& name) {
  auto infos = loom::apps::model_inputs(model);
  EXPECT_EQ(infos.size(), 1u);
  HostTensor t = HostTensor::zeros(infos[0].dtype, loom::apps::io_dims(infos[0]));
  const std::string bytes = read_file(models_dir() / (name + ".input.bin"));
  EXPECT_EQ(bytes.size(), t.data.size()) << "input file of " << name;
  std::memcpy(t.data.data(), bytes.data(), std::min(bytes.size(), t.data.size()));
  return t;
}

// "" when `actual` matches the interpreter's `expected` bytes within the dtype's tolerance.
std::string compare(const HostTensor& actual, const std::string& expected) {
  if (actual.data.size() != expected.size())
    return "size " + std::to_string(actual.data.size()) + " bytes, expected " +
           std::to_string(expected.size());
  const size_t n = actual.element_count();
  for (size_t i = 0; i < n; ++i) {
    double a = 0, e = 0, tolerance = 0;
    switch (actual.dtype) {
      case LOOM_DTYPE_FLOAT32: {
        float fa, fe;
        std::memcpy(&fa, actual.data.data() + 4 * i, 4);
        std::memcpy(&fe, expected.data() + 4 * i, 4);
        a = fa;
        e = fe;
        tolerance = 1e-5 + 1e-4 * std::fabs(e);
        break;
      }
      case LOOM_DTYPE_INT8:
        a = static_cast<int8_t>(actual.data[i]);
        e = static_cast<int8_t>(expected[i]);
        tolerance = 1;
        break;
      case LOOM_DTYPE_UINT8:
        a = static_cast<uint8_t>(actual.data[i]);
        e = static_cast<uint8_t>(expected[i]);
        tolerance = 1;
        break;
      default:
        return std::string("unexpected output dtype ") + loom_dtype_name(actual.dtype);
    }
    if (!(std::fabs(a - e) <= tolerance))
      return "element " + std::to_string(i) + ": loom " + std::to_string(a) + ", tflite " +
             std::to_string(e);
  }
  return "";
}

class ReferenceModel : public ::testing::TestWithParam<const char*> {};

void check_model(const std::string& name, const std::string& devices) {
  auto runtime = make_runtime(devices != "cpu");
  auto model = loom::apps::load_model(runtime.get(), (models_dir() / (name + ".tflite")).string());
  EXPECT_STREQ(loom_model_format(model.get()), "tflite");
  const HostTensor input = input_for(model.get(), name);
  auto outputs = run(runtime.get(), model.get(), devices, input);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(compare(outputs[0], read_file(models_dir() / (name + ".output.bin"))), "")
      << name << " on " << devices;
}

TEST_P(ReferenceModel, MatchesTfliteInterpreterOnCpu) {
  check_model(GetParam(), "cpu");
}

TEST_P(ReferenceModel, MatchesTfliteInterpreterOnOnednnCpu) {
  if (!have_onednn()) GTEST_SKIP() << "the onednn plugin is not built";
  check_model(GetParam(), "onednn,cpu");
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceModel,
                         ::testing::Values("float_cnn", "int8_cnn", "uint8_cnn", "float_attention",
                                           "float_image_ops", "float_misc"));

// NHWC stays inside the graph: the CNN gets one Transpose after its image input and one
// where it flattens for FULLY_CONNECTED, not one around every layer.
TEST(Layout, FloatCnnTransposesOnlyAtTheLayoutBoundaries) {
  auto runtime = make_runtime();
  auto model = loom::apps::load_model(runtime.get(), (models_dir() / "float_cnn.tflite").string());
  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = "cpu";
  auto session = loom::apps::create_session(runtime.get(), model.get(), so);
  char* text = nullptr;
  loom::apps::check(loom_session_explain(session.get(), &text));
  const std::string plan = loom::apps::take_string(text);
  EXPECT_NE(plan.find("Transpose x2)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Conv x3"), std::string::npos) << plan;
  EXPECT_EQ(loom_model_num_nodes(model.get()), 17u) << plan;
}

TEST(Metadata, DescriptionBecomesModelMetadata) {
  auto runtime = make_runtime();
  auto model = loom::apps::load_model(runtime.get(), (models_dir() / "float_cnn.tflite").string());
  bool found = false;
  for (size_t i = 0; i < loom_model_num_metadata(model.get()); ++i) {
    const char *key = nullptr, *value = nullptr;
    loom_model_metadata(model.get(), i, &key, &value);
    if (std::string(key) == "tflite.description") {
      found = true;
      EXPECT_STREQ(value, "Loom tflite plugin test model");
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace loom::tflite::testing
