#include "host/run_guard.h"

#include <string>
#include <utility>

#include "chiprt/status.h"
#include "common/run_context.h"

namespace chiprt::host {

void refuse_inside_run(const char* owner, const char* what, const char* hint) {
  const common::RunContext& context = common::current_run_context();
  if (context.role == common::RunRole::None) return;
  std::string message = std::string(owner) + "::" + what + " called from inside a run, from " +
                        common::describe(context);
  if (hint != nullptr) throw Error(StatusCode::ReentrantCall, std::move(message), hint);
  throw Error(StatusCode::ReentrantCall, std::move(message));
}

}  // namespace chiprt::host
