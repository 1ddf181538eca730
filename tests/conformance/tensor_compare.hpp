// Comparison of a computed tensor with the expected one of the ONNX backend test data.
#pragma once

#include <loom_apps/host_tensor.hpp>
#include <optional>
#include <string>

namespace loom::conformance {

// The tolerance of every floating-point comparison, for every device:
//   |actual - expected| <= kAbsTolerance + kRelTolerance * |expected|
// NaN equals NaN, infinities must match exactly. Integers, bools and strings compare exactly.
inline constexpr double kRelTolerance = 1e-3;
inline constexpr double kAbsTolerance = 1e-7;

// nullopt when equal; otherwise one line saying what differs (dtype, shape, or the first
// differing element with its index, both values and how many elements differ).
std::optional<std::string> compare_tensors(const loom::apps::HostTensor& actual,
                                           const loom::apps::HostTensor& expected);

// The same for values of any kind: kinds, presence (optionals) and element counts must match,
// then every element compares as above ("element 2: ...").
std::optional<std::string> compare_values(const loom::apps::HostValue& actual,
                                          const loom::apps::HostValue& expected);

}  // namespace loom::conformance
