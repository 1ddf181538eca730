// A deep copy of a loom_graph_t view that the cpu device owns. The core's view is valid only
// during compile (constants' data excepted), so the executable keeps this mirror instead: every
// name, shape, attribute and nested graph (If/Loop/Scan bodies) is copied, and the mirror
// re-exposes plain loom_graph_t / loom_node_t views that kernels read through KernelContext.
// Constants' `data` is borrowed (the ABI keeps it valid while the executable lives); tensor
// attributes are copied, data included, because the ABI promises nothing for them.
#pragma once

#include <loom/plugin.h>

#include <memory>
#include <string>
#include <vector>

namespace loom::cpu {

struct MirrorGraph;

struct MirrorValue {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_param_storage;
  std::vector<const char*> dim_params;     // empty, or one entry (possibly NULL) per dim
  std::vector<unsigned char> owned_data;   // tensor attributes only
  std::vector<std::string> owned_strings;  // tensor attributes of type string
  std::vector<loom_string_t> owned_string_views;
  loom_value_info_t view{};
};

struct MirrorAttribute {
  std::string name;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> string_storage;
  std::vector<loom_string_t> strings;
  std::unique_ptr<MirrorValue> tensor;
  std::unique_ptr<MirrorGraph> graph;
  loom_attribute_t view{};
};

struct MirrorNode {
  std::string name, op_type, domain;
  std::vector<int32_t> inputs, outputs;
  std::vector<std::unique_ptr<MirrorAttribute>> attributes;
  std::vector<const loom_attribute_t*> attribute_views;
  loom_node_t view{};
};

struct MirrorGraph {
  std::string name;
  std::vector<std::unique_ptr<MirrorValue>> values;
  std::vector<const loom_value_info_t*> value_views;
  std::vector<std::unique_ptr<MirrorNode>> nodes;
  std::vector<const loom_node_t*> node_views;
  std::vector<int32_t> inputs, outputs;
  loom_graph_t view{};
};

// Deep-copies `graph` (and its nested graphs); `parent` becomes view.parent. Throws
// loom::sdk::Error on a malformed view (index out of range, NULL where a value is required).
std::unique_ptr<MirrorGraph> mirror_graph(const loom_graph_t& graph, const loom_graph_t* parent);

}  // namespace loom::cpu
