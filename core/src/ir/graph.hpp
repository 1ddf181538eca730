// The core's graph IR: values with dtype and (possibly symbolic) shape, nodes with attributes,
// constants, nested graphs for If/Loop/Scan. Format plugins build it through the builder API;
// devices see it through loom_graph_t views (graph_view.hpp).
#pragma once

#include <loom/plugin.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace loom::core {

// A number no constant of this process had before (ConstantData::content_id).
inline uint64_t next_constant_content_id() {
  static std::atomic<uint64_t> next{0};
  return ++next;
}

// Host bytes of a constant. `owner` keeps them alive (a copy, or a mapping of the model file).
struct ConstantData {
  ConstantData() = default;
  // Not copyable: a copy would carry the id below to bytes that may differ.
  ConstantData(const ConstantData&) = delete;
  ConstantData& operator=(const ConstantData&) = delete;

  // These bytes' identity for devices (plugin ABI 1.7 content_id): unique per object, and a
  // constant's bytes never change once it is in a graph, so equal ids mean equal bytes. The
  // plans of other input shapes and other sessions of a model share the model's objects.
  const uint64_t content_id = next_constant_content_id();
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  std::vector<int64_t> dims;
  const void* data = nullptr;
  size_t size = 0;
  std::shared_ptr<void> owner;
  // STRING constants: the strings, and the loom_string_t array `data` points to.
  std::vector<std::string> strings;
  std::vector<loom_string_t> string_views;
};

// Shape of a value: rank -1 = unknown; dims[i] -1 = unknown, with an optional symbol.
struct Shape {
  int32_t rank = -1;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;  // empty, or one per dim ("" = none)

  bool is_static() const {
    if (rank < 0) return false;
    for (int64_t d : dims)
      if (d < 0) return false;
    return true;
  }
  int64_t element_count() const {  // only for static shapes
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  std::string to_string() const;  // "1x3x224x224", "?x128", "N x 3", "(unknown rank)"
};

struct Graph;

// What a value holds. Sequences and optionals live only in the core, on the host, as lists of
// host tensors (an optional: none or one); devices never see them.
enum class ValueKind : uint8_t {
  kTensor,
  kSequence,          // seq(tensor)
  kOptionalTensor,    // optional(tensor)
  kOptionalSequence,  // optional(seq(tensor))
};
const char* value_kind_name(ValueKind kind);  // "tensor", "seq(tensor)", ...

struct Graph;

struct Value {
  std::string name;
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;  // containers: the element dtype
  Shape shape;                                // containers: the elements' shape, if declared
  ValueKind kind = ValueKind::kTensor;
  std::shared_ptr<ConstantData> constant;  // initializer
  bool graph_input = false;   // declared in graph inputs (with a constant: overridable default)
  bool graph_output = false;
  bool outer_scope = false;   // nested graph: resolved by name in an enclosing graph
  int producer = -1;          // node index, -1 if none
};

struct Attribute {
  std::string name;
  loom_attr_type_t type = LOOM_ATTR_UNDEFINED;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  std::shared_ptr<ConstantData> tensor;
  std::shared_ptr<Graph> graph;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;        // "" = ONNX default domain
  int64_t opset = 0;         // imported version of `domain`, set by validation
  std::vector<int> inputs;   // value ids, -1 = omitted
  std::vector<int> outputs;  // value ids, -1 = omitted
  std::vector<Attribute> attributes;
  // Values of this node's graph that its nested graphs read by name (ONNX implicit inputs);
  // set by validation. A device running the node needs them as much as `inputs`.
  std::vector<int> implicit_inputs;

  const Attribute* find_attribute(const std::string& attr_name) const;
  std::string describe() const;  // "Conv node 'conv1'"
};

struct Graph {
  std::string name;
  std::vector<Value> values;
  std::unordered_map<std::string, int> value_ids;
  std::vector<Node> nodes;  // topological order after validation
  std::vector<int> inputs;  // declared graph inputs, in order (may include constants)
  std::vector<int> outputs;
  Graph* parent = nullptr;

  // Id of the value named `name`, creating an empty one if needed.
  int intern(const std::string& value_name);
  int find(const std::string& value_name) const;  // -1 if absent
  size_t num_initializers() const;
};

struct Model {
  std::shared_ptr<Graph> graph;
  std::map<std::string, int64_t> opsets;  // domain ("" = default) -> version
  std::vector<std::pair<std::string, std::string>> metadata;
  std::string format;  // name of the format plugin that loaded it
  std::string path;
  std::shared_ptr<void> file_mapping;  // the mapped model file, kept for borrowed constants
};

// Bytes of one element, 0 for STRING/UNDEFINED.
size_t dtype_size(loom_dtype_t dtype);
const char* dtype_name(loom_dtype_t dtype);

}  // namespace loom::core
