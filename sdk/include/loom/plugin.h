/*
 * loom/plugin.h -- the stable C ABI between the Loom core and its plugins.
 *
 * Self-contained C99: only <stdint.h>, <stddef.h> and <stdbool.h>. No C++ type, exception or
 * allocator crosses this boundary. In-tree plugins use exactly this header, like third parties.
 *
 * ABI version history (append new lines, never edit old ones):
 *   1.0  first release: handshake, status objects, formats (probe + load through a graph
 *        builder), devices (capability query, buffers, compile, run), op schemas with shape
 *        inference and op kernels for a named device.
 *   1.1  loom_format_t gains `save` (optional, appended): a format that can write models.
 *   1.2  sequence and optional values: value flags LOOM_VALUE_SEQUENCE and LOOM_VALUE_OPTIONAL
 *        (views describe such a value by its elements' dtype and shape), and
 *        loom_builder_api_t gains `set_value_container` (optional, appended) so a format can
 *        declare graph inputs and outputs of those types.
 *   1.3  loom_compile_args_t gains `constant_copied` and `host_user` (appended): a device
 *        tells which constants it copied at compile, so the host can free its own bytes.
 *   1.4  run limits and cancellation: loom_run_args_t gains `control` (appended), a
 *        loom_run_control_t with byte and loop bounds and a poll function the device calls
 *        between steps; status codes LOOM_ERROR_LIMIT_EXCEEDED and LOOM_ERROR_CANCELLED.
 *   1.5  profiling and loading from memory: loom_run_control_t gains `profile` (appended), which
 *        a device calls once per step it ran with a loom_profile_step_t (start and end times and
 *        the nodes the step computed); loom_load_args_t gains `flags` (appended), whose
 *        LOOM_LOAD_FROM_MEMORY says that the bytes came from the application, not a file.
 *   1.6  the data types of ONNX 1.14 to 1.23 (new enum values, numbered as TensorProto): the
 *        float8 types, float8e8m0, float4e2m1, float6, int4/uint4 and int2/uint2. Each holds one
 *        element per byte (see loom_dtype_t). A plugin built before 1.6 never meets them from
 *        a 1.6 format unless it asks for them: a device checks the dtypes of what it claims.
 *   1.7  loom_value_info_t::content_id: an identity of a constant's bytes, so that a device which
 *        shares repacked weights between executables (the plans of other input shapes, other
 *        sessions of one model) can recognize them without hashing them on every compile.
 *   1.8  loom_compile_args_t gains `free_axis` (appended): a device tells which axes of the
 *        subgraph's inputs its executable runs at any extent, so that a model whose inputs grow
 *        at every run (a generation loop's key-value cache) is not compiled again per extent.
 *   1.9  loom_device_info_t gains cost hints (appended: `cost_gflops`, `cost_transfer_gbps`,
 *        `cost_transfer_latency_us`, `cost_launch_us`): a device states its own throughput and
 *        transfer costs for the scheduler instead of the host knowing device names.
 *
 * Versioning rules
 *   - LOOM_ABI_VERSION = (major << 16) | minor. A plugin and a host of different majors never
 *     talk. Within a major, minors only append: new members at the end of size-prefixed
 *     structs, new function pointers at the end of tables, new enum values.
 *   - Every struct that crosses the boundary starts with `size_t struct_size`. The reader checks
 *     struct_size before it touches a member added after 1.0 (use LOOM_HAS_MEMBER).
 *   - A NULL function pointer means "not implemented"; callers check before calling optional
 *     ones (marked "optional" below).
 *
 * Ownership conventions
 *   - `const char*` and view structs handed to a callback are borrowed: valid for the duration
 *     of that call only, unless the function says otherwise. Copy what you keep.
 *   - Status objects (loom_status_t*) are created by the host (host->status_new). NULL means
 *     success. A non-NULL status returned to the other side transfers ownership to the caller,
 *     which frees it with host->status_free.
 *
 * Threading conventions
 *   - Registration happens on the thread that loads the plugin, inside loom_plugin_entry.
 *   - Host API functions are thread-safe unless noted.
 *   - Device functions may be called from any thread; calls on one loom_device_t are not made
 *     concurrently by the core except `run` on *different* executables. A device that cannot
 *     support that serializes internally.
 */
#ifndef LOOM_PLUGIN_H
#define LOOM_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Versions, export macro                                                                      */
/* ------------------------------------------------------------------------------------------ */

#define LOOM_ABI_VERSION_MAJOR 1
#define LOOM_ABI_VERSION_MINOR 9
#define LOOM_MAKE_ABI_VERSION(major, minor) ((uint32_t)(((uint32_t)(major) << 16) | (uint32_t)(minor)))
#define LOOM_ABI_VERSION LOOM_MAKE_ABI_VERSION(LOOM_ABI_VERSION_MAJOR, LOOM_ABI_VERSION_MINOR)
#define LOOM_ABI_MAJOR(v) ((uint32_t)(v) >> 16)
#define LOOM_ABI_MINOR(v) ((uint32_t)(v)&0xFFFFu)

/* The one symbol every plugin exports. */
#define LOOM_PLUGIN_ENTRY_SYMBOL "loom_plugin_entry"

#if defined(_WIN32)
#define LOOM_PLUGIN_EXPORT __declspec(dllexport)
#else
#define LOOM_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* True when a size-prefixed struct `ptr` is large enough to contain `member`. */
#define LOOM_HAS_MEMBER(ptr, type, member) \
  ((ptr)->struct_size >= offsetof(type, member) + sizeof(((type*)0)->member))

/* Tensors of higher rank are refused with a clear error by the core. */
#define LOOM_MAX_RANK 16

/* ------------------------------------------------------------------------------------------ */
/* Opaque handles                                                                              */
/* ------------------------------------------------------------------------------------------ */

typedef struct loom_status_t loom_status_t;             /* host-owned error object */
typedef struct loom_registrar_t loom_registrar_t;       /* valid during loom_plugin_entry only */
typedef struct loom_host_t loom_host_t;                 /* the runtime; outlives every device */
typedef struct loom_graph_builder_t loom_graph_builder_t; /* valid during format load only */
typedef struct loom_node_builder_t loom_node_builder_t; /* valid during format load only */
typedef struct loom_device_t loom_device_t;             /* plugin-owned device instance */
typedef struct loom_buffer_t loom_buffer_t;             /* plugin-owned device memory */
typedef struct loom_executable_t loom_executable_t;     /* plugin-owned compiled subgraph */
typedef struct loom_kernel_context_t loom_kernel_context_t; /* device-owned, valid in compute */

/* ------------------------------------------------------------------------------------------ */
/* Status                                                                                      */
/* ------------------------------------------------------------------------------------------ */

typedef enum loom_status_code_t {
  LOOM_OK = 0,
  LOOM_ERROR_INVALID_ARGUMENT = 1, /* caller passed something wrong (shape, dtype, name) */
  LOOM_ERROR_INVALID_MODEL = 2,    /* malformed or hostile model file */
  LOOM_ERROR_UNSUPPORTED = 3,      /* valid, but this plugin/device cannot do it */
  LOOM_ERROR_NOT_FOUND = 4,        /* file, symbol, name or library missing */
  LOOM_ERROR_OUT_OF_MEMORY = 5,
  LOOM_ERROR_INCOMPATIBLE = 6,     /* ABI or version mismatch */
  LOOM_ERROR_UNAVAILABLE = 7,      /* device exists but cannot be used here (no driver...) */
  LOOM_ERROR_RUNTIME = 8,          /* failure while running */
  LOOM_ERROR_INTERNAL = 9,         /* a bug: please report */
  /* 1.4 */
  LOOM_ERROR_LIMIT_EXCEEDED = 10,  /* a run needed more than a limit of the session allows
                                      (tensor bytes, run bytes, loop iterations) */
  LOOM_ERROR_CANCELLED = 11        /* the run was cancelled or passed its deadline */
} loom_status_code_t;

/* ------------------------------------------------------------------------------------------ */
/* Data types (numbering equals ONNX TensorProto.DataType)                                      */
/* ------------------------------------------------------------------------------------------ */

typedef enum loom_dtype_t {
  LOOM_DTYPE_UNDEFINED = 0,
  LOOM_DTYPE_FLOAT32 = 1,
  LOOM_DTYPE_UINT8 = 2,
  LOOM_DTYPE_INT8 = 3,
  LOOM_DTYPE_UINT16 = 4,
  LOOM_DTYPE_INT16 = 5,
  LOOM_DTYPE_INT32 = 6,
  LOOM_DTYPE_INT64 = 7,
  LOOM_DTYPE_STRING = 8, /* elements are loom_string_t; see below */
  LOOM_DTYPE_BOOL = 9,   /* one byte per element, 0 or 1 */
  LOOM_DTYPE_FLOAT16 = 10,
  LOOM_DTYPE_FLOAT64 = 11,
  LOOM_DTYPE_UINT32 = 12,
  LOOM_DTYPE_UINT64 = 13,
  LOOM_DTYPE_COMPLEX64 = 14,
  LOOM_DTYPE_COMPLEX128 = 15,
  LOOM_DTYPE_BFLOAT16 = 16,
  /* 1.6. Every one of these holds one element per byte in a tensor's memory, the way numpy's
   * ml_dtypes stores them: the 8-bit floats and float8e8m0 fill the byte; float4e2m1, the
   * float6 types and the 4- and 2-bit integers keep their bits in the low end of the byte (the
   * signed integers sign-extended to the whole byte, so an int4 byte reads as the int8 of the
   * same value). Formats that pack sub-byte elements (ONNX raw_data, two int4 per byte) unpack
   * them at load and pack them when they save. */
  LOOM_DTYPE_FLOAT8E4M3FN = 17,   /* e4m3, no infinities, one NaN pattern per sign */
  LOOM_DTYPE_FLOAT8E4M3FNUZ = 18, /* e4m3, no infinities or negative zero; NaN is 0x80 */
  LOOM_DTYPE_FLOAT8E5M2 = 19,     /* e5m2, IEEE-like (infinities and NaNs) */
  LOOM_DTYPE_FLOAT8E5M2FNUZ = 20, /* e5m2, no infinities or negative zero; NaN is 0x80 */
  LOOM_DTYPE_UINT4 = 21,
  LOOM_DTYPE_INT4 = 22,
  LOOM_DTYPE_FLOAT4E2M1 = 23,     /* e2m1, no infinities or NaNs */
  LOOM_DTYPE_FLOAT8E8M0 = 24,     /* a power of two 2^(byte - 127); 0xFF is NaN */
  LOOM_DTYPE_UINT2 = 25,
  LOOM_DTYPE_INT2 = 26,
  LOOM_DTYPE_FLOAT6E2M3 = 27,     /* e2m3, no infinities or NaNs */
  LOOM_DTYPE_FLOAT6E3M2 = 28      /* e3m2, no infinities or NaNs */
} loom_dtype_t;

/* Element of a LOOM_DTYPE_STRING tensor. The bytes are owned by whoever owns the tensor and
 * live as long as it does; they need not be NUL-terminated. */
typedef struct loom_string_t {
  const char* data;
  size_t size;
} loom_string_t;

/* ------------------------------------------------------------------------------------------ */
/* Graph views: how the core shows (parts of) its graph to plugins. All read-only, core-owned.  */
/* ------------------------------------------------------------------------------------------ */

typedef struct loom_graph_t loom_graph_t;

/* Flags of a loom_value_info_t. */
#define LOOM_VALUE_GRAPH_INPUT 0x1u   /* fed from outside this (sub)graph */
#define LOOM_VALUE_GRAPH_OUTPUT 0x2u  /* read outside this (sub)graph */
#define LOOM_VALUE_CONSTANT 0x4u      /* initializer or folded constant; `data` is set */
#define LOOM_VALUE_OUTER_SCOPE 0x8u   /* in a nested graph: refers by name to a value of an
                                         enclosing graph (ONNX implicit input) */
/* 1.2: sequence and optional values (ONNX seq(tensor), optional(tensor), optional(seq(tensor))).
 * They live in the core, on the host: devices are never asked to run a node that reads or
 * makes one. dtype, rank and dims of such a value describe its elements. */
#define LOOM_VALUE_SEQUENCE 0x10u     /* a sequence of tensors */
#define LOOM_VALUE_OPTIONAL 0x20u     /* an optional (with LOOM_VALUE_SEQUENCE: of a sequence) */

typedef struct loom_value_info_t {
  size_t struct_size;
  const char* name;
  loom_dtype_t dtype;          /* LOOM_DTYPE_UNDEFINED when not (yet) known */
  int32_t rank;                /* -1 when the rank is unknown */
  const int64_t* dims;         /* `rank` entries; -1 = unknown extent */
  const char* const* dim_params; /* NULL, or `rank` entries: symbolic name or NULL */
  uint32_t flags;              /* LOOM_VALUE_* */
  const void* data;            /* host data of a constant (LOOM_VALUE_CONSTANT), else NULL;
                                  valid as long as any executable compiled from the view lives */
  size_t data_size;            /* bytes at `data` */
  int64_t arena_offset;        /* planned byte offset in the device arena, or -1 (see compile) */
  /* 1.7. Of a constant: nonzero when the host vouches for its bytes: every constant seen with
     this id, in any view and any session of this process, holds these same bytes (the host
     never gives two contents one id), so a device may key what it derives from them by the id.
     0: no such promise (compare the bytes). */
  uint64_t content_id;
} loom_value_info_t;

typedef enum loom_attr_type_t {
  LOOM_ATTR_UNDEFINED = 0,
  LOOM_ATTR_FLOAT = 1,
  LOOM_ATTR_INT = 2,
  LOOM_ATTR_STRING = 3,
  LOOM_ATTR_TENSOR = 4,
  LOOM_ATTR_GRAPH = 5,
  LOOM_ATTR_FLOATS = 6,
  LOOM_ATTR_INTS = 7,
  LOOM_ATTR_STRINGS = 8
} loom_attr_type_t;

typedef struct loom_attribute_t {
  size_t struct_size;
  const char* name;
  loom_attr_type_t type;
  int64_t i;                      /* LOOM_ATTR_INT */
  float f;                        /* LOOM_ATTR_FLOAT */
  const char* s;                  /* LOOM_ATTR_STRING: bytes (NUL-terminated for convenience) */
  size_t s_size;                  /*   ... and their count without the NUL */
  size_t count;                   /* element count of INTS / FLOATS / STRINGS */
  const int64_t* ints;            /* LOOM_ATTR_INTS */
  const float* floats;            /* LOOM_ATTR_FLOATS */
  const loom_string_t* strings;   /* LOOM_ATTR_STRINGS */
  const loom_value_info_t* tensor; /* LOOM_ATTR_TENSOR: a constant value (data set) */
  const loom_graph_t* graph;      /* LOOM_ATTR_GRAPH: a nested graph (If/Loop/Scan bodies) */
} loom_attribute_t;

typedef struct loom_node_t {
  size_t struct_size;
  const char* name;      /* may be "" */
  const char* op_type;
  const char* domain;    /* "" for the default ONNX domain */
  int64_t opset;         /* the opset version the model imports for `domain` */
  size_t num_inputs;
  const int32_t* inputs; /* indices into the graph's values; -1 = omitted optional input */
  size_t num_outputs;
  const int32_t* outputs; /* indices into the graph's values; -1 = omitted optional output */
  size_t num_attributes;
  const loom_attribute_t* const* attributes;
} loom_node_t;

struct loom_graph_t {
  size_t struct_size;
  const char* name;
  size_t num_values;
  const loom_value_info_t* const* values;
  size_t num_nodes;
  const loom_node_t* const* nodes; /* topological order */
  size_t num_inputs;
  const int32_t* inputs;   /* value indices fed from outside, in order (constants excluded) */
  size_t num_outputs;
  const int32_t* outputs;  /* value indices produced for the outside, in order */
  const loom_graph_t* parent; /* enclosing graph of a nested graph, NULL at top level */
};

/* ------------------------------------------------------------------------------------------ */
/* Tensors handed to run/compute                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef struct loom_tensor_t {
  size_t struct_size;
  loom_dtype_t dtype;
  int32_t rank;
  int64_t dims[LOOM_MAX_RANK];
  void* data;             /* host-addressable pointer to the first element, or NULL when the
                             memory is not host-visible (then use buffer + offset) */
  loom_buffer_t* buffer;  /* device buffer holding the data; NULL for plain host memory */
  size_t offset;          /* byte offset of the first element inside `buffer` */
  size_t byte_size;       /* bytes of the elements (0 for an empty tensor) */
} loom_tensor_t;

/* ------------------------------------------------------------------------------------------ */
/* Format plugins: probe bytes, load a model through the graph builder                         */
/* ------------------------------------------------------------------------------------------ */

/* Functions the core offers a format plugin while it loads a model. Names refer to values;
 * the core resolves them, checks the graph (dangling names, cycles, unknown ops) and reports
 * every problem it finds in one error. All functions copy what they are given, except
 * add_initializer_borrowed. Not thread-safe: one load uses one thread. */
typedef struct loom_builder_api_t {
  size_t struct_size;
  /* Model level (only on the top-level builder). */
  loom_status_t* (*set_opset)(loom_graph_builder_t* b, const char* domain, int64_t version);
  loom_status_t* (*set_metadata)(loom_graph_builder_t* b, const char* key, const char* value);
  /* Graph level. dims: -1 = unknown; dim_params may be NULL or hold per-dim names/NULL.
   * rank -1 = unknown rank. dtype may be UNDEFINED for value_info without a type. */
  loom_status_t* (*add_input)(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                              int32_t rank, const int64_t* dims, const char* const* dim_params);
  loom_status_t* (*add_output)(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                               int32_t rank, const int64_t* dims, const char* const* dim_params);
  loom_status_t* (*add_value_info)(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                                   int32_t rank, const int64_t* dims,
                                   const char* const* dim_params);
  /* A constant. `data` holds exactly product(dims) elements (strings: loom_string_t). Copied. */
  loom_status_t* (*add_initializer)(loom_graph_builder_t* b, const char* name, loom_dtype_t dtype,
                                    int32_t rank, const int64_t* dims, const void* data,
                                    size_t data_size);
  /* Same without a copy (for mmap): the core keeps `data` until it calls release(user).
   * release (may be NULL) is called exactly once, also when this call fails. The plugin must
   * stay loaded until then, i.e. while the model lives. */
  loom_status_t* (*add_initializer_borrowed)(loom_graph_builder_t* b, const char* name,
                                             loom_dtype_t dtype, int32_t rank, const int64_t* dims,
                                             const void* data, size_t data_size,
                                             void (*release)(void* user), void* user);
  /* A node; "" in inputs/outputs marks an omitted optional one. *out stays valid until load
   * returns. */
  loom_status_t* (*add_node)(loom_graph_builder_t* b, const char* name, const char* op_type,
                             const char* domain, size_t num_inputs, const char* const* inputs,
                             size_t num_outputs, const char* const* outputs,
                             loom_node_builder_t** out);
  loom_status_t* (*set_attr_int)(loom_node_builder_t* n, const char* name, int64_t value);
  loom_status_t* (*set_attr_float)(loom_node_builder_t* n, const char* name, float value);
  loom_status_t* (*set_attr_string)(loom_node_builder_t* n, const char* name, const char* value,
                                    size_t size);
  loom_status_t* (*set_attr_ints)(loom_node_builder_t* n, const char* name, const int64_t* values,
                                  size_t count);
  loom_status_t* (*set_attr_floats)(loom_node_builder_t* n, const char* name, const float* values,
                                    size_t count);
  loom_status_t* (*set_attr_strings)(loom_node_builder_t* n, const char* name,
                                     const loom_string_t* values, size_t count);
  loom_status_t* (*set_attr_tensor)(loom_node_builder_t* n, const char* name, loom_dtype_t dtype,
                                    int32_t rank, const int64_t* dims, const void* data,
                                    size_t data_size);
  /* Creates a nested graph attribute and returns its builder (valid until load returns). */
  loom_status_t* (*add_attr_graph)(loom_node_builder_t* n, const char* name,
                                   loom_graph_builder_t** out);
  /* 1.2 (optional: check struct_size with LOOM_HAS_MEMBER). Marks `name`, declared on this
   * builder with add_input, add_output or add_value_info, as a sequence and/or optional value:
   * `flags` is LOOM_VALUE_SEQUENCE, LOOM_VALUE_OPTIONAL, or both for optional(seq(tensor)).
   * The dtype and shape it was declared with then describe the elements. */
  loom_status_t* (*set_value_container)(loom_graph_builder_t* b, const char* name,
                                        uint32_t flags);
} loom_builder_api_t;

#define LOOM_LOAD_FROM_MEMORY 0x1u /* 1.5: the application gave the bytes, not a file */

typedef struct loom_load_args_t {
  size_t struct_size;
  const char* path;      /* the model file as the user named it; with LOOM_LOAD_FROM_MEMORY a
                            name for messages only ("<memory>"), never a file to open */
  const char* directory; /* its directory, for external data; never read outside it. NULL (only
                            with LOOM_LOAD_FROM_MEMORY, when the application gave no base
                            directory): the model has no directory, refuse external data */
  const uint8_t* data;   /* the whole file, mapped read-only by the core (or its copy of the
                            application's bytes); stays valid as long as the model lives, so
                            add_initializer_borrowed may point into it (with a NULL release) */
  size_t size;
  /* 1.5 (optional: check struct_size with LOOM_HAS_MEMBER; absent means 0): LOOM_LOAD_* flags.
   * The core loads from memory only through formats built for 1.5 or later. */
  uint32_t flags;
} loom_load_args_t;

/* Since 1.1: what a format's `save` writes. Everything is borrowed for the call. */
typedef struct loom_save_args_t {
  size_t struct_size;
  const char* path;             /* the file to write (replaced if it exists) */
  const loom_graph_t* graph;    /* the whole model: constants carry their data, nested graphs
                                   are attributes; graph->inputs lists the non-constant inputs */
  size_t num_opsets;            /* imported opsets: domain ("" = ai.onnx) and version */
  const char* const* opset_domains;
  const int64_t* opset_versions;
  size_t num_metadata;          /* model metadata as key/value pairs */
  const char* const* metadata_keys;
  const char* const* metadata_values;
  size_t num_declared_inputs;   /* every declared input of graph, in order, as value indices:
                                   graph->inputs plus constants that are also inputs
                                   (overridable initializers) */
  const int32_t* declared_inputs;
} loom_save_args_t;

typedef struct loom_format_t {
  size_t struct_size;
  const char* name;        /* unique among formats, e.g. "onnx" */
  const char* description;
  const char* extensions;  /* comma-separated, e.g. ".onnx" (informational) */
  /* Confidence 0..100 that `head` (the first bytes of the file, at most 4096) is this format.
   * Must not read past head_size. Thread-safe. */
  int32_t (*probe)(void* user, const uint8_t* head, size_t head_size, const char* path);
  /* Builds the graph. On error the core discards the partial graph. */
  loom_status_t* (*load)(void* user, const loom_load_args_t* args, const loom_builder_api_t* api,
                         loom_graph_builder_t* builder);
  void* user;
  /* Since 1.1, optional (NULL: this format cannot write). Writes the model in `args` to
   * args->path, replacing it. The core reads this member only when struct_size covers it. */
  loom_status_t* (*save)(void* user, const loom_save_args_t* args);
} loom_format_t;

/* ------------------------------------------------------------------------------------------ */
/* Op schemas and kernels (kernel plugins, and devices for their own ops)                     */
/* ------------------------------------------------------------------------------------------ */

/* Result of type and shape inference for one output. */
typedef struct loom_inferred_t {
  size_t struct_size;
  loom_dtype_t dtype;          /* UNDEFINED if unknown */
  int32_t rank;                /* -1 if unknown */
  int64_t dims[LOOM_MAX_RANK]; /* -1 = unknown extent */
} loom_inferred_t;

typedef struct loom_op_schema_t {
  size_t struct_size;
  const char* domain;      /* e.g. "com.example" */
  const char* op_type;
  int64_t since_version;   /* first opset version of `domain` this schema applies to */
  int32_t min_inputs, max_inputs;   /* max -1 = variadic */
  int32_t min_outputs, max_outputs;
  /* Optional. `inputs[i]` is NULL for an omitted input; constant inputs have data set.
   * Fill outputs[0..num_outputs). Leave unknown what cannot be known. Thread-safe. */
  loom_status_t* (*infer)(void* user, const loom_node_t* node,
                          const loom_value_info_t* const* inputs, size_t num_outputs,
                          loom_inferred_t* outputs);
  void* user;
} loom_op_schema_t;

/* What a device offers a kernel while it computes. */
typedef struct loom_kernel_context_api_t {
  size_t struct_size;
  size_t (*num_inputs)(loom_kernel_context_t* ctx);
  /* NULL for an omitted optional input. Host-visible memory. Borrowed for the call. */
  const loom_tensor_t* (*input)(loom_kernel_context_t* ctx, size_t index);
  size_t (*num_outputs)(loom_kernel_context_t* ctx);
  /* Allocates output `index` with the given type and shape and returns it (host-visible). */
  loom_status_t* (*allocate_output)(loom_kernel_context_t* ctx, size_t index, loom_dtype_t dtype,
                                    int32_t rank, const int64_t* dims, loom_tensor_t** out);
  /* Runs fn(user, begin, end) over [0, n) split across the device's threads; returns when all
   * chunks are done. fn must not throw (plugins catch at their boundary). */
  void (*parallel_for)(loom_kernel_context_t* ctx, size_t n,
                       void (*fn)(void* user, size_t begin, size_t end), void* user);
} loom_kernel_context_api_t;

typedef struct loom_kernel_t {
  size_t struct_size;
  const char* device;     /* the device name it runs on, e.g. "cpu" */
  const char* domain;
  const char* op_type;
  int64_t since_version;
  /* Optional. Called when a subgraph holding `node` is compiled; *state goes to compute. */
  loom_status_t* (*create)(void* user, const loom_graph_t* graph, const loom_node_t* node,
                           void** state);
  /* Computes the node. May be called concurrently for different states. */
  loom_status_t* (*compute)(void* state, const loom_node_t* node,
                            const loom_kernel_context_api_t* api, loom_kernel_context_t* ctx);
  /* Optional. Frees *state from create. */
  void (*destroy)(void* state);
  void* user;
} loom_kernel_t;

/* ------------------------------------------------------------------------------------------ */
/* Devices                                                                                     */
/* ------------------------------------------------------------------------------------------ */

#define LOOM_DEVICE_HOST_MEMORY 0x1u /* buffers are plain host memory, tensors' data is set: the
                                        core passes tensors between such devices without copies */

typedef struct loom_device_info_t {
  size_t struct_size;
  char name[64];          /* instance name, e.g. "cpu", "opencl:1" */
  char description[256];  /* human-readable: hardware, driver, memory... */
  bool available;         /* false: unusable here; reason in unavailable_reason */
  char unavailable_reason[256];
  uint32_t flags;         /* LOOM_DEVICE_* */
  /* 1.9 (the host reads them only when struct_size covers them: LOOM_HAS_MEMBER). The device's
   * own cost hints for the scheduler's cost model, which ranks placements (whether an island
   * of nodes moves to a neighbouring device to save transfers); they need not predict latency.
   * 0 = no hint: the host's default for a device with (or without) LOOM_DEVICE_HOST_MEMORY
   * applies. A hint that is negative, not finite or above 1e12 is ignored with a warning. The
   * transfer hints are read only for devices without LOOM_DEVICE_HOST_MEMORY (host-memory
   * devices exchange tensors without copies). Users still override every number (the session
   * option `cost_model`). */
  double cost_gflops;              /* sustained arithmetic throughput, 1e9 FLOP/s */
  double cost_transfer_gbps;       /* host <-> device bandwidth, 1e9 bytes/s */
  double cost_transfer_latency_us; /* fixed cost of one copy to or from the host, microseconds */
  double cost_launch_us;           /* fixed cost of running one executable, microseconds */
} loom_device_info_t;

typedef struct loom_device_create_args_t {
  size_t struct_size;
  loom_host_t* host;      /* for find_kernel and logging; outlives the device */
  int32_t instance;       /* index from enumerate, or -1 = the plugin's best choice */
  int32_t threads;        /* 0 = device default */
  const char* options;    /* "key=value;..." from the user, may be "" */
} loom_device_create_args_t;

typedef struct loom_support_t {
  size_t struct_size;
  bool supported;
  char reason[256];       /* why not, when !supported (shown by --explain) */
} loom_support_t;

typedef struct loom_compile_args_t {
  size_t struct_size;
  const loom_graph_t* graph;  /* the subgraph: inputs, constants, nodes, outputs */
  size_t arena_size;          /* bytes of the arena the core planned for values with
                                 arena_offset >= 0; the device allocates it (or ignores the
                                 plan and allocates as it likes) */
  /* 1.3 (optional: check struct_size with LOOM_HAS_MEMBER; NULL when the host does not offer
   * it). The device may call constant_copied(host_user, i) during this compile call, at most
   * once per constant value i (an index of graph->values), once it holds what it needs of i's
   * bytes and will read i's `data` neither later in this call nor at run time (it copied or
   * repacked them). The host may free the bytes at once, when no other reader needs them:
   * weights a device repacks are then not held twice, not even while the subgraph compiles.
   * Never calling it is always correct. */
  void (*constant_copied)(void* host_user, int32_t value);
  void* host_user;
  /* 1.8 (optional: check struct_size with LOOM_HAS_MEMBER; NULL when the host does not offer
   * it). The device may call free_axis(host_user, input, axis) during this compile call to say
   * that the executable also runs when graph->inputs[input] has another extent on `axis` (any
   * extent >= 0, the other axes as compiled), and then reports the dims of its outputs as they
   * come out of that run. The host may then run the executable with such inputs instead of
   * compiling the subgraph again for them. It does so only where the extent changes no shape
   * outside this subgraph except graph outputs, and nothing the host folded at planning read
   * it. A device that calls it plans the memory of the values whose extent follows the axis
   * itself (their arena offsets hold for the compiled extents only), checks at run time that
   * the inputs it reads agree with each other, and holds no compiled state sized by the axis.
   * Never calling it is always correct. */
  void (*free_axis)(void* host_user, int32_t input, int32_t axis);
} loom_compile_args_t;

/* 1.5: one step of a run, as a device reports it to loom_run_control_t::profile. Everything is
 * borrowed for the call. */
typedef struct loom_profile_step_t {
  size_t struct_size;
  const char* name;       /* what ran, for people: a node's name, or the device's name of a
                             fused step (may be "") */
  const char* detail;     /* how it ran, or NULL: the primitive or kernel and its
                             implementation, e.g. "convolution jit:avx2" */
  size_t num_nodes;       /* the nodes of the compiled subgraph the step computed, as indices of
                             graph->nodes (several for a fused step); 0 for a step of the
                             device's own that no node asked for (a layout reorder, a copy) */
  const int32_t* nodes;
  uint64_t start_ns;      /* CLOCK_MONOTONIC nanoseconds (std::chrono::steady_clock on Linux) */
  uint64_t end_ns;
} loom_profile_step_t;

/* 1.4: the limits of one run and how to stop it (docs/limits.md). A hostile model can ask for
 * any size or trip count from its data; the device checks these before it allocates or loops. */
typedef struct loom_run_control_t {
  size_t struct_size;
  /* Most bytes one tensor the device allocates while running (outputs and scratch whose size
   * depends on the run's data) may take; 0 = no bound. */
  uint64_t max_tensor_bytes;
  /* Most bytes the device's run-time allocations of one run may hold at once (planned arenas
   * and compiled constants are not counted: they are fixed when the subgraph compiles);
   * 0 = no bound. */
  uint64_t max_run_bytes;
  /* Most iterations one Loop (or other data-driven loop) may run, whatever its trip count and
   * condition say; 0 = no bound. */
  int64_t max_loop_iterations;
  /* Returns NULL to go on, or a status (LOOM_ERROR_CANCELLED) when the run must stop: the
   * application cancelled it or it passed its deadline. The device calls it between steps
   * (nodes, primitives, loop iterations) and returns that status from run, which then owns it.
   * Thread-safe and cheap (an atomic load and a clock read). */
  loom_status_t* (*poll)(void* user);
  void* user;
  /* 1.5 (optional: check struct_size with LOOM_HAS_MEMBER; NULL when this run is not
   * profiled). The device calls it, with `user` above, once per step of the run (a node, a
   * fused group, a primitive, a loop iteration's body...), after the step's work finished, from
   * any of its threads. An asynchronous device reports the times of the work itself, waiting
   * after each step if it must. Every node of the compiled graph should be covered by some
   * step. Thread-safe; the host copies what it keeps. When NULL, profiling costs nothing. */
  void (*profile)(void* user, const loom_profile_step_t* step);
} loom_run_control_t;

typedef struct loom_run_args_t {
  size_t struct_size;
  size_t num_inputs;
  const loom_tensor_t* inputs;  /* in graph->inputs order, in this device's memory, borrowed */
  size_t num_outputs;
  loom_tensor_t* outputs;       /* in graph->outputs order: the device allocates each with its
                                   alloc (buffer set) and fills the struct; the caller owns the
                                   buffers and frees them with free_buffer */
  /* 1.4 (optional: check struct_size with LOOM_HAS_MEMBER; NULL when the host sets no limits).
   * Valid during the run call. */
  const loom_run_control_t* control;
} loom_run_args_t;

typedef struct loom_device_api_t {
  size_t struct_size;
  const char* name;   /* device family name, unique among devices: "cpu", "onednn"... */
  const char* description;
  /* Lists the instances this plugin can drive. Calls fn once per instance. Must not fail hard:
   * a missing driver is reported as an unavailable instance. */
  void (*enumerate)(void* user, void (*fn)(void* fn_user, const loom_device_info_t* info),
                    void* fn_user);
  loom_status_t* (*create)(void* user, const loom_device_create_args_t* args,
                           loom_device_t** out);
  void (*destroy)(loom_device_t* device);
  void (*get_info)(loom_device_t* device, loom_device_info_t* out);
  /* Capability query for one node of `graph` (shapes where known). Thread-safe. */
  void (*supports_node)(loom_device_t* device, const loom_graph_t* graph, const loom_node_t* node,
                        loom_support_t* out);
  loom_status_t* (*alloc)(loom_device_t* device, size_t size, loom_buffer_t** out);
  void (*free_buffer)(loom_device_t* device, loom_buffer_t* buffer);
  /* Host pointer of a buffer, or NULL if not host-visible. */
  void* (*buffer_host_ptr)(loom_device_t* device, loom_buffer_t* buffer);
  loom_status_t* (*copy_to_host)(loom_device_t* device, loom_buffer_t* src, size_t offset,
                                 void* dst, size_t size);
  loom_status_t* (*copy_from_host)(loom_device_t* device, const void* src, loom_buffer_t* dst,
                                   size_t offset, size_t size);
  /* Compiles a subgraph. The view is valid during the call; constants' data stays valid while
   * the executable lives, except for those the device reports to args->constant_copied (1.3). */
  loom_status_t* (*compile)(loom_device_t* device, const loom_compile_args_t* args,
                            loom_executable_t** out);
  void (*release_executable)(loom_device_t* device, loom_executable_t* exe);
  /* Runs a compiled subgraph to completion. Not called concurrently on one executable. */
  loom_status_t* (*run)(loom_device_t* device, loom_executable_t* exe,
                        const loom_run_args_t* args);
  void* user;
} loom_device_api_t;

/* ------------------------------------------------------------------------------------------ */
/* The host API: what the core offers every plugin                                             */
/* ------------------------------------------------------------------------------------------ */

typedef enum loom_log_level_t {
  LOOM_LOG_DEBUG = 0,
  LOOM_LOG_INFO = 1,
  LOOM_LOG_WARNING = 2,
  LOOM_LOG_ERROR = 3
} loom_log_level_t;

typedef struct loom_plugin_info_t {
  size_t struct_size;
  uint32_t abi_version;     /* filled by the plugin: the ABI version it was built for */
  const char* name;         /* unique plugin name, e.g. "onnx", "cpu" (static storage) */
  const char* version;      /* the plugin's own version string (static storage) */
  const char* description;  /* (static storage) */
  /* Optional: called once before the library is unloaded. */
  void (*shutdown)(void);
} loom_plugin_info_t;

typedef struct loom_host_api_t {
  size_t struct_size;
  uint32_t abi_version;     /* the version the host speaks (its highest) */
  /* Status objects. status_new copies `message`. */
  loom_status_t* (*status_new)(loom_status_code_t code, const char* message);
  loom_status_code_t (*status_code)(const loom_status_t* status);
  const char* (*status_message)(const loom_status_t* status);
  void (*status_free)(loom_status_t* status);
  void (*log)(loom_log_level_t level, const char* source, const char* message);
  /* Registration, only during loom_plugin_entry. Descriptors are copied; the strings and
   * function pointers they point to must stay valid until the plugin is unloaded (static
   * storage). A taken name fails the whole plugin. */
  loom_status_t* (*register_format)(loom_registrar_t* r, const loom_format_t* format);
  loom_status_t* (*register_device)(loom_registrar_t* r, const loom_device_api_t* device);
  loom_status_t* (*register_op_schema)(loom_registrar_t* r, const loom_op_schema_t* schema);
  loom_status_t* (*register_kernel)(loom_registrar_t* r, const loom_kernel_t* kernel);
  /* The kernel a kernel plugin registered for (device, domain, op_type) with the highest
   * since_version <= opset, or NULL. The pointer lives as long as the host. */
  const loom_kernel_t* (*find_kernel)(loom_host_t* host, const char* device, const char* domain,
                                      const char* op_type, int64_t opset);
  /* Inference for a node by the core's registered schemas (ONNX + kernel plugins). */
  loom_status_t* (*infer_node)(loom_host_t* host, const loom_node_t* node,
                               const loom_value_info_t* const* inputs, size_t num_outputs,
                               loom_inferred_t* outputs);
} loom_host_api_t;

/* ------------------------------------------------------------------------------------------ */
/* The entry point                                                                             */
/* ------------------------------------------------------------------------------------------ */

/* Every plugin exports exactly this function (use LOOM_PLUGIN_EXPORT).
 *
 * Handshake: the host passes the highest ABI version it speaks (host->abi_version). The plugin
 * fills info->abi_version with the version it was built for and returns an error status
 * (created with host->status_new) if it cannot work with the host, e.g. a different major or a
 * host minor older than it needs. The host refuses a plugin of another major, or of a newer
 * minor than its own, naming both versions.
 * Registration: the plugin registers formats, devices, schemas and kernels through `host` and
 * `registrar`; if it returns an error, all its registrations are discarded.
 * Called once per load, on the loading thread. Must not throw. */
typedef loom_status_t* (*loom_plugin_entry_fn)(const loom_host_api_t* host,
                                               loom_registrar_t* registrar,
                                               loom_plugin_info_t* info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_PLUGIN_H */
