// Sparse initializers and Constant's sparse_value, densified with checked indices.
#include <gtest/gtest.h>

#include "model_helpers.hpp"

namespace loom::onnx::testing {
namespace {

using TP = ::onnx::TensorProto;

// A float sparse tensor "s" of dense shape `dims` with `values` at `indices` (whose shape is
// `index_dims`).
::onnx::SparseTensorProto make_sparse(std::initializer_list<int64_t> dims,
                                      std::initializer_list<float> values,
                                      std::initializer_list<int64_t> indices,
                                      std::initializer_list<int64_t> index_dims) {
  ::onnx::SparseTensorProto s;
  for (int64_t d : dims) s.add_dims(d);
  TP* v = s.mutable_values();
  v->set_name("s");
  v->set_data_type(TP::FLOAT);
  v->add_dims(static_cast<int64_t>(values.size()));
  for (float f : values) v->add_float_data(f);
  TP* i = s.mutable_indices();
  i->set_data_type(TP::INT64);
  for (int64_t d : index_dims) i->add_dims(d);
  for (int64_t x : indices) i->add_int64_data(x);
  return s;
}

Loaded load_sparse(const ::onnx::SparseTensorProto& s) {
  ::onnx::ModelProto m = relu_model();
  *m.mutable_graph()->add_sparse_initializer() = s;
  return load_model(m);
}

TEST(OnnxSparse, LinearizedIndices) {
  Loaded r = load_sparse(make_sparse({3, 4}, {1.5f, -2.f}, {1, 10}, {2}));
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedTensor* s = r.graph().initializer("s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->dims, (std::vector<int64_t>{3, 4}));
  std::vector<float> expected(12, 0.f);
  expected[1] = 1.5f;
  expected[10] = -2.f;
  EXPECT_EQ(s->as<float>(), expected);
}

TEST(OnnxSparse, CoordinateIndices) {
  Loaded r = load_sparse(make_sparse({3, 4}, {7.f, 8.f}, {0, 1, 2, 3}, {2, 2}));
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  std::vector<float> expected(12, 0.f);
  expected[1] = 7.f;   // (0,1)
  expected[11] = 8.f;  // (2,3)
  EXPECT_EQ(r.graph().initializer("s")->as<float>(), expected);
}

TEST(OnnxSparse, IndexOutsideDenseShape) {
  Loaded lin = load_sparse(make_sparse({3, 4}, {1.f}, {12}, {1}));
  EXPECT_EQ(lin.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(lin.outcome.message,
            "sparse initializer 's': sparse index 0 = 12 is outside dense shape 3x4");
  Loaded coord = load_sparse(make_sparse({3, 4}, {1.f}, {0, 4}, {1, 2}));
  EXPECT_EQ(coord.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(coord.outcome.message,
            "sparse initializer 's': sparse index 0 coordinate 1 = 4 is outside dense shape 3x4");
}

TEST(OnnxSparse, DuplicateOrUnsortedIndices) {
  Loaded r = load_sparse(make_sparse({8}, {1.f, 2.f}, {3, 3}, {2}));
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_NE(r.outcome.message.find("strictly increasing"), std::string::npos);
}

TEST(OnnxSparse, IndexShapeMustMatchValues) {
  Loaded r = load_sparse(make_sparse({8}, {1.f, 2.f}, {3}, {1}));
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "sparse initializer 's': sparse indices have shape 1; expected 2 or 2x1");
}

TEST(OnnxSparse, AbsurdDenseShapeIsRefusedBeforeAllocating) {
  Loaded r = load_sparse(make_sparse({int64_t{1} << 40, int64_t{1} << 40}, {1.f}, {0}, {1}));
  EXPECT_EQ(r.outcome.code, LOOM_ERROR_INVALID_MODEL);
  EXPECT_EQ(r.outcome.message,
            "sparse initializer 's': dense shape 1099511627776x1099511627776 float32 exceeds the "
            "4 GiB limit for densified sparse tensors");
}

TEST(OnnxSparse, ConstantSparseValueBecomesDenseValue) {
  ::onnx::ModelProto m = relu_model();
  ::onnx::NodeProto& c = add_node(*m.mutable_graph(), "Constant", {}, {"k"}, "const");
  auto* a = c.add_attribute();
  a->set_name("sparse_value");
  a->set_type(::onnx::AttributeProto::SPARSE_TENSOR);
  *a->mutable_sparse_tensor() = make_sparse({4}, {3.f}, {2}, {1});
  Loaded r = load_model(m);
  ASSERT_TRUE(r.ok()) << r.outcome.message;
  const RecordedNode& n = *r.graph().nodes.back();
  EXPECT_EQ(n.attr("sparse_value"), nullptr);
  ASSERT_NE(n.attr("value"), nullptr);
  EXPECT_EQ(n.attr("value")->type, LOOM_ATTR_TENSOR);
  EXPECT_EQ(n.attr("value")->tensor.as<float>(), (std::vector<float>{0, 0, 3, 0}));
}

}  // namespace
}  // namespace loom::onnx::testing
