#include "chip_harness.h"

#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "aicore/core_executor.h"
#include "chiprt/kernel.h"
#include "common/kernel_block.h"
#include "common/shared_layout.h"
#include "platform/sim/futex.h"
#include "scheduler/chip_entry.h"

namespace chiprt::scheduler::test {
namespace {

thread_local int t_current_core = -1;
std::atomic<bool> g_gate_open{false};

bool producers_finished(const Recorder& recorder, uint32_t task) {
  const auto& tasks = recorder.tasks;
  std::vector<uint32_t> stack(tasks[task].deps.begin(), tasks[task].deps.end());
  std::vector<bool> seen(tasks.size(), false);
  while (!stack.empty()) {
    const uint32_t d = stack.back();
    stack.pop_back();
    if (seen[d]) continue;
    seen[d] = true;
    if (tasks[d].dummy) {
      stack.insert(stack.end(), tasks[d].deps.begin(), tasks[d].deps.end());
    } else if (recorder.finished[d].load() == 0) {
      return false;
    }
  }
  return true;
}

uint32_t record_start(int64_t* args) {
  auto* recorder = reinterpret_cast<Recorder*>(static_cast<uintptr_t>(args[0]));
  const auto task = static_cast<uint32_t>(args[1]);
  if (kernel::block_idx(args) != 0 || kernel::block_num(args) != 1 ||
      kernel::tensor_count(args) != 0 || kernel::scalar_count(args) != 2) {
    recorder->bad_block_context.fetch_add(1);
  }
  if (!producers_finished(*recorder, task)) recorder->early_starts.fetch_add(1);
  recorder->core_of[task] = FakeChip::current_core();
  recorder->runs[task].fetch_add(1);
  recorder->order[recorder->next.fetch_add(1)] = task;
  return task;
}
void record(int64_t* args) {
  const uint32_t task = record_start(args);
  reinterpret_cast<Recorder*>(static_cast<uintptr_t>(args[0]))->finished[task].store(1);
}

void record_kernel(int64_t* args) {
  record(args);
}
void blocking_kernel(int64_t* args) {
  record_start(args);
  while (!g_gate_open.load()) g_gate_open.wait(false);
}
void throwing_kernel(int64_t* args) {
  record_start(args);
  throw std::runtime_error("kernel failure");
}

template <typename T>
void append(std::vector<uint8_t>* bytes, const T& value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  bytes->insert(bytes->end(), p, p + sizeof(T));
}
void pad8(std::vector<uint8_t>* bytes) {
  while (bytes->size() % 8 != 0) bytes->push_back(0);
}

}  // namespace

uint32_t ImageWriter::add(int32_t func_id, CoreType core, std::vector<uint32_t> deps) {
  tasks_.push_back({func_id, core, false, std::move(deps)});
  return static_cast<uint32_t>(tasks_.size() - 1);
}

uint32_t ImageWriter::add_task(TestTask task) {
  tasks_.push_back(std::move(task));
  return static_cast<uint32_t>(tasks_.size() - 1);
}

uint32_t ImageWriter::add_dummy(std::vector<uint32_t> deps) {
  tasks_.push_back({-1, CoreType::AIC, true, std::move(deps)});
  return static_cast<uint32_t>(tasks_.size() - 1);
}

uint32_t ImageWriter::add_fence(std::vector<uint32_t> deps) {
  const uint32_t t = add_dummy(std::move(deps));
  tasks_[t].scope_fence = true;
  return t;
}

std::vector<uint64_t> ImageWriter::build(uint64_t recorder) const {
  const auto n = static_cast<uint32_t>(tasks_.size());
  std::vector<std::vector<uint32_t>> consumers(n);
  for (uint32_t t = 0; t < n; ++t) {
    for (uint32_t dep : tasks_[t].deps) consumers[dep].push_back(t);
  }
  std::vector<common::TaskRecord> records(n);
  std::vector<uint32_t> fanout;
  std::vector<int64_t> args;
  std::vector<uint32_t> initial;
  std::vector<int64_t> task_ids;
  int64_t next_id = 0;
  for (uint32_t t = 0; t < n; ++t) {
    task_ids.push_back(tasks_[t].scope_fence ? common::kScopeFenceId : next_id++);
    const TestTask& task = tasks_[t];
    common::TaskRecord& r = records[t];
    std::memset(&r, 0, sizeof(r));
    r.func_id = task.func_id;
    r.core_type = static_cast<uint8_t>(task.core);
    r.flags = task.dummy ? common::kTaskFlagDummy : common::kTaskFlagNone;
    r.block_num = task.block_num;
    r.mix_aiv[0] = task.dummy ? -1 : task.mix_aiv[0];
    r.mix_aiv[1] = task.dummy ? -1 : task.mix_aiv[1];
    if (task.predicate_bytes != 0) {
      r.flags |= common::kTaskFlagPredicated;
      r.predicate_addr = task.predicate_addr;
      r.predicate_bytes = task.predicate_bytes;
    }
    r.fanin_count = static_cast<uint32_t>(task.deps.size());
    r.fanout_begin = static_cast<uint32_t>(fanout.size());
    r.fanout_count = static_cast<uint32_t>(consumers[t].size());
    fanout.insert(fanout.end(), consumers[t].begin(), consumers[t].end());
    // The argument block (common/kernel_block.h): the context, then two scalars.
    args.resize(args.size() + common::kContextWords);
    r.args_begin = args.size();
    r.arg_count = task.dummy ? 0 : 2;
    common::write_context(args.data() + r.args_begin, 0, r.arg_count, r.block_num, 0);
    if (!task.dummy) {
      args.push_back(static_cast<int64_t>(recorder));
      args.push_back(t);
    }
    if (task.deps.empty()) initial.push_back(t);
  }
  common::GraphImageHeader header{};
  header.magic = common::kGraphImageMagic;
  header.version = common::kGraphImageVersion;
  header.task_count = n;
  header.initial_ready_count = static_cast<uint32_t>(initial.size());
  std::vector<uint8_t> bytes(sizeof(header), 0);
  pad8(&bytes);
  header.tasks_offset = bytes.size();
  for (const auto& r : records) append(&bytes, r);
  pad8(&bytes);
  header.fanout_offset = bytes.size();
  header.fanout_count = fanout.size();
  for (uint32_t v : fanout) append(&bytes, v);
  pad8(&bytes);
  header.args_offset = bytes.size();
  header.args_count = args.size();
  for (int64_t v : args) append(&bytes, v);
  pad8(&bytes);
  header.initial_ready_offset = bytes.size();
  for (uint32_t v : initial) append(&bytes, v);
  pad8(&bytes);
  header.task_ids_offset = bytes.size();
  header.user_task_count = static_cast<uint32_t>(next_id);
  for (int64_t v : task_ids) append(&bytes, v);
  header.total_size = bytes.size();
  std::memcpy(bytes.data(), &header, sizeof(header));
  std::vector<uint64_t> words(bytes.size() / 8);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

std::vector<uint64_t> harness_kernel_table() {
  std::vector<uint64_t> table(kMaxFuncId, 0);
  table[kRecordFunc] = reinterpret_cast<uintptr_t>(&record_kernel);
  table[kBlockingFunc] = reinterpret_cast<uintptr_t>(&blocking_kernel);
  table[kThrowingFunc] = reinterpret_cast<uintptr_t>(&throwing_kernel);
  return table;
}

void release_blocking_kernels() {
  g_gate_open.store(true);
  g_gate_open.notify_all();
}
void close_blocking_gate() {
  g_gate_open.store(false);
}

FakeChip::FakeChip(uint32_t service_threads, bool serial, bool inline_kicks)
    : serial_(serial), inline_kicks_(serial || inline_kicks) {
  services_.ctx = this;
  services_.kick_core = &FakeChip::kick_thunk;
  services_.cycles = &FakeChip::cycles_thunk;
  services_.park_wake = platform::sim::sim_park_wake();
  if (!inline_kicks_) {
    for (uint32_t i = 0; i < service_threads; ++i) threads_.emplace_back([this] { serve_loop(); });
  }
}

FakeChip::~FakeChip() {
  stop();
}

int FakeChip::current_core() {
  return t_current_core;
}

void FakeChip::kick_thunk(void* ctx, uint32_t core) {
  static_cast<FakeChip*>(ctx)->kick(core);
}

uint64_t FakeChip::cycles_thunk(void*) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void FakeChip::service(uint32_t core) {
  const int previous = t_current_core;
  t_current_core = static_cast<int>(core);
  aicore::core_service(args_, core);
  t_current_core = previous;
}

void FakeChip::kick(uint32_t core) {
  kicks_.fetch_add(1);
  if (core >= common::kMaxCores) return;
  if (inline_kicks_) {
    // Only the core's owner kicks it, so its flags need no lock. A kick while the core is being
    // serviced further up this thread's stack re-runs it there instead of recursing.
    if (active_[core]) {
      kicked_again_[core] = true;
      return;
    }
    active_[core] = true;
    do {
      kicked_again_[core] = false;
      service(core);
    } while (kicked_again_[core]);
    active_[core] = false;
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (active_[core]) {
    kicked_again_[core] = true;
  } else if (!queued_[core]) {
    queued_[core] = true;
    queue_.push_back(core);
    cv_.notify_one();
  }
}

void FakeChip::serve_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    const uint32_t core = queue_.front();
    queue_.pop_front();
    queued_[core] = false;
    active_[core] = true;
    lock.unlock();
    service(core);
    lock.lock();
    active_[core] = false;
    if (kicked_again_[core]) {
      kicked_again_[core] = false;
      queued_[core] = true;
      queue_.push_back(core);
      cv_.notify_one();
    }
  }
}

void FakeChip::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

ChipRun::ChipRun(const ImageWriter& writer, const RunOptions& options) : options_(options) {
  const auto n = static_cast<uint32_t>(writer.tasks().size());
  recorder_ = std::make_unique<Recorder>(writer.tasks());
  image_ = writer.build(reinterpret_cast<uintptr_t>(recorder_.get()));
  kernel_table_ = harness_kernel_table();
  phases_ = std::make_unique<common::PhaseBuffer>();
  shared_bytes_ = common::shared_layout(n).total_bytes;
  shared_ = static_cast<uint8_t*>(::operator new(shared_bytes_, std::align_val_t(64)));
  // As the device runner does: only the head is zeroed; garbage in the rest proves the chip
  // formats its per-task arrays and queues itself.
  std::memset(shared_, 0xA5, shared_bytes_);
  std::memset(shared_, 0, common::kSharedClearedBytes);
  chip_ = std::make_unique<FakeChip>(options.service_threads, options.serial,
                                     options.kicks_run_kernels);
  args_ = std::make_unique<common::ChipLaunchArgs>();
  common::ChipLaunchArgs& a = *args_;
  a.variant = RuntimeVariant::HostBuildGraph;
  a.serial = options.serial;
  a.kicks_run_kernels = options.kicks_run_kernels;
  a.image_prevalidated = options.image_prevalidated;
  a.aicpu_threads = options.threads;
  a.clusters = options.clusters;
  a.device_clusters = options.device_clusters;
  a.image_addr = reinterpret_cast<uintptr_t>(image_.data());
  a.image_size = image_.size() * 8;
  a.shared_addr = reinterpret_cast<uintptr_t>(shared_);
  a.shared_size = shared_bytes_;
  a.kernel_table_addr = reinterpret_cast<uintptr_t>(kernel_table_.data());
  a.phase_buffer_addr = reinterpret_cast<uintptr_t>(phases_.get());
  a.services_addr = reinterpret_cast<uintptr_t>(&chip_->services());
  a.scheduler_timeout_ms = options.timeout_ms;
  a.clock_hz = 1000000000ull;
  chip_->set_launch_args(args_.get());
}

ChipRun::~ChipRun() {
  chip_->stop();
  chip_.reset();
  ::operator delete(shared_, std::align_val_t(64));
}

double ChipRun::run() {
  const auto start = std::chrono::steady_clock::now();
  const uint32_t n = options_.threads;
  if (n == 1) {
    aicpu_entry(args_.get(), 0, 1);
  } else {
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < n; ++i) {
      threads.emplace_back([this, i, n] { aicpu_entry(args_.get(), i, n); });
    }
    for (auto& t : threads) t.join();
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string check_execution(const ImageWriter& writer, const Recorder& recorder,
                            const RunOptions& options) {
  const auto& tasks = writer.tasks();
  const auto n = static_cast<uint32_t>(tasks.size());
  std::vector<uint32_t> position(n, UINT32_MAX);
  uint32_t real = 0;
  for (uint32_t t = 0; t < n; ++t) real += tasks[t].dummy ? 0 : 1;
  if (recorder.started() != real) {
    return "started " + std::to_string(recorder.started()) + " kernels, expected " +
           std::to_string(real);
  }
  for (uint32_t i = 0; i < real; ++i) position[recorder.order[i]] = i;
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t runs = recorder.runs[t].load();
    if (runs != (tasks[t].dummy ? 0u : 1u)) {
      return "task " + std::to_string(t) + " ran " + std::to_string(runs) + " times";
    }
    if (tasks[t].dummy) continue;
    const int core = recorder.core_of[t];
    const bool aic = tasks[t].core == CoreType::AIC;
    const int lo = aic ? 0 : static_cast<int>(options.device_clusters);
    const int hi = lo + static_cast<int>(options.clusters * (aic ? 1 : 2));
    if (options.cores_known && (core < lo || core >= hi)) {
      return "task " + std::to_string(t) + " ran on core " + std::to_string(core) +
             ", outside its shape's cores [" + std::to_string(lo) + ", " + std::to_string(hi) + ")";
    }
    // Every producer, looking through dummy tasks, started earlier.
    std::vector<uint32_t> stack(tasks[t].deps.begin(), tasks[t].deps.end());
    std::vector<bool> seen(n, false);
    while (!stack.empty()) {
      const uint32_t d = stack.back();
      stack.pop_back();
      if (seen[d]) continue;
      seen[d] = true;
      if (tasks[d].dummy) {
        stack.insert(stack.end(), tasks[d].deps.begin(), tasks[d].deps.end());
      } else if (position[d] >= position[t]) {
        return "task " + std::to_string(t) + " started before its producer " + std::to_string(d);
      }
    }
  }
  if (recorder.bad_block_context.load() != 0) return "a kernel saw block context != (0, 1)";
  if (recorder.early_starts.load() != 0) {
    return std::to_string(recorder.early_starts.load()) +
           " kernels started before a producer finished";
  }
  return "";
}

}  // namespace chiprt::scheduler::test
