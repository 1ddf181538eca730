// Plans one arena per compiled subgraph with the SDK's planner (loom/arena_plan.hpp), which
// devices that plan their own arenas share.
#pragma once

#include <loom/arena_plan.hpp>

namespace loom::core {

using sdk::BufferRequest;
using sdk::MemoryPlan;
using sdk::plan_memory;

}  // namespace loom::core
