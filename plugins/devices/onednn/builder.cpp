#include "builder.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <omp.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <loom/arena_plan.hpp>
#include <loom/host_memory.hpp>

#include "shared_constants.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::memory::dims row_major_strides(const std::vector<int64_t>& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * std::max<int64_t>(dims[i], 1);
  return strides;
}

dt memory_type(loom_dtype_t t) {
  switch (t) {
    case LOOM_DTYPE_FLOAT32:
      return dt::f32;
    case LOOM_DTYPE_UINT8:
      return dt::u8;
    case LOOM_DTYPE_INT8:
      return dt::s8;
    case LOOM_DTYPE_INT32:
      return dt::s32;
    case LOOM_DTYPE_BOOL:  // one byte per element, 0 or 1: Attention's boolean attn_mask
      return dt::u8;
    default:
      sdk::fail(LOOM_ERROR_UNSUPPORTED,
                "onednn: no tensor of type " + std::string(sdk::dtype_name(t)) + " on this device");
  }
}

dnnl::memory::desc plain_md(const std::vector<int64_t>& dims, dt type) {
  if (dims.empty()) return dnnl::memory::desc({1}, type, dnnl::memory::dims{1});
  return dnnl::memory::desc(dims, type, row_major_strides(dims));
}

bool is_plain(const dnnl::memory::desc& md) {
  if (md.data.format_kind != dnnl_blocked || md.data.format_desc.blocking.inner_nblks != 0)
    return false;
  std::vector<int64_t> dims(md.data.dims, md.data.dims + md.data.ndims);
  dnnl::memory::dims want = row_major_strides(dims);
  for (int i = 0; i < md.data.ndims; ++i)
    if (dims[i] != 1 && md.data.format_desc.blocking.strides[i] != want[i]) return false;
  return md.data.offset0 == 0;
}

std::optional<dnnl::memory::format_tag> layout_tag(const dnnl::memory::desc& md) {
  using tag = dnnl::memory::format_tag;
  static const std::vector<tag> by_rank[3] = {
      {tag::abc, tag::acb, tag::aBc16b, tag::aBc8b},
      {tag::abcd, tag::acdb, tag::aBcd16b, tag::aBcd8b},
      {tag::abcde, tag::acdeb, tag::aBcde16b, tag::aBcde8b}};
  int rank = md.data.ndims;
  if (rank < 3 || rank > 5 || md.data.format_kind != dnnl_blocked) return std::nullopt;
  for (tag t : by_rank[rank - 3])
    if (md == dnnl::memory::desc(md.dims(), md.data_type(), t)) return t;
  return std::nullopt;
}

std::vector<int64_t> pad_rank(const std::vector<int64_t>& dims, size_t rank) {
  std::vector<int64_t> out(rank > dims.size() ? rank - dims.size() : 0, 1);
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

bool is_reference(const dnnl::primitive_desc_base& pd) {
  std::string impl = pd.impl_info_str();
  return impl.find("ref") != std::string::npos;
}

// ---- Builder ------------------------------------------------------------------------------

Builder::Builder(IrGraph& graph, const DeviceOptions& options, dnnl::engine engine)
    : g_(graph),
      program_(std::make_unique<Program>()),
      value_slot_(graph.values.size(), -1),
      core_constants_read_(graph.values.size(), false),
      released_(graph.values.size(), false) {
  hashed_at_start_ = shared_constant_stats().hashed_bytes;
  program_->engine = engine;
  program_->stream = dnnl::stream(engine);
  program_->options = options;
  program_->constants = std::make_unique<ConstantPool>(options.huge_pages);
}

bool Builder::plan_keeps_node_f32() const {
  const size_t n = static_cast<size_t>(current_node_);
  return current_node_ >= 0 && n < precision_.f32_nodes.size() && precision_.f32_nodes[n];
}

dt Builder::compute_type() const {
  return program_->options.bf16 && !plan_keeps_node_f32() ? dt::bf16 : dt::f32;
}

bool Builder::keeps_f32(int value) const {
  const size_t v = static_cast<size_t>(value);
  return g_.value(value).graph_output ||
         (program_->options.bf16 && v < precision_.f32_values.size() && precision_.f32_values[v]);
}

dt Builder::input_type(int value) {
  return program_->options.bf16 && plan_keeps_node_f32() ? dt::f32 : md_of(value).data_type();
}

int Builder::new_slot(const dnnl::memory::desc& md, SlotKind kind, int root) {
  Slot s;
  s.md = md;
  s.kind = kind;
  s.mem = dnnl::memory(md, program_->engine, DNNL_MEMORY_NONE);
  int id = static_cast<int>(program_->slots.size());
  s.root = root < 0 ? id : program_->slots[root].root;
  program_->slots.push_back(std::move(s));
  program_->aliases.emplace_back();
  if (root >= 0) program_->aliases[program_->slots[id].root].push_back(id);
  return id;
}

int Builder::slot_of(int value) {
  if (value < 0) sdk::fail(LOOM_ERROR_INTERNAL, "onednn: an omitted input was read");
  if (value_slot_[value] >= 0) return value_slot_[value];
  const IrValue& v = g_.value(value);
  if (v.constant()) {
    if (v.dtype != LOOM_DTYPE_FLOAT32)
      sdk::fail(LOOM_ERROR_UNSUPPORTED, "onednn: constant '" + v.name + "' of type " +
                                            sdk::dtype_name(v.dtype) + " used as a tensor");
    const void* data = keep_constant(value);
    int s = new_slot(plain_md(v.dims, dt::f32), SlotKind::kConstant);
    program_->slots[s].constant = data;
    program_->slots[s].mem.set_data_handle(const_cast<void*>(data));
    return value_slot_[value] = s;
  }
  if (v.graph_input) {
    // An int64 tensor (RotaryEmbedding's position_ids) is held as its bytes: oneDNN 2.6 has no
    // 64-bit integers, and only the device's own kernels read such a tensor (support.cpp).
    const dnnl::memory::desc md =
        v.dtype == LOOM_DTYPE_INT64
            ? dnnl::memory::desc({v.elements() * 8}, dt::u8, dnnl::memory::format_tag::a)
            : plain_md(v.dims, memory_type(v.dtype));
    int s = new_slot(md, SlotKind::kInput);
    for (size_t i = 0; i < g_.inputs.size(); ++i)
      if (g_.inputs[i] == value) program_->input_slots[i] = s;
    return value_slot_[value] = s;
  }
  sdk::fail(LOOM_ERROR_INTERNAL, "onednn: value '" + v.name + "' is read before it is made");
}

const void* Builder::keep_constant(int value) {
  const IrValue& v = g_.value(value);
  if (v.owned_data.empty()) {  // the core keeps it while the executable lives
    if (released_[value])
      sdk::fail(LOOM_ERROR_INTERNAL, "onednn: constant '" + v.name + "' is read after its bytes " +
                                         "were handed back to the core");
    core_constants_read_[value] = true;
    return v.data;
  }
  // A Constant node's tensor lives in the IR, which compile discards: keep a copy.
  void* data = program_->constants->allocate(v.owned_data.size());
  std::memcpy(data, v.owned_data.data(), v.owned_data.size());
  return data;
}

// True when two descriptors of the same rank have the same strides (oneDNN's == ignores the
// strides of extents of 1).
static bool same_strides(const dnnl::memory::desc& a, const dnnl::memory::desc& b) {
  const auto& x = a.data.format_desc.blocking;
  const auto& y = b.data.format_desc.blocking;
  return a.data.ndims == b.data.ndims && std::equal(x.strides, x.strides + a.data.ndims, y.strides);
}

int Builder::as(int value, const dnnl::memory::desc& md) {
  int s = slot_of(value);
  const dnnl::memory::desc& have = program_->slots[s].md;
  if (have == md && (!is_plain(have) || same_strides(have, md))) return s;
  for (auto& [v, slot] : converted_)
    if (v == value && program_->slots[slot].md == md && same_strides(program_->slots[slot].md, md))
      return slot;
  if (have.dims() == md.dims() && have.data_type() == md.data_type() && is_plain(have) &&
      is_plain(md)) {
    // The same bytes described with other strides for extents of 1 (a Transpose that only moved
    // those gives "bac" over row-major data): a view in the asked form, not a copy. oneDNN 2.6
    // runs its reference binary kernel on the "bac" form (ViT's residual Adds: 5 ms instead of
    // 0.1).
    int out = view(s, md);
    converted_.emplace_back(value, out);
    return out;
  }
  int out = new_slot(md, SlotKind::kInternal);
  dnnl::reorder::primitive_desc pd(program_->engine, program_->slots[s].md, program_->engine, md);
  add_device_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, s}, {DNNL_ARG_TO, out}},
                  "reorder " + g_.value(value).name);
  converted_.emplace_back(value, out);
  return out;
}

int Builder::converted_copy(int value, const dnnl::memory::desc& md) const {
  for (auto& [v, slot] : converted_) {
    const Slot& s = program_->slots[slot];
    if (v == value && s.md == md && s.root == slot && program_->aliases[slot].empty()) return slot;
  }
  return -1;
}

int Builder::as_plain(int value, dt type) {
  return as(value, plain_md(g_.value(value).dims, type));
}

int Builder::as_plain(int value) {
  return as_plain(value, md_of(value).data_type());
}

int Builder::define(int value, const dnnl::memory::desc& md) {
  int s = new_slot(md, SlotKind::kInternal);
  if (value >= 0) value_slot_[value] = s;
  return s;
}

int Builder::view(int source, const dnnl::memory::desc& md) {
  int s = new_slot(md, program_->slots[source].kind, source);
  program_->slots[s].constant = program_->slots[source].constant;
  if (program_->slots[s].constant)
    mem(s).set_data_handle(const_cast<void*>(program_->slots[s].constant));
  return s;
}

// Always a distinct slot, so that aliases[] lists every value sharing the bytes (the sum
// post-op overwrites a residual only when nothing else views it).
void Builder::alias(int value, int source, const dnnl::memory::desc& md) {
  value_slot_[value] = view(source, md);
}

int Builder::constant_slot(const std::vector<float>& data, const std::vector<int64_t>& dims,
                           const dnnl::memory::desc& md) {
  return constant_slot(data.data(), plain_md(dims, dt::f32), md);
}

int Builder::constant_slot(const void* data, const dnnl::memory::desc& src_md,
                           const dnnl::memory::desc& md, uint64_t content_id) {
  // Shared with every other program that reordered the same bytes into the same layout (the
  // plans of other input shapes, other sessions of the model): shared_constants.hpp.
  std::shared_ptr<void> shared = shared_reordered_constant(
      data, src_md, md, [&] { return program_->constants->allocate_shared(md.get_size()); },
      [&](void* block) {
        dnnl::memory src(src_md, program_->engine, const_cast<void*>(data));
        dnnl::memory dst(md, program_->engine, block);
        // The whole team for the copy, then back to what the node being emitted uses.
        const int threads = omp_get_max_threads();
        omp_set_num_threads(program_->options.threads);
        dnnl::reorder(src, dst).execute(program_->stream, src, dst);
        program_->stream.wait();
        omp_set_num_threads(threads);
      },
      "", content_id);
  return held_constant_slot(md, std::move(shared));
}

int Builder::shared_constant_slot(const void* data, const dnnl::memory::desc& src_md,
                                  const dnnl::memory::desc& md, const char* packing,
                                  const std::function<void(void*)>& fill, uint64_t content_id) {
  return held_constant_slot(
      md, shared_reordered_constant(
              data, src_md, md, [&] { return program_->constants->allocate_shared(md.get_size()); },
              fill, packing, content_id));
}

int Builder::held_constant_slot(const dnnl::memory::desc& md, std::shared_ptr<void> block) {
  void* data = block.get();
  program_->shared_constants.push_back(std::move(block));
  int s = new_slot(md, SlotKind::kConstant);
  program_->slots[s].constant = data;
  mem(s).set_data_handle(data);
  return s;
}

int Builder::constant_slot(const dnnl::memory::desc& md, const std::function<void(void*)>& fill) {
  void* block = program_->constants->allocate(md.get_size());
  fill(block);
  int s = new_slot(md, SlotKind::kConstant);
  program_->slots[s].constant = block;
  mem(s).set_data_handle(block);
  return s;
}

int Builder::constant_slot(int value, const dnnl::memory::desc& md) {
  return value_constant_slot(value, plain_md(g_.value(value).dims, dt::f32), md);
}

int Builder::value_constant_slot(int value, const dnnl::memory::desc& src_md,
                                 const dnnl::memory::desc& md) {
  const IrValue& v = g_.value(value);
  if (v.dtype == LOOM_DTYPE_FLOAT32 && v.data && v.data_size >= src_md.get_size())
    return constant_slot(v.data, src_md, md, v.owned_data.empty() ? v.content_id : 0);
  std::vector<float> converted = constant_floats(g_, value);
  return constant_slot(converted.data(), src_md, md);
}

void Builder::add_kernel_step(
    std::function<void(const std::unordered_map<int, dnnl::memory>&)> kernel,
    const std::vector<std::pair<int, int>>& args, const std::string& label,
    const std::string& detail) {
  add_step(dnnl::primitive(), args, label);
  program_->steps.back().kernel = std::move(kernel);
  program_->steps.back().detail = detail;
}

void Builder::add_device_step(dnnl::primitive prim, const std::vector<std::pair<int, int>>& args,
                              const std::string& label) {
  add_step(std::move(prim), args, label);
  device_step_.back() = true;
}

// "convolution brg:avx2": the primitive's kind and oneDNN's implementation, what profiles show.
static std::string primitive_detail(const dnnl::primitive& prim) {
  const_dnnl_primitive_desc_t pd = prim.get_primitive_desc();
  dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
  const char* impl = nullptr;
  if (dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind) != dnnl_success)
    kind = dnnl_undefined_primitive;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
    impl = nullptr;
  std::string detail = dnnl_prim_kind2str(kind);
  if (impl && *impl) detail += std::string(" ") + impl;
  return detail;
}

// A memory-bound primitive (anything but a convolution, matmul, inner product or RNN) whose
// arguments take at most this many bytes runs on the calling thread alone. Waking oneDNN's
// OpenMP team and joining it costs 1 to 2 us a primitive on 2 cores, more than the second thread
// saves on so little data: float_lstm.tflite (300 nodes of an unrolled layer-normalized LSTM)
// 0.51 -> 0.17 ms, the VAD model 0.091 -> 0.071 ms, int8_cnn 0.034 -> 0.026 ms; blazeface,
// landmark, CRNN and BERT unchanged. Small int8 convolutions still gain from the team
// (blazeface_like_int8 was 6% slower with them serial), and at 256 KiB landmark_like_int8 lost
// 9%.
constexpr size_t kSerialBytes = size_t{64} << 10;

// A node that is a convolution or a matrix product of at most this many multiply-adds x 2 is
// emitted for one thread (Builder::emit): oneDNN fixes a convolution's or matmul's thread split
// when its primitive descriptor is made (omp_get_max_threads() then, also part of its primitive
// cache key) and opens an OpenMP region of that many threads at every execution, where on 2
// cores the team saves at most half of a few microseconds and its wake-up and join cost 1 to 2.
// Made for one thread, it runs inline; the weights are reordered into the layouts of that very
// primitive (made again afterwards, a brgemm convolution chose other blocks for one thread than
// the weights had been reordered into). Larger ones keep the team.
constexpr double kSerialFlops = 256e3;

// Multiply-adds x 2 of a convolution or matrix product node (0 for other ops and unknown
// shapes): every output element is a dot product over the weights of one output channel
// (the second axis of a convolution's output, the last of a product's).
double node_flops(const IrGraph& g, const IrNode& n) {
  const bool conv =
      n.op == "Conv" || n.op == "ConvTranspose" || n.op == "ConvInteger" || n.op == "QLinearConv";
  const bool product =
      n.op == "MatMul" || n.op == "Gemm" || n.op == "MatMulInteger" || n.op == "QLinearMatMul";
  if ((!conv && !product) || n.outputs.empty() || n.outputs[0] < 0) return 0;
  // The weights: the rewrite's, else input 1 (input 3 of QLinearConv/QLinearMatMul, after the
  // source's scale and zero point).
  const size_t weights = n.op.rfind("QLinear", 0) == 0 ? 3 : 1;
  const int w = n.quant ? n.quant->w : (n.inputs.size() > weights ? n.inputs[weights] : -1);
  if (w < 0) return 0;
  const std::vector<int64_t>& yd = g.value(n.outputs[0]).dims;
  if (yd.size() < 2) return 0;
  const int64_t channels = conv ? yd[1] : yd.back();
  if (channels <= 0) return 0;
  double outputs = 1;
  for (int64_t d : yd) outputs *= static_cast<double>(d);
  return 2 * outputs * static_cast<double>(g.value(w).elements()) / static_cast<double>(channels);
}

void Builder::add_step(dnnl::primitive prim, const std::vector<std::pair<int, int>>& args,
                       const std::string& label) {
  Step step;
  int scratchpad = -1;
  if (prim) prim = with_own_scratchpad(std::move(prim), scratchpad);
  step.prim = std::move(prim);
  int index = static_cast<int>(program_->steps.size());
  size_t bytes = 0;
  for (auto [arg, slot] : args) {
    step.args.emplace(arg, mem(slot));
    bytes += program_->slots[slot].md.get_size();
    Slot& root = program_->slots[program_->slots[slot].root];
    if (root.first_step < 0) root.first_step = index;
    root.last_step = index;
  }
  if (scratchpad >= 0) {  // not counted in `bytes`: the choice of a serial step stays as it was
    step.args.emplace(DNNL_ARG_SCRATCHPAD, mem(scratchpad));
    Slot& root = program_->slots[program_->slots[scratchpad].root];
    root.first_step = root.last_step = index;
  }
  using kind = dnnl::primitive::kind;
  const kind k = step.prim ? step.prim.get_kind() : kind::undef;
  const bool computation = k == kind::convolution || k == kind::deconvolution ||
                           k == kind::matmul || k == kind::inner_product;
  // The verbose log tells which computations were made for one thread.
  step.label = one_thread_ && computation ? label + " [one thread]" : label;
  step.name = label;  // a node's step is renamed after its node by attribute_steps
  if (step.prim) {
    step.detail = primitive_detail(step.prim);
    step.serial = one_thread_ || (bytes <= kSerialBytes && !computation && k != kind::rnn);
  }
  program_->steps.push_back(std::move(step));
  device_step_.push_back(false);
}

void Builder::add_with_folded(int node, std::vector<int32_t>& out) const {
  if (std::find(out.begin(), out.end(), node) != out.end()) return;
  out.push_back(node);
  for (int f : g_.nodes[node].folded) add_with_folded(f, out);
}

// The steps emit(node) added compute `node` and every node it absorbed meanwhile as post-ops
// or fused followers (and, transitively, what the rewrite passes had folded into those); its
// reorders of operands into the layouts a primitive asked for compute no node. A node that
// emitted no step of its own (a view: Reshape or Flatten of plain bytes, an Identity) is
// reported as a zero-length step at its place, with the nodes it absorbed.
void Builder::attribute_steps(int node, size_t first_step,
                              const std::vector<bool>& absorbed_before) {
  std::vector<int32_t> nodes;
  add_with_folded(node, nodes);
  for (size_t k = 0; k < g_.nodes.size(); ++k)
    if (g_.nodes[k].absorbed && !absorbed_before[k]) add_with_folded(static_cast<int>(k), nodes);
  const std::string& name = g_.nodes[node].view->name;
  bool any = false;
  for (size_t i = first_step; i < program_->steps.size(); ++i) {
    if (device_step_[i]) continue;
    Step& step = program_->steps[i];
    step.nodes = nodes;
    step.name = name;
    any = true;
  }
  if (any) return;
  for (int32_t n : nodes)
    program_->step_free_nodes.push_back(
        {program_->steps.size(), n, g_.nodes[n].view->name,
         "no step of its own: a view of its input's bytes (" + g_.nodes[node].op + ")"});
}

void Builder::emit(int node) {
  const IrNode& n = g_.nodes[node];
  // A small convolution or product (kSerialFlops): its primitives made, its weights reordered
  // and its steps run for one thread. The caller's thread count comes back however this ends.
  const double flops = node_flops(g_, n);
  struct OneThread {
    Builder& b;
    const int saved = omp_get_max_threads();
    const bool was = b.one_thread_;  // a node emitted from within another's emission
    OneThread(Builder& builder, bool one) : b(builder) {
      if (!one) return;
      b.one_thread_ = true;
      omp_set_num_threads(1);
    }
    ~OneThread() {
      b.one_thread_ = was;
      omp_set_num_threads(saved);
    }
  } scope(*this, flops > 0 && flops <= kSerialFlops);
  if (n.quant) return emit_quantized(*this, node);  // a Conv, MatMul or Gemm computed in int8
  const OpEntry* entry = op_registry().find_any("", n.op);
  if (!entry || !entry->emit) sdk::fail(LOOM_ERROR_INTERNAL, "onednn: no emitter for " + n.op);
  entry->emit(*this, node);
}

void Builder::release_constants_read_last_by(int node,
                                             const std::vector<std::vector<int>>& last_read) {
  if (!constant_copied_) return;
  for (int id : last_read[node]) {
    const IrValue& v = g_.value(id);
    // Only the core's bytes (not copies of Constant nodes), not read at run time, not handed
    // out as an output.
    if (!v.constant() || !v.owned_data.empty() || v.graph_output || core_constants_read_[id] ||
        released_[id])
      continue;
    released_[id] = true;
    constant_copied_(id);
  }
}

// One arena for every internal root slot, planned by the SDK's best fit over the steps'
// liveness. Weights and activations together sit at the edge of this CPU's last-level cache,
// where every MiB shows in the latency: reusing whole blocks instead wasted a third of
// MobileNetV2's activation memory (5.0 MiB for 3.7 MiB alive at the peak).
void Builder::plan_memory() {
  std::vector<Slot>& slots = program_->slots;
  std::vector<int> planned;
  std::vector<sdk::BufferRequest> requests;
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].root == static_cast<int>(i) && slots[i].kind == SlotKind::kInternal &&
        slots[i].first_step >= 0) {
      planned.push_back(static_cast<int>(i));
      requests.push_back({slots[i].md.get_size(), slots[i].first_step, slots[i].last_step});
    }
  const sdk::MemoryPlan plan = sdk::plan_memory(requests);
  const bool huge_arena = program_->options.huge_pages && plan.arena_size >= kHugePageBytes;
  // Whether weights and activations together fit the last-level cache decides much of the
  // speed of small-spatial layers, so the debug log tells both.
  sdk::log(
      LOOM_LOG_DEBUG, "onednn",
      "memory: activations " + std::to_string(plan.arena_size >> 10) +
          " KiB in one arena, constants " + std::to_string(program_->constants->bytes() >> 10) +
          " KiB; on huge pages: activations " +
          std::to_string(huge_arena ? plan.arena_size >> 10 : 0) + " KiB, constants " +
          std::to_string(program_->constants->huge_page_bytes() >> 10) + " KiB; weights hashed " +
          std::to_string((shared_constant_stats().hashed_bytes - hashed_at_start_) >> 10) +
          " KiB (by every compile meanwhile)");
  if (planned.empty()) return;
  HostBlock arena =
      huge_arena ? allocate_host_huge(plan.arena_size, true) : allocate_host(plan.arena_size);
  for (size_t r = 0; r < planned.size(); ++r) {
    void* data = static_cast<uint8_t*>(arena.data()) + plan.offsets[r];
    slots[planned[r]].mem.set_data_handle(data);
    for (int a : program_->aliases[planned[r]]) slots[a].mem.set_data_handle(data);
  }
  program_->owned.push_back(std::move(arena));
}

// A 2D 3x3 stride-1 ungrouped convolution, at least 64 channels wide in multiples of 16.
static bool winograd_candidate(const IrGraph& g, const IrNode& n) {
  if (n.op != "Conv" || n.absorbed || n.inputs.size() < 2) return false;
  const std::vector<int64_t>& w = g.value(n.inputs[1]).dims;
  if (w.size() != 4 || w[2] != 3 || w[3] != 3 || w[0] % 16 != 0 || w[1] % 16 != 0 || w[0] < 64 ||
      w[1] < 64)
    return false;
  sdk::Attributes attrs(*n.view);
  if (attrs.get_int("group", 1) != 1) return false;
  for (const char* name : {"strides", "dilations"})
    if (auto v = attrs.get_ints(name))
      for (int64_t x : *v)
        if (x != 1) return false;
  return true;
}

// A 2D depthwise convolution (one group per channel), the layer of MobileNet-style networks.
static bool depthwise_2d(const IrGraph& g, const IrNode& n) {
  if (n.op != "Conv" || n.absorbed || n.inputs.size() < 2) return false;
  const std::vector<int64_t>& w = g.value(n.inputs[1]).dims;
  const std::vector<int64_t>& x = g.value(n.inputs[0]).dims;
  if (w.size() != 4 || x.size() != 4 || w[1] != 1 || x[1] < 2) return false;
  return sdk::Attributes(*n.view).get_int("group", 1) == x[1];
}

// oneDNN's vector ISA family on this CPU: 16 for AVX-512, 8 for AVX2, 0 below (no jit kernels
// for blocked layouts worth forcing: oneDNN then chooses the layout itself).
static int64_t isa_block_width() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core:
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_amx:
      return 16;
    case dnnl::cpu_isa::avx2:
    case dnnl::cpu_isa::avx2_vnni:
      return 8;
    default:
      return 0;
  }
}

// AMD family 19h (Zen 3 and Zen 4; only Zen 4 has AVX-512) issues each 512-bit operation as
// two 256-bit halves. Zen 5 (family 1Ah) and Intel CPUs have full-width AVX-512 units, where
// padding to 16 channels costs less than running the 8-channel AVX2 kernels.
static bool avx512_is_double_pumped() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
  bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  unsigned family = ((eax >> 8) & 0xf) + (((eax >> 8) & 0xf) == 0xf ? ((eax >> 20) & 0xff) : 0);
  return family == 0x19;
#else
  return false;
#endif
}

// A Mul of two computed 4D tensors, one of them [N, C, 1, 1] and the other not (the scale of
// a squeeze-and-excitation block), in a subgraph whose depthwise convolutions all have whole
// 16-channel blocks (one that has not runs in nChw8c or, forced to 16c, in nhwc with reorders).
static bool has_channel_scale(const IrGraph& g) {
  for (const IrNode& n : g.nodes)
    if (depthwise_2d(g, n) && g.value(n.inputs[0]).dims[1] % 16 != 0) return false;
  for (const IrNode& n : g.nodes) {
    if (n.absorbed || n.op != "Mul" || n.inputs.size() != 2 || n.inputs[0] < 0 || n.inputs[1] < 0)
      continue;
    const IrValue& a = g.value(n.inputs[0]);
    const IrValue& b = g.value(n.inputs[1]);
    if (a.constant() || b.constant() || a.dims.size() != 4 || b.dims.size() != 4) continue;
    auto pooled = [](const IrValue& v) { return v.dims[2] == 1 && v.dims[3] == 1; };
    if (pooled(a) != pooled(b)) return true;
  }
  return false;
}

std::unique_ptr<Program> Builder::build() {
  program_->input_slots.assign(g_.inputs.size(), -1);
  static const int64_t kIsaBlockWidth = isa_block_width();
  static const bool kDoublePumped = avx512_is_double_pumped();
  block_width_ = kIsaBlockWidth;
  // oneDNN 2.6 has no JIT binary kernel for an nChw8c operand: a squeeze-and-excitation
  // scale (x * s, s of [N, C, 1, 1] computed from x) on an nChw8c tensor costs a reorder of x
  // to plain and one back (EfficientNet-B0: 43 reorders, 4% of its time), more than 8c saves.
  narrow_blocks_pay_ = kIsaBlockWidth == 16 && kDoublePumped && !has_channel_scale(g_);
  blocked_convolutions_ =
      block_width_ > 0 && program_->options.conv_layout == DeviceOptions::ConvLayout::kBlocked;
  // In f32, nChw16c is what Winograd needs, and in depthwise networks it measured 5-8% less
  // CPU time than the nhwc oneDNN picks by itself (its jit 1x1 and depthwise kernels chain
  // without reorders, reading the 3-channel image directly, and 1x1 + depthwise pairs fuse).
  if (block_width_ > 0 && !program_->options.bf16 &&
      program_->options.conv_layout == DeviceOptions::ConvLayout::kAuto)
    for (const IrNode& n : g_.nodes)
      blocked_convolutions_ = blocked_convolutions_ || depthwise_2d(g_, n) ||
                              (program_->options.winograd != DeviceOptions::Winograd::kOff &&
                               winograd_candidate(g_, n));
  if (program_->options.bf16) precision_ = plan_precision(g_, program_->options.bf16_keep);
  // Emission order: node order, a deferred node (IrNode::emit_after) right after its node
  // (which may be deferred itself).
  std::vector<int> order;
  {
    std::vector<std::vector<int>> deferred(g_.nodes.size());
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (g_.nodes[k].emit_after >= 0)
        deferred[static_cast<size_t>(g_.nodes[k].emit_after)].push_back(static_cast<int>(k));
    std::function<void(int)> place = [&](int k) {
      order.push_back(k);
      for (int d : deferred[static_cast<size_t>(k)]) place(d);
    };
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (g_.nodes[k].emit_after < 0) place(static_cast<int>(k));
    if (order.size() != g_.nodes.size())
      sdk::fail(LOOM_ERROR_INTERNAL, "onednn: a cycle of deferred nodes");
    position_.assign(g_.nodes.size(), 0);
    for (size_t i = 0; i < order.size(); ++i)
      position_[static_cast<size_t>(order[i])] = static_cast<int>(i);
  }
  // Per node: the constants it is the last reader of. Emitters read constants of the node
  // they emit and of later nodes they fuse, never of earlier ones, so once the loop is past a
  // constant's last reader nothing reads its bytes again except through keep_constant.
  std::vector<std::vector<int>> last_read(g_.nodes.size());
  if (constant_copied_) {
    std::vector<int> last(g_.values.size(), -1);
    for (int k : order)
      for (int id : g_.nodes[k].inputs)
        if (id >= 0) last[id] = k;
    for (size_t id = 0; id < last.size(); ++id)
      if (last[id] >= 0) last_read[last[id]].push_back(static_cast<int>(id));
  }
  std::vector<bool> absorbed_before(g_.nodes.size());
  for (int k : order) {
    if (!g_.nodes[k].absorbed) {
      current_node_ = k;
      const size_t first_step = program_->steps.size();
      for (size_t j = 0; j < g_.nodes.size(); ++j) absorbed_before[j] = g_.nodes[j].absorbed;
      try {
        emit(k);
      } catch (const dnnl::error& e) {
        const IrNode& n = g_.nodes[k];
        sdk::fail(LOOM_ERROR_UNSUPPORTED, "onednn: " + n.op + " node '" + n.view->name +
                                              "': oneDNN refused it: " + e.what());
      }
      attribute_steps(k, first_step, absorbed_before);
    }
    release_constants_read_last_by(k, last_read);
  }
  // The rest ran at compile: Constant nodes (their tensors are constants of the program) and
  // anything a rewrite folded away without a node to carry it. Reported as zero-length steps
  // after the last step.
  {
    std::vector<bool> covered(g_.nodes.size(), false);
    for (const Step& s : program_->steps)
      for (int32_t n : s.nodes) covered[static_cast<size_t>(n)] = true;
    for (const StepFreeNode& f : program_->step_free_nodes)
      covered[static_cast<size_t>(f.node)] = true;
    for (size_t k = 0; k < g_.nodes.size(); ++k)
      if (!covered[k])
        program_->step_free_nodes.push_back(
            {std::numeric_limits<size_t>::max(), static_cast<int32_t>(k), g_.nodes[k].view->name,
             g_.nodes[k].op == "Constant" ? "Constant: made at compile"
                                          : "folded away at compile (" + g_.nodes[k].op + ")"});
  }
  bind_outputs();
  plan_memory();
  if (program_->options.verbose)
    for (const Step& s : program_->steps) sdk::log(LOOM_LOG_INFO, "onednn", s.label);
  return std::move(program_);
}

}  // namespace loom::onednn
