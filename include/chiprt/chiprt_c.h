/* chiprt C API: the host side of chiprt (chiprt/chiprt.h) for C and other languages.
 *
 * A facade over the C++ Worker (chiprt/worker.h): a worker owns one (simulated) device; callables
 * (chip callable containers, built with a chiprt_builder_t from chip objects) are registered on
 * it; device buffers come from chiprt_worker_malloc; tensors are plain descriptors of strided
 * views over those buffers; a run takes a callable id, task arguments (chiprt_args_t) and a run
 * configuration, and fills a run report. Every rule of the C++ API holds here unchanged (see
 * chiprt/worker.h for runs, pipelining, faults and reset; chiprt/diagnostics.h for diagnostics).
 *
 * Errors. Every function returns a chiprt_status_t (or says what else it returns). The codes and
 * their numeric values are the C++ StatusCode values (chiprt/status.h): CHIPRT_OK (0) is success.
 * On failure the calling thread's last error holds the code, its stable name, a message naming
 * what was wrong (prefixed with the function's name) and a hint naming the knob to turn
 * (chiprt_last_error_*); each status-returning function resets it to CHIPRT_OK on success. No C++
 * exception ever crosses this boundary. A NULL handle, a NULL out-pointer, a size or enum value
 * outside its range get CHIPRT_INVALID_ARGUMENT naming the parameter, never a crash. Using a
 * handle after its destroy function is the caller's bug (undefined); using a worker after close
 * gets CHIPRT_ALREADY_CLOSED, before init CHIPRT_NOT_INITIALIZED.
 *
 * Lifetime. Each opaque handle (chiprt_worker_t, chiprt_builder_t, chiprt_args_t,
 * chiprt_run_handle_t) is made by its create function and released by its destroy function
 * (destroy of NULL does nothing). chiprt_worker_destroy closes a worker that is still open
 * (finishing its admitted runs first). A run handle owns only its run's result and may outlive
 * its worker; destroying it waits for the run. Bytes from chiprt_builder_build are the caller's,
 * released with chiprt_bytes_free. The plain structs (options, config, buffer, tensor, report,
 * signature) are values owned by the caller; the library copies what it needs during the call
 * (pointers inside a config need to stay valid only until the call returns).
 *
 * Threading. As in C++: a worker may be used from several threads (its calls are serialised
 * inside); a run handle's functions may be called from any thread, also concurrently. A builder
 * and an args object are not thread-safe: one thread at a time. The last error is per thread;
 * the strings chiprt_last_error_* return stay valid until the thread's next call into this API.
 * No chiprt function may be called from inside a run (a kernel or an orchestration function):
 * CHIPRT_REENTRANT_CALL.
 *
 * fork(). A worker and its run handles belong to the process that created them. In a forked
 * child every call on an inherited worker or run handle fails with CHIPRT_INHERITED_WORKER
 * without touching the parent's device; chiprt_worker_destroy and chiprt_run_handle_destroy
 * release the handles without waiting, joining or closing anything (the worker's destroy returns
 * CHIPRT_INHERITED_WORKER; what the copy refers to stays as the fork left it until the child
 * exits). A worker created in the child works normally.
 *
 * This header is C11 and C++ (extern "C"); the library is libchiprt.so (target chiprt::chiprt).
 */
#ifndef CHIPRT_CHIPRT_C_H_
#define CHIPRT_CHIPRT_C_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "chiprt/version.h"

#if defined(__GNUC__) || defined(__clang__)
#define CHIPRT_C_API __attribute__((visibility("default")))
#else
#define CHIPRT_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version ------------------------------------------------------------------------------ */

/* The version of this header (chiprt/version.h); chiprt_version() reports the library's. */
#define CHIPRT_C_VERSION_MAJOR CHIPRT_VERSION_MAJOR
#define CHIPRT_C_VERSION_MINOR CHIPRT_VERSION_MINOR
#define CHIPRT_C_VERSION_PATCH CHIPRT_VERSION_PATCH

/* ---- Status codes (equal to chiprt::StatusCode) ------------------------------------------- */

typedef int32_t chiprt_status_t;

enum {
  CHIPRT_OK = 0,
  CHIPRT_INVALID_ARGUMENT = 1,
  CHIPRT_NOT_INITIALIZED = 2,
  CHIPRT_ALREADY_CLOSED = 3,
  CHIPRT_DEVICE_MISMATCH = 4,
  CHIPRT_UNKNOWN_CALLABLE = 5,
  CHIPRT_DUPLICATE_CALLABLE = 6,
  CHIPRT_CALLABLE_ID_OUT_OF_RANGE = 7,
  CHIPRT_EMPTY_CALLABLE = 8,
  CHIPRT_MALFORMED_CALLABLE = 9,
  CHIPRT_SIGNATURE_MISMATCH = 10,
  CHIPRT_OUT_OF_DEVICE_MEMORY = 11,
  CHIPRT_INVALID_DEVICE_POINTER = 12,
  CHIPRT_INVALID_CONFIG = 13,
  CHIPRT_DEVICE_FAULTED = 14,
  CHIPRT_LOAD_FAILED = 15,
  CHIPRT_STREAM_SYNC_TIMEOUT = 16,
  CHIPRT_ARENA_COMMIT_FAILED = 17,
  CHIPRT_TOO_MANY_ARGS = 18,
  CHIPRT_VIEW_OUT_OF_BOUNDS = 19,
  CHIPRT_CAPACITY_EXCEEDED = 20,
  CHIPRT_HEAP_EXHAUSTED = 21,
  CHIPRT_UNKNOWN_FUNC_ID = 22,
  CHIPRT_CORE_TYPE_MISMATCH = 23,
  CHIPRT_SCOPE_MISMATCH = 24,
  CHIPRT_INVALID_TASK = 25,
  CHIPRT_ORCHESTRATION_FAILED = 26,
  CHIPRT_SCHEDULER_TIMEOUT = 27,
  CHIPRT_KERNEL_FAULT = 28,
  CHIPRT_UNSUPPORTED_FEATURE = 29,
  CHIPRT_INTERNAL_ERROR = 30,
  CHIPRT_RING_DEADLOCK = 31,
  CHIPRT_WAIT_TIMEOUT = 32,
  CHIPRT_INVALID_SCOPE = 33,
  CHIPRT_REENTRANT_CALL = 34,
  CHIPRT_KERNEL_CRASHED = 35,
  CHIPRT_OP_EXECUTE_TIMEOUT = 36,
  CHIPRT_DIAGNOSTICS_ERROR = 37,
  CHIPRT_CANCELLED = 38,
  CHIPRT_INHERITED_WORKER = 39,
  CHIPRT_BUILD_FAILED = 40
};
/* One above the highest code. */
#define CHIPRT_STATUS_CODE_COUNT 41

/* ---- Enumerations (values equal to the C++ enums) ----------------------------------------- */

typedef int32_t chiprt_dtype_t; /* chiprt::DataType */
enum {
  CHIPRT_DTYPE_F32 = 0,
  CHIPRT_DTYPE_F16 = 1,
  CHIPRT_DTYPE_BF16 = 2,
  CHIPRT_DTYPE_F64 = 3,
  CHIPRT_DTYPE_I8 = 4,
  CHIPRT_DTYPE_I16 = 5,
  CHIPRT_DTYPE_I32 = 6,
  CHIPRT_DTYPE_I64 = 7,
  CHIPRT_DTYPE_U8 = 8,
  CHIPRT_DTYPE_U16 = 9,
  CHIPRT_DTYPE_U32 = 10,
  CHIPRT_DTYPE_U64 = 11,
  CHIPRT_DTYPE_BOOL = 12
};
#define CHIPRT_DTYPE_COUNT 13

typedef int32_t chiprt_core_type_t; /* chiprt::CoreType */
enum { CHIPRT_CORE_AIC = 0, CHIPRT_CORE_AIV = 1, CHIPRT_CORE_MIX = 2 };

typedef int32_t chiprt_arg_tag_t; /* chiprt::ArgTag */
enum {
  CHIPRT_ARG_IN = 0,
  CHIPRT_ARG_OUT = 1,
  CHIPRT_ARG_INOUT = 2,
  CHIPRT_ARG_OUTPUT_EXISTING = 3,
  CHIPRT_ARG_NO_DEP = 4
};

typedef int32_t chiprt_runtime_t; /* chiprt::RuntimeVariant */
enum {
  CHIPRT_RUNTIME_DEFAULT = 0,
  CHIPRT_RUNTIME_HOST_BUILD_GRAPH = 1,
  CHIPRT_RUNTIME_TENSORMAP_RINGBUFFER = 2
};

typedef int32_t chiprt_sim_core_execution_t; /* chiprt::SimCoreExecution */
enum { CHIPRT_SIM_CORES_AUTO = 0, CHIPRT_SIM_CORES_AICPU = 1, CHIPRT_SIM_CORES_EXECUTORS = 2 };

typedef int32_t chiprt_sim_isolation_t; /* chiprt::SimIsolation */
enum {
  CHIPRT_SIM_ISOLATION_DEFAULT = 0,
  CHIPRT_SIM_ISOLATION_NONE = 1,
  CHIPRT_SIM_ISOLATION_PROCESS = 2
};

typedef int32_t chiprt_phase_t; /* chiprt::Phase; index of chiprt_run_report_t::phases */
enum {
  CHIPRT_PHASE_RUN_WALL = 0,
  CHIPRT_PHASE_PREAMBLE = 1,
  CHIPRT_PHASE_LOAD = 2,
  CHIPRT_PHASE_GRAPH_BUILD = 3,
  CHIPRT_PHASE_ORCHESTRATION = 4,
  CHIPRT_PHASE_SCHEDULING = 5,
  CHIPRT_PHASE_POST_ORCHESTRATION = 6
};

/* Limits (equal to the C++ constants). */
#define CHIPRT_PHASE_COUNT 7
#define CHIPRT_MAX_TENSOR_DIMS 5
#define CHIPRT_MAX_TASK_TENSORS 16
#define CHIPRT_MAX_TASK_SCALARS 16
#define CHIPRT_MAX_CALLABLE_IDS 64
#define CHIPRT_RING_SCOPE_DEPTHS 4
/* Capacity of chiprt_run_report_t::diagnostics_dir, NUL included. */
#define CHIPRT_REPORT_PATH_CAPACITY 4096

/* ---- Errors and names --------------------------------------------------------------------- */

/* The calling thread's last error: the status of its last failed call (CHIPRT_OK after a call
 * that succeeded). Name, message and hint are never NULL; they stay valid until the thread's
 * next call into this API. For CHIPRT_OK the message is "". The hint is the failure's own where
 * it has one more precise than its code's (a chip object that does not export its entry point),
 * else the code's, as chiprt_status_hint gives it. */
CHIPRT_C_API chiprt_status_t chiprt_last_error_code(void);
CHIPRT_C_API const char* chiprt_last_error_name(void);
CHIPRT_C_API const char* chiprt_last_error_message(void);
CHIPRT_C_API const char* chiprt_last_error_hint(void);

/* Static strings (never NULL, valid for the program's life) for a status code: its stable name
 * as C++ status_name() gives it ("InvalidArgument"), its one-line detail, its hint. A value that
 * is not a code gets InternalError's strings. These do not touch the last error. */
CHIPRT_C_API const char* chiprt_status_name(chiprt_status_t code);
CHIPRT_C_API const char* chiprt_status_detail(chiprt_status_t code);
CHIPRT_C_API const char* chiprt_status_hint(chiprt_status_t code);

/* Static names ("f32", "aiv", "in", "host_build_graph", "run_wall"; "invalid" outside the
 * enum). They do not touch the last error. */
CHIPRT_C_API const char* chiprt_dtype_name(chiprt_dtype_t dtype);
CHIPRT_C_API const char* chiprt_core_type_name(chiprt_core_type_t core);
CHIPRT_C_API const char* chiprt_arg_tag_name(chiprt_arg_tag_t tag);
CHIPRT_C_API const char* chiprt_runtime_name(chiprt_runtime_t runtime);
CHIPRT_C_API const char* chiprt_phase_name(chiprt_phase_t phase);
/* Bytes per element of `dtype`; 0 outside the enum. Does not touch the last error. */
CHIPRT_C_API size_t chiprt_dtype_size(chiprt_dtype_t dtype);
/* Parses a name ("bf16", "tensormap_ringbuffer"): CHIPRT_OK, or CHIPRT_INVALID_ARGUMENT for an
 * unknown one (*out untouched). */
CHIPRT_C_API chiprt_status_t chiprt_parse_dtype(const char* name, chiprt_dtype_t* out);
CHIPRT_C_API chiprt_status_t chiprt_parse_runtime(const char* name, chiprt_runtime_t* out);

/* ---- Version ------------------------------------------------------------------------------ */

/* The library's version. Any of the pointers may be NULL (that part is not written). Returns
 * CHIPRT_OK. */
CHIPRT_C_API chiprt_status_t chiprt_version(int* major, int* minor, int* patch);
/* "MAJOR.MINOR.PATCH", a static string. Does not touch the last error. */
CHIPRT_C_API const char* chiprt_version_string(void);

/* ---- Callable containers ------------------------------------------------------------------ */

/* The argument signature of an orchestration function or a kernel: the tag of each tensor
 * argument in order, and the number of scalars (both at most 16). All zero means "not
 * checked". */
typedef struct chiprt_signature {
  uint32_t tensor_count;
  uint32_t scalar_count;
  chiprt_arg_tag_t tags[CHIPRT_MAX_TASK_TENSORS];
} chiprt_signature_t;

/* Fills *out from `tensor_count` tags (tags may be NULL when the count is 0) and a scalar count.
 * CHIPRT_TOO_MANY_ARGS above 16 tensors or scalars, CHIPRT_INVALID_ARGUMENT for a NULL pointer or
 * a tag outside chiprt_arg_tag_t. */
CHIPRT_C_API chiprt_status_t chiprt_signature_make(const chiprt_arg_tag_t* tags,
                                                   uint32_t tensor_count, uint32_t scalar_count,
                                                   chiprt_signature_t* out);

/* Assembles a chip callable container (chiprt::CallableBuilder) from chip objects: shared
 * objects as a chiprt_add_chip_object build makes them, given as bytes or as a file path. */
typedef struct chiprt_builder chiprt_builder_t;

/* *out = a new empty builder. CHIPRT_INVALID_ARGUMENT when out is NULL. */
CHIPRT_C_API chiprt_status_t chiprt_builder_create(chiprt_builder_t** out);
/* Releases the builder (NULL: nothing). Returns CHIPRT_OK. */
CHIPRT_C_API chiprt_status_t chiprt_builder_destroy(chiprt_builder_t* builder);
/* The orchestration object (exports chiprt_orchestration) and its signature: `size` bytes at
 * `so_bytes` (copied). CHIPRT_INVALID_ARGUMENT for a NULL pointer or size 0, a bad signature. */
CHIPRT_C_API chiprt_status_t chiprt_builder_orchestration_object(chiprt_builder_t* builder,
                                                                 const void* so_bytes, size_t size,
                                                                 const chiprt_signature_t* sig);
/* A kernel object (exports kernel_entry) under `func_id` for `core`. Errors as above, plus the
 * C++ builder's (a func_id out of range or taken: CHIPRT_INVALID_ARGUMENT). */
CHIPRT_C_API chiprt_status_t chiprt_builder_kernel_object(chiprt_builder_t* builder,
                                                          int32_t func_id, chiprt_core_type_t core,
                                                          const void* so_bytes, size_t size,
                                                          const chiprt_signature_t* sig);
/* The same for the kernel the object exports as `symbol` (NULL: "kernel_entry"), shown as `name`
 * in diagnostics, reports and messages (NULL or "": the symbol). One object may export several
 * kernels: pass its bytes once per func_id with each one's symbol; the container holds the
 * object once. chiprt_builder_build fails with CHIPRT_INVALID_ARGUMENT for a symbol that is not a
 * C identifier (at most 255 characters) or a name that is not 1..64 printable ASCII characters;
 * registering the container fails with CHIPRT_LOAD_FAILED, naming the symbol, when the object
 * does not export it (declare the kernel extern "C" with default visibility). */
CHIPRT_C_API chiprt_status_t chiprt_builder_kernel_object_named(
    chiprt_builder_t* builder, int32_t func_id, chiprt_core_type_t core, const void* so_bytes,
    size_t size, const chiprt_signature_t* sig, const char* symbol, const char* name);
/* The same, reading the object from the file at `path`: CHIPRT_INVALID_ARGUMENT naming the path
 * when it cannot be read or is empty. */
CHIPRT_C_API chiprt_status_t chiprt_builder_orchestration_file(chiprt_builder_t* builder,
                                                               const char* path,
                                                               const chiprt_signature_t* sig);
CHIPRT_C_API chiprt_status_t chiprt_builder_kernel_file(chiprt_builder_t* builder, int32_t func_id,
                                                        chiprt_core_type_t core, const char* path,
                                                        const chiprt_signature_t* sig);
/* chiprt_builder_kernel_object_named, reading the object from the file at `path`. */
CHIPRT_C_API chiprt_status_t chiprt_builder_kernel_file_named(
    chiprt_builder_t* builder, int32_t func_id, chiprt_core_type_t core, const char* path,
    const chiprt_signature_t* sig, const char* symbol, const char* name);
/* Builds the container: *out_bytes (the caller's; release with chiprt_bytes_free) and
 * *out_size. The builder stays usable. CHIPRT_EMPTY_CALLABLE without an orchestration object or
 * kernels; CHIPRT_INVALID_ARGUMENT for a NULL pointer. On failure *out_bytes is NULL and
 * *out_size 0. */
CHIPRT_C_API chiprt_status_t chiprt_builder_build(const chiprt_builder_t* builder,
                                                  uint8_t** out_bytes, size_t* out_size);
/* Releases bytes from chiprt_builder_build (NULL: nothing). Returns CHIPRT_OK. */
CHIPRT_C_API chiprt_status_t chiprt_bytes_free(uint8_t* bytes);

/* ---- Device buffers and tensors ----------------------------------------------------------- */

/* A region of device memory (chiprt::DeviceBuffer): pass it back to the worker, never
 * dereference addr. */
typedef struct chiprt_buffer {
  uint64_t addr;
  uint64_t size; /* bytes */
} chiprt_buffer_t;

/* A typed, strided view over one device buffer (chiprt::Tensor): start_offset, shape and
 * strides count elements. Make one with chiprt_tensor_make and derive views with the functions
 * below; each checks that the result lies inside the buffer (CHIPRT_VIEW_OUT_OF_BOUNDS naming the
 * dimension). A descriptor filled by hand is checked the same way when it is used. */
typedef struct chiprt_tensor {
  chiprt_buffer_t buffer;
  uint64_t start_offset;
  uint32_t ndim;
  chiprt_dtype_t dtype;
  uint64_t shape[CHIPRT_MAX_TENSOR_DIMS];
  uint64_t strides[CHIPRT_MAX_TENSOR_DIMS]; /* 0 allowed (broadcast) */
} chiprt_tensor_t;

/* All tensor functions: CHIPRT_OK and *out written, or an error with *out untouched
 * (CHIPRT_VIEW_OUT_OF_BOUNDS for a view outside the buffer, CHIPRT_INVALID_ARGUMENT for a NULL
 * pointer, a rank above 5 or a bad dtype, dimension or permutation). `out` may equal `src`. */
/* A contiguous row-major tensor of `ndim` dims over `buffer`, from element `start_offset`. */
CHIPRT_C_API chiprt_status_t chiprt_tensor_make(chiprt_buffer_t buffer, const uint64_t* shape,
                                                uint32_t ndim, chiprt_dtype_t dtype,
                                                uint64_t start_offset, chiprt_tensor_t* out);
/* Sub-block of the same rank (ndim == src->ndim): `shape` elements per dim from `offsets`. */
CHIPRT_C_API chiprt_status_t chiprt_tensor_view(const chiprt_tensor_t* src, const uint64_t* shape,
                                                const uint64_t* offsets, uint32_t ndim,
                                                chiprt_tensor_t* out);
/* Elements start, start+step, ... < end of dimension `dim`. */
CHIPRT_C_API chiprt_status_t chiprt_tensor_slice(const chiprt_tensor_t* src, uint32_t dim,
                                                 uint64_t start, uint64_t end, uint64_t step,
                                                 chiprt_tensor_t* out);
/* A new shape with the same element count; the source must be contiguous. */
CHIPRT_C_API chiprt_status_t chiprt_tensor_reshape(const chiprt_tensor_t* src,
                                                   const uint64_t* shape, uint32_t ndim,
                                                   chiprt_tensor_t* out);
CHIPRT_C_API chiprt_status_t chiprt_tensor_transpose(const chiprt_tensor_t* src, uint32_t dim_a,
                                                     uint32_t dim_b, chiprt_tensor_t* out);
/* `order` is a permutation of [0, ndim), ndim == src->ndim. */
CHIPRT_C_API chiprt_status_t chiprt_tensor_permute(const chiprt_tensor_t* src,
                                                   const uint32_t* order, uint32_t ndim,
                                                   chiprt_tensor_t* out);
/* Element count, and whether the tensor is contiguous row-major (after the same checks). */
CHIPRT_C_API chiprt_status_t chiprt_tensor_numel(const chiprt_tensor_t* tensor, uint64_t* out);
CHIPRT_C_API chiprt_status_t chiprt_tensor_is_contiguous(const chiprt_tensor_t* tensor, bool* out);

/* ---- Task arguments ----------------------------------------------------------------------- */

/* The arguments of a run (chiprt::TaskArgs): tensors in order, each tagged, then scalars (64-bit
 * patterns), explicit dependencies and a predicate. Bounded: CHIPRT_TOO_MANY_ARGS past 16 tensors
 * or scalars. */
typedef struct chiprt_args chiprt_args_t;

/* *out = new empty arguments; destroy releases them (NULL: nothing); clear empties them. Each
 * returns CHIPRT_OK, or CHIPRT_INVALID_ARGUMENT for a NULL pointer. */
CHIPRT_C_API chiprt_status_t chiprt_args_create(chiprt_args_t** out);
CHIPRT_C_API chiprt_status_t chiprt_args_destroy(chiprt_args_t* args);
CHIPRT_C_API chiprt_status_t chiprt_args_clear(chiprt_args_t* args);
/* Appends a tensor with the tag the name says (the tensor is checked against its buffer). */
CHIPRT_C_API chiprt_status_t chiprt_args_in(chiprt_args_t* args, const chiprt_tensor_t* tensor);
CHIPRT_C_API chiprt_status_t chiprt_args_inout(chiprt_args_t* args, const chiprt_tensor_t* tensor);
CHIPRT_C_API chiprt_status_t chiprt_args_output_existing(chiprt_args_t* args,
                                                         const chiprt_tensor_t* tensor);
CHIPRT_C_API chiprt_status_t chiprt_args_no_dep(chiprt_args_t* args, const chiprt_tensor_t* tensor);
/* A runtime-allocated output of `ndim` dims (shape and dtype only). */
CHIPRT_C_API chiprt_status_t chiprt_args_out(chiprt_args_t* args, const uint64_t* shape,
                                             uint32_t ndim, chiprt_dtype_t dtype);
/* Scalars: the raw 64-bit pattern, or a value stored as C++ TaskArgs::scalar stores it
 * (bit-cast, zero-extended: a float takes the low 32 bits). */
CHIPRT_C_API chiprt_status_t chiprt_args_scalar_bits(chiprt_args_t* args, uint64_t bits);
CHIPRT_C_API chiprt_status_t chiprt_args_scalar_i64(chiprt_args_t* args, int64_t value);
CHIPRT_C_API chiprt_status_t chiprt_args_scalar_f32(chiprt_args_t* args, float value);
CHIPRT_C_API chiprt_status_t chiprt_args_scalar_f64(chiprt_args_t* args, double value);
/* An explicit dependency on task `task_id` of the same run (CHIPRT_TOO_MANY_ARGS past 8). */
CHIPRT_C_API chiprt_status_t chiprt_args_after(chiprt_args_t* args, int64_t task_id);
/* Predicate: run only when the first element of `flag` is non-zero (chiprt/task_args.h). */
CHIPRT_C_API chiprt_status_t chiprt_args_when(chiprt_args_t* args, const chiprt_tensor_t* flag);
/* Counts of tensors and scalars so far. */
CHIPRT_C_API chiprt_status_t chiprt_args_counts(const chiprt_args_t* args, int32_t* tensor_count,
                                                int32_t* scalar_count);

/* ---- Worker ------------------------------------------------------------------------------- */

typedef struct chiprt_worker chiprt_worker_t;

/* chiprt::WorkerOptions with SimOptions flattened. Fill with chiprt_worker_options_init. */
typedef struct chiprt_worker_options {
  const char* platform; /* "sim"; NULL means "sim" */
  int32_t device_id;
  chiprt_runtime_t runtime;   /* the variant of runs whose config says CHIPRT_RUNTIME_DEFAULT */
  uint32_t sim_clusters;      /* 1..24 */
  uint32_t sim_aicpu_threads; /* scheduler processors */
  uint32_t sim_host_threads;  /* executor threads; 0 = hardware */
  uint64_t sim_memory_bytes;  /* device memory capacity */
  bool sim_serial;
  chiprt_sim_core_execution_t sim_core_execution;
  chiprt_sim_isolation_t sim_isolation;
} chiprt_worker_options_t;

/* Fills *options with the C++ defaults (sim, device 0, host_build_graph, 8 clusters, 4 AICPU
 * threads, 4 GiB). CHIPRT_INVALID_ARGUMENT when options is NULL. */
CHIPRT_C_API chiprt_status_t chiprt_worker_options_init(chiprt_worker_options_t* options);

/* *out = a new worker, not yet initialised. CHIPRT_INVALID_ARGUMENT when out is NULL. */
CHIPRT_C_API chiprt_status_t chiprt_worker_create(chiprt_worker_t** out);
/* Initialises the worker's device with `options` (NULL: the defaults). CHIPRT_INVALID_ARGUMENT
 * for an enum value outside its range, CHIPRT_INVALID_CONFIG for a bad option, the platform's
 * error when the device cannot start, CHIPRT_ALREADY_CLOSED after close. */
CHIPRT_C_API chiprt_status_t chiprt_worker_init(chiprt_worker_t* worker,
                                                const chiprt_worker_options_t* options);
/* Whether init succeeded and close has not happened yet (*out). */
CHIPRT_C_API chiprt_status_t chiprt_worker_initialized(const chiprt_worker_t* worker, bool* out);
/* Releases the device (finishing admitted runs first). A second close does nothing. After close
 * every call on it but initialized, close and destroy gets CHIPRT_ALREADY_CLOSED. */
CHIPRT_C_API chiprt_status_t chiprt_worker_close(chiprt_worker_t* worker);
/* Closes the worker if needed and frees the handle (NULL: nothing). Returns the close's status
 * (the handle is freed whatever it is, except for CHIPRT_REENTRANT_CALL: called from inside a run,
 * nothing is closed or freed and the handle stays valid). */
CHIPRT_C_API chiprt_status_t chiprt_worker_destroy(chiprt_worker_t* worker);

/* Callables. Ids are in [0, 64): CHIPRT_CALLABLE_ID_OUT_OF_RANGE outside it; an id with nothing
 * registered: CHIPRT_UNKNOWN_CALLABLE. register copies the container (CHIPRT_MALFORMED_CALLABLE
 * for bytes that are not a valid container, CHIPRT_DUPLICATE_CALLABLE for a taken id). */
CHIPRT_C_API chiprt_status_t chiprt_worker_register_callable(chiprt_worker_t* worker,
                                                             int32_t callable_id,
                                                             const void* container, size_t size);
CHIPRT_C_API chiprt_status_t chiprt_worker_unregister_callable(chiprt_worker_t* worker,
                                                               int32_t callable_id);
/* *out = whether a callable is registered (false for an id out of range). */
CHIPRT_C_API chiprt_status_t chiprt_worker_has_callable(const chiprt_worker_t* worker,
                                                        int32_t callable_id, bool* out);

/* Device memory. malloc: CHIPRT_OUT_OF_DEVICE_MEMORY when the pool cannot hold `bytes`
 * (CHIPRT_INVALID_ARGUMENT for 0). free / copies / memset: CHIPRT_INVALID_DEVICE_POINTER for a
 * buffer that is not a live allocation, CHIPRT_INVALID_ARGUMENT for a range past its size or a
 * NULL host pointer with bytes > 0. Copies and memset of a buffer an admitted run names wait for
 * that run. */
CHIPRT_C_API chiprt_status_t chiprt_worker_malloc(chiprt_worker_t* worker, uint64_t bytes,
                                                  chiprt_buffer_t* out);
CHIPRT_C_API chiprt_status_t chiprt_worker_free(chiprt_worker_t* worker, chiprt_buffer_t buffer);
CHIPRT_C_API chiprt_status_t chiprt_worker_copy_to(chiprt_worker_t* worker, chiprt_buffer_t dst,
                                                   const void* src, uint64_t bytes,
                                                   uint64_t dst_offset);
CHIPRT_C_API chiprt_status_t chiprt_worker_copy_from(chiprt_worker_t* worker, void* dst,
                                                     chiprt_buffer_t src, uint64_t bytes,
                                                     uint64_t src_offset);
CHIPRT_C_API chiprt_status_t chiprt_worker_memset(chiprt_worker_t* worker, chiprt_buffer_t dst,
                                                  int value, uint64_t bytes);
CHIPRT_C_API chiprt_status_t chiprt_worker_device_bytes_in_use(const chiprt_worker_t* worker,
                                                               uint64_t* out);

/* ---- Runs --------------------------------------------------------------------------------- */

/* chiprt::CallConfig. Fill with chiprt_call_config_init, then change what you need. Pointers are
 * read during the call only (submit copies what it needs). */
typedef struct chiprt_call_config {
  chiprt_runtime_t runtime; /* CHIPRT_RUNTIME_DEFAULT: the worker's */
  int32_t aicpu_thread_num; /* 0 = auto, else 2..platform maximum */
  int32_t cluster_count;    /* 0 = all */
  bool serial;
  uint64_t output_heap_bytes; /* 0 = default */
  uint64_t max_tasks;         /* 0 = default */
  const void* user_data;      /* bytes for the orchestration function, copied by the run */
  size_t user_data_size;
  bool replay_graph;
  uint64_t replay_key;
  bool measure_kernel_time;
  uint32_t pipeline_slot; /* run() only; submit chooses its own */
  uint32_t arena_bank;    /* run() only; submit chooses its own */
  /* tensormap_ringbuffer ring sizes in their text form ("1024" or "1024,256,64"; see
   * chiprt/ring_sizes.h); NULL or "" leaves the field to its variable or default. */
  const char* ring_task_window;
  const char* ring_heap_bytes;
  const char* ring_dep_pool;
  /* Diagnostics: a switch list as `chiprt run --diag` takes it ("all", or e.g.
   * "swimlane=2,tasks,deps"); NULL or "" switches nothing on. A bad list: CHIPRT_INVALID_CONFIG
   * naming the item. */
  const char* diagnostics;
  const char* diagnostics_dir; /* where run directories go; required when anything is on */
  uint64_t diagnostics_args_budget_bytes; /* 0 = default */
  bool diagnostics_background_write;
} chiprt_call_config_t;

/* Fills *config with the C++ defaults (everything off or automatic). CHIPRT_INVALID_ARGUMENT
 * when config is NULL. */
CHIPRT_C_API chiprt_status_t chiprt_call_config_init(chiprt_call_config_t* config);

typedef struct chiprt_phase_span {
  bool present;
  uint64_t start_ns; /* offset from the earliest stamped phase */
  uint64_t span_ns;
} chiprt_phase_span_t;

/* chiprt::RunReport (see chiprt/run_report.h for each field). */
typedef struct chiprt_run_report {
  uint64_t task_count;
  uint64_t internal_task_count;
  uint64_t host_prepare_ns;
  uint64_t device_wall_ns;
  uint64_t host_total_ns;
  chiprt_phase_span_t phases[CHIPRT_PHASE_COUNT]; /* indexed by chiprt_phase_t */
  uint32_t aicpu_threads;
  uint32_t cores;
  bool serial;
  uint64_t kernel_ns;
  bool kernel_time_measured;
  uint64_t ring_task_window[CHIPRT_RING_SCOPE_DEPTHS];
  uint64_t ring_heap_bytes[CHIPRT_RING_SCOPE_DEPTHS];
  uint64_t ring_dep_pool[CHIPRT_RING_SCOPE_DEPTHS];
  uint64_t output_heap_committed_bytes;
  /* The run's diagnostics directory, "" when diagnostics were off; NUL-terminated, truncated if
   * longer than the buffer (diagnostics_dir_length is the full length then). */
  char diagnostics_dir[CHIPRT_REPORT_PATH_CAPACITY];
  size_t diagnostics_dir_length;
  uint64_t diagnostics_records_dropped;
} chiprt_run_report_t;

/* Runs callable `callable_id` with `args` (NULL: none) under `config` (NULL: the defaults) and
 * waits for it; fills *report when it is not NULL. Returns CHIPRT_OK or the run's error
 * (CHIPRT_UNKNOWN_CALLABLE, CHIPRT_SIGNATURE_MISMATCH, CHIPRT_INVALID_CONFIG, device errors...). */
CHIPRT_C_API chiprt_status_t chiprt_worker_run(chiprt_worker_t* worker, int32_t callable_id,
                                               const chiprt_args_t* args,
                                               const chiprt_call_config_t* config,
                                               chiprt_run_report_t* report);

/* A submitted run (chiprt::RunHandle). */
typedef struct chiprt_run_handle chiprt_run_handle_t;

/* Admits a run without waiting for it (at most two are admitted; a third submit waits for a
 * place) and sets *out to its handle. Arguments and config are copied. Refuses at once only what
 * needs no device: NULL pointers, a config this layer cannot convert (an enum out of range, a bad
 * diagnostics list or ring text, NULL user_data with a size), CHIPRT_NOT_INITIALIZED,
 * CHIPRT_ALREADY_CLOSED, CHIPRT_REENTRANT_CALL; every other error (those of chiprt_worker_run,
 * e.g. CHIPRT_INVALID_CONFIG for a field out of range) comes from chiprt_run_handle_wait. */
CHIPRT_C_API chiprt_status_t chiprt_worker_submit(chiprt_worker_t* worker, int32_t callable_id,
                                                  const chiprt_args_t* args,
                                                  const chiprt_call_config_t* config,
                                                  chiprt_run_handle_t** out);
/* submit that never waits: *admitted false (and *out untouched) when two runs are admitted. */
CHIPRT_C_API chiprt_status_t chiprt_worker_try_submit(chiprt_worker_t* worker, int32_t callable_id,
                                                      const chiprt_args_t* args,
                                                      const chiprt_call_config_t* config,
                                                      chiprt_run_handle_t** out, bool* admitted);
/* Waits for the run; CHIPRT_OK with *report filled (when not NULL), or the run's error (again on
 * each call). CHIPRT_CANCELLED: the run touches memory an earlier failed run wrote or was
 * writing. A failed submitted run cancels exactly the later runs (submitted or chiprt_worker_run)
 * that pass any part of a buffer it passed as inout or output_existing, naming its sequence number
 * and error; a cancelled submitted run's own outputs count as written by that failure too (a
 * failed or cancelled chiprt_worker_run poisons nothing: its caller has the error at once); the
 * memory stays poisoned until chiprt_worker_copy_to / chiprt_worker_memset cover it or it is freed
 * (a reset clears all); runs sharing no buffer with it run normally. After a device fault every
 * later run ends CHIPRT_DEVICE_FAULTED. Details: chiprt/worker.h, "Failed runs". */
CHIPRT_C_API chiprt_status_t chiprt_run_handle_wait(chiprt_run_handle_t* handle,
                                                    chiprt_run_report_t* report);
/* Waits at most timeout_ms; *done says whether the run is done. Returns CHIPRT_OK either way
 * (the run's own result comes from chiprt_run_handle_wait). */
CHIPRT_C_API chiprt_status_t chiprt_run_handle_wait_for(chiprt_run_handle_t* handle,
                                                        uint64_t timeout_ms, bool* done);
/* *out = whether the run is done (never blocks). */
CHIPRT_C_API chiprt_status_t chiprt_run_handle_ready(const chiprt_run_handle_t* handle, bool* out);
/* *out = the run's number on its worker (1 for the first; chiprt_worker_run calls take numbers
 * too), the one a CHIPRT_CANCELLED message names. */
CHIPRT_C_API chiprt_status_t chiprt_run_handle_sequence(const chiprt_run_handle_t* handle,
                                                        uint64_t* out);
/* Waits for the run if it is not done, then frees the handle (NULL: nothing). Returns CHIPRT_OK
 * (an error nobody waited for is logged as a warning). */
CHIPRT_C_API chiprt_status_t chiprt_run_handle_destroy(chiprt_run_handle_t* handle);

/* *out = runs admitted and not yet done (0, 1 or 2). */
CHIPRT_C_API chiprt_status_t chiprt_worker_runs_in_flight(const chiprt_worker_t* worker,
                                                          uint32_t* out);
/* Resets the device (every device buffer is lost; callables stay registered); waits for admitted
 * runs. Returns CHIPRT_OK or the platform's error. */
CHIPRT_C_API chiprt_status_t chiprt_worker_reset(chiprt_worker_t* worker);
/* *out = how many times reset replaced the device. */
CHIPRT_C_API chiprt_status_t chiprt_worker_reset_count(const chiprt_worker_t* worker,
                                                       uint64_t* out);

/* ---- Diagnostics -------------------------------------------------------------------------- */

/* Waits for background diagnostics writes; CHIPRT_DIAGNOSTICS_ERROR naming each directory whose
 * write failed since the last flush. */
CHIPRT_C_API chiprt_status_t chiprt_worker_flush_diagnostics(chiprt_worker_t* worker);

/* The newest run directory under `output_dir` ("" when there is none), written into `out` of
 * `capacity` bytes NUL-terminated; *length (when not NULL) receives its full length. With
 * out == NULL and capacity 0 only the length is reported. CHIPRT_INVALID_ARGUMENT when it does
 * not fit (the message says the capacity needed) or output_dir is NULL. */
CHIPRT_C_API chiprt_status_t chiprt_latest_diagnostics_run(const char* output_dir, char* out,
                                                           size_t capacity, size_t* length);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CHIPRT_CHIPRT_C_H_ */
