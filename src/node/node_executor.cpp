#include "node/node_executor.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>

#include "host/run_pipeline.h"

namespace chiprt::node {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t ns_since(Clock::time_point t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

std::string describe(const NodeGraph& graph, uint32_t id) {
  const NodeTask& t = graph.task(id);
  if (t.kind == NodeTask::Kind::HostTask) return "node task " + std::to_string(id) + " (host task)";
  return "node task " + std::to_string(id) + " (callable " + std::to_string(t.callable_id) +
         " on chip " + std::to_string(t.location) + ")";
}

// The exception being handled as a chiprt::Error naming `task` (a chiprt::Error as it is; memory
// exhaustion as OutOfDeviceMemory; anything else as InternalError).
Error current_error(const std::string& task) {
  try {
    throw;
  } catch (const Error& e) {
    return e;
  } catch (const std::bad_alloc&) {
    return Error(StatusCode::OutOfDeviceMemory,
                 task + ": the host ran out of memory for the node's copies");
  } catch (const std::exception& e) {
    return Error(StatusCode::InternalError, task + ": " + e.what());
  } catch (...) {
    return Error(StatusCode::InternalError, task + ": an unknown exception");
  }
}

// The completions the chips' pipeline threads report, and the scheduler's wait for them.
struct Completions {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<uint32_t> done;
};

// One execution: the scheduler's state.
class Execution {
 public:
  Execution(NodeChips& chips, NodeMemory& memory, uint32_t max_active_chips, const NodeGraph& graph,
            std::span<const HostFunction> host_functions, const CallConfig& config)
      : max_active_chips_(std::max(1u, max_active_chips)),
        chips_(chips),
        memory_(memory),
        graph_(graph),
        host_functions_(host_functions),
        config_(config),
        pending_(graph.size()),
        handles_(graph.size()),
        ready_at_(graph.size()),
        in_flight_(chips.count(), 0),
        completions_(std::make_shared<Completions>()) {
    result_.tasks.resize(graph.size());
  }

  NodeRunResult run() {
    const Clock::time_point start = Clock::now();
    const NodeMemory::Traffic before = memory_.traffic();
    for (uint32_t id = 0; id < graph_.size(); ++id) {
      pending_[id] = static_cast<uint32_t>(graph_.task(id).producers.size());
      if (pending_[id] == 0) make_ready(id);
    }
    while (finished_ < graph_.size()) {
      dispatch_ready();
      if (finished_ == graph_.size()) break;
      for (uint32_t id : wait_for_completions()) complete_chip_run(id);
    }
    discard_cancelled_writes();
    for (uint32_t id = 0; id < graph_.size() && !result_.error; ++id) {
      if (result_.tasks[id].state == NodeTaskOutcome::State::Failed) {
        result_.error = result_.tasks[id].error;
      }
    }
    const NodeMemory::Traffic after = memory_.traffic();
    result_.traffic = {after.copies - before.copies, after.bytes - before.bytes,
                       after.evictions - before.evictions};
    result_.wall_ns = ns_since(start);
    return std::move(result_);
  }

 private:
  void make_ready(uint32_t id) {
    ready_.push_back(id);
    ready_at_[id] = Clock::now();
  }

  // Dispatches every ready task whose chip has room (host tasks run here and now, and may make
  // more tasks ready: those join the next pass).
  void dispatch_ready() {
    for (bool progress = true; progress;) {
      progress = false;
      std::deque<uint32_t> pass;
      pass.swap(ready_);
      std::deque<uint32_t> waiting;
      for (const uint32_t id : pass) {
        const NodeTask& task = graph_.task(id);
        if (task.kind == NodeTask::Kind::ChipRun && !has_room(task.location)) {
          waiting.push_back(id);
          continue;
        }
        progress = true;
        if (task.kind == NodeTask::Kind::ChipRun) {
          start_chip_run(id);
        } else {
          run_host_task(id);
        }
      }
      // The ones still waiting first, in their order; then those made ready meanwhile.
      waiting.insert(waiting.end(), ready_.begin(), ready_.end());
      ready_.swap(waiting);
    }
  }

  // Whether chip `chip` may take another run: fewer than kPipelineDepth in flight there, and, when
  // it is idle, fewer than max_active_chips chips busy (the node's thread budget).
  bool has_room(uint32_t chip) const {
    if (in_flight_[chip] >= host::kPipelineDepth) return false;
    if (in_flight_[chip] > 0) return true;
    uint32_t busy = 0;
    for (uint32_t n : in_flight_) busy += n > 0 ? 1 : 0;
    return busy < max_active_chips_;
  }

  // Acquires every region the task uses at its location; on an error releases what it took.
  std::array<uint64_t, kMaxTaskTensors> acquire(const NodeTask& task) {
    std::array<uint64_t, kMaxTaskTensors> copies{};
    std::size_t taken = 0;
    try {
      for (; taken < task.uses.size(); ++taken) {
        const RegionUse& use = task.uses[taken];
        copies[taken] = memory_.acquire(use.buffer, use.lo, use.hi, task.location, use.access).addr;
      }
    } catch (...) {
      for (std::size_t i = 0; i < taken; ++i) {
        const RegionUse& use = task.uses[i];
        memory_.release(use.buffer, use.lo, use.hi, task.location, Coherence::Access::Read, false);
      }
      throw;
    }
    return copies;
  }

  void start_chip_run(uint32_t id) {
    const NodeTask& task = graph_.task(id);
    bool acquired = false;
    bool counted = false;
    try {
      const std::array<uint64_t, kMaxTaskTensors> copies = acquire(task);
      acquired = true;
      // The run's arguments over the chip's copies; after() ids are the node's, not the chip's.
      TaskArgs args;
      for (int i = 0; i < task.args.tensor_count(); ++i) {
        Tensor t = task.args.tensor(i);
        t.buffer = DeviceBuffer{copies[i], t.buffer.size};
        args.add(task.args.tag(i), t);
      }
      for (int i = 0; i < task.args.scalar_count(); ++i) {
        args.add_scalar_bits(task.args.scalar_bits(i));
      }
      result_.tasks[id].wait_ns = ns_since(ready_at_[id]);
      std::shared_ptr<Completions> completions = completions_;
      ++in_flight_[task.location];
      counted = true;
      uint32_t busy = 0;
      for (uint32_t n : in_flight_) busy += n > 0 ? 1 : 0;
      result_.peak_active_chips = std::max(result_.peak_active_chips, busy);
      handles_[id] =
          chips_.chip(task.location)
              .submit(task.callable_id, args, config_, /*poisons=*/false, [completions, id] {
                {
                  std::lock_guard lock(completions->mutex);
                  completions->done.push_back(id);
                }
                completions->cv.notify_one();
              });
    } catch (...) {
      if (counted) --in_flight_[task.location];
      fail(id, current_error(describe(graph_, id)), acquired);
    }
  }

  void run_host_task(uint32_t id) {
    const NodeTask& task = graph_.task(id);
    std::array<uint64_t, kMaxTaskTensors> copies{};
    try {
      copies = acquire(task);
    } catch (...) {
      fail(id, current_error(describe(graph_, id)), /*acquired=*/false);
      return;
    }
    result_.tasks[id].wait_ns = ns_since(ready_at_[id]);
    std::array<uint8_t*, kMaxTaskTensors> buffers{};
    for (std::size_t i = 0; i < task.uses.size(); ++i) {
      buffers[i] = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(copies[i]));
    }
    try {
      if (id >= host_functions_.size() || !host_functions_[id]) {
        throw Error(StatusCode::InternalError, "no host function for " + describe(graph_, id));
      }
      host_functions_[id](HostTask(task.args, buffers));
    } catch (const Error& e) {
      fail(id, Error(e.code(), describe(graph_, id) + ": " + e.message()), true);
      return;
    } catch (const std::exception& e) {
      fail(id, Error(StatusCode::KernelFault, describe(graph_, id) + " threw: " + e.what()), true);
      return;
    } catch (...) {
      fail(id, Error(StatusCode::KernelFault, describe(graph_, id) + " threw a non-std exception"),
           true);
      return;
    }
    succeed(id);
  }

  std::deque<uint32_t> wait_for_completions() {
    std::unique_lock lock(completions_->mutex);
    completions_->cv.wait(lock, [&] { return !completions_->done.empty(); });
    return std::exchange(completions_->done, {});
  }

  void complete_chip_run(uint32_t id) {
    --in_flight_[graph_.task(id).location];
    try {
      result_.tasks[id].report = handles_[id].wait();
    } catch (const Error& e) {
      handles_[id] = RunHandle();
      const uint32_t chip = graph_.task(id).location;
      fail(id, Error(e.code(), describe(graph_, id) + ": " + e.message(), std::string(e.hint())),
           /*acquired=*/true);
      // A faulted chip's memory is no source for anyone: what only it held is lost.
      if (chips_.faulted(chip)) {
        memory_.chip_reset(chip, "chip " + std::to_string(chip) + " faulted (" + e.message() + ")");
      }
      return;
    }
    handles_[id] = RunHandle();
    succeed(id);
  }

  // The task ran: its writes are its location's (lost, never stale, when the copy it wrote went
  // with its chip's fault before this); its consumers may become ready.
  void succeed(uint32_t id) {
    const NodeTask& task = graph_.task(id);
    for (const RegionUse& use : task.uses) {
      if (!memory_.release(use.buffer, use.lo, use.hi, task.location, use.access, use.dense) &&
          use.access == Coherence::Access::Write) {
        memory_.discard(use.buffer, use.lo, use.hi,
                        location_name(task.location) + " faulted before " + describe(graph_, id) +
                            "'s writes were collected");
      }
    }
    finish(id, NodeTaskOutcome::State::Done, std::nullopt);
    for (uint32_t consumer : task.consumers) {
      if (--pending_[consumer] == 0 && !cancelled(consumer)) make_ready(consumer);
    }
  }

  // The task failed (`acquired`: holding its regions): what it writes is discarded, and every
  // task depending on it is cancelled.
  void fail(uint32_t id, const Error& error, bool acquired) {
    const NodeTask& task = graph_.task(id);
    const std::string why = describe(graph_, id) + " failed writing them";
    for (const RegionUse& use : task.uses) {
      if (acquired) {
        memory_.release(use.buffer, use.lo, use.hi, task.location, Coherence::Access::Read, false);
      }
      if (use.access == Coherence::Access::Write) memory_.discard(use.buffer, use.lo, use.hi, why);
    }
    finish(id, NodeTaskOutcome::State::Failed, error);
    cancel_consumers(id, error);
  }

  bool cancelled(uint32_t id) const {
    return result_.tasks[id].state == NodeTaskOutcome::State::Cancelled;
  }

  // Cancels, unrun, every task that depends on failed task `root`, directly or not. What they
  // would write is discarded when the run ends: tasks before them that read it (their producers,
  // write after read) may not have run yet.
  void cancel_consumers(uint32_t root, const Error& root_error) {
    std::vector<uint32_t> work(graph_.task(root).consumers.begin(),
                               graph_.task(root).consumers.end());
    while (!work.empty()) {
      const uint32_t consumer = work.back();
      work.pop_back();
      if (cancelled(consumer)) continue;
      cancelled_.push_back(consumer);
      finish(consumer, NodeTaskOutcome::State::Cancelled,
             Error(StatusCode::Cancelled,
                   describe(graph_, consumer) + " was not run: it depends on " +
                       describe(graph_, root) + ", which failed: " + root_error.message()));
      for (uint32_t next : graph_.task(consumer).consumers) work.push_back(next);
    }
  }

  // At the end of the run: what cancelled tasks would have written is lost.
  void discard_cancelled_writes() {
    for (uint32_t id : cancelled_) {
      const NodeTask& task = graph_.task(id);
      const std::string why = describe(graph_, id) + " was cancelled";
      for (const RegionUse& use : task.uses) {
        if (use.access == Coherence::Access::Write) {
          memory_.discard(use.buffer, use.lo, use.hi, why);
        }
      }
    }
  }

  void finish(uint32_t id, NodeTaskOutcome::State state, std::optional<Error> error) {
    result_.tasks[id].state = state;
    result_.tasks[id].error = std::move(error);
    ++finished_;
  }

  const uint32_t max_active_chips_;
  NodeChips& chips_;
  NodeMemory& memory_;
  const NodeGraph& graph_;
  std::span<const HostFunction> host_functions_;
  const CallConfig& config_;
  std::vector<uint32_t> pending_;
  std::vector<RunHandle> handles_;
  std::vector<Clock::time_point> ready_at_;
  std::vector<uint32_t> in_flight_;
  std::deque<uint32_t> ready_;
  std::vector<uint32_t> cancelled_;
  std::shared_ptr<Completions> completions_;
  uint32_t finished_ = 0;
  NodeRunResult result_;
};

}  // namespace

NodeRunResult NodeExecutor::execute(const NodeGraph& graph,
                                    std::span<const HostFunction> host_functions,
                                    const CallConfig& config) {
  return Execution(chips_, memory_, max_active_chips_, graph, host_functions, config).run();
}

}  // namespace chiprt::node
