#include "host/diag_collector.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <span>
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
    name.symbol = kernel.symbol;
    // What the surfaces call the kernel (the symbol unless the callable gave a name; empty for an
    // unnamed in-process function, shown as "func N").
    name.name = kernel.name;
    name.core_type = kernel.core;
    kernels_.push_back(std::move(name));
  }
  DiagDecoder::Setup setup;
  setup.config = config_;
  setup.device_cores = geometry.clusters * 3;
  setup.clock_hz = geometry.clock_hz;
  setup.ring = plan.variant == RuntimeVariant::TensormapRingbuffer;
  if (setup.ring) setup.rings = plan.rings.used();
  decoder_ = DiagDecoder(setup);
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
  setup.stream_count = stream_count;
  setup.args_arena_bytes = arena_bytes_;
  decoder_ = DiagDecoder(setup);
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

uint64_t DiagCollector::retained_bytes() const noexcept {
  return decoder_.retained_bytes() + chunk_.capacity() * sizeof(DiagRecord) + args_data_.capacity();
}

void DiagCollector::release_region() noexcept {
  if (region_.addr == 0) return;
  (void)memory_.free(region_.addr, AllocationOwner::Runtime);
  region_ = {};
}

void DiagCollector::note_host_graph(const GraphExport& graph) {
  // Only what the model needs of the graph is kept (its nodes and edges as the model's rows),
  // not the graph with its arguments.
  have_host_graph_ = true;
  host_nodes_.clear();
  host_edges_.clear();
  // Scope fences have no public id: they are numbered after the public ones.
  uint64_t next_fence_id = 0;
  for (const ExportedTask& t : graph.tasks) {
    if (t.task_id >= 0)
      next_fence_id = std::max(next_fence_id, static_cast<uint64_t>(t.task_id) + 1);
  }
  host_nodes_.reserve(graph.tasks.size());
  for (const ExportedTask& t : graph.tasks) {
    diagnostics::TaskNode& n = host_nodes_.emplace_back();
    n.task = t.task_id >= 0 ? static_cast<uint64_t>(t.task_id) : next_fence_id++;
    n.func_id = t.func_id;
    n.block_num = t.block_num;
    n.core_type = t.core_type;
    n.dependency_only = t.dummy;
    n.internal = t.scope_fence;
  }
  if (config_.dependency_graph) {
    for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
      const std::span<const uint32_t> consumers = graph.consumers_of(graph.tasks[i]);
      const std::span<const DependencyKinds> kinds = graph.kinds_of(graph.tasks[i]);
      for (std::size_t k = 0; k < consumers.size(); ++k) {
        host_edges_.push_back({host_nodes_[i].task, host_nodes_[consumers[k]].task,
                               kinds.empty() ? DependencyKinds{0} : kinds[k]});
      }
    }
  }
}

void DiagCollector::host_span(std::string name, Clock::time_point begin, Clock::time_point end) {
  host_spans_.push_back({std::move(name), ns_since(t_entry_, begin), ns_since(t_entry_, end)});
}

namespace {

// The host's 1-minute load average (/proc/loadavg), or -1 where it cannot be read: two small reads
// a run, and only a run with diagnostics on has a collector.
double read_load_average() {
  std::ifstream in("/proc/loadavg");
  double one_minute = -1;
  return in >> one_minute ? one_minute : -1;
}

}  // namespace

void DiagCollector::start() {
  host_load_.start = read_load_average();
  host_load_.hardware_threads = std::thread::hardware_concurrency();
  anchors_.emplace_back(ns_since(t_entry_, Clock::now()), platform_.chip_cycles_now());
  decoder_.set_anchor(anchors_.front().first, anchors_.front().second);
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
      chunk_.resize(count);
      if (Status status = platform_.copy_from_device(
              chunk_.data(), cursor.records_addr + index * sizeof(DiagRecord),
              count * sizeof(DiagRecord));
          !status.is_ok()) {
        if (drain_error_.empty()) drain_error_ = "reading stream records: " + status.message();
        return any;
      }
      decoder_.decode(chunk_.data(), count, static_cast<uint32_t>(&cursor - streams_.data()));
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
  if (started_) {
    anchors_.emplace_back(ns_since(t_entry_, Clock::now()), platform_.chip_cycles_now());
    host_load_.end = read_load_average();
  }
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
  std::vector<DiagRecord>().swap(chunk_);
  if (result != nullptr) {
    stuck_task_ = result->stuck_task;
    stuck_core_ = result->stuck_core;
    stall_kind_ = result->stall_kind;
  }
}

void DiagCollector::read_args_data() {
  if (arena_addr_ == 0) return;
  // The used part ends with the last view copied (a refused claim copied nothing).
  const uint64_t used = decoder_.args_data_used();
  args_data_.resize(used);
  if (used == 0) return;
  if (Status status = platform_.copy_from_device(args_data_.data(), arena_addr_, used);
      !status.is_ok()) {
    args_data_.clear();
    if (drain_error_.empty()) drain_error_ = "reading the args data: " + status.message();
  }
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
  diagnostics::RunModel model = describe_run();
  take_host_graph(model);
  // Blocks (TaskExec, matched with their Dispatch and Complete records), the rest of the nodes
  // and edges, ready times, thread spans, counters, args, scopes.
  decoder_.build(model, args_data_.size());
  add_notes(model, report);
  if (error != nullptr) model.error = run_error(*error);
  return model;
}

// The run's identity, configuration, shape, time base and record counts.
diagnostics::RunModel DiagCollector::describe_run() const {
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
  model.shape.kernel_threads = plan_.shape.serial            ? 1
                               : geometry_.kicks_run_kernels ? plan_.shape.aicpu_threads
                                                             : geometry_.kernel_threads;
  model.shape.host_threads = plan_.shape.serial ? 1
                             : geometry_.kicks_run_kernels
                                 ? plan_.shape.aicpu_threads
                                 : plan_.shape.aicpu_threads + geometry_.kernel_threads;
  model.host_load = host_load_;
  model.kernels = kernels_;
  model.clock_hz = geometry_.clock_hz;
  model.anchors = anchors_;
  model.host_spans = host_spans_;
  model.wall_ns = wall_ns_;  // reserve_directory ended it
  model.records_received = decoder_.records_received();
  model.records_dropped = dropped_;
  if (dropped_ != 0) {
    model.drop_reason = "a diagnostics stream stayed full for " +
                        std::to_string(common::kDiagFullWaitMs) +
                        " ms (the host collector did not drain it in time); the records that "
                        "did not fit were dropped";
  }
  if (!drain_error_.empty()) model.notes.push_back("collector: " + drain_error_);
  return model;
}

// Nodes and edges: host_build_graph's from the launched graph (tensormap_ringbuffer's come from its
// Submit and Edge records, the decoder's).
void DiagCollector::take_host_graph(diagnostics::RunModel& model) {
  if (have_host_graph_) {
    model.nodes = std::move(host_nodes_);
    // The host submitted every task before the launch: the chip has them all from its start.
    if (!anchors_.empty()) {
      for (diagnostics::TaskNode& n : model.nodes) {
        n.submit_begin_ns = n.submit_end_ns = anchors_.front().first;
      }
    }
    if (config_.dependency_graph) {
      model.have_edges = true;
      model.edges = std::move(host_edges_);
    }
  }
  if ((switches_ & common::kDiagEdges) != 0) model.have_edges = true;
}

void DiagCollector::add_notes(diagnostics::RunModel& model, const RunReport* report) const {
  if (config_.hardware_counters) {
    model.counters_note = counters_reason_;
  }
  if (config_.scope_stats && plan_.variant != RuntimeVariant::TensormapRingbuffer) {
    model.notes.push_back(
        "scope stats: tensormap_ringbuffer only (host_build_graph has no rings; "
        "scope_stats.jsonl is not written)");
  }
  if (config_.args_dump_level > 0) add_args_notes(model);
  if (report != nullptr && report->task_count == 0) {
    model.notes.push_back("the run submitted no task: nothing ran on the chip");
  }
}

// The failure, with what the chip said of it (the stall sub-class, the stuck task and core).
diagnostics::RunError DiagCollector::run_error(const Error& error) const {
  diagnostics::RunError e;
  e.code = static_cast<int32_t>(error.code());
  e.name = std::string(error.name());
  e.message = error.message();
  e.hint = std::string(error.hint());
  e.stall = stall_name(stall_kind_);
  e.stuck_task = stuck_task_;
  e.stuck_core = stuck_core_;
  return e;
}

void DiagCollector::add_args_notes(diagnostics::RunModel& model) const {
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
  // Block 0 copies the outputs after its own kernel, while other blocks may still run.
  if (config_.args_dump_level >= 3 && decoder_.spmd_args()) {
    model.notes.push_back(
        "args dump: an SPMD task's outputs are copied when its block 0 returns; blocks still "
        "running then may not have written their part");
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
                   static_cast<std::size_t>(decoder_.records_received()),
                   static_cast<double>(ns_between(t0, t1)) / 1e6, dir_.c_str(),
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
