// DiagCollector: the host side of a run's diagnostics (CallConfig::diagnostics). It owns the
// run's diagnostics region in device memory (common/diag_layout.h), drains the chip's streams on
// a thread of its own while the run goes on (so a long run's producers rarely find a full ring),
// decoding each record as it reads it into the rows of the run's model (DiagDecoder: no raw
// record is kept, so what a run holds is its model, a few hundred bytes per task), and at the end
// completes that model with the host's own stamps and the graph into a diagnostics::RunModel
// that it writes into a fresh run directory (diagnostics/artifacts.h).
//
// A run's steps call it in order: construct (prepare: allocates and formats the region; the
// launch arguments name it), note_host_graph (host_build_graph: the graph the run launches),
// start (just before the launch: anchors the chip clock, starts draining), finish_chip (at the
// start of collect, before a fault may abandon the device: stops draining and reads the rest),
// then write (success or failure, with the error). The region is released by release_region
// while the device is usable; after a fault the runner's abandonment forgets it. A background
// write (DiagnosticsConfig::background_write) splits write: reserve_directory and release_region
// on the run's thread, write_files later on the DiagWriteQueue's.
//
// Threading: the methods are called by the thread driving the run; the drain thread only reads
// the streams through the platform (whose memory calls are thread-safe) and decodes into its own
// rows, which finish_chip takes after joining it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/graph_export.h"
#include "chiprt/status.h"
#include "common/chip_launch.h"
#include "common/diag_layout.h"
#include "diagnostics/run_model.h"
#include "host/callable_registry.h"
#include "host/device_memory.h"
#include "host/diag_decoder.h"
#include "host/run_plan.h"
#include "platform/platform.h"

namespace chiprt::host {

// Records per stream (a power of two; CHIPRT_DIAG_STREAM_RECORDS overrides both for tests).
inline constexpr uint64_t kDiagCoreStreamRecords = 16384;    // 1 MiB per core
inline constexpr uint64_t kDiagThreadStreamRecords = 65536;  // 4 MiB per AICPU thread
// The args data arena (args dump levels 2-3) takes the budget, but at most this much and a
// quarter of the device memory: the rest of the budget is then not collected (a note says so).
inline constexpr uint64_t kDiagMaxArgsArenaBytes = 256ull << 20;

// The chip-side switches (common::DiagSwitch bits) a config turns on.
uint32_t diag_switches(const DiagnosticsConfig& config, RuntimeVariant variant);

class DiagCollector {
 public:
  using Clock = std::chrono::steady_clock;

  // Allocates the region (no region when no chip-side collector is on). Throws chiprt::Error.
  // `stream_records` 0: the defaults above.
  DiagCollector(DeviceMemory& memory, platform::Platform& platform, const RunPlan& plan,
                const platform::Geometry& geometry, const RegisteredCallable& callable,
                Clock::time_point t_entry, uint64_t stream_records);
  ~DiagCollector();
  DiagCollector(const DiagCollector&) = delete;
  DiagCollector& operator=(const DiagCollector&) = delete;

  uint64_t region_addr() const noexcept { return region_.addr; }

  // host_build_graph: the graph the run launches (its nodes and edges for deps.json).
  void note_host_graph(const GraphExport& graph);
  void host_span(std::string name, Clock::time_point begin, Clock::time_point end);
  // Just before the launch.
  void start();
  // At the start of collect (or when a launch fails): stops draining and reads what is left,
  // with the chip's result (stuck task, stall kind).
  void finish_chip(const common::ChipResult* result);
  // Ends the run's wall time and creates its run directory (once); returns its path. Throws
  // chiprt::Error when the directory cannot be created.
  std::string reserve_directory();
  // Builds the model and writes the files into the reserved directory (reserving it first when
  // needed). Touches no device memory (finish_chip read it all), so a background writer may call
  // it after release_region. Throws on a failed write.
  void write_files(const RunReport* report, const Error* error);
  // reserve_directory + write_files; returns the path. The error, when the run failed. Never
  // throws for a failed write when `error` is set (the run's own error wins): the write's failure
  // is then returned in *write_error.
  std::string write(const RunReport* report, const Error* error, std::string* write_error);
  // Frees the region (the device must be usable). Idempotent.
  void release_region() noexcept;
  uint64_t records_dropped() const noexcept { return dropped_; }
  // Bytes the collector holds for the records it has read (DiagDecoder::retained_bytes plus the
  // args data read back). Read it while no drain runs (before start, after finish_chip).
  uint64_t retained_bytes() const noexcept;

 private:
  struct StreamCursor {
    uint64_t head_addr = 0;
    uint64_t tail_addr = 0;
    uint64_t dropped_addr = 0;
    uint64_t records_addr = 0;
    uint64_t capacity = 0;
    uint64_t tail = 0;
  };
  void drain_loop();
  // Reads the args data arena's used part (finish_chip).
  void read_args_data();
  void add_args_notes(diagnostics::RunModel& model) const;
  // Reads every stream's new records once; true when it read any.
  bool drain_once();
  diagnostics::RunModel build_model(const RunReport* report, const Error* error);
  // build_model's steps.
  diagnostics::RunModel describe_run() const;
  void take_host_graph(diagnostics::RunModel& model);
  void add_notes(diagnostics::RunModel& model, const RunReport* report) const;
  diagnostics::RunError run_error(const Error& error) const;

  DeviceMemory& memory_;
  platform::Platform& platform_;
  DiagnosticsConfig config_;
  RunPlan plan_;
  platform::Geometry geometry_;
  int32_t callable_id_ = -1;
  std::vector<diagnostics::KernelName> kernels_;
  Clock::time_point t_entry_;
  bool isolated_ = false;
  uint32_t switches_ = 0;
  DeviceBuffer region_{};
  uint64_t header_addr_ = 0;
  uint64_t arena_addr_ = 0;  // the args data arena (0: none)
  uint64_t arena_bytes_ = 0;
  uint64_t arena_refused_ = 0;            // bytes of views that did not fit (from the header)
  std::vector<unsigned char> args_data_;  // the arena's used part, read at finish_chip
  std::vector<StreamCursor> streams_;
  std::vector<common::DiagRecord> chunk_;  // the records of one read, decoded at once
  DiagDecoder decoder_;                    // what the records said, as the model's rows

  // host_build_graph: the launched graph's nodes and edges (note_host_graph).
  bool have_host_graph_ = false;
  std::vector<diagnostics::TaskNode> host_nodes_;
  std::vector<diagnostics::Edge> host_edges_;
  std::vector<diagnostics::HostSpan> host_spans_;
  // Anchors: (host ns from t_entry, chip cycles) at start and at finish.
  std::vector<std::pair<uint64_t, uint64_t>> anchors_;
  uint64_t wall_ns_ = 0;             // set by reserve_directory
  diagnostics::HostLoad host_load_;  // read at start and at finish_chip
  std::string dir_;                  // the reserved run directory
  uint32_t run_number_ = 0;
  uint64_t dropped_ = 0;
  std::string counters_reason_;
  std::string drain_error_;
  // From the chip's result: the stuck task and core, the SchedulerTimeout sub-class.
  int64_t stuck_task_ = -1;
  int32_t stuck_core_ = -1;
  uint32_t stall_kind_ = 0;

  std::thread drainer_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  bool started_ = false;
  bool finished_ = false;
};

}  // namespace chiprt::host
