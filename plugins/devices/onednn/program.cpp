// Program::run: executes the compiled steps (builder.cpp makes them) on the caller's thread
// and its OpenMP team.
#include <omp.h>

#include <limits>

#include "builder.hpp"

namespace loom::onednn {

void Program::run(std::span<void* const> inputs, std::span<const HostBlock> outs,
                  const sdk::RunControl& control) {
  // oneDNN parallelizes with OpenMP in the calling thread's team: set its size per run so
  // --threads holds whichever thread the core runs us on.
  omp_set_num_threads(options.threads);
  auto bind = [&](int root, void* data) {
    slots[root].mem.set_data_handle(data);
    for (int a : aliases[root]) slots[a].mem.set_data_handle(data);
  };
  for (size_t i = 0; i < inputs.size() && i < input_slots.size(); ++i)
    if (input_slots[i] >= 0) bind(input_slots[i], inputs[i]);
  for (size_t i = 0; i < outs.size(); ++i) bind(outputs[i].slot, outs[i].data());
  auto execute = [&](Step& s) {
    if (s.kernel) {
      s.kernel(s.args);
    } else if (s.serial) {
      // oneDNN sizes its parallel loops by omp_get_max_threads() at execution (the calling
      // thread's setting), so this primitive runs inline, without an OpenMP region.
      const int threads = omp_get_max_threads();
      omp_set_num_threads(1);
      s.prim.execute(stream, s.args);
      omp_set_num_threads(threads);
    } else {
      s.prim.execute(stream, s.args);
    }
  };
  // A cancelled run or one past its deadline ends between primitives (the CPU engine's stream
  // executes each before returning; a poll is an atomic load and a clock read).
  if (!control.profiling()) {
    for (Step& s : steps) {
      control.poll();
      execute(s);
    }
    stream.wait();
    return;
  }
  // Profiled (plugin ABI 1.5): each step is waited for, so that its time is its own work.
  size_t next_free = 0;
  auto report_step_free = [&](size_t before_step) {
    for (; next_free < step_free_nodes.size() &&
           step_free_nodes[next_free].before_step <= before_step;
         ++next_free) {
      const StepFreeNode& f = step_free_nodes[next_free];
      const uint64_t now = sdk::RunControl::now_ns();
      control.profile(f.name.c_str(), f.detail.c_str(), std::span<const int32_t>(&f.node, 1), now,
                      now);
    }
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    control.poll();
    report_step_free(i);
    Step& s = steps[i];
    const uint64_t start = sdk::RunControl::now_ns();
    execute(s);
    stream.wait();
    control.profile(s.name.c_str(), s.detail.empty() ? nullptr : s.detail.c_str(), s.nodes, start,
                    sdk::RunControl::now_ns());
  }
  report_step_free(std::numeric_limits<size_t>::max());
}

}  // namespace loom::onednn
