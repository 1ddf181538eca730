// A KernelContext test double: builds a one-node graph view around a kernel so kernels can be
// unit-tested without the core, the interpreter or a model file.
//
//   KernelHarness h("Gemm", 13);
//   h.attr_int("transB", 1);
//   h.input(make_filled<float>({2, 3}, {...}));
//   auto outputs = h.run(1);   // runs the registered kernel for Gemm at opset 13
//
// Control-flow kernels get their bodies through attr_graph: a BodyGraph declares the nested
// graph's inputs and outputs, and a C++ function stands in for running it.
#pragma once

#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../kernel.hpp"
#include "../types.hpp"

namespace loom::cpu::testing {

template <typename T>
Tensor make_filled(std::vector<int64_t> dims, const std::vector<T>& values) {
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  if constexpr (std::is_same_v<T, float>)
    dtype = LOOM_DTYPE_FLOAT32;
  else if constexpr (std::is_same_v<T, double>)
    dtype = LOOM_DTYPE_FLOAT64;
  else if constexpr (std::is_same_v<T, int64_t>)
    dtype = LOOM_DTYPE_INT64;
  else if constexpr (std::is_same_v<T, int32_t>)
    dtype = LOOM_DTYPE_INT32;
  else if constexpr (std::is_same_v<T, uint8_t>)
    dtype = LOOM_DTYPE_UINT8;
  else if constexpr (std::is_same_v<T, int8_t>)
    dtype = LOOM_DTYPE_INT8;
  else if constexpr (std::is_same_v<T, bool>)
    dtype = LOOM_DTYPE_BOOL;
  else if constexpr (std::is_same_v<T, int16_t>)
    dtype = LOOM_DTYPE_INT16;
  else if constexpr (std::is_same_v<T, uint16_t>)
    dtype = LOOM_DTYPE_UINT16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    dtype = LOOM_DTYPE_UINT32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    dtype = LOOM_DTYPE_UINT64;
  else if constexpr (std::is_same_v<T, Half>)
    dtype = LOOM_DTYPE_FLOAT16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    dtype = LOOM_DTYPE_BFLOAT16;
  else
    static_assert(sizeof(T) == 0, "make_filled: no dtype for this element type");
  Tensor t = make_tensor(dtype, dims);
  if (values.size() != static_cast<size_t>(sdk::element_count(t.view)))
    throw std::runtime_error("make_filled: value count does not match the shape");
  T* out = static_cast<T*>(t.view.data);
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

// A string tensor that owns its bytes.
inline Tensor make_strings(std::vector<int64_t> dims, const std::vector<std::string>& values) {
  Tensor t = make_tensor(LOOM_DTYPE_STRING, dims);
  if (values.size() != t.strings->size())
    throw std::runtime_error("make_strings: value count does not match the shape");
  auto* views = static_cast<loom_string_t*>(t.view.data);
  for (size_t i = 0; i < values.size(); ++i) {
    (*t.strings)[i] = values[i];
    views[i] = {(*t.strings)[i].data(), (*t.strings)[i].size()};
  }
  return t;
}

inline std::vector<std::string> strings_of(const Tensor& t) {
  if (t.view.dtype != LOOM_DTYPE_STRING)
    throw std::runtime_error("strings_of: not a string tensor");
  const auto* views = static_cast<const loom_string_t*>(t.view.data);
  std::vector<std::string> out;
  for (int64_t i = 0; i < sdk::element_count(t.view); ++i)
    out.emplace_back(views[i].size ? std::string(views[i].data, views[i].size) : std::string());
  return out;
}

// The declaration of a nested graph (If/Loop/Scan body) with `inputs` and `outputs` values,
// all float32 of unknown shape (kernels read them only when no iteration runs).
class BodyGraph {
 public:
  BodyGraph(size_t inputs, size_t outputs) : values_(inputs + outputs) {
    for (size_t i = 0; i < values_.size(); ++i) {
      values_[i].struct_size = sizeof(loom_value_info_t);
      values_[i].name = "v";
      values_[i].dtype = LOOM_DTYPE_FLOAT32;
      value_ptrs_.push_back(&values_[i]);
    }
    for (size_t i = 0; i < inputs; ++i) input_ids_.push_back(static_cast<int32_t>(i));
    for (size_t i = 0; i < outputs; ++i) output_ids_.push_back(static_cast<int32_t>(inputs + i));
    graph_.struct_size = sizeof graph_;
    graph_.name = "body";
    graph_.num_values = values_.size();
    graph_.values = value_ptrs_.data();
    graph_.num_inputs = inputs;
    graph_.inputs = input_ids_.data();
    graph_.num_outputs = outputs;
    graph_.outputs = output_ids_.data();
  }
  BodyGraph(const BodyGraph&) = delete;
  BodyGraph& operator=(const BodyGraph&) = delete;
  const loom_graph_t& graph() const { return graph_; }

 private:
  std::vector<loom_value_info_t> values_;
  std::vector<const loom_value_info_t*> value_ptrs_;
  std::vector<int32_t> input_ids_, output_ids_;
  loom_graph_t graph_{};
};

// Stands in for running a nested graph: gets its inputs, returns its outputs.
using BodyFn = std::function<std::vector<Tensor>(std::span<const Tensor* const> inputs)>;

inline std::vector<int64_t> shape(const Tensor& t) {
  return {t.view.dims, t.view.dims + t.view.rank};
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  const T* p = static_cast<const T*>(t.view.data);
  return std::vector<T>(p, p + sdk::element_count(t.view));
}

class KernelHarness : public KernelContext {
 public:
  KernelHarness(std::string op_type, int64_t opset, std::string domain = "")
      : KernelContext(attrs_),
        attrs_(node_),
        op_type_(std::move(op_type)),
        domain_(std::move(domain)) {
    node_.struct_size = sizeof node_;
    node_.opset = opset;
    graph_.struct_size = sizeof graph_;
  }

  void input(Tensor t) {
    inputs_.push_back(std::move(t));
    present_.push_back(true);
  }
  void omitted_input() {
    inputs_.emplace_back();
    present_.push_back(false);
  }

  void attr_int(const char* name, int64_t v) { add_attr(name, LOOM_ATTR_INT).i = v; }
  void attr_float(const char* name, float v) { add_attr(name, LOOM_ATTR_FLOAT).f = v; }
  void attr_string(const char* name, std::string v) {
    strings_.push_back(std::move(v));
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_STRING);
    a.s = strings_.back().c_str();
    a.s_size = strings_.back().size();
  }
  void attr_ints(const char* name, std::vector<int64_t> v) {
    int_lists_.push_back(std::move(v));
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_INTS);
    a.ints = int_lists_.back().data();
    a.count = int_lists_.back().size();
  }
  void attr_floats(const char* name, std::vector<float> v) {
    float_lists_.push_back(std::move(v));
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_FLOATS);
    a.floats = float_lists_.back().data();
    a.count = float_lists_.back().size();
  }
  void attr_strings(const char* name, const std::vector<std::string>& v) {
    std::vector<loom_string_t> views;
    for (const std::string& s : v) {
      strings_.push_back(s);
      views.push_back({strings_.back().data(), strings_.back().size()});
    }
    string_lists_.push_back(std::move(views));
    loom_attribute_t& a = add_attr(name, LOOM_ATTR_STRINGS);
    a.strings = string_lists_.back().data();
    a.count = string_lists_.back().size();
  }
  // A tensor attribute (a constant, as a format hands it over).
  void attr_tensor(const char* name, Tensor t) {
    tensor_attrs_.push_back(std::move(t));
    const Tensor& kept = tensor_attrs_.back();
    loom_value_info_t info{};
    info.struct_size = sizeof info;
    info.name = names_.emplace_back(name).c_str();
    info.dtype = kept.view.dtype;
    info.rank = kept.view.rank;
    info.dims = kept.view.dims;
    info.flags = LOOM_VALUE_CONSTANT;
    info.data = kept.view.data;
    info.data_size = kept.view.byte_size;
    info.arena_offset = -1;
    tensor_infos_.push_back(info);
    add_attr(name, LOOM_ATTR_TENSOR).tensor = &tensor_infos_.back();
  }
  // A graph attribute; run_subgraph on `body.graph()` calls `fn`. `body` must outlive run().
  void attr_graph(const char* name, const BodyGraph& body, BodyFn fn) {
    add_attr(name, LOOM_ATTR_GRAPH).graph = &body.graph();
    bodies_.emplace_back(&body.graph(), std::move(fn));
  }
  // How many times run_subgraph ran a body.
  int body_runs() const { return body_runs_; }

  // Runs the kernel registered for this op and returns `num_outputs` outputs.
  std::vector<Tensor> run(size_t num_outputs) {
    const KernelDef* def = KernelRegistry::instance().find(domain_, op_type_, node_.opset);
    if (!def) throw std::runtime_error("no cpu kernel registered for " + op_type_);
    input_ids_.clear();
    for (size_t i = 0; i < inputs_.size(); ++i) input_ids_.push_back(present_[i] ? int32_t(i) : -1);
    output_ids_.assign(num_outputs, 0);
    for (size_t i = 0; i < num_outputs; ++i) output_ids_[i] = int32_t(inputs_.size() + i);
    attr_ptrs_.clear();
    for (auto& a : attr_storage_) attr_ptrs_.push_back(&a);
    node_.op_type = op_type_.c_str();
    node_.domain = domain_.c_str();
    node_.name = "test";
    node_.num_inputs = input_ids_.size();
    node_.inputs = input_ids_.data();
    node_.num_outputs = output_ids_.size();
    node_.outputs = output_ids_.data();
    node_.num_attributes = attr_ptrs_.size();
    node_.attributes = attr_ptrs_.data();
    outputs_.assign(num_outputs, Tensor{});
    def->fn(*this);
    return outputs_;
  }

  // KernelContext
  const loom_graph_t& graph() const override { return graph_; }
  const loom_node_t& node() const override { return node_; }
  const loom_tensor_t* input(size_t i) const override {
    return i < inputs_.size() && present_[i] ? &inputs_[i].view : nullptr;
  }
  const Tensor* input_tensor(size_t i) const override {
    return i < inputs_.size() && present_[i] ? &inputs_[i] : nullptr;
  }
  loom_tensor_t& allocate_output(size_t i, loom_dtype_t dtype,
                                 std::span<const int64_t> dims) override {
    outputs_.at(i) = make_tensor(dtype, dims);
    return outputs_[i].view;
  }
  void set_output(size_t i, Tensor t) override { outputs_.at(i) = std::move(t); }
  void parallel_for(size_t n, size_t,
                    const std::function<void(size_t, size_t)>& fn) const override {
    // Two uneven chunks, so kernels that mishandle chunk borders fail their tests.
    size_t mid = n / 3;
    if (mid > 0) fn(0, mid);
    if (n > mid) fn(mid, n);
  }
  int threads() const override { return 2; }
  std::vector<Tensor> run_subgraph(const loom_graph_t& graph,
                                   std::span<const Tensor* const> inputs) override {
    for (auto& [body_graph, fn] : bodies_) {
      if (body_graph != &graph) continue;
      if (inputs.size() != graph.num_inputs)
        throw std::runtime_error("run_subgraph: the kernel passed " +
                                 std::to_string(inputs.size()) + " inputs to a body of " +
                                 std::to_string(graph.num_inputs));
      ++body_runs_;
      return fn(inputs);
    }
    throw std::runtime_error("run_subgraph: not a graph given with attr_graph");
  }

 private:
  loom_attribute_t& add_attr(const char* name, loom_attr_type_t type) {
    loom_attribute_t a{};
    a.struct_size = sizeof a;
    names_.emplace_back(name);
    a.name = names_.back().c_str();
    a.type = type;
    attr_storage_.push_back(a);
    return attr_storage_.back();
  }

  loom_node_t node_{};
  loom_graph_t graph_{};
  Attributes attrs_;
  std::string op_type_, domain_;
  std::vector<Tensor> inputs_;
  std::vector<bool> present_;
  std::vector<Tensor> outputs_;
  std::vector<int32_t> input_ids_, output_ids_;
  std::deque<loom_attribute_t> attr_storage_;
  std::vector<const loom_attribute_t*> attr_ptrs_;
  std::deque<std::string> names_, strings_;
  std::deque<std::vector<int64_t>> int_lists_;
  std::deque<std::vector<float>> float_lists_;
  std::deque<std::vector<loom_string_t>> string_lists_;
  std::deque<Tensor> tensor_attrs_;
  std::deque<loom_value_info_t> tensor_infos_;
  std::vector<std::pair<const loom_graph_t*, BodyFn>> bodies_;
  int body_runs_ = 0;
};

}  // namespace loom::cpu::testing
