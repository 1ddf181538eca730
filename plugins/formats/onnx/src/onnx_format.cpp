#include "onnx_format.hpp"

#include <loom/plugin.hpp>
#include <set>
#include <string>
#include <vector>

#include "dtypes.hpp"
#include "external_data.hpp"
#include "function_inliner.hpp"
#include "graph_loader.hpp"
#include "model_parser.hpp"
#include "wire_scan.hpp"

namespace loom::onnx {
namespace {

// The 1.0 builder table ends with add_attr_graph; every member up to it is required.
void check_builder_api(const loom_builder_api_t& api) {
  if (!LOOM_HAS_MEMBER(&api, loom_builder_api_t, add_attr_graph))
    sdk::fail(LOOM_ERROR_INCOMPATIBLE, "the host's graph builder table is older than ABI 1.0");
  if (!api.set_opset || !api.set_metadata || !api.add_input || !api.add_output ||
      !api.add_value_info || !api.add_initializer || !api.add_node || !api.set_attr_int ||
      !api.set_attr_float || !api.set_attr_string || !api.set_attr_ints || !api.set_attr_floats ||
      !api.set_attr_strings || !api.set_attr_tensor || !api.add_attr_graph)
    sdk::fail(LOOM_ERROR_INCOMPATIBLE, "the host's graph builder lacks a required function");
}

void load_opsets(const ::onnx::ModelProto& model, const loom_builder_api_t& api,
                 loom_graph_builder_t* builder) {
  if (model.opset_import_size() == 0) {
    // IR versions before 3 had no opset_import and meant opset 1 of the default domain.
    if (model.ir_version() < 3) {
      sdk::check(api.set_opset(builder, "", 1));
      return;
    }
    sdk::fail(LOOM_ERROR_INVALID_MODEL, "the model imports no opset (opset_import is empty)");
  }
  std::set<std::string> seen;
  for (const auto& op : model.opset_import()) {
    std::string domain = normalize_domain(op.domain());
    if (!seen.insert(domain).second)
      sdk::fail(LOOM_ERROR_INVALID_MODEL, "opset_import names domain " +
                                              quote_name(domain.empty() ? "ai.onnx" : domain) +
                                              " twice");
    if (op.version() <= 0)
      sdk::fail(LOOM_ERROR_INVALID_MODEL, "opset_import of domain " +
                                              quote_name(domain.empty() ? "ai.onnx" : domain) +
                                              " has version " + std::to_string(op.version()));
    sdk::check(api.set_opset(builder, domain.c_str(), op.version()));
  }
}

void load_metadata(const ::onnx::ModelProto& model, const loom_builder_api_t& api,
                   loom_graph_builder_t* builder) {
  auto set = [&](const char* key, const std::string& value) {
    if (!value.empty()) sdk::check(api.set_metadata(builder, key, value.c_str()));
  };
  set("ir_version", std::to_string(model.ir_version()));
  set("producer_name", model.producer_name());
  set("producer_version", model.producer_version());
  set("domain", model.domain());
  if (model.has_model_version()) set("model_version", std::to_string(model.model_version()));
  set("doc_string", model.doc_string());
  set("graph_name", model.graph().name());
  for (const auto& kv : model.metadata_props()) {
    if (kv.key().empty()) continue;
    sdk::check(api.set_metadata(builder, kv.key().c_str(), kv.value().c_str()));
  }
}

}  // namespace

int32_t probe(const uint8_t* head, size_t head_size, const char* path) {
  return probe_model_head(head, head_size, path);
}

void load(const loom_load_args_t& args, const loom_builder_api_t& api,
          loom_graph_builder_t* builder) {
  check_builder_api(api);
  if (!args.data && args.size)
    sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "the host passed no model bytes");
  ::onnx::ModelProto model;
  // The weights stay in the host's bytes until the builder copies them (one copy, not two).
  std::vector<RawDataSpan> main_raw_data;
  parse_model(args.data, args.size, model, &main_raw_data);
  if (model.ir_version() <= 0)
    sdk::fail(LOOM_ERROR_INVALID_MODEL,
              "the model has no ir_version (every ONNX exporter writes one; is this an ONNX "
              "file?)");
  if (!model.has_graph()) sdk::fail(LOOM_ERROR_INVALID_MODEL, "the model has no graph");

  // Before the opsets: inlining merges the functions' opset imports into the model's.
  inline_local_functions(model);
  load_opsets(model, api, builder);
  load_metadata(model, api, builder);

  ExternalData external(args.directory);
  GraphLoader loader(api, external, main_raw_data.empty() ? nullptr : &main_raw_data);
  loader.load(*model.mutable_graph(), builder, 0, "");
}

namespace {

int32_t probe_entry(void*, const uint8_t* head, size_t head_size, const char* path) {
  try {
    return probe(head, head_size, path);
  } catch (...) {
    return 0;
  }
}

loom_status_t* load_entry(void*, const loom_load_args_t* args, const loom_builder_api_t* api,
                          loom_graph_builder_t* builder) {
  return sdk::guard([&] {
    if (!args || !api || !builder)
      sdk::fail(LOOM_ERROR_INVALID_ARGUMENT, "onnx load called with a NULL argument");
    if (!LOOM_HAS_MEMBER(args, loom_load_args_t, size))
      sdk::fail(LOOM_ERROR_INCOMPATIBLE, "the host's load arguments are older than ABI 1.0");
    load(*args, *api, builder);
  });
}

}  // namespace

const loom_format_t& format_descriptor() {
  static const loom_format_t format = [] {
    loom_format_t f{};
    f.struct_size = sizeof f;
    f.name = "onnx";
    f.description = "ONNX models (.onnx protobuf, external data, sparse initializers)";
    f.extensions = ".onnx";
    f.probe = probe_entry;
    f.load = load_entry;
    f.user = nullptr;
    return f;
  }();
  return format;
}

}  // namespace loom::onnx
