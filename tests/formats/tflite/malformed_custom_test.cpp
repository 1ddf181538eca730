// Custom operators (tflite.custom, served by op-kernel plugins such as
// plugins/kernels/tflite-mobile): a model with MediaPipe's operators loads and runs only when
// the kernel plugin is loaded; flexbuffers options become attributes; malformed options,
// hostile flexbuffers and out-of-range unpooling indices are refused with one line.
//
// TestModel has no custom options, so the models here are written with the schema's generated
// C++ directly.
#define FLATBUFFERS_LOCALE_INDEPENDENT 0  // flexbuffers' locale object lives in libflatbuffers
#include <flatbuffers/flexbuffers.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tflite_subset_generated.h"
#include "tflite_test_support.hpp"

namespace loom::tflite::testing {
namespace {

namespace fb = loom::tflite_schema;
using loom::apps::HostTensor;

struct CustomTensor {
  std::vector<int32_t> shape;
  std::string name;
  std::vector<float> data;  // constant contents, empty = none
};
struct CustomOp {
  std::string code;
  std::vector<int32_t> inputs, outputs;
  std::vector<uint8_t> options;
  int8_t options_format = 0;  // FLEXBUFFERS
};
struct CustomModel {
  std::vector<CustomTensor> tensors;
  std::vector<CustomOp> ops;
  std::vector<int32_t> inputs, outputs;
};

std::string serialize_custom(const CustomModel& m) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers = {fb::CreateBuffer(b)};
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const CustomTensor& t : m.tensors) {
    uint32_t buffer = 0;
    if (!t.data.empty()) {
      std::vector<uint8_t> bytes(t.data.size() * 4);
      std::memcpy(bytes.data(), t.data.data(), bytes.size());
      buffers.push_back(fb::CreateBuffer(b, b.CreateVector(bytes)));
      buffer = static_cast<uint32_t>(buffers.size() - 1);
    }
    tensors.push_back(fb::CreateTensor(b, b.CreateVector(t.shape), fb::TensorType::FLOAT32, buffer,
                                       b.CreateString(t.name)));
  }
  std::vector<flatbuffers::Offset<fb::OperatorCode>> codes;
  std::vector<flatbuffers::Offset<fb::Operator>> ops;
  for (const CustomOp& op : m.ops) {
    codes.push_back(fb::CreateOperatorCode(b, 32, b.CreateString(op.code), 1, 32));
    auto in = b.CreateVector(op.inputs);
    auto out = b.CreateVector(op.outputs);
    auto options = b.CreateVector(op.options);
    fb::OperatorBuilder o(b);
    o.add_opcode_index(static_cast<uint32_t>(codes.size() - 1));
    o.add_inputs(in);
    o.add_outputs(out);
    o.add_custom_options(options);
    o.add_custom_options_format(op.options_format);
    ops.push_back(o.Finish());
  }
  auto subgraph =
      fb::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(m.inputs),
                         b.CreateVector(m.outputs), b.CreateVector(ops), b.CreateString("main"));
  auto root = fb::CreateModel(b, 3, b.CreateVector(codes), b.CreateVector(std::vector{subgraph}),
                              b.CreateString("custom test"), b.CreateVector(buffers));
  fb::FinishModelBuffer(b, root);
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

std::vector<uint8_t> struct_bytes(std::initializer_list<int32_t> fields) {
  std::vector<uint8_t> out;
  for (int32_t f : fields)
    for (int i = 0; i < 4; ++i)
      out.push_back(static_cast<uint8_t>(static_cast<uint32_t>(f) >> (8 * i)));
  return out;
}

// x [1, 2, 2, 1] -> Convolution2DTransposeBias (weights [1, 2, 2, 1] all ones, bias [0.5],
// VALID, stride 2) -> y [1, 4, 4, 1]: every input value fills its own 2x2 block, plus 0.5.
CustomModel transpose_conv_model(std::vector<uint8_t> options) {
  CustomModel m;
  m.tensors = {{{1, 2, 2, 1}, "x", {}},
               {{1, 2, 2, 1}, "weights", {1.f, 1.f, 1.f, 1.f}},
               {{1}, "bias", {0.5f}},
               {{1, 4, 4, 1}, "y", {}}};
  m.ops = {{"Convolution2DTransposeBias", {0, 1, 2}, {3}, std::move(options)}};
  m.inputs = {0};
  m.outputs = {3};
  return m;
}

// values and indices [1, 2, 2, 1] (graph inputs) -> MaxUnpooling2D (2x2, stride 2) -> [1, 4, 4, 1].
CustomModel unpool_model(std::vector<uint8_t> options, size_t num_inputs = 2) {
  CustomModel m;
  m.tensors = {
      {{1, 2, 2, 1}, "values", {}}, {{1, 2, 2, 1}, "indices", {}}, {{1, 4, 4, 1}, "y", {}}};
  std::vector<int32_t> inputs = {0, 1};
  inputs.resize(num_inputs, 1);
  m.ops = {{"MaxUnpooling2D", inputs, {2}, std::move(options)}};
  m.inputs = {0, 1};
  m.outputs = {2};
  return m;
}

HostTensor floats(std::vector<int64_t> dims, const std::vector<float>& values) {
  HostTensor t = HostTensor::zeros(LOOM_DTYPE_FLOAT32, std::move(dims));
  std::memcpy(t.as<float>(), values.data(), values.size() * sizeof(float));
  return t;
}

struct ModelDeleter {
  void operator()(loom_model_t* m) const { loom_model_free(m); }
};

class MalformedCustom : public ::testing::Test {
 protected:
  std::string write(const CustomModel& m) {
    const auto path = dir_ / "model.tflite";
    write_file(path, serialize_custom(m));
    return path.string();
  }
  // The first error of loading `m` and running it on cpu with zero inputs ("" when it runs):
  // option errors surface where the core first asks the schema or the kernel (shape inference
  // or session compile), model-check errors at load.
  std::string error_of(const CustomModel& m) {
    if (std::string e = load_error(runtime_.get(), write(m)); !e.empty()) return e;
    std::vector<HostTensor> inputs;
    for (int32_t i : m.inputs) {
      std::vector<int64_t> dims(m.tensors[i].shape.begin(), m.tensors[i].shape.end());
      inputs.push_back(HostTensor::zeros(LOOM_DTYPE_FLOAT32, dims));
    }
    try {
      run_model(m, inputs);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }
  // Loads and runs `m` on cpu; returns the outputs, or throws with the run's error.
  std::vector<HostTensor> run_model(const CustomModel& m, const std::vector<HostTensor>& inputs,
                                    const std::string& devices = "cpu") {
    loom_model_t* raw = nullptr;
    if (loom_status_t* s = loom_model_load(runtime_.get(), write(m).c_str(), &raw)) {
      std::string text = loom_status_message(s);
      loom_status_free(s);
      throw std::runtime_error("load: " + text);
    }
    std::unique_ptr<loom_model_t, ModelDeleter> model(raw);
    return run(runtime_.get(), model.get(), devices, inputs);
  }

  loom::apps::RuntimePtr runtime_ = make_runtime(true);
  TempDir dir_;
};

TEST_F(MalformedCustom, RunsOnlyWithTheKernelPlugin) {
  if (!*LOOM_TEST_TFLITE_MOBILE_PLUGIN) GTEST_SKIP() << "built without the tflite-mobile kernels";
  const CustomModel m = transpose_conv_model(struct_bytes({2, 2, 2}));
  const HostTensor x = floats({1, 2, 2, 1}, {1.f, 2.f, 3.f, 4.f});
  std::vector<std::string> devices = {"cpu"};
  if (have_onednn()) devices.push_back("onednn,cpu");  // custom ops run on cpu either way
  for (const std::string& d : devices) {
    SCOPED_TRACE(d);
    const std::vector<HostTensor> out = run_model(m, {x}, d);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].dims, (std::vector<int64_t>{1, 4, 4, 1}));
    const float expected[16] = {1.5f, 1.5f, 2.5f, 2.5f, 1.5f, 1.5f, 2.5f, 2.5f,
                                3.5f, 3.5f, 4.5f, 4.5f, 3.5f, 3.5f, 4.5f, 4.5f};
    for (int i = 0; i < 16; ++i) EXPECT_EQ(out[0].as<float>()[i], expected[i]) << i;
  }

  // The same file with only the tflite and cpu plugins: refused at load, naming the operator.
  std::vector<const char*> paths = {LOOM_TEST_TFLITE_PLUGIN, LOOM_TEST_CPU_PLUGIN};
  loom_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.num_plugin_paths = paths.size();
  o.plugin_paths = paths.data();
  o.log_level = LOOM_LOG_ERROR;
  auto bare = loom::apps::create_runtime(o);
  const std::string error = load_error(bare.get(), write(m));
  EXPECT_NE(error.find("Convolution2DTransposeBias (domain tflite.custom, opset 1)"),
            std::string::npos)
      << error;
}

class MalformedCustomWithKernels : public MalformedCustom {
 protected:
  void SetUp() override {
    if (!*LOOM_TEST_TFLITE_MOBILE_PLUGIN) GTEST_SKIP() << "built without the tflite-mobile kernels";
  }
};

TEST_F(MalformedCustomWithKernels, TruncatedStructOptions) {
  const std::string error = error_of(transpose_conv_model(struct_bytes({1, 2})));
  EXPECT_NE(error.find("custom_options has 8 bytes, too few for TfLiteTransposeConvParams"),
            std::string::npos)
      << error;
}

TEST_F(MalformedCustomWithKernels, UnknownPaddingAndZeroStride) {
  std::string error = error_of(transpose_conv_model(struct_bytes({0, 2, 2})));
  EXPECT_NE(error.find("padding 0 is not SAME (1) or VALID (2)"), std::string::npos) << error;
  error = error_of(unpool_model(struct_bytes({1, 0, 2, 2, 2, 0})));
  EXPECT_NE(error.find("stride_width 0 must be >= 1"), std::string::npos) << error;
}

TEST_F(MalformedCustomWithKernels, WrongInputCount) {
  const std::string error = error_of(unpool_model(struct_bytes({1, 2, 2, 2, 2, 0}), 3));
  EXPECT_NE(error.find("tflite.custom::MaxUnpooling2D node 'op0:MaxUnpooling2D/1' has 3 inputs; "
                       "opset 1 allows 2"),
            std::string::npos)
      << error;
}

TEST_F(MalformedCustomWithKernels, FlexbuffersKeysBecomeAttributes) {
  // A flexbuffers map: its keys reach the node as attributes, which this kernel refuses by
  // name (it reads only the raw struct), proving the handoff.
  flexbuffers::Builder fbb;
  fbb.Map([&] {
    fbb.Int("stride", 2);
    fbb.Float("scale", 0.5f);
    fbb.String("mode", "same");
    fbb.Vector("dims", [&] {
      fbb.Int(1);
      fbb.Int(2);
    });
  });
  fbb.Finish();
  const std::string error = error_of(transpose_conv_model(fbb.GetBuffer()));
  EXPECT_NE(error.find("unknown attribute '"), std::string::npos) << error;
  EXPECT_NE(error.find("reads only custom_options"), std::string::npos) << error;
}

TEST_F(MalformedCustomWithKernels, HostileFlexbuffers) {
  // A verified map holding a nested map: refused by the format with one line naming the key.
  flexbuffers::Builder fbb;
  fbb.Map([&] { fbb.Map("inner", [&] { fbb.Int("a", 1); }); });
  fbb.Finish();
  std::string error = error_of(transpose_conv_model(fbb.GetBuffer()));
  EXPECT_NE(error.find("operator 0 (custom operator 'Convolution2DTransposeBias')"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("custom option 'inner' has a flexbuffers type"), std::string::npos) << error;
  // Bytes that fail verification (a truncated map) are not read as flexbuffers: they reach the
  // kernel as raw bytes, whose struct check refuses them.
  std::vector<uint8_t> truncated = fbb.GetBuffer();
  truncated.resize(truncated.size() - 3);
  error = error_of(transpose_conv_model(truncated));
  EXPECT_NE(error.find("custom_options"), std::string::npos) << error;
}

TEST_F(MalformedCustomWithKernels, UnpoolingIndexOutOfRangeFailsTheRun) {
  const CustomModel m = unpool_model(struct_bytes({1, 2, 2, 2, 2, 0}));
  const HostTensor values = floats({1, 2, 2, 1}, {1.f, 2.f, 3.f, 4.f});
  // In range: each value goes to its window's position (0: top left, 3: bottom right).
  const std::vector<HostTensor> out =
      run_model(m, {values, floats({1, 2, 2, 1}, {0.1f, 3.1f, 1.1f, 2.1f})});
  const float expected[16] = {1.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 2.f,
                              0.f, 3.f, 0.f, 0.f, 0.f, 0.f, 4.f, 0.f};
  ASSERT_EQ(out.size(), 1u);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(out[0].as<float>()[i], expected[i]) << i;
  try {
    run_model(m, {values, floats({1, 2, 2, 1}, {0.1f, 7.f, 1.1f, 2.1f})});
    ADD_FAILURE() << "an index outside the 2x2 window ran";
  } catch (const std::exception& e) {
    EXPECT_NE(
        std::string(e.what()).find("index 7.000000 at [0, 0, 1, 0] is outside its 2x2 window"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::tflite::testing
