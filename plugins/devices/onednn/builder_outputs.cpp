// What a compiled program hands back and what may vary in it: the graph outputs bound to their
// slots (copied into plain layout where a value is blocked or a view), and the input axes the
// device's own kernels run at any extent (plugin ABI 1.8 free_axis), with the outputs that
// grow with them.
#include <algorithm>

#include "builder.hpp"

namespace loom::onednn {

using dt = dnnl::memory::data_type;

void Builder::bind_outputs() {
  std::vector<int> taken;  // slots already bound to an output
  auto is_taken = [&](int s) { return std::find(taken.begin(), taken.end(), s) != taken.end(); };
  for (int value : g_.outputs) {
    const IrValue& v = g_.value(value);
    if (v.constant() && v.dtype != LOOM_DTYPE_FLOAT32) {
      // A non-float constant (e.g. a shape) read outside: a byte copy.
      dnnl::memory::desc bytes({static_cast<int64_t>(std::max<size_t>(v.data_size, 1))}, dt::u8,
                               dnnl::memory::dims{1});
      int src = new_slot(bytes, SlotKind::kConstant);
      program_->slots[src].constant = keep_constant(value);
      mem(src).set_data_handle(const_cast<void*>(program_->slots[src].constant));
      int out = new_slot(bytes, SlotKind::kOutput);
      add_device_step(dnnl::reorder(mem(src), mem(out)), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, out}},
                      "output " + v.name);
      program_->outputs.push_back({out, v.dims, v.dtype, v.data_size});
      continue;
    }
    int s = slot_of(value);
    const dt type = memory_type(v.dtype);
    dnnl::memory::desc md = program_->slots[s].md;
    const Slot& slot = program_->slots[s];
    bool direct = slot.root == s && slot.kind == SlotKind::kInternal && !is_taken(s) &&
                  is_plain(md) && md.data_type() == type && !v.dims.empty() &&
                  md.dims() == dnnl::memory::dims(v.dims.begin(), v.dims.end());
    if (!direct && slot.root != s && is_plain(md) && md.data_type() == type &&
        md.dims() == dnnl::memory::dims(v.dims.begin(), v.dims.end())) {
      // A plain view of all of an internal buffer's plain bytes (a product computed in 2-D,
      // ops_matmul.cpp): the buffer itself becomes the output, with no copy.
      const Slot& root = program_->slots[slot.root];
      if (root.kind == SlotKind::kInternal && !is_taken(slot.root) && is_plain(root.md) &&
          root.md.data_type() == type && root.md.get_size() == md.get_size()) {
        s = slot.root;
        direct = true;
      }
    }
    if (!direct) {
      dnnl::memory::desc out_md = plain_md(v.dims, type);
      if (md.dims() != out_md.dims()) {
        // A rank-padded or scalar view: copy its plain bytes under the output's shape.
        s = view(as_plain(value), plain_md(v.dims, md.data_type()));
        md = program_->slots[s].md;
      }
      int out = new_slot(out_md, SlotKind::kOutput);
      dnnl::reorder::primitive_desc pd(program_->engine, md, program_->engine, out_md);
      add_device_step(dnnl::reorder(pd), {{DNNL_ARG_FROM, s}, {DNNL_ARG_TO, out}},
                      "output " + v.name);
      s = out;
    }
    program_->slots[s].kind = SlotKind::kOutput;
    taken.push_back(s);
    program_->outputs.push_back({s, v.dims, v.dtype, program_->slots[s].md.get_size()});
    for (const Follows& f : follows_)
      if (f.value == value) {
        // A copy step would be compiled for one extent: output_follows' callers check that
        // the value is bound directly.
        if (!direct) sdk::fail(LOOM_ERROR_INTERNAL, "onednn: a growing output needs a copy");
        program_->outputs.back().grows_with = f.axis;
        program_->outputs.back().grow_dim = f.dim;
      }
  }
}

bool Builder::free_axis_allowed(int value, int axis) {
  if (!free_axis_ || value < 0) return false;
  const IrValue& v = g_.value(value);
  if (!v.graph_input || v.graph_output || v.dtype != LOOM_DTYPE_FLOAT32 ||
      v.consumers.size() != 1 || axis < 0 || static_cast<size_t>(axis) >= v.dims.size())
    return false;
  const int s = slot_of(value);
  return program_->slots[s].kind == SlotKind::kInput && is_plain(program_->slots[s].md);
}

bool Builder::growing_output_allowed(int value) {
  if (value < 0) return false;
  const IrValue& v = g_.value(value);
  return v.graph_output && v.consumers.empty() && v.dtype == LOOM_DTYPE_FLOAT32 &&
         std::count(g_.outputs.begin(), g_.outputs.end(), value) == 1;
}

int Builder::free_input_axis(int value, int axis) {
  if (!free_axis_allowed(value, axis)) return -1;
  const IrValue& v = g_.value(value);
  for (size_t i = 0; i < g_.inputs.size(); ++i)
    if (g_.inputs[i] == value) {
      program_->free_axes.push_back({i, axis, v.dims});
      program_->run_extents->push_back(v.dims[static_cast<size_t>(axis)]);
      free_axis_(i, axis);
      return static_cast<int>(program_->free_axes.size()) - 1;
    }
  return -1;
}

}  // namespace loom::onednn
