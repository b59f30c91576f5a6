// RunState (see host/run_state.h).
#include "host/run_state.h"

#include <unistd.h>

#include <algorithm>

#include "host/fork_guard.h"

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
  if (on_done) on_done();
}

void RunState::fail(const Error& failure) {
  {
    std::lock_guard lock(mutex);
    error = failure;
    done = true;
  }
  done_cv.notify_all();
  if (on_done) on_done();
}

}  // namespace chiprt::host
