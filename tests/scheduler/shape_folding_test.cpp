// Folding of shape computations: the host evaluator's ONNX semantics op by op, and the graph
// pass on hand-built IR graphs (what folds, what must not, and the bounds).
#include "shape_folding.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "host_eval.hpp"

namespace loom::core {
namespace {

HostTensor i64(std::vector<int64_t> dims, std::vector<int64_t> data) {
  return HostTensor{LOOM_DTYPE_INT64, std::move(dims), std::move(data)};
}

Attribute int_attribute(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = LOOM_ATTR_INT;
  a.i = v;
  return a;
}

Node op(const std::string& type, size_t inputs, int64_t opset = 13) {
  Node n;
  n.op_type = type;
  n.opset = opset;
  n.inputs.assign(inputs, 0);
  n.outputs = {0};
  return n;
}

// Evaluates `n` on known values; returns the single output or nullopt.
std::optional<HostTensor> eval(const Node& n, const std::vector<const HostTensor*>& values) {
  std::vector<HostInput> in;
  for (const HostTensor* v : values) in.push_back({v, nullptr, true});
  auto out = evaluate_host_node(n, in);
  if (!out) return std::nullopt;
  return (*out)[0];
}

TEST(HostEval, ShapeHonoursStartEndAndNeedsOnlyTheSelectedDims) {
  Shape s;
  s.rank = 3;
  s.dims = {-1, 8, 16};
  Node n = op("Shape", 1, 15);
  n.attributes.push_back(int_attribute("start", -2));
  auto out = evaluate_host_node(n, {{nullptr, &s, true}});
  ASSERT_TRUE(out);
  EXPECT_EQ((*out)[0].data, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ((*out)[0].dims, (std::vector<int64_t>{2}));
  // The whole shape reads the dynamic first dim: not foldable.
  EXPECT_FALSE(evaluate_host_node(op("Shape", 1), {{nullptr, &s, true}}));
}

TEST(HostEval, GatherTakesNegativeIndicesAndRejectsOutOfRange) {
  HostTensor data = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor idx = i64({2}, {-1, 0});
  Node n = op("Gather", 2);
  n.attributes.push_back(int_attribute("axis", -1));
  auto out = eval(n, {&data, &idx});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out->data, (std::vector<int64_t>{3, 1, 6, 4}));
  HostTensor scalar = i64({}, {1});
  n.attributes.clear();
  out = eval(n, {&data, &scalar});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{3}));
  EXPECT_EQ(out->data, (std::vector<int64_t>{4, 5, 6}));
  HostTensor bad = i64({}, {2});
  EXPECT_FALSE(eval(n, {&data, &bad}));
}

TEST(HostEval, UnsqueezeAndSqueezeAxesFromInputsOrAttributes) {
  HostTensor x = i64({3}, {7, 8, 9});
  HostTensor axes = i64({2}, {0, -1});
  auto out = eval(op("Unsqueeze", 2), {&x, &axes});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{1, 3, 1}));
  Node legacy = op("Unsqueeze", 1, 11);
  Attribute a;
  a.name = "axes";
  a.type = LOOM_ATTR_INTS;
  a.ints = {1};
  legacy.attributes.push_back(a);
  out = eval(legacy, {&x});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{3, 1}));
  HostTensor y = i64({1, 3, 1}, {7, 8, 9});
  out = eval(op("Squeeze", 1), {&y});  // no axes: every 1
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{3}));
  HostTensor wrong = i64({1}, {1});  // dim 1 is 3, not 1
  EXPECT_FALSE(eval(op("Squeeze", 2), {&y, &wrong}));
  HostTensor dup = i64({2}, {0, -3});  // both name axis 0
  EXPECT_FALSE(eval(op("Unsqueeze", 2), {&x, &dup}));
}

TEST(HostEval, SliceClampsLikeOnnx) {
  HostTensor x = i64({5}, {0, 1, 2, 3, 4});
  HostTensor starts = i64({1}, {-2}), ends = i64({1}, {std::numeric_limits<int64_t>::max()});
  auto out = eval(op("Slice", 3), {&x, &starts, &ends});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->data, (std::vector<int64_t>{3, 4}));
  // Reverse with a negative step down past the beginning.
  HostTensor rs = i64({1}, {100}), re = i64({1}, {std::numeric_limits<int64_t>::min()});
  HostTensor axes = i64({1}, {0}), steps = i64({1}, {-2});
  out = eval(op("Slice", 5), {&x, &rs, &re, &axes, &steps});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->data, (std::vector<int64_t>{4, 2, 0}));
  HostTensor m = i64({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor s2 = i64({1}, {1}), e2 = i64({1}, {3}), a2 = i64({1}, {-1});
  out = eval(op("Slice", 4), {&m, &s2, &e2, &a2});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out->data, (std::vector<int64_t>{2, 3, 5, 6}));
  HostTensor zero = i64({1}, {0});
  EXPECT_FALSE(eval(op("Slice", 5), {&x, &s2, &e2, &axes, &zero}));  // step 0
}

TEST(HostEval, ConcatCastArithmeticAndWhere) {
  HostTensor a = i64({1}, {2}), b = i64({2}, {-1, 4});
  Node concat = op("Concat", 2);
  concat.attributes.push_back(int_attribute("axis", 0));
  auto out = eval(concat, {&a, &b});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->data, (std::vector<int64_t>{2, -1, 4}));

  HostTensor x = i64({3}, {7, -7, 8}), d = i64({}, {2});
  out = eval(op("Div", 2), {&x, &d});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->data, (std::vector<int64_t>{3, -3, 4}));  // truncation toward zero
  HostTensor zero = i64({}, {0});
  EXPECT_FALSE(eval(op("Div", 2), {&x, &zero}));
  HostTensor min = i64({}, {std::numeric_limits<int64_t>::min()}), minus1 = i64({}, {-1});
  out = eval(op("Div", 2), {&min, &minus1});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->data[0], std::numeric_limits<int64_t>::min());  // wraps, no trap
  out = eval(op("Mul", 2), {&x, &d});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->data, (std::vector<int64_t>{14, -14, 16}));
  HostTensor i32 = HostTensor{LOOM_DTYPE_INT32, {}, {1}};
  EXPECT_FALSE(eval(op("Add", 2), {&x, &i32}));  // mixed types are the device's error

  Node cast = op("Cast", 1);
  cast.attributes.push_back(int_attribute("to", LOOM_DTYPE_INT32));
  HostTensor big = i64({1}, {(int64_t{1} << 32) + 5});
  out = eval(cast, {&big});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dtype, LOOM_DTYPE_INT32);
  EXPECT_EQ(out->data[0], 5);
  Node to_float = op("Cast", 1);
  to_float.attributes.push_back(int_attribute("to", LOOM_DTYPE_FLOAT32));
  EXPECT_FALSE(eval(to_float, {&big}));

  HostTensor eq_a = i64({2, 1}, {1, 2}), eq_b = i64({2}, {1, 2});
  out = eval(op("Equal", 2), {&eq_a, &eq_b});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dtype, LOOM_DTYPE_BOOL);
  EXPECT_EQ(out->data, (std::vector<int64_t>{1, 0, 0, 1}));
  HostTensor yes = i64({2}, {10, 20}), no = i64({}, {-1});
  out = eval(op("Where", 3), {&*out, &yes, &no});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out->data, (std::vector<int64_t>{10, -1, -1, 20}));
}

TEST(HostEval, RangeReshapeAndTheSizeBound) {
  HostTensor start = i64({}, {10}), limit = i64({}, {1}), delta = i64({}, {-3});
  auto out = eval(op("Range", 3, 11), {&start, &limit, &delta});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->data, (std::vector<int64_t>{10, 7, 4}));
  HostTensor huge = i64({}, {std::numeric_limits<int64_t>::max()}), one = i64({}, {1});
  HostTensor zero = i64({}, {0});
  EXPECT_FALSE(eval(op("Range", 3, 11), {&zero, &huge, &one}));  // over the bound
  EXPECT_FALSE(eval(op("Range", 3, 11), {&zero, &one, &zero}));  // delta 0

  HostTensor x = i64({2, 3}, {1, 2, 3, 4, 5, 6}), shape = i64({2}, {0, -1});
  out = eval(op("Reshape", 2, 14), {&x, &shape});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{2, 3}));
  HostTensor flat = i64({1}, {-1});
  out = eval(op("Reshape", 2, 14), {&x, &flat});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->dims, (std::vector<int64_t>{6}));
  HostTensor wrong = i64({1}, {4});
  EXPECT_FALSE(eval(op("Reshape", 2, 14), {&x, &wrong}));

  // A hostile ConstantOfShape: nothing is allocated, the node is left alone.
  Node cos = op("ConstantOfShape", 1, 9);
  Attribute value;
  value.name = "value";
  value.type = LOOM_ATTR_TENSOR;
  value.tensor = constant_from_host_tensor(i64({1}, {3}));
  cos.attributes.push_back(value);
  HostTensor enormous = i64({3}, {1 << 20, 1 << 20, 1 << 20});
  EXPECT_FALSE(eval(cos, {&enormous}));
  HostTensor negative = i64({1}, {-4});
  EXPECT_FALSE(eval(cos, {&negative}));
  HostTensor small = i64({2}, {2, 2});
  out = eval(cos, {&small});
  ASSERT_TRUE(out);
  EXPECT_EQ(out->data, (std::vector<int64_t>{3, 3, 3, 3}));
}

// ---- the graph pass --------------------------------------------------------------------------

struct FoldGraph {
  std::shared_ptr<Model> model = std::make_shared<Model>();
  Graph& g;
  SchemaRegistry schemas;
  FoldGraph() : g(*(model->graph = std::make_shared<Graph>())) { model->opsets[""] = 13; }

  int input(const std::string& name, loom_dtype_t dtype, std::vector<int64_t> dims) {
    int id = g.intern(name);
    g.values[id].dtype = dtype;
    g.values[id].shape.rank = static_cast<int32_t>(dims.size());
    g.values[id].shape.dims = std::move(dims);
    g.values[id].graph_input = true;
    g.inputs.push_back(id);
    return id;
  }
  int initializer(const std::string& name, const HostTensor& t, bool overridable = false) {
    int id = g.intern(name);
    g.values[id].constant = constant_from_host_tensor(t);
    g.values[id].dtype = t.dtype;
    g.values[id].shape.rank = static_cast<int32_t>(t.dims.size());
    g.values[id].shape.dims = t.dims;
    if (overridable) {
      g.values[id].graph_input = true;
      g.inputs.push_back(id);
    }
    return id;
  }
  // A float initializer filled with `fill`; returns its id and keeps the data alive.
  int float_initializer(const std::string& name, std::vector<int64_t> dims, float fill) {
    size_t count = 1;
    for (int64_t d : dims) count *= static_cast<size_t>(d);
    auto values = std::make_shared<std::vector<float>>(count, fill);
    auto data = std::make_shared<ConstantData>();
    data->dtype = LOOM_DTYPE_FLOAT32;
    data->dims = dims;
    data->data = values->data();
    data->size = count * sizeof(float);
    data->owner = values;
    int id = g.intern(name);
    g.values[id].constant = data;
    g.values[id].dtype = LOOM_DTYPE_FLOAT32;
    g.values[id].shape.rank = static_cast<int32_t>(dims.size());
    g.values[id].shape.dims = std::move(dims);
    return id;
  }
  int node(const std::string& type, std::vector<int> inputs, const std::string& out,
           std::vector<Attribute> attrs = {}) {
    Node n;
    n.name = out;
    n.op_type = type;
    n.opset = 13;
    n.inputs = std::move(inputs);
    int id = g.intern(out);
    n.outputs = {id};
    n.attributes = std::move(attrs);
    g.values[id].producer = static_cast<int>(g.nodes.size());
    g.nodes.push_back(std::move(n));
    return id;
  }
  void output(int id) {
    g.values[id].graph_output = true;
    g.outputs.push_back(id);
  }
  // The BERT-style reshape: y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1, 4])).
  int reshape_chain(int x) {
    int dim0 =
        node("Gather", {node("Shape", {x}, "shape"), initializer("zero", i64({}, {0}))}, "dim0");
    int batch = node("Unsqueeze", {dim0, initializer("axes0", i64({1}, {0}))}, "batch");
    Attribute axis = int_attribute("axis", 0);
    int target = node("Concat", {batch, initializer("rest", i64({2}, {-1, 4}))}, "target", {axis});
    return node("Reshape", {x, target}, "y");
  }
  std::shared_ptr<Model> fold(FoldStats& stats) {
    return fold_shape_computations(model, schemas, stats);
  }
};

const int64_t* constant_ints(const Graph& g, const std::string& name) {
  int id = g.find(name);
  if (id < 0 || !g.values[id].constant || g.values[id].constant->dtype != LOOM_DTYPE_INT64)
    return nullptr;
  return static_cast<const int64_t*>(g.values[id].constant->data);
}

TEST(ShapeFolding, StaticReshapeChainBecomesAConstantShape) {
  FoldGraph t;
  int x = t.input("x", LOOM_DTYPE_FLOAT32, {2, 8, 16});
  t.output(t.reshape_chain(x));
  FoldStats stats;
  auto folded = t.fold(stats);
  ASSERT_NE(folded, t.model);
  EXPECT_EQ(stats.nodes, 4u);  // Shape, Gather, Unsqueeze, Concat
  const Graph& g = *folded->graph;
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Reshape");
  EXPECT_EQ(g.values[g.find("y")].producer, 0);
  const int64_t* target = constant_ints(g, "target");
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(std::vector<int64_t>(target, target + 3), (std::vector<int64_t>{2, -1, 4}));
  // The source model is untouched (other sessions share it).
  EXPECT_EQ(t.g.nodes.size(), 5u);
  EXPECT_EQ(t.g.values[t.g.find("target")].constant, nullptr);
}

TEST(ShapeFolding, DynamicDimsStayUnfolded) {
  FoldGraph t;
  int x = t.input("x", LOOM_DTYPE_FLOAT32, {-1, 8, 16});
  t.output(t.reshape_chain(x));
  FoldStats stats;
  EXPECT_EQ(t.fold(stats), t.model);
  EXPECT_EQ(stats.nodes, 0u);
}

TEST(ShapeFolding, IntermediateShapesDeclaredInValueInfoAreNotTrusted) {
  // value_info claims y is 5x8, which inference cannot confirm (the batch is dynamic): folding
  // Shape(y) into [5, 8] would be a silently wrong answer for any other batch.
  FoldGraph t;
  int x = t.input("x", LOOM_DTYPE_FLOAT32, {-1, 8});
  int y = t.node("Relu", {x}, "y");
  t.g.values[y].dtype = LOOM_DTYPE_FLOAT32;
  t.g.values[y].shape.rank = 2;
  t.g.values[y].shape.dims = {5, 8};
  int shape = t.node("Shape", {y}, "shape");
  t.output(t.node("Mul", {t.input("n", LOOM_DTYPE_INT64, {2}), shape}, "scaled"));
  FoldStats stats;
  EXPECT_EQ(t.fold(stats), t.model);
  EXPECT_EQ(stats.nodes, 0u);
  // The same declaration on a static input is confirmed by inference and still folds.
  FoldGraph u;
  int ux = u.input("x", LOOM_DTYPE_FLOAT32, {5, 8});
  int uy = u.node("Relu", {ux}, "y");
  u.g.values[uy].shape.rank = 2;
  u.g.values[uy].shape.dims = {5, 8};
  int ushape = u.node("Shape", {uy}, "shape");
  u.output(u.node("Mul", {u.input("n", LOOM_DTYPE_INT64, {2}), ushape}, "scaled"));
  FoldStats ustats;
  auto folded = u.fold(ustats);
  EXPECT_EQ(ustats.nodes, 1u);
  const int64_t* dims = constant_ints(*folded->graph, "shape");
  ASSERT_NE(dims, nullptr);
  EXPECT_EQ(dims[0], 5);
  EXPECT_EQ(dims[1], 8);
}

TEST(ShapeFolding, StaticDimsOfADynamicShapeStillFold) {
  FoldGraph t;
  int x = t.input("x", LOOM_DTYPE_FLOAT32, {-1, 8, 16});
  int shape = t.node("Shape", {x}, "shape");
  int last = t.node("Gather", {shape, t.initializer("minus1", i64({}, {-1}))}, "last");
  t.output(t.node("Mul", {t.input("n", LOOM_DTYPE_INT64, {}), last}, "scaled"));
  FoldStats stats;
  EXPECT_EQ(t.fold(stats), t.model);
  EXPECT_EQ(stats.nodes, 0u);  // Gather reads the whole Shape, whose first dim is dynamic
  Attribute start = int_attribute("start", 1);
  FoldGraph u;
  int ux = u.input("x", LOOM_DTYPE_FLOAT32, {-1, 8, 16});
  int tail = u.node("Shape", {ux}, "tail", {start});
  u.g.nodes.back().opset = 15;
  u.output(u.node("Mul", {u.input("n", LOOM_DTYPE_INT64, {2}), tail}, "scaled"));
  FoldStats ustats;
  auto ufolded = u.fold(ustats);
  EXPECT_EQ(ustats.nodes, 1u);
  const int64_t* dims = constant_ints(*ufolded->graph, "tail");
  ASSERT_NE(dims, nullptr);
  EXPECT_EQ(dims[0], 8);
  EXPECT_EQ(dims[1], 16);
}

TEST(ShapeFolding, OutputsOverridableInitializersAndHostileSizesAreLeftAlone) {
  FoldGraph t;
  int x = t.input("x", LOOM_DTYPE_FLOAT32, {2, 3});
  int shape = t.node("Shape", {x}, "shape");
  t.output(shape);  // a graph output keeps its producer
  // The user may feed another tensor for `w`: its shape is not known before the run.
  int w = t.initializer("w", i64({2}, {1, 2}), /*overridable=*/true);
  int wshape = t.node("Shape", {w}, "wshape");
  t.output(t.node("Mul", {t.input("n", LOOM_DTYPE_INT64, {1}), wshape}, "wscaled"));
  // ConstantOfShape([2^40]) must not allocate.
  Attribute value;
  value.name = "value";
  value.type = LOOM_ATTR_TENSOR;
  value.tensor = constant_from_host_tensor(i64({1}, {1}));
  int huge = t.node("ConstantOfShape", {t.initializer("big", i64({1}, {int64_t{1} << 40}))}, "huge",
                    {value});
  t.output(t.node("Mul", {t.input("m", LOOM_DTYPE_INT64, {1}), huge}, "hscaled"));
  FoldStats stats;
  EXPECT_EQ(t.fold(stats), t.model);
  EXPECT_EQ(stats.nodes, 0u);
}

TEST(ShapeFolding, FoldingRepeatsThroughReshapedShapes) {
  // Reshape(x, Shape(x)-based target) makes z static; a later Shape(z) then folds in round two.
  FoldGraph t;
  int x = t.input("x", LOOM_DTYPE_FLOAT32, {2, 8, 16});
  int y = t.reshape_chain(x);
  int zshape = t.node("Shape", {y}, "zshape");
  t.output(t.node("Mul", {t.input("n", LOOM_DTYPE_INT64, {3}), zshape}, "scaled"));
  FoldStats stats;
  auto folded = t.fold(stats);
  EXPECT_EQ(stats.nodes, 5u);
  const int64_t* dims = constant_ints(*folded->graph, "zshape");
  ASSERT_NE(dims, nullptr);
  EXPECT_EQ(std::vector<int64_t>(dims, dims + 3), (std::vector<int64_t>{2, 32, 4}));
}

// PyTorch's exporter gives each further reader of a shared weight an Identity of it; a device
// must see those readers' weights as constants (a depthwise Conv with non-constant weights fell
// back to the cpu device), whatever the dtype and size, without copying the data.
TEST(ShapeFolding, IdentityOfAConstantBecomesTheSameConstant) {
  FoldGraph t;
  int w = t.float_initializer("w", {1000, 100}, 0.5f);
  const void* weights = t.g.values[w].constant->data;
  int x = t.input("x", LOOM_DTYPE_FLOAT32, {4, 100});
  int shared = t.node("Identity", {w}, "w_again");
  int twice = t.node("Identity", {shared}, "w_third");
  int wt = t.node("Transpose", {twice}, "wt");
  t.output(t.node("MatMul", {x, wt}, "y"));
  int overridable = t.initializer("o", i64({2}, {1, 2}), /*overridable=*/true);
  t.output(t.node("Identity", {overridable}, "o_copy"));  // may change per run: stays a node
  t.output(t.node("Identity", {w}, "w_out"));             // a graph output keeps its producer
  FoldStats stats;
  auto folded = t.fold(stats);
  ASSERT_NE(folded, t.model);
  EXPECT_EQ(stats.identities, 2u);
  EXPECT_EQ(stats.nodes, 0u);
  const Graph& g = *folded->graph;
  for (const char* name : {"w_again", "w_third"}) {
    const Value& v = g.values[g.find(name)];
    ASSERT_NE(v.constant, nullptr) << name;
    EXPECT_EQ(v.constant->data, weights) << name;  // shared, not copied
    EXPECT_EQ(v.producer, -1) << name;
    EXPECT_EQ(v.shape.dims, (std::vector<int64_t>{1000, 100})) << name;
  }
  std::vector<std::string> kept;
  for (const Node& n : g.nodes) kept.push_back(n.op_type);
  EXPECT_EQ(kept, (std::vector<std::string>{"Transpose", "MatMul", "Identity", "Identity"}));
  EXPECT_EQ(g.values[g.find("o_copy")].constant, nullptr);
}

// A Pad with all-zero pads (PyTorch puts one before DenseNet's transition AveragePools) is
// bypassed: its readers read its input, so a device without Pad does not cut the graph there.
// Pads given as an attribute (before opset 11) count too; a real Pad and a zero Pad whose
// output is a graph output stay.
TEST(ShapeFolding, PadsOfZeroAreBypassed) {
  FoldGraph t;
  int x = t.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 6, 6});
  int zero = t.initializer("zeros", i64({8}, {0, 0, 0, 0, 0, 0, 0, 0}));
  int ones = t.initializer("ones", i64({8}, {0, 0, 1, 1, 0, 0, 1, 1}));
  int padded = t.node("Pad", {x, zero}, "padded");
  int relu = t.node("Relu", {padded}, "relu");
  Attribute old_pads;
  old_pads.name = "pads";
  old_pads.type = LOOM_ATTR_INTS;
  old_pads.ints = {0, 0, 0, 0, 0, 0, 0, 0};
  int old = t.node("Pad", {relu}, "old_style", {old_pads});
  t.g.nodes.back().opset = 2;
  t.output(t.node("Pad", {old, ones}, "real_pad"));
  t.output(t.node("Pad", {relu, zero}, "zero_pad_output"));
  FoldStats stats;
  auto folded = t.fold(stats);
  ASSERT_NE(folded, t.model);
  EXPECT_EQ(stats.noop_pads, 2u);
  const Graph& g = *folded->graph;
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].op_type, "Relu");
  EXPECT_EQ(g.nodes[0].inputs, (std::vector<int>{x}));
  EXPECT_EQ(g.nodes[1].op_type, "Pad");  // the real one now reads the Relu directly
  EXPECT_EQ(g.nodes[1].inputs[0], relu);
  EXPECT_EQ(g.nodes[2].op_type, "Pad");  // a graph output keeps its producer
  EXPECT_EQ(g.values[g.find("zero_pad_output")].producer, 2);
  EXPECT_EQ(g.values[relu].producer, 0);
  (void)padded;
}

// A zero-value constant Pad of the spatial axes read only by a Conv, or by an AveragePool
// without pads of its own, becomes that node's pads (the pool then counts the padding, as the
// explicit zeros were counted). A Pad of the channel axis, a non-zero value, a MaxPool reader,
// a second reader or a ceil_mode pool keep their Pad.
TEST(ShapeFolding, ZeroPadsMoveIntoConvAndAveragePool) {
  FoldGraph t;
  int x = t.input("x", LOOM_DTYPE_FLOAT32, {1, 4, 6, 6});
  int spatial = t.initializer("spatial", i64({8}, {0, 0, 1, 2, 0, 0, 1, 2}));
  int channel = t.initializer("channel", i64({8}, {0, 1, 0, 0, 0, 0, 0, 0}));
  int wid = t.float_initializer("w", {4, 4, 3, 3}, 0.1f);
  Attribute conv_pads;
  conv_pads.name = "pads";
  conv_pads.type = LOOM_ATTR_INTS;
  conv_pads.ints = {1, 0, 0, 1};
  int p1 = t.node("Pad", {x, spatial}, "p1");
  int conv = t.node("Conv", {p1, wid}, "conv", {conv_pads});
  int p2 = t.node("Pad", {conv, spatial}, "p2");
  Attribute kernel;
  kernel.name = "kernel_shape";
  kernel.type = LOOM_ATTR_INTS;
  kernel.ints = {3, 3};
  int pool = t.node("AveragePool", {p2}, "pool", {kernel});
  int p3 = t.node("Pad", {pool, spatial}, "p3");  // read by a MaxPool: stays
  t.output(t.node("MaxPool", {p3}, "maxpool", {kernel}));
  int p4 = t.node("Pad", {pool, channel}, "p4");  // pads channels: stays
  t.output(t.node("Conv", {p4, wid}, "conv_c"));
  FoldStats stats;
  auto folded = t.fold(stats);
  ASSERT_NE(folded, t.model);
  EXPECT_EQ(stats.fused_pads, 2u);
  const Graph& g = *folded->graph;
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  EXPECT_EQ(ops,
            (std::vector<std::string>{"Conv", "AveragePool", "Pad", "MaxPool", "Pad", "Conv"}));
  EXPECT_EQ(g.nodes[0].inputs[0], x);
  EXPECT_EQ(g.nodes[0].find_attribute("pads")->ints, (std::vector<int64_t>{2, 2, 1, 3}));
  EXPECT_EQ(g.nodes[1].inputs[0], conv);
  EXPECT_EQ(g.nodes[1].find_attribute("pads")->ints, (std::vector<int64_t>{1, 2, 1, 2}));
  EXPECT_EQ(g.nodes[1].find_attribute("count_include_pad")->i, 1);
  (void)p1;
  (void)p2;
}

// Optional outputs nothing reads (a Dropout's mask, which PyTorch exports even in inference, a
// MaxPool's Indices) are omitted, so devices without bool or index tensors can take the node.
// A mask that is a graph output stays.
TEST(ShapeFolding, UnreadOptionalOutputsAreOmitted) {
  FoldGraph t;
  int x = t.input("x", LOOM_DTYPE_FLOAT32, {1, 2, 4, 4});
  Node dropout;
  dropout.name = "drop";
  dropout.op_type = "Dropout";
  dropout.opset = 13;
  dropout.inputs = {x};
  dropout.outputs = {t.g.intern("d"), t.g.intern("mask")};
  t.g.nodes.push_back(dropout);
  Node kept = dropout;
  kept.name = "drop2";
  kept.outputs = {t.g.intern("d2"), t.g.intern("mask2")};
  t.g.nodes.push_back(kept);
  t.output(t.node("Relu", {dropout.outputs[0]}, "y"));
  t.output(kept.outputs[0]);
  t.output(kept.outputs[1]);
  FoldStats stats;
  auto folded = t.fold(stats);
  ASSERT_NE(folded, t.model);
  EXPECT_EQ(stats.omitted_outputs, 1u);
  const Graph& g = *folded->graph;
  EXPECT_EQ(g.nodes[0].outputs[1], -1);
  EXPECT_EQ(g.nodes[1].outputs[1], kept.outputs[1]);
}

}  // namespace
}  // namespace loom::core
