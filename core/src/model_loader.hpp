// Loads a model file: maps it, probes every format plugin by content, builds the IR through the
// chosen plugin's loader, validates it.
#pragma once

#include "ir/graph.hpp"
#include "runtime.hpp"

#include <memory>
#include <string>

namespace loom::core {

std::shared_ptr<Model> load_model(Runtime& runtime, const std::string& path);

}  // namespace loom::core
