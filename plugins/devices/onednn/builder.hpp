// Compiling a subgraph into a list of oneDNN primitives (the Builder) and running it (the
// Program).
//
// Every value the primitives touch lives in a Slot: a memory descriptor (the layout a primitive
// chose with format_tag::any, kept between ops) and a dnnl::memory bound to the graph input, an
// output buffer, a constant, or an offset of the program's arena (planned over liveness after
// all primitives exist). A consumer that needs another layout or data type asks for it with
// Builder::as(), which inserts one reorder and caches it, so layouts only change where an op
// demands it: typically at subgraph boundaries.
#pragma once

#include <cstdint>
#include <functional>
#include <loom/op_registry.hpp>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "host_blocks.hpp"
#include "ir.hpp"
#include "precision.hpp"

namespace loom::onednn {

struct DeviceOptions {
  int threads = 1;
  bool bf16 = false;  // run conv/matmul (and what follows them) in bfloat16
  // Under bf16, what keeps f32 (precision.hpp; option bf16_f32).
  Bf16Keep bf16_keep;
  // 3x3 stride-1 convolutions: "auto" takes oneDNN's Winograd where it has a JIT one and the
  // layer is wide (>= 64 channels in and out: 1.5-3x faster than direct on AVX-512 in
  // ResNet's layers), "tune" times both once at compile (results then depend on the timing),
  // "off" never.
  enum class Winograd { kOff, kAuto, kTune };
  Winograd winograd = Winograd::kAuto;
  // A 1x1 convolution followed by a 3x3 depthwise one runs as one primitive (oneDNN's
  // depthwise post-op) where oneDNN has a JIT kernel for the pair: the expanded tensor of
  // MobileNet-style blocks then stays in cache. "off" keeps them separate.
  bool dw_fusion = true;
  // 3x3 depthwise convolutions in nChw16c with at most a clamp after them run the device's
  // own kernel (depthwise3x3.hpp, AVX-512) rather than oneDNN's jit_dw: "onednn" keeps
  // oneDNN's.
  bool loom_depthwise = true;
  // Layout of 2D convolution activations: "auto" asks for nChw16c in f32 subgraphs that have
  // a Winograd candidate or a depthwise convolution and otherwise lets oneDNN choose (nhwc for
  // its brgconv kernels); "blocked" always asks for nChw16c (where the channels are a multiple
  // of 16), "any" always lets oneDNN choose.
  enum class ConvLayout { kAuto, kBlocked, kAny };
  ConvLayout conv_layout = ConvLayout::kAuto;
  bool verbose = false;  // log each primitive's implementation at compile
  // Arena and constants on transparent huge pages from 2 MiB on (host_blocks.hpp); "off"
  // keeps 4-KiB pages.
  bool huge_pages = true;
};

enum class SlotKind { kInternal, kInput, kOutput, kConstant };

struct Slot {
  dnnl::memory::desc md;
  dnnl::memory mem;
  SlotKind kind = SlotKind::kInternal;
  int root = -1;  // the slot owning the bytes (itself unless this is an alias view)
  const void* constant = nullptr;
  int first_step = -1, last_step = -1;  // liveness of root slots
};

struct Step {
  dnnl::primitive prim;  // null for a kernel step
  // A computation of this device's own (matvec.hpp), run instead of a primitive.
  std::function<void(const std::unordered_map<int, dnnl::memory>&)> kernel;
  std::unordered_map<int, dnnl::memory> args;
  std::string label;  // node name and implementation, for the verbose log
  // For profiled runs (plugin ABI 1.5): the nodes of the compiled graph the step computes (the
  // node emitted and every node fused into its primitive), none for a reorder or copy of the
  // device's own; the first node's name (or the label); the primitive kind and oneDNN's
  // implementation ("convolution brg:avx2"), or the device's own kernel.
  std::vector<int32_t> nodes;
  std::string name, detail;
  // Runs on the calling thread alone: a primitive over so few bytes, or a computation so small,
  // that waking the OpenMP team costs more than the other threads save (builder.cpp,
  // kSerialBytes and kSerialFlops).
  bool serial = false;
};

// A node that runs no step of its own (a Constant made at compile, a view such as Reshape of
// plain bytes): a profiled run reports it as a zero-length step, at its place between the
// steps, so that every node of the subgraph is accounted for.
struct StepFreeNode {
  size_t before_step = 0;  // reported just before this step (steps.size(): after the last)
  int32_t node = -1;
  std::string name, detail;
};

struct OutputBinding {
  int slot = -1;
  std::vector<int64_t> dims;
  loom_dtype_t dtype = LOOM_DTYPE_FLOAT32;
  size_t bytes = 0;
  // Dim `grow_dim` is the compiled one plus how much longer than compiled free axis
  // `grows_with` is in the run (a present key-value cache following its past); -1: fixed.
  int grows_with = -1, grow_dim = -1;
};

// An axis of a graph input that the program runs at any extent (plugin ABI 1.8 free_axis): only
// the device's own kernels read the input, and they take its extent from the run.
struct FreeAxis {
  size_t input = 0;  // graph input index
  int axis = 0;
  std::vector<int64_t> dims;  // the input's compiled dims
};

// The compiled form of a subgraph.
class Program {
 public:
  // Runs with the inputs in graph-input order and fills one host block per output.
  // `control`: the run's cancellation (plugin ABI 1.4), polled between steps, and its profile
  // callback (1.5), which gets every step with its time when the host profiles the run.
  void run(std::span<void* const> inputs, std::span<const HostBlock> outputs,
           const sdk::RunControl& control = {});

  dnnl::engine engine;
  dnnl::stream stream;
  DeviceOptions options;
  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<int> input_slots;  // per graph input, -1 when no primitive reads it
  std::vector<OutputBinding> outputs;
  std::vector<std::vector<int>> aliases;    // per root slot: alias slots sharing its bytes
  std::vector<HostBlock> owned;             // the arena
  std::unique_ptr<ConstantPool> constants;  // reordered weights, copies of Constant nodes
  // Reordered weights this program uses, maybe made (in their pool) by another program.
  std::vector<std::shared_ptr<void>> shared_constants;
  std::vector<StepFreeNode> step_free_nodes;  // in step order
  std::vector<FreeAxis> free_axes;
  // Per free axis, its extent in the run in progress: set before the steps run, read by the
  // kernel steps that follow the axis (an executable runs on one thread at a time).
  std::shared_ptr<std::vector<int64_t>> run_extents = std::make_shared<std::vector<int64_t>>();
};

// A post-op the emitter may fold into a conv/matmul primitive: the consumer node it replaces.
// A second eltwise stage after the first, for ops oneDNN 2.6 has no single algorithm for
// (HardSigmoid: a linear map, then a clip to [0, 1]).
struct EltwiseStage {
  dnnl::algorithm alg;
  float alpha = 0.f, beta = 0.f;
};

struct FusionCandidate {
  enum class Kind { kEltwise, kBinary, kSum };
  Kind kind;
  int node = -1;       // the consumer absorbed by this post-op
  int out_value = -1;  // the value it produces
  // Further consumers composed into this post-op (consecutive linear eltwises become one).
  std::vector<int> merged_nodes;
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.f, beta = 0.f;
  std::optional<EltwiseStage> then = std::nullopt;  // eltwise: a second stage (EltwiseForm::then)
  int operand = -1;  // binary: the other input value; sum: the residual value
};
// Appends eltwise candidate `f` (one or two post-ops).
void append_eltwise_post_ops(const FusionCandidate& f, dnnl::post_ops& ops);

class Builder {
 public:
  Builder(IrGraph& graph, const DeviceOptions& options, dnnl::engine engine);

  // Emits every node, then binds outputs and plans memory.
  std::unique_ptr<Program> build();
  // Called with each constant whose bytes the core owns once no step left to emit reads them
  // and the program does not read them at run time (ABI 1.3's constant_copied): the core may
  // free them while the rest compiles.
  // Called (during build) with each graph input index and axis the program runs at any
  // extent (plugin ABI 1.8); without it no axis is declared free.
  void on_free_axis(std::function<void(size_t, int)> callback) { free_axis_ = std::move(callback); }
  // Declares axis `axis` of graph input `value` free, when the host asked (on_free_axis) and
  // `value` is a float graph input read as its own plain bytes by the node being emitted alone;
  // returns the index into Program::free_axes (and run_extents), or -1.
  int free_input_axis(int value, int axis);
  // Whether free_input_axis would declare it (checks only).
  bool free_axis_allowed(int value, int axis);
  // Whether graph output `value` may grow with a free axis: a float output read by no node,
  // listed once, so that it is bound to its output without a copy step.
  bool growing_output_allowed(int value);
  // Output `value`'s dim `dim` follows free axis `k` (it must be bound to its output directly).
  void output_follows(int value, int dim, int k) { follows_.push_back({value, dim, k}); }
  const std::shared_ptr<std::vector<int64_t>>& run_extents() const { return program_->run_extents; }
  void on_constant_copied(std::function<void(int)> callback) {
    constant_copied_ = std::move(callback);
  }

  // ---- used by the op emitters ----
  IrGraph& ir() { return g_; }
  const DeviceOptions& options() const { return program_->options; }
  dnnl::engine& engine() { return program_->engine; }

  // The slot holding `value` in whatever layout it has now (inputs and constants: plain f32).
  int slot_of(int value);
  const dnnl::memory::desc& md_of(int value) { return program_->slots[slot_of(value)].md; }
  // The slot of `value` converted to `md` (one cached reorder if needed).
  int as(int value, const dnnl::memory::desc& md);
  // The slot of an earlier as(value, md) reorder whose bytes nothing else shares, or -1.
  int converted_copy(int value, const dnnl::memory::desc& md) const;
  // Plain row-major layout of `value` in its current data type (reorders if blocked).
  int as_plain(int value);
  int as_plain(int value, dnnl::memory::data_type dt);
  // A new slot produced by the step being emitted, bound to `value` (-1: scratch of that step).
  int define(int value, const dnnl::memory::desc& md);
  const dnnl::memory::desc& slot_md(int slot) { return program_->slots[slot].md; }
  // A new slot viewing the bytes of `slot` through `md` (same size or smaller).
  int view(int slot, const dnnl::memory::desc& md);
  // Makes `value` an alias of slot `source` viewed through `md` (same bytes, e.g. Reshape).
  void alias(int value, int source, const dnnl::memory::desc& md);
  // A constant reordered once, now, into `md` (weights, biases); `data` is plain f32 of `dims`.
  int constant_slot(const std::vector<float>& data, const std::vector<int64_t>& dims,
                    const dnnl::memory::desc& md);
  int constant_slot(int value, const dnnl::memory::desc& md);
  // A constant of `md`'s size whose bytes `fill` writes in place (a layout oneDNN has no
  // reorder to).
  int constant_slot(const dnnl::memory::desc& md, const std::function<void(void*)>& fill);
  // The same for a layout of the device's own, named `packing` (matvec.hpp's "matvec"), made
  // from the constant bytes `data` seen through `src_md`: shared with every program that packed
  // the same bytes the same way (shared_constants.hpp), as constant_slot's reorders are.
  int shared_constant_slot(const void* data, const dnnl::memory::desc& src_md,
                           const dnnl::memory::desc& md, const char* packing,
                           const std::function<void(void*)>& fill, uint64_t content_id = 0);
  // Same from raw f32 bytes seen through `src_md` (e.g. a permuted view of ONNX weights).
  int constant_slot(const void* data, const dnnl::memory::desc& src_md,
                    const dnnl::memory::desc& md, uint64_t content_id = 0);
  // Constant `value`'s values seen through `src_md` (f32), reordered into `md`: read where the
  // core holds them when they are float32 (no copy; their ABI 1.7 content id spares the shared
  // registry a hash), else converted to f32 first.
  int value_constant_slot(int value, const dnnl::memory::desc& src_md,
                          const dnnl::memory::desc& md);
  // Appends a primitive reading/writing the given (arg id, slot) pairs.
  void add_step(dnnl::primitive prim, const std::vector<std::pair<int, int>>& args,
                const std::string& label);
  // A reorder or copy the device needs for its own layouts, which computes no node (a profiled
  // run reports it with no node).
  void add_device_step(dnnl::primitive prim, const std::vector<std::pair<int, int>>& args,
                       const std::string& label);
  // Appends a computation of the device's own, reading its args' memory at run time; `detail`
  // names the kernel for profiles ("loom matvec").
  void add_kernel_step(std::function<void(const std::unordered_map<int, dnnl::memory>&)> kernel,
                       const std::vector<std::pair<int, int>>& args, const std::string& label,
                       const std::string& detail);
  dnnl::memory& mem(int slot) { return program_->slots[slot].mem; }

  // Consumers of `value` this emitter may fold as post-ops, in chain order (not yet absorbed).
  std::vector<FusionCandidate> fusion_candidates(int node, int value, size_t max_count = 4);
  // Appends the post-ops of candidates[0..count) to `ops`; returns the binary args to bind.
  std::vector<std::pair<int, int>> append_post_ops(const std::vector<FusionCandidate>& c,
                                                   size_t count, dnnl::post_ops& ops, int dst_rank);
  // Makes `slot` hold `value` (a result written into another value's buffer).
  void bind(int value, int slot) { value_slot_[value] = slot; }
  // Marks candidates[0..count) absorbed and binds their final value to `dst_slot`.
  void absorb(const std::vector<FusionCandidate>& c, size_t count, int dst_slot);
  // True when a residual may be overwritten in place by the node at `node` (sum post-op).
  bool residual_is_dead_after(int residual, int node, int add_node);

  // Compute data type of the node being emitted (a convolution or matrix product) under the
  // precision option and its bf16 plan (precision.hpp).
  dnnl::memory::data_type compute_type() const;
  // True when `value` is to be written in f32 whatever the compute type: a graph output (no
  // second rounding of what the caller reads) or a value the bf16 plan keeps in f32.
  bool keeps_f32(int value) const;
  // The data type in which the node being emitted, an op that computes in its input's type
  // (normalizations, softmax, elementwise), reads `value`: f32 where the bf16 plan keeps the
  // node in f32, else the type `value` has now.
  dnnl::memory::data_type input_type(int value);
  // True when 2D convolutions should share a channel-blocked layout (see Builder::build()).
  bool blocked_convolutions() const { return blocked_convolutions_; }
  // Channels per block of that layout: 16 (nChw16c) where oneDNN has AVX-512 kernels, 8
  // (nChw8c) on AVX2 CPUs, whose jit kernels take only 8-channel blocks (nChw16c sends them
  // to the reference convolution, ~700x slower on MobileNetV2).
  int64_t block_width() const { return block_width_; }
  // True where a layer whose channels are a multiple of 8 but not of 16 runs faster in
  // nChw8c (AVX2 kernels) than padded to nChw16c: CPUs that execute AVX-512 as two 256-bit
  // halves (AMD Zen 4), where the AVX2 kernels do as much per channel.
  bool narrow_blocks_pay() const { return narrow_blocks_pay_; }

 private:
  void emit(int node);
  // After emit(node): gives its steps the nodes they compute, or records the node as step-free.
  void attribute_steps(int node, size_t first_step, const std::vector<bool>& absorbed_before);
  // Adds `node` and the nodes the rewrite passes folded into it (transitively) to `out`.
  void add_with_folded(int node, std::vector<int32_t>& out) const;
  void bind_outputs();
  void plan_memory();
  // True when the bf16 plan (precision_, empty outside bf16) keeps the node being emitted in f32.
  bool plan_keeps_node_f32() const;
  // `prim` made again with a scratchpad the program owns, where it needs one
  // (builder_scratchpad.cpp).
  dnnl::primitive with_own_scratchpad(dnnl::primitive prim, int& scratchpad);
  // Reports the constants no node after `node` reads (on_constant_copied).
  void release_constants_read_last_by(int node, const std::vector<std::vector<int>>& last_read);
  int new_slot(const dnnl::memory::desc& md, SlotKind kind, int root = -1);
  // A constant slot of `md` over a block the program holds (shared_constants.hpp).
  int held_constant_slot(const dnnl::memory::desc& md, std::shared_ptr<void> block);
  // The host copy of constant `value`'s bytes that lives as long as the program.
  const void* keep_constant(int value);

  IrGraph& g_;
  std::unique_ptr<Program> program_;
  std::vector<int> value_slot_;
  std::vector<bool> core_constants_read_;  // per value: the program reads the core's bytes
  std::vector<bool> released_;             // per value: reported to constant_copied_
  std::function<void(int)> constant_copied_;
  std::function<void(size_t, int)> free_axis_;
  struct Follows {
    int value, dim, axis;
  };
  std::vector<Follows> follows_;
  std::vector<std::pair<int, int>> converted_;  // (value, slot) pairs made by as()
  std::vector<bool> device_step_;               // per step: added by add_device_step
  int current_node_ = -1;
  PrecisionPlan precision_;  // empty unless options.bf16
  // Each node's index in emission order: node order, except that a node with an emit_after
  // follows that node (build()).
  std::vector<int> position_;
  // shared_constant_stats().hashed_bytes when this compile began (for the debug log).
  uint64_t hashed_at_start_ = 0;
  bool blocked_convolutions_ = false;
  // While emitting a small convolution or product (builder.cpp, kSerialFlops): its primitives
  // are made for one thread and its steps run inline.
  bool one_thread_ = false;
  int64_t block_width_ = 16;
  bool narrow_blocks_pay_ = false;
};

// The oneDNN data type of a tensor type this device holds (float32, int8, uint8, int32).
dnnl::memory::data_type memory_type(loom_dtype_t t);
// Plain row-major descriptor; strides of a row-major layout.
dnnl::memory::desc plain_md(const std::vector<int64_t>& dims, dnnl::memory::data_type dt);
dnnl::memory::dims row_major_strides(const std::vector<int64_t>& dims);
// True when `md` is row-major dense.
bool is_plain(const dnnl::memory::desc& md);
// The format tag `md` was made with, among plain, channels-last and channel-blocked by 16 or 8
// (ranks 3 to 5), or nullopt.
std::optional<dnnl::memory::format_tag> layout_tag(const dnnl::memory::desc& md);
// `dims` padded with leading 1s to `rank`.
std::vector<int64_t> pad_rank(const std::vector<int64_t>& dims, size_t rank);
// True when the primitive descriptor fell back to a reference (slow) implementation.
bool is_reference(const dnnl::primitive_desc_base& pd);
// The ONNX activation's oneDNN eltwise form, if the node is one this device fuses/emits.
struct EltwiseForm {
  dnnl::algorithm alg;
  float alpha = 0.f, beta = 0.f;
  size_t data_input = 0;  // which input is the tensor (c - x reads input 1)
  std::optional<EltwiseStage> then = std::nullopt;
};
std::optional<EltwiseForm> eltwise_form(const IrGraph& g, const IrNode& n);

// Creates a primitive descriptor with as many of the candidates' post-ops as oneDNN accepts
// without falling back to a reference implementation. make(attr, count) builds the descriptor
// for the first `count` candidates. Returns the descriptor and that count; `args` receives the
// binary post-ops' operand slots.
template <typename Pd, typename Make>
std::pair<Pd, size_t> create_with_post_ops(Builder& b, const std::vector<FusionCandidate>& c,
                                           int dst_rank, Make make,
                                           std::vector<std::pair<int, int>>& args,
                                           size_t min_count = 0) {
  for (size_t count = c.size();; --count) {
    dnnl::post_ops ops;
    std::vector<std::pair<int, int>> a = b.append_post_ops(c, count, ops, dst_rank);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    try {
      Pd pd = make(attr, count);
      if (count == min_count || !is_reference(pd)) {
        args = std::move(a);
        return {pd, count};
      }
    } catch (const dnnl::error&) {
      if (count == min_count) throw;
    }
  }
}

// A 3x3 depthwise convolution a 1x1 convolution computes in its own primitive (ops_conv_dw.cpp).
struct DepthwiseFusion {
  dnnl::convolution_forward::primitive_desc pd;  // the 1x1 with its post-ops and the depthwise
  int node = -1;                                 // the depthwise Conv node
  int out_value = -1;                            // its output
  int64_t channels = 0;
  std::vector<float> weights;         // [channels, 1, 3, 3], BatchNormalization folded
  std::vector<float> bias;            // [channels], zeros when the node has none
  std::vector<FusionCandidate> post;  // followers of the depthwise output
  size_t post_count = 0;              // how many of them (activations) the primitive runs
};
// The depthwise fusion for the 1x1 convolution whose output is `conv_out` and whose first
// `fused` candidates are already its post-ops; make(attr) creates the 1x1's descriptor. Empty
// when the reader of the chain is no suitable depthwise convolution, the option is off, or
// oneDNN has no JIT kernel for the pair.
std::optional<DepthwiseFusion> fuse_depthwise(
    Builder& b, const std::vector<FusionCandidate>& cands, size_t fused, int conv_out,
    const std::function<dnnl::convolution_forward::primitive_desc(const dnnl::primitive_attr&)>&
        make);

// A Conv's strides, dilations and pads as oneDNN takes them (auto_pad resolved; ops_conv.cpp).
struct ConvGeometry {
  dnnl::memory::dims strides, dilations, pad_l, pad_r;  // oneDNN dilation = ONNX dilation - 1
  int64_t group = 1;
};

// The device's own 3x3 depthwise kernel in place of oneDNN's primitive `pd` for Conv `node`
// (geometry `geo`) whose post-ops are cands[0..fused) (ops_depthwise.cpp); false, with
// nothing emitted, where it does not apply (see there).
bool emit_depthwise3x3(Builder& b, int node, const dnnl::convolution_forward::primitive_desc& pd,
                       const std::vector<FusionCandidate>& cands, size_t fused,
                       const ConvGeometry& geo);

// The device's ops by ONNX op type, found by why_unsupported (support.cpp) and Builder::emit:
// why a node is refused ("" to claim it; asked after why_unsupported's type and shape checks)
// and how it is emitted. Each ops_*.cpp registers its family with LOOM_ONEDNN_OP. `check` is
// null for the op types only the rewrite passes make (Gelu, Swish: never claimed from a model),
// `emit` for those compile absorbs (Constant, Erf).
struct OpEntry {
  std::string (*check)(const loom_graph_t& graph, const loom_node_t& node) = nullptr;
  void (*emit)(Builder& b, int node) = nullptr;
};
sdk::OpRegistry<OpEntry>& op_registry();
struct OpRegistrar {
  OpRegistrar(const char* op, OpEntry entry) { op_registry().add(op, entry); }
};
#define LOOM_ONEDNN_CONCAT_(a, b) a##b
#define LOOM_ONEDNN_CONCAT(a, b) LOOM_ONEDNN_CONCAT_(a, b)
#define LOOM_ONEDNN_OP(op, check, emit)                                                      \
  static const ::loom::onednn::OpRegistrar LOOM_ONEDNN_CONCAT(loom_onednn_op_, __COUNTER__)( \
      op, ::loom::onednn::OpEntry{check, emit})

// ops_quant.cpp: every int8 op (IrNode::quant), whatever its op type.
void emit_quantized(Builder& b, int node);

// The permutation a Transpose node applies (its perm, else the reversed axes; ops_layout.cpp).
std::vector<int64_t> transpose_perm(const IrNode& n, size_t rank);

}  // namespace loom::onednn
