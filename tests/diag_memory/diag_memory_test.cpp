// What diagnostics hold in host memory per task: a run with every switch on may hold, at its
// peak, at most kBytesPerTask bytes of heap per task more than the same run with diagnostics off
// (what the host collector keeps of the chip's records, the run model, the analysis and the
// writers of the run directory, report.html included). A run holding the raw records beside the
// model, or a writer building a per-task document, goes far beyond it.
//
// The heap is counted by this binary's replacement of the global operator new and delete (live
// bytes and their peak; malloc_usable_size of each block), which is why this test is a binary of
// its own. The counts are of allocations, not of time: the test is deterministic in what it
// checks, whatever the machine's load.
#include <gtest/gtest.h>

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "diagnostics/artifacts.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "unit/host/host_test_support.h"

namespace {

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void* counted_alloc(std::size_t bytes, std::size_t align) {
  if (bytes == 0) bytes = 1;
  void* p = nullptr;
  if (align > alignof(std::max_align_t)) {
    p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
  } else {
    p = std::malloc(bytes);
  }
  if (p == nullptr) return nullptr;
  const auto size = static_cast<int64_t>(malloc_usable_size(p));
  const int64_t live = g_live.fetch_add(size, std::memory_order_relaxed) + size;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return p;
}
void* counted_new(std::size_t bytes, std::size_t align) {
  void* p = counted_alloc(bytes, align);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void counted_free(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) {
  return counted_new(n, 0);
}
void* operator new[](std::size_t n) {
  return counted_new(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted_new(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted_new(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return counted_alloc(n, 0);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return counted_alloc(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept {
  counted_free(p);
}
void operator delete[](void* p) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  counted_free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  counted_free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  counted_free(p);
}

namespace chiprt::host {
namespace {

namespace fs = std::filesystem;

// The bound for a million-task run, checked as the growth from a small run to a larger one: per
// task, what diagnostics hold does not depend on the run's length.
constexpr int64_t kBytesPerTask = 1024;
constexpr uint64_t kSmallRun = 10000;
constexpr uint64_t kLargeRun = 30000;
constexpr uint64_t kChains = 16;  // task i updates slot i % kChains: one edge per task
constexpr int32_t kTouch = 0;

void touch_kernel(int64_t*) {}

void chains(Orchestration& orch, const TaskArgs& args) {
  const Tensor& slots = args.tensor(0);
  for (uint64_t i = 0; i < args.scalar_bits(0); ++i) {
    TaskArgs task;
    task.inout(slots.view({1}, {i % kChains}));
    orch.submit(kTouch, CoreType::AIV, task);
  }
}

struct Variant {
  const char* name;
  RuntimeVariant runtime;
};

class DiagnosticsMemory : public ::testing::TestWithParam<Variant> {
 protected:
  void SetUp() override {
    saved_level_ = log_level();
    set_log_level(LogLevel::Off);
    dir_ = fs::temp_directory_path() /
           ("chiprt_diag_memory_" + std::to_string(::getpid()) + "_" + GetParam().name);
    fs::remove_all(dir_);
    runner_ = std::make_unique<DeviceRunner>(
        test::make_sim(/*clusters=*/2, /*serial=*/false, 256ull << 20, /*host_threads=*/2));
    runner_->attach(0);
    runner_->ensure_initialized();
    slots_ = runner_->allocate(kChains * sizeof(float));
    runner_->register_callable(
        0, CallableBuilder()
               .orchestration_function(&chains, ArgSignature{})
               .kernel_function(kTouch, CoreType::AIV, &touch_kernel, ArgSignature{})
               .build());
  }
  void TearDown() override {
    runner_.reset();
    set_log_level(saved_level_);
    fs::remove_all(dir_);
  }

  CallConfig config(bool diagnostics) const {
    CallConfig config = test::small_call_config(kLargeRun);
    config.runtime = GetParam().runtime;
    if (diagnostics) config.diagnostics = DiagnosticsConfig::all(dir_.string());
    return config;
  }
  // The peak heap of a run of `tasks` tasks above what was live when it began.
  int64_t peak_of_run(uint64_t tasks, bool diagnostics, RunReport* report) {
    TaskArgs args;
    args.inout(Tensor::make(slots_, {kChains}, DataType::F32)).scalar(tasks);
    const int64_t before = g_live.load(std::memory_order_relaxed);
    g_peak.store(before, std::memory_order_relaxed);
    *report = runner_->run(0, args, config(diagnostics));
    return g_peak.load(std::memory_order_relaxed) - before;
  }

  std::unique_ptr<DeviceRunner> runner_;
  DeviceBuffer slots_;
  fs::path dir_;
  LogLevel saved_level_ = LogLevel::Warn;
};

TEST_P(DiagnosticsMemory, AllSwitchesHoldAtMostAKibibytePerTask) {
  RunReport report;
  (void)peak_of_run(kSmallRun, false, &report);  // warm-up: the runner's first-run allocations
  // Per task: the growth of the peak from the small run to the large one, both with every switch
  // on (the region's read buffer and the writers' buffers are the same at every size; the run's
  // own growth without diagnostics, printed beside it, is included, so the bound is
  // conservative).
  int64_t on[2] = {};
  const uint64_t sizes[2] = {kSmallRun, kLargeRun};
  for (int k = 0; k < 2; ++k) {
    const int64_t off = peak_of_run(sizes[k], false, &report);
    on[k] = peak_of_run(sizes[k], true, &report);
    ASSERT_FALSE(report.diagnostics_dir.empty());
    const diagnostics::RunModel model = diagnostics::read_run_directory(report.diagnostics_dir);
    ASSERT_EQ(model.nodes.size(), sizes[k]);  // the run was the one measured
    ASSERT_EQ(model.blocks.size(), sizes[k]);
    std::printf(
        "[ %s ] %llu tasks: peak heap %lld B with diagnostics, %lld B without; the "
        "model: %zu edges, %zu scheduler events, %zu thread spans, %zu counters, %zu "
        "args\n",
        GetParam().name, static_cast<unsigned long long>(sizes[k]), static_cast<long long>(on[k]),
        static_cast<long long>(off), model.edges.size(), model.scheduler_events.size(),
        model.thread_spans.size(), model.counters.size(), model.args.size());
  }
  const int64_t per_task = (on[1] - on[0]) / static_cast<int64_t>(kLargeRun - kSmallRun);
  std::printf("[ %s ] a run with diagnostics holds %lld bytes of heap per task at its peak\n",
              GetParam().name, static_cast<long long>(per_task));
  EXPECT_LE(per_task, kBytesPerTask);
}

const Variant kVariants[] = {
    {"hbg", RuntimeVariant::HostBuildGraph},
    {"ring", RuntimeVariant::TensormapRingbuffer},
};
INSTANTIATE_TEST_SUITE_P(Variants, DiagnosticsMemory, ::testing::ValuesIn(kVariants),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace chiprt::host
