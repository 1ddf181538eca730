// Writing a model through a format plugin that can save (loom_format_t::save, ABI 1.1).
#pragma once

#include <string>

#include "ir/graph.hpp"
#include "runtime.hpp"

namespace loom::core {

// Shows `model` to the format named `format` as a whole-graph view and lets it write `path`.
void save_model(const Runtime& runtime, const Model& model, const std::string& format,
                const std::string& path);

}  // namespace loom::core
