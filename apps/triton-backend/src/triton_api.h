/*
 * triton_api.h -- the part of Triton Inference Server's C interfaces (TRITONSERVER_* and
 * TRITONBACKEND_*) that the Loom backend uses, declared here in our own words from Triton's
 * documented backend API (TRITONBACKEND API 1.19, served by tritonserver 2.51). Triton's own
 * headers are in no Debian or PyPI package, so the backend carries just these declarations;
 * they are not a copy of Triton's headers. The functions are defined by libtritonserver and
 * resolved when tritonserver loads the backend (hence no -z defs for libtriton_loom.so).
 *
 * The enumerations' numeric values are part of Triton's ABI and must stay as listed.
 */
#ifndef LOOM_TRITON_API_H
#define LOOM_TRITON_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The backend API version this backend is written against; TRITONBACKEND_Initialize refuses a
 * server whose major differs or whose minor is lower. */
#define LOOM_TRITON_API_MAJOR 1u
#define LOOM_TRITON_API_MINOR 19u

/* Opaque objects owned by the server. */
typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONSERVER_Message TRITONSERVER_Message;
typedef struct TRITONBACKEND_Backend TRITONBACKEND_Backend;
typedef struct TRITONBACKEND_Model TRITONBACKEND_Model;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;
typedef struct TRITONBACKEND_Input TRITONBACKEND_Input;
typedef struct TRITONBACKEND_Output TRITONBACKEND_Output;

/* Element types of tensors on the wire (the KServe names are BOOL, UINT8, ..., BYTES, BF16). */
typedef enum TRITONSERVER_DataType {
  TRITONSERVER_TYPE_INVALID = 0,
  TRITONSERVER_TYPE_BOOL = 1,
  TRITONSERVER_TYPE_UINT8 = 2,
  TRITONSERVER_TYPE_UINT16 = 3,
  TRITONSERVER_TYPE_UINT32 = 4,
  TRITONSERVER_TYPE_UINT64 = 5,
  TRITONSERVER_TYPE_INT8 = 6,
  TRITONSERVER_TYPE_INT16 = 7,
  TRITONSERVER_TYPE_INT32 = 8,
  TRITONSERVER_TYPE_INT64 = 9,
  TRITONSERVER_TYPE_FP16 = 10,
  TRITONSERVER_TYPE_FP32 = 11,
  TRITONSERVER_TYPE_FP64 = 12,
  TRITONSERVER_TYPE_BYTES = 13,
  TRITONSERVER_TYPE_BF16 = 14
} TRITONSERVER_DataType;

/* Where a buffer lives. The backend reads and writes host memory only. */
typedef enum TRITONSERVER_MemoryType {
  TRITONSERVER_MEMORY_CPU = 0,
  TRITONSERVER_MEMORY_CPU_PINNED = 1,
  TRITONSERVER_MEMORY_GPU = 2
} TRITONSERVER_MemoryType;

typedef enum TRITONSERVER_InstanceGroupKind {
  TRITONSERVER_INSTANCEGROUPKIND_AUTO = 0,
  TRITONSERVER_INSTANCEGROUPKIND_CPU = 1,
  TRITONSERVER_INSTANCEGROUPKIND_GPU = 2,
  TRITONSERVER_INSTANCEGROUPKIND_MODEL = 3
} TRITONSERVER_InstanceGroupKind;

typedef enum TRITONSERVER_LogLevel {
  TRITONSERVER_LOG_INFO = 0,
  TRITONSERVER_LOG_WARN = 1,
  TRITONSERVER_LOG_ERROR = 2,
  TRITONSERVER_LOG_VERBOSE = 3
} TRITONSERVER_LogLevel;

typedef enum TRITONSERVER_Error_Code {
  TRITONSERVER_ERROR_UNKNOWN = 0,
  TRITONSERVER_ERROR_INTERNAL = 1,
  TRITONSERVER_ERROR_NOT_FOUND = 2,
  TRITONSERVER_ERROR_INVALID_ARG = 3,
  TRITONSERVER_ERROR_UNAVAILABLE = 4,
  TRITONSERVER_ERROR_UNSUPPORTED = 5,
  TRITONSERVER_ERROR_ALREADY_EXISTS = 6,
  TRITONSERVER_ERROR_CANCELLED = 7
} TRITONSERVER_Error_Code;

/* Flags of TRITONBACKEND_RequestRelease and TRITONBACKEND_ResponseSend. */
#define LOOM_TRITON_REQUEST_RELEASE_ALL 1u
#define LOOM_TRITON_RESPONSE_COMPLETE_FINAL 1u

/* How a model's files reach the backend: only a local directory exists. */
typedef enum TRITONBACKEND_ArtifactType {
  TRITONBACKEND_ARTIFACT_FILESYSTEM = 0
} TRITONBACKEND_ArtifactType;

/* ---- provided by the server ------------------------------------------------------------- */

/* Errors: the creator owns one until it hands it to the server or deletes it. */
TRITONSERVER_Error* TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char* message);
void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error);
TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error* error);
const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error); /* owned by error */

/* The server's log: level, source file and line, message. */
bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel level);
TRITONSERVER_Error* TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char* file, int line,
                                            const char* message);

/* JSON messages (model configurations, backend settings). The JSON text returned by
 * SerializeToJson belongs to the message. */
TRITONSERVER_Error* TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message** message,
                                                              const char* json, size_t size);
TRITONSERVER_Error* TRITONSERVER_MessageDelete(TRITONSERVER_Message* message);
TRITONSERVER_Error* TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message* message,
                                                        const char** json, size_t* size);

/* The backend API version the running server speaks. */
TRITONSERVER_Error* TRITONBACKEND_ApiVersion(uint32_t* major, uint32_t* minor);

/* Backend: its name, its --backend-config settings as JSON ({"cmdline": {key: value}}; the
 * message belongs to the server: not to be deleted), and one pointer of state the backend keeps
 * there. */
TRITONSERVER_Error* TRITONBACKEND_BackendName(TRITONBACKEND_Backend* backend, const char** name);
TRITONSERVER_Error* TRITONBACKEND_BackendConfig(TRITONBACKEND_Backend* backend,
                                                TRITONSERVER_Message** config);
TRITONSERVER_Error* TRITONBACKEND_BackendSetState(TRITONBACKEND_Backend* backend, void* state);
TRITONSERVER_Error* TRITONBACKEND_BackendState(TRITONBACKEND_Backend* backend, void** state);

/* Model: name, version, the directory holding config.pbtxt and the version directories, its
 * configuration as JSON (format version 1; the caller deletes the message), whether the backend
 * should complete that configuration, and the completed configuration (only from
 * ModelInitialize; the caller keeps and deletes its message). */
TRITONSERVER_Error* TRITONBACKEND_ModelName(TRITONBACKEND_Model* model, const char** name);
TRITONSERVER_Error* TRITONBACKEND_ModelVersion(TRITONBACKEND_Model* model, uint64_t* version);
TRITONSERVER_Error* TRITONBACKEND_ModelRepository(TRITONBACKEND_Model* model,
                                                  TRITONBACKEND_ArtifactType* type,
                                                  const char** location);
TRITONSERVER_Error* TRITONBACKEND_ModelConfig(TRITONBACKEND_Model* model, uint32_t config_version,
                                              TRITONSERVER_Message** config);
TRITONSERVER_Error* TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model* model,
                                                          bool* auto_complete);
TRITONSERVER_Error* TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model* model,
                                                 uint32_t config_version,
                                                 TRITONSERVER_Message* config);
TRITONSERVER_Error* TRITONBACKEND_ModelBackend(TRITONBACKEND_Model* model,
                                               TRITONBACKEND_Backend** backend);
TRITONSERVER_Error* TRITONBACKEND_ModelSetState(TRITONBACKEND_Model* model, void* state);
TRITONSERVER_Error* TRITONBACKEND_ModelState(TRITONBACKEND_Model* model, void** state);

/* Model instance: its model, name, kind, state, and the statistics the backend reports: one
 * call per request (before releasing it; timestamps in steady-clock nanoseconds, ignored when
 * success is false) and one per execution of a batch (batch_size = the sum of the requests'
 * batch sizes). */
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance* instance,
                                                     TRITONBACKEND_Model** model);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance* instance,
                                                    const char** name);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance* instance,
                                                    TRITONSERVER_InstanceGroupKind* kind);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance* instance,
                                                        void* state);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance* instance,
                                                     void** state);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request* request, bool success,
    uint64_t exec_start_ns, uint64_t compute_start_ns, uint64_t compute_end_ns,
    uint64_t exec_end_ns);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance* instance, uint64_t batch_size, uint64_t exec_start_ns,
    uint64_t compute_start_ns, uint64_t compute_end_ns, uint64_t exec_end_ns);

/* Requests: their inputs (by index or name), the outputs the client asked for, and release
 * (after which nothing obtained from the request may be used). */
TRITONSERVER_Error* TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request* request,
                                                    uint32_t* count);
TRITONSERVER_Error* TRITONBACKEND_RequestInputByIndex(TRITONBACKEND_Request* request,
                                                      uint32_t index, TRITONBACKEND_Input** input);
TRITONSERVER_Error* TRITONBACKEND_RequestInput(TRITONBACKEND_Request* request, const char* name,
                                               TRITONBACKEND_Input** input);
TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request* request,
                                                     uint32_t* count);
TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request* request, uint32_t index,
                                                    const char** name);
TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, uint32_t flags);

/* An input tensor: name, type, shape, total bytes and the number of buffers its bytes are split
 * into; then each buffer (the memory type arguments say what the caller prefers and return
 * where the buffer is). */
TRITONSERVER_Error* TRITONBACKEND_InputProperties(TRITONBACKEND_Input* input, const char** name,
                                                  TRITONSERVER_DataType* datatype,
                                                  const int64_t** shape, uint32_t* dims_count,
                                                  uint64_t* byte_size, uint32_t* buffer_count);
TRITONSERVER_Error* TRITONBACKEND_InputBuffer(TRITONBACKEND_Input* input, uint32_t index,
                                              const void** buffer, uint64_t* byte_size,
                                              TRITONSERVER_MemoryType* memory_type,
                                              int64_t* memory_type_id);

/* Responses: one per request; outputs are added with their type and shape, then filled
 * through the buffer the server gives; sending hands the response to the server (the error, if
 * any, stays the caller's to delete). */
TRITONSERVER_Error* TRITONBACKEND_ResponseNew(TRITONBACKEND_Response** response,
                                              TRITONBACKEND_Request* request);
TRITONSERVER_Error* TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response* response);
TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response* response,
                                                 TRITONBACKEND_Output** output, const char* name,
                                                 TRITONSERVER_DataType datatype,
                                                 const int64_t* shape, uint32_t dims_count);
TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output* output, void** buffer,
                                               uint64_t byte_size,
                                               TRITONSERVER_MemoryType* memory_type,
                                               int64_t* memory_type_id);
TRITONSERVER_Error* TRITONBACKEND_ResponseSend(TRITONBACKEND_Response* response,
                                               uint32_t send_flags, TRITONSERVER_Error* error);

/* ---- implemented by the backend (exported from libtriton_loom.so) ----------------------- */

#if defined(__GNUC__)
#define LOOM_TRITON_EXPORT __attribute__((visibility("default")))
#else
#define LOOM_TRITON_EXPORT
#endif

LOOM_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend);
LOOM_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend* backend);
LOOM_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model);
LOOM_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model);
LOOM_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(
    TRITONBACKEND_ModelInstance* instance);
LOOM_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(
    TRITONBACKEND_ModelInstance* instance);
/* Never called twice at once for one instance; may be for different instances. On success the
 * backend owns the requests and must answer and release each. */
LOOM_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests,
    uint32_t request_count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_TRITON_API_H */
