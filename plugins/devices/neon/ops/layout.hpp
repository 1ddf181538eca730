// The conversions between NCHW and NC4HW4 that the executor inserts where a value crosses the
// subgraph boundary or meets an op without a pack4 variant (device/executable.cpp).
#pragma once

#include <memory>

#include "ops/op.hpp"

namespace loom::neon {

// An op with one rank-4 input and one output: the input repacked to NC4HW4 (to_pack4) or back
// to NCHW.
std::unique_ptr<Op> make_layout_conversion(bool to_pack4);

}  // namespace loom::neon
