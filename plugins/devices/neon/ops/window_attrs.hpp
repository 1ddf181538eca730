// Reading and checking the window attributes shared by Conv and the pooling ops.
#pragma once

#include <string>

#include "kernels/window.hpp"
#include "ops/op.hpp"

namespace loom::neon {

// "" if the node's strides/pads/dilations/auto_pad describe a 2-D window the neon kernels
// handle (positive strides and dilations, non-negative pads, known auto_pad), else why not.
std::string check_window_attrs(const loom_node_t& node, bool allow_dilations);
// The attributes, with kernel taken from kernel_shape (pooling) or the given extents (Conv).
WindowAttrs read_window_attrs(const loom_node_t& node, int64_t kh, int64_t kw);

}  // namespace loom::neon
