// Sparse constants (TFLite's SparsityParameters, densified at load by sparsity.cpp): a valid
// encoding loads and computes what its dense form computes; every inconsistency of a hostile or
// corrupt encoding is refused with one line naming the tensor and the problem, before any
// index is used.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tflite_subset_generated.h"
#include "tflite_test_support.hpp"

namespace loom::tflite::testing {
namespace {

namespace fb = loom::tflite_schema;

// One traversal level: dense (size) or CSR (segments, indices).
struct Level {
  bool dense = true;
  int32_t size = 0;
  std::vector<int32_t> segments, indices;
  bool segments_table = true;  // false: the union names Int32Vector but holds no table
};

// x [1, shape[1]] -> FULLY_CONNECTED(weights: a sparse float constant of `shape`) -> y, or with
// `densify` the weights pass through a DENSIFY operator first.
struct SparseFc {
  std::vector<int32_t> shape = {2, 4};
  std::vector<int32_t> order = {0, 1};
  std::vector<int32_t> block_map;
  std::vector<Level> levels;
  std::vector<float> values;
  bool with_values = true;
  bool densify = false;
  bool densify_input_is_x = false;

  std::string serialize() const {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<fb::DimensionMetadata>> metadata;
    for (const auto& level : levels) {
      if (level.dense) {
        metadata.push_back(fb::CreateDimensionMetadata(b, fb::DimensionType::DENSE, level.size));
        continue;
      }
      auto segments = level.segments_table
                          ? fb::CreateInt32Vector(b, b.CreateVector(level.segments)).Union()
                          : flatbuffers::Offset<void>();
      auto indices = fb::CreateInt32Vector(b, b.CreateVector(level.indices)).Union();
      metadata.push_back(fb::CreateDimensionMetadata(b, fb::DimensionType::SPARSE_CSR, 0,
                                                     fb::SparseIndexVector::Int32Vector, segments,
                                                     fb::SparseIndexVector::Int32Vector, indices));
    }
    auto sparsity = fb::CreateSparsityParameters(
        b, b.CreateVector(order), b.CreateVector(block_map), b.CreateVector(metadata));
    std::vector<uint8_t> raw(values.size() * 4);
    if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
    std::vector<flatbuffers::Offset<fb::Buffer>> buffers = {fb::CreateBuffer(b)};
    buffers.push_back(fb::CreateBuffer(b, with_values ? b.CreateVector(raw) : 0));
    const std::vector<int32_t> x_shape = {1, shape[1]}, y_shape = {1, shape[0]};
    std::vector<flatbuffers::Offset<fb::Tensor>> tensors = {
        fb::CreateTensor(b, b.CreateVector(x_shape), fb::TensorType::FLOAT32, 0,
                         b.CreateString("x")),
        fb::CreateTensor(b, b.CreateVector(shape), fb::TensorType::FLOAT32, 1, b.CreateString("w"),
                         0, false, sparsity),
        fb::CreateTensor(b, b.CreateVector(y_shape), fb::TensorType::FLOAT32, 0,
                         b.CreateString("y")),
        fb::CreateTensor(b, b.CreateVector(shape), fb::TensorType::FLOAT32, 0,
                         b.CreateString("w_dense"))};
    std::vector<flatbuffers::Offset<fb::OperatorCode>> codes = {
        fb::CreateOperatorCode(b, 9, 0, 1, 9),       // FULLY_CONNECTED
        fb::CreateOperatorCode(b, 124, 0, 1, 124)};  // DENSIFY
    std::vector<flatbuffers::Offset<fb::Operator>> operators;
    int32_t weights = 1;
    if (densify) {
      const std::vector<int32_t> in = {densify_input_is_x ? 0 : 1}, out = {3};
      operators.push_back(fb::CreateOperator(b, 1, b.CreateVector(in), b.CreateVector(out)));
      weights = 3;
    }
    const std::vector<int32_t> in = {0, weights, -1}, out = {2};
    operators.push_back(fb::CreateOperator(b, 0, b.CreateVector(in), b.CreateVector(out)));
    const std::vector<int32_t> inputs = {0}, outputs = {2};
    auto subgraph = fb::CreateSubGraph(b, b.CreateVector(tensors), b.CreateVector(inputs),
                                       b.CreateVector(outputs), b.CreateVector(operators),
                                       b.CreateString("main"));
    auto root = fb::CreateModel(b, 3, b.CreateVector(codes), b.CreateVector(std::vector{subgraph}),
                                0, b.CreateVector(buffers));
    b.Finish(root, fb::ModelIdentifier());
    return {reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()};
  }
};

// w = [[0, 1.5, 0, 0], [2, 0, 0, -3]] in CSR rows: segments {0, 1, 3}, columns {1, 0, 3}.
SparseFc csr_rows() {
  SparseFc m;
  m.levels = {{true, 2, {}, {}}, {false, 0, {0, 1, 3}, {1, 0, 3}}};
  m.values = {1.5f, 2.f, -3.f};
  return m;
}

class Sparse : public ::testing::Test {
 protected:
  std::string error_of(const SparseFc& model) {
    write_file(dir_ / "model.tflite", model.serialize());
    return load_error(runtime_.get(), dir_ / "model.tflite");
  }
  // y of the model for x = [1, 2, 3, 4] on cpu.
  std::vector<float> run_model(const SparseFc& model) {
    write_file(dir_ / "model.tflite", model.serialize());
    auto loaded = loom::apps::load_model(runtime_.get(), (dir_ / "model.tflite").string());
    auto x = loom::apps::HostTensor::zeros(LOOM_DTYPE_FLOAT32, {1, 4});
    const float xs[] = {1, 2, 3, 4};
    std::memcpy(x.data.data(), xs, sizeof xs);
    auto outputs = run(runtime_.get(), loaded.get(), "cpu", {x});
    std::vector<float> y(outputs.at(0).element_count());
    std::memcpy(y.data(), outputs[0].data.data(), y.size() * 4);
    return y;
  }

  loom::apps::RuntimePtr runtime_ = make_runtime();
  TempDir dir_;
};

TEST_F(Sparse, CsrRowsDensifyToTheDenseWeights) {
  EXPECT_EQ(run_model(csr_rows()), (std::vector<float>{3.f, -10.f}));
}

TEST_F(Sparse, DensifyOperatorOfASparseConstantIsFolded) {
  SparseFc m = csr_rows();
  m.densify = true;
  EXPECT_EQ(run_model(m), (std::vector<float>{3.f, -10.f}));
}

TEST_F(Sparse, BlockedColumnsDensify) {
  // 1x2 blocks: w = [[0, 0, 1, 2], [3, 4, 0, 0]]; rows dense, block columns CSR, block dense.
  SparseFc m;
  m.order = {0, 1, 2};
  m.block_map = {1};
  m.levels = {{true, 2, {}, {}}, {false, 0, {0, 1, 2}, {1, 0}}, {true, 2, {}, {}}};
  m.values = {1, 2, 3, 4};
  EXPECT_EQ(run_model(m), (std::vector<float>{11.f, 11.f}));
}

TEST_F(Sparse, IndexOutsideTheDimensionIsRefused) {
  SparseFc m = csr_rows();
  m.levels[1].indices = {1, 0, 7};
  const std::string error = error_of(m);
  EXPECT_NE(error.find("tensor 1 'w' is sparse, but its sparsity parameters (dimension 1 of the "
                       "traversal) have index 7 outside the dimension of size 4"),
            std::string::npos)
      << error;
}

// Found by the fuzzer (a NULL table read): the segments union has a type but no value.
TEST_F(Sparse, IndexVectorUnionWithoutATableIsRefused) {
  SparseFc m = csr_rows();
  m.levels[1].segments_table = false;
  const std::string error = error_of(m);
  EXPECT_NE(error.find("is missing"), std::string::npos) << error;
}

TEST_F(Sparse, WrongNumberOfSegmentsIsRefused) {
  SparseFc m = csr_rows();
  m.levels[1].segments = {0, 3};
  const std::string error = error_of(m);
  EXPECT_NE(error.find("have 2 segments; 3 are needed"), std::string::npos) << error;
}

TEST_F(Sparse, DecreasingOrShortSegmentsAreRefused) {
  SparseFc m = csr_rows();
  m.levels[1].segments = {0, 2, 1};
  EXPECT_NE(error_of(m).find("segments that do not span the 3 indices"), std::string::npos);
  m.levels[1].segments = {0, 3, 2};
  m.levels[1].indices = {1, 0};
  m.values = {1.f, 2.f};
  EXPECT_NE(error_of(m).find("decreasing segments"), std::string::npos) << error_of(m);
}

TEST_F(Sparse, ValueCountMustMatchTheStoredElements) {
  SparseFc m = csr_rows();
  m.values = {1.5f, 2.f};
  const std::string error = error_of(m);
  EXPECT_NE(error.find("is sparse with 3 stored elements, but has 2 values"), std::string::npos)
      << error;
}

TEST_F(Sparse, TraversalOrderMustBeAPermutation) {
  SparseFc m = csr_rows();
  m.order = {1, 1};
  EXPECT_NE(error_of(m).find("traversal order that is not a permutation of 0..1"),
            std::string::npos);
  m.order = {0};
  EXPECT_NE(error_of(m).find("have a traversal order of 1 dimensions; the rank is 2"),
            std::string::npos);
}

TEST_F(Sparse, DenseSizeMustMatchTheDimension) {
  SparseFc m = csr_rows();
  m.levels[0].size = 3;
  EXPECT_NE(error_of(m).find("declare a dense size of 3, but the dimension has 2"),
            std::string::npos)
      << error_of(m);
}

TEST_F(Sparse, BlockSizeMustDivideItsDimension) {
  SparseFc m;
  m.order = {0, 1, 2};
  m.block_map = {1};
  m.levels = {{true, 2, {}, {}}, {false, 0, {0, 1, 2}, {1, 0}}, {true, 3, {}, {}}};
  m.values = {1, 2, 3, 4, 5, 6};
  EXPECT_NE(error_of(m).find("give block dimension 0 a size of 3, which does not divide "
                             "dimension 1 (4)"),
            std::string::npos)
      << error_of(m);
}

TEST_F(Sparse, SparseTensorWithoutValuesIsRefused) {
  SparseFc m = csr_rows();
  m.with_values = false;
  EXPECT_NE(error_of(m).find("tensor 1 'w' has sparsity parameters but no values"),
            std::string::npos)
      << error_of(m);
}

TEST_F(Sparse, HugeDenseFormIsRefusedBeforeAllocating) {
  // 32768 x 32768 floats (4 GiB) from three stored values.
  SparseFc m = csr_rows();
  m.shape = {32768, 32768};
  m.levels = {{false, 0, {0, 3}, {0, 1, 2}}, {false, 0, {0, 1, 2, 3}, {5, 6, 7}}};
  const std::string error = error_of(m);
  EXPECT_NE(error.find("is sparse and would densify to 4294967296 bytes"), std::string::npos)
      << error;
}

TEST_F(Sparse, DensifyOfANonConstantIsRefused) {
  SparseFc m = csr_rows();
  m.shape = {1, 4};
  m.levels = {{true, 1, {}, {}}, {false, 0, {0, 3}, {1, 0, 3}}};
  m.densify = true;
  m.densify_input_is_x = true;
  const std::string error = error_of(m);
  EXPECT_NE(error.find("operator 0 (DENSIFY) densifies tensor 0 'x', which is not a constant"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace loom::tflite::testing
