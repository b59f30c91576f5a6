// RingOrchestrator: the tensormap_ringbuffer orchestrator. Runs the user's orchestration function
// on one AICPU thread while the schedulers dispatch: derives dependencies (TensorMap), allocates
// task slots, output buffers and dependency entries from the rings of the current scope depth
// (common/ring_state.h), wires fan-in/fan-out with the lock-free slot protocol, publishes ready
// tasks, and retires slots in order per set. When a ring is full it waits for retirement through
// its RingDriver (back-pressure); a provable deadlock is reported at once (RingDeadlock) and a
// wait without progress for the scheduler timeout ends with WaitTimeout.
//
// Lifetime: one per run, constructed and used on the orchestrating AICPU thread only; the shared
// memory it is given must outlive it. Errors latch (see Orchestration): the first error is kept,
// later calls are no-ops, and run() reports it to the launch result.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "common/chip_launch.h"
#include "common/diag_writer.h"
#include "common/graph_image.h"
#include "common/ring_layout.h"
#include "common/ring_state.h"
#include "orchestrator/task_checks.h"

namespace chiprt::orchestrator {

// What the AICPU thread driving the orchestrator provides (scheduler room, ring_entry).
class RingDriver {
 public:
  virtual ~RingDriver() = default;
  // The slot's fan-in reached zero: make it ready (queue of its shape) and wake schedulers.
  virtual void publish_ready(uint32_t slot) = 0;
  // One more task is visible to the schedulers (keeps the watchdog's view current).
  virtual void note_submitted(uint64_t submitted) = 0;
  // Tasks completed so far in this run (acquire).
  virtual uint64_t completed() const = 0;
  // A count that changes whenever the launch makes progress (common/progress.h: a completion, a
  // kernel start, a submission); the waits' no-progress bound follows it. Drivers without cores
  // of their own report the completed count.
  virtual uint64_t progress() const { return completed(); }
  // Waits until something may have changed (a completion, a slot becoming retirable, an error) or
  // `deadline_cycles` passed. Threaded: parks on the orchestrator's doorbell with
  // RingControl::orchestrator_waiting set. Serial: runs one scheduling pass on this thread.
  // `recheck` is called after announcing the wait; if it returns true the wait returns at once.
  virtual void wait(uint64_t deadline_cycles, bool (*recheck)(void*), void* recheck_ctx) = 0;
  // Chip clock (cycles) and its rate.
  virtual uint64_t now() const = 0;
  virtual uint64_t clock_hz() const = 0;
  // Whether an error latched anywhere on the chip (the orchestrator stops submitting).
  virtual bool chip_failed() const = 0;
};

// Shared memory the orchestrator works on (pointers into the shared-state region and the heap).
struct RingMemory {
  common::ChipLaunchArgs* args = nullptr;
  common::RingControl* control = nullptr;  // geometry already written by ring init
  common::RingSlot* slots = nullptr;       // [total_slots]
  common::DepEntry* dep_pool = nullptr;
  uint32_t* spill = nullptr;
  common::TaskRecord* records = nullptr;  // [total_slots], read by the dispatch code
  int64_t* slot_args = nullptr;           // [total_slots * kSlotArgs]
  int64_t* public_ids = nullptr;          // [total_slots]: public TaskId of each slot's task
  // Per-task counters of the dispatch code, indexed by slot (scheduler/shared_state.h).
  std::atomic<uint32_t>* fanin_remaining = nullptr;
  std::atomic<uint8_t>* task_state = nullptr;
  uint64_t heap_addr = 0;  // device address of the run's heap
  uint64_t heap_size = 0;
  // The run's number (ChipLaunchArgs::run): non-zero bounds the tasks' memory by the run's
  // arguments and heap and stamps the runtime outputs (see RunMemory); 0 (tests) bounds nothing.
  uint32_t run = 0;
  const KernelTable* kernels = nullptr;
  // The run's user data (ChipLaunchArgs::user_data_addr / user_data_bytes): device memory the
  // host wrote, read-only, returned by user_data(). Null with 0 bytes: none.
  const std::byte* user_data = nullptr;
  uint64_t user_data_bytes = 0;
  uint32_t clusters = 0;
  uint64_t timeout_ms = 0;  // no-progress bound for waits (the scheduler timeout)
  // Diagnostics: the orchestrating thread's stream (Submit spans, Edge records); inactive when
  // off.
  common::DiagWriter diag;
};
// Argument words per slot: one argument block (common/kernel_block.h), complete for a
// single-block task's kernel to run in place (common::kTaskFlagArgsInPlace).
inline constexpr uint32_t kSlotArgs = common::kRingSlotArgs;

class RingOrchestrator final : public Orchestration {
 public:
  RingOrchestrator(const RingMemory& memory, RingDriver& driver);
  ~RingOrchestrator() override;

  // Runs `entry(*this, args)`, ends the implicit root scope, drains retirement bookkeeping and
  // returns the first error (Ok on success); on success every submitted task was published.
  // The caller stores the total into the scheduler globals and latches a failure.
  Status run(OrchestrationEntry entry, const TaskArgs& args);

  uint64_t submitted() const noexcept;
  // Diagnostics (tests): live tensor-map entries and buffers (entries of retired tasks are gone).
  std::size_t tensor_map_entries() const noexcept;
  std::size_t tensor_map_buffers() const noexcept;

  // Orchestration
  using Orchestration::scope_begin;
  using Orchestration::submit;
  TaskId submit(const TaskSpec& spec, TaskArgs& args) override;
  TaskId submit_dummy(TaskArgs& args) override;
  TaskId allocate(TaskArgs& outputs) override;
  void scope_begin(ScopeMode mode) override;
  void scope_end() override;
  void get_tensor_data(const Tensor& tensor, void* dst, uint64_t bytes) override;
  void set_tensor_data(const Tensor& tensor, const void* src, uint64_t bytes) override;
  bool failed() const override;
  Status error() const override;
  uint64_t task_count() const override;
  uint32_t cluster_count() const override;
  std::span<const std::byte> user_data() const override;

 private:
  struct State;
  std::unique_ptr<State> state_;  // pimpl keeps the tensor map and ring bookkeeping private
};

}  // namespace chiprt::orchestrator
