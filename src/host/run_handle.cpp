// RunHandle (include/chiprt/run_handle.h): the caller's view of a host::RunState.
#include "chiprt/run_handle.h"

#include <string>

#include "common/run_context.h"
#include "host/fork_guard.h"
#include "host/log.h"
#include "host/run_state.h"

namespace chiprt {

namespace {

// The handle's run; throws on an empty handle, and in a forked child (the run is the parent's:
// nothing here would ever finish it, and its lock may have been held at the fork).
const host::RunState& state_of(const std::shared_ptr<host::RunState>& state, const char* what) {
  if (state == nullptr) {
    throw Error(StatusCode::InvalidArgument,
                std::string("RunHandle::") + what +
                    " on an empty handle (default-constructed or moved from); use a handle that "
                    "submit returned");
  }
  host::refuse_inherited(state->fork_generation, state->creator_pid, "RunHandle", what,
                         state->facade);
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
