#include "host/run_guard.h"

#include <string>

#include "chiprt/status.h"
#include "common/run_context.h"

namespace chiprt::host {

void refuse_inside_run(const char* owner, const char* what) {
  const common::RunContext& context = common::current_run_context();
  if (context.role != common::RunRole::None) {
    throw Error(StatusCode::ReentrantCall, std::string(owner) + "::" + what +
                                               " called from inside a run, from " +
                                               common::describe(context));
  }
}

}  // namespace chiprt::host
