// How `chiprt bench` configures chiprt's simulated chip for a worker-thread count, shared by every
// chiprt runner so that each column runs on the same shape of chip.
//
// Stateless; callable from any thread.
#pragma once

#include <algorithm>
#include <string>

#include "chiprt/worker.h"

namespace chiprt::perf {

// `threads` worker threads. When the kernels run on the AICPU threads (SimCoreExecution resolved
// on this host, see chiprt/worker.h), the chip gets `threads` AICPU threads (at least the 2 a
// threaded run needs, at most 8) and no executor threads, so it uses exactly as many host threads
// as the peers; otherwise it keeps its default AICPU threads and runs kernels on `threads`
// executor threads. `isolation`: where the chip lives (SimOptions::isolation; Default lets
// CHIPRT_SIM_ISOLATION decide).
inline WorkerOptions bench_worker_options(unsigned threads,
                                          SimIsolation isolation = SimIsolation::Default) {
  WorkerOptions options;
  options.sim.host_threads = threads;
  options.sim.isolation = isolation;
  if (resolve_sim_core_execution(options.sim) == SimCoreExecution::Aicpu) {
    options.sim.aicpu_threads = std::clamp(threads, 2u, 8u);
  }
  return options;
}

// The host threads that run kernels in a threaded chiprt column of bench_worker_options(threads):
// every AICPU thread when kernels run on them (the ring orchestrator owns cores too), else the
// executor threads. The real-kernel rows' efficiency divides by it. At least `threads`: a chip
// has at least 2 AICPU threads, so `--threads 1` still runs kernels on 2 of them.
inline unsigned chiprt_kernel_threads(unsigned threads) {
  const WorkerOptions options = bench_worker_options(threads);
  return resolve_sim_core_execution(options.sim) == SimCoreExecution::Aicpu
             ? options.sim.aicpu_threads
             : options.sim.host_threads;
}

// How bench_worker_options(threads) uses the host's threads, for the table's header.
inline std::string describe_chiprt_threads(unsigned threads) {
  const WorkerOptions options = bench_worker_options(threads);
  const std::string aicpu = std::to_string(options.sim.aicpu_threads);
  if (resolve_sim_core_execution(options.sim) == SimCoreExecution::Aicpu) {
    return "chiprt threaded: " + aicpu +
           " AICPU threads running the kernels of their own cores (tensormap_ringbuffer: thread 0 "
           "orchestrates, then schedules its cores), no executor threads";
  }
  return "chiprt threaded: " + aicpu + " AICPU threads + " + std::to_string(threads) +
         " executor threads running the kernels";
}

// Where a chip of bench_worker_options(threads, isolation) lives, for the table's header:
// "in process" or "in an isolated device process".
inline std::string describe_sim_isolation(SimIsolation isolation) {
  return resolve_sim_isolation(bench_worker_options(0, isolation).sim) == SimIsolation::Process
             ? "in an isolated device process"
             : "in process";
}

}  // namespace chiprt::perf
