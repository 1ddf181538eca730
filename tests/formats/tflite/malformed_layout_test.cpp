// Malformed shape / data-movement operators (convert_layout.cpp, convert_shape.cpp): each is
// refused with one line naming the operator and the problem, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tflite_subset_generated.h"
#include "tflite_test_support.hpp"

namespace loom::tflite::testing {
namespace {

namespace fb = loom::tflite_schema;

constexpr int8_t kFloat32 = 0, kInt32 = 2, kInt8 = 9;
constexpr int32_t kDepthToSpace = 5, kGather = 36, kStridedSlice = 45, kSpaceToDepth = 26,
                  kBatchToSpaceNd = 37, kSpaceToBatchNd = 38, kTopkV2 = 48, kSplit = 49,
                  kSlice = 65, kTile = 69, kExpandDims = 70, kPack = 83, kOneHot = 85, kUnpack = 88,
                  kFill = 94, kRange = 96, kMirrorPad = 100, kSplitV = 102, kPadV2 = 60,
                  kReverseV2 = 105, kGatherNd = 107;

// Writes the options table of one operator.
using Options = std::function<std::pair<fb::BuiltinOptions, flatbuffers::Offset<void>>(
    flatbuffers::FlatBufferBuilder&)>;

// A model with one operator; tensors are added by the tests. Like TestModel, plus builtin
// options (which tflite_test_support's serialize does not write).
struct Builder {
  TestModel m;
  Options options;
  std::vector<int32_t> more_inputs;  // graph inputs besides the tested one
  int32_t tensor(std::vector<int32_t> shape, int8_t type = kFloat32) {
    m.tensors.push_back(
        {std::move(shape), type, 0, "t" + std::to_string(m.tensors.size()), {}, {}, 0});
    return static_cast<int32_t>(m.tensors.size() - 1);
  }
  // An int32 constant (or float32 with `type`) holding `values`.
  int32_t constant(std::vector<int32_t> shape, std::vector<int32_t> values, int8_t type = kInt32) {
    std::vector<uint8_t> bytes;
    for (int32_t v : values) {
      uint8_t raw[4];
      if (type == kFloat32) {
        const float f = static_cast<float>(v);
        std::memcpy(raw, &f, 4);
      } else {
        std::memcpy(raw, &v, 4);
      }
      bytes.insert(bytes.end(), raw, raw + 4);
    }
    m.buffers.push_back(bytes);
    const int32_t t = tensor(std::move(shape), type);
    m.tensors.back().buffer = static_cast<uint32_t>(m.buffers.size() - 1);
    return t;
  }
  void op(int32_t code, std::vector<int32_t> inputs, std::vector<int32_t> outputs,
          Options with = nullptr) {
    m.operators.push_back({code, "", std::move(inputs), std::move(outputs)});
    options = std::move(with);
  }

  std::string serialize() const {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
    for (const auto& data : m.buffers)
      buffers.push_back(fb::CreateBuffer(b, data.empty() ? 0 : b.CreateVector(data)));
    std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
    for (const auto& t : m.tensors) {
      flatbuffers::Offset<fb::QuantizationParameters> quant = 0;
      if (!t.scales.empty())
        quant = fb::CreateQuantizationParameters(b, 0, 0, b.CreateVector(t.scales),
                                                 b.CreateVector(t.zero_points),
                                                 fb::QuantizationDetails::NONE, 0, 0);
      tensors.push_back(fb::CreateTensor(b, b.CreateVector(t.shape),
                                         static_cast<fb::TensorType>(t.type), t.buffer,
                                         b.CreateString(t.name), quant));
    }
    const TestOperator& o = m.operators.at(0);
    auto code = fb::CreateOperatorCode(b, static_cast<int8_t>(std::min(o.builtin_code, 127)), 0, 1,
                                       o.builtin_code);
    auto [type, table] =
        options ? options(b) : std::pair{fb::BuiltinOptions::NONE, flatbuffers::Offset<void>()};
    auto op =
        fb::CreateOperator(b, 0, b.CreateVector(o.inputs), b.CreateVector(o.outputs), type, table);
    auto subgraph = fb::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(m.inputs),
                                       b.CreateVector(m.outputs), b.CreateVector(std::vector{op}),
                                       b.CreateString("main"));
    auto root = fb::CreateModel(b, 3, b.CreateVector(std::vector{code}),
                                b.CreateVector(std::vector{subgraph}), b.CreateString("test"),
                                b.CreateVector(buffers));
    fb::FinishModelBuffer(b, root);
    return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  }
};

template <typename Table>
Options options_of(
    fb::BuiltinOptions type,
    std::function<flatbuffers::Offset<Table>(flatbuffers::FlatBufferBuilder&)> make) {
  return [type, make](flatbuffers::FlatBufferBuilder& b) {
    return std::pair{type, make(b).Union()};
  };
}

class MalformedLayout : public ::testing::Test {
 protected:
  // Loads the model with `x` as its input and `y` as its output.
  std::string error_of(Builder& b, int32_t x, int32_t y) {
    b.m.inputs = {x};
    b.m.inputs.insert(b.m.inputs.end(), b.more_inputs.begin(), b.more_inputs.end());
    b.m.outputs = {y};
    write_file(dir_ / "model.tflite", b.serialize());
    return load_error(runtime_.get(), dir_ / "model.tflite");
  }
  void expect_error(Builder& b, int32_t x, int32_t y, const std::string& op,
                    const std::string& part, loom_status_code_t code = LOOM_ERROR_INVALID_MODEL) {
    const std::string error = error_of(b, x, y);
    EXPECT_NE(error.find("(" + op + ")"), std::string::npos) << error;
    EXPECT_NE(error.find(part), std::string::npos) << error;
    EXPECT_EQ(error.rfind(std::to_string(code) + ":", 0), 0u) << error;
  }

  loom::apps::RuntimePtr runtime_ = make_runtime();
  TempDir dir_;
};

Options split_options(int32_t n) {
  return options_of<fb::SplitOptions>(fb::BuiltinOptions::SplitOptions,
                                      [n](auto& b) { return fb::CreateSplitOptions(b, n); });
}

TEST_F(MalformedLayout, AValidSplitLoads) {
  Builder b;
  const int32_t x = b.tensor({1, 2, 2, 4});
  const int32_t y0 = b.tensor({1, 2, 2, 2}), y1 = b.tensor({1, 2, 2, 2});
  b.op(kSplit, {b.constant({}, {3}), x}, {y0, y1}, split_options(2));
  EXPECT_EQ(error_of(b, x, y1), "");
}

TEST_F(MalformedLayout, SplitAxisMustBeConstant) {
  Builder b;
  const int32_t x = b.tensor({1, 4}), y = b.tensor({1, 4});
  b.more_inputs = {b.tensor({}, kInt32)};
  b.op(kSplit, {b.more_inputs[0], x}, {y}, split_options(1));
  expect_error(b, x, y, "SPLIT", "must be a constant", LOOM_ERROR_UNSUPPORTED);
}

TEST_F(MalformedLayout, SplitAxisOutOfRange) {
  Builder b;
  const int32_t x = b.tensor({1, 4}), y = b.tensor({1, 4});
  b.op(kSplit, {b.constant({}, {5}), x}, {y}, split_options(1));
  expect_error(b, x, y, "SPLIT", "axis 5 is outside rank 2");
}

TEST_F(MalformedLayout, SplitNotDivisible) {
  Builder b;
  const int32_t x = b.tensor({1, 4}), y = b.tensor({1, 1});
  b.op(kSplit, {b.constant({}, {1}), x}, {y, b.tensor({1, 1}), b.tensor({1, 1})}, split_options(3));
  expect_error(b, x, y, "SPLIT", "is not divisible by num_splits 3");
}

TEST_F(MalformedLayout, SplitPartsDisagreeWithOutputs) {
  Builder b;
  const int32_t x = b.tensor({1, 4}), y = b.tensor({1, 2});
  b.op(kSplit, {b.constant({}, {1}), x}, {y}, split_options(2));
  expect_error(b, x, y, "SPLIT", "num_splits 2 but 1 outputs");
}

// Constant shapes that would make the runtime allocate without bound are refused at load.
TEST_F(MalformedLayout, TileBeyondTheElementLimit) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({2, 3});
  b.op(kTile, {x, b.constant({2}, {1 << 20, 1 << 20})}, {y});
  expect_error(b, x, y, "TILE", "more than 2^31 elements");
}

TEST_F(MalformedLayout, FillBeyondTheElementLimit) {
  Builder b;
  const int32_t x = b.tensor({}), y = b.tensor({2, 3});
  b.op(kFill, {b.constant({3}, {1 << 20, 1 << 20, 4}), x}, {y});
  expect_error(b, x, y, "FILL", "more than 2^31 elements");
}

TEST_F(MalformedLayout, OneHotDepthBeyondTheElementLimit) {
  Builder b;
  const int32_t x = b.tensor({1 << 16}, kInt32), y = b.tensor({1, 4});
  b.op(kOneHot,
       {x, b.constant({}, {1 << 30}), b.constant({}, {1}, kFloat32), b.constant({}, {0}, kFloat32)},
       {y});
  expect_error(b, x, y, "ONE_HOT", "more than 2^31 elements");
}

TEST_F(MalformedLayout, RangeOfNegativeLength) {
  Builder b;
  const int32_t y = b.tensor({3}, kInt32);
  const int32_t x = b.tensor({1});
  b.more_inputs = {};
  b.op(kRange, {b.constant({}, {5}), b.constant({}, {1}), b.constant({}, {1})}, {y});
  expect_error(b, x, y, "RANGE", "negative length");
}

TEST_F(MalformedLayout, SplitWithoutOptionsHasNoParts) {
  Builder b;
  const int32_t x = b.tensor({1, 4}), y = b.tensor({1, 4});
  b.op(kSplit, {b.constant({}, {1}), x}, {y});
  expect_error(b, x, y, "SPLIT", "num_splits must be positive");
}

TEST_F(MalformedLayout, SplitMissingInput) {
  Builder b;
  const int32_t x = b.tensor({1, 4}), y = b.tensor({1, 4});
  b.op(kSplit, {x}, {y}, split_options(1));
  expect_error(b, x, y, "SPLIT", "input 1 is missing");
}

TEST_F(MalformedLayout, SplitVSizesDisagree) {
  Builder b;
  const int32_t x = b.tensor({2, 6}), y = b.tensor({2, 2});
  b.op(kSplitV, {x, b.constant({2}, {2, 3}), b.constant({}, {1})}, {y, b.tensor({2, 3})});
  expect_error(b, x, y, "SPLIT_V", "size_splits add up to 5, not the dimension 6");
}

TEST_F(MalformedLayout, SplitVNegativeSize) {
  Builder b;
  const int32_t x = b.tensor({2, 6}), y = b.tensor({2, 2});
  b.op(kSplitV, {x, b.constant({2}, {-1, -1}), b.constant({}, {1})}, {y, b.tensor({2, 3})});
  expect_error(b, x, y, "SPLIT_V", "size_splits entry -1 is invalid");
}

TEST_F(MalformedLayout, UnpackOutputCountDisagrees) {
  Builder b;
  const int32_t x = b.tensor({3, 2}), y = b.tensor({2});
  b.op(kUnpack, {x}, {y, b.tensor({2})});
  expect_error(b, x, y, "UNPACK", "must equal dimension 0 (3)");
}

TEST_F(MalformedLayout, PackShapesDiffer) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({2, 2, 3});
  b.more_inputs = {b.tensor({3, 2})};
  b.op(kPack, {x, b.more_inputs[0]}, {y},
       options_of<fb::PackOptions>(fb::BuiltinOptions::PackOptions,
                                   [](auto& b) { return fb::CreatePackOptions(b, 2, 0); }));
  expect_error(b, x, y, "PACK", "the inputs have different shapes");
}

TEST_F(MalformedLayout, GatherNdIndexDepthAboveRank) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({1});
  b.op(kGatherNd, {x, b.constant({1, 3}, {0, 0, 0})}, {y});
  expect_error(b, x, y, "GATHER_ND", "the last indices dimension 3 must be in [1, 2]");
}

TEST_F(MalformedLayout, GatherBatchDimsAboveAxis) {
  Builder b;
  const int32_t x = b.tensor({2, 3, 4}), y = b.tensor({2, 3, 4});
  b.op(kGather, {x, b.constant({2, 1}, {0, 1})}, {y},
       options_of<fb::GatherOptions>(fb::BuiltinOptions::GatherOptions,
                                     [](auto& b) { return fb::CreateGatherOptions(b, 0, 1); }));
  expect_error(b, x, y, "GATHER", "batch_dims 1 must be in [0, min(axis, indices rank)]");
}

TEST_F(MalformedLayout, MirrorPadReflectTooWide) {
  Builder b;
  const int32_t x = b.tensor({1, 3}), y = b.tensor({1, 9});
  b.op(kMirrorPad, {x, b.constant({2, 2}, {0, 0, 3, 3})}, {y});
  expect_error(b, x, y, "MIRROR_PAD", "padding 3 of dimension 1 is outside [0, 2]");
}

TEST_F(MalformedLayout, MirrorPadUnknownMode) {
  Builder b;
  const int32_t x = b.tensor({1, 3}), y = b.tensor({1, 5});
  b.op(kMirrorPad, {x, b.constant({2, 2}, {0, 0, 1, 1})}, {y},
       options_of<fb::MirrorPadOptions>(fb::BuiltinOptions::MirrorPadOptions,
                                        [](auto& b) { return fb::CreateMirrorPadOptions(b, 7); }));
  expect_error(b, x, y, "MIRROR_PAD", "unknown mirror pad mode 7");
}

TEST_F(MalformedLayout, PadV2ValueQuantizedUnlikeTheOutput) {
  Builder b;
  const int32_t x = b.tensor({1, 3}, kInt8), y = b.tensor({1, 5}, kInt8);
  const int32_t value = b.tensor({}, kInt8);
  b.m.buffers.push_back({7});
  b.m.tensors[value].buffer = static_cast<uint32_t>(b.m.buffers.size() - 1);
  for (int32_t t : {x, y}) {
    b.m.tensors[t].scales = {0.1f};
    b.m.tensors[t].zero_points = {3};
  }
  b.m.tensors[value].scales = {0.3f};
  b.m.tensors[value].zero_points = {0};
  b.op(kPadV2, {x, b.constant({2, 2}, {0, 0, 1, 1}), value}, {y});
  expect_error(b, x, y, "PADV2", "a PADV2 pad value whose quantization differs from the output's",
               LOOM_ERROR_UNSUPPORTED);
}

TEST_F(MalformedLayout, TileMultiplesOfWrongLength) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({4, 3});
  b.op(kTile, {x, b.constant({3}, {2, 1, 1})}, {y});
  expect_error(b, x, y, "TILE", "multiples must be a vector of 2 entries");
}

TEST_F(MalformedLayout, ExpandDimsAxisOutOfRange) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({2, 3, 1});
  b.op(kExpandDims, {x, b.constant({}, {4})}, {y});
  expect_error(b, x, y, "EXPAND_DIMS", "axis 4 is outside [-3, 2]");
}

TEST_F(MalformedLayout, SliceBeyondTheDimension) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({2, 3});
  b.op(kSlice, {x, b.constant({2}, {0, 1}), b.constant({2}, {-1, 3})}, {y});
  expect_error(b, x, y, "SLICE", "begin 1 and size 3 do not fit dimension 1 of 3");
}

TEST_F(MalformedLayout, SliceBeginMustBeConstant) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({2, 3});
  b.more_inputs = {b.tensor({2}, kInt32)};
  b.op(kSlice, {x, b.more_inputs[0], b.constant({2}, {-1, -1})}, {y});
  expect_error(b, x, y, "SLICE", "must be a constant", LOOM_ERROR_UNSUPPORTED);
}

TEST_F(MalformedLayout, SpaceToDepthWithoutBlockSize) {
  Builder b;
  const int32_t x = b.tensor({1, 4, 4, 1}), y = b.tensor({1, 2, 2, 4});
  b.op(kSpaceToDepth, {x}, {y});
  expect_error(b, x, y, "SPACE_TO_DEPTH", "block_size 0 is invalid");
}

TEST_F(MalformedLayout, DepthToSpaceChannelsNotDivisible) {
  Builder b;
  const int32_t x = b.tensor({1, 2, 2, 3}), y = b.tensor({1, 4, 4, 1});
  b.op(kDepthToSpace, {x}, {y},
       options_of<fb::DepthToSpaceOptions>(fb::BuiltinOptions::DepthToSpaceOptions, [](auto& b) {
         return fb::CreateDepthToSpaceOptions(b, 2);
       }));
  expect_error(b, x, y, "DEPTH_TO_SPACE", "the channels must be divisible by block_size^2");
}

TEST_F(MalformedLayout, SpaceToBatchNotDivisible) {
  Builder b;
  const int32_t x = b.tensor({1, 5, 4, 1}), y = b.tensor({4, 3, 2, 1});
  b.op(kSpaceToBatchNd, {x, b.constant({2}, {2, 2}), b.constant({2, 2}, {0, 0, 0, 0})}, {y});
  expect_error(b, x, y, "SPACE_TO_BATCH_ND",
               "padded spatial dimension 0 (5) is not divisible by its block size 2");
}

TEST_F(MalformedLayout, BatchToSpaceBatchNotDivisible) {
  Builder b;
  const int32_t x = b.tensor({3, 2, 2, 1}), y = b.tensor({1, 4, 4, 1});
  b.op(kBatchToSpaceNd, {x, b.constant({2}, {2, 2}), b.constant({2, 2}, {0, 0, 0, 0})}, {y});
  expect_error(b, x, y, "BATCH_TO_SPACE_ND", "the batch 3 is not divisible by the block count 4");
}

TEST_F(MalformedLayout, BatchToSpaceCropsOfWrongShape) {
  Builder b;
  const int32_t x = b.tensor({4, 2, 2, 1}), y = b.tensor({1, 4, 4, 1});
  b.op(kBatchToSpaceNd, {x, b.constant({2}, {2, 2}), b.constant({3}, {0, 0, 0})}, {y});
  expect_error(b, x, y, "BATCH_TO_SPACE_ND", "crops must have shape [2, 2]");
}

TEST_F(MalformedLayout, TopKAboveTheLastDimension) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({2, 4});
  b.op(kTopkV2, {x, b.constant({}, {4})}, {y, b.tensor({2, 4}, kInt32)});
  expect_error(b, x, y, "TOPK_V2", "k 4 is outside [0, 3]");
}

TEST_F(MalformedLayout, TopKWithoutIndicesOutput) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({2, 1});
  b.op(kTopkV2, {x, b.constant({}, {1})}, {y});
  expect_error(b, x, y, "TOPK_V2", "output 1 is missing");
}

TEST_F(MalformedLayout, RangeDeltaZero) {
  Builder b;
  const int32_t y = b.tensor({3}, kInt32);
  const int32_t start = b.tensor({}, kInt32);
  b.op(kRange, {start, b.constant({}, {5}), b.constant({}, {0})}, {y});
  expect_error(b, start, y, "RANGE", "delta is 0");
}

TEST_F(MalformedLayout, ReverseAxisRepeats) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({2, 3});
  b.op(kReverseV2, {x, b.constant({2}, {1, -1})}, {y});
  expect_error(b, x, y, "REVERSE_V2", "an axis repeats");
}

TEST_F(MalformedLayout, StridedSliceTwoEllipses) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({2, 3});
  b.op(kStridedSlice,
       {x, b.constant({2}, {0, 0}), b.constant({2}, {0, 0}), b.constant({2}, {1, 1})}, {y},
       options_of<fb::StridedSliceOptions>(fb::BuiltinOptions::StridedSliceOptions, [](auto& b) {
         return fb::CreateStridedSliceOptions(b, 0, 0, 3);
       }));
  expect_error(b, x, y, "STRIDED_SLICE", "more than one ellipsis");
}

TEST_F(MalformedLayout, StridedSliceMoreEntriesThanRank) {
  Builder b;
  const int32_t x = b.tensor({2, 3}), y = b.tensor({2, 3});
  b.op(kStridedSlice,
       {x, b.constant({3}, {0, 0, 0}), b.constant({3}, {1, 1, 1}), b.constant({3}, {1, 1, 1})},
       {y});
  expect_error(b, x, y, "STRIDED_SLICE", "the slice has 3 entries for rank 2");
}

TEST_F(MalformedLayout, OneHotAxisOutOfRange) {
  Builder b;
  const int32_t x = b.tensor({3}, kInt32), y = b.tensor({3, 4});
  b.op(kOneHot,
       {x, b.constant({}, {4}), b.constant({}, {1}, kFloat32), b.constant({}, {0}, kFloat32)}, {y},
       options_of<fb::OneHotOptions>(fb::BuiltinOptions::OneHotOptions,
                                     [](auto& b) { return fb::CreateOneHotOptions(b, 3); }));
  expect_error(b, x, y, "ONE_HOT", "axis 3 is outside [-1, 1]");
}

TEST_F(MalformedLayout, FillValueNotAScalar) {
  Builder b;
  const int32_t x = b.tensor({2}), y = b.tensor({2, 3});
  b.op(kFill, {b.constant({2}, {2, 3}), x}, {y});
  expect_error(b, x, y, "FILL", "the fill value must be a scalar");
}

// The plan of a committed model on cpu (loom_session_explain).
std::string plan_of(const std::string& name) {
  auto runtime = make_runtime();
  auto model = loom::apps::load_model(runtime.get(), (models_dir() / (name + ".tflite")).string());
  loom_session_options_t so{};
  so.struct_size = sizeof so;
  so.devices = "cpu";
  auto session = loom::apps::create_session(runtime.get(), model.get(), so);
  char* text = nullptr;
  loom::apps::check(loom_session_explain(session.get(), &text));
  return loom::apps::take_string(text);
}

// Space/depth and space/batch moves, mirror pads, tile, reverse and slice between convolutions
// stay in the nchw form: besides the one Transpose after the image input and the one before
// the output, only SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND transpose (their own 6-D block
// shuffles).
TEST(LayoutMoves, SpaceOpsTransposeOnlyAtTheBoundaries) {
  const std::string plan = plan_of("float_space_ops");
  EXPECT_NE(plan.find("Transpose x4)"), std::string::npos) << plan;
  EXPECT_NE(plan.find("SpaceToDepth x1"), std::string::npos) << plan;
}

// SPLIT, SPLIT_V and UNPACK (channel axis) read the convolutions' nchw outputs directly: the
// Transposes are the input's, the output's, and the one bringing PACK's native result to the
// nchw CONCATENATION.
TEST(LayoutMoves, SplitOfConvOutputStaysNchw) {
  const std::string plan = plan_of("float_split_pack");
  EXPECT_NE(plan.find("Transpose x3,"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Split x4"), std::string::npos) << plan;
}

}  // namespace
}  // namespace loom::tflite::testing
