// The run-time fuzzer's model builder (fuzz_run_cpu.cpp): the values the input bytes choose,
// the tensors and nodes of the ONNX model being built, and the table of op templates
// (fuzz_templates.cpp). Split from the runner so that each file holds one concern; the decoding
// is unchanged, so the committed seeds (tests/fuzz/corpus_run_cpu) still reach every template.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>
#include <loom/loom.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace loom_fuzz {

using Dims = std::vector<int64_t>;
using FDP = FuzzedDataProvider;

enum class Fill { kData, kIndex, kShape };

// A tensor the application feeds (a graph input the bytes chose not to make an initializer).
struct Feed {
  std::string name;
  loom_dtype_t dtype;
  Dims dims;
  std::vector<uint8_t> bytes;
};

// The model being built and its feeds.
struct Case {
  int opset = 17;
  onnx::ModelProto model;
  onnx::GraphProto* g = nullptr;
  std::vector<Feed> feeds;
  int next = 0;
  std::string name(const char* base) { return std::string(base) + std::to_string(next++); }
};

// ---- values, tensors and nodes (fuzz_model.cpp) ----
int64_t small_dim(FDP& f);
Dims small_dims(FDP& f, int min_rank, int max_rank);
int64_t shape_value(FDP& f);
int64_t index_value(FDP& f);
int64_t attr_int(FDP& f, int64_t lo, int64_t hi);
double data_value(FDP& f);
size_t dtype_bytes(loom_dtype_t t);
int64_t count_of(const Dims& d);
void set_type(onnx::ValueInfoProto* vi, loom_dtype_t dtype, const Dims* dims, bool symbolic);
std::vector<uint8_t> make_bytes(FDP& f, loom_dtype_t dtype, int64_t n, Fill fill);
std::string tensor(Case& c, FDP& f, const char* base, loom_dtype_t dtype, const Dims& dims,
                   Fill fill, bool may_be_constant = true);
std::string data(Case& c, FDP& f, loom_dtype_t dtype, const Dims& dims);
size_t shape_len(FDP& f, size_t most);
std::string shape_tensor(Case& c, FDP& f, const char* base, size_t n);
std::string scalar_i64(Case& c, FDP& f, const char* base, bool rank1 = false);
loom_dtype_t float_type(FDP& f);
loom_dtype_t any_type(FDP& f);
onnx::NodeProto* node(Case& c, const char* op, const std::vector<std::string>& in,
                      const std::vector<std::string>& out, onnx::GraphProto* g = nullptr);
void attr_i(onnx::NodeProto* n, const char* name, int64_t v);
void attr_f(onnx::NodeProto* n, const char* name, float v);
void attr_s(onnx::NodeProto* n, const char* name, const std::string& v);
void attr_ints(onnx::NodeProto* n, const char* name, const Dims& v);
onnx::GraphProto* attr_graph(onnx::NodeProto* n, const char* name);
Dims attr_ints_of(FDP& f, size_t n, int64_t lo, int64_t hi);
size_t fuzzy_len(FDP& f, size_t n);
bool coin(FDP& f, uint8_t one_in = 2);
void body_io(onnx::ValueInfoProto* vi, const std::string& name, loom_dtype_t dtype,
             const Dims* dims);

// ---- op templates (fuzz_templates.cpp, fuzz_templates_control_flow.cpp) ----
// Each adds its node(s) reading the tensors it makes and returns the names of its outputs.
using Outputs = std::vector<std::string>;
struct Template {
  const char* name;
  Outputs (*make)(Case&, FDP&);
};
extern const Template kTemplates[];
extern const size_t kNumTemplates;
// The control-flow templates (fuzz_templates_control_flow.cpp), in kTemplates like the others.
Outputs t_loop(Case& c, FDP& f);
Outputs t_sequence_loop(Case& c, FDP& f);
Outputs t_scan(Case& c, FDP& f);
Outputs t_if(Case& c, FDP& f);
// A second node reading the first output, sometimes: what a device does with a tensor whose
// shape came from the data (a chain of data-dependent shapes).
void maybe_follow(Case& c, FDP& f, Outputs& outs);

}  // namespace loom_fuzz
