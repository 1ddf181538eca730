/* A plugin compiled against a frozen copy of the v1.0 plugin header (abi_v1_0/loom/plugin.h,
 * never to be edited), in plain C99. It must keep loading and running in every 1.x runtime:
 * when the ABI gains minors, the core has to accept its smaller structs and tables.
 *
 * Registers test.abi10::Double (Y = 2 * X, float32) with shape inference and a cpu kernel. */
#include <loom/plugin.h>
#include <string.h>

static const loom_host_api_t* g_host;

static loom_status_t* double_infer(void* user, const loom_node_t* node,
                                   const loom_value_info_t* const* inputs, size_t num_outputs,
                                   loom_inferred_t* outputs) {
  int32_t d;
  (void)user;
  (void)node;
  if (!inputs[0]) return g_host->status_new(LOOM_ERROR_INVALID_MODEL, "Double: input X is missing");
  if (inputs[0]->dtype != LOOM_DTYPE_UNDEFINED && inputs[0]->dtype != LOOM_DTYPE_FLOAT32)
    return g_host->status_new(LOOM_ERROR_INVALID_MODEL, "Double: X must be float32");
  if (num_outputs < 1) return NULL;
  outputs[0].dtype = LOOM_DTYPE_FLOAT32;
  outputs[0].rank = inputs[0]->rank;
  for (d = 0; d < inputs[0]->rank && d < LOOM_MAX_RANK; ++d)
    outputs[0].dims[d] = inputs[0]->dims[d];
  return NULL;
}

static loom_status_t* double_compute(void* state, const loom_node_t* node,
                                     const loom_kernel_context_api_t* api,
                                     loom_kernel_context_t* ctx) {
  const loom_tensor_t* x;
  loom_tensor_t* y = NULL;
  loom_status_t* status;
  int64_t n = 1, i;
  int32_t d;
  (void)state;
  (void)node;
  x = api->input(ctx, 0);
  if (!x || x->dtype != LOOM_DTYPE_FLOAT32)
    return g_host->status_new(LOOM_ERROR_INVALID_ARGUMENT, "Double: X must be a float32 tensor");
  status = api->allocate_output(ctx, 0, LOOM_DTYPE_FLOAT32, x->rank, x->dims, &y);
  if (status) return status;
  for (d = 0; d < x->rank; ++d) n *= x->dims[d];
  for (i = 0; i < n; ++i) ((float*)y->data)[i] = 2.0f * ((const float*)x->data)[i];
  return NULL;
}

LOOM_PLUGIN_EXPORT loom_status_t* loom_plugin_entry(const loom_host_api_t* host,
                                                    loom_registrar_t* registrar,
                                                    loom_plugin_info_t* info) {
  loom_op_schema_t schema;
  loom_kernel_t kernel;
  loom_status_t* status;
  if (!host) return NULL;
  g_host = host;
  info->abi_version = LOOM_ABI_VERSION; /* 1.0: this header's version */
  info->name = "abi_v1_0";
  info->version = "1.0";
  info->description = "test plugin built against the frozen v1.0 plugin header";
  if (LOOM_ABI_MAJOR(host->abi_version) != LOOM_ABI_VERSION_MAJOR)
    return host->status_new(LOOM_ERROR_INCOMPATIBLE, "abi_v1_0 speaks plugin ABI major 1 only");

  /* Descriptors are copied by the host; the strings and functions are static. */
  memset(&schema, 0, sizeof schema);
  schema.struct_size = sizeof schema;
  schema.domain = "test.abi10";
  schema.op_type = "Double";
  schema.since_version = 1;
  schema.min_inputs = schema.max_inputs = 1;
  schema.min_outputs = schema.max_outputs = 1;
  schema.infer = double_infer;
  status = host->register_op_schema(registrar, &schema);
  if (status) return status;

  memset(&kernel, 0, sizeof kernel);
  kernel.struct_size = sizeof kernel;
  kernel.device = "cpu";
  kernel.domain = "test.abi10";
  kernel.op_type = "Double";
  kernel.since_version = 1;
  kernel.compute = double_compute;
  return host->register_kernel(registrar, &kernel);
}
