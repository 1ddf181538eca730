/*
 * loom/loom.h -- the public C API of libloom for applications (infer-run, tests, embedders).
 *
 * C99. Shares the data-type and status enums with the plugin ABI (loom/plugin.h).
 * Every function that can fail returns loom_status_t*: NULL on success, otherwise an error the
 * caller frees with loom_status_free. Out-parameters come last.
 *
 * Thread-safety: a runtime may be used from several threads for loading models and creating
 * sessions. loom_session_run and loom_session_run_values may be called from several threads at
 * once: a session runs one inference at a time (the others wait) unless it was created with
 * max_concurrent_runs > 1. The other session functions are thread-safe too.
 */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include <loom/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define LOOM_API __declspec(dllimport)
#else
#define LOOM_API __attribute__((visibility("default")))
#endif

typedef struct loom_runtime_t loom_runtime_t;
typedef struct loom_model_t loom_model_t;
typedef struct loom_session_t loom_session_t;

/* Library version, e.g. "0.1.0". Static storage. */
LOOM_API const char* loom_version(void);

/* ---- status --------------------------------------------------------------------------- */
LOOM_API loom_status_code_t loom_status_code(const loom_status_t* status);
LOOM_API const char* loom_status_message(const loom_status_t* status); /* owned by status */
LOOM_API void loom_status_free(loom_status_t* status);                 /* NULL is fine */

/* ---- runtime: plugin discovery -------------------------------------------------------- */

typedef void (*loom_log_fn)(void* user, loom_log_level_t level, const char* source,
                            const char* message);

typedef struct loom_runtime_options_t {
  size_t struct_size;
  /* Explicit plugins (files or directories), searched first. A file named here that fails to
   * load is recorded with explicit_request = true. */
  size_t num_plugin_paths;
  const char* const* plugin_paths;
  bool use_env_path;       /* honour LOOM_PLUGIN_PATH (':'-separated; ignored when setuid) */
  bool use_default_paths;  /* the install directory next to libloom, then the build tree */
  loom_log_level_t log_level; /* messages below it are dropped */
  loom_log_fn log_fn;      /* NULL: messages go to stderr as "loom: <level>: <message>" */
  void* log_user;
  /* Appended in 0.5: probe each plugin in a forked child first (load + entry); one whose probe
   * crashes, exits or runs past 10 s is skipped with its record's error naming what happened,
   * instead of ending the process. Only while the process is single-threaded (otherwise a
   * warning, and plugins load without it). LOOM_ISOLATE_PLUGIN_PROBE=1 asks for it too. */
  bool isolate_plugin_probe;
  /* Appended in 0.5: a model importing an opset newer than every schema of its domain knows is
   * refused at load (naming both versions). 1 = accept it with a warning (it is validated and
   * run with the newest schemas known), -1 = refuse, 0 = LOOM_ALLOW_NEWER_OPSETS=1 decides. */
  int32_t allow_newer_opsets;
} loom_runtime_options_t;

/* Loads plugins. Plugin problems never fail this call: they are recorded per plugin. */
LOOM_API loom_status_t* loom_runtime_create(const loom_runtime_options_t* options,
                                            loom_runtime_t** out);
LOOM_API void loom_runtime_destroy(loom_runtime_t* runtime); /* after all models/sessions */

typedef struct loom_plugin_record_t {
  size_t struct_size;
  const char* path;         /* file that was tried */
  bool loaded;
  bool explicit_request;    /* named by the user (options.plugin_paths) */
  const char* name;         /* "" when it never got that far */
  const char* version;
  uint32_t abi_version;     /* the plugin's, 0 when unknown */
  const char* registered;   /* e.g. "format onnx; device cpu" */
  const char* error;        /* one line, "" when loaded */
  /* Appended in 0.5: "; "-separated warnings about a plugin that may still have loaded (a
   * world-writable file or directory, an owner other than root or the user); "" if none. */
  const char* warnings;
} loom_plugin_record_t;

/* Strings stay valid while the runtime lives. */
LOOM_API size_t loom_runtime_num_plugins(const loom_runtime_t* runtime);
LOOM_API loom_status_t* loom_runtime_plugin(const loom_runtime_t* runtime, size_t index,
                                            loom_plugin_record_t* out);

/* Calls fn once per device instance of every loaded device plugin. */
LOOM_API void loom_runtime_list_devices(loom_runtime_t* runtime,
                                        void (*fn)(void* user, const char* family,
                                                   const loom_device_info_t* info),
                                        void* user);

/* ---- models --------------------------------------------------------------------------- */

/* Probes the file by content, loads it with the best format plugin and checks the graph. */
LOOM_API loom_status_t* loom_model_load(loom_runtime_t* runtime, const char* path,
                                        loom_model_t** out);
/* Loads a model from `size` bytes at `data` (0.6), as loom_model_load does from a file. The core
 * copies the bytes: the caller may free them when the call returns. `format` names the format
 * plugin ("onnx", "loom", "tflite", "ncnn"), or NULL/"" to probe the bytes. `base_directory`
 * is where the model's external data lives (ONNX external initializers), or NULL: the model
 * then may not reference external files. Only formats built for plugin ABI 1.5 or later load
 * from memory. */
LOOM_API loom_status_t* loom_model_load_memory(loom_runtime_t* runtime, const void* data,
                                               size_t size, const char* format,
                                               const char* base_directory, loom_model_t** out);
/* Sessions keep their own reference. Free the model once its sessions exist: a session whose
 * devices copied weights at compile (repacked for their kernels) can then free the model's
 * bytes of them, instead of holding every weight twice. */
LOOM_API void loom_model_free(loom_model_t* model);

typedef struct loom_io_info_t {
  size_t struct_size;
  const char* name;
  loom_dtype_t dtype;
  int32_t rank;                 /* -1 unknown */
  int64_t dims[LOOM_MAX_RANK];  /* -1 = dynamic */
  const char* dim_params[LOOM_MAX_RANK]; /* symbolic name or NULL */
} loom_io_info_t;

LOOM_API size_t loom_model_num_inputs(const loom_model_t* model);
LOOM_API size_t loom_model_num_outputs(const loom_model_t* model);
LOOM_API loom_status_t* loom_model_input(const loom_model_t* model, size_t index,
                                         loom_io_info_t* out);
LOOM_API loom_status_t* loom_model_output(const loom_model_t* model, size_t index,
                                          loom_io_info_t* out);
LOOM_API const char* loom_model_format(const loom_model_t* model); /* e.g. "onnx" */
LOOM_API size_t loom_model_num_nodes(const loom_model_t* model);       /* top level */
LOOM_API size_t loom_model_num_initializers(const loom_model_t* model); /* top level */
LOOM_API size_t loom_model_num_metadata(const loom_model_t* model);
LOOM_API void loom_model_metadata(const loom_model_t* model, size_t index, const char** key,
                                  const char** value);

/* ---- saving and converting (0.2) ------------------------------------------------------ */

/* What loom_model_simplify removed. */
typedef struct loom_simplify_report_t {
  size_t struct_size;
  size_t identities;        /* Identity nodes bypassed */
  size_t dropouts;          /* inference-mode Dropout nodes bypassed */
  size_t dead_nodes;        /* nodes whose outputs nothing reads */
  size_t unused_constants;  /* initializers nothing reads (graph inputs are kept) */
  size_t constant_nodes;    /* Constant nodes turned into initializers */
} loom_simplify_report_t;

/* Applies the format-independent simplifications (docs/loom-format.md) to `model`. The model's
 * inputs and outputs do not change; sessions created before keep the graph they were created
 * with. `report` may be NULL. */
LOOM_API loom_status_t* loom_model_simplify(loom_runtime_t* runtime, loom_model_t* model,
                                            loom_simplify_report_t* report);

/* Writes `model` to `path` with the format plugin named `format` (e.g. "loom"). Fails with
 * LOOM_ERROR_NOT_FOUND when no such format is loaded and LOOM_ERROR_UNSUPPORTED when it
 * cannot write. */
LOOM_API loom_status_t* loom_model_save(loom_runtime_t* runtime, const loom_model_t* model,
                                        const char* format, const char* path);

/* ---- sessions ------------------------------------------------------------------------- */

typedef struct loom_session_options_t {
  size_t struct_size;
  const char* devices;      /* priority list, e.g. "onednn,cpu"; NULL/"" = "cpu" */
  int32_t threads;          /* 0 = all cores */
  bool no_fallback;         /* fail instead of falling back to the cpu device */
  const char* device_options; /* "key=value;..." passed to every device */
  /* Appended in 0.2 (struct_size tells the library whether a caller has them): */
  const char* placements;   /* "PATTERN=DEVICE;..." pins the nodes whose name or op type matches
                               the glob PATTERN (* and ?) to DEVICE; later entries win */
  const char* cost_model;   /* "DEVICE.KEY=VALUE;..." overrides the scheduler's cost model
                               (KEY: gflops, transfer_gbps, transfer_latency_us, launch_us;
                               DEVICE may be *); applied after $LOOM_COST_MODEL */
  /* Appended in 0.4 (shapes; docs/architecture.md, "Plans by the shapes of the run"): */
  const char* shape_overrides; /* "NAME=DIMS;..." fixes graph input NAME's shape at session
                                  creation (DIMS like 1x3x224x224, "" for a scalar); it must
                                  agree with the declared rank and static extents. A session
                                  whose input shapes are then all known compiles at creation */
  int64_t plan_cache_entries;  /* plans kept for distinct input-shape signatures (models with
                                  symbolic dimensions); least recently used evicted first;
                                  0 = default (16), at least 1 */
  int64_t plan_cache_bytes;    /* bound on the compiled state those plans hold (arenas and
                                  weights their devices copied); 0 = default (1 GiB); the
                                  plan of the current run is always kept */
  /* Appended in 0.5 (limits of a run; docs/limits.md). A run that would pass one ends with
   * LOOM_ERROR_LIMIT_EXCEEDED naming the node and the limit. For each: 0 = the default,
   * -1 = no bound. */
  int64_t max_tensor_bytes;    /* bytes one tensor made while running may take (default: the
                                  machine's physical memory) */
  int64_t max_run_bytes;       /* bytes a device's run-time allocations of one run may hold at
                                  once, planned arenas not counted (default: physical memory) */
  int64_t max_loop_iterations; /* iterations one Loop may run, whatever its trip count and
                                  condition say (default 10,000,000) */
  int64_t deadline_ms;         /* a run still going after this many milliseconds ends with
                                  LOOM_ERROR_CANCELLED (0 = no deadline; -1 is not allowed) */
  /* Appended in 0.6: how many runs may be in progress at once, called from different threads.
   * 0 or 1: one at a time (later calls wait for the run in progress). N > 1: the session
   * compiles up to N - 1 more copies of its plan when concurrent calls need them; `threads` is
   * then the budget of all of them (each copy gets max(1, threads / N) threads), and devices
   * that share compiled weights between copies (onednn) hold them once. The session keeps a
   * reference to the model's weights to compile those copies. At most loom_max_threads(). */
  int32_t max_concurrent_runs;
} loom_session_options_t;

/* The largest `threads` a session accepts on this machine (0.6): the larger of 64 and 4 per
 * online core. Every device starts its own pool of that many threads, so an absurd count would
 * exhaust the process's thread ids. */
LOOM_API int32_t loom_max_threads(void);

LOOM_API loom_status_t* loom_session_create(loom_runtime_t* runtime, loom_model_t* model,
                                            const loom_session_options_t* options,
                                            loom_session_t** out);
LOOM_API void loom_session_destroy(loom_session_t* session);

/* Host tensor for the application side. As an input: borrowed, data must hold byte_size bytes.
 * As an output: filled by the core; free the data with loom_host_tensor_release. */
typedef struct loom_host_tensor_t {
  size_t struct_size;
  loom_dtype_t dtype;
  int32_t rank;
  int64_t dims[LOOM_MAX_RANK];
  void* data;
  size_t byte_size;
} loom_host_tensor_t;

LOOM_API void loom_host_tensor_release(loom_host_tensor_t* tensor);

/* Runs the model. Inputs by name (every graph input without a default must be given); outputs
 * in the model's output order, `outputs` must have room for loom_model_num_outputs entries. */
LOOM_API loom_status_t* loom_session_run(loom_session_t* session, size_t num_inputs,
                                         const char* const* input_names,
                                         const loom_host_tensor_t* inputs, size_t num_outputs,
                                         loom_host_tensor_t* outputs);

/* Cancels the runs of `session` in progress or waiting for it at the time of the call: each
 * ends at its next node or loop iteration with LOOM_ERROR_CANCELLED (within milliseconds, a
 * single long primitive of a device permitting). Later runs are not affected. Thread-safe, from
 * any thread (a signal handler included: it only increments an atomic counter). (0.5) */
LOOM_API void loom_session_cancel(loom_session_t* session);

/* Human-readable plan (devices, subgraphs, transfers, planned memory). Free with
 * loom_string_free. Reflects the last run's shapes, or the declared shapes before any run. */
LOOM_API loom_status_t* loom_session_explain(loom_session_t* session, char** text);
/* The same as JSON. */
LOOM_API loom_status_t* loom_session_plan_json(loom_session_t* session, char** json);
/* The same as a Graphviz digraph: one cluster per subgraph, colored by device, with the bytes
 * on every edge that crosses devices. Free with loom_string_free. */
LOOM_API loom_status_t* loom_session_plan_dot(loom_session_t* session, char** dot);
/* Planned peak bytes of the memory plan of the last run (0 before any run). */
LOOM_API size_t loom_session_planned_peak_bytes(const loom_session_t* session);

/* The plan cache of a session (0.4): one plan per input-shape signature for models with symbolic
 * dimensions (a session with static inputs holds one, compiled at creation). */
typedef struct loom_plan_cache_stats_t {
  size_t struct_size;
  size_t entries;          /* plans held now */
  size_t bytes;            /* their compiled state: arenas + weights the devices copied */
  size_t capacity_entries; /* the bounds in force */
  size_t capacity_bytes;
  uint64_t hits, misses;   /* runs that found their plan / had one made */
  uint64_t evictions;      /* plans freed to stay within the bounds */
} loom_plan_cache_stats_t;
LOOM_API loom_status_t* loom_session_plan_cache_stats(loom_session_t* session,
                                                      loom_plan_cache_stats_t* stats);
LOOM_API void loom_string_free(char* text);

/* ---- sequence and optional values (0.3) ------------------------------------------------ */

/* What a graph input or output holds: ONNX tensor, seq(tensor), optional(tensor) or
 * optional(seq(tensor)). */
typedef enum loom_value_kind_t {
  LOOM_VALUE_KIND_TENSOR = 0,
  LOOM_VALUE_KIND_SEQUENCE = 1,
  LOOM_VALUE_KIND_OPTIONAL_TENSOR = 2,
  LOOM_VALUE_KIND_OPTIONAL_SEQUENCE = 3
} loom_value_kind_t;

/* Kind of input/output `index` (same order as loom_model_input/loom_model_output). For a
 * sequence or optional, the loom_io_info_t of that index describes its elements. TENSOR when
 * `model` is NULL or `index` is out of range. Thread-safe. */
LOOM_API loom_value_kind_t loom_model_input_kind(const loom_model_t* model, size_t index);
LOOM_API loom_value_kind_t loom_model_output_kind(const loom_model_t* model, size_t index);

/* A value of any kind for loom_session_run_values.
 *   TENSOR:            num_tensors = 1, tensors[0] is the tensor.
 *   SEQUENCE:          num_tensors elements (0 for an empty sequence) in order.
 *   OPTIONAL_TENSOR:   has_value false (none, num_tensors 0) or true (num_tensors 1).
 *   OPTIONAL_SEQUENCE: has_value false (none) or true and num_tensors elements of the sequence.
 * elem_dtype is the containers' element type (it types an empty sequence or optional; UNDEFINED
 * lets the model's declaration decide). An input: borrowed for the call, tensors' data as in
 * loom_session_run. An output: filled by the core; release it with loom_value_release. */
typedef struct loom_value_t {
  size_t struct_size;
  loom_value_kind_t kind;
  loom_dtype_t elem_dtype;
  bool has_value;
  size_t num_tensors;
  loom_host_tensor_t* tensors;
} loom_value_t;

/* Frees what the core allocated for an output value (the tensors' data and the array) and
 * zeroes num_tensors and tensors. NULL is fine. Do not call it on inputs you own. */
LOOM_API void loom_value_release(loom_value_t* value);

/* Like loom_session_run with values of any kind: inputs by name (a tensor or a sequence may
 * be given for an optional input of its type); `outputs` must have room for
 * loom_model_num_outputs entries and receives them in the model's output order. On failure no
 * output needs releasing. Concurrent calls as for loom_session_run. */
LOOM_API loom_status_t* loom_session_run_values(loom_session_t* session, size_t num_inputs,
                                                const char* const* input_names,
                                                const loom_value_t* inputs, size_t num_outputs,
                                                loom_value_t* outputs);

/* ---- profiling (0.6; docs/profiling.md) ----------------------------------------------- */

/* One timed event of a profiled run. Strings are valid during the callback only. */
typedef struct loom_profile_event_t {
  size_t struct_size;
  const char* category;  /* "node": one node; "fused": a device step computing several nodes;
                            "device": a step of the device's own (a reorder); "transfer": copies
                            between devices; "subgraph": a whole device call; "host": a node the
                            core ran itself (control flow, sequences); "run": the whole run */
  const char* name;      /* node name; for a fused step its first node's (or the device's
                            name); the subgraph's or the run's label otherwise */
  const char* op_type;   /* the node's op type; "Conv+Relu" for a fused step; "" otherwise */
  const char* device;    /* the device instance, e.g. "onednn"; "host" for the core's own */
  const char* nodes;     /* for "fused": the names of the nodes it computed, comma-separated;
                            "" otherwise */
  const char* shapes;    /* the input shapes of a node, e.g. "1x3x224x224,64x3x7x7" ("" if
                            unknown or several nodes) */
  const char* detail;    /* how the device ran it, e.g. "convolution jit:avx2", or "" */
  uint64_t run;          /* which profiled run, from 1 */
  uint64_t thread;       /* the OS thread that reported it */
  uint64_t start_ns;     /* nanoseconds since profiling started */
  uint64_t end_ns;
  bool counted;          /* the event's time is its own and the summary adds it up: true for
                            node, fused, device, transfer and host (a control-flow node: false,
                            its bodies' steps count), and for a subgraph whose device reported
                            no steps (a plugin built before ABI 1.5); false for run */
} loom_profile_event_t;

/* Starts recording the timings of every run of `session` (clearing what was recorded); stop
 * ends it. At most `max_events` events are kept (0 = 1,000,000); later ones are counted as
 * dropped. Thread-safe. Profiling makes asynchronous devices wait after each step. */
LOOM_API loom_status_t* loom_session_profile_start(loom_session_t* session, size_t max_events);
LOOM_API void loom_session_profile_stop(loom_session_t* session);
/* Calls fn for each event recorded, in the order recorded; returns how many were dropped. fn
 * is called on a copy of the events, so it may call the session's functions. */
LOOM_API size_t loom_session_profile_events(loom_session_t* session,
                                            void (*fn)(void* user,
                                                       const loom_profile_event_t* event),
                                            void* user);
/* The recorded events as a Chrome trace (JSON; loads in Perfetto and chrome://tracing): one
 * track per device and thread. Free with loom_string_free. */
LOOM_API loom_status_t* loom_session_profile_trace(loom_session_t* session, char** json);
/* A table of the recorded runs: time per op type and per node (total, share, count, device),
 * and the mean run time the table adds up to. Free with loom_string_free. */
LOOM_API loom_status_t* loom_session_profile_summary(loom_session_t* session, char** text);

/* Bytes of one element of dtype (0 for STRING/UNDEFINED). */
LOOM_API size_t loom_dtype_size(loom_dtype_t dtype);
/* "float32", "int64", ... Static storage. */
LOOM_API const char* loom_dtype_name(loom_dtype_t dtype);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_LOOM_H */
