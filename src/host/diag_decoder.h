// DiagDecoder: turns the records the host collector drains from the chip's diagnostics streams
// (common/diag_layout.h) into the rows of a diagnostics::RunModel as they arrive, so that no raw
// record is kept: a million-task run holds its model's rows (a few tens of bytes per record it
// uses), not its 64-byte records, and records no file needs (Ready) cost nothing. At the end,
// build() moves the rows into the model and matches what needs the whole run (a block's dispatch
// and completion, the nodes, the ready times) by sorting, not through per-task maps.
//
// retained_bytes() counts the bytes the decoder holds (its rows and their heap parts): the
// collector's memory per task, which a test bounds.
//
// Lifetime and threading: owned by one DiagCollector; decode() is called by the drain thread
// while the run goes on and by the run's thread after it joined it, never concurrently; build()
// once, at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "chiprt/diagnostics.h"
#include "chiprt/ring_sizes.h"
#include "common/diag_layout.h"
#include "diagnostics/run_model.h"

namespace chiprt::host {

class DiagDecoder {
 public:
  struct Setup {
    DiagnosticsConfig config;
    uint32_t stream_count = 0;
    uint32_t device_cores = 0;  // streams [0, device_cores) are cores', then AICPU threads'
    uint64_t clock_hz = 0;      // chip cycles per second (0: no time base, every time kNoTime)
    uint64_t args_arena_bytes = 0;
    bool ring = false;            // tensormap_ringbuffer: scope statistics are decoded
    ResolvedRingSizes rings;      // the capacities a scope's statistics are compared with
    uint64_t anchor_host_ns = 0;  // set by set_anchor
    uint64_t anchor_cycles = 0;
  };
  DiagDecoder() = default;
  explicit DiagDecoder(const Setup& setup);

  // The time base: chip cycles `cycles` were read together with `host_ns` (ns from the run's
  // start). Before it is set, every time decodes as kNoTime.
  void set_anchor(uint64_t host_ns, uint64_t cycles);
  // Decodes `count` records read in order from stream `stream`.
  void decode(const common::DiagRecord* records, std::size_t count, uint32_t stream);

  uint64_t records_received() const noexcept { return records_received_; }
  // The end of the last view copied into the args data arena (what the host reads back).
  uint64_t args_data_used() const noexcept { return args_data_used_; }
  // Whether a TensorArg belonged to a task of more than one block.
  bool spmd_args() const noexcept { return spmd_args_; }
  // Bytes the decoder holds now (its rows' capacities and their heap parts).
  uint64_t retained_bytes() const noexcept;

  // Moves the rows into `model` (its nodes and edges, when the host graph gave them, already
  // there: `model.have_edges` set for them) and completes them: blocks matched with their
  // dispatches and completions, nodes for every task, ready times, rows sorted by task.
  // `args_data_bytes`: the bytes of the arena the host read back. The decoder is empty after.
  void build(diagnostics::RunModel& model, uint64_t args_data_bytes);

 private:
  // A Dispatch or Complete record until build() matches it to its block.
  struct SchedRecord {
    uint64_t task = 0;
    uint64_t t_ns = 0;
    uint32_t block = 0;
    int32_t func_id = -1;  // Dispatch: a block that never finished gets its node from it
    uint32_t block_num = 0;
    uint16_t core = 0;
    uint16_t thread = 0;
  };
  // What a TaskExec says of its task's node (func_id, block_num), applied in build().
  struct NodeHint {
    uint64_t task = 0;
    int32_t func_id = -1;
    uint32_t block_num = 1;
  };
  // A stream's args decoding state: the TensorArg whose Continuation records follow, and where
  // the stream's current task's arguments begin (its ArgData records follow them).
  struct StreamState {
    std::size_t arg = 0;
    uint32_t words_left = 0;
    uint32_t word = 0;
    bool have_task = false;
    uint64_t task = 0;
    std::size_t task_args = 0;
  };

  // The rows, each a vector: build() moves them into the model. (A chunked list would spare the
  // vectors' spare capacity, but its small chunks, freed while moved into the model's vectors,
  // stay in the allocator's arenas: the process's peak RSS was higher with it.)
  template <class T>
  using Rows = std::vector<T>;

  void decode_one(const common::DiagRecord& r, uint32_t stream);
  uint64_t to_run_ns(uint64_t cycles) const noexcept;
  uint32_t thread_of(uint32_t stream) const noexcept {
    return stream >= setup_.device_cores ? stream - setup_.device_cores : 0;
  }
  // build()'s steps, in order.
  std::size_t match_dispatches(std::vector<diagnostics::BlockRun>& blocks,
                               diagnostics::RunModel& model);  // returns the executed blocks
  void match_completions(std::vector<diagnostics::BlockRun>& blocks, diagnostics::RunModel& model);
  void merge_nodes(diagnostics::RunModel& model);
  static void set_ready_times(const std::vector<diagnostics::BlockRun>& blocks,
                              diagnostics::RunModel& model);
  std::vector<diagnostics::TensorArgRecord> take_args(uint64_t args_data_bytes);
  void build_scopes(diagnostics::RunModel& model);

  Setup setup_;
  bool have_anchor_ = false;
  Rows<diagnostics::BlockRun> blocks_;
  Rows<NodeHint> hints_;
  Rows<SchedRecord> dispatches_;
  Rows<SchedRecord> completions_;
  Rows<diagnostics::TaskNode> nodes_;  // from Submit records
  Rows<diagnostics::Edge> edges_;
  Rows<diagnostics::ThreadSpan> thread_spans_;
  Rows<diagnostics::TaskCounters> counters_;
  Rows<diagnostics::TensorArgRecord> args_;
  std::vector<StreamState> streams_;
  std::map<uint64_t, diagnostics::ScopeStat> scopes_;  // by number
  std::vector<uint64_t> scopes_recorded_;              // scopes with a ScopeStats record
  uint64_t scopes_open_at_stop_ = 0;
  uint64_t records_received_ = 0;
  uint64_t args_data_used_ = 0;
  uint64_t arg_shape_words_ = 0;  // shape and stride words the args hold on the heap
  bool spmd_args_ = false;        // a TensorArg of a task with more than one block
};

}  // namespace chiprt::host
