// Session::run: binds the application's inputs, moves tensors between devices at subgraph
// boundaries, runs every compiled part in order and hands the outputs back (session.cpp builds
// and compiles the plan this executes).
#include <cstdlib>
#include <cstring>

#include "session.hpp"
#include "status.hpp"

namespace loom::core {
namespace {

// Host copy of a tensor for the application. STRING tensors are packed into one block: the
// loom_string_t array followed by the bytes, so one free() releases everything.
void to_host(const loom_tensor_t& t, const void* host_data, loom_host_tensor_t& out) {
  out.struct_size = sizeof out;
  out.dtype = t.dtype;
  out.rank = t.rank;
  for (int32_t i = 0; i < t.rank; ++i) out.dims[i] = t.dims[i];
  size_t count = 1;
  for (int32_t i = 0; i < t.rank; ++i) count *= static_cast<size_t>(t.dims[i]);
  if (t.dtype == LOOM_DTYPE_STRING) {
    const auto* in = static_cast<const loom_string_t*>(host_data);
    size_t bytes = count * sizeof(loom_string_t);
    for (size_t i = 0; i < count; ++i) bytes += in[i].size;
    char* block = static_cast<char*>(std::malloc(bytes ? bytes : 1));
    if (!block) fail(LOOM_ERROR_OUT_OF_MEMORY, "out of memory copying an output");
    auto* views = reinterpret_cast<loom_string_t*>(block);
    char* cursor = block + count * sizeof(loom_string_t);
    for (size_t i = 0; i < count; ++i) {
      if (in[i].size) std::memcpy(cursor, in[i].data, in[i].size);
      views[i] = {cursor, in[i].size};
      cursor += in[i].size;
    }
    out.data = block;
    out.byte_size = count * sizeof(loom_string_t);
    return;
  }
  size_t bytes = count * dtype_size(t.dtype);
  void* p = std::malloc(bytes ? bytes : 1);
  if (!p) fail(LOOM_ERROR_OUT_OF_MEMORY, "out of memory copying an output");
  if (bytes) std::memcpy(p, host_data, bytes);
  out.data = p;
  out.byte_size = bytes;
}

}  // namespace

void Session::run(size_t num_inputs, const char* const* names, const loom_host_tensor_t* inputs,
                  size_t num_outputs, loom_host_tensor_t* outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Graph& g = *model_->graph;
  if (num_inputs && (!names || !inputs))
    fail(LOOM_ERROR_INVALID_ARGUMENT, "input names or tensors are NULL");
  if (num_outputs < g.outputs.size() || (g.outputs.size() && !outputs))
    fail(LOOM_ERROR_INVALID_ARGUMENT,
         "room for " + std::to_string(g.outputs.size()) + " outputs is needed");

  // Bind and check the inputs.
  std::vector<const loom_host_tensor_t*> given(g.values.size(), nullptr);
  std::set<int> fed;
  for (size_t i = 0; i < num_inputs; ++i) {
    std::string name = names[i] ? names[i] : "";
    int id = g.find(name);
    if (id < 0 || !g.values[id].graph_input) {
      std::string list;
      for (int in : g.inputs)
        if (!g.values[in].constant) list += (list.empty() ? "" : ", ") + g.values[in].name;
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "the model has no input '" + name + "' (its inputs: " + list + ")");
    }
    if (given[id]) fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' is given twice");
    const Value& v = g.values[id];
    const loom_host_tensor_t& t = inputs[i];
    if (t.rank < 0 || t.rank > LOOM_MAX_RANK)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' has an invalid rank");
    Shape s;
    s.rank = t.rank;
    s.dims.assign(t.dims, t.dims + t.rank);
    for (int64_t d : s.dims)
      if (d < 0) fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' has a negative dimension");
    if (v.dtype != LOOM_DTYPE_UNDEFINED && t.dtype != v.dtype)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' is " + dtype_name(t.dtype) +
                                            " but the model expects " + dtype_name(v.dtype));
    if (v.shape.rank >= 0 && depth_ == 0) {  // bodies: see finish_construction
      bool ok = v.shape.rank == t.rank;
      for (int32_t d = 0; ok && d < t.rank; ++d)
        if (v.shape.dims[d] >= 0 && v.shape.dims[d] != t.dims[d]) ok = false;
      if (!ok && !v.constant)
        fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' has shape " + s.to_string() +
                                              " but the model expects " + v.shape.to_string());
    }
    size_t expect = t.dtype == LOOM_DTYPE_STRING
                        ? static_cast<size_t>(s.element_count()) * sizeof(loom_string_t)
                        : tensor_bytes(t.dtype, s);
    if (t.dtype != LOOM_DTYPE_STRING && dtype_size(t.dtype) == 0)
      fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' has an unsupported element type");
    if (t.byte_size != expect || (expect && !t.data))
      fail(LOOM_ERROR_INVALID_ARGUMENT, "input '" + name + "' has " + std::to_string(t.byte_size) +
                                            " bytes of data, but shape " + s.to_string() + " " +
                                            dtype_name(t.dtype) + " needs " +
                                            std::to_string(expect));
    given[id] = &t;
    if (v.constant) fed.insert(id);
  }
  for (int id : g.inputs)
    if (!given[id] && !g.values[id].constant)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           "input '" + g.values[id].name + "' is required but was not given");

  // Find or build the compiled plan for these shapes.
  std::string key;
  std::vector<ValueFacts> input_facts(g.values.size());
  for (int id : g.inputs) {
    if (!given[id]) continue;
    const loom_host_tensor_t& t = *given[id];
    ValueFacts& f = input_facts[id];
    f.known = true;
    f.dtype = t.dtype;
    f.shape.rank = t.rank;
    f.shape.dims.assign(t.dims, t.dims + t.rank);
    key += std::to_string(id) + ":" + std::to_string(t.dtype) + ":" + f.shape.to_string() + ";";
  }
  auto it = prepared_.find(key);
  if (it == prepared_.end()) {
    if (prepared_.size() >= 8) {  // bound the cache for models fed ever-changing shapes
      for (auto& [k, p] : prepared_) release(*p);
      prepared_.clear();
    }
    it = prepared_.emplace(key, prepare(input_facts, fed)).first;
  }
  Prepared& p = *it->second;
  current_ = &p;

  // Values in flight: where each lives and who frees it.
  struct Slot {
    bool present = false;
    loom_tensor_t t{};
    int device = -1;  // -1: host memory not owned by a device
    int remaining = 0;
    std::shared_ptr<void> owner;  // host memory a control-flow step made
  };
  std::vector<Slot> slots(g.values.size());
  auto free_slot = [&](Slot& s) {
    if (s.present && s.device >= 0 && s.t.buffer)
      devices_[s.device]->api().free_buffer(devices_[s.device]->handle(), s.t.buffer);
    s = Slot{};
  };
  struct Cleanup {
    std::vector<Slot>& slots;
    decltype(free_slot)& free_fn;
    ~Cleanup() {
      for (Slot& s : slots) free_fn(s);
    }
  } cleanup{slots, free_slot};

  for (int id : g.inputs) {
    if (!given[id]) continue;
    const loom_host_tensor_t& h = *given[id];
    Slot& s = slots[id];
    s.present = true;
    s.t.struct_size = sizeof s.t;
    s.t.dtype = h.dtype;
    s.t.rank = h.rank;
    for (int32_t d = 0; d < h.rank; ++d) s.t.dims[d] = h.dims[d];
    s.t.data = h.data;
    s.t.byte_size = h.byte_size;
    s.remaining = p.consumers[id];
  }

  // A value as a host tensor for a control-flow step (copied out of remote memory).
  std::map<int, HostValue> step_values;  // made by steps, read by later steps of the part
  auto host_value = [&](int id) -> HostValue {
    HostValue h;
    if (id < 0) return h;
    if (auto it = step_values.find(id); it != step_values.end()) return it->second;
    const Value& v = g.values[id];
    if (v.constant && !fed.count(id)) {
      h.present = true;
      h.t.struct_size = sizeof h.t;
      h.t.dtype = v.constant->dtype;
      h.t.rank = static_cast<int32_t>(v.constant->dims.size());
      for (int32_t d = 0; d < h.t.rank; ++d) h.t.dims[d] = v.constant->dims[d];
      h.t.data = const_cast<void*>(v.constant->data);
      h.t.byte_size = v.constant->size;
      return h;
    }
    Slot& s = slots[id];
    if (!s.present) fail(LOOM_ERROR_INTERNAL, "value '" + v.name + "' was not computed before use");
    if (s.t.data || !s.t.byte_size) {
      h.present = true;
      h.t = s.t;
      h.t.buffer = nullptr;
      h.t.offset = 0;
      h.owner = s.owner;
      return h;
    }
    std::vector<int64_t> dims(s.t.dims, s.t.dims + s.t.rank);
    h = allocate_host_value(s.t.dtype, dims);
    if (host_value_bytes(h.t) != s.t.byte_size)
      fail(LOOM_ERROR_INTERNAL,
           "value '" + v.name + "' has a byte size that does not match its shape");
    DeviceInstance& from = *devices_[s.device];
    throw_if_error(
        from.api().copy_to_host(from.handle(), s.t.buffer, s.t.offset, h.t.data, s.t.byte_size),
        "copy from device '" + from.name() + "'");
    return h;
  };

  for (size_t si = 0; si < subgraphs_.size(); ++si) {
    Prepared::Part& part = p.parts[si];
    if (subgraphs_[si].device == host_step_device()) {
      step_values.clear();
      for (int k : subgraphs_[si].nodes) {
        const Node& node = g.nodes[k];
        std::vector<HostValue> ins;
        for (int id : node.inputs) ins.push_back(host_value(id));
        std::map<int, HostValue> outer;
        for (int id : node.implicit_inputs) outer[id] = host_value(id);
        std::vector<HostValue> outs = run_step(k, ins, outer);
        for (size_t i = 0; i < node.outputs.size() && i < outs.size(); ++i)
          if (node.outputs[i] >= 0) step_values[node.outputs[i]] = outs[i];
      }
      for (int id : part.outputs) {
        auto it = step_values.find(id);
        if (it == step_values.end() || !it->second.present)
          fail(LOOM_ERROR_INVALID_ARGUMENT,
               "output '" + g.values[id].name + "' of a control-flow step was not produced");
        Slot& s = slots[id];
        s.present = true;
        s.t = it->second.t;
        s.device = -1;
        s.owner = it->second.owner;
        s.remaining = p.consumers[id];
        if (s.remaining == 0) free_slot(s);
      }
      step_values.clear();
      for (int id : part.inputs) {
        Slot& s = slots[id];
        if (--s.remaining <= 0 && !g.values[id].graph_output) free_slot(s);
      }
      continue;
    }
    int dev_index = static_cast<int>(subgraphs_[si].device);
    DeviceInstance& dev = *devices_[dev_index];
    std::vector<loom_tensor_t> ins(part.inputs.size());
    std::vector<loom_buffer_t*> staged;
    struct StageCleanup {
      DeviceInstance& dev;
      std::vector<loom_buffer_t*>& bufs;
      ~StageCleanup() {
        for (loom_buffer_t* b : bufs) dev.api().free_buffer(dev.handle(), b);
      }
    } stage_cleanup{dev, staged};
    for (size_t i = 0; i < part.inputs.size(); ++i) {
      Slot& s = slots[part.inputs[i]];
      if (!s.present)
        fail(LOOM_ERROR_INTERNAL,
             "value '" + g.values[part.inputs[i]].name + "' was not computed before use");
      loom_tensor_t t = s.t;
      bool src_host_visible = s.device < 0 || devices_[s.device]->host_memory();
      if (s.device < 0 && !t.data && t.byte_size)
        fail(LOOM_ERROR_INTERNAL, "value '" + g.values[part.inputs[i]].name + "' has no data");
      if (s.device == dev_index) {
        // Same device: as is.
      } else if (src_host_visible && dev.host_memory() && t.data) {
        t.buffer = nullptr;  // zero copy: the host pointer is all the device needs
        t.offset = 0;
      } else {
        std::vector<uint8_t> bounce;
        const void* src = t.data;
        if (!src && t.byte_size) {
          bounce.resize(t.byte_size);
          DeviceInstance& from = *devices_[s.device];
          throw_if_error(from.api().copy_to_host(from.handle(), t.buffer, t.offset, bounce.data(),
                                                 t.byte_size),
                         "copy from device '" + from.name() + "'");
          src = bounce.data();
        }
        loom_buffer_t* buf = nullptr;
        throw_if_error(dev.api().alloc(dev.handle(), std::max<size_t>(t.byte_size, 1), &buf),
                       "allocation on device '" + dev.name() + "'");
        staged.push_back(buf);
        if (t.byte_size)
          throw_if_error(dev.api().copy_from_host(dev.handle(), src, buf, 0, t.byte_size),
                         "copy to device '" + dev.name() + "'");
        t.buffer = buf;
        t.offset = 0;
        t.data = dev.api().buffer_host_ptr(dev.handle(), buf);
      }
      ins[i] = t;
    }
    std::vector<loom_tensor_t> outs(part.outputs.size());
    for (loom_tensor_t& o : outs) {
      std::memset(&o, 0, sizeof o);
      o.struct_size = sizeof o;
    }
    loom_run_args_t args;
    std::memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.num_inputs = ins.size();
    args.inputs = ins.data();
    args.num_outputs = outs.size();
    args.outputs = outs.data();
    throw_if_error(dev.api().run(dev.handle(), part.exe, &args));
    for (size_t i = 0; i < part.outputs.size(); ++i) {
      Slot& s = slots[part.outputs[i]];
      s.present = true;
      s.t = outs[i];
      s.device = dev_index;
      s.remaining = p.consumers[part.outputs[i]];
      if (s.remaining == 0) free_slot(s);
    }
    for (int id : part.inputs) {
      Slot& s = slots[id];
      if (--s.remaining <= 0 && !g.values[id].graph_output) free_slot(s);
    }
  }

  // Outputs to the application.
  size_t done = 0;
  try {
    for (; done < g.outputs.size(); ++done) {
      int id = g.outputs[done];
      const Value& v = g.values[id];
      loom_host_tensor_t& out = outputs[done];
      std::memset(&out, 0, sizeof out);
      Slot& s = slots[id];
      if (s.present) {
        const void* src = s.t.data;
        std::vector<uint8_t> bounce;
        if (!src && s.t.byte_size) {
          bounce.resize(s.t.byte_size);
          DeviceInstance& from = *devices_[s.device];
          throw_if_error(from.api().copy_to_host(from.handle(), s.t.buffer, s.t.offset,
                                                 bounce.data(), s.t.byte_size),
                         "copy from device '" + from.name() + "'");
          src = bounce.data();
        }
        to_host(s.t, src, out);
      } else if (v.constant) {
        loom_tensor_t t{};
        t.dtype = v.constant->dtype;
        t.rank = static_cast<int32_t>(v.constant->dims.size());
        for (int32_t d = 0; d < t.rank; ++d) t.dims[d] = v.constant->dims[d];
        to_host(t, v.constant->data, out);
      } else {
        fail(LOOM_ERROR_INTERNAL, "output '" + v.name + "' was not computed");
      }
    }
  } catch (...) {
    for (size_t i = 0; i < done; ++i) std::free(outputs[i].data);
    throw;
  }
}

}  // namespace loom::core
