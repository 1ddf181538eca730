// A compiled subgraph of the minimal device: the nodes of the view copied into a plain list
// (the view itself is only valid during compile) plus borrowed pointers to constant data
// (valid while the executable lives, see loom_compile_args_t).
#pragma once

#include <loom/plugin.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ops.hpp"

namespace minimal {

class Executable {
 public:
  // Throws loom::sdk::Error when the subgraph holds something this device cannot run.
  explicit Executable(const loom_graph_t& graph);

  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }

  // inputs: graph-input order, host memory. outputs: filled with buffers the caller owns.
  void run(const loom_tensor_t* inputs, size_t num_inputs, loom_tensor_t* outputs) const;

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
