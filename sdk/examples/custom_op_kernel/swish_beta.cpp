// An op-kernel plugin: adds the custom op com.example::SwishBeta to Loom's cpu device.
//
//   SwishBeta(X) = X * sigmoid(beta * X)       attribute beta: float, default 1.0
//   X: float32 tensor of any shape, Y: float32 tensor of X's shape
//
// It registers two things: an op schema (so the core accepts models that use the op and can
// infer the output's type and shape) and a kernel for the device "cpu" (the cpu device asks
// the host for kernels of ops it does not know, host->find_kernel). Every function that the
// core calls runs inside loom::sdk::guard, which turns C++ exceptions into status objects:
// no exception may cross the C ABI.
//
// Error messages do not name the node: the core (infer) and the cpu device (create, compute)
// put "SwishBeta node '<name>': " in front of them.
#include <cmath>
#include <loom/plugin.hpp>
#include <memory>
#include <string>

namespace {

using loom::sdk::Attributes;
using loom::sdk::fail;

constexpr const char* kDomain = "com.example";
constexpr const char* kOp = "SwishBeta";

// Reads and checks the attribute; wrong type or a non-finite value is a model error.
float beta_of(const loom_node_t& node) {
  float beta = Attributes(node).get_float("beta", 1.0f);
  if (!std::isfinite(beta)) fail(LOOM_ERROR_INVALID_MODEL, "beta must be finite");
  return beta;
}

// A schema cannot declare its attributes, so the core accepts any: refuse the ones this op
// does not have, or a misspelled "betta" would silently leave beta at its default.
void check_attribute_names(const loom_node_t& node) {
  for (size_t i = 0; i < node.num_attributes; ++i) {
    std::string name = node.attributes[i]->name ? node.attributes[i]->name : "";
    if (name != "beta")
      fail(LOOM_ERROR_INVALID_MODEL, "unknown attribute '" + name + "' (SwishBeta has: beta)");
  }
}

// ---- schema: type and shape inference -----------------------------------------------------

loom_status_t* infer(void*, const loom_node_t* node, const loom_value_info_t* const* inputs,
                     size_t num_outputs, loom_inferred_t* outputs) {
  return loom::sdk::guard([&] {
    const loom_value_info_t* x = inputs[0];
    if (!x) fail(LOOM_ERROR_INVALID_MODEL, "input X is missing");
    if (x->dtype != LOOM_DTYPE_UNDEFINED && x->dtype != LOOM_DTYPE_FLOAT32)
      fail(LOOM_ERROR_INVALID_MODEL,
           std::string("X must be float32, not ") + loom::sdk::dtype_name(x->dtype));
    check_attribute_names(*node);
    beta_of(*node);
    if (num_outputs < 1) return;
    loom_inferred_t& y = outputs[0];
    y.dtype = LOOM_DTYPE_FLOAT32;
    y.rank = x->rank;  // -1 stays unknown
    for (int32_t d = 0; d < x->rank && d < LOOM_MAX_RANK; ++d) y.dims[d] = x->dims[d];
  });
}

const loom_op_schema_t kSchema = {
    sizeof(loom_op_schema_t),
    kDomain,
    kOp,
    1,  // since_version: opset 1 of com.example
    1,
    1,  // inputs
    1,
    1,  // outputs
    infer,
    nullptr,
};

// ---- kernel -------------------------------------------------------------------------------

struct State {
  float beta;
};

// Called when the cpu device compiles a subgraph holding the node: the attribute is read once.
// kKernel.user (unused here) reaches only this function; compute gets the state made here.
loom_status_t* create(void*, const loom_graph_t*, const loom_node_t* node, void** state) {
  return loom::sdk::guard([&] { *state = new State{beta_of(*node)}; });
}

void destroy(void* state) {
  delete static_cast<State*>(state);
}

// sigmoid without overflow: exp() only ever sees a non-positive argument.
inline float sigmoid(float z) {
  if (z >= 0.0f) return 1.0f / (1.0f + std::exp(-z));
  float e = std::exp(z);
  return e / (1.0f + e);
}

struct Chunk {
  const float* x;
  float* y;
  float beta;
};

void compute_range(void* user, size_t begin, size_t end) {
  const Chunk& c = *static_cast<const Chunk*>(user);
  for (size_t i = begin; i < end; ++i) c.y[i] = c.x[i] * sigmoid(c.beta * c.x[i]);
}

loom_status_t* compute(void* state, const loom_node_t*, const loom_kernel_context_api_t* api,
                       loom_kernel_context_t* ctx) {
  return loom::sdk::guard([&] {
    const loom_tensor_t* x = api->input(ctx, 0);
    if (!x) fail(LOOM_ERROR_INVALID_ARGUMENT, "input X is missing");
    if (x->dtype != LOOM_DTYPE_FLOAT32)
      fail(LOOM_ERROR_INVALID_ARGUMENT,
           std::string("X must be float32, not ") + loom::sdk::dtype_name(x->dtype));
    loom_tensor_t* y = nullptr;
    loom::sdk::check(api->allocate_output(ctx, 0, LOOM_DTYPE_FLOAT32, x->rank, x->dims, &y));
    Chunk chunk{static_cast<const float*>(x->data), static_cast<float*>(y->data),
                static_cast<const State*>(state)->beta};
    auto n = static_cast<size_t>(loom::sdk::element_count(*x));
    api->parallel_for(ctx, n, compute_range, &chunk);
  });
}

const loom_kernel_t kKernel = {
    sizeof(loom_kernel_t),
    "cpu",  // the device this kernel runs on
    kDomain,
    kOp,
    1,
    create,
    compute,
    destroy,
    nullptr,
};

}  // namespace

extern "C" LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                               loom_registrar_t* registrar,
                                                               loom_plugin_info_t* info) {
  if (!host) return nullptr;  // no way to create a status without the host
  loom::sdk::set_host(host);
  info->abi_version = LOOM_ABI_VERSION;
  info->name = "example_swish";
  info->version = "1.0.0";
  info->description = "SDK example: com.example::SwishBeta kernel for the cpu device";
  return loom::sdk::guard([&] {
    if (LOOM_ABI_MAJOR(host->abi_version) != LOOM_ABI_VERSION_MAJOR)
      fail(LOOM_ERROR_INCOMPATIBLE,
           "example_swish needs plugin ABI major " + std::to_string(LOOM_ABI_VERSION_MAJOR) +
               ", the host speaks " + std::to_string(LOOM_ABI_MAJOR(host->abi_version)));
    loom::sdk::check(host->register_op_schema(registrar, &kSchema));
    loom::sdk::check(host->register_kernel(registrar, &kKernel));
  });
}
