#include "host/diag_collector.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <span>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "chiprt/kernel.h"
#include "diagnostics/artifacts.h"
#include "host/log.h"
#include "host/run_steps.h"

namespace chiprt::host {
namespace {

using common::DiagKind;
using common::DiagRecord;
using diagnostics::kNoTime;

// How long the drain thread sleeps after a pass that found records, and after one that found
// none (a quiet run costs a wake-up every few ms, never a spinning thread).
constexpr auto kBusyDrainInterval = std::chrono::microseconds(500);
constexpr auto kIdleDrainInterval = std::chrono::milliseconds(3);

uint64_t ns_since(DiagCollector::Clock::time_point origin, DiagCollector::Clock::time_point t) {
  return t < origin ? 0 : ns_between(origin, t);
}

}  // namespace

uint32_t diag_switches(const DiagnosticsConfig& config, RuntimeVariant variant) {
  uint32_t bits = 0;
  const bool ring = variant == RuntimeVariant::TensormapRingbuffer;
  if (config.swimlane_level >= 1 || config.task_timing || config.dependency_graph ||
      config.hardware_counters) {
    bits |= common::kDiagTaskExec;
  }
  if (config.swimlane_level >= 2 || config.task_timing || config.dependency_graph) {
    bits |= common::kDiagSchedEvents;
  }
  if (config.swimlane_level >= 3) bits |= common::kDiagLoopPhases;
  if (ring && (config.swimlane_level >= 4 || config.task_timing || config.dependency_graph)) {
    bits |= common::kDiagSubmitSpans;
  }
  if (ring && config.dependency_graph) bits |= common::kDiagEdges;
  if (config.hardware_counters) bits |= common::kDiagCounters;
  if (ring && config.scope_stats) bits |= common::kDiagScopeStats;
  if (config.args_dump_level >= 1) bits |= common::kDiagArgsMeta;
  if (config.args_dump_level >= 2) bits |= common::kDiagArgsInputs;
  if (config.args_dump_level >= 3) bits |= common::kDiagArgsOutputs;
  return bits;
}

DiagCollector::DiagCollector(DeviceMemory& memory, platform::Platform& platform,
                             const RunPlan& plan, const platform::Geometry& geometry,
                             const RegisteredCallable& callable, Clock::time_point t_entry,
                             uint64_t stream_records)
    : memory_(memory),
      platform_(platform),
      config_(plan.diagnostics),
      plan_(plan),
      geometry_(geometry),
      callable_id_(callable.id),
      t_entry_(t_entry),
      isolated_(platform.isolated()),
      switches_(diag_switches(plan.diagnostics, plan.variant)) {
  for (int32_t f = 0; f < kMaxFuncId; ++f) {
    const RegisteredKernel& kernel = callable.kernels[static_cast<std::size_t>(f)];
    if (!kernel.present) continue;
    diagnostics::KernelName name;
    name.func_id = f;
    // Every chip object's kernel has the same symbol (kKernelSymbol): it names no kernel.
    if (kernel.symbol != nullptr && std::strcmp(kernel.symbol, kKernelSymbol) != 0) {
      name.symbol = kernel.symbol;
    }
    name.core_type = kernel.core;
    kernels_.push_back(std::move(name));
  }
  if (switches_ == 0) return;

  // Streams: one per device core (only the run's cores get records), one per AICPU thread.
  const uint32_t device_cores = geometry.clusters * 3;
  const uint32_t stream_count = device_cores + plan.shape.aicpu_threads;
  std::vector<uint64_t> capacity(stream_count, 0);
  const uint64_t core_records = stream_records != 0 ? stream_records : kDiagCoreStreamRecords;
  const uint64_t thread_records = stream_records != 0 ? stream_records : kDiagThreadStreamRecords;
  for (uint32_t c = 0; c < plan.shape.clusters; ++c) {
    capacity[c] = core_records;
    capacity[geometry.clusters + 2 * c] = core_records;
    capacity[geometry.clusters + 2 * c + 1] = core_records;
  }
  for (uint32_t t = 0; t < plan.shape.aicpu_threads; ++t)
    capacity[device_cores + t] = thread_records;

  const uint64_t header_bytes = round_up(sizeof(common::DiagRegionHeader), kDeviceAlign);
  const uint64_t streams_bytes = uint64_t{stream_count} * sizeof(common::DiagStream);
  uint64_t records_bytes = 0;
  for (const uint64_t records : capacity) records_bytes += records * sizeof(DiagRecord);
  // The args data arena, after the records.
  if ((switches_ & (common::kDiagArgsInputs | common::kDiagArgsOutputs)) != 0) {
    arena_bytes_ =
        std::min({config_.args_dump_budget_bytes, kDiagMaxArgsArenaBytes, platform.capacity() / 4});
  }
  const uint64_t total =
      header_bytes + streams_bytes + records_bytes + round_up(arena_bytes_, kDeviceAlign);
  if (Status status = memory_.allocate(total, kDeviceAlign, AllocationOwner::Runtime, &region_);
      !status.is_ok()) {
    throw Error(StatusCode::DiagnosticsError,
                "diagnostics: cannot allocate the " + std::to_string(total >> 20) +
                    " MiB diagnostics region in device memory (" + status.message() +
                    "); switch fewer collectors on or run on fewer clusters");
  }

  // Format the region on the host, then copy it in one piece.
  std::vector<std::byte> image(header_bytes + streams_bytes);
  auto* header = reinterpret_cast<common::DiagRegionHeader*>(image.data());
  header->magic = common::kDiagMagic;
  header->version = common::kDiagVersion;
  header->switches = switches_;
  header->stream_count = stream_count;
  header->cores = device_cores;
  header_addr_ = region_.addr;
  header->streams_addr = region_.addr + header_bytes;
  auto* streams = reinterpret_cast<common::DiagStream*>(image.data() + header_bytes);
  uint64_t records_addr = region_.addr + header_bytes + streams_bytes;
  streams_.resize(stream_count);
  for (uint32_t s = 0; s < stream_count; ++s) {
    const uint64_t stream_addr = header->streams_addr + uint64_t{s} * sizeof(common::DiagStream);
    StreamCursor& cursor = streams_[s];
    cursor.head_addr = stream_addr + offsetof(common::DiagStream, head);
    cursor.tail_addr = stream_addr + offsetof(common::DiagStream, tail);
    cursor.dropped_addr = stream_addr + offsetof(common::DiagStream, dropped);
    cursor.capacity = capacity[s];
    if (capacity[s] == 0) continue;
    cursor.records_addr = records_addr;
    streams[s].records_addr = records_addr;
    streams[s].capacity = capacity[s];
    records_addr += capacity[s] * sizeof(DiagRecord);
  }
  if (arena_bytes_ > 0) {
    arena_addr_ = records_addr;
    header->data_addr = arena_addr_;
    header->data_bytes = arena_bytes_;
  }
  if (Status status = memory_.copy_to_device(region_.addr, image.data(), image.size());
      !status.is_ok()) {
    release_region();
    throw Error(status);
  }
}

DiagCollector::~DiagCollector() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (drainer_.joinable()) drainer_.join();
}

void DiagCollector::release_region() noexcept {
  if (region_.addr == 0) return;
  (void)memory_.free(region_.addr, AllocationOwner::Runtime);
  region_ = {};
}

void DiagCollector::note_host_graph(const GraphExport& graph) {
  host_graph_ = graph;
}

void DiagCollector::host_span(std::string name, Clock::time_point begin, Clock::time_point end) {
  host_spans_.push_back({std::move(name), ns_since(t_entry_, begin), ns_since(t_entry_, end)});
}

void DiagCollector::start() {
  anchors_.emplace_back(ns_since(t_entry_, Clock::now()), platform_.chip_cycles_now());
  started_ = true;
  if (region_.addr == 0) return;
  drainer_ = std::thread([this] { drain_loop(); });
}

void DiagCollector::drain_loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    const bool busy = drain_once();
    lock.lock();
    stop_cv_.wait_for(
        lock,
        busy ? std::chrono::duration_cast<std::chrono::microseconds>(kBusyDrainInterval)
             : std::chrono::duration_cast<std::chrono::microseconds>(kIdleDrainInterval),
        [this] { return stop_; });
  }
}

bool DiagCollector::drain_once() {
  bool any = false;
  for (StreamCursor& cursor : streams_) {
    if (cursor.capacity == 0) continue;
    uint64_t head = 0;
    if (Status status = platform_.load_device_u64(cursor.head_addr, &head); !status.is_ok()) {
      if (drain_error_.empty()) drain_error_ = "reading a stream head: " + status.message();
      return any;
    }
    if (head - cursor.tail > cursor.capacity) {
      // A producer never runs more than the capacity ahead of the tail: a corrupted head.
      if (drain_error_.empty()) {
        drain_error_ = "a stream's head " + std::to_string(head) + " is more than its capacity " +
                       std::to_string(cursor.capacity) + " ahead of the records read";
      }
      continue;
    }
    while (cursor.tail < head) {
      const uint64_t index = cursor.tail & (cursor.capacity - 1);
      const uint64_t count = std::min(head - cursor.tail, cursor.capacity - index);
      const std::size_t at = records_.size();
      records_.resize(at + count);
      record_stream_.resize(at + count, static_cast<uint16_t>(&cursor - streams_.data()));
      if (Status status = platform_.copy_from_device(
              &records_[at], cursor.records_addr + index * sizeof(DiagRecord),
              count * sizeof(DiagRecord));
          !status.is_ok()) {
        records_.resize(at);
        record_stream_.resize(at);
        if (drain_error_.empty()) drain_error_ = "reading stream records: " + status.message();
        return any;
      }
      cursor.tail += count;
      any = true;
    }
    (void)platform_.store_device_u64(cursor.tail_addr, cursor.tail);
  }
  return any;
}

void DiagCollector::finish_chip(const common::ChipResult* result) {
  if (finished_) return;
  finished_ = true;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (drainer_.joinable()) drainer_.join();
  if (started_)
    anchors_.emplace_back(ns_since(t_entry_, Clock::now()), platform_.chip_cycles_now());
  if (region_.addr != 0) {
    drain_once();
    for (const StreamCursor& cursor : streams_) {
      if (cursor.capacity == 0) continue;
      uint64_t dropped = 0;
      if (platform_.load_device_u64(cursor.dropped_addr, &dropped).is_ok()) dropped_ += dropped;
    }
    common::DiagRegionHeader header{};
    if (platform_.copy_from_device(&header, header_addr_, sizeof(header)).is_ok() &&
        header.counters_refused.load(std::memory_order_relaxed) != 0) {
      counters_reason_.assign(header.counters_reason,
                              strnlen(header.counters_reason, sizeof(header.counters_reason)));
    }
    arena_refused_ = header.data_refused.load(std::memory_order_relaxed);
    read_args_data();
  }
  if (result != nullptr) {
    stuck_task_ = result->stuck_task;
    stuck_core_ = result->stuck_core;
    stall_kind_ = result->stall_kind;
  }
}

void DiagCollector::read_args_data() {
  if (arena_addr_ == 0) return;
  // The used part ends with the last view copied (a refused claim copied nothing).
  uint64_t used = 0;
  for (const DiagRecord& r : records_) {
    if (static_cast<DiagKind>(r.kind) == DiagKind::ArgData && r.b > 0 && r.a <= arena_bytes_ &&
        r.b <= arena_bytes_ - r.a) {
      used = std::max(used, r.a + r.b);
    }
  }
  args_data_.resize(used);
  if (used == 0) return;
  if (Status status = platform_.copy_from_device(args_data_.data(), arena_addr_, used);
      !status.is_ok()) {
    args_data_.clear();
    if (drain_error_.empty()) drain_error_ = "reading the args data: " + status.message();
  }
}

uint64_t DiagCollector::to_run_ns(uint64_t cycles) const noexcept {
  if (anchors_.empty() || geometry_.clock_hz == 0) return kNoTime;
  const auto [host_ns, anchor_cycles] = anchors_.front();
  const long double delta =
      (static_cast<long double>(cycles) - static_cast<long double>(anchor_cycles)) * 1e9L /
      static_cast<long double>(geometry_.clock_hz);
  const long double ns = static_cast<long double>(host_ns) + delta;
  return ns <= 0 ? 0 : static_cast<uint64_t>(ns);
}

namespace {

const char* stall_name(uint32_t kind) {
  switch (static_cast<common::SchedulerStall>(kind)) {
    case common::SchedulerStall::RunningTaskStalled:
      return "running_task_stalled";
    case common::SchedulerStall::ReadyButCoresIdle:
      return "ready_but_cores_idle";
    case common::SchedulerStall::DependencyDeadlock:
      return "dependency_deadlock";
    case common::SchedulerStall::OrchestratorStarved:
      return "orchestrator_starved";
    case common::SchedulerStall::None:
      break;
  }
  return "";
}

}  // namespace

diagnostics::RunModel DiagCollector::build_model(const RunReport* report, const Error* error) {
  diagnostics::RunModel model;
  model.callable_id = callable_id_;
  model.variant = std::string(runtime_variant_name(plan_.variant));
  model.serial = plan_.shape.serial;
  model.isolated = isolated_;
  model.config = config_;
  model.shape.aicpu_threads = plan_.shape.aicpu_threads;
  model.shape.orchestrator_threads = plan_.variant == RuntimeVariant::TensormapRingbuffer ? 1 : 0;
  model.shape.clusters = plan_.shape.clusters;
  model.shape.device_clusters = geometry_.clusters;
  model.shape.cores = geometry_.clusters * 3;
  model.kernels = kernels_;
  model.clock_hz = geometry_.clock_hz;
  model.anchors = anchors_;
  model.host_spans = host_spans_;
  model.wall_ns = wall_ns_;  // reserve_directory ended it
  model.records_received = records_.size();
  model.records_dropped = dropped_;
  if (dropped_ != 0) {
    model.drop_reason = "a diagnostics stream stayed full for " +
                        std::to_string(common::kDiagFullWaitMs) +
                        " ms (the host collector did not drain it in time); the records that "
                        "did not fit were dropped";
  }
  if (!drain_error_.empty()) model.notes.push_back("collector: " + drain_error_);

  // Nodes and edges: host_build_graph from the launched graph, tensormap_ringbuffer from its
  // Submit and Edge records.
  std::unordered_map<uint64_t, std::size_t> node_of;
  auto node = [&](uint64_t task) -> diagnostics::TaskNode& {
    auto [it, inserted] = node_of.emplace(task, model.nodes.size());
    if (inserted) {
      model.nodes.emplace_back();
      model.nodes.back().task = task;
    }
    return model.nodes[it->second];
  };
  if (host_graph_) {
    // Scope fences have no public id: they are numbered after the public ones.
    uint64_t next_fence_id = 0;
    for (const ExportedTask& t : host_graph_->tasks) {
      if (t.task_id >= 0)
        next_fence_id = std::max(next_fence_id, static_cast<uint64_t>(t.task_id) + 1);
    }
    std::vector<uint64_t> id_of(host_graph_->tasks.size());
    for (std::size_t i = 0; i < host_graph_->tasks.size(); ++i) {
      const ExportedTask& t = host_graph_->tasks[i];
      id_of[i] = t.task_id >= 0 ? static_cast<uint64_t>(t.task_id) : next_fence_id++;
      diagnostics::TaskNode& n = node(id_of[i]);
      n.func_id = t.func_id;
      n.block_num = t.block_num;
      n.core_type = t.core_type;
      n.dependency_only = t.dummy;
      n.internal = t.scope_fence;
      // The host submitted every task before the launch: the chip has them all from its start.
      if (!anchors_.empty()) n.submit_begin_ns = n.submit_end_ns = anchors_.front().first;
    }
    if (config_.dependency_graph) {
      model.have_edges = true;
      for (std::size_t i = 0; i < host_graph_->tasks.size(); ++i) {
        const ExportedTask& t = host_graph_->tasks[i];
        const std::span<const uint32_t> consumers = host_graph_->consumers_of(t);
        const std::span<const DependencyKinds> kinds = host_graph_->kinds_of(t);
        for (std::size_t k = 0; k < consumers.size(); ++k) {
          model.edges.push_back(
              {id_of[i], id_of[consumers[k]], kinds.empty() ? DependencyKinds{0} : kinds[k]});
        }
      }
    }
  }
  if ((switches_ & common::kDiagEdges) != 0) model.have_edges = true;

  // Blocks: one per TaskExec; Dispatch records are matched to them by (task, block, core) and
  // Complete records by (task, core). The core belongs to the key: the parts of a MIX task (AIC,
  // AIV0, AIV1) are all block 0 of their task, one on each core, so keyed by (task, block) alone
  // the Dispatch of a part that never ended (the AIV0 kernel that crashed the device) found the
  // TaskExec of a part that did, and the crashed part had no slice.
  using BlockKey = std::tuple<uint64_t, uint32_t, int32_t>;
  std::map<BlockKey, std::size_t> block_of;
  std::vector<const DiagRecord*> dispatches;
  std::vector<const DiagRecord*> completions;
  const uint32_t device_cores = geometry_.clusters * 3;
  auto thread_of = [&](const DiagRecord* r) -> uint32_t {
    const uint32_t stream = record_stream_[static_cast<std::size_t>(r - records_.data())];
    return stream >= device_cores ? stream - device_cores : 0;
  };
  for (const DiagRecord& r : records_) {
    switch (static_cast<DiagKind>(r.kind)) {
      case DiagKind::TaskExec: {
        diagnostics::BlockRun block;
        block.task = r.task;
        block.block = r.block;
        block.core = r.where;
        block.start_ns = to_run_ns(r.begin);
        block.end_ns = to_run_ns(r.end);
        block_of[BlockKey{r.task, r.block, block.core}] = model.blocks.size();
        model.blocks.push_back(block);
        diagnostics::TaskNode& n = node(r.task);
        n.func_id = r.func_id;
        n.block_num = std::max<uint32_t>(r.value, 1);
        break;
      }
      case DiagKind::Counters: {
        diagnostics::TaskCounters c;
        c.task = r.task;
        c.block = r.block;
        c.core = r.where;
        c.valid = r.value;
        c.instructions = r.a;
        c.cycles = r.b;
        c.cpu_ns = r.c;
        model.counters.push_back(c);
        break;
      }
      case DiagKind::Dispatch:
        dispatches.push_back(&r);
        break;
      case DiagKind::Complete:
        completions.push_back(&r);
        break;
      case DiagKind::LoopPhase: {
        diagnostics::ThreadSpan span;
        span.kind = diagnostics::ThreadSpan::Kind::LoopPhase;
        span.thread = thread_of(&r);
        span.what = r.value;
        span.begin_ns = to_run_ns(r.begin);
        span.end_ns = to_run_ns(r.end);
        model.thread_spans.push_back(span);
        break;
      }
      case DiagKind::Submit: {
        diagnostics::TaskNode& n = node(r.task);
        n.func_id = r.func_id;
        n.block_num = std::max<uint32_t>(r.value, 1);
        n.scope_depth = static_cast<uint32_t>(r.a);
        n.core_type = static_cast<CoreType>(r.b);
        n.dependency_only = r.c != 0;
        n.submit_begin_ns = to_run_ns(r.begin);
        n.submit_end_ns = to_run_ns(r.end);
        if (config_.swimlane_level >= 4) {
          diagnostics::ThreadSpan span;
          span.kind = diagnostics::ThreadSpan::Kind::Submit;
          span.thread = 0;
          span.task = r.task;
          span.begin_ns = n.submit_begin_ns;
          span.end_ns = n.submit_end_ns;
          model.thread_spans.push_back(span);
        }
        break;
      }
      case DiagKind::Edge:
        model.edges.push_back({r.a, r.task, static_cast<DependencyKinds>(r.value)});
        break;
      default:
        break;
    }
  }
  for (const DiagRecord* r : dispatches) {
    const uint64_t t = to_run_ns(r->begin);
    const BlockKey key{r->task, r->block, static_cast<int32_t>(r->where)};
    auto it = block_of.find(key);
    if (it == block_of.end()) {
      // Dispatched and never finished: still running (stuck, or the device died under it).
      diagnostics::BlockRun block;
      block.task = r->task;
      block.block = r->block;
      block.core = r->where;
      block.dispatch_ns = t;
      block.start_ns = t;
      it = block_of.emplace(key, model.blocks.size()).first;
      model.blocks.push_back(block);
      diagnostics::TaskNode& n = node(r->task);
      n.func_id = r->func_id;
      n.block_num = std::max<uint32_t>(r->value, 1);
    }
    model.blocks[it->second].dispatch_ns = t;
    if (config_.swimlane_level >= 2) {
      model.scheduler_events.push_back({diagnostics::SchedulerEvent::Kind::Dispatch, thread_of(r),
                                        static_cast<int32_t>(r->where), r->task, r->block, t});
    }
  }
  // Completions carry the core but not the block: each goes to the earliest block of its task on
  // that core not yet matched.
  std::map<std::pair<uint64_t, int32_t>, std::vector<std::size_t>> blocks_on_core;
  for (std::size_t i = 0; i < model.blocks.size(); ++i) {
    blocks_on_core[{model.blocks[i].task, model.blocks[i].core}].push_back(i);
  }
  for (auto& [key, list] : blocks_on_core) {
    std::sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
      return model.blocks[a].start_ns < model.blocks[b].start_ns;
    });
  }
  std::map<std::pair<uint64_t, int32_t>, std::size_t> next_match;
  for (const DiagRecord* r : completions) {
    const std::pair<uint64_t, int32_t> key{r->task, static_cast<int32_t>(r->where)};
    const uint64_t t = to_run_ns(r->begin);
    auto it = blocks_on_core.find(key);
    std::size_t& next = next_match[key];
    if (it != blocks_on_core.end() && next < it->second.size()) {
      model.blocks[it->second[next++]].complete_ns = t;
    }
    if (config_.swimlane_level >= 2) {
      model.scheduler_events.push_back({diagnostics::SchedulerEvent::Kind::Complete, thread_of(r),
                                        static_cast<int32_t>(r->where), r->task, 0, t});
    }
  }
  // Ready times: when the task's last producer's kernel returned (or its submission ended,
  // whichever came later); sources are ready at their submission (or the run start).
  if (model.have_edges) {
    std::unordered_map<uint64_t, uint64_t> finished;
    for (const diagnostics::BlockRun& b : model.blocks) {
      // The data is there when the producer's kernel returned; the scheduler noticing it later is
      // scheduling latency (ready to dispatch), not a wait for data.
      const uint64_t end = b.end_ns;
      if (end == kNoTime) continue;
      uint64_t& f = finished[b.task];
      f = std::max(f, end);
    }
    std::unordered_map<uint64_t, uint64_t> ready;
    for (const diagnostics::Edge& e : model.edges) {
      auto f = finished.find(e.producer);
      if (f == finished.end()) continue;
      uint64_t& r = ready[e.consumer];
      r = std::max(r, f->second);
    }
    for (diagnostics::TaskNode& n : model.nodes) {
      uint64_t r = n.submit_end_ns != kNoTime ? n.submit_end_ns : 0;
      if (auto it = ready.find(n.task); it != ready.end()) r = std::max(r, it->second);
      n.ready_ns = r;
    }
  }
  std::sort(model.nodes.begin(), model.nodes.end(),
            [](const diagnostics::TaskNode& a, const diagnostics::TaskNode& b) {
              return a.task < b.task;
            });
  std::sort(model.blocks.begin(), model.blocks.end(),
            [](const diagnostics::BlockRun& a, const diagnostics::BlockRun& b) {
              return a.task != b.task ? a.task < b.task : a.block < b.block;
            });
  if (config_.hardware_counters) {
    model.counters_note = counters_reason_;
  }
  if (config_.scope_stats) {
    if (plan_.variant == RuntimeVariant::TensormapRingbuffer) {
      decode_scopes(model);
    } else {
      model.notes.push_back(
          "scope stats: tensormap_ringbuffer only (host_build_graph has no rings; "
          "scope_stats.jsonl is not written)");
    }
  }
  if (config_.args_dump_level > 0) decode_args(model);
  if (report != nullptr && report->task_count == 0) {
    model.notes.push_back("the run submitted no task: nothing ran on the chip");
  }
  if (error != nullptr) {
    diagnostics::RunError e;
    e.code = static_cast<int32_t>(error->code());
    e.name = std::string(error->name());
    e.message = error->message();
    e.hint = std::string(error->hint());
    e.stall = stall_name(stall_kind_);
    e.stuck_task = stuck_task_;
    e.stuck_core = stuck_core_;
    model.error = std::move(e);
  }
  return model;
}

void DiagCollector::decode_scopes(diagnostics::RunModel& model) const {
  const ResolvedRingSizes rings = plan_.rings.used();
  std::map<uint64_t, diagnostics::ScopeStat> scopes;  // by number
  auto scope = [&](uint64_t number, uint64_t depth) -> diagnostics::ScopeStat& {
    auto [it, inserted] = scopes.try_emplace(number);
    diagnostics::ScopeStat& s = it->second;
    if (inserted) {
      s.scope = number;
      s.depth = static_cast<uint32_t>(depth);
      const std::size_t set = std::min<uint64_t>(depth, kRingScopeDepths - 1);
      s.task_window_capacity = rings.task_window[set];
      s.heap_capacity = rings.heap_bytes[set];
      s.dep_pool_capacity = rings.dep_pool[set];
    }
    return s;
  };
  std::vector<uint64_t> recorded;  // scopes with a ScopeStats record
  uint64_t open_at_stop = 0;       // of which the run stopped inside
  for (const DiagRecord& r : records_) {
    if (static_cast<DiagKind>(r.kind) == DiagKind::ScopeStats) {
      diagnostics::ScopeStat& s = scope(r.task, r.value);
      s.tasks = r.a;
      s.peak_task_window = r.b;
      s.peak_heap_bytes = r.c;
      s.peak_dep_pool = r.begin;
      recorded.push_back(r.task);
      if (r.end != 0) ++open_at_stop;
    } else if (static_cast<DiagKind>(r.kind) == DiagKind::RingWait && r.value < 3) {
      diagnostics::ScopeStat& s = scope(r.b, r.a);
      ++s.waits[r.value];
      const uint64_t begin = to_run_ns(r.begin), end = to_run_ns(r.end);
      if (begin != kNoTime && end != kNoTime && end > begin) s.wait_ns[r.value] += end - begin;
    }
  }
  std::sort(recorded.begin(), recorded.end());
  uint64_t unrecorded = 0;
  for (auto& [number, s] : scopes) {
    if (!std::binary_search(recorded.begin(), recorded.end(), number)) ++unrecorded;
    model.scopes.push_back(s);
  }
  if (open_at_stop > 0) {
    model.notes.push_back("scope stats: " + std::to_string(open_at_stop) +
                          " scope(s) did not end (the run stopped inside them): their figures "
                          "cover the run up to the stop");
  }
  if (unrecorded > 0) {
    model.notes.push_back("scope stats: " + std::to_string(unrecorded) +
                          " scope(s) left no statistics (the chip stopped before the "
                          "orchestration returned): only their back-pressure waits are known");
  }
}

void DiagCollector::decode_args(diagnostics::RunModel& model) const {
  // A TensorArg's shape and strides follow it in Continuation records of the same stream.
  struct Pending {
    std::size_t arg = 0;
    uint32_t words_left = 0;
    uint32_t word = 0;
  };
  std::vector<Pending> pending(streams_.size());
  std::map<std::pair<uint64_t, uint32_t>, std::size_t> arg_of;  // (task, index) -> model.args
  for (std::size_t k = 0; k < records_.size(); ++k) {
    const DiagRecord& r = records_[k];
    Pending& p = pending[record_stream_[k]];
    switch (static_cast<DiagKind>(r.kind)) {
      case DiagKind::TensorArg: {
        diagnostics::TensorArgRecord a;
        a.task = r.task;
        a.index = r.value & 0xff;
        const uint32_t tag = (r.value >> 8) & 0xff;
        a.tag = tag < kArgTagCount ? static_cast<ArgTag>(tag) : ArgTag::NoDep;
        const uint32_t ndim = std::min<uint32_t>((r.value >> 16) & 0xff, kMaxTensorDims);
        a.buffer_addr = r.a;
        a.start_offset = r.b;
        a.dtype = static_cast<DataType>(r.c & 0xff);
        a.shape.assign(ndim, 0);
        a.strides.assign(ndim, 0);
        p = {model.args.size(), 2 * ndim, 0};
        arg_of[{a.task, a.index}] = model.args.size();
        model.args.push_back(std::move(a));
        break;
      }
      case DiagKind::Continuation: {
        if (p.words_left == 0) break;
        diagnostics::TensorArgRecord& a = model.args[p.arg];
        for (const uint64_t word : {r.begin, r.end, r.a, r.b, r.c}) {
          if (p.words_left == 0) break;
          (p.word % 2 == 0 ? a.shape : a.strides)[p.word / 2] = word;
          ++p.word;
          --p.words_left;
        }
        break;
      }
      case DiagKind::ArgData: {
        auto it = arg_of.find({r.task, r.value & 0xff});
        if (it == arg_of.end()) break;
        diagnostics::TensorArgRecord& a = model.args[it->second];
        diagnostics::TensorArgRecord::Data& d =
            ((r.value >> 8) & 0xff) == static_cast<uint32_t>(common::DiagArgPhase::Before)
                ? a.before
                : a.after;
        d.present = true;
        d.wanted_bytes = r.c;
        // Bytes the host could not read back count as left out.
        if (r.b > 0 && r.a <= args_data_.size() && r.b <= args_data_.size() - r.a) {
          d.offset = r.a;
          d.bytes = r.b;
        }
        break;
      }
      default:
        break;
    }
  }
  std::sort(model.args.begin(), model.args.end(),
            [](const diagnostics::TensorArgRecord& x, const diagnostics::TensorArgRecord& y) {
              return x.task != y.task ? x.task < y.task : x.index < y.index;
            });
  if (config_.args_dump_level >= 2) {
    if (arena_bytes_ < config_.args_dump_budget_bytes) {
      model.notes.push_back("args dump: the data arena held " + std::to_string(arena_bytes_) +
                            " of the " + std::to_string(config_.args_dump_budget_bytes) +
                            " budget bytes (at most " + std::to_string(kDiagMaxArgsArenaBytes) +
                            " bytes and a quarter of the device memory)");
    }
    if (arena_refused_ > 0) {
      model.notes.push_back("args dump: " + std::to_string(arena_refused_) +
                            " bytes of tensor data did not fit the budget (args.json left_out "
                            "lists the views); raise args_dump_budget_bytes");
    }
  }
  if (config_.args_dump_level >= 3) {
    // Block 0 copies the outputs after its own kernel, while other blocks may still run.
    const bool spmd = std::any_of(records_.begin(), records_.end(), [](const DiagRecord& r) {
      return static_cast<DiagKind>(r.kind) == DiagKind::TensorArg && r.begin > 1;
    });
    if (spmd) {
      model.notes.push_back(
          "args dump: an SPMD task's outputs are copied when its block 0 returns; blocks still "
          "running then may not have written their part");
    }
  }
}

std::string DiagCollector::reserve_directory() {
  if (!finished_) finish_chip(nullptr);
  if (!dir_.empty()) return dir_;
  // The run's wall time ends here, not when a background writer gets to it.
  wall_ns_ = ns_since(t_entry_, Clock::now());
  dir_ = diagnostics::create_run_directory(config_.output_dir, &run_number_);
  return dir_;
}

void DiagCollector::write_files(const RunReport* report, const Error* error) {
  reserve_directory();
  const Clock::time_point t0 = Clock::now();
  diagnostics::RunModel model = build_model(report, error);
  const Clock::time_point t1 = Clock::now();
  model.run_number = run_number_;
  diagnostics::ArgsData data;
  data.bytes = std::move(args_data_);
  diagnostics::write_run_directory(dir_, model, data);
  CHIPRT_LOG_DEBUG("diagnostics: %zu records decoded in %.3f ms, %s written in %.3f ms",
                   records_.size(), static_cast<double>(ns_between(t0, t1)) / 1e6, dir_.c_str(),
                   static_cast<double>(ns_between(t1, Clock::now())) / 1e6);
}

std::string DiagCollector::write(const RunReport* report, const Error* error,
                                 std::string* write_error) {
  try {
    write_files(report, error);
    return dir_;
  } catch (const Error& e) {
    if (error == nullptr) throw;
    if (write_error != nullptr) *write_error = e.message();
  } catch (const std::exception& e) {
    if (error == nullptr) throw Error(StatusCode::DiagnosticsError, e.what());
    if (write_error != nullptr) *write_error = e.what();
  }
  return {};
}

}  // namespace chiprt::host
