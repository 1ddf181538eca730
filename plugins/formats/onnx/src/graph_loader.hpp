// Walks an ONNX GraphProto and replays it into a Loom graph builder: inputs, outputs,
// value_info, initializers (dense and sparse), nodes and their attributes, recursing into
// graph attributes (If/Loop/Scan bodies). Names are passed through unchanged: the core
// resolves them, including nested graphs' references to outer-scope values.
#pragma once

#include <loom/plugin.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "external_data.hpp"
#include "model_parser.hpp"
#include "value_types.hpp"

namespace loom::onnx {

class GraphLoader {
 public:
  // `main_raw_data`: the main graph's initializer raw_data that parse_model left in the model
  // bytes (one entry per initializer), or NULL when the GraphProto holds it.
  GraphLoader(const loom_builder_api_t& api, ExternalData& external,
              const std::vector<RawDataSpan>* main_raw_data = nullptr)
      : api_(api), external_(external), main_raw_data_(main_raw_data) {}

  // Loads `graph` into `builder`. depth 0 is the main graph. `scope` prefixes error messages of
  // nested graphs ("graph 'body' of node 'loop1': "). Initializer raw_data is released as soon
  // as the builder has copied it, which is why the graph is mutable.
  void load(::onnx::GraphProto& graph, loom_graph_builder_t* builder, int depth,
            const std::string& scope);

 private:
  // Marks a graph input/output of sequence or optional type as such (builder ABI 1.2).
  void declare_container(loom_graph_builder_t* builder, const ::onnx::ValueInfoProto& value,
                         const TensorType& type, const std::string& role);
  void load_initializers(::onnx::GraphProto& graph, loom_graph_builder_t* builder,
                         const std::string& scope, const std::vector<RawDataSpan>* lifted);
  void load_node(::onnx::NodeProto& node, int index, loom_graph_builder_t* builder, int depth,
                 const std::string& scope);
  void load_attribute(::onnx::AttributeProto& attr, const ::onnx::NodeProto& node,
                      const std::string& node_desc, loom_node_builder_t* nb, int depth);

  const loom_builder_api_t& api_;
  ExternalData& external_;
  const std::vector<RawDataSpan>* main_raw_data_;
};

// "" for the default ONNX domain, which files spell "" or "ai.onnx".
std::string normalize_domain(const std::string& domain);

}  // namespace loom::onnx
