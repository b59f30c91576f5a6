// Test harness for the chip-side task engine: a tiny graph-image writer (the real one is the
// orchestrator's), a fake platform whose kick_core is served by a few host threads (or inline, in
// serial mode), and a ChipRun that owns one launch's memory and runs aicpu_entry on N threads.
//
// Lifetime: a ChipRun owns its image, shared region, kernel table, phase buffer and FakeChip; the
// FakeChip's service threads are joined before the memory goes away. Not thread-safe itself.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/types.h"
#include "common/chip_launch.h"
#include "common/graph_image.h"
#include "platform/platform.h"

namespace chiprt::scheduler::test {

// Func ids the harness kernels are registered under.
inline constexpr int32_t kRecordFunc = 1;    // records its task id, core and block context
inline constexpr int32_t kBlockingFunc = 3;  // records, then blocks until release_blocking_kernels
inline constexpr int32_t kThrowingFunc = 4;  // throws

struct TestTask {
  int32_t func_id = kRecordFunc;
  CoreType core = CoreType::AIC;
  bool dummy = false;
  std::vector<uint32_t> deps;  // producer task ids (may name later tasks, for cycle tests)
  // Full task model (kernels read the block context from the task context, chiprt/kernel.h).
  uint32_t block_num = 1;
  int32_t mix_aiv[2] = {-1, -1};  // MIX: the AIV parts (func_id is the AIC part)
  uint64_t predicate_addr = 0;    // predicated when predicate_bytes != 0
  uint32_t predicate_bytes = 0;
  bool scope_fence = false;  // a dummy without a public id (the image's task_ids entry is -1)
};

// Builds a graph image. Non-dummy tasks get two arguments: the Recorder address and the task's
// index (its record); task_ids numbers the tasks that are no scope fence 0.. in order.
class ImageWriter {
 public:
  uint32_t add(int32_t func_id, CoreType core, std::vector<uint32_t> deps = {});
  uint32_t add_dummy(std::vector<uint32_t> deps = {});
  // A scope fence: a dummy task without a public id; later tasks' public ids skip it.
  uint32_t add_fence(std::vector<uint32_t> deps);
  uint32_t add_task(TestTask task);
  const std::vector<TestTask>& tasks() const { return tasks_; }
  // The image (8-byte aligned words); `recorder` is stored as every task's first argument.
  std::vector<uint64_t> build(uint64_t recorder) const;

 private:
  std::vector<TestTask> tasks_;
};

// What the kernels saw. Written by kernels on core threads, read after the run.
// Kernels also check, when they start, that every producer (through dummies) has finished.
struct Recorder {
  explicit Recorder(const std::vector<TestTask>& graph)
      : tasks(graph),
        order(graph.size(), UINT32_MAX),
        core_of(graph.size(), -1),
        runs(graph.size()),
        finished(graph.size()) {}
  const std::vector<TestTask> tasks;
  std::atomic<uint32_t> next{0};
  std::vector<uint32_t> order;  // order[i] = i-th task to start
  std::vector<int32_t> core_of;
  std::vector<std::atomic<uint32_t>> runs;
  std::vector<std::atomic<uint8_t>> finished;
  std::atomic<uint32_t> bad_block_context{0};
  std::atomic<uint32_t> early_starts{0};  // started before a producer finished
  uint32_t started() const { return next.load(); }
};

// Kernel table with the harness kernels at their func ids.
std::vector<uint64_t> harness_kernel_table();
// Opens the gate every kBlockingFunc kernel waits on (and re-closes it with close = true).
void release_blocking_kernels();
void close_blocking_gate();

// A fake chip: kick_core queues the core for a pool of service threads (at least once after each
// kick, never concurrently for one core), or runs it inline in serial mode.
class FakeChip {
 public:
  // `inline_kicks` (or `serial`): a kick services the core on the kicking thread, as the sim
  // does when kicks run kernels; otherwise `service_threads` threads serve the kicks.
  FakeChip(uint32_t service_threads, bool serial, bool inline_kicks = false);
  ~FakeChip();
  FakeChip(const FakeChip&) = delete;
  FakeChip& operator=(const FakeChip&) = delete;

  const platform::ChipServices& services() const { return services_; }
  void set_launch_args(common::ChipLaunchArgs* args) { args_ = args; }
  // Waits until every kicked core was serviced and stops the service threads.
  void stop();
  uint64_t kicks() const { return kicks_.load(); }

  static int current_core();  // core being serviced on this thread, -1 otherwise

 private:
  static void kick_thunk(void* ctx, uint32_t core);
  static uint64_t cycles_thunk(void* ctx);
  void kick(uint32_t core);
  void serve_loop();
  void service(uint32_t core);

  platform::ChipServices services_{};
  common::ChipLaunchArgs* args_ = nullptr;
  bool serial_;
  bool inline_kicks_;
  std::atomic<uint64_t> kicks_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<uint32_t> queue_;
  bool queued_[common::kMaxCores] = {};
  bool active_[common::kMaxCores] = {};
  bool kicked_again_[common::kMaxCores] = {};
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

struct RunOptions {
  uint32_t threads = 2;
  uint32_t clusters = 2;
  uint32_t device_clusters = 8;
  bool serial = false;
  uint64_t timeout_ms = 0;
  uint32_t service_threads = 2;
  bool cores_known = true;  // kernels can see their core (the fake chip); false on the real sim
  // ChipLaunchArgs::kicks_run_kernels: a kick services the core inline on the kicking scheduler
  // (its owner), and the schedulers take only a fair share of the ready tasks per pass.
  bool kicks_run_kernels = false;
  // ChipLaunchArgs::image_prevalidated: the chip skips the image's per-task checks.
  bool image_prevalidated = false;
};

class ChipRun {
 public:
  ChipRun(const ImageWriter& writer, const RunOptions& options);
  ~ChipRun();

  common::ChipLaunchArgs& args() { return *args_; }
  std::vector<uint64_t>& image() { return image_; }
  std::vector<uint64_t>& kernel_table() { return kernel_table_; }
  Recorder& recorder() { return *recorder_; }
  FakeChip& chip() { return *chip_; }
  const common::PhaseBuffer& phases() const { return *phases_; }
  uint8_t* shared() { return shared_; }
  uint64_t shared_bytes() const { return shared_bytes_; }

  // Runs aicpu_entry on options.threads threads (inline when 1 thread and serial) and joins them.
  // Returns the wall time in ms. Leaves the fake chip running (call chip().stop()).
  double run();
  StatusCode code() const { return static_cast<StatusCode>(args_->result.code.load()); }
  std::string detail() const { return args_->result.detail; }

 private:
  RunOptions options_;
  std::vector<uint64_t> image_;
  std::vector<uint64_t> kernel_table_;
  std::unique_ptr<Recorder> recorder_;
  std::unique_ptr<common::PhaseBuffer> phases_;
  std::unique_ptr<common::ChipLaunchArgs> args_;
  uint8_t* shared_ = nullptr;
  uint64_t shared_bytes_ = 0;
  std::unique_ptr<FakeChip> chip_;
};

// Checks no task started before a producer (through dummy tasks too) finished, every real task ran
// exactly once on a core of its shape inside the run's clusters. Returns a description of the
// first violation, or "" when all hold.
std::string check_execution(const ImageWriter& writer, const Recorder& recorder,
                            const RunOptions& options);

}  // namespace chiprt::scheduler::test
