// Loads a model file: maps it, probes every format plugin by content, builds the IR through the
// chosen plugin's loader, validates it.
#pragma once

#include "ir/graph.hpp"
#include "runtime.hpp"

#include <memory>
#include <string>

namespace loom::core {

std::shared_ptr<Model> load_model(Runtime& runtime, const std::string& path);

// Loads a model from the application's bytes (loom_model_load_memory): the core copies them.
// `format` names the format plugin ("" = probe); `base_directory` is where external data may be
// read from ("" = nowhere).
std::shared_ptr<Model> load_model_memory(Runtime& runtime, const void* data, size_t size,
                                         const std::string& format,
                                         const std::string& base_directory);

}  // namespace loom::core
