// The cpu device on the SDK's device kit (loom/device_kit.hpp): the kit implements the
// loom_device_api_t functions and the ABI's handle types (buffers are kit::HostBuffer's,
// executables loom::cpu::Executable's); the plugin lists its instance, reads its options, says
// which nodes it takes and compiles them.
#pragma once

#include <string>

namespace loom::cpu {

// "Intel(R) Core(TM) ... (8 hardware threads)" from /proc/cpuinfo; a generic text elsewhere.
std::string describe_host_cpu();

}  // namespace loom::cpu
