// Verification and indexing of a .tflite flatbuffer (see model_view.hpp).
#include "model_view.hpp"

#include <flatbuffers/flatbuffers.h>

#include <algorithm>
#include <cmath>
#include <loom/plugin.hpp>
#include <set>
#include <unordered_map>

#include "op_codes.hpp"
#include "sparsity.hpp"
#include "tflite_subset_generated.h"

namespace loom::tflite {
namespace fb = loom::tflite_schema;
namespace {

[[noreturn]] void invalid(const std::string& message) {
  sdk::fail(LOOM_ERROR_INVALID_MODEL, "tflite: " + message);
}
[[noreturn]] void unsupported(const std::string& message) {
  sdk::fail(LOOM_ERROR_UNSUPPORTED, "tflite: " + message);
}

// Maps a TFLite tensor type to Loom's; UNDEFINED for types the plugin cannot carry.
loom_dtype_t to_loom_dtype(fb::TensorType type) {
  switch (type) {
    case fb::TensorType::FLOAT32:
      return LOOM_DTYPE_FLOAT32;
    case fb::TensorType::FLOAT16:
      return LOOM_DTYPE_FLOAT16;
    case fb::TensorType::INT32:
      return LOOM_DTYPE_INT32;
    case fb::TensorType::UINT8:
      return LOOM_DTYPE_UINT8;
    case fb::TensorType::INT64:
      return LOOM_DTYPE_INT64;
    case fb::TensorType::BOOL:
      return LOOM_DTYPE_BOOL;
    case fb::TensorType::INT16:
      return LOOM_DTYPE_INT16;
    case fb::TensorType::INT8:
      return LOOM_DTYPE_INT8;
    case fb::TensorType::FLOAT64:
      return LOOM_DTYPE_FLOAT64;
    case fb::TensorType::UINT64:
      return LOOM_DTYPE_UINT64;
    case fb::TensorType::UINT32:
      return LOOM_DTYPE_UINT32;
    case fb::TensorType::UINT16:
      return LOOM_DTYPE_UINT16;
    default:
      return LOOM_DTYPE_UNDEFINED;
  }
}

std::string describe_tensor(int32_t index, const std::string& name) {
  return "tensor " + std::to_string(index) + " '" + name + "'";
}

Quantization read_quantization(const fb::QuantizationParameters* q, const std::string& where,
                               const std::vector<int64_t>& shape) {
  Quantization result;
  if (!q || !q->scale() || q->scale()->size() == 0) return result;
  if (q->details_type() != fb::QuantizationDetails::NONE)
    unsupported(where +
                " uses custom quantization details; only linear scale/zero-point "
                "quantization is supported");
  for (float s : *q->scale()) {
    if (!(s > 0.f) || !std::isfinite(s))
      invalid(where + " has quantization scale " + std::to_string(s) +
              "; scales must be finite and positive");
    result.scales.push_back(s);
  }
  const size_t n = result.scales.size();
  if (q->zero_point() && q->zero_point()->size() != 0) {
    if (q->zero_point()->size() != n)
      invalid(where + " has " + std::to_string(n) + " quantization scales but " +
              std::to_string(q->zero_point()->size()) + " zero points");
    for (int64_t z : *q->zero_point()) result.zero_points.push_back(z);
  } else {
    result.zero_points.assign(n, 0);
  }
  result.axis = q->quantized_dimension();
  if (n > 1) {
    if (result.axis < 0 || static_cast<size_t>(result.axis) >= shape.size())
      invalid(where + " has quantized_dimension " + std::to_string(result.axis) +
              " outside its rank " + std::to_string(shape.size()));
    if (shape[result.axis] != static_cast<int64_t>(n))
      invalid(where + " has " + std::to_string(n) + " per-channel scales but dimension " +
              std::to_string(result.axis) + " has " + std::to_string(shape[result.axis]) +
              " entries");
  }
  return result;
}

}  // namespace

ModelView::ModelView(const uint8_t* data, size_t size) {
  if (!data || size < 8)
    invalid("the file is too short to be a TFLite model (" + std::to_string(size) + " bytes)");
  if (!fb::ModelBufferHasIdentifier(data))
    invalid("the file lacks the TFLite identifier 'TFL3' at byte 4; it is not a .tflite model");
  if (size > FLATBUFFERS_MAX_BUFFER_SIZE)
    unsupported("the file is " + std::to_string(size) +
                " bytes; flatbuffer models must be smaller than 2 GiB");
  // Depth 64 and 1M tables bound the verifier's own work on hostile files.
  flatbuffers::Verifier verifier(data, size, 64, 1000000);
  if (!fb::VerifyModelBuffer(verifier))
    invalid(
        "the flatbuffer failed verification (truncated file, or offsets/vectors outside "
        "the buffer); the file is corrupt");
  const fb::Model* model = fb::GetModel(data);
  version_ = model->version();
  if (version_ != 3)
    unsupported("schema version " + std::to_string(version_) + " (only version 3 is read)");
  if (model->description()) description_ = model->description()->str();
  if (!model->subgraphs() || model->subgraphs()->size() == 0) invalid("the model has no subgraph");
  if (model->subgraphs()->size() > 1)
    sdk::log(LOOM_LOG_INFO, "tflite",
             "the model has " + std::to_string(model->subgraphs()->size()) +
                 " subgraphs; the first (main) one is loaded");
  const fb::SubGraph* subgraph = model->subgraphs()->Get(0);
  file_size_ = size;
  read_tensors(subgraph, model);
  read_operators(subgraph, model);
  fold_densify();
  auto read_indices = [&](const flatbuffers::Vector<int32_t>* list, const char* what) {
    std::vector<int32_t> result;
    if (!list) return result;
    for (int32_t i : *list) {
      if (i < 0 || static_cast<size_t>(i) >= tensors_.size())
        invalid(std::string("graph ") + what + " names tensor " + std::to_string(i) +
                ", but the subgraph has " + std::to_string(tensors_.size()) + " tensors");
      result.push_back(i);
    }
    return result;
  };
  inputs_ = read_indices(subgraph->inputs(), "input");
  outputs_ = read_indices(subgraph->outputs(), "output");
  if (outputs_.empty()) invalid("the main subgraph has no outputs");
  check_dataflow();
}

const TensorView& ModelView::tensor(int32_t index) const {
  if (index < 0 || static_cast<size_t>(index) >= tensors_.size())
    invalid("tensor index " + std::to_string(index) + " is out of range (" +
            std::to_string(tensors_.size()) + " tensors)");
  return tensors_[index];
}

void ModelView::read_tensors(const void* subgraph_ptr, const void* model_ptr) {
  const auto* subgraph = static_cast<const fb::SubGraph*>(subgraph_ptr);
  const auto* model = static_cast<const fb::Model*>(model_ptr);
  const auto* tensors = subgraph->tensors();
  if (!tensors) return;
  const size_t num_buffers = model->buffers() ? model->buffers()->size() : 0;
  std::unordered_map<std::string, int> name_uses;
  tensors_.reserve(tensors->size());
  for (uint32_t i = 0; i < tensors->size(); ++i) {
    const fb::Tensor* t = tensors->Get(i);
    TensorView view;
    view.index = static_cast<int32_t>(i);
    view.name = t->name() ? t->name()->str() : std::string();
    const std::string where = describe_tensor(view.index, view.name);
    view.dtype = to_loom_dtype(t->type());
    if (view.dtype == LOOM_DTYPE_UNDEFINED) {
      const std::string type_name = fb::EnumNameTensorType(t->type());
      unsupported(where + " has TFLite type " +
                  (type_name.empty() ? std::to_string(static_cast<int>(t->type())) : type_name) +
                  ", which Loom cannot represent");
    }
    int64_t elements = 1;
    if (t->shape()) {
      if (t->shape()->size() > LOOM_MAX_RANK)
        unsupported(where + " has rank " + std::to_string(t->shape()->size()) +
                    "; Loom supports at most " + std::to_string(LOOM_MAX_RANK));
      for (uint32_t d = 0; d < t->shape()->size(); ++d) {
        int64_t dim = t->shape()->Get(d);
        if (dim < 0 || dim > kMaxDim)
          invalid(where + " has dimension " + std::to_string(d) + " = " + std::to_string(dim) +
                  "; dimensions must be in [0, 2^31]");
        view.shape.push_back(dim);
        elements = dim == 0 ? 0
                            : (elements > kMaxTensorElements / dim ? kMaxTensorElements + 1
                                                                   : elements * dim);
      }
    }
    if (elements > kMaxTensorElements)
      invalid(where + " has more than 2^31 elements; the shape is absurd or corrupt");
    // A dynamic batch (shape_signature -1 in dimension 0) is loaded with the concrete batch
    // size stored in `shape`, which the converter's reshapes are computed with; other dynamic
    // dimensions are refused rather than silently fixed.
    if (t->shape_signature() && t->shape_signature()->size() == view.shape.size()) {
      for (uint32_t d = 0; d < view.shape.size(); ++d)
        if (t->shape_signature()->Get(d) < 0 && d != 0)
          unsupported(where + " has a dynamic dimension " + std::to_string(d) +
                      "; only a dynamic batch (dimension 0) is supported");
    }
    view.is_variable = t->is_variable();
    view.quant = read_quantization(t->quantization(), where, view.shape);
    view.quantized = !view.quant.scales.empty();
    if (t->buffer() >= num_buffers && t->buffer() != 0)
      invalid(where + " refers to buffer " + std::to_string(t->buffer()) + ", but the model has " +
              std::to_string(num_buffers) + " buffers");
    if (t->buffer() != 0 && t->buffer() < num_buffers) {
      const fb::Buffer* buffer = model->buffers()->Get(t->buffer());
      if (buffer->offset() > 1 || buffer->size() > 0)
        unsupported(where +
                    " keeps its data outside the flatbuffer (a model over 2 GiB); "
                    "such models are not supported");
      if (t->sparsity()) {
        if (!buffer->data() || buffer->data()->size() == 0)
          invalid(where + " has sparsity parameters but no values (only constants are sparse)");
        // Pruned weights may be far smaller than their dense form; a hostile file must not
        // make the loader allocate without bound.
        const size_t max_bytes = std::max<size_t>(size_t{256} << 20, 16 * file_size_);
        owned_.push_back(densify(t->sparsity(), view.shape, sdk::dtype_size(view.dtype),
                                 {buffer->data()->data(), buffer->data()->size()}, where,
                                 max_bytes));
        view.data = {owned_.back().data(), owned_.back().size()};
      } else if (buffer->data() && buffer->data()->size() > 0) {
        const size_t expected = static_cast<size_t>(elements) * sdk::dtype_size(view.dtype);
        if (buffer->data()->size() != expected)
          invalid(where + " has " + std::to_string(buffer->data()->size()) +
                  " bytes of data but its shape and type need " + std::to_string(expected));
        view.data = {buffer->data()->data(), buffer->data()->size()};
      }
    }
    if (t->sparsity() && view.data.empty())
      invalid(where + " has sparsity parameters but no values (only constants are sparse)");
    tensors_.push_back(std::move(view));
  }
  // Loom refers to values by name: empty or repeated TFLite names get a unique suffix.
  for (auto& view : tensors_) ++name_uses[view.name];
  std::set<std::string> taken;
  for (auto& view : tensors_) {
    if (view.name.empty() || name_uses[view.name] > 1 || taken.count(view.name))
      view.name = (view.name.empty() ? std::string("tensor") : view.name) + "#" +
                  std::to_string(view.index);
    taken.insert(view.name);
  }
}

void ModelView::read_operators(const void* subgraph_ptr, const void* model_ptr) {
  const auto* subgraph = static_cast<const fb::SubGraph*>(subgraph_ptr);
  const auto* model = static_cast<const fb::Model*>(model_ptr);
  if (!subgraph->operators()) return;
  const auto* codes = model->operator_codes();
  const size_t num_codes = codes ? codes->size() : 0;
  for (uint32_t i = 0; i < subgraph->operators()->size(); ++i) {
    const fb::Operator* op = subgraph->operators()->Get(i);
    OperatorView view;
    view.index = static_cast<int32_t>(i);
    view.raw = op;
    const std::string where = "operator " + std::to_string(i);
    if (op->opcode_index() >= num_codes)
      invalid(where + " uses operator code " + std::to_string(op->opcode_index()) +
              ", but the model declares " + std::to_string(num_codes));
    const fb::OperatorCode* code = codes->Get(op->opcode_index());
    // Newer files carry the code in builtin_code; older ones only in the deprecated byte.
    view.builtin_code = std::max<int32_t>(code->builtin_code(), code->deprecated_builtin_code());
    if (view.builtin_code == 32 /* CUSTOM */) {
      view.custom = true;
      view.custom_code = code->custom_code() ? code->custom_code()->str() : std::string();
      view.op_name = "custom operator '" + view.custom_code + "'";
    } else if (const char* name = builtin_op_name(view.builtin_code); name[0]) {
      view.op_name = name;
    } else {
      view.op_name = "builtin operator " + std::to_string(view.builtin_code);
    }
    auto indices = [&](const flatbuffers::Vector<int32_t>* list, bool allow_omitted) {
      std::vector<int32_t> result;
      if (!list) return result;
      for (int32_t t : *list) {
        if (t < (allow_omitted ? -1 : 0) || t >= static_cast<int32_t>(tensors_.size()))
          invalid(where + " (" + view.op_name + ") names tensor " + std::to_string(t) +
                  ", but the subgraph has " + std::to_string(tensors_.size()) + " tensors");
        result.push_back(t);
      }
      return result;
    };
    view.inputs = indices(op->inputs(), true);
    view.outputs = indices(op->outputs(), false);
    operators_.push_back(std::move(view));
  }
}

// DENSIFY turns a sparse constant into its dense form at run time in TFLite; here sparse
// constants are dense from the start, so the operator's output becomes that constant and the
// operator is dropped (its consumers then see constant weights, as in a dense model).
void ModelView::fold_densify() {
  std::vector<OperatorView> kept;
  kept.reserve(operators_.size());
  for (auto& op : operators_) {
    if (op.builtin_code != static_cast<int32_t>(BuiltinOp::kDensify)) {
      kept.push_back(std::move(op));
      continue;
    }
    const std::string where = "operator " + std::to_string(op.index) + " (DENSIFY)";
    if (op.inputs.size() != 1 || op.outputs.size() != 1 || op.inputs[0] < 0)
      invalid(where + " must have one input and one output");
    const TensorView& in = tensors_[op.inputs[0]];
    TensorView& out = tensors_[op.outputs[0]];
    if (!in.is_constant())
      unsupported(where + " densifies " + describe_tensor(in.index, in.name) +
                  ", which is not a constant; only constant sparse tensors are supported");
    if (out.is_constant() || in.dtype != out.dtype || in.shape != out.shape)
      invalid(where + " writes " + describe_tensor(out.index, out.name) +
              ", which is a constant or differs from its input in type or shape");
    out.data = in.data;
  }
  operators_ = std::move(kept);
}

// Operators come in execution order: every tensor an operator reads must be a constant, a
// graph input or written by an earlier operator; each tensor is written at most once. This
// also rules out cycles.
void ModelView::check_dataflow() const {
  std::vector<char> ready(tensors_.size(), 0), written(tensors_.size(), 0);
  for (const auto& op : operators_)
    for (int32_t t : op.outputs) written[t] = 1;
  // A variable (state) tensor no operator writes holds its initial value: ready from the start.
  for (const auto& t : tensors_)
    ready[t.index] = t.is_constant() || (t.is_variable && !written[t.index]);
  for (int32_t i : inputs_) ready[i] = 1;
  for (const auto& op : operators_) {
    for (int32_t t : op.inputs)
      if (t >= 0 && !ready[t])
        invalid("operator " + std::to_string(op.index) + " (" + op.op_name + ") reads " +
                describe_tensor(t, tensors_[t].name) +
                " before any operator writes it (operators out of order, or a cycle)");
    for (int32_t t : op.outputs) {
      if (ready[t])
        invalid("operator " + std::to_string(op.index) + " (" + op.op_name + ") writes " +
                describe_tensor(t, tensors_[t].name) +
                ", which is already a constant, a graph input or another operator's output");
      ready[t] = 1;
    }
  }
  for (int32_t t : outputs_)
    if (!ready[t])
      invalid("graph output " + describe_tensor(t, tensors_[t].name) + " is never written");
}

}  // namespace loom::tflite
