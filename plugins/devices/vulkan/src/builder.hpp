// What an op implementation sees while a subgraph is compiled: the tensors of its node (type,
// shape, where they live), constants' host data, and calls that append kernel dispatches and
// copies to the subgraph's command buffer. See executable.cpp for how locations are resolved.
#pragma once

#include <array>
#include <cstdint>
#include <loom/plugin.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "context.hpp"

namespace loom::vulkan {

// Where a tensor lives: a byte range of one of the executable's three memory regions.
enum class Region : uint8_t {
  kArena,      // values made and consumed inside the subgraph, placed after all kernels are
               // known by the executable's liveness plan (see executable.cpp)
  kConstants,  // uploaded once at compile time
  kPrivate,    // inputs, outputs, values the plan does not cover, the error word
};

struct Loc {
  Region region = Region::kPrivate;
  uint64_t offset = 0;  // bytes from the region start (kArena: from the value's start)
  uint64_t bytes = 0;
  int32_t value = -1;  // kArena: the value id whose planned range this is part of
  // Bytes per element of the shader array bound to it: the kernels' push-constant offsets
  // count these (2 for fp16 tensors of precision=f16, else 32-bit words).
  uint8_t unit = 4;
  Loc at(uint64_t byte_offset, uint64_t size) const {
    return {region, offset + byte_offset, size, value, unit};
  }
};

struct TensorInfo {
  int id = -1;
  // The type stored in device buffers: float16 for the float32 values of a precision=f16
  // subgraph, else the value's own type (info->dtype, which the host sees).
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  std::vector<int64_t> dims;
  Loc loc;
  // Subgraph inputs / outputs stored as fp16: the f32 slots the host copies in / out of, with
  // a conversion kernel to / from loc (otherwise bytes == 0 and the host uses loc).
  Loc host_in, host_out;
  const loom_value_info_t* info = nullptr;
  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  int rank() const { return static_cast<int>(dims.size()); }
};

// Activation applied in a kernel's epilogue (numbers match shaders/activation.glsl).
struct Epilogue {
  uint32_t op = 0;  // 0: none
  float alpha = 0, beta = 0;
};

class Builder {
 public:
  virtual ~Builder() = default;
  virtual const loom_graph_t& graph() const = 0;
  virtual Context& context() = 0;

  // Tensors of the node being built; input() throws for an omitted input.
  virtual const TensorInfo& input(const loom_node_t& node, size_t i) = 0;
  virtual bool has_input(const loom_node_t& node, size_t i) const = 0;
  virtual const TensorInfo& output(const loom_node_t& node, size_t i) = 0;

  // Places derived constant data (folded weights...) in the constants region, as raw bytes.
  virtual Loc upload(const void* data, size_t bytes) = 0;
  // Places float constants in the storage type of float tensors (fp16 under precision=f16).
  virtual Loc upload_floats(std::span<const float> values) = 0;
  // Bytes per element of float tensors in device buffers (2 under precision=f16, else 4).
  size_t float_bytes() { return context().f16_storage() ? 2 : 4; }
  // A scratch range in the private region (intermediate results of multi-pass kernels).
  virtual Loc scratch(size_t bytes) = 0;
  // The word shaders set when an index is out of range; checked after each run.
  virtual Loc error_word() = 0;

  // Fusion: if the only reader of `node`'s output 0 is an activation the epilogues can apply
  // (Relu, Clip with constant bounds, LeakyRelu, ...) in this subgraph, that node is absorbed:
  // returns its epilogue and the tensor to write instead. Otherwise {} and output(node, 0).
  virtual std::pair<Epilogue, const TensorInfo*> fuse_activation(const loom_node_t& node) = 0;
  // The node that is the only reader of `node`'s output 0 (in this subgraph, not yet built,
  // reading it as its input 0, the value not needed outside), or nullptr.
  virtual const loom_node_t* sole_consumer(const loom_node_t& node) = 0;
  // Marks a node returned by sole_consumer as computed by the current kernel.
  virtual void absorb(const loom_node_t& node) = 0;

  // Appends a dispatch of `shader` with specialization constants spec (constant_id = index)
  // and one storage buffer per binding. Under precision=f16 the fp16 build of the kernel
  // (<shader>_f16) runs, except for the element-size kernels copy/gather, whose callers pick
  // the variant by element size.
  virtual void dispatch(std::string_view shader, const std::vector<uint32_t>& spec,
                        const std::vector<Loc>& bindings, std::array<uint32_t, 3> groups) = 0;
  // One invocation per element: spec[0] (the local size) is filled in; spec must start with a
  // placeholder for it.
  void dispatch_1d(std::string_view shader, std::vector<uint32_t> spec,
                   const std::vector<Loc>& bindings, uint64_t count);
  // One workgroup per row (row reductions); spec[0] is the workgroup size (a power of two).
  void dispatch_rows(std::string_view shader, std::vector<uint32_t> spec,
                     const std::vector<Loc>& bindings, uint64_t rows, uint64_t row_length);
  virtual void copy(const Loc& src, const Loc& dst, uint64_t bytes) = 0;

 protected:
  std::array<uint32_t, 3> grid_for(uint64_t groups);
};

inline uint32_t float_bits(float f) {
  uint32_t u;
  static_assert(sizeof u == sizeof f);
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// A float32 value kept as fp16 in device buffers (precision=f16); the host sees float32.
inline bool stored_as_f16(const TensorInfo& t) {
  return t.info && t.info->dtype == LOOM_DTYPE_FLOAT32 && t.dtype == LOOM_DTYPE_FLOAT16;
}

// Checked narrowing of sizes to the 32-bit indices the shaders use.
uint32_t u32(int64_t v, const char* what);

}  // namespace loom::vulkan
