// A compiled subgraph: the values with their place in device memory, and the list of kernel
// launches ("steps") the nodes were lowered to. Compiling does all the work that does not
// depend on the data (kernel objects, arguments, constant upload, BatchNormalization folding,
// activation fusion); a run binds the input and output buffers and enqueues the steps.
#pragma once

#include <array>
#include <deque>
#include <limits>
#include <loom/plugin.hpp>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cl_api.hpp"
#include "device.hpp"
#include "node_info.hpp"

namespace loom::opencl {

enum class Storage {
  None,      // no bytes (empty tensor) or never materialized
  Input,     // the run's input tensor `index`
  Output,    // the run's output tensor `index` (allocated per run)
  Constant,  // a device buffer of its own, uploaded at compile time and shared by content
  Arena,     // intermediate values: the executable's arena (see plan_arena)
  Scratch,   // temporaries of one op (im2col columns), shared by all ops
};

struct Value {
  std::string name;
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  std::vector<int64_t> shape;
  bool shape_known = false;
  int64_t elements = 0;
  size_t elem_size = 0;  // in device buffers: 2 for float32 under fp16 storage (precision=f16)
  Storage storage = Storage::None;
  size_t index = 0;                 // Input / Output position
  size_t byte_offset = 0;           // Arena / Scratch
  const void* host_data = nullptr;  // Constant: graph-owned or in owned_constants_
  size_t host_size = 0;
  bool needed_on_device = false;      // Constant: referenced by a kernel
  bool graph_constant = false;        // Constant: host_data is the graph's (core-owned) bytes
  uint64_t content_id = 0;            // Constant: the host's id of those bytes (ABI 1.7), or 0
  cl_mem device_mem = nullptr;        // Constant: its buffer (held by constant_buffers_)
  int first_use = -1, last_use = -1;  // lowered ops (nodes) whose kernels reference it
  size_t bytes() const { return static_cast<size_t>(elements) * elem_size; }
};

// The bytes of a value as the host sees it (float32 stays 4 bytes under fp16 storage).
inline size_t host_bytes(const Value& v) {
  return static_cast<size_t>(v.elements) * sdk::dtype_size(v.dtype);
}

// Inputs and outputs are bound per run; the other storages once at compile time.
inline bool dynamic_storage(Storage s) {
  return s == Storage::Input || s == Storage::Output;
}

// How many steps a run enqueues between two looks at its cancel flag and deadline
// (loom_run_control_t.poll): small enough that a cancelled run stops within a few kernels,
// large enough that the markers and flushes cost nothing next to the kernels.
constexpr size_t kStepsPerPoll = 8;

// One index check's slot in the error buffer: an int flag (at int 4 * slot, so the kernels'
// atomic_cmpxchg works on it) and the bad index as a long (at long 2 * slot + 1).
constexpr size_t kIndexSlotInts = 4;

// What the fusion pass decided for a node: where its result goes and which clamp it applies.
struct Fusion {
  int output = -1;      // value the node writes (its own output, or the last fused node's)
  int batch_norm = -1;  // index of a BatchNormalization node folded into a Conv
  float act_min = -std::numeric_limits<float>::infinity();
  float act_max = std::numeric_limits<float>::infinity();
  std::vector<int32_t> nodes;  // the node and those fused into it (what profiles report)
};

struct BufferArg {
  cl_uint arg;  // the cl_mem argument; the element offset (int) follows it
  int value;
  int64_t extra;  // elements past the value's start
};

struct Step {
  std::string label;
  std::string kernel_name;
  // For profiled runs (plugin ABI 1.5): the nodes of the compiled graph the launch computes
  // (its node and the nodes fused into it), none for a conversion of the device's own (fp16
  // storage); the first node's name, or the label.
  std::vector<int32_t> nodes;
  std::string name;
  KernelHandle kernel;
  cl_uint dims = 1;
  std::array<size_t, 3> global{1, 1, 1};
  std::array<size_t, 3> local{0, 0, 0};  // all 0: the driver chooses
  std::vector<BufferArg> buffers;
  // The error buffer argument of a kernel that checks its indices (Gather), or -1.
  int error_arg = -1;
  int error_slot = -1;  // its slot in the run's error buffer; -1: checked at compile time
};

// A kernel's index check whose failure the host reports after a run: which node, which axis.
struct IndexCheck {
  std::string where;  // "Gather node 'name'", as the cpu device words it
  int64_t axis = 0;
  int64_t axis_len = 0;
};

class Executable;

// Builds one step: arguments in kernel order, then a launch.
class KernelCall {
 public:
  KernelCall(Executable& exe, const char* kernel, std::string label);
  KernelCall& buffer(int value, int64_t extra_elements = 0);  // (cl_mem, int offset)
  KernelCall& i32(int64_t v);
  KernelCall& f32(float v);
  KernelCall& vec8(std::span<const int64_t> values, int64_t pad);  // int8, padded in front
  KernelCall& bytes(const void* data, size_t size);
  // The (err, slot) arguments of an index-checking kernel: slot from add_index_check, or -1
  // when the indices were checked on the host (err is then bound to a placeholder).
  KernelCall& index_check(int slot);
  void launch_1d(int64_t n);       // n work-items, LOOM work-group size
  void launch_rows(int64_t rows);  // one 64-wide work-group per row
  void launch(cl_uint dims, std::array<size_t, 3> global, std::array<size_t, 3> local);

 private:
  Executable& exe_;
  Step step_;
  cl_uint next_ = 0;
};

class Executable final : public sdk::kit::Executable {
 public:
  // `arena_size` is the core's plan, which is not used: fusion moves writes to other steps
  // than the plan assumed, so the executable plans its arena over the lowered ops itself.
  Executable(Device& device, const loom_graph_t& graph, size_t arena_size);
  void run(const loom_run_args_t& args) override;
  // The graph constants now held only in the device's constants buffer (uploaded at compile,
  // not graph outputs, whose run() reads the host bytes): their host pointers are dropped and
  // their ids returned, for ABI 1.3's constant_copied. Call once, after construction.
  std::vector<int> release_uploaded_constants();

  // ---- for the lowerings (valid during compile) ----
  Device& device() { return device_; }
  const loom_graph_t& graph() const { return *graph_; }
  Value& value(int id);
  // A constant made at compile time (folded weights, packed parameters).
  int add_constant(loom_dtype_t dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);
  int add_float_constant(std::vector<int64_t> shape, const std::vector<float>& data);
  // A temporary for the current op; scratch space is reused by the next op.
  int add_scratch(loom_dtype_t dtype, std::vector<int64_t> shape);
  void add_step(Step step);
  // A slot of the per-run error buffer for a kernel that validates indices on the device.
  int add_index_check(IndexCheck check);
  void note_use(int value);  // a kernel of the current op references `value`

 private:
  // Bytes per element in device buffers: 2 for float32 under fp16 storage.
  size_t storage_size(loom_dtype_t dtype) const;
  bool stored_as_f16(const Value& v) const;
  std::map<int, int> convert_inputs_to_storage();
  void convert_outputs_to_f32(const std::map<int, int>& input_boundaries);
  void lower_nodes();
  void plan_fusions(std::vector<Fusion>& fusions, std::vector<bool>& skipped);
  void plan_arena();
  void finalize();
  cl_mem memory_of(const Value& v, const std::vector<std::pair<cl_mem, size_t>>& inputs,
                   const std::vector<Buffer*>& outputs, size_t* byte_offset) const;
  void set_buffer_arg(Step& step, const BufferArg& arg, cl_mem mem, size_t byte_offset);

  // The profiled form of run's launches: each step is waited for and reported with its time.
  void report_step_free_nodes(const sdk::RunControl& control, size_t before_step,
                              size_t& next) const;
  // Throws the error of the first failed index check recorded in `flags` (the error buffer
  // read back after a run), if any.
  void report_index_errors(const std::vector<cl_int>& flags) const;

  Device& device_;
  const loom_graph_t* graph_;  // compile only
  size_t arena_size_;
  // A deque: lowering adds values (folded constants, scratch) while holding references to
  // others, and a deque's push_back never moves the elements already in it.
  std::deque<Value> values_;
  std::vector<std::vector<uint8_t>> owned_constants_;
  std::vector<Step> steps_;
  // Nodes that launch no kernel (an empty result, a node whose lowering needs none), reported
  // by profiled runs as zero-length steps before step `first` so that every node is covered.
  struct StepFreeNode {
    size_t before_step;
    int32_t node;
    std::string name, detail;
  };
  std::vector<StepFreeNode> step_free_nodes_;
  std::vector<int32_t> current_nodes_;    // the nodes of the op being lowered (add_step)
  std::vector<IndexCheck> index_checks_;  // slot -> what it checks
  std::vector<int> inputs_;               // value ids in run order
  std::vector<int> outputs_;              // value ids in run order
  int current_op_ = 0;
  size_t scratch_cursor_ = 0, scratch_size_ = 0;
  MemHandle arena_, scratch_;
  // The constants' buffers, shared with every executable of this process that uploaded the
  // same bytes in the same form to the same context (loom/shared_constants.hpp).
  std::vector<std::shared_ptr<void>> constant_buffers_;
  MemHandle placeholder_;  // bound where a kernel argument is an empty tensor
};

}  // namespace loom::opencl
