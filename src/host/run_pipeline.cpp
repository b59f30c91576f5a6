// RunState and RunHandle (see host/run_pipeline.h and include/chiprt/run_handle.h).
#include "host/run_pipeline.h"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "common/run_context.h"
#include "host/fork_guard.h"
#include "host/log.h"
#include "host/run_steps.h"

namespace chiprt::host {

RunState::RunState(uint64_t sequence_in, int32_t callable_id_in, const TaskArgs& args_in,
                   const CallConfig& config_in)
    : sequence(sequence_in),
      fork_generation(host::fork_generation()),
      creator_pid(static_cast<int>(getpid())),
      callable_id(callable_id_in),
      args(args_in),
      config(config_in) {
  user_data_copy.assign(config_in.user_data.begin(), config_in.user_data.end());
  config.user_data = std::span<const std::byte>(user_data_copy.data(), user_data_copy.size());
  for (int i = 0; i < args.tensor_count(); ++i) {
    if (args.tag(i) == ArgTag::Out) continue;  // the runtime allocates it, in the run's bank
    const DeviceBuffer& buffer = args.tensor(i).buffer;
    if (buffer.size != 0) buffers.emplace_back(buffer.addr, buffer.addr + buffer.size);
  }
}

bool RunState::inherited() const noexcept {
  return fork_generation != host::fork_generation();
}

bool RunState::touches(uint64_t lo, uint64_t hi) const noexcept {
  return std::any_of(buffers.begin(), buffers.end(),
                     [&](const auto& range) { return range.first < hi && lo < range.second; });
}

void RunState::finish(RunReport result) {
  {
    std::lock_guard lock(mutex);
    report = std::move(result);
    done = true;
  }
  done_cv.notify_all();
}

void RunState::fail(const Error& failure) {
  {
    std::lock_guard lock(mutex);
    error = failure;
    done = true;
  }
  done_cv.notify_all();
}

const PoisonedMemory::Range* PoisonedMemory::find(const TaskArgs& args) const noexcept {
  const Range* found = nullptr;
  for (int i = 0; i < args.tensor_count(); ++i) {
    if (args.tag(i) == ArgTag::Out) continue;  // the runtime allocates it
    const DeviceBuffer& buffer = args.tensor(i).buffer;
    const uint64_t lo = buffer.addr;
    const uint64_t hi = buffer.addr + buffer.size;
    for (const Range& range : ranges_) {
      if (range.lo < hi && lo < range.hi &&
          (found == nullptr || range.failed_run < found->failed_run)) {
        found = &range;
      }
    }
  }
  return found;
}

void PoisonedMemory::poison(const TaskArgs& args, const Range& what, bool replace) {
  for (int i = 0; i < args.tensor_count(); ++i) {
    const ArgTag tag = args.tag(i);
    // Out: runtime outputs of the run itself, which no later run can name.
    if (tag != ArgTag::InOut && tag != ArgTag::OutputExisting) continue;
    const DeviceBuffer& buffer = args.tensor(i).buffer;
    if (buffer.size == 0) continue;
    const uint64_t lo = buffer.addr;
    const uint64_t hi = buffer.addr + buffer.size;
    if (replace) clear(lo, hi);
    // The parts of [lo, hi) no range covers yet.
    std::vector<std::pair<uint64_t, uint64_t>> covered;
    for (const Range& range : ranges_) {
      if (range.lo < hi && lo < range.hi) {
        covered.emplace_back(std::max(range.lo, lo), std::min(range.hi, hi));
      }
    }
    std::sort(covered.begin(), covered.end());
    uint64_t cursor = lo;
    auto add = [&](uint64_t from, uint64_t to) {
      Range range = what;
      range.lo = from;
      range.hi = to;
      ranges_.push_back(std::move(range));
    };
    for (const auto& [from, to] : covered) {
      if (cursor < from) add(cursor, from);
      cursor = std::max(cursor, to);
    }
    if (cursor < hi) add(cursor, hi);
  }
}

void PoisonedMemory::poison_failed(const TaskArgs& args, uint64_t run, const Error& error) {
  Range what;
  what.failed_run = run;
  what.code = error.code();
  what.message = error.message();
  poison(args, what, /*replace=*/true);
}

void PoisonedMemory::poison_cancelled(const TaskArgs& args, uint64_t run, const Range& cause) {
  Range what = cause;  // a copy: poison() grows ranges_, which `cause` lies in
  what.via_run = run;
  // Memory already poisoned keeps its own (more direct) cause.
  poison(args, what, /*replace=*/false);
}

void PoisonedMemory::clear(uint64_t lo, uint64_t hi) {
  if (ranges_.empty() || lo >= hi) return;
  std::vector<Range> kept;
  for (Range& range : ranges_) {
    if (range.hi <= lo || hi <= range.lo) {
      kept.push_back(std::move(range));
      continue;
    }
    // What lies outside [lo, hi) stays poisoned.
    if (range.lo < lo) {
      Range before = range;
      before.hi = lo;
      kept.push_back(std::move(before));
    }
    if (hi < range.hi) {
      Range after = range;
      after.lo = hi;
      kept.push_back(std::move(after));
    }
  }
  ranges_ = std::move(kept);
}

Error PoisonedMemory::cancellation(uint64_t run, int32_t callable_id, const Range& cause) {
  std::string message = "run " + std::to_string(run) + " of callable " +
                        std::to_string(callable_id) + " was not launched: it names memory [" +
                        hex(cause.lo) + ", " + hex(cause.hi) + ") poisoned by run " +
                        std::to_string(cause.failed_run) + ", which failed with " +
                        std::string(status_name(cause.code)) + ": " + cause.message;
  if (cause.via_run != 0) {
    message += " (run " + std::to_string(cause.via_run) +
               ", cancelled for that failure, left the memory unwritten)";
  }
  message +=
      "; rewrite that memory from the host (copy_to, memset) or free it before a run uses it";
  return Error(StatusCode::Cancelled, message);
}

}  // namespace chiprt::host

namespace chiprt {

namespace {

// The handle's run; throws on an empty handle, and in a forked child (the run is the parent's:
// nothing here would ever finish it, and its lock may have been held at the fork).
const host::RunState& state_of(const std::shared_ptr<host::RunState>& state, const char* what) {
  if (state == nullptr) {
    throw Error(StatusCode::InvalidArgument,
                std::string("RunHandle::") + what +
                    " on an empty handle (default-constructed or moved from); use the handle "
                    "Worker::submit returned");
  }
  host::refuse_inherited(state->fork_generation, state->creator_pid, "RunHandle", what);
  return *state;
}

// Waits for the run unless called from inside a run, where it would wait for itself.
void refuse_inside_a_run(const char* what) {
  const common::RunContext& context = common::current_run_context();
  if (context.role != common::RunRole::None) {
    throw Error(StatusCode::ReentrantCall, std::string("RunHandle::") + what +
                                               " called from inside a run, from " +
                                               common::describe(context));
  }
}

// Waits for an unwaited run; its error, which nobody will see otherwise, is logged. Inside a run
// (an orchestration function or a kernel dropping a handle) it does not wait: that run may be
// what the awaited one waits for.
void settle(const std::shared_ptr<host::RunState>& state) noexcept {
  if (state == nullptr || state->inherited()) return;  // a forked child's: nothing to wait for
  if (common::current_run_context().role != common::RunRole::None) {
    CHIPRT_LOG_WARN("RunHandle of run %llu dropped inside a run without waiting for it",
                    static_cast<unsigned long long>(state->sequence));
    return;
  }
  std::unique_lock lock(state->mutex);
  state->done_cv.wait(lock, [&] { return state->done; });
  if (state->error && !state->observed) {
    CHIPRT_LOG_WARN("run %llu ended with an error nobody waited for: %s",
                    static_cast<unsigned long long>(state->sequence), state->error->what());
  }
}

}  // namespace

RunHandle& RunHandle::operator=(RunHandle&& other) noexcept {
  if (this != &other) {
    settle(state_);
    state_ = std::move(other.state_);
  }
  return *this;
}

RunHandle::~RunHandle() {
  settle(state_);
}

uint64_t RunHandle::sequence() const {
  return state_of(state_, "sequence").sequence;
}

bool RunHandle::ready() const {
  const host::RunState& state = state_of(state_, "ready");
  std::lock_guard lock(state.mutex);
  return state.done;
}

bool RunHandle::wait_for(std::chrono::nanoseconds timeout) const {
  const host::RunState& state = state_of(state_, "wait_for");
  refuse_inside_a_run("wait_for");
  std::unique_lock lock(state.mutex);
  return state.done_cv.wait_for(lock, timeout, [&] { return state.done; });
}

RunReport RunHandle::wait() const {
  const host::RunState& state = state_of(state_, "wait");
  refuse_inside_a_run("wait");
  std::unique_lock lock(state.mutex);
  state.done_cv.wait(lock, [&] { return state.done; });
  state.observed = true;
  if (state.error) throw *state.error;
  return state.report;
}

}  // namespace chiprt
