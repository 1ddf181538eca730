// The committed TFLite models (generate_models.py: every `<name>.tflite` of the models
// directory with its `.input.bin`/`.output.bin`, several inputs or outputs stored one after the
// other) loaded by the tflite plugin and run on the cpu device (and onednn,cpu when built)
// against the TFLite reference interpreter's outputs (or, for custom operators it lacks, the
// generator's numpy reference). Tolerances per dtype: float32 |loom - tflite| <= 1e-5 + 1e-4 *
// |tflite|; int8/uint8/int16 within one quantization step (Loom requantizes in float with
// round-half-even, TFLite with fixed-point multipliers, so a value on a rounding boundary may
// land one step away); other integers and booleans exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "tflite_test_support.hpp"

namespace loom::tflite::testing {
namespace {

using loom::apps::HostTensor;

std::vector<HostTensor> inputs_for(loom_model_t* model, const std::string& name) {
  const std::string bytes = read_file(models_dir() / (name + ".input.bin"));
  std::vector<HostTensor> inputs;
  size_t offset = 0;
  for (const auto& info : loom::apps::model_inputs(model)) {
    HostTensor t = HostTensor::zeros(info.dtype, loom::apps::io_dims(info));
    if (offset + t.data.size() <= bytes.size())
      std::memcpy(t.data.data(), bytes.data() + offset, t.data.size());
    offset += t.data.size();
    inputs.push_back(std::move(t));
  }
  EXPECT_EQ(offset, bytes.size()) << "input file of " << name;
  return inputs;
}

template <typename T>
T element(const char* bytes, size_t i) {
  T value;
  std::memcpy(&value, bytes + sizeof(T) * i, sizeof(T));
  return value;
}

// "" when `actual` matches the interpreter's `expected` bytes within the dtype's tolerance.
std::string compare(const HostTensor& actual, const char* expected, size_t expected_size) {
  if (actual.data.size() != expected_size)
    return "size " + std::to_string(actual.data.size()) + " bytes, expected " +
           std::to_string(expected_size);
  const size_t n = actual.element_count();
  const char* got = reinterpret_cast<const char*>(actual.data.data());
  for (size_t i = 0; i < n; ++i) {
    double a = 0, e = 0, tolerance = 0;
    switch (actual.dtype) {
      case LOOM_DTYPE_FLOAT32:
        a = element<float>(got, i);
        e = element<float>(expected, i);
        tolerance = 1e-5 + 1e-4 * std::fabs(e);
        break;
      case LOOM_DTYPE_INT8:
        a = element<int8_t>(got, i);
        e = element<int8_t>(expected, i);
        tolerance = 1;
        break;
      case LOOM_DTYPE_UINT8:
        a = element<uint8_t>(got, i);
        e = element<uint8_t>(expected, i);
        tolerance = 1;
        break;
      case LOOM_DTYPE_INT16:
        a = element<int16_t>(got, i);
        e = element<int16_t>(expected, i);
        tolerance = 1;
        break;
      case LOOM_DTYPE_INT32:
        a = element<int32_t>(got, i);
        e = element<int32_t>(expected, i);
        break;
      case LOOM_DTYPE_INT64:
        a = static_cast<double>(element<int64_t>(got, i));
        e = static_cast<double>(element<int64_t>(expected, i));
        break;
      case LOOM_DTYPE_BOOL:
        a = element<uint8_t>(got, i) != 0;
        e = element<uint8_t>(expected, i) != 0;
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

void check_model(const std::string& name, const std::string& devices) {
  auto runtime = make_runtime(devices != "cpu");
  auto model = loom::apps::load_model(runtime.get(), (models_dir() / (name + ".tflite")).string());
  EXPECT_STREQ(loom_model_format(model.get()), "tflite");
  auto outputs = run(runtime.get(), model.get(), devices, inputs_for(model.get(), name));
  const std::string expected = read_file(models_dir() / (name + ".output.bin"));
  size_t offset = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const size_t size = std::min(outputs[i].data.size(), expected.size() - offset);
    EXPECT_EQ(compare(outputs[i], expected.data() + offset, size), "")
        << name << " output " << i << " on " << devices;
    offset += size;
  }
  EXPECT_EQ(offset, expected.size()) << name << ": the outputs are smaller than the reference";
}

// Every committed model, found by its file, so a generated model is tested without a list.
std::vector<std::string> committed_models() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(models_dir()))
    if (entry.path().extension() == ".tflite") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

class ReferenceModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceModel, MatchesTfliteInterpreterOnCpu) {
  check_model(GetParam(), "cpu");
}

TEST_P(ReferenceModel, MatchesTfliteInterpreterOnOnednnCpu) {
  if (!have_onednn()) GTEST_SKIP() << "the onednn plugin is not built";
  check_model(GetParam(), "onednn,cpu");
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceModel, ::testing::ValuesIn(committed_models()),
                         [](const auto& info) { return info.param; });

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
