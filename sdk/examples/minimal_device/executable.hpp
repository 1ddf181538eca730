// A compiled subgraph of the minimal device: the nodes of the view copied into a plain list
// (the view itself is only valid during compile) plus borrowed pointers to constant data
// (valid while the executable lives, see loom_compile_args_t).
#pragma once

#include <cstdint>
#include <loom/device_kit.hpp>
#include <string>
#include <vector>

#include "ops.hpp"

namespace minimal {

class Executable final : public loom::sdk::kit::Executable {
 public:
  // Throws loom::sdk::Error when the subgraph holds something this device cannot run.
  explicit Executable(const loom_graph_t& graph);

  // The kit has checked the counts, dtypes and buffer ranges; outputs get buffers the caller
  // owns (the kit frees them if the run fails).
  void run(const loom_run_args_t& args) override;

 private:
  struct Value {
    std::string name;
    bool constant = false;
    std::vector<int64_t> dims;    // constants only
    const float* data = nullptr;  // constants only
  };
  struct Node {
    std::string name;
    Op op;
    std::vector<int32_t> inputs;
    int32_t output;
  };
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<int32_t> inputs_;
  std::vector<int32_t> outputs_;
};

}  // namespace minimal
