// The C API (include/chiprt/chiprt_c.h) over the public C++ API. Every entry point runs its body
// through `guarded`, which turns any exception into a status code and the thread's last error, so
// nothing C++ crosses the boundary. Only chiprt/ public headers are used here.
#include "chiprt/chiprt_c.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <sys/stat.h>

#include "chiprt/call_config.h"
#include "chiprt/callable.h"
#include "chiprt/diagnostics.h"
#include "chiprt/ring_sizes.h"
#include "chiprt/run_handle.h"
#include "chiprt/run_report.h"
#include "chiprt/sim_options.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"
#include "chiprt/types.h"
#include "chiprt/worker.h"

// ---- The C constants are the C++ values ----------------------------------------------------

namespace {

// Each C status constant next to the C++ code it stands for, in declaration order.
#define CHIPRT_C_STATUS_PAIRS(X)                           \
  X(CHIPRT_OK, Ok)                                         \
  X(CHIPRT_INVALID_ARGUMENT, InvalidArgument)              \
  X(CHIPRT_NOT_INITIALIZED, NotInitialized)                \
  X(CHIPRT_ALREADY_CLOSED, AlreadyClosed)                  \
  X(CHIPRT_DEVICE_MISMATCH, DeviceMismatch)                \
  X(CHIPRT_UNKNOWN_CALLABLE, UnknownCallable)              \
  X(CHIPRT_DUPLICATE_CALLABLE, DuplicateCallable)          \
  X(CHIPRT_CALLABLE_ID_OUT_OF_RANGE, CallableIdOutOfRange) \
  X(CHIPRT_EMPTY_CALLABLE, EmptyCallable)                  \
  X(CHIPRT_MALFORMED_CALLABLE, MalformedCallable)          \
  X(CHIPRT_SIGNATURE_MISMATCH, SignatureMismatch)          \
  X(CHIPRT_OUT_OF_DEVICE_MEMORY, OutOfDeviceMemory)        \
  X(CHIPRT_INVALID_DEVICE_POINTER, InvalidDevicePointer)   \
  X(CHIPRT_INVALID_CONFIG, InvalidConfig)                  \
  X(CHIPRT_DEVICE_FAULTED, DeviceFaulted)                  \
  X(CHIPRT_LOAD_FAILED, LoadFailed)                        \
  X(CHIPRT_STREAM_SYNC_TIMEOUT, StreamSyncTimeout)         \
  X(CHIPRT_ARENA_COMMIT_FAILED, ArenaCommitFailed)         \
  X(CHIPRT_TOO_MANY_ARGS, TooManyArgs)                     \
  X(CHIPRT_VIEW_OUT_OF_BOUNDS, ViewOutOfBounds)            \
  X(CHIPRT_CAPACITY_EXCEEDED, CapacityExceeded)            \
  X(CHIPRT_HEAP_EXHAUSTED, HeapExhausted)                  \
  X(CHIPRT_UNKNOWN_FUNC_ID, UnknownFuncId)                 \
  X(CHIPRT_CORE_TYPE_MISMATCH, CoreTypeMismatch)           \
  X(CHIPRT_SCOPE_MISMATCH, ScopeMismatch)                  \
  X(CHIPRT_INVALID_TASK, InvalidTask)                      \
  X(CHIPRT_ORCHESTRATION_FAILED, OrchestrationFailed)      \
  X(CHIPRT_SCHEDULER_TIMEOUT, SchedulerTimeout)            \
  X(CHIPRT_KERNEL_FAULT, KernelFault)                      \
  X(CHIPRT_UNSUPPORTED_FEATURE, UnsupportedFeature)        \
  X(CHIPRT_INTERNAL_ERROR, InternalError)                  \
  X(CHIPRT_RING_DEADLOCK, RingDeadlock)                    \
  X(CHIPRT_WAIT_TIMEOUT, WaitTimeout)                      \
  X(CHIPRT_INVALID_SCOPE, InvalidScope)                    \
  X(CHIPRT_REENTRANT_CALL, ReentrantCall)                  \
  X(CHIPRT_KERNEL_CRASHED, KernelCrashed)                  \
  X(CHIPRT_OP_EXECUTE_TIMEOUT, OpExecuteTimeout)           \
  X(CHIPRT_DIAGNOSTICS_ERROR, DiagnosticsError)            \
  X(CHIPRT_CANCELLED, Cancelled)                           \
  X(CHIPRT_INHERITED_WORKER, InheritedWorker)              \
  X(CHIPRT_BUILD_FAILED, BuildFailed)

#define CHIPRT_C_CHECK_PAIR(c_name, cpp_name)                                 \
  static_assert(c_name == static_cast<int32_t>(chiprt::StatusCode::cpp_name), \
                #c_name " must equal chiprt::StatusCode::" #cpp_name);
CHIPRT_C_STATUS_PAIRS(CHIPRT_C_CHECK_PAIR)
#undef CHIPRT_C_CHECK_PAIR

// Every C++ code has its C constant: the pairs and the X-macro list the same values in the same
// order, so a code appended in C++ without a C constant fails here.
constexpr int32_t kCppStatusValues[] = {
#define CHIPRT_C_CPP_VALUE(name, value, detail, hint) value,
    CHIPRT_STATUS_CODES(CHIPRT_C_CPP_VALUE)
#undef CHIPRT_C_CPP_VALUE
};
constexpr int32_t kCStatusValues[] = {
#define CHIPRT_C_C_VALUE(c_name, cpp_name) c_name,
    CHIPRT_C_STATUS_PAIRS(CHIPRT_C_C_VALUE)
#undef CHIPRT_C_C_VALUE
};
constexpr bool same_values() {
  if (std::size(kCppStatusValues) != std::size(kCStatusValues)) return false;
  for (std::size_t i = 0; i < std::size(kCStatusValues); ++i) {
    if (kCppStatusValues[i] != kCStatusValues[i] || kCStatusValues[i] != static_cast<int32_t>(i)) {
      return false;
    }
  }
  return true;
}
static_assert(same_values(), "chiprt_c.h status constants must list every chiprt::StatusCode");
static_assert(std::size(kCStatusValues) == CHIPRT_STATUS_CODE_COUNT);

template <class Enum>
constexpr int32_t as_int(Enum value) {
  return static_cast<int32_t>(value);
}
static_assert(CHIPRT_DTYPE_F32 == as_int(chiprt::DataType::F32));
static_assert(CHIPRT_DTYPE_F16 == as_int(chiprt::DataType::F16));
static_assert(CHIPRT_DTYPE_BF16 == as_int(chiprt::DataType::BF16));
static_assert(CHIPRT_DTYPE_F64 == as_int(chiprt::DataType::F64));
static_assert(CHIPRT_DTYPE_I8 == as_int(chiprt::DataType::I8));
static_assert(CHIPRT_DTYPE_I16 == as_int(chiprt::DataType::I16));
static_assert(CHIPRT_DTYPE_I32 == as_int(chiprt::DataType::I32));
static_assert(CHIPRT_DTYPE_I64 == as_int(chiprt::DataType::I64));
static_assert(CHIPRT_DTYPE_U8 == as_int(chiprt::DataType::U8));
static_assert(CHIPRT_DTYPE_U16 == as_int(chiprt::DataType::U16));
static_assert(CHIPRT_DTYPE_U32 == as_int(chiprt::DataType::U32));
static_assert(CHIPRT_DTYPE_U64 == as_int(chiprt::DataType::U64));
static_assert(CHIPRT_DTYPE_BOOL == as_int(chiprt::DataType::Bool));
static_assert(CHIPRT_DTYPE_COUNT == chiprt::kDataTypeCount);
static_assert(CHIPRT_CORE_AIC == as_int(chiprt::CoreType::AIC));
static_assert(CHIPRT_CORE_AIV == as_int(chiprt::CoreType::AIV));
static_assert(CHIPRT_CORE_MIX == as_int(chiprt::CoreType::MIX));
static_assert(CHIPRT_ARG_IN == as_int(chiprt::ArgTag::In));
static_assert(CHIPRT_ARG_OUT == as_int(chiprt::ArgTag::Out));
static_assert(CHIPRT_ARG_INOUT == as_int(chiprt::ArgTag::InOut));
static_assert(CHIPRT_ARG_OUTPUT_EXISTING == as_int(chiprt::ArgTag::OutputExisting));
static_assert(CHIPRT_ARG_NO_DEP == as_int(chiprt::ArgTag::NoDep));
static_assert(CHIPRT_RUNTIME_DEFAULT == as_int(chiprt::RuntimeVariant::Default));
static_assert(CHIPRT_RUNTIME_HOST_BUILD_GRAPH == as_int(chiprt::RuntimeVariant::HostBuildGraph));
static_assert(CHIPRT_RUNTIME_TENSORMAP_RINGBUFFER ==
              as_int(chiprt::RuntimeVariant::TensormapRingbuffer));
static_assert(CHIPRT_SIM_CORES_AUTO == as_int(chiprt::SimCoreExecution::Auto));
static_assert(CHIPRT_SIM_CORES_AICPU == as_int(chiprt::SimCoreExecution::Aicpu));
static_assert(CHIPRT_SIM_CORES_EXECUTORS == as_int(chiprt::SimCoreExecution::Executors));
static_assert(CHIPRT_SIM_ISOLATION_DEFAULT == as_int(chiprt::SimIsolation::Default));
static_assert(CHIPRT_SIM_ISOLATION_NONE == as_int(chiprt::SimIsolation::None));
static_assert(CHIPRT_SIM_ISOLATION_PROCESS == as_int(chiprt::SimIsolation::Process));
static_assert(CHIPRT_PHASE_RUN_WALL == as_int(chiprt::Phase::RunWall));
static_assert(CHIPRT_PHASE_PREAMBLE == as_int(chiprt::Phase::Preamble));
static_assert(CHIPRT_PHASE_LOAD == as_int(chiprt::Phase::Load));
static_assert(CHIPRT_PHASE_GRAPH_BUILD == as_int(chiprt::Phase::GraphBuild));
static_assert(CHIPRT_PHASE_ORCHESTRATION == as_int(chiprt::Phase::Orchestration));
static_assert(CHIPRT_PHASE_SCHEDULING == as_int(chiprt::Phase::Scheduling));
static_assert(CHIPRT_PHASE_POST_ORCHESTRATION == as_int(chiprt::Phase::PostOrchestration));
static_assert(CHIPRT_PHASE_COUNT == chiprt::kPhaseCount);
static_assert(CHIPRT_MAX_TENSOR_DIMS == chiprt::kMaxTensorDims);
static_assert(CHIPRT_MAX_TASK_TENSORS == chiprt::kMaxTaskTensors);
static_assert(CHIPRT_MAX_TASK_SCALARS == chiprt::kMaxTaskScalars);
static_assert(CHIPRT_MAX_CALLABLE_IDS == chiprt::kMaxCallableIds);
static_assert(CHIPRT_RING_SCOPE_DEPTHS == chiprt::kRingScopeDepths);

// The library's version, as the build that compiled it saw chiprt/version.h.
constexpr const char kVersionString[] = CHIPRT_VERSION_STRING;

// ---- Status strings and the thread's last error ----------------------------------------------

// NUL-terminated literals straight from the X-macro (StatusInfo holds string_views).
constexpr const char* kStatusNames[] = {
#define CHIPRT_C_NAME(name, value, detail, hint) #name,
    CHIPRT_STATUS_CODES(CHIPRT_C_NAME)
#undef CHIPRT_C_NAME
};
constexpr const char* kStatusDetails[] = {
#define CHIPRT_C_DETAIL(name, value, detail, hint) detail,
    CHIPRT_STATUS_CODES(CHIPRT_C_DETAIL)
#undef CHIPRT_C_DETAIL
};
constexpr const char* kStatusHints[] = {
#define CHIPRT_C_HINT(name, value, detail, hint) hint,
    CHIPRT_STATUS_CODES(CHIPRT_C_HINT)
#undef CHIPRT_C_HINT
};

std::size_t status_index(chiprt_status_t code) noexcept {
  return code >= 0 && code < CHIPRT_STATUS_CODE_COUNT
             ? static_cast<std::size_t>(code)
             : static_cast<std::size_t>(CHIPRT_INTERNAL_ERROR);
}

struct LastError {
  chiprt_status_t code = CHIPRT_OK;
  std::string message;
  std::string hint;  // empty: the code's hint
};
thread_local LastError t_last_error;

void clear_last_error() noexcept {
  t_last_error.code = CHIPRT_OK;
  t_last_error.message.clear();  // keeps its capacity: no allocation, cannot throw
  t_last_error.hint.clear();
}

// `hint`: the failure's own hint when it has one more precise than its code's.
chiprt_status_t set_last_error(chiprt_status_t code, const char* function, std::string_view message,
                               std::string_view hint = {}) noexcept {
  t_last_error.code = code;
  try {
    t_last_error.message.assign(function);
    t_last_error.message += ": ";
    t_last_error.message += message;
    t_last_error.hint.assign(hint);
  } catch (...) {
    // No memory for the message: the code still says what failed.
    t_last_error.message.clear();
    t_last_error.hint.clear();
  }
  return code;
}

// Runs `body`; CHIPRT_OK when it returns, else the code of what it threw. `function` names the
// entry point in the message.
template <class Body>
chiprt_status_t guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    clear_last_error();
    return CHIPRT_OK;
  } catch (const chiprt::Error& error) {
    return set_last_error(static_cast<chiprt_status_t>(error.code()), function, error.message(),
                          error.hint());
  } catch (const std::bad_alloc&) {
    return set_last_error(CHIPRT_INTERNAL_ERROR, function,
                          "host memory exhausted (std::bad_alloc)");
  } catch (const std::exception& error) {
    return set_last_error(CHIPRT_INTERNAL_ERROR, function,
                          std::string("unexpected C++ exception: ") + error.what());
  } catch (...) {
    return set_last_error(CHIPRT_INTERNAL_ERROR, function, "unexpected non-standard exception");
  }
}

[[noreturn]] void fail(chiprt::StatusCode code, std::string message) {
  throw chiprt::Error(code, std::move(message));
}
[[noreturn]] void invalid(std::string message) {
  fail(chiprt::StatusCode::InvalidArgument, std::move(message));
}

template <class T>
T& need(T* pointer, const char* parameter) {
  if (pointer == nullptr) invalid(std::string("parameter '") + parameter + "' is NULL");
  return *pointer;
}

// ---- Enum conversions --------------------------------------------------------------------------

template <class Enum>
Enum to_enum(int32_t value, int32_t count, const char* parameter) {
  if (value < 0 || value >= count) {
    invalid(std::string("parameter '") + parameter + "' = " + std::to_string(value) +
            " is not one of its constants [0, " + std::to_string(count) + ")");
  }
  return static_cast<Enum>(value);
}
chiprt::DataType to_dtype(chiprt_dtype_t value, const char* parameter) {
  return to_enum<chiprt::DataType>(value, chiprt::kDataTypeCount, parameter);
}
chiprt::CoreType to_core(chiprt_core_type_t value, const char* parameter) {
  return to_enum<chiprt::CoreType>(value, chiprt::kCoreTypeCount, parameter);
}
chiprt::ArgTag to_tag(chiprt_arg_tag_t value, const char* parameter) {
  return to_enum<chiprt::ArgTag>(value, chiprt::kArgTagCount, parameter);
}
chiprt::RuntimeVariant to_runtime(chiprt_runtime_t value, const char* parameter) {
  return to_enum<chiprt::RuntimeVariant>(value, 3, parameter);
}

// ---- Signatures and tensors --------------------------------------------------------------------

chiprt::ArgSignature to_signature(const chiprt_signature_t* sig) {
  const chiprt_signature_t& in = need(sig, "sig");
  if (in.tensor_count > chiprt::kMaxTaskTensors || in.scalar_count > chiprt::kMaxTaskScalars) {
    fail(chiprt::StatusCode::TooManyArgs, "signature has " + std::to_string(in.tensor_count) +
                                              " tensors and " + std::to_string(in.scalar_count) +
                                              " scalars; at most " +
                                              std::to_string(chiprt::kMaxTaskTensors) + " and " +
                                              std::to_string(chiprt::kMaxTaskScalars));
  }
  chiprt::ArgSignature out;
  out.tensor_count = static_cast<uint8_t>(in.tensor_count);
  out.scalar_count = static_cast<uint8_t>(in.scalar_count);
  for (uint32_t i = 0; i < in.tensor_count; ++i) out.tags[i] = to_tag(in.tags[i], "sig->tags[i]");
  return out;
}

chiprt_tensor_t to_c(const chiprt::Tensor& t) {
  chiprt_tensor_t out{};
  out.buffer = {t.buffer.addr, t.buffer.size};
  out.start_offset = t.start_offset;
  out.ndim = t.ndim;
  out.dtype = static_cast<chiprt_dtype_t>(t.dtype);
  for (int d = 0; d < chiprt::kMaxTensorDims; ++d) {
    out.shape[d] = t.shape[d];
    out.strides[d] = t.strides[d];
  }
  return out;
}

// A C descriptor as a C++ Tensor, checked like one a constructor made: rank, dtype, and every
// element inside the buffer.
chiprt::Tensor to_tensor(const chiprt_tensor_t* tensor, const char* parameter) {
  const chiprt_tensor_t& in = need(tensor, parameter);
  if (in.ndim > static_cast<uint32_t>(chiprt::kMaxTensorDims)) {
    invalid(std::string(parameter) + "->ndim = " + std::to_string(in.ndim) + " exceeds " +
            std::to_string(chiprt::kMaxTensorDims));
  }
  chiprt::Tensor t;
  t.buffer = {in.buffer.addr, in.buffer.size};
  t.start_offset = in.start_offset;
  t.ndim = in.ndim;
  t.dtype = to_dtype(in.dtype, (std::string(parameter) + "->dtype").c_str());
  for (int d = 0; d < chiprt::kMaxTensorDims; ++d) {
    t.shape[d] = static_cast<uint32_t>(d) < in.ndim ? in.shape[d] : 0;
    t.strides[d] = static_cast<uint32_t>(d) < in.ndim ? in.strides[d] : 0;
  }
  // One past the last element's byte, in 64 bits as the runtime addresses it: every step is
  // checked, since a sum that wrapped would pass the comparison with elements far outside the
  // buffer (start + sum((shape - 1) * stride) + 1 elements, times the element size).
  bool empty = false;
  for (uint32_t d = 0; d < in.ndim; ++d) {
    if (in.shape[d] == 0) empty = true;
  }
  if (!empty) {
    uint64_t last = in.start_offset;
    bool overflow = false;
    for (uint32_t d = 0; d < in.ndim; ++d) {
      uint64_t span = 0;
      overflow = overflow || __builtin_mul_overflow(in.shape[d] - 1, in.strides[d], &span) ||
                 __builtin_add_overflow(last, span, &last);
    }
    uint64_t end_bytes = 0;
    overflow = overflow || __builtin_add_overflow(last, uint64_t{1}, &last) ||
               __builtin_mul_overflow(last, uint64_t{chiprt::element_size(t.dtype)}, &end_bytes);
    if (overflow) {
      fail(chiprt::StatusCode::ViewOutOfBounds,
           std::string(parameter) + " " + t.to_string() + " overflows 64-bit addressing");
    }
    if (end_bytes > in.buffer.size) {
      fail(chiprt::StatusCode::ViewOutOfBounds, std::string(parameter) + " " + t.to_string() +
                                                    " reaches past its buffer of " +
                                                    std::to_string(in.buffer.size) + " bytes");
    }
  }
  return t;
}

std::span<const uint64_t> dims(const uint64_t* values, uint32_t count, const char* parameter) {
  if (count > static_cast<uint32_t>(chiprt::kMaxTensorDims)) {
    invalid(std::string("parameter 'ndim' = ") + std::to_string(count) + " exceeds " +
            std::to_string(chiprt::kMaxTensorDims));
  }
  if (count > 0 && values == nullptr) invalid(std::string("parameter '") + parameter + "' is NULL");
  return {values, count};
}

// ---- Report, config, options -------------------------------------------------------------------

void copy_report(const chiprt::RunReport& in, chiprt_run_report_t* out) {
  if (out == nullptr) return;
  chiprt_run_report_t& r = *out;
  std::memset(&r, 0, sizeof r);
  r.task_count = in.task_count;
  r.internal_task_count = in.internal_task_count;
  r.host_prepare_ns = in.host_prepare_ns;
  r.device_wall_ns = in.device_wall_ns;
  r.host_total_ns = in.host_total_ns;
  for (int p = 0; p < chiprt::kPhaseCount; ++p) {
    r.phases[p].present = in.phases[p].present;
    r.phases[p].start_ns = in.phases[p].start_ns;
    r.phases[p].span_ns = in.phases[p].span_ns;
  }
  r.aicpu_threads = in.aicpu_threads;
  r.cores = in.cores;
  r.serial = in.serial;
  r.kernel_ns = in.kernel_ns;
  r.kernel_time_measured = in.kernel_time_measured;
  for (uint32_t d = 0; d < chiprt::kRingScopeDepths; ++d) {
    r.ring_task_window[d] = in.rings.task_window[d];
    r.ring_heap_bytes[d] = in.rings.heap_bytes[d];
    r.ring_dep_pool[d] = in.rings.dep_pool[d];
  }
  r.output_heap_committed_bytes = in.output_heap_committed_bytes;
  r.diagnostics_dir_length = in.diagnostics_dir.size();
  const std::size_t n = std::min(in.diagnostics_dir.size(), sizeof r.diagnostics_dir - 1);
  std::memcpy(r.diagnostics_dir, in.diagnostics_dir.data(), n);
  r.diagnostics_dir[n] = '\0';
  r.diagnostics_records_dropped = in.diagnostics_records_dropped;
}

bool has_text(const char* text) {
  return text != nullptr && text[0] != '\0';
}

void parse_rings(chiprt::RingField field, const char* source, const char* text,
                 chiprt::RingSizing* rings) {
  if (!has_text(text)) return;
  chiprt::throw_if_error(chiprt::parse_ring_sizes(field, source, text, &rings->list(field)));
}

chiprt::CallConfig to_config(const chiprt_call_config_t* config) {
  chiprt::CallConfig out;
  if (config == nullptr) return out;
  const chiprt_call_config_t& in = *config;
  out.runtime = to_runtime(in.runtime, "config->runtime");
  out.aicpu_thread_num = in.aicpu_thread_num;
  out.cluster_count = in.cluster_count;
  out.serial = in.serial;
  out.output_heap_bytes = in.output_heap_bytes;
  out.max_tasks = in.max_tasks;
  if (in.user_data_size > 0) {
    if (in.user_data == nullptr) {
      invalid("config->user_data is NULL with user_data_size " + std::to_string(in.user_data_size));
    }
    out.user_data = {static_cast<const std::byte*>(in.user_data), in.user_data_size};
  }
  out.replay_graph = in.replay_graph;
  out.replay_key = in.replay_key;
  out.measure_kernel_time = in.measure_kernel_time;
  out.pipeline_slot = in.pipeline_slot;
  out.arena_bank = in.arena_bank;
  parse_rings(chiprt::RingField::TaskWindow, "config->ring_task_window", in.ring_task_window,
              &out.rings);
  parse_rings(chiprt::RingField::HeapBytes, "config->ring_heap_bytes", in.ring_heap_bytes,
              &out.rings);
  parse_rings(chiprt::RingField::DepPool, "config->ring_dep_pool", in.ring_dep_pool, &out.rings);
  if (has_text(in.diagnostics)) {
    std::string error;
    if (!chiprt::parse_diagnostics_list(in.diagnostics, &out.diagnostics, &error)) {
      fail(chiprt::StatusCode::InvalidConfig,
           std::string("config->diagnostics = \"") + in.diagnostics + "\": " + error);
    }
  }
  if (in.diagnostics_dir != nullptr) out.diagnostics.output_dir = in.diagnostics_dir;
  if (in.diagnostics_args_budget_bytes != 0) {
    out.diagnostics.args_dump_budget_bytes = in.diagnostics_args_budget_bytes;
  }
  out.diagnostics.background_write = in.diagnostics_background_write;
  return out;
}

chiprt::WorkerOptions to_options(const chiprt_worker_options_t* options) {
  chiprt::WorkerOptions out;
  if (options == nullptr) return out;
  const chiprt_worker_options_t& in = *options;
  if (in.platform != nullptr) out.platform = in.platform;
  out.device_id = in.device_id;
  out.runtime = to_runtime(in.runtime, "options->runtime");
  out.sim.clusters = in.sim_clusters;
  out.sim.aicpu_threads = in.sim_aicpu_threads;
  out.sim.host_threads = in.sim_host_threads;
  out.sim.memory_bytes = in.sim_memory_bytes;
  out.sim.serial = in.sim_serial;
  out.sim.core_execution =
      to_enum<chiprt::SimCoreExecution>(in.sim_core_execution, 3, "options->sim_core_execution");
  out.sim.isolation = to_enum<chiprt::SimIsolation>(in.sim_isolation, 3, "options->sim_isolation");
  return out;
}

std::vector<uint8_t> read_file(const char* path) {
  need(path, "path");
  // A regular file only: a directory makes the stream throw, and a FIFO or a device (/dev/zero)
  // would block or never end.
  struct stat info {};
  if (::stat(path, &info) != 0) {
    invalid(std::string("cannot open '") + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) invalid(std::string("'") + path + "' is not a regular file");
  std::ifstream file(path, std::ios::binary);
  if (!file) invalid(std::string("cannot open '") + path + "': " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  try {
    bytes.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure& error) {
    invalid(std::string("cannot read '") + path + "': " + error.what());
  }
  if (file.bad()) invalid(std::string("cannot read '") + path + "'");
  if (bytes.empty()) invalid(std::string("'") + path + "' is empty");
  return bytes;
}

std::span<const uint8_t> object_bytes(const void* bytes, size_t size) {
  if (bytes == nullptr) invalid("parameter 'so_bytes' is NULL");
  if (size == 0) invalid("parameter 'size' is 0");
  return {static_cast<const uint8_t*>(bytes), size};
}

void write_string(const std::string& value, char* out, size_t capacity, size_t* length) {
  if (length != nullptr) *length = value.size();
  if (out == nullptr && capacity == 0) return;
  if (out == nullptr) invalid("parameter 'out' is NULL with capacity " + std::to_string(capacity));
  if (value.size() + 1 > capacity) {
    invalid("the string has " + std::to_string(value.size()) + " bytes: 'capacity' " +
            std::to_string(capacity) + " must be at least " + std::to_string(value.size() + 1));
  }
  std::memcpy(out, value.data(), value.size());
  out[value.size()] = '\0';
}

}  // namespace

// ---- Handles -----------------------------------------------------------------------------------

struct chiprt_worker {
  chiprt::Worker worker;
  std::atomic<bool> closed{false};

  // The C++ Worker refuses most calls itself; this covers the ones that do not look at its state.
  void check_ready() const {
    if (closed.load()) {
      fail(chiprt::StatusCode::AlreadyClosed, "the worker was closed; create a new one");
    }
    // initialized() is false in a forked child too, where the worker refuses with
    // InheritedWorker: runs_in_flight() throws that (and nothing before init).
    if (!worker.initialized()) {
      (void)worker.runs_in_flight();
      fail(chiprt::StatusCode::NotInitialized,
           "the worker is not initialised; call "
           "chiprt_worker_init first");
    }
  }
};

struct chiprt_builder {
  chiprt::CallableBuilder builder;
};

struct chiprt_args {
  chiprt::TaskArgs args;
};

struct chiprt_run_handle {
  chiprt::RunHandle handle;
};

namespace {
const chiprt::TaskArgs& args_or_empty(const chiprt_args_t* args) {
  static const chiprt::TaskArgs kNone;
  return args == nullptr ? kNone : args->args;
}
}  // namespace

extern "C" {

// ---- Errors and names --------------------------------------------------------------------------

chiprt_status_t chiprt_last_error_code(void) {
  return t_last_error.code;
}
const char* chiprt_last_error_name(void) {
  return kStatusNames[status_index(t_last_error.code)];
}
const char* chiprt_last_error_message(void) {
  return t_last_error.message.c_str();
}
const char* chiprt_last_error_hint(void) {
  if (!t_last_error.hint.empty()) return t_last_error.hint.c_str();
  return kStatusHints[status_index(t_last_error.code)];
}

const char* chiprt_status_name(chiprt_status_t code) {
  return kStatusNames[status_index(code)];
}
const char* chiprt_status_detail(chiprt_status_t code) {
  return kStatusDetails[status_index(code)];
}
const char* chiprt_status_hint(chiprt_status_t code) {
  return kStatusHints[status_index(code)];
}

// The C++ name functions return views of literals, which are NUL-terminated.
const char* chiprt_dtype_name(chiprt_dtype_t dtype) {
  if (dtype < 0 || dtype >= CHIPRT_DTYPE_COUNT) return "invalid";
  return chiprt::dtype_name(static_cast<chiprt::DataType>(dtype)).data();
}
const char* chiprt_core_type_name(chiprt_core_type_t core) {
  if (core < 0 || core >= chiprt::kCoreTypeCount) return "invalid";
  return chiprt::core_type_name(static_cast<chiprt::CoreType>(core)).data();
}
const char* chiprt_arg_tag_name(chiprt_arg_tag_t tag) {
  if (tag < 0 || tag >= chiprt::kArgTagCount) return "invalid";
  return chiprt::arg_tag_name(static_cast<chiprt::ArgTag>(tag)).data();
}
const char* chiprt_runtime_name(chiprt_runtime_t runtime) {
  if (runtime < 0 || runtime > CHIPRT_RUNTIME_TENSORMAP_RINGBUFFER) return "invalid";
  return chiprt::runtime_variant_name(static_cast<chiprt::RuntimeVariant>(runtime)).data();
}
const char* chiprt_phase_name(chiprt_phase_t phase) {
  if (phase < 0 || phase >= CHIPRT_PHASE_COUNT) return "invalid";
  return chiprt::phase_name(static_cast<chiprt::Phase>(phase)).data();
}
size_t chiprt_dtype_size(chiprt_dtype_t dtype) {
  if (dtype < 0 || dtype >= CHIPRT_DTYPE_COUNT) return 0;
  return chiprt::element_size(static_cast<chiprt::DataType>(dtype));
}

chiprt_status_t chiprt_parse_dtype(const char* name, chiprt_dtype_t* out) {
  return guarded(__func__, [&] {
    need(name, "name");
    need(out, "out");
    chiprt::DataType dtype;
    if (!chiprt::parse_dtype(name, &dtype)) {
      invalid(std::string("unknown dtype name '") + name + "' (f32, f16, bf16, f64, i8, ...)");
    }
    *out = static_cast<chiprt_dtype_t>(dtype);
  });
}

chiprt_status_t chiprt_parse_runtime(const char* name, chiprt_runtime_t* out) {
  return guarded(__func__, [&] {
    need(name, "name");
    need(out, "out");
    chiprt::RuntimeVariant runtime;
    if (!chiprt::parse_runtime_variant(name, &runtime)) {
      invalid(std::string("unknown runtime name '") + name +
              "' (host_build_graph, tensormap_ringbuffer)");
    }
    *out = static_cast<chiprt_runtime_t>(runtime);
  });
}

// ---- Version -----------------------------------------------------------------------------------

chiprt_status_t chiprt_version(int* major, int* minor, int* patch) {
  if (major != nullptr) *major = CHIPRT_C_VERSION_MAJOR;
  if (minor != nullptr) *minor = CHIPRT_C_VERSION_MINOR;
  if (patch != nullptr) *patch = CHIPRT_C_VERSION_PATCH;
  clear_last_error();
  return CHIPRT_OK;
}
const char* chiprt_version_string(void) {
  return kVersionString;
}

// ---- Callable containers -----------------------------------------------------------------------

chiprt_status_t chiprt_signature_make(const chiprt_arg_tag_t* tags, uint32_t tensor_count,
                                      uint32_t scalar_count, chiprt_signature_t* out) {
  return guarded(__func__, [&] {
    need(out, "out");
    if (tensor_count > 0) need(tags, "tags");
    chiprt_signature_t sig{};
    sig.tensor_count = tensor_count;
    sig.scalar_count = scalar_count;
    if (tensor_count <= chiprt::kMaxTaskTensors) {
      for (uint32_t i = 0; i < tensor_count; ++i) sig.tags[i] = tags[i];
    }
    to_signature(&sig);  // checks counts and tags
    *out = sig;
  });
}

chiprt_status_t chiprt_builder_create(chiprt_builder_t** out) {
  return guarded(__func__, [&] {
    need(out, "out");
    *out = new chiprt_builder;
  });
}

chiprt_status_t chiprt_builder_destroy(chiprt_builder_t* builder) {
  delete builder;
  clear_last_error();
  return CHIPRT_OK;
}

chiprt_status_t chiprt_builder_orchestration_object(chiprt_builder_t* builder, const void* so_bytes,
                                                    size_t size, const chiprt_signature_t* sig) {
  return guarded(__func__, [&] {
    need(builder, "builder")
        .builder.orchestration_object(object_bytes(so_bytes, size), to_signature(sig));
  });
}

namespace {

// The kernel calls of the builder (symbol NULL: kernel_entry; name NULL: the symbol); they throw.
void add_kernel_object(chiprt_builder_t* builder, int32_t func_id, chiprt_core_type_t core,
                       const void* so_bytes, size_t size, const chiprt_signature_t* sig,
                       const char* symbol, const char* name) {
  need(builder, "builder")
      .builder.kernel_object(func_id, to_core(core, "core"), object_bytes(so_bytes, size),
                             to_signature(sig), symbol != nullptr ? symbol : chiprt::kKernelSymbol,
                             name != nullptr ? name : "");
}
void add_kernel_file(chiprt_builder_t* builder, int32_t func_id, chiprt_core_type_t core,
                     const char* path, const chiprt_signature_t* sig, const char* symbol,
                     const char* name) {
  chiprt_builder_t& b = need(builder, "builder");
  const chiprt::CoreType core_type = to_core(core, "core");
  const chiprt::ArgSignature signature = to_signature(sig);
  b.builder.kernel_object(func_id, core_type, read_file(path), signature,
                          symbol != nullptr ? symbol : chiprt::kKernelSymbol,
                          name != nullptr ? name : "");
}

}  // namespace

chiprt_status_t chiprt_builder_kernel_object(chiprt_builder_t* builder, int32_t func_id,
                                             chiprt_core_type_t core, const void* so_bytes,
                                             size_t size, const chiprt_signature_t* sig) {
  return guarded(__func__, [&] {
    add_kernel_object(builder, func_id, core, so_bytes, size, sig, nullptr, nullptr);
  });
}

chiprt_status_t chiprt_builder_kernel_object_named(chiprt_builder_t* builder, int32_t func_id,
                                                   chiprt_core_type_t core, const void* so_bytes,
                                                   size_t size, const chiprt_signature_t* sig,
                                                   const char* symbol, const char* name) {
  return guarded(__func__, [&] {
    add_kernel_object(builder, func_id, core, so_bytes, size, sig, symbol, name);
  });
}

chiprt_status_t chiprt_builder_orchestration_file(chiprt_builder_t* builder, const char* path,
                                                  const chiprt_signature_t* sig) {
  return guarded(__func__, [&] {
    chiprt_builder_t& b = need(builder, "builder");
    const chiprt::ArgSignature signature = to_signature(sig);
    b.builder.orchestration_object(read_file(path), signature);
  });
}

chiprt_status_t chiprt_builder_kernel_file(chiprt_builder_t* builder, int32_t func_id,
                                           chiprt_core_type_t core, const char* path,
                                           const chiprt_signature_t* sig) {
  return guarded(__func__,
                 [&] { add_kernel_file(builder, func_id, core, path, sig, nullptr, nullptr); });
}

chiprt_status_t chiprt_builder_kernel_file_named(chiprt_builder_t* builder, int32_t func_id,
                                                 chiprt_core_type_t core, const char* path,
                                                 const chiprt_signature_t* sig, const char* symbol,
                                                 const char* name) {
  return guarded(__func__,
                 [&] { add_kernel_file(builder, func_id, core, path, sig, symbol, name); });
}

chiprt_status_t chiprt_builder_build(const chiprt_builder_t* builder, uint8_t** out_bytes,
                                     size_t* out_size) {
  if (out_bytes != nullptr) *out_bytes = nullptr;
  if (out_size != nullptr) *out_size = 0;
  return guarded(__func__, [&] {
    const chiprt_builder_t& b = need(builder, "builder");
    need(out_bytes, "out_bytes");
    need(out_size, "out_size");
    const std::vector<uint8_t> container = b.builder.build();
    auto* bytes = static_cast<uint8_t*>(std::malloc(container.size()));
    if (bytes == nullptr) throw std::bad_alloc();
    std::memcpy(bytes, container.data(), container.size());
    *out_bytes = bytes;
    *out_size = container.size();
  });
}

chiprt_status_t chiprt_bytes_free(uint8_t* bytes) {
  std::free(bytes);
  clear_last_error();
  return CHIPRT_OK;
}

// ---- Tensors -----------------------------------------------------------------------------------

chiprt_status_t chiprt_tensor_make(chiprt_buffer_t buffer, const uint64_t* shape, uint32_t ndim,
                                   chiprt_dtype_t dtype, uint64_t start_offset,
                                   chiprt_tensor_t* out) {
  return guarded(__func__, [&] {
    need(out, "out");
    *out = to_c(chiprt::Tensor::make({buffer.addr, buffer.size}, dims(shape, ndim, "shape"),
                                     to_dtype(dtype, "dtype"), start_offset));
  });
}

chiprt_status_t chiprt_tensor_view(const chiprt_tensor_t* src, const uint64_t* shape,
                                   const uint64_t* offsets, uint32_t ndim, chiprt_tensor_t* out) {
  return guarded(__func__, [&] {
    const chiprt::Tensor t = to_tensor(src, "src");
    need(out, "out");
    if (ndim != t.ndim) {
      invalid("parameter 'ndim' = " + std::to_string(ndim) +
              " differs from src->ndim = " + std::to_string(t.ndim) + " (a view keeps the rank)");
    }
    *out = to_c(t.view(dims(shape, ndim, "shape"), dims(offsets, ndim, "offsets")));
  });
}

chiprt_status_t chiprt_tensor_slice(const chiprt_tensor_t* src, uint32_t dim, uint64_t start,
                                    uint64_t end, uint64_t step, chiprt_tensor_t* out) {
  return guarded(__func__, [&] {
    const chiprt::Tensor t = to_tensor(src, "src");
    need(out, "out");
    *out = to_c(t.slice(dim, start, end, step));
  });
}

chiprt_status_t chiprt_tensor_reshape(const chiprt_tensor_t* src, const uint64_t* shape,
                                      uint32_t ndim, chiprt_tensor_t* out) {
  return guarded(__func__, [&] {
    const chiprt::Tensor t = to_tensor(src, "src");
    need(out, "out");
    *out = to_c(t.reshape(dims(shape, ndim, "shape")));
  });
}

chiprt_status_t chiprt_tensor_transpose(const chiprt_tensor_t* src, uint32_t dim_a, uint32_t dim_b,
                                        chiprt_tensor_t* out) {
  return guarded(__func__, [&] {
    const chiprt::Tensor t = to_tensor(src, "src");
    need(out, "out");
    *out = to_c(t.transpose(dim_a, dim_b));
  });
}

chiprt_status_t chiprt_tensor_permute(const chiprt_tensor_t* src, const uint32_t* order,
                                      uint32_t ndim, chiprt_tensor_t* out) {
  return guarded(__func__, [&] {
    const chiprt::Tensor t = to_tensor(src, "src");
    need(out, "out");
    if (ndim != t.ndim) {
      invalid("parameter 'ndim' = " + std::to_string(ndim) + " differs from src->ndim = " +
              std::to_string(t.ndim) + " (order is a permutation of every dimension)");
    }
    if (ndim > 0) need(order, "order");
    *out = to_c(t.permute(std::span<const uint32_t>(order, ndim)));
  });
}

chiprt_status_t chiprt_tensor_numel(const chiprt_tensor_t* tensor, uint64_t* out) {
  return guarded(__func__, [&] {
    const chiprt::Tensor t = to_tensor(tensor, "tensor");
    need(out, "out") = t.numel();
  });
}

chiprt_status_t chiprt_tensor_is_contiguous(const chiprt_tensor_t* tensor, bool* out) {
  return guarded(__func__, [&] {
    const chiprt::Tensor t = to_tensor(tensor, "tensor");
    need(out, "out") = t.is_contiguous();
  });
}

// ---- Task arguments ----------------------------------------------------------------------------

chiprt_status_t chiprt_args_create(chiprt_args_t** out) {
  return guarded(__func__, [&] {
    need(out, "out");
    *out = new chiprt_args;
  });
}

chiprt_status_t chiprt_args_destroy(chiprt_args_t* args) {
  delete args;
  clear_last_error();
  return CHIPRT_OK;
}

chiprt_status_t chiprt_args_clear(chiprt_args_t* args) {
  return guarded(__func__, [&] { need(args, "args").args.clear(); });
}

chiprt_status_t chiprt_args_in(chiprt_args_t* args, const chiprt_tensor_t* tensor) {
  return guarded(__func__, [&] { need(args, "args").args.in(to_tensor(tensor, "tensor")); });
}

chiprt_status_t chiprt_args_inout(chiprt_args_t* args, const chiprt_tensor_t* tensor) {
  return guarded(__func__, [&] { need(args, "args").args.inout(to_tensor(tensor, "tensor")); });
}

chiprt_status_t chiprt_args_output_existing(chiprt_args_t* args, const chiprt_tensor_t* tensor) {
  return guarded(__func__,
                 [&] { need(args, "args").args.output_existing(to_tensor(tensor, "tensor")); });
}

chiprt_status_t chiprt_args_no_dep(chiprt_args_t* args, const chiprt_tensor_t* tensor) {
  return guarded(__func__, [&] { need(args, "args").args.no_dep(to_tensor(tensor, "tensor")); });
}

chiprt_status_t chiprt_args_out(chiprt_args_t* args, const uint64_t* shape, uint32_t ndim,
                                chiprt_dtype_t dtype) {
  return guarded(__func__, [&] {
    chiprt_args_t& a = need(args, "args");
    a.args.out(dims(shape, ndim, "shape"), to_dtype(dtype, "dtype"));
  });
}

chiprt_status_t chiprt_args_scalar_bits(chiprt_args_t* args, uint64_t bits) {
  return guarded(__func__, [&] { need(args, "args").args.add_scalar_bits(bits); });
}

chiprt_status_t chiprt_args_scalar_i64(chiprt_args_t* args, int64_t value) {
  return guarded(__func__, [&] { need(args, "args").args.scalar(value); });
}

chiprt_status_t chiprt_args_scalar_f32(chiprt_args_t* args, float value) {
  return guarded(__func__, [&] { need(args, "args").args.scalar(value); });
}

chiprt_status_t chiprt_args_scalar_f64(chiprt_args_t* args, double value) {
  return guarded(__func__, [&] { need(args, "args").args.scalar(value); });
}

chiprt_status_t chiprt_args_after(chiprt_args_t* args, int64_t task_id) {
  return guarded(__func__, [&] { need(args, "args").args.after(task_id); });
}

chiprt_status_t chiprt_args_when(chiprt_args_t* args, const chiprt_tensor_t* flag) {
  return guarded(__func__, [&] { need(args, "args").args.when(to_tensor(flag, "flag")); });
}

chiprt_status_t chiprt_args_counts(const chiprt_args_t* args, int32_t* tensor_count,
                                   int32_t* scalar_count) {
  return guarded(__func__, [&] {
    const chiprt_args_t& a = need(args, "args");
    need(tensor_count, "tensor_count") = a.args.tensor_count();
    need(scalar_count, "scalar_count") = a.args.scalar_count();
  });
}

// ---- Worker ------------------------------------------------------------------------------------

chiprt_status_t chiprt_worker_options_init(chiprt_worker_options_t* options) {
  return guarded(__func__, [&] {
    chiprt_worker_options_t& out = need(options, "options");
    const chiprt::WorkerOptions defaults;
    out = chiprt_worker_options_t{};
    out.platform = "sim";
    out.device_id = defaults.device_id;
    out.runtime = static_cast<chiprt_runtime_t>(defaults.runtime);
    out.sim_clusters = defaults.sim.clusters;
    out.sim_aicpu_threads = defaults.sim.aicpu_threads;
    out.sim_host_threads = defaults.sim.host_threads;
    out.sim_memory_bytes = defaults.sim.memory_bytes;
    out.sim_serial = defaults.sim.serial;
    out.sim_core_execution = static_cast<chiprt_sim_core_execution_t>(defaults.sim.core_execution);
    out.sim_isolation = static_cast<chiprt_sim_isolation_t>(defaults.sim.isolation);
  });
}

chiprt_status_t chiprt_worker_create(chiprt_worker_t** out) {
  return guarded(__func__, [&] {
    need(out, "out");
    *out = new chiprt_worker;
  });
}

chiprt_status_t chiprt_worker_init(chiprt_worker_t* worker,
                                   const chiprt_worker_options_t* options) {
  return guarded(__func__, [&] {
    chiprt_worker_t& w = need(worker, "worker");
    const chiprt::WorkerOptions converted = to_options(options);
    w.worker.init(converted);
  });
}

chiprt_status_t chiprt_worker_initialized(const chiprt_worker_t* worker, bool* out) {
  return guarded(__func__, [&] {
    const chiprt_worker_t& w = need(worker, "worker");
    need(out, "out") = !w.closed.load() && w.worker.initialized();
  });
}

chiprt_status_t chiprt_worker_close(chiprt_worker_t* worker) {
  return guarded(__func__, [&] {
    chiprt_worker_t& w = need(worker, "worker");
    try {
      w.worker.close();
    } catch (const chiprt::Error& error) {
      // Refused from inside a run, or in a forked child (the worker is the parent's): the worker
      // stays as it was. Anything else failed while closing.
      if (error.code() != chiprt::StatusCode::ReentrantCall &&
          error.code() != chiprt::StatusCode::InheritedWorker) {
        w.closed.store(true);
      }
      throw;
    }
    w.closed.store(true);
  });
}

chiprt_status_t chiprt_worker_destroy(chiprt_worker_t* worker) {
  if (worker == nullptr) {
    clear_last_error();
    return CHIPRT_OK;
  }
  const chiprt_status_t status = chiprt_worker_close(worker);
  // Refused from inside a run (an orchestration function or a kernel of this worker's run): the
  // worker stays, since freeing it would pull it from under the run that is executing.
  if (status == CHIPRT_REENTRANT_CALL) return status;
  delete worker;  // ~Worker closes too, and does not throw
  return status;
}

chiprt_status_t chiprt_worker_register_callable(chiprt_worker_t* worker, int32_t callable_id,
                                                const void* container, size_t size) {
  return guarded(__func__, [&] {
    chiprt_worker_t& w = need(worker, "worker");
    if (container == nullptr) invalid("parameter 'container' is NULL");
    if (size == 0) invalid("parameter 'size' is 0 (an empty container)");
    w.worker.register_callable(callable_id, {static_cast<const uint8_t*>(container), size});
  });
}

chiprt_status_t chiprt_worker_unregister_callable(chiprt_worker_t* worker, int32_t callable_id) {
  return guarded(__func__, [&] { need(worker, "worker").worker.unregister_callable(callable_id); });
}

chiprt_status_t chiprt_worker_has_callable(const chiprt_worker_t* worker, int32_t callable_id,
                                           bool* out) {
  return guarded(__func__, [&] {
    const chiprt_worker_t& w = need(worker, "worker");
    need(out, "out");
    w.check_ready();
    *out = w.worker.has_callable(callable_id);
  });
}

chiprt_status_t chiprt_worker_malloc(chiprt_worker_t* worker, uint64_t bytes,
                                     chiprt_buffer_t* out) {
  return guarded(__func__, [&] {
    chiprt_worker_t& w = need(worker, "worker");
    need(out, "out");
    const chiprt::DeviceBuffer buffer = w.worker.malloc(bytes);
    *out = {buffer.addr, buffer.size};
  });
}

chiprt_status_t chiprt_worker_free(chiprt_worker_t* worker, chiprt_buffer_t buffer) {
  return guarded(__func__, [&] { need(worker, "worker").worker.free({buffer.addr, buffer.size}); });
}

chiprt_status_t chiprt_worker_copy_to(chiprt_worker_t* worker, chiprt_buffer_t dst, const void* src,
                                      uint64_t bytes, uint64_t dst_offset) {
  return guarded(__func__, [&] {
    chiprt_worker_t& w = need(worker, "worker");
    if (bytes > 0 && src == nullptr) invalid("parameter 'src' is NULL");
    w.worker.copy_to({dst.addr, dst.size}, src, bytes, dst_offset);
  });
}

chiprt_status_t chiprt_worker_copy_from(chiprt_worker_t* worker, void* dst, chiprt_buffer_t src,
                                        uint64_t bytes, uint64_t src_offset) {
  return guarded(__func__, [&] {
    chiprt_worker_t& w = need(worker, "worker");
    if (bytes > 0 && dst == nullptr) invalid("parameter 'dst' is NULL");
    w.worker.copy_from(dst, {src.addr, src.size}, bytes, src_offset);
  });
}

chiprt_status_t chiprt_worker_memset(chiprt_worker_t* worker, chiprt_buffer_t dst, int value,
                                     uint64_t bytes) {
  return guarded(__func__, [&] {
    need(worker, "worker").worker.memset({dst.addr, dst.size}, value, bytes);
  });
}

chiprt_status_t chiprt_worker_device_bytes_in_use(const chiprt_worker_t* worker, uint64_t* out) {
  return guarded(__func__, [&] {
    const chiprt_worker_t& w = need(worker, "worker");
    need(out, "out");
    w.check_ready();
    *out = w.worker.device_bytes_in_use();
  });
}

// ---- Runs --------------------------------------------------------------------------------------

chiprt_status_t chiprt_call_config_init(chiprt_call_config_t* config) {
  return guarded(__func__, [&] {
    chiprt_call_config_t& out = need(config, "config");
    const chiprt::CallConfig defaults;
    out = chiprt_call_config_t{};
    out.runtime = static_cast<chiprt_runtime_t>(defaults.runtime);
    out.aicpu_thread_num = defaults.aicpu_thread_num;
    out.cluster_count = defaults.cluster_count;
    out.serial = defaults.serial;
    out.output_heap_bytes = defaults.output_heap_bytes;
    out.max_tasks = defaults.max_tasks;
    out.replay_graph = defaults.replay_graph;
    out.replay_key = defaults.replay_key;
    out.measure_kernel_time = defaults.measure_kernel_time;
    out.pipeline_slot = defaults.pipeline_slot;
    out.arena_bank = defaults.arena_bank;
    out.diagnostics_background_write = defaults.diagnostics.background_write;
  });
}

chiprt_status_t chiprt_worker_run(chiprt_worker_t* worker, int32_t callable_id,
                                  const chiprt_args_t* args, const chiprt_call_config_t* config,
                                  chiprt_run_report_t* report) {
  return guarded(__func__, [&] {
    chiprt_worker_t& w = need(worker, "worker");
    const chiprt::CallConfig converted = to_config(config);
    const chiprt::RunReport result = w.worker.run(callable_id, args_or_empty(args), converted);
    copy_report(result, report);
  });
}

chiprt_status_t chiprt_worker_submit(chiprt_worker_t* worker, int32_t callable_id,
                                     const chiprt_args_t* args, const chiprt_call_config_t* config,
                                     chiprt_run_handle_t** out) {
  return guarded(__func__, [&] {
    chiprt_worker_t& w = need(worker, "worker");
    need(out, "out");
    const chiprt::CallConfig converted = to_config(config);
    auto handle = std::make_unique<chiprt_run_handle>();
    handle->handle = w.worker.submit(callable_id, args_or_empty(args), converted);
    *out = handle.release();
  });
}

chiprt_status_t chiprt_worker_try_submit(chiprt_worker_t* worker, int32_t callable_id,
                                         const chiprt_args_t* args,
                                         const chiprt_call_config_t* config,
                                         chiprt_run_handle_t** out, bool* admitted) {
  return guarded(__func__, [&] {
    chiprt_worker_t& w = need(worker, "worker");
    need(out, "out");
    need(admitted, "admitted");
    const chiprt::CallConfig converted = to_config(config);
    auto handle = std::make_unique<chiprt_run_handle>();
    *admitted = w.worker.try_submit(callable_id, args_or_empty(args), converted, &handle->handle);
    if (*admitted) *out = handle.release();
  });
}

chiprt_status_t chiprt_run_handle_wait(chiprt_run_handle_t* handle, chiprt_run_report_t* report) {
  return guarded(__func__, [&] { copy_report(need(handle, "handle").handle.wait(), report); });
}

chiprt_status_t chiprt_run_handle_wait_for(chiprt_run_handle_t* handle, uint64_t timeout_ms,
                                           bool* done) {
  return guarded(__func__, [&] {
    chiprt_run_handle_t& h = need(handle, "handle");
    need(done, "done");
    // In slices of a day: a condition variable adds the timeout to the clock's now, so one wait
    // of near INT64_MAX nanoseconds overflows (undefined; in practice it returns at once).
    constexpr uint64_t kSliceMs = 24ull * 3600 * 1000;
    uint64_t left = timeout_ms;
    while (left > kSliceMs) {
      if (h.handle.wait_for(std::chrono::milliseconds(kSliceMs))) {
        *done = true;
        return;
      }
      left -= kSliceMs;
    }
    *done = h.handle.wait_for(std::chrono::milliseconds(static_cast<int64_t>(left)));
  });
}

chiprt_status_t chiprt_run_handle_ready(const chiprt_run_handle_t* handle, bool* out) {
  return guarded(__func__, [&] {
    const chiprt_run_handle_t& h = need(handle, "handle");
    need(out, "out") = h.handle.ready();
  });
}

chiprt_status_t chiprt_run_handle_sequence(const chiprt_run_handle_t* handle, uint64_t* out) {
  return guarded(__func__, [&] {
    const chiprt_run_handle_t& h = need(handle, "handle");
    need(out, "out") = h.handle.sequence();
  });
}

chiprt_status_t chiprt_run_handle_destroy(chiprt_run_handle_t* handle) {
  // ~RunHandle waits for the run and logs an error nobody waited for; it does not throw.
  delete handle;
  clear_last_error();
  return CHIPRT_OK;
}

chiprt_status_t chiprt_worker_runs_in_flight(const chiprt_worker_t* worker, uint32_t* out) {
  return guarded(__func__, [&] {
    const chiprt_worker_t& w = need(worker, "worker");
    need(out, "out");
    w.check_ready();
    *out = w.worker.runs_in_flight();
  });
}

chiprt_status_t chiprt_worker_reset(chiprt_worker_t* worker) {
  return guarded(__func__, [&] { need(worker, "worker").worker.reset(); });
}

chiprt_status_t chiprt_worker_reset_count(const chiprt_worker_t* worker, uint64_t* out) {
  return guarded(__func__, [&] {
    const chiprt_worker_t& w = need(worker, "worker");
    need(out, "out");
    w.check_ready();
    *out = w.worker.reset_count();
  });
}

// ---- Diagnostics -------------------------------------------------------------------------------

chiprt_status_t chiprt_worker_flush_diagnostics(chiprt_worker_t* worker) {
  return guarded(__func__, [&] { need(worker, "worker").worker.flush_diagnostics(); });
}

chiprt_status_t chiprt_latest_diagnostics_run(const char* output_dir, char* out, size_t capacity,
                                              size_t* length) {
  return guarded(__func__, [&] {
    need(output_dir, "output_dir");
    write_string(chiprt::latest_diagnostics_run(output_dir), out, capacity, length);
  });
}

}  // extern "C"
