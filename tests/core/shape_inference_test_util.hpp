// Test helpers for the shape-inference tests: TestNode builds the loom_node_t view of one node
// and runs the built-in inference the core would pick; TestGraph is a nested graph body.
#pragma once

#include <gtest/gtest.h>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>
#include "schemas/builtin_schemas.hpp"

namespace {


using Dims = std::vector<int64_t>;
constexpr int64_t U = -1;  // unknown extent

// Owns everything a loom_node_t view points to and runs the inference of the schema the core
// would pick: the newest version of the op not newer than the node's opset.
class TestNode {
 public:
  explicit TestNode(std::string op_type, int64_t opset = 17, std::string domain = "")
      : op_type_(std::move(op_type)), domain_(std::move(domain)), opset_(opset) {}

  TestNode& input(loom_dtype_t dtype, Dims dims) { return add_value(dtype, std::move(dims), true); }
  TestNode& unknown_rank_input(loom_dtype_t dtype) { return add_value(dtype, {}, false); }
  TestNode& omitted() {
    inputs_.push_back(nullptr);
    return *this;
  }
  TestNode& ints_input(const std::vector<int64_t>& values, bool scalar = false) {
    return const_input(LOOM_DTYPE_INT64, values.data(), values.size() * 8,
                       scalar ? Dims{} : Dims{static_cast<int64_t>(values.size())});
  }
  TestNode& floats_input(const std::vector<float>& values, bool scalar = false) {
    return const_input(LOOM_DTYPE_FLOAT32, values.data(), values.size() * 4,
                       scalar ? Dims{} : Dims{static_cast<int64_t>(values.size())});
  }
  TestNode& const_input(loom_dtype_t dtype, const void* data, size_t bytes, Dims dims) {
    add_value(dtype, std::move(dims), true);
    Value& v = *values_.back();
    v.bytes.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    v.info.flags = LOOM_VALUE_CONSTANT;
    v.info.data = v.bytes.data();
    v.info.data_size = v.bytes.size();
    return *this;
  }

  TestNode& attr(const char* name, int64_t i) { return add_attr(name, LOOM_ATTR_INT).i = i, *this; }
  TestNode& attr(const char* name, float f) { return add_attr(name, LOOM_ATTR_FLOAT).f = f, *this; }
  TestNode& attr(const char* name, const char* s) {
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_STRING);
    strings_.emplace_back(s);
    a.s = strings_.back().c_str();
    a.s_size = strings_.back().size();
    return *this;
  }
  TestNode& attr_ints(const char* name, std::vector<int64_t> ints) {
    int_lists_.push_back(std::move(ints));
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_INTS);
    a.ints = int_lists_.back().data();
    a.count = int_lists_.back().size();
    return *this;
  }
  TestNode& attr_floats(const char* name, std::vector<float> floats) {
    float_lists_.push_back(std::move(floats));
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_FLOATS);
    a.floats = float_lists_.back().data();
    a.count = float_lists_.back().size();
    return *this;
  }
  TestNode& attr_strings(const char* name, size_t count) {
    string_lists_.emplace_back(count, loom_string_t{"", 0});
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_STRINGS);
    a.strings = string_lists_.back().data();
    a.count = count;
    return *this;
  }
  TestNode& attr_tensor(const char* name, loom_dtype_t dtype, Dims dims) {
    auto v = std::make_unique<Value>();
    v->dims = std::move(dims);
    v->info = value_info(dtype, v->dims, true);
    add_attr(name, LOOM_ATTR_TENSOR).tensor = &v->info;
    values_.push_back(std::move(v));
    return *this;
  }
  TestNode& attr_graph(const char* name, const loom_graph_t* graph) {
    add_attr(name, LOOM_ATTR_GRAPH).graph = graph;
    return *this;
  }
  TestNode& outputs(size_t n) {
    num_outputs_ = n;
    return *this;
  }

  // Runs inference; returns the outputs.
  std::vector<loom_inferred_t> infer() {
    const loom::core::BuiltinSchema* best = nullptr;
    for (const loom::core::BuiltinSchema& s : loom::core::builtin_schemas())
      if (domain_ == s.domain && op_type_ == s.op_type && s.since_version <= opset_ &&
          (!best || s.since_version > best->since_version))
        best = &s;
    if (!best) throw std::runtime_error("no schema for " + op_type_);
    if (!best->infer) throw std::runtime_error("no inference for " + op_type_);
    std::vector<const loom_attribute_t*> attr_ptrs;
    for (const loom_attribute_t& a : attrs_) attr_ptrs.push_back(&a);
    std::vector<int32_t> ins(inputs_.size()), outs(num_outputs_);
    for (size_t i = 0; i < ins.size(); ++i) ins[i] = inputs_[i] ? static_cast<int32_t>(i) : -1;
    for (size_t i = 0; i < outs.size(); ++i) outs[i] = static_cast<int32_t>(ins.size() + i);
    loom_node_t node{};
    node.struct_size = sizeof node;
    node.name = "n";
    node.op_type = op_type_.c_str();
    node.domain = domain_.c_str();
    node.opset = opset_;
    node.num_inputs = ins.size();
    node.inputs = ins.data();
    node.num_outputs = outs.size();
    node.outputs = outs.data();
    node.num_attributes = attr_ptrs.size();
    node.attributes = attr_ptrs.data();
    std::vector<loom_inferred_t> out(num_outputs_);
    for (loom_inferred_t& o : out) {
      std::memset(&o, 0, sizeof o);
      o.struct_size = sizeof o;
      o.rank = -1;
    }
    best->infer(node, inputs_, out);
    return out;
  }
  loom_inferred_t infer0() { return infer().at(0); }

  static loom_value_info_t value_info(loom_dtype_t dtype, const Dims& dims, bool rank_known) {
    loom_value_info_t info{};
    info.struct_size = sizeof info;
    info.name = "v";
    info.dtype = dtype;
    info.rank = rank_known ? static_cast<int32_t>(dims.size()) : -1;
    info.dims = dims.data();
    info.arena_offset = -1;
    return info;
  }

 private:
  struct Value {
    Dims dims;
    std::vector<char> bytes;
    loom_value_info_t info;
  };
  TestNode& add_value(loom_dtype_t dtype, Dims dims, bool rank_known) {
    auto v = std::make_unique<Value>();
    v->dims = std::move(dims);
    v->info = value_info(dtype, v->dims, rank_known);
    inputs_.push_back(&v->info);
    values_.push_back(std::move(v));
    return *this;
  }
  loom_attribute_t& add_attr(const char* name, loom_attr_type_t type) {
    strings_.emplace_back(name);
    loom_attribute_t a{};
    a.struct_size = sizeof a;
    a.name = strings_.back().c_str();
    a.type = type;
    attrs_.push_back(a);
    return attrs_.back();
  }

  std::string op_type_, domain_;
  int64_t opset_;
  size_t num_outputs_ = 1;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<const loom_value_info_t*> inputs_;
  std::deque<loom_attribute_t> attrs_;
  std::deque<std::string> strings_;
  std::deque<std::vector<int64_t>> int_lists_;
  std::deque<std::vector<float>> float_lists_;
  std::deque<std::vector<loom_string_t>> string_lists_;
};

inline Dims dims_of(const loom_inferred_t& o) {
  return o.rank < 0 ? Dims{} : Dims(o.dims, o.dims + o.rank);
}

#define EXPECT_INFERRED(out, dtype_, ...)      \
  do {                                         \
    loom_inferred_t o_ = (out);                \
    EXPECT_EQ(o_.dtype, dtype_);               \
    EXPECT_EQ(dims_of(o_), Dims(__VA_ARGS__)); \
    EXPECT_GE(o_.rank, 0);                     \
  } while (0)

// Expects inference to throw INVALID_MODEL naming the node and containing `part`.
inline void expect_invalid(TestNode& node, const std::string& part) {
  try {
    node.infer();
    ADD_FAILURE() << "expected an error containing '" << part << "'";
  } catch (const loom::sdk::Error& e) {
    EXPECT_EQ(e.code(), LOOM_ERROR_INVALID_MODEL);
    std::string what = e.what();
    EXPECT_NE(what.find("node 'n': "), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

constexpr loom_dtype_t F32 = LOOM_DTYPE_FLOAT32;
constexpr loom_dtype_t I64 = LOOM_DTYPE_INT64;
constexpr loom_dtype_t BOOL = LOOM_DTYPE_BOOL;

// A nested graph that only declares its outputs (all inference needs of a body).
struct TestGraph {
  std::deque<Dims> dims;
  std::deque<loom_value_info_t> values;
  std::vector<const loom_value_info_t*> value_ptrs;
  std::vector<int32_t> outputs;
  loom_graph_t graph{};
  TestGraph(loom_dtype_t dtype, Dims d) : TestGraph({{dtype, std::move(d)}}) {}
  explicit TestGraph(std::vector<std::pair<loom_dtype_t, Dims>> declared) {
    for (auto& [dtype, d] : declared) {
      dims.push_back(std::move(d));
      values.push_back(TestNode::value_info(dtype, dims.back(), true));
      value_ptrs.push_back(&values.back());
      outputs.push_back(static_cast<int32_t>(outputs.size()));
    }
    graph.struct_size = sizeof graph;
    graph.name = "body";
    graph.num_values = value_ptrs.size();
    graph.values = value_ptrs.data();
    graph.num_outputs = outputs.size();
    graph.outputs = outputs.data();
  }
};

}  // namespace
