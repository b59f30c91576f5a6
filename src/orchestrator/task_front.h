// TaskFront: what both orchestrators (HostGraphBuilder, RingOrchestrator) share between the
// Orchestration API and their placement, so that both variants accept and reject the same
// submissions with the same words.
//
// It owns: argument intake (each submission's TaskArgs read once, ArgList), every check of the
// task model (task_checks.h: kernels, core types, signatures, tensors, RunMemory bounds,
// predicate, after() ids, allocate rules, data calls) with one set of messages, the run's user data
// the function reads (Orchestration::user_data, the orchestrator's copy), the scope rules
// (modes, auto inside manual, scope_end without a scope, scopes left open), the encoding of the
// TaskRecord the dispatch code reads (kernel, dummy and fence tasks alike), the error latch (the
// first error wins; later calls are no-ops) and the mapping of exceptions thrown by the
// orchestration function (chiprt::Error keeps its code and message, an Error with code Ok is
// OrchestrationFailed; std::exception and anything else become OrchestrationFailed). An
// orchestrator keeps only its placement: the graph image and output heap (host_build_graph) or the
// rings (tensormap_ringbuffer).
//
// Every message is bounded to kMaxErrorMessageBytes, the chip's result detail (the ring
// variant's errors cross to the host through it), so a long message reads the same on both.
//
// Lifetime: one per orchestrator (per run); used on the orchestrating thread only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "common/chip_launch.h"
#include "common/graph_image.h"
#include "common/run_context.h"
#include "orchestrator/task_checks.h"

namespace chiprt::orchestrator {

// Bytes of an error message at most (common::kResultDetailBytes less its terminator).
inline constexpr std::size_t kMaxErrorMessageBytes = common::kResultDetailBytes - 1;

class TaskFront {
 public:
  explicit TaskFront(const KernelTable& kernels) noexcept : kernels_(&kernels) {}

  // Starts a run: what its tasks may name, the user data its function reads (the run's copy,
  // which must outlive the run), no error, no scope open.
  void reset(const RunMemory& memory, std::span<const std::byte> user_data = {});
  const RunMemory& memory() const noexcept { return memory_; }
  std::span<const std::byte> user_data() const noexcept { return user_data_; }

  // ---- errors: the first one latches ----------------------------------------------------------
  bool failed() const noexcept { return failed_; }
  const Status& error() const noexcept { return error_; }
  // Keeps `status` unless an error latched already; the message is bounded.
  void latch(Status status);
  void latch(StatusCode code, std::string message) { latch(Status(code, std::move(message))); }

  // ---- intake and checks: false when the submission is rejected (the error latched) -----------
  // A kernel task (`spec`) or a dummy task (null) with id `id`: reads `args` into `*list`.
  bool accept_task(uint64_t id, const TaskSpec* spec, TaskArgs& args, ArgList* list) {
    Verdict v;
    if (!read_args(args, list)) {
      v.rule = Rule::TooManyArgs;
    } else {
      if (spec != nullptr) v = check_task_spec(*kernels_, *spec, *list, args.scalar_count());
      if (v.ok()) v = check_task_args(memory_, id, args, *list);
    }
    if (v.ok()) [[likely]]
      return true;
    reject_task(v, id, spec, args);
    return false;
  }
  // An allocation-only task: the allocate rules, then the argument checks.
  bool accept_allocation(uint64_t id, TaskArgs& outputs, ArgList* list);
  // get_tensor_data / set_tensor_data (`call`) of `t` with `data` and `bytes`.
  bool accept_data_call(const char* call, const Tensor& t, const void* data, uint64_t bytes);
  // The error of a tensor argument (`arg`, or kPredicateArg) of task `id` that names a runtime
  // output released when its scope ended (the placement knows which): InvalidTask naming it.
  static Status released_output(uint64_t id, const TaskSpec* spec, const TaskArgs& args,
                                int8_t arg);
  // The same for a data call's tensor.
  static Status released_output(const char* call, const Tensor& t);

  // ---- scopes -----------------------------------------------------------------------------------
  // Opens a scope when the mode is valid and allowed here (no automatic scope inside a manual
  // one); `next_task` is the id the next task would get (named in the message).
  bool open_scope(ScopeMode mode, uint64_t next_task);
  // Closes the innermost scope; false (ScopeMismatch) when none is open. `*closed` is its mode.
  bool close_scope(uint64_t tasks_submitted, ScopeMode* closed);
  std::size_t scope_depth() const noexcept { return modes_.size(); }
  bool in_manual_scope() const noexcept { return manual_depth_ > 0; }

  // ---- the orchestration function ---------------------------------------------------------------
  // Runs `entry(orch, args)` in `role` (common/run_context.h) and maps what it throws to the
  // latched error (an error latched before wins: the exception is often its consequence); then a
  // scope left open is ScopeMismatch. The result is error().
  void run(OrchestrationEntry entry, Orchestration& orch, const TaskArgs& args,
           common::RunRole role);

  // ---- records ---------------------------------------------------------------------------------
  // The record the dispatch code reads: kernel(s), core, blocks and predicate of a kernel task
  // (`spec`), or a dummy task (`spec` null: dummy, allocation-only and fence tasks; a dummy's
  // predicate is dropped, there is nothing to skip), with `arg_count` kernel arguments.
  // Fan-in/fan-out and args_begin are the placement's. `args` may be null (fence tasks). Called
  // once the placement wrote the task's runtime outputs back into `args`: a predicated task's
  // skip-fill range is the range its Out tensors were packed into (both variants pack a task's
  // outputs, 64-byte aligned, in argument order into one range), which the dispatcher zero-fills
  // when it skips the task.
  static void encode_record(const TaskSpec* spec, const TaskArgs* args, uint16_t arg_count,
                            common::TaskRecord* record) noexcept {
    common::TaskRecord r{};
    r.func_id = -1;
    r.mix_aiv[0] = -1;
    r.mix_aiv[1] = -1;
    r.core_type = static_cast<uint8_t>(CoreType::AIV);
    r.block_num = 1;
    r.flags = common::kTaskFlagDummy;
    if (spec != nullptr) {
      r.flags = common::kTaskFlagNone;
      r.core_type = static_cast<uint8_t>(spec->core);
      r.block_num = spec->block_num;
      if (spec->core == CoreType::MIX) {
        r.func_id = spec->mix.aic;
        r.mix_aiv[0] = spec->mix.aiv0;
        r.mix_aiv[1] = spec->mix.aiv1;
      } else {
        r.func_id = spec->func_id;
      }
      if (args != nullptr && args->has_predicate()) {
        const Tensor& flag = args->predicate();
        r.flags |= common::kTaskFlagPredicated;
        r.predicate_addr = flag.data_addr();
        r.predicate_bytes = static_cast<uint32_t>(flag.element_bytes());
        encode_skip_fill(*args, &r);
      }
    }
    r.arg_count = arg_count;
    *record = r;
  }

 private:
  // The packed range of the placed Out tensors of `args` as the record's skip-fill range (cold:
  // predicated tasks only). check_task_args bounds it by kMaxSkipFillBytes.
  static void encode_skip_fill(const TaskArgs& args, common::TaskRecord* r) noexcept {
    uint64_t begin = 0;
    uint64_t end = 0;
    for (int i = 0; i < args.tensor_count(); ++i) {
      const Tensor& t = args.tensor(i);
      if (args.tag(i) != ArgTag::Out || t.buffer.size == 0) continue;
      if (end == 0) begin = t.buffer.addr;
      end = std::max(end, t.buffer.addr + t.buffer.size);
    }
    if (end == 0) return;
    r->skip_fill_addr = begin;
    r->skip_fill_granules = static_cast<uint32_t>(
        (end - begin + common::kSkipFillGranuleBytes - 1) / common::kSkipFillGranuleBytes);
  }

  void reject_task(const Verdict& v, uint64_t id, const TaskSpec* spec, const TaskArgs& args);

  const KernelTable* kernels_;
  RunMemory memory_;
  std::span<const std::byte> user_data_;
  Status error_;
  bool failed_ = false;
  std::vector<ScopeMode> modes_;  // open scopes, innermost last
  std::size_t manual_depth_ = 0;
};

}  // namespace chiprt::orchestrator
