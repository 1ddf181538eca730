#include "device/executable.hpp"

#include <cstring>
#include <loom/plugin.hpp>

#include "ops/layout.hpp"

namespace loom::neon {
namespace {

class PoolRuntime final : public Runtime {
 public:
  explicit PoolRuntime(sdk::ThreadPool& pool) : pool_(pool) {}
  void parallel_for(size_t n, size_t grain,
                    const std::function<void(size_t, size_t)>& fn) const override {
    pool_.parallel_for(n, grain, fn);
  }
  int threads() const override { return pool_.threads(); }

 private:
  sdk::ThreadPool& pool_;
};

}  // namespace

Executable::Executable(const loom_graph_t& graph, sdk::ThreadPool& pool,
                       const CompileOptions& options)
    : pool_(pool) {
  num_values_ = graph.num_values;
  auto check_index = [&](int32_t v, const std::string& what) {
    if (v < -1 || (v >= 0 && static_cast<size_t>(v) >= num_values_))
      fail(LOOM_ERROR_INVALID_MODEL,
           what + " refers to value " + std::to_string(v) + " of " + std::to_string(num_values_));
  };
  constants_.resize(num_values_);
  for (size_t v = 0; v < num_values_; ++v) {
    const loom_value_info_t& info = *graph.values[v];
    if (!(info.flags & LOOM_VALUE_CONSTANT) || info.dtype != LOOM_DTYPE_FLOAT32) continue;
    if (info.rank < 0)
      fail(LOOM_ERROR_INVALID_MODEL, std::string("constant '") + info.name + "' has no shape");
    Tensor& t = constants_[v];
    t.dims.assign(info.dims, info.dims + info.rank);
    if (info.data_size != t.size() * sizeof(float) || (info.data_size && !info.data))
      fail(LOOM_ERROR_INVALID_MODEL, std::string("constant '") + info.name + "' holds " +
                                         std::to_string(info.data_size) + " bytes, its shape " +
                                         shape_text(t.dims) + " needs " +
                                         std::to_string(t.size() * sizeof(float)));
    // Read-only: ops never write their inputs.
    t.data = static_cast<float*>(const_cast<void*>(info.data));
  }
  for (size_t i = 0; i < graph.num_inputs; ++i) {
    int32_t v = graph.inputs[i];
    check_index(v, "subgraph input " + std::to_string(i));
    const loom_value_info_t& info = *graph.values[v];
    if (info.dtype != LOOM_DTYPE_FLOAT32 && info.dtype != LOOM_DTYPE_UNDEFINED)
      fail(LOOM_ERROR_UNSUPPORTED, std::string("neon: subgraph input '") + info.name + "' is " +
                                       sdk::dtype_name(info.dtype) + ", not float32");
    Input in{v, info.name, info.rank, {}};
    if (info.rank > 0) in.dims.assign(info.dims, info.dims + info.rank);
    inputs_.push_back(std::move(in));
  }
  for (size_t i = 0; i < graph.num_outputs; ++i) {
    check_index(graph.outputs[i], "subgraph output " + std::to_string(i));
    outputs_.push_back(graph.outputs[i]);
    output_names_.push_back(graph.values[graph.outputs[i]]->name);
  }

  std::vector<Step> node_steps;
  for (size_t n = 0; n < graph.num_nodes; ++n) {
    const loom_node_t& node = *graph.nodes[n];
    Step step;
    step.label = where(node);
    step.node = static_cast<int32_t>(n);
    step.name = node.name ? node.name : "";
    std::string reason = why_unsupported(graph, node);
    if (!reason.empty()) fail(LOOM_ERROR_UNSUPPORTED, step.label + ": " + reason);
    for (size_t i = 0; i < node.num_inputs; ++i) {
      check_index(node.inputs[i], step.label + ": input " + std::to_string(i));
      step.inputs.push_back(node.inputs[i]);
    }
    for (size_t i = 0; i < node.num_outputs; ++i) {
      check_index(node.outputs[i], step.label + ": output " + std::to_string(i));
      step.outputs.push_back(node.outputs[i]);
    }
    try {
      step.op = find_op(node)->create(graph, node, options);
    } catch (const sdk::Error& e) {
      throw sdk::Error(e.code(), step.label + ": " + e.what());
    }
    node_steps.push_back(std::move(step));
  }
  plan_layouts(graph, std::move(node_steps));

  // Every slot is released after the last step that reads or writes it, outputs excepted.
  const size_t slots = 2 * num_values_;
  std::vector<int64_t> last_use(slots, -1);
  for (size_t n = 0; n < steps_.size(); ++n) {
    for (int32_t v : steps_[n].inputs)
      if (v >= 0) last_use[static_cast<size_t>(v)] = int64_t(n);
    for (int32_t v : steps_[n].outputs)
      if (v >= 0) last_use[static_cast<size_t>(v)] = int64_t(n);
  }
  for (int32_t v : outputs_) last_use[static_cast<size_t>(v)] = -1;
  for (size_t v = 0; v < slots; ++v)
    if (last_use[v] >= 0)
      steps_[static_cast<size_t>(last_use[v])].release_after.push_back(static_cast<int32_t>(v));
  sdk::log(LOOM_LOG_DEBUG, "neon",
           "layout plan: " + std::to_string(layout_stats_.nodes) + " nodes, " +
               std::to_string(layout_stats_.packed_nodes) + " in NC4HW4, " +
               std::to_string(layout_stats_.packs) + " pack and " +
               std::to_string(layout_stats_.unpacks) + " unpack conversions");
}

void Executable::plan_layouts(const loom_graph_t& graph, std::vector<Step> node_steps) {
  const size_t count = node_steps.size();
  auto rank_of = [&](int32_t v) { return v >= 0 ? graph.values[v]->rank : -1; };
  // Which step produces each value (-1: subgraph input or constant).
  std::vector<int64_t> producer(num_values_, -1);
  for (size_t n = 0; n < count; ++n)
    for (int32_t v : node_steps[n].outputs)
      if (v >= 0) producer[static_cast<size_t>(v)] = int64_t(n);

  // A node can run packed if its op has a pack4 variant for it, the inputs it reads packed are
  // 4-D and so is every output.
  std::vector<bool> packed(count, false);
  for (size_t n = 0; n < count; ++n) {
    const Step& step = node_steps[n];
    bool any = false, fits = true;
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      if (!step.op->pack4_input(i)) continue;
      any = true;
      fits = fits && rank_of(step.inputs[i]) == 4;
    }
    for (int32_t v : step.outputs) fits = fits && (v < 0 || rank_of(v) == 4);
    packed[n] = any && fits;
  }
  // A packed node pays for itself only when it shares a packed value with another packed node:
  // the isolated ones (e.g. a lone Conv or Relu) stay NCHW and need no conversion at all.
  // Dropping them all at once is exact: an isolated node has no packed neighbour whose links
  // it could change.
  std::vector<std::vector<std::pair<size_t, size_t>>> consumers(num_values_);  // (step, input)
  for (size_t n = 0; n < count; ++n)
    for (size_t i = 0; i < node_steps[n].inputs.size(); ++i)
      if (node_steps[n].inputs[i] >= 0)
        consumers[static_cast<size_t>(node_steps[n].inputs[i])].emplace_back(n, i);
  auto has_packed_neighbour = [&](size_t n) {
    const Step& step = node_steps[n];
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int32_t v = step.inputs[i];
      if (v < 0 || !step.op->pack4_input(i)) continue;
      const int64_t p = producer[static_cast<size_t>(v)];
      if (p >= 0 && packed[static_cast<size_t>(p)]) return true;
    }
    for (int32_t v : step.outputs) {
      if (v < 0) continue;
      for (const auto& [m, i] : consumers[static_cast<size_t>(v)])
        if (packed[m] && node_steps[m].op->pack4_input(i)) return true;
    }
    return false;
  };
  std::vector<size_t> isolated;
  for (size_t n = 0; n < count; ++n)
    if (packed[n] && !has_packed_neighbour(n)) isolated.push_back(n);
  for (size_t n : isolated) packed[n] = false;

  // The layout each value is produced in, and the steps with the conversions between them.
  std::vector<bool> value_packed(num_values_, false);
  std::vector<bool> converted(num_values_, false);
  const auto nv = static_cast<int32_t>(num_values_);
  auto convert = [&](int32_t v, bool to_pack4) {
    if (!converted[static_cast<size_t>(v)]) {
      Step step;
      step.op = make_layout_conversion(to_pack4);
      step.label = std::string(to_pack4 ? "NC4HW4 pack" : "NC4HW4 unpack") + " of value '" +
                   graph.values[v]->name + "'";
      step.name = step.label;
      step.detail = to_pack4 ? "neon layout NCHW -> NC4HW4" : "neon layout NC4HW4 -> NCHW";
      step.inputs = {v};
      step.outputs = {v + nv};
      steps_.push_back(std::move(step));
      converted[static_cast<size_t>(v)] = true;
      ++(to_pack4 ? layout_stats_.packs : layout_stats_.unpacks);
    }
    return v + nv;
  };
  layout_stats_.nodes = count;
  for (size_t n = 0; n < count; ++n) {
    Step& step = node_steps[n];
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int32_t v = step.inputs[i];
      if (v < 0) continue;
      const bool wanted = packed[n] && step.op->pack4_input(i);
      if (wanted != value_packed[static_cast<size_t>(v)]) step.inputs[i] = convert(v, wanted);
    }
    for (int32_t v : step.outputs)
      if (v >= 0) value_packed[static_cast<size_t>(v)] = packed[n];
    if (packed[n]) ++layout_stats_.packed_nodes;
    step.detail =
        std::string("neon ") + graph.nodes[n]->op_type + (packed[n] ? " in NC4HW4" : " in NCHW");
    steps_.push_back(std::move(step));
  }
  // The core receives NCHW.
  for (int32_t& v : outputs_)
    if (value_packed[static_cast<size_t>(v)]) v = convert(v, false);
}

// The kit (Entries::run) has checked the number of inputs and that each is float32 (compile
// refuses other subgraph inputs); what remains is the shape the subgraph declares.
std::vector<Tensor> Executable::run_graph(std::span<const loom_tensor_t> inputs,
                                          const sdk::RunControl& control) const {
  if (inputs.size() != inputs_.size())
    fail(LOOM_ERROR_INTERNAL, "neon: the subgraph takes " + std::to_string(inputs_.size()) +
                                  " inputs, " + std::to_string(inputs.size()) + " given");
  std::vector<Tensor> values(2 * num_values_);
  std::vector<bool> present(2 * num_values_, false);
  for (size_t v = 0; v < num_values_; ++v)
    if (constants_[v].data || !constants_[v].dims.empty()) {
      values[v] = constants_[v];
      present[v] = constants_[v].data != nullptr || constants_[v].size() == 0;
    }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Input& spec = inputs_[i];
    const loom_tensor_t& in = inputs[i];
    std::string what = "neon: input '" + spec.name + "'";
    if (in.rank < 0 || in.rank > LOOM_MAX_RANK || (spec.rank >= 0 && in.rank != spec.rank))
      fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has rank " + std::to_string(in.rank) +
                                            ", expected " + std::to_string(spec.rank));
    Tensor t;
    t.dims.assign(in.dims, in.dims + in.rank);
    for (size_t d = 0; d < t.dims.size(); ++d)
      if (t.dims[d] < 0 || (d < spec.dims.size() && spec.dims[d] >= 0 && t.dims[d] != spec.dims[d]))
        fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has shape " + shape_text(t.dims) +
                                              ", which does not fit " + shape_text(spec.dims));
    if (t.size() > 0 && (!in.data || in.byte_size < t.size() * sizeof(float)))
      fail(LOOM_ERROR_INVALID_ARGUMENT, what + " has no host data or fewer bytes than its shape");
    t.data = static_cast<float*>(in.data);
    values[static_cast<size_t>(spec.value)] = std::move(t);
    present[static_cast<size_t>(spec.value)] = true;
  }

  PoolRuntime rt(pool_);
  std::vector<const Tensor*> in_ptrs;
  std::vector<Tensor> outs;
  // One step per node (the neon device fuses nothing and drops no node at compile), plus the
  // layout conversions it inserted, reported with no node. The clock is read only when the
  // host profiles this run.
  const bool profiling = control.profiling();
  for (const Step& step : steps_) {
    control.poll();
    const uint64_t start = profiling ? sdk::RunControl::now_ns() : 0;
    in_ptrs.clear();
    for (int32_t v : step.inputs) {
      if (v < 0) {
        in_ptrs.push_back(nullptr);
        continue;
      }
      if (!present[static_cast<size_t>(v)])
        fail(LOOM_ERROR_RUNTIME, step.label + ": an input has not been computed");
      in_ptrs.push_back(&values[static_cast<size_t>(v)]);
    }
    outs.assign(step.outputs.size(), Tensor{});
    try {
      step.op->run(in_ptrs, outs, rt);
    } catch (const sdk::Error& e) {
      throw sdk::Error(e.code(), step.label + ": " + e.what());
    } catch (const std::bad_alloc&) {
      throw sdk::Error(LOOM_ERROR_OUT_OF_MEMORY, step.label + ": out of memory");
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      values[static_cast<size_t>(step.outputs[i])] = std::move(outs[i]);
      present[static_cast<size_t>(step.outputs[i])] = true;
    }
    if (profiling)
      control.profile(
          step.name.c_str(), step.detail.c_str(),
          step.node >= 0 ? std::span<const int32_t>(&step.node, 1) : std::span<const int32_t>(),
          start, sdk::RunControl::now_ns());
    for (int32_t v : step.release_after) {
      values[static_cast<size_t>(v)] = Tensor{};
      present[static_cast<size_t>(v)] = false;
    }
  }
  std::vector<Tensor> results;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    auto v = static_cast<size_t>(outputs_[i]);
    if (!present[v])
      fail(LOOM_ERROR_RUNTIME, "neon: output '" + output_names_[i] + "' was not computed");
    results.push_back(values[v]);
  }
  return results;
}

void Executable::run(const loom_run_args_t& args) {
  std::vector<Tensor> results = run_graph(
      std::span<const loom_tensor_t>(args.inputs, args.num_inputs), sdk::RunControl(&args));
  for (size_t i = 0; i < results.size(); ++i) {
    const Tensor& t = results[i];
    if (t.dims.size() > LOOM_MAX_RANK)
      fail(LOOM_ERROR_UNSUPPORTED,
           "neon: an output has rank above " + std::to_string(LOOM_MAX_RANK));
    // Owned memory is shared; borrowed memory (a subgraph input or constant passed through)
    // is copied.
    const size_t bytes = t.size() * sizeof(float);
    std::unique_ptr<sdk::kit::HostBuffer> buffer;
    if (t.owner) {
      buffer = sdk::kit::HostBuffer::share(t.owner, t.data, bytes);
    } else {
      buffer = sdk::kit::HostBuffer::allocate(bytes, "neon output");
      if (bytes) std::memcpy(buffer->data, t.data, bytes);
    }
    sdk::kit::hand_over(std::move(buffer), LOOM_DTYPE_FLOAT32, t.dims, args.outputs[i], true);
  }
}

}  // namespace loom::neon
