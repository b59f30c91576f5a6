// Runners of the `chiprt bench` suite: one per table column. A runner executes a Workload's graph
// with empty task bodies on one runtime (a chiprt variant or a peer runtime) and reports the wall
// time of building and executing it.
//
// Runners are created by make_runners() for a fixed worker-thread count and used from one thread;
// a peer runtime is initialised when its runner is created and shut down when it is destroyed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "task_dag.h"
#include "workloads.h"

namespace chiprt {
// chiprt/sim_options.h; declared here because the LLVM libomp peer, built without chiprt's
// headers, includes this file.
enum class SimIsolation : uint8_t;
}  // namespace chiprt

namespace chiprt::perf {

struct RunResult {
  uint64_t tasks = 0;    // tasks the runtime executed
  uint64_t wall_ns = 0;  // submission of the first task to completion of the last
};

class Runner {
 public:
  virtual ~Runner() = default;
  // Builds and runs `workload` once; throws std::exception on failure.
  virtual RunResult run(const Workload& workload) = 0;
  // Called once per workload before its timed repetitions (e.g. to record a graph for replay).
  virtual void prepare(const Workload& workload) { run(workload); }
};

// A peer runner that also executes caller-given task DAGs (task_dag.h): its random DAG row and
// the real-kernel rows (kernel_graph.h) go through run_dag. The LLVM libomp peer, which runs in a
// child process, is not one.
class DagRunner : public Runner {
 public:
  // Builds `dag` in the runtime's own form (its way of expressing dependencies) and runs it with
  // the runner's worker threads; returns the wall time from the start of building to the
  // completion of the last task. Throws std::exception on failure.
  virtual uint64_t run_dag(const TaskDag& dag) = 0;
};

// A runner that runs a `chiprt bench --task-bench` graph (task_bench_patterns.h) where its peer
// lives: the LLVM libomp peer, whose OpenMP code runs in a child process, builds the graph's
// TaskDag there and runs it with DagRunner::run_dag, every task spinning `iterations`
// (task_bench_kernel.h). Returns the wall time as run_dag measures it; throws std::exception.
class TaskBenchGraphRunner {
 public:
  virtual ~TaskBenchGraphRunner() = default;
  virtual uint64_t run_task_bench(uint8_t pattern, uint64_t width, uint64_t height,
                                  uint64_t iterations) = 0;
};

// One column of the table. A chiprt column holds its runner; a peer column holds the factory
// that starts it (its worker threads) only while its own column is measured, so idle peer
// threads never compete with the other columns for the host's cores. Neither is set when the
// runtime is unavailable; `note` says why.
struct RunnerColumn {
  std::string id;     // stable JSON key: "host_build_graph", "openmp", ...
  std::string label;  // table heading
  bool chiprt = false;
  std::string description;
  std::unique_ptr<Runner> runner;
  std::unique_ptr<Runner> (*start)(unsigned threads) = nullptr;
  std::string note;
  // Set for an available peer that does not run the real-kernel rows: why (their cells say so).
  std::string kernel_rows_note;
  bool available() const noexcept { return runner != nullptr || start != nullptr; }
};

struct RunnerOptions {
  unsigned threads = 1;      // worker threads of every runtime (chiprt: SimOptions::host_threads)
  uint64_t max_tasks = 1;    // largest workload that will be run (sizes chiprt's buffer)
  bool peers = true;         // false: the peer columns are listed but not created
  bool chiprt = true;        // false: no chiprt column (callers that make their own chiprt runners)
  SimIsolation isolation{};  // where the chiprt columns' chip lives (value-initialised: Default)
};

// The chiprt columns first (host_build_graph threaded / serial / replay, tensormap_ringbuffer
// threaded / serial), then the peers in a fixed order.
std::vector<RunnerColumn> make_runners(const RunnerOptions& options);

// The ids of make_runners()'s columns, in order, without creating any runner.
std::vector<std::string> column_ids();

// The LLVM libomp column's kernel_rows_note.
inline constexpr const char* kChildProcessKernelNote =
    "real-kernel rows run in process (the kernels and buffers belong to the bench's Worker); the "
    "libomp peer runs in a child process";

// Peer factories, defined only when the peer was found at configure time (see CMakeLists.txt).
std::unique_ptr<Runner> make_openmp_runner(unsigned threads);
std::unique_ptr<Runner> make_tbb_runner(unsigned threads);
std::unique_ptr<Runner> make_starpu_runner(unsigned threads);

// LLVM libomp runs the OpenMP peer in a child process, the chiprt_peer_libomp executable
// (peer_libomp.cpp; libomp and libgomp cannot share a process). Its path: $CHIPRT_PEER_LIBOMP when
// set, else next to the running binary, else where the build tree puts it. Returns "" and sets
// `why` when there is none.
std::unique_ptr<Runner> make_llvm_openmp_runner(unsigned threads);
std::string locate_llvm_openmp_peer(std::string& why);

// Chiprt runners sharing one simulated chip (defined in chiprt_runner.cpp).
class ChiprtDevice;
// `isolation`: SimOptions::isolation of its Worker (an isolated chip runs in a device process
// forked at construction: a Workload an in-process orchestration function reads must exist by
// then).
std::shared_ptr<ChiprtDevice> make_chiprt_device(unsigned threads, uint64_t max_tasks,
                                                 SimIsolation isolation = SimIsolation{});
enum class ChiprtMode : uint8_t {
  HostBuildGraph,
  HostBuildGraphSerial,
  HostBuildGraphReplay,
  Ringbuffer,
  RingbufferSerial
};
std::unique_ptr<Runner> make_chiprt_runner(std::shared_ptr<ChiprtDevice> device, ChiprtMode mode);

// The chiprt columns of make_runners(), in order, for callers that give each cell its own device.
struct ChiprtColumnSpec {
  const char* id;
  const char* label;
  const char* description;
  ChiprtMode mode;
};
std::span<const ChiprtColumnSpec> chiprt_columns() noexcept;

}  // namespace chiprt::perf
