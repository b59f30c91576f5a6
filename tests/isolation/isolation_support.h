// What the isolation suite (tests/isolation/) shares: an isolated Worker (SimIsolation::Process)
// with the suite's callable, the scenarios its orchestration function runs (a normal run, a
// kernel that faults, a ring orchestration that faults, a kernel that never returns), the check
// that a Worker works again after reset(), and readings of this process's resources (fds,
// threads, RSS, child processes, CPU time).
//
// Everything here runs on the test's thread. The orchestration function and kernels run on the
// device (tensormap_ringbuffer orchestration) or on the host (host_build_graph orchestration);
// they read nothing but their arguments, and the bus page (mapped before any device process is
// forked, so every device process inherits it at the same address).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/task_args.h"
#include "chiprt/types.h"
#include "chiprt/worker.h"
#include "faults.h"
#include "normal_run.h"

namespace chiprt::isolation_test {

// Func ids of the suite's callable.
constexpr int32_t kAdd = kAddFunc;  // AIV: in a, out b, scalar f: b = a + f (kN floats)
constexpr int32_t kFaultAic = 1;    // AIC fault_kernel (faults.h)
constexpr int32_t kFaultAiv = 2;    // AIV fault_kernel
constexpr int32_t kNoopAic = 3;     // AIC: nothing (the other parts of a MIX task)
constexpr int32_t kNoopAiv = 4;     // AIV: nothing
constexpr int32_t kHang = 5;        // AIV: a loop that never returns
constexpr int32_t kFaultSo = 6;     // AIV fault kernel from the chip object (callable kSoCallable)

constexpr int32_t kCallable = 0;    // in-process function kernels only
constexpr int32_t kSoCallable = 1;  // the same, plus kFaultSo from chip_objects/fault_kernel.cpp
// The chip objects' targets (each file is <chip object dir>/<target>.so).
inline constexpr char kFaultObjectTarget[] = "chiprt_isolation_fault_kernel";
// The normal run's orchestration (normal_run.h) as a chip object: tensors x (In), y
// (OutputExisting).
inline constexpr char kOrchestrationObjectTarget[] = "chiprt_isolation_orchestration";

constexpr uint64_t kN = 64;  // floats of x and y
constexpr uint64_t kBytes = kN * sizeof(float);

// What the crashing task is.
enum class TaskKind : int64_t {
  Aic,   // an AIC task (kFaultAic)
  Aiv,   // an AIV task (kFaultAiv)
  Mix,   // a MIX task: AIC noop, AIV0 faults, AIV1 noop
  Spmd,  // an AIV task of kSpmdBlocks blocks; block kSpmdFaultBlock faults
  So,    // an AIV task running the chip object's kernel (kFaultSo)
};
constexpr uint32_t kSpmdBlocks = 4;
constexpr uint32_t kSpmdFaultBlock = 2;

enum class Scenario : int64_t {
  Normal,              // y = (x + 1) + 2, in tasks 0 and 1
  KernelFault,         // task 0 as Normal, then task 1 (TaskKind) faults
  OrchestrationFault,  // task 0 as Normal, then the orchestration function itself faults
  Hang,                // task 0 as Normal, then task 1 runs kHang
};
// The task id the faulting / hanging task gets (the second submitted).
constexpr int64_t kFaultingTask = 1;

// The kAdd kernel (an in-process function).
void add_kernel(int64_t* args);

// A page mapped beyond the end of its (one page long) memfd: touching it raises SIGBUS. Mapped
// once, on first use, in this process; device processes forked later inherit the mapping.
uint64_t bus_address();

// An isolated Worker's options: SimIsolation::Process, `clusters` clusters, 3 AICPU threads (a
// threaded tensormap_ringbuffer run needs 2), small device memory.
WorkerOptions isolated_options(uint32_t clusters = 2);
// A run's config on `variant`, threaded or serial.
CallConfig run_config(RuntimeVariant variant, bool serial);
// Registers kCallable (and kSoCallable when `with_object`) on `worker`.
void register_suite_callables(Worker& worker, bool with_object = false);

// The run arguments of `scenario`: x (In), y (OutputExisting) and the scenario's scalars.
TaskArgs scenario_args(DeviceBuffer x, DeviceBuffer y, Scenario scenario,
                       TaskKind kind = TaskKind::Aiv, Fault fault = Fault::None);

// x[i] = i.
std::vector<float> x_values();

// After reset(): buffers allocated now are intact, a normal run gives y = x + 3 on `variant`
// (threaded), and `stale` (a buffer of the device before the reset) is refused with
// InvalidDevicePointer naming the reset. Reports failures through gtest.
void expect_works_after_reset(Worker& worker, DeviceBuffer stale, RuntimeVariant variant);
// The part of it after the stale buffer: on fresh buffers a normal run gives y = x + 3 and leaves
// x and a buffer it does not name intact.
void expect_normal_run(Worker& worker, RuntimeVariant variant);

// This process's resources, from /proc/self.
struct ProcessResources {
  uint64_t fds = 0;
  uint64_t threads = 0;
  uint64_t rss_bytes = 0;
  uint64_t live_children = 0;    // child processes that have not exited
  uint64_t zombie_children = 0;  // children that exited and were not reaped
  std::string describe() const;
};
ProcessResources process_resources();
// True when a child exited and was not reaped (waitid WNOWAIT: does not reap it).
bool has_unreaped_child();

// CPU time this process (all its threads) used so far, in ns.
uint64_t process_cpu_ns();

}  // namespace chiprt::isolation_test
