// Loads an ncnn model (.param or .param.bin plus its .bin weights) into a Loom graph.
#pragma once

#include <loom/plugin.h>

#include <string>

namespace loom::ncnnfmt {

// The weights file of a param file: "x.param" and "x.param.bin" -> "x.bin"; any other name
// gets ".bin" appended.
std::string weights_path_for(const std::string& param_path);

// Converts the param in args->data, reading weights from `weights`/`weights_size` (missing:
// no weights file exists; `weights_name` names it in errors).
void load_model(const loom_load_args_t& args, const loom_builder_api_t& api,
                loom_graph_builder_t* builder, const uint8_t* weights, size_t weights_size,
                const std::string& weights_name, bool weights_missing);

// Same, reading the weights file next to args.path.
void load_model_from_files(const loom_load_args_t& args, const loom_builder_api_t& api,
                           loom_graph_builder_t* builder);

}  // namespace loom::ncnnfmt
