#include "aicore/core_executor.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <optional>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/task_args.h"
#include "common/chip_launch.h"
#include "common/chip_services.h"
#include "common/diag_writer.h"
#include "common/handshake.h"
#include "common/run_context.h"

namespace chiprt::aicore {
namespace {

using common::ChipLaunchArgs;
using common::HandshakeCell;

using common::kContextWords;
using common::kMaxKernelArgs;
// Characters of a kernel exception's what() kept in the result detail (kResultDetailBytes).
constexpr int kMaxExceptionText = 768;
static_assert(kMaxExceptionText + 128 <= common::kResultDetailBytes);

void ring_owner(common::SharedPrefix* prefix, const HandshakeCell& cell,
                const common::ParkWake& park_wake) {
  if (cell.owner < common::kMaxAicpuThreads) prefix->doorbells[cell.owner].ring(park_wake);
}

// Promotes the pending slot into the running slot. The payload is copied before the slot is
// released so the scheduler never overwrites it while it is read.
void promote(HandshakeCell& cell, uint32_t task) {
  cell.running_payload = cell.pending_payload;
  cell.running.store(task, std::memory_order_release);
  cell.pending.store(common::kTaskIdle, std::memory_order_release);
}

// The executing thread's CPU time, not wall time: on a host with fewer cores than chip threads a
// kernel that is preempted mid-run would otherwise be charged the time it was not running.
uint64_t thread_cpu_ns() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

// Diagnostics around one kernel call: its span (TaskExec) and, when asked for, the calling
// thread's counters over it (Counters).
class KernelDiag {
 public:
  KernelDiag(common::DiagWriter& writer, const common::DispatchPayload& payload, uint32_t core)
      : writer_(writer),
        payload_(payload),
        core_(core),
        counters_(writer.on(common::kDiagCounters) && writer.services().read_counters != nullptr) {
    if (counters_) {
      valid_ = writer_.services().read_counters(writer_.services().ctx, &instructions_, &cycles_,
                                                &cpu_ns_, &reason_);
      note_refusal();
    }
    begin_ = writer_.now();
  }
  ~KernelDiag() {
    const uint64_t end = writer_.now();
    writer_.put(common::DiagKind::TaskExec, static_cast<uint16_t>(core_), payload_.task_id, begin_,
                end, payload_.func_id, payload_.block_idx, payload_.block_num);
    if (counters_) {
      uint64_t instructions = 0, cycles = 0, cpu_ns = 0;
      const uint32_t valid = writer_.services().read_counters(writer_.services().ctx, &instructions,
                                                              &cycles, &cpu_ns, &reason_);
      writer_.put(common::DiagKind::Counters, static_cast<uint16_t>(core_), payload_.task_id,
                  begin_, end, payload_.func_id, payload_.block_idx, valid & valid_,
                  instructions - instructions_, cycles - cycles_, cpu_ns - cpu_ns_);
    }
  }
  KernelDiag(const KernelDiag&) = delete;
  KernelDiag& operator=(const KernelDiag&) = delete;

 private:
  // The first core that could not open its counters leaves the reason for the host's report.
  void note_refusal() {
    common::DiagRegionHeader* header = writer_.header();
    if (reason_ == nullptr || reason_[0] == '\0' || header->counters_refused.load() != 0) return;
    if (header->counters_refused.exchange(1) != 0) return;
    std::snprintf(header->counters_reason, sizeof(header->counters_reason), "%s", reason_);
  }

  common::DiagWriter& writer_;
  const common::DispatchPayload& payload_;
  uint32_t core_;
  bool counters_;
  uint64_t begin_ = 0;
  uint32_t valid_ = 0;
  uint64_t instructions_ = 0, cycles_ = 0, cpu_ns_ = 0;
  const char* reason_ = nullptr;
};

// The args dump of one task (kDiagArgsMeta / Inputs / Outputs), by the core running its block 0:
// the views' metadata (TensorArg + Continuation records) and, before and after the kernel, the
// elements of the views it reads / writes, gathered row-major into the region's args data arena.
// NoDep views count as both (the kernel may read and write them).
class ArgsDump {
 public:
  ArgsDump(common::DiagWriter& writer, const common::DispatchPayload& payload, uint32_t core,
           const int64_t* kernel_args)
      : writer_(writer), payload_(payload), core_(core) {
    const kernel::TaskContext context = kernel::task_context(kernel_args);
    views_ =
        reinterpret_cast<const kernel::TensorView*>(static_cast<uintptr_t>(context.views_addr));
    tensor_count_ = views_ == nullptr ? 0 : context.tensor_count;
  }

  // Before the kernel: the metadata, then the inputs' data.
  void before() noexcept {
    if (writer_.on(common::kDiagArgsMeta)) {
      for (uint32_t i = 0; i < tensor_count_; ++i) put_meta(i);
    }
    if (!writer_.on(common::kDiagArgsInputs)) return;
    for (uint32_t i = 0; i < tensor_count_; ++i) {
      const auto tag = static_cast<ArgTag>(views_[i].tag);
      if (arg_tag_reads(tag) || tag == ArgTag::NoDep) put_data(i, common::DiagArgPhase::Before);
    }
  }
  // After the kernel returned: the outputs' data.
  void after() noexcept {
    if (!writer_.on(common::kDiagArgsOutputs)) return;
    for (uint32_t i = 0; i < tensor_count_; ++i) {
      const auto tag = static_cast<ArgTag>(views_[i].tag);
      if (arg_tag_writes(tag) || tag == ArgTag::NoDep) put_data(i, common::DiagArgPhase::After);
    }
  }

 private:
  void put_meta(uint32_t index) noexcept {
    const kernel::TensorView& v = views_[index];
    const uint32_t ndim = std::min<uint32_t>(v.ndim, kernel::kMaxViewDims);
    writer_.put(common::DiagKind::TensorArg, static_cast<uint16_t>(core_), payload_.task_id,
                payload_.block_num, 0, payload_.func_id, payload_.block_idx,
                index | uint32_t{v.tag} << 8 | ndim << 16, v.buffer_addr, v.start_offset,
                uint64_t{v.dtype} | uint64_t{v.element_bytes} << 8);
    // shape0, stride0, shape1, ... five words per Continuation record.
    uint64_t words[5] = {};
    uint32_t filled = 0;
    for (uint32_t d = 0; d < ndim; ++d) {
      for (const uint64_t word : {v.dims[d].shape, v.dims[d].stride}) {
        words[filled++] = word;
        if (filled == 5) {
          put_words(words);
          filled = 0;
        }
      }
    }
    if (filled > 0) {
      for (uint32_t k = filled; k < 5; ++k) words[k] = 0;
      put_words(words);
    }
  }
  void put_words(const uint64_t (&words)[5]) noexcept {
    writer_.put(common::DiagKind::Continuation, static_cast<uint16_t>(core_), payload_.task_id,
                words[0], words[1], payload_.func_id, payload_.block_idx, 0, words[2], words[3],
                words[4]);
  }

  void put_data(uint32_t index, common::DiagArgPhase phase) noexcept {
    const kernel::TensorView& v = views_[index];
    const uint32_t ndim = std::min<uint32_t>(v.ndim, kernel::kMaxViewDims);
    uint64_t bytes = v.element_bytes;
    for (uint32_t d = 0; d < ndim; ++d) bytes *= v.dims[d].shape;
    common::DiagRegionHeader* header = writer_.header();
    uint64_t offset = 0;
    uint64_t copied = 0;
    if (bytes > 0) {
      offset = header->data_used.fetch_add(bytes, std::memory_order_relaxed);
      if (offset <= header->data_bytes && bytes <= header->data_bytes - offset) {
        gather(v, ndim,
               reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(header->data_addr + offset)));
        copied = bytes;
      } else {
        header->data_refused.fetch_add(bytes, std::memory_order_relaxed);
        offset = 0;
      }
    }
    writer_.put(common::DiagKind::ArgData, static_cast<uint16_t>(core_), payload_.task_id, 0, 0,
                payload_.func_id, payload_.block_idx, index | static_cast<uint32_t>(phase) << 8,
                offset, copied, bytes);
  }

  // Copies the view's elements row-major to `out` (runs along a unit-stride last dimension in
  // one piece).
  static void gather(const kernel::TensorView& v, uint32_t ndim, uint8_t* out) noexcept {
    const uint64_t eb = v.element_bytes;
    const auto* base = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(v.buffer_addr));
    const bool inner_contiguous = ndim > 0 && v.dims[ndim - 1].stride == 1;
    const uint32_t outer = inner_contiguous ? ndim - 1 : ndim;
    const uint64_t run_bytes = (inner_contiguous ? v.dims[ndim - 1].shape : 1) * eb;
    uint64_t index[kernel::kMaxViewDims] = {};
    for (;;) {
      uint64_t element = v.start_offset;
      for (uint32_t d = 0; d < outer; ++d) element += index[d] * v.dims[d].stride;
      std::memcpy(out, base + element * eb, run_bytes);
      out += run_bytes;
      uint32_t d = outer;
      for (;;) {
        if (d == 0) return;
        --d;
        if (++index[d] < v.dims[d].shape) break;
        index[d] = 0;
      }
    }
  }

  common::DiagWriter& writer_;
  const common::DispatchPayload& payload_;
  uint32_t core_;
  const kernel::TensorView* views_ = nullptr;
  uint32_t tensor_count_ = 0;
};

void run_task(ChipLaunchArgs* args, const common::ChipServices& services,
              common::SharedPrefix* prefix, HandshakeCell& cell, uint32_t core, uint32_t task,
              common::DiagWriter& diag) {
  const common::DispatchPayload payload = cell.running_payload;
  // Messages name the task by its public id, not by the index the scheduler hands the core.
  const auto task_id = static_cast<unsigned long long>(payload.task_id);
  // The start time serves the watchdog's report, which never looks while a serial launch runs a
  // kernel (the kernel runs inline on the only scheduler thread): reading the clock per task is
  // skipped. The start count is progress to every watchdog, the host's too (common/progress.h).
  if (!args->serial) {
    cell.started_cycles.store(services.cycles(services.ctx), std::memory_order_relaxed);
  }
  cell.starts.store(cell.starts.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  cell.executing.store(task, std::memory_order_release);  // ack
  if (payload.kernel_addr == 0) {
    common::latch_chip_error(&args->result, StatusCode::UnknownFuncId,
                             "task %llu names func_id %d, but the kernel table of this run has no "
                             "kernel for it (core %u)",
                             task_id, payload.func_id, core);
    common::ring_all_doorbells(prefix, services.park_wake);
  } else if (payload.arg_count > kMaxKernelArgs) {
    common::latch_chip_error(&args->result, StatusCode::InternalError,
                             "task %llu dispatched with %u arguments, above the limit %u (core %u)",
                             task_id, payload.arg_count, kMaxKernelArgs, core);
    common::ring_all_doorbells(prefix, services.park_wake);
  } else {
    // The kernel takes its argument block (common/kernel_block.h). A task whose stored block
    // already carries its complete context is run in place; otherwise the core copies the context
    // and the arguments (an SPMD block, or a block a graph image keeps for replays) and completes
    // the context; the views stay where they are stored.
    alignas(8) int64_t scratch[common::kMaxKernelCallWords];
    int64_t* kernel_args = reinterpret_cast<int64_t*>(static_cast<uintptr_t>(payload.args_addr));
    if (payload.args_in_place == 0) {
      std::memcpy(scratch, kernel_args - kContextWords,
                  (kContextWords + payload.arg_count) * sizeof(int64_t));
      common::complete_context(scratch + kContextWords, payload.args_addr, payload.arg_count,
                               payload.block_idx, payload.block_num);
      kernel_args = scratch + kContextWords;
    }
    const auto entry = reinterpret_cast<KernelEntry>(static_cast<uintptr_t>(payload.kernel_addr));
    // Names the kernel to a host API call it makes (refused, see common/run_context.h).
    const common::RunContextScope context(
        {common::RunRole::Kernel, payload.func_id, payload.task_id, core});
    try {
      std::optional<ArgsDump> args_dump;
      if (payload.block_idx == 0 &&
          diag.on(common::kDiagArgsMeta | common::kDiagArgsInputs | common::kDiagArgsOutputs)) {
        args_dump.emplace(diag, payload, core, kernel_args);
        args_dump->before();
      }
      std::optional<KernelDiag> kernel_diag;
      if (diag.on(common::kDiagTaskExec | common::kDiagCounters)) {
        kernel_diag.emplace(diag, payload, core);
      }
      if (args->measure_kernel_time) {
        const uint64_t start = thread_cpu_ns();
        entry(kernel_args);
        const uint64_t spent = thread_cpu_ns() - start;
        // One writer per cell (this core), so a load + store suffices; no RMW.
        cell.kernel_ns.store(cell.kernel_ns.load(std::memory_order_relaxed) + spent,
                             std::memory_order_relaxed);
      } else {
        entry(kernel_args);
      }
      // The span ends with the kernel, before the outputs are copied.
      kernel_diag.reset();
      if (args_dump) args_dump->after();
    } catch (const std::exception& e) {
      // The exception's text, bounded so that the location always fits the result detail.
      common::latch_chip_error(&args->result, StatusCode::KernelFault,
                               "kernel func_id %d of task %llu threw an exception on core %u: %.*s",
                               payload.func_id, task_id, core, kMaxExceptionText, e.what());
      common::ring_all_doorbells(prefix, services.park_wake);
    } catch (...) {
      common::latch_chip_error(&args->result, StatusCode::KernelFault,
                               "kernel func_id %d of task %llu threw an exception on core %u: a "
                               "non-std exception (not derived from std::exception: no text)",
                               payload.func_id, task_id, core);
      common::ring_all_doorbells(prefix, services.park_wake);
    }
  }
  cell.executing.store(common::kTaskIdle, std::memory_order_release);
}

}  // namespace

void core_service(void* launch_args, uint32_t core) {
  auto* args = static_cast<ChipLaunchArgs*>(launch_args);
  if (args == nullptr || args->magic != common::kLaunchMagic || args->shared_addr == 0 ||
      args->shared_addr % 64 != 0 || args->shared_size < sizeof(common::SharedPrefix) ||
      args->services_addr == 0 || core >= common::kMaxCores) {
    return;
  }
  const auto& services =
      *reinterpret_cast<const common::ChipServices*>(static_cast<uintptr_t>(args->services_addr));
  common::SharedPrefix* prefix = common::shared_prefix(*args);
  HandshakeCell& cell = prefix->cells[core];
  common::DiagWriter diag = common::DiagWriter::core_stream(*args, services, core);
  for (;;) {
    const uint32_t status = cell.status.load(std::memory_order_relaxed);
    if (status == common::kCoreExited) return;
    const uint32_t control = cell.control.load(std::memory_order_acquire);
    if (control == common::kCoreClosed) {
      if (status != common::kCoreReady)
        cell.status.store(common::kCoreReady, std::memory_order_seq_cst);
      // The owner (and the doorbells) are valid only once thread 0 opened the start barrier; the
      // scheduler kicks its cores after that, so a report made earlier is repeated then.
      if (prefix->init_state.load(std::memory_order_acquire) == common::kInitDone) {
        ring_owner(prefix, cell, services.park_wake);
      }
      return;
    }
    if (control == common::kCoreExit) {
      // Tasks not yet started are dropped: the scheduler only orders exit when the run is over or
      // has failed.
      cell.running.store(common::kTaskIdle, std::memory_order_relaxed);
      cell.pending.store(common::kTaskIdle, std::memory_order_relaxed);
      cell.executing.store(common::kTaskExit, std::memory_order_relaxed);
      cell.status.store(common::kCoreExited, std::memory_order_seq_cst);
      ring_owner(prefix, cell, services.park_wake);
      return;
    }
    uint32_t task = cell.running.load(std::memory_order_acquire);
    if (task == common::kTaskIdle) {
      // A task handed to the pending slot just after the previous one finished.
      const uint32_t pending = cell.pending.load(std::memory_order_acquire);
      if (pending == common::kTaskIdle) return;
      // The scheduler fills `running` before `pending` when the core is idle, so a pending task
      // seen here may have a running one ahead of it that the first load missed; the acquire
      // above makes that store visible now. Promoting without this re-check would overwrite it.
      task = cell.running.load(std::memory_order_acquire);
      if (task == common::kTaskIdle) {
        promote(cell, pending);
        task = pending;
      }
    }
    run_task(args, services, prefix, cell, core, task, diag);
    const uint32_t next = cell.pending.load(std::memory_order_acquire);
    if (next != common::kTaskIdle) {
      promote(cell, next);
    } else {
      cell.running.store(common::kTaskIdle, std::memory_order_release);
    }
    cell.finished_task.store(task, std::memory_order_relaxed);
    if (args->serial || args->kicks_run_kernels) {
      // The core runs inline on the scheduler thread that owns it (a serial launch's one thread,
      // or the owner when kicks run kernels), which is the only reader of the count, so its own
      // loads see the store: no locked read-modify-write needed.
      cell.finished_count.store(cell.finished_count.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
    } else {
      cell.finished_count.fetch_add(1, std::memory_order_seq_cst);  // see Doorbell
    }
    ring_owner(prefix, cell, services.park_wake);
  }
}

}  // namespace chiprt::aicore
