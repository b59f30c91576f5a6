// Pipelined runs under contention, on both variants (run under ThreadSanitizer in CI): three
// threads submit runs into one Worker, each run adding one to its thread's buffer or (chosen by
// the seed) throwing in its kernel, after which the thread rewrites its buffer from the host; a
// fourth thread reads the buffers and calls run() on a buffer of its own meanwhile.
// Invariants: a failed run cancels only runs naming its memory, so whatever the interleaving
// every handle ends exactly as its kernel decides (success, or KernelFault for a throwing one),
// never Cancelled, and run() always succeeds; each buffer ends equal to the number of its runs
// (no run lost, none executed twice); every read sees a value no greater than that; sequences
// are unique; the Worker closes cleanly.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "stress_seeds.h"

namespace chiprt::stress {
namespace {

constexpr int32_t kAdd = 0;
constexpr int32_t kThrow = 1;
constexpr uint64_t kN = 16;
constexpr int kSubmitters = 3;

void add_kernel(int64_t* args) {
  float* data = kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < kN; ++i) data[i] += 1.0f;
}
void throw_kernel(int64_t*) {
  throw std::runtime_error("seeded failure");
}
void one_task(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.inout(args.tensor(0));
  orch.submit(static_cast<int32_t>(args.scalar_bits(0)), CoreType::AIV, task);
}

TaskArgs args_for(const DeviceBuffer& buffer, int32_t kernel) {
  TaskArgs args;
  args.inout(Tensor::make(buffer, {kN}, DataType::F32)).scalar(static_cast<uint64_t>(kernel));
  return args;
}

class PipelineStress : public ::testing::TestWithParam<RuntimeVariant> {};

TEST_P(PipelineStress, ConcurrentSubmittersLoseNoRunAndRunNoneTwice) {
  const int runs_per_thread = std::getenv("CHIPRT_STRESS_SEEDS") != nullptr ? 60 : 200;
  for (uint64_t seed : stress_seeds(2)) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    WorkerOptions options;
    options.runtime = GetParam();
    options.sim.clusters = 2;
    options.sim.host_threads = 2;
    Worker worker;
    worker.init(options);
    worker.register_callable(
        0, CallableBuilder()
               .orchestration_function(&one_task, ArgSignature{})
               .kernel_function(kAdd, CoreType::AIV, &add_kernel, ArgSignature{})
               .kernel_function(kThrow, CoreType::AIV, &throw_kernel, ArgSignature{})
               .build());
    std::vector<DeviceBuffer> buffers;
    for (int t = 0; t <= kSubmitters; ++t) {  // the last one is the run() thread's
      buffers.push_back(worker.malloc(kN * sizeof(float)));
      worker.memset(buffers.back(), 0, kN * sizeof(float));
    }
    std::atomic<int> succeeded[kSubmitters + 1] = {};
    std::atomic<bool> submitting{true};
    std::mutex sequences_mutex;
    std::set<uint64_t> sequences;
    std::atomic<int> bad_outcomes{0};
    std::string first_bad;  // guarded by sequences_mutex
    auto bad = [&](const std::string& what) {
      std::lock_guard lock(sequences_mutex);
      if (bad_outcomes.fetch_add(1) == 0) first_bad = what;
    };

    // Each submitter waits for every handle and checks its outcome.
    auto checked_submitter = [&](int t) {
      std::mt19937_64 random(seed * 31 + static_cast<uint64_t>(t));
      for (int i = 0; i < runs_per_thread; ++i) {
        const bool fails = random() % 7 == 0;
        RunHandle handle = worker.submit(0, args_for(buffers[t], fails ? kThrow : kAdd));
        bool unique = false;
        {
          std::lock_guard lock(sequences_mutex);
          unique = sequences.insert(handle.sequence()).second;
        }
        if (!unique) bad("sequence " + std::to_string(handle.sequence()) + " twice");
        try {
          handle.wait();
          if (fails) bad("a throwing kernel's run succeeded");
          succeeded[t].fetch_add(1);
        } catch (const Error& e) {
          if (!fails || e.code() != StatusCode::KernelFault) bad(e.what());
          // The failed run poisoned the buffer: rewritten (with what it holds), runs use it again.
          const std::vector<float> values(kN, static_cast<float>(succeeded[t].load()));
          worker.copy_to(buffers[t], values.data(), kN * sizeof(float));
        }
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < kSubmitters; ++t) threads.emplace_back(checked_submitter, t);
    std::thread other([&] {
      std::vector<float> values(kN);
      int reads = 0;
      while (submitting.load(std::memory_order_acquire) || reads < 5) {
        for (int t = 0; t < kSubmitters; ++t) {
          worker.copy_from(values.data(), buffers[t], kN * sizeof(float));
          if (values[0] > static_cast<float>(runs_per_thread)) bad("a read beyond the runs");
        }
        try {
          worker.run(0, args_for(buffers[kSubmitters], kAdd));
          succeeded[kSubmitters].fetch_add(1);
        } catch (const Error& e) {
          // Queued behind a failing run it shares no memory with: never cancelled.
          bad(e.what());
        }
        ++reads;
      }
    });
    for (std::thread& thread : threads) thread.join();
    submitting.store(false, std::memory_order_release);
    other.join();

    EXPECT_EQ(bad_outcomes.load(), 0) << "first: " << first_bad;
    for (int t = 0; t <= kSubmitters; ++t) {
      std::vector<float> values(kN);
      worker.copy_from(values.data(), buffers[t], kN * sizeof(float));
      EXPECT_EQ(values, std::vector<float>(kN, static_cast<float>(succeeded[t].load())))
          << "buffer " << t;
    }
    EXPECT_EQ(worker.runs_in_flight(), 0u);
    worker.close();
  }
}

INSTANTIATE_TEST_SUITE_P(BothVariants, PipelineStress,
                         ::testing::Values(RuntimeVariant::HostBuildGraph,
                                           RuntimeVariant::TensormapRingbuffer),
                         [](const ::testing::TestParamInfo<RuntimeVariant>& info) {
                           return std::string(runtime_variant_name(info.param));
                         });

}  // namespace
}  // namespace chiprt::stress
