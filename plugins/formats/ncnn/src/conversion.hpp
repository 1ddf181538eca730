// Shared state of the ncnn -> Loom graph conversion: the graph builder wrapped in small
// helpers, the weight reader, and the shape known for each ncnn blob.
//
// Layout: an ncnn blob of rank r (w; h,w; c,h,w; c,d,h,w, batch-free) becomes a tensor of rank
// r+1 with a leading batch dimension of 1, so ncnn's axis k is Loom's axis k+1.
#pragma once

#include <cstdint>
#include <loom/plugin.hpp>
#include <map>
#include <string>
#include <vector>

#include "param_dict.hpp"
#include "weight_reader.hpp"

namespace loom::ncnnfmt {

// Loom dims of a blob (batch first); -1 = unknown extent. Empty = rank unknown.
using Shape = std::vector<int64_t>;

class Context {
 public:
  Context(const loom_builder_api_t& api, loom_graph_builder_t* builder, WeightReader& weights)
      : api_(api), builder_(builder), weights_(weights) {}

  WeightReader& weights() { return weights_; }

  // ---- graph building ----
  // Adds a node; attributes are set on the returned builder with the attr_* helpers.
  loom_node_builder_t* node(const std::string& op, const std::string& name,
                            const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs);
  void attr(loom_node_builder_t* n, const char* name, int64_t value);
  void attr(loom_node_builder_t* n, const char* name, float value);
  void attr(loom_node_builder_t* n, const char* name, const std::string& value);
  void attr(loom_node_builder_t* n, const char* name, const std::vector<int64_t>& values);

  // Constants; return the value name (made unique from `hint`).
  std::string constant(const std::string& hint, const std::vector<int64_t>& dims,
                       const std::vector<float>& values);
  std::string constant_ints(const std::string& hint, const std::vector<int64_t>& values);
  // A constant under exactly `name` (an ncnn blob).
  void add_constant(const std::string& name, const std::vector<int64_t>& dims,
                    const std::vector<float>& values);
  void add_input(const std::string& name, const Shape& shape);
  void add_output(const std::string& name);

  // A fresh value name derived from `hint`.
  std::string temp(const std::string& hint);

  // ---- blob shapes ----
  const Shape& shape(const std::string& blob) const;
  void set_shape(const std::string& blob, Shape shape) { shapes_[blob] = std::move(shape); }
  // ncnn rank of a blob; fails naming the layer when it is not known.
  int rank(const std::string& blob, const std::string& layer) const;

 private:
  const loom_builder_api_t& api_;
  loom_graph_builder_t* builder_;
  WeightReader& weights_;
  std::map<std::string, Shape> shapes_;
  int64_t next_temp_ = 0;
};

// Errors naming the layer.
[[noreturn]] void layer_error(const Layer& layer, const std::string& message);
[[noreturn]] void layer_unsupported(const Layer& layer, const std::string& message);
void expect_io(const Layer& layer, size_t bottoms, size_t tops);

// Converts ncnn's "activation_type" (param 9) and its params (array 10), fused into
// Convolution, Deconvolution and InnerProduct, into explicit nodes from `in` to `out`.
void emit_fused_activation(Context& ctx, const Layer& layer, const std::string& in,
                           const std::string& out);
// Emits the unary activation `kind` (ncnn's activation_type numbering) from `in` to `out`.
void emit_activation(Context& ctx, const Layer& layer, int kind, const std::vector<float>& params,
                     const std::string& in, const std::string& out);

// One converter per ncnn layer type; each reads its weights from ctx.weights() in ncnn's order.
using Converter = void (*)(Context&, const Layer&);
void convert_convolution(Context&, const Layer&);
void convert_deconvolution(Context&, const Layer&);
void convert_pooling(Context&, const Layer&);
void convert_inner_product(Context&, const Layer&);
void convert_unary_activation(Context&, const Layer&);
void convert_binary_op(Context&, const Layer&);
void convert_eltwise(Context&, const Layer&);
void convert_concat(Context&, const Layer&);
void convert_split(Context&, const Layer&);
void convert_slice(Context&, const Layer&);
void convert_crop(Context&, const Layer&);
void convert_reshape(Context&, const Layer&);
void convert_flatten(Context&, const Layer&);
void convert_permute(Context&, const Layer&);
void convert_padding(Context&, const Layer&);
void convert_batch_norm(Context&, const Layer&);
void convert_scale(Context&, const Layer&);
void convert_softmax(Context&, const Layer&);
void convert_interp(Context&, const Layer&);
void convert_memory_data(Context&, const Layer&);
void convert_dropout(Context&, const Layer&);
void convert_input(Context&, const Layer&);

}  // namespace loom::ncnnfmt
