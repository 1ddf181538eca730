// Walks an ONNX GraphProto and replays it into a Loom graph builder: inputs, outputs,
// value_info, initializers (dense and sparse), nodes and their attributes, recursing into
// graph attributes (If/Loop/Scan bodies). Names are passed through unchanged: the core
// resolves them, including nested graphs' references to outer-scope values.
#pragma once

#include <loom/plugin.h>
#include <onnx/onnx_pb.h>

#include <string>

#include "external_data.hpp"

namespace loom::onnx {

class GraphLoader {
 public:
  GraphLoader(const loom_builder_api_t& api, ExternalData& external)
      : api_(api), external_(external) {}

  // Loads `graph` into `builder`. depth 0 is the main graph. `scope` prefixes error messages of
  // nested graphs ("graph 'body' of node 'loop1': "). Initializer raw_data is released as soon
  // as the builder has copied it, which is why the graph is mutable.
  void load(::onnx::GraphProto& graph, loom_graph_builder_t* builder, int depth,
            const std::string& scope);

 private:
  void load_initializers(::onnx::GraphProto& graph, loom_graph_builder_t* builder,
                         const std::string& scope);
  void load_node(::onnx::NodeProto& node, int index, loom_graph_builder_t* builder, int depth,
                 const std::string& scope);
  void load_attribute(::onnx::AttributeProto& attr, const ::onnx::NodeProto& node,
                      const std::string& node_desc, loom_node_builder_t* nb, int depth);

  const loom_builder_api_t& api_;
  ExternalData& external_;
};

// "" for the default ONNX domain, which files spell "" or "ai.onnx".
std::string normalize_domain(const std::string& domain);

}  // namespace loom::onnx
