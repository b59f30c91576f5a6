#include "orchestrator/task_front.h"

#include <algorithm>
#include <exception>
#include <string>
#include <string_view>

namespace chiprt::orchestrator {

void TaskFront::reset(const RunMemory& memory, std::span<const std::byte> user_data) {
  memory_ = memory;
  user_data_ = user_data;
  error_ = Status();
  failed_ = false;
  modes_.clear();
  manual_depth_ = 0;
}

void TaskFront::latch(Status status) {
  if (failed_ || status.is_ok()) return;
  // One message on both variants: the chip's result holds a C string of at most
  // kMaxErrorMessageBytes, so the text ends at its first NUL and is cut there; an empty text reads
  // as the code's description (which the host gives any chip error without detail).
  std::string_view text = status.message();
  text = text.substr(0, std::min(text.find('\0'), kMaxErrorMessageBytes));
  if (text.empty()) text = status_info(status.code()).detail;
  if (text.size() != status.message().size()) status = Status(status.code(), std::string(text));
  error_ = std::move(status);
  failed_ = true;
}

void TaskFront::reject_task(const Verdict& v, uint64_t id, const TaskSpec* spec,
                            const TaskArgs& args) {
  latch(describe_task(v, *kernels_, memory_, id, spec, args));
}

bool TaskFront::accept_allocation(uint64_t id, TaskArgs& outputs, ArgList* list) {
  Verdict v;
  if (!read_args(outputs, list)) {
    v.rule = Rule::TooManyArgs;
  } else {
    v = check_allocation(outputs, *list);
    if (v.ok()) v = check_task_args(memory_, id, outputs, *list);
  }
  if (v.ok()) return true;
  reject_task(v, id, nullptr, outputs);
  return false;
}

bool TaskFront::accept_data_call(const char* call, const Tensor& t, const void* data,
                                 uint64_t bytes) {
  const Verdict v = check_data_call(memory_, t, data, bytes);
  if (v.ok()) return true;
  latch(describe_data_call(v, memory_, call, t, bytes));
  return false;
}

namespace {

Status released_error(const std::string& where, const Tensor& t) {
  return Status(StatusCode::InvalidTask,
                where + ": tensor at " + hex_address(t.buffer.addr) + " (output of task " +
                    std::to_string(t.owner_task) +
                    ") was released when its scope ended; create it in an enclosing scope to "
                    "use it after that scope");
}

}  // namespace

Status TaskFront::released_output(uint64_t id, const TaskSpec* spec, const TaskArgs& args,
                                  int8_t arg) {
  const std::string where =
      task_label(id, spec) +
      (arg == kPredicateArg ? std::string(" predicate") : " arg " + std::to_string(arg));
  return released_error(where, arg == kPredicateArg ? args.predicate() : args.tensor(arg));
}

Status TaskFront::released_output(const char* call, const Tensor& t) {
  return released_error(call, t);
}

bool TaskFront::open_scope(ScopeMode mode, uint64_t next_task) {
  if (mode != ScopeMode::Auto && mode != ScopeMode::Manual) {
    latch(StatusCode::InvalidArgument, "scope_begin: mode value " +
                                           std::to_string(static_cast<int>(mode)) +
                                           " is not a ScopeMode (Auto 0, Manual 1)");
    return false;
  }
  if (mode == ScopeMode::Auto && manual_depth_ > 0) {
    latch(StatusCode::InvalidScope,
          "scope_begin(Auto) at depth " + std::to_string(modes_.size() + 1) + " inside " +
              std::to_string(manual_depth_) +
              " open manual scope(s): the tensor map knows nothing of the manual tasks' writes; "
              "nest automatic scopes only outside manual ones (task " +
              std::to_string(next_task) + " would be next)");
    return false;
  }
  modes_.push_back(mode);
  if (mode == ScopeMode::Manual) ++manual_depth_;
  return true;
}

bool TaskFront::close_scope(uint64_t tasks_submitted, ScopeMode* closed) {
  if (modes_.empty()) {
    latch(StatusCode::ScopeMismatch, "scope_end without a matching scope_begin (" +
                                         std::to_string(tasks_submitted) +
                                         " tasks submitted, no scope is open)");
    return false;
  }
  *closed = modes_.back();
  modes_.pop_back();
  if (*closed == ScopeMode::Manual) --manual_depth_;
  return true;
}

void TaskFront::run(OrchestrationEntry entry, Orchestration& orch, const TaskArgs& args,
                    common::RunRole role) {
  if (entry == nullptr) {
    latch(StatusCode::InvalidArgument, "the orchestration entry is null");
    return;
  }
  try {
    // A Worker call from the function is refused instead of re-entering the runtime
    // (common/run_context.h).
    const common::RunContextScope context({role});
    entry(orch, args);
  } catch (const Error& e) {
    // The Error's own code and message: what() would repeat the code and hint the host adds. An
    // Error claiming Ok is still an exception that ended the function: the run must not succeed.
    if (e.code() == StatusCode::Ok) {
      latch(StatusCode::OrchestrationFailed,
            "orchestration function threw a chiprt::Error with code Ok: " + e.message());
    } else {
      latch(e.code(), e.message());
    }
  } catch (const std::exception& e) {
    latch(StatusCode::OrchestrationFailed,
          std::string("orchestration function threw: ") + e.what());
  } catch (...) {
    latch(StatusCode::OrchestrationFailed,
          "orchestration function threw: an exception not derived from std::exception");
  }
  if (!modes_.empty()) {
    latch(StatusCode::ScopeMismatch, std::to_string(modes_.size()) +
                                         " scope(s) still open when the orchestration function "
                                         "returned");
  }
}

}  // namespace chiprt::orchestrator
