#include "fp16_storage_cases.hpp"

#include <cmath>

namespace loom::device_testing {
namespace {

void conv_cases(std::vector<ModelCase>& out) {
  struct Shape {
    int64_t c, k, kernel, group, stride;
  };
  for (const Shape& c : {Shape{32, 24, 1, 1, 1}, Shape{16, 20, 3, 1, 2}, Shape{24, 24, 3, 24, 1},
                         Shape{3, 8, 7, 1, 2}}) {
    ModelBuilder m;
    std::vector<int64_t> xs = {2, c.c, 14, 13};
    m.input("x", LOOM_DTYPE_FLOAT32, xs);
    m.initializer("w",
                  random_tensor(LOOM_DTYPE_FLOAT32, {c.k, c.c / c.group, c.kernel, c.kernel}, 21));
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 22));
    m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 23, 0.5, 1.5));
    m.initializer("shift", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 24));
    m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 25));
    m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {c.k}, 26, 0.5, 2.0));
    int64_t pad = c.kernel / 2;
    m.node("Conv", {"x", "w", "b"}, {"c"})
        .i("group", c.group)
        .ints("strides", {c.stride, c.stride})
        .ints("pads", {pad, pad, pad, pad});
    m.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"n"});
    m.node("Relu", {"n"}, {"y"});
    m.output("y");
    out.push_back({"Conv k=" + std::to_string(c.kernel) + " group=" + std::to_string(c.group) +
                       " stride=" + std::to_string(c.stride),
                   std::move(m),
                   {{"x", random_tensor(LOOM_DTYPE_FLOAT32, xs, 27)}}});
  }
  ModelBuilder m;
  m.input("x", LOOM_DTYPE_FLOAT32, {2, 5, 6, 7});
  m.initializer("scale", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 31));
  m.initializer("shift", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 32));
  m.initializer("mean", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 33));
  m.initializer("var", random_tensor(LOOM_DTYPE_FLOAT32, {5}, 34, 0.5, 2.0));
  m.node("BatchNormalization", {"x", "scale", "shift", "mean", "var"}, {"y"});
  m.output("y");
  out.push_back({"standalone BatchNormalization",
                 std::move(m),
                 {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 5, 6, 7}, 35)}}});
}

void matrix_cases(std::vector<ModelCase>& out) {
  {
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {37, 300});
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {70, 300}, 41));
    m.initializer("c", random_tensor(LOOM_DTYPE_FLOAT32, {70}, 42));
    m.node("Gemm", {"a", "b", "c"}, {"y"}).i("transB", 1).f("alpha", 0.5f).f("beta", 2.0f);
    m.output("y");
    out.push_back(
        {"Gemm", std::move(m), {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {37, 300}, 43)}}});
  }
  ModelBuilder m;
  m.input("a", LOOM_DTYPE_FLOAT32, {2, 4, 33, 64});
  m.input("b", LOOM_DTYPE_FLOAT32, {2, 4, 64, 17});
  m.node("MatMul", {"a", "b"}, {"y"});
  m.output("y");
  out.push_back({"batched MatMul",
                 std::move(m),
                 {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4, 33, 64}, 44)},
                  {"b", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4, 64, 17}, 45)}}});
}

void elementwise_and_pool_cases(std::vector<ModelCase>& out) {
  for (const char* op : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 8, 15, 15});
    NodeRef n = m.node(op, {"x"}, {"y"});
    if (std::string(op).rfind("Global", 0) != 0)
      n.ints("kernel_shape", {3, 3}).ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1});
    m.output("y");
    out.push_back(
        {op, std::move(m), {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 8, 15, 15}, 51)}}});
  }
  for (const char* op : {"Sigmoid", "Tanh", "Erf", "Exp", "Neg", "HardSwish"}) {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 50});
    m.node(op, {"x"}, {"y"});
    m.output("y");
    out.push_back(
        {op, std::move(m), {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 50}, 61, -3, 3)}}});
  }
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max"}) {
    ModelBuilder m;
    m.input("a", LOOM_DTYPE_FLOAT32, {2, 3, 4, 5});
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {3, 1, 5}, 62, 0.5, 2.0));
    m.node(op, {"a", "b"}, {"y"});
    m.output("y");
    out.push_back({std::string(op) + " broadcast",
                   std::move(m),
                   {{"a", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 4, 5}, 63)}}});
  }
}

void normalization_and_reduction_cases(std::vector<ModelCase>& out) {
  {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 4, 9, 130});
    m.node("Softmax", {"x"}, {"y"}).i("axis", -1);
    m.output("y");
    out.push_back({"Softmax",
                   std::move(m),
                   {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 4, 9, 130}, 71, -4, 4)}}});
  }
  {
    ModelBuilder m;
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 7, 96});
    m.initializer("s", random_tensor(LOOM_DTYPE_FLOAT32, {96}, 72));
    m.initializer("b", random_tensor(LOOM_DTYPE_FLOAT32, {96}, 73));
    m.node("LayerNormalization", {"x", "s", "b"}, {"y"}).i("axis", -1);
    m.output("y");
    out.push_back({"LayerNormalization",
                   std::move(m),
                   {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 7, 96}, 74, -2, 3)}}});
  }
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceL2", "ReduceLogSumExp"}) {
    ModelBuilder m(18);
    m.input("x", LOOM_DTYPE_FLOAT32, {3, 20, 11});
    m.initializer("axes", int64_tensor({2}, {0, 2}));
    m.node(op, {"x", "axes"}, {"y"}).i("keepdims", 1);
    m.output("y");
    out.push_back({op, std::move(m), {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {3, 20, 11}, 81)}}});
  }
}

void movement_and_resize_cases(std::vector<ModelCase>& out) {
  {
    // Float tensors move as halves, an int64 Gather beside them stays 64-bit.
    ModelBuilder m(13);
    m.input("x", LOOM_DTYPE_FLOAT32, {2, 3, 5, 7});
    m.initializer("table", random_tensor(LOOM_DTYPE_FLOAT32, {10, 6}, 91));
    m.input("ids", LOOM_DTYPE_INT64, {4});
    m.initializer("codes", int64_tensor({10}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
    m.initializer("starts", int64_tensor({1}, {-1}));
    m.initializer("ends", int64_tensor({1}, {-100}));
    m.initializer("slice_axes", int64_tensor({1}, {3}));
    m.initializer("steps", int64_tensor({1}, {-2}));
    m.initializer("shape", int64_tensor({2}, {6, -1}));
    m.node("Transpose", {"x"}, {"t"}).ints("perm", {0, 2, 3, 1});
    m.node("Slice", {"x", "starts", "ends", "slice_axes", "steps"}, {"s"});
    m.node("Concat", {"x", "s"}, {"c"}).i("axis", 3);
    m.node("Split", {"c"}, {"p0", "p1"}).i("axis", 0);
    m.node("Gather", {"table", "ids"}, {"g"}).i("axis", 0);
    m.node("Gather", {"codes", "ids"}, {"gi"}).i("axis", 0);
    m.node("Constant", {}, {"k"}).floats("value_floats", {0.25f, -1.5f, 3.0f, 0.1f, 2.0f, 7.0f});
    m.node("Add", {"g", "k"}, {"gk"});
    m.node("Reshape", {"t", "shape"}, {"r"});
    for (const char* name : {"t", "c", "p0", "p1", "gk", "gi", "r"}) m.output(name);
    out.push_back({"movement kernels",
                   std::move(m),
                   {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {2, 3, 5, 7}, 92)},
                    {"ids", int64_tensor({4}, {3, -1, 0, 9})}}});
  }
  for (const char* mode : {"nearest", "linear"}) {
    ModelBuilder m(13);
    m.input("x", LOOM_DTYPE_FLOAT32, {1, 3, 7, 9});
    m.initializer("roi", float_tensor({0}, {}));
    m.initializer("scales", float_tensor({4}, {1.0f, 1.0f, 2.0f, 1.5f}));
    m.node("Resize", {"x", "roi", "scales"}, {"y"}).s("mode", mode);
    m.output("y");
    out.push_back({std::string("Resize ") + mode,
                   std::move(m),
                   {{"x", random_tensor(LOOM_DTYPE_FLOAT32, {1, 3, 7, 9}, 101)}}});
  }
}

}  // namespace

std::vector<ModelCase> fp16_storage_cases() {
  std::vector<ModelCase> cases;
  conv_cases(cases);
  matrix_cases(cases);
  elementwise_and_pool_cases(cases);
  normalization_and_reduction_cases(cases);
  movement_and_resize_cases(cases);
  return cases;
}

float round_to_half(float v) {
  int exponent = 0;
  float mantissa = std::frexp(v, &exponent);  // v = mantissa * 2^exponent, |mantissa| in [0.5, 1)
  return std::ldexp(std::nearbyint(std::ldexp(mantissa, 11)), exponent - 11);
}

}  // namespace loom::device_testing
