// A recording implementation of the plugin ABI's graph builder and a minimal host, so the onnx
// format can be tested (and fuzzed) without the core. Everything the format hands over is
// copied into plain C++ structures the tests inspect.
#pragma once

#include <loom/plugin.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loom::onnx::testing {

// ---- fake host: status objects ---------------------------------------------------------

// A host API whose status objects are counted, so tests can check none leak.
const loom_host_api_t& fake_host();
int live_statuses();

// Code and message of `status`, which is freed. Code LOOM_OK for NULL.
struct Outcome {
  loom_status_code_t code = LOOM_OK;
  std::string message;
};
Outcome take(loom_status_t* status);

// ---- recorded graph ----------------------------------------------------------------------

struct RecordedValue {
  std::string name;
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  int32_t rank = -1;
  std::vector<int64_t> dims;
  bool has_dim_params = false;
  std::vector<std::string> dim_params;  // "" where NULL
  uint32_t container_flags = 0;         // set_value_container (ABI 1.2)
};

struct RecordedTensor {
  std::string name;
  loom_dtype_t dtype = LOOM_DTYPE_UNDEFINED;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;        // non-string data
  std::vector<std::string> strings;  // STRING elements
  bool borrowed = false;

  template <typename T>
  std::vector<T> as() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
    return v;
  }
};

struct RecordedGraph;

struct RecordedAttr {
  std::string name;
  loom_attr_type_t type = LOOM_ATTR_UNDEFINED;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  RecordedTensor tensor;
  std::shared_ptr<RecordedGraph> graph;
};

struct RecordedNode {
  std::string name, op_type, domain;
  std::vector<std::string> inputs, outputs;
  std::vector<RecordedAttr> attrs;
  const RecordedAttr* attr(const std::string& n) const {
    for (const RecordedAttr& a : attrs)
      if (a.name == n) return &a;
    return nullptr;
  }
};

struct RecordedGraph {
  bool top_level = false;
  std::vector<RecordedValue> inputs, outputs, value_infos;
  std::vector<RecordedTensor> initializers;
  std::vector<std::unique_ptr<RecordedNode>> nodes;  // stable addresses: handed out as handles
  std::map<std::string, int64_t> opsets;             // top level only
  std::map<std::string, std::string> metadata;       // top level only

  const RecordedTensor* initializer(const std::string& n) const;
  const RecordedValue* input(const std::string& n) const;
};

// The recording builder. Borrowed initializers are copied and their release callbacks run when
// the FakeBuilder is destroyed, as the core would when the model goes away.
class FakeBuilder {
 public:
  FakeBuilder();
  ~FakeBuilder();
  FakeBuilder(const FakeBuilder&) = delete;
  FakeBuilder& operator=(const FakeBuilder&) = delete;

  const loom_builder_api_t& api() const { return api_; }
  loom_graph_builder_t* handle() { return reinterpret_cast<loom_graph_builder_t*>(&graph_); }
  RecordedGraph& graph() { return graph_; }
  size_t pending_releases() const { return releases_.size(); }

  // Makes the Nth call (0-based, over all builder functions) fail with INVALID_ARGUMENT, to test
  // that the format propagates builder errors. -1: never.
  int fail_at_call = -1;

 private:
  struct Release {
    void (*fn)(void*);
    void* user;
  };
  static FakeBuilder* self;  // the callbacks are plain C functions; one builder at a time
  friend struct Callbacks;
  loom_builder_api_t api_{};
  RecordedGraph graph_;
  std::vector<Release> releases_;
  int calls_ = 0;
};

}  // namespace loom::onnx::testing
