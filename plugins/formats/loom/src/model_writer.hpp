// Writes a model shown as a loom_graph_t view to a .loom file.
#pragma once

#include <loom/plugin.h>

namespace loom::loomfmt {

void save_model(const loom_save_args_t& args);

}  // namespace loom::loomfmt
