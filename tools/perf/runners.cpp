#include "runners.h"

#include <utility>

namespace chiprt::perf {

namespace {

using PeerFactory = std::unique_ptr<Runner> (*)(unsigned);

struct PeerSpec {
  const char* id;
  const char* label;
  const char* description;
  PeerFactory factory;  // null: not found at configure time
  const char* missing;  // why it is null
  // Set for a peer that was built but may be absent at run time (a separate executable): returns
  // why it cannot run now, or "".
  std::string (*unavailable)() = nullptr;
  // Set for a peer that does not run the real-kernel rows: why.
  const char* kernel_rows_note = nullptr;
};

#ifdef CHIPRT_PEER_LLVM_OPENMP
std::string llvm_openmp_unavailable() {
  std::string why;
  locate_llvm_openmp_peer(why);
  return why;
}
#endif

constexpr const char* kInstallHint =
    "; run scripts/install-peers.sh and reconfigure (CHIPRT_BENCH_PEERS=ON, no sanitizer)";

const ChiprtColumnSpec kChiprtColumns[] = {
    {"host_build_graph", "hbg", "chiprt host_build_graph, threaded", ChiprtMode::HostBuildGraph},
    {"host_build_graph_serial", "hbg/ser", "chiprt host_build_graph, serial mode",
     ChiprtMode::HostBuildGraphSerial},
    {"host_build_graph_replay", "hbg/replay",
     "chiprt host_build_graph, threaded, replaying the cached graph",
     ChiprtMode::HostBuildGraphReplay},
    {"tensormap_ringbuffer", "ring", "chiprt tensormap_ringbuffer, threaded",
     ChiprtMode::Ringbuffer},
    {"tensormap_ringbuffer_serial", "ring/ser", "chiprt tensormap_ringbuffer, serial mode",
     ChiprtMode::RingbufferSerial},
};

const PeerSpec kPeers[] = {
#ifdef CHIPRT_PEER_OPENMP
    {"openmp", "omp", "OpenMP tasks with depend clauses (" CHIPRT_PEER_OPENMP ")",
     make_openmp_runner, ""},
#else
    {"openmp", "omp", "OpenMP tasks with depend clauses", nullptr, "OpenMP not found"},
#endif
#ifdef CHIPRT_PEER_LLVM_OPENMP
    {"llvm_openmp", "omp/llvm",
     "OpenMP tasks with depend clauses, the omp column's code in a child process "
     "(" CHIPRT_PEER_LLVM_OPENMP ")",
     make_llvm_openmp_runner, "", llvm_openmp_unavailable, kChildProcessKernelNote},
#else
    {"llvm_openmp", "omp/llvm",
     "OpenMP tasks with depend clauses, the omp column's code in a child process (LLVM libomp)",
     nullptr, "clang++ with LLVM libomp not found"},
#endif
#ifdef CHIPRT_PEER_TBB
    {"tbb_flow_graph", "tbb", "oneTBB flow graph, explicit edges (" CHIPRT_PEER_TBB ")",
     make_tbb_runner, ""},
#else
    {"tbb_flow_graph", "tbb", "oneTBB flow graph, explicit edges", nullptr, "oneTBB not found"},
#endif
#ifdef CHIPRT_PEER_STARPU
    {"starpu", "starpu", "StarPU, implicit dependencies on data handles (" CHIPRT_PEER_STARPU ")",
     make_starpu_runner, ""},
#else
    {"starpu", "starpu", "StarPU, implicit dependencies on data handles", nullptr,
     "StarPU not found"},
#endif
};

}  // namespace

std::span<const ChiprtColumnSpec> chiprt_columns() noexcept {
  return kChiprtColumns;
}

std::vector<std::string> column_ids() {
  std::vector<std::string> ids;
  for (const ChiprtColumnSpec& c : kChiprtColumns) ids.emplace_back(c.id);
  for (const PeerSpec& p : kPeers) ids.emplace_back(p.id);
  return ids;
}

std::vector<RunnerColumn> make_runners(const RunnerOptions& options) {
  std::vector<RunnerColumn> columns;
  // The chiprt columns share one chip, made only when they are wanted.
  const std::shared_ptr<ChiprtDevice> device =
      options.chiprt ? make_chiprt_device(options.threads, options.max_tasks, options.isolation)
                     : nullptr;
  const std::span<const ChiprtColumnSpec> chiprt =
      options.chiprt ? chiprt_columns() : std::span<const ChiprtColumnSpec>{};
  for (const ChiprtColumnSpec& c : chiprt) {
    RunnerColumn column;
    column.id = c.id;
    column.label = c.label;
    column.chiprt = true;
    column.description = c.description;
    column.runner = make_chiprt_runner(device, c.mode);
    columns.push_back(std::move(column));
  }

  for (const PeerSpec& p : kPeers) {
    RunnerColumn column;
    column.id = p.id;
    column.label = p.label;
    column.description = p.description;
    if (p.kernel_rows_note != nullptr) column.kernel_rows_note = p.kernel_rows_note;
    if (p.factory == nullptr) {
      column.note = std::string(p.missing) + " at configure time" + kInstallHint;
    } else if (!options.peers) {
      column.note = "skipped (--no-peers)";
    } else if (std::string why = p.unavailable != nullptr ? p.unavailable() : ""; !why.empty()) {
      column.note = std::move(why);
    } else {
      column.start = p.factory;
    }
    columns.push_back(std::move(column));
  }
  return columns;
}

}  // namespace chiprt::perf
