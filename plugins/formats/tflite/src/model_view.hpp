// A verified, bounds-checked view of a .tflite model: the flatbuffer is run through the
// flatbuffers Verifier as a whole before anything reads it, then every index, shape and buffer
// size the converter relies on is checked here once, so the converter can trust TensorView.
#pragma once

#include <loom/plugin.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

namespace loom::tflite {

// Linear quantization of one tensor: real = scale * (q - zero_point), per tensor (one scale)
// or per channel along `axis`.
struct Quantization {
  std::vector<float> scales;
  std::vector<int64_t> zero_points;
  int32_t axis = 0;
  bool per_channel() const { return scales.size() > 1; }
};

struct TensorView {
  int32_t index = -1;
  std::string name;  // unique in the model (see ModelView), never empty
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  std::vector<int64_t> shape;  // static NHWC (TFLite) shape; -1 only for a dynamic batch
  bool quantized = false;      // int8/uint8/int32 with scale/zero point
  Quantization quant;
  std::span<const uint8_t> data;  // constant contents (exact byte size checked); empty if none
  // A state tensor (is_variable) of a stateful operator such as UNIDIRECTIONAL_SEQUENCE_LSTM:
  // when nothing writes it and it is not a graph input it starts at zero, as in TFLite (on
  // every run: Loom sessions keep no state between runs).
  bool is_variable = false;
  bool is_constant() const { return !data.empty(); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

struct OperatorView {
  int32_t index = -1;
  int32_t builtin_code = 0;
  std::string op_name;  // "CONV_2D", or "builtin operator 200", or "custom 'X'"
  bool custom = false;
  std::string custom_code;  // OperatorCode.custom_code of a custom operator
  std::vector<int32_t> inputs;  // tensor indices, -1 = omitted optional input
  std::vector<int32_t> outputs;
  const void* raw = nullptr;  // the verified flatbuffers Operator (converter reads options)
};

class ModelView {
 public:
  // Verifies and indexes `data`; throws sdk::Error(LOOM_ERROR_INVALID_MODEL / UNSUPPORTED)
  // with a one-line message naming the problem.
  ModelView(const uint8_t* data, size_t size);

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView& tensor(int32_t index) const;
  const std::vector<OperatorView>& operators() const { return operators_; }
  const std::vector<int32_t>& inputs() const { return inputs_; }
  const std::vector<int32_t>& outputs() const { return outputs_; }
  const std::string& description() const { return description_; }
  uint32_t schema_version() const { return version_; }

 private:
  void read_tensors(const void* subgraph, const void* model);
  void read_operators(const void* subgraph, const void* model);
  void fold_densify();
  void check_dataflow() const;

  std::vector<TensorView> tensors_;
  std::vector<OperatorView> operators_;
  std::vector<int32_t> inputs_, outputs_;
  std::string description_;
  uint32_t version_ = 0;
  size_t file_size_ = 0;
  std::deque<std::vector<uint8_t>> owned_;  // densified sparse constants (TensorView::data)
};

// Limits on what a model may declare; beyond them the file is refused (hostile input must not
// make the loader or the runtime allocate without bound).
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 31;
inline constexpr int64_t kMaxDim = int64_t{1} << 31;

}  // namespace loom::tflite
