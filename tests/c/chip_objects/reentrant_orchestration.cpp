// An orchestration that calls the C API on its own worker from inside the run: user_data holds
// the chiprt_worker_t*. Closing or destroying the worker there must be refused with
// CHIPRT_REENTRANT_CALL and leave the worker whole (destroy once freed it under its run); any
// other answer fails the run with a message saying which. Its symbols (chiprt_worker_*) come from
// the libchiprt.so the test program links.
#include <cstring>
#include <string>

#include "chiprt/chiprt_c.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"

namespace {

void expect_reentrant(chiprt_status_t status, const char* call) {
  if (status != CHIPRT_REENTRANT_CALL) {
    throw chiprt::Error(chiprt::StatusCode::InternalError,
                        std::string(call) + " inside a run returned " + chiprt_status_name(status) +
                            ", not ReentrantCall");
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    chiprt::Orchestration& orch, const chiprt::TaskArgs&) {
  const auto user_data = orch.user_data();
  chiprt_worker_t* worker = nullptr;
  if (user_data.size() != sizeof worker) {
    throw chiprt::Error(chiprt::StatusCode::InvalidArgument,
                        "reentrant_orchestration: user_data must hold the chiprt_worker_t*");
  }
  std::memcpy(&worker, user_data.data(), sizeof worker);
  expect_reentrant(chiprt_worker_close(worker), "chiprt_worker_close");
  expect_reentrant(chiprt_worker_destroy(worker), "chiprt_worker_destroy");
}
