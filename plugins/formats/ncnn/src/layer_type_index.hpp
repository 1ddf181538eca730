// Names of ncnn's built-in layer types by the index a .param.bin stores (ncnn's layer registry
// order, which ncnn keeps stable so that binary params stay readable).
#pragma once

#include <cstdint>
#include <string>

namespace loom::ncnnfmt {

// The layer type for `index`, or "" when this table does not know it.
std::string layer_type_name(int32_t index);

}  // namespace loom::ncnnfmt
