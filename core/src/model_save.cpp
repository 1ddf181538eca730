#include "model_save.hpp"

#include <cstring>

#include "graph_view.hpp"
#include "status.hpp"

namespace loom::core {

void save_model(const Runtime& runtime, const Model& model, const std::string& format,
                const std::string& path) {
  const FormatEntry* entry = nullptr;
  std::string names;
  for (const FormatEntry& f : runtime.formats) {
    names += (names.empty() ? "" : ", ") + std::string(f.desc.name);
    if (format == f.desc.name) entry = &f;
  }
  if (!entry)
    fail(LOOM_ERROR_NOT_FOUND, "cannot save as '" + format +
                                   "': no format plugin of that name is " +
                                   "loaded (loaded formats: " + (names.empty() ? "none" : names) +
                                   "); install loom-format-" + format + " or pass --plugin");
  // Registration copies the descriptor into a current-size struct and zeroes what an older
  // plugin did not have, so `save` is NULL for a 1.0 plugin.
  if (!LOOM_HAS_MEMBER(&entry->desc, loom_format_t, save) || !entry->desc.save)
    fail(LOOM_ERROR_UNSUPPORTED, "the '" + format + "' format plugin can read models but not " +
                                     "write them; save in a format that can (e.g. loom)");
  if (!model.graph) fail(LOOM_ERROR_INVALID_ARGUMENT, "cannot save: the model has no graph");

  const Graph& g = *model.graph;
  GraphView view(g, ViewOptions{});
  std::vector<const char*> opset_domains;
  std::vector<int64_t> opset_versions;
  for (const auto& [domain, version] : model.opsets) {
    opset_domains.push_back(domain.c_str());
    opset_versions.push_back(version);
  }
  std::vector<const char*> keys, values;
  for (const auto& [key, value] : model.metadata) {
    keys.push_back(key.c_str());
    values.push_back(value.c_str());
  }
  std::vector<int32_t> declared;
  for (int id : g.inputs) declared.push_back(view.index_of(id));

  loom_save_args_t args;
  std::memset(&args, 0, sizeof args);
  args.struct_size = sizeof args;
  args.path = path.c_str();
  args.graph = view.get();
  args.num_opsets = opset_domains.size();
  args.opset_domains = opset_domains.data();
  args.opset_versions = opset_versions.data();
  args.num_metadata = keys.size();
  args.metadata_keys = keys.data();
  args.metadata_values = values.data();
  args.num_declared_inputs = declared.size();
  args.declared_inputs = declared.data();
  throw_if_error(entry->desc.save(entry->desc.user, &args),
                 "cannot save '" + path + "' (" + format + ")");
}

}  // namespace loom::core
