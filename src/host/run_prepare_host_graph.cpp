// The prepare step of a host_build_graph run: orchestrate on the host (or find the cached image
// of an identical earlier run), commit the bank's regions, upload the image and write the launch
// arguments. The orchestration part is shared with export_graph.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "common/graph_image.h"
#include "common/graph_image_validate.h"
#include "common/shared_layout.h"
#include "host/device_runner.h"
#include "host/diag_collector.h"
#include "host/graph_image_export.h"
#include "host/run_steps.h"
#include "orchestrator/host_graph_builder.h"

namespace chiprt::host {
namespace {

// Appends the raw bytes of a trivially copyable value to a key.
template <class T>
void append(std::vector<uint8_t>* key, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
  key->insert(key->end(), bytes, bytes + sizeof(T));
}

// What a host-built image depends on: the callable's identity and content, every argument field
// (field by field, so padding never makes equal arguments differ), the user data and the caller's
// replay key, and the sizing. The key is compared byte for byte, not hashed, so two different
// programs never share an image; the user data is bounded (CallConfig::kMaxUserDataBytes), which
// bounds the key.
std::vector<uint8_t> replay_key(const RegisteredCallable& callable, const TaskArgs& args,
                                const RunPlan& plan) {
  std::vector<uint8_t> key;
  key.reserve(96 + static_cast<std::size_t>(args.tensor_count()) * 128 + plan.user_data.size());
  append(&key, callable.id);
  append(&key, callable.content_hash);
  append(&key, plan.heap_bytes);
  append(&key, plan.max_tasks);
  append(&key, plan.shape.clusters);
  append(&key, args.tensor_count());
  for (int i = 0; i < args.tensor_count(); ++i) {
    const Tensor& t = args.tensor(i);
    append(&key, args.tag(i));
    append(&key, t.buffer.addr);
    append(&key, t.buffer.size);
    append(&key, t.start_offset);
    append(&key, t.ndim);
    append(&key, t.dtype);
    for (uint32_t d = 0; d < t.ndim && d < static_cast<uint32_t>(kMaxTensorDims); ++d) {
      append(&key, t.shape[d]);
      append(&key, t.strides[d]);
    }
    append(&key, t.owner_task);
    append(&key, t.version);
  }
  append(&key, args.scalar_count());
  for (int i = 0; i < args.scalar_count(); ++i) append(&key, args.scalar_bits(i));
  append(&key, args.dep_count());
  for (int i = 0; i < args.dep_count(); ++i) append(&key, args.dep(i));
  append(&key, plan.replay_key);
  append(&key, static_cast<uint64_t>(plan.user_data.size()));
  const auto* user_bytes = reinterpret_cast<const uint8_t*>(plan.user_data.data());
  key.insert(key.end(), user_bytes, user_bytes + plan.user_data.size());
  return key;
}

// Validates a freshly built image (orchestrator's structural checks) and reads its task counts:
// every record, and the user's tasks (the records less the scope fences).
Status check_image(const std::vector<uint8_t>& image, uint64_t* task_count,
                   uint64_t* user_task_count) {
  Status status = common::validate_graph_image(image.data(), image.size());
  if (!status.is_ok()) return status;
  common::GraphImageHeader header;
  std::memcpy(&header, image.data(), sizeof(header));
  *task_count = header.task_count;
  *user_task_count = header.user_task_count;
  return Status::ok();
}

}  // namespace

DeviceRunner::HostBuild DeviceRunner::orchestrate_host_graph(
    const RunPlan& plan, const RegisteredCallable& callable, const TaskArgs& args,
    const common::KernelTable& kernel_table, bool edge_kinds) {
  const uint32_t bank = plan.bank;
  // Only the output heap: the other regions' sizes follow from the graph (prepare_host_graph).
  // They are named as committed, for the message of a failed commit.
  const ArenaSizes committed = arenas_.committed_sizes(bank);
  throw_if(arenas_.setup(bank, {plan.heap_bytes, committed.shared_state, committed.runtime_image},
                         arena_regions(ArenaRegion::OutputHeap)));
  // The region may be larger than this call asked for (it is reused while big enough); the
  // builder sees exactly the planned heap so capacity errors do not depend on history.
  const DeviceBuffer heap{arenas_.region(bank, ArenaRegion::OutputHeap).addr, plan.heap_bytes};
  // get/set_tensor_data of the orchestration copy through the platform, after the data fence.
  struct PlatformTensorMemory final : orchestrator::TensorMemory {
    PlatformTensorMemory(platform::Platform& platform, const HostDataFence& fence)
        : platform(platform), fence(fence) {}
    Status read(uint64_t addr, void* dst, uint64_t bytes) override {
      if (fence) fence(addr, addr + bytes);
      return platform.copy_from_device(dst, addr, bytes);
    }
    Status write(uint64_t addr, const void* src, uint64_t bytes) override {
      if (fence) fence(addr, addr + bytes);
      return platform.copy_to_device(addr, src, bytes);
    }
    platform::Platform& platform;
    const HostDataFence& fence;
  } tensor_memory(*platform_, host_data_fence_);
  orchestrator::HostGraphBuilder builder(kernel_table, heap,
                                         {plan.max_tasks, plan.shape.clusters, edge_kinds},
                                         &builder_scratch_, &tensor_memory);
  // The run's own copy of the user data, aligned as Orchestration::user_data promises (the
  // caller's span need not be).
  struct alignas(CallConfig::kUserDataAlign) UserDataBlock {
    std::byte bytes[CallConfig::kUserDataAlign];
  };
  std::vector<UserDataBlock> user_data_copy(
      round_up(plan.user_data.size(), CallConfig::kUserDataAlign) / CallConfig::kUserDataAlign);
  if (!plan.user_data.empty()) {
    std::memcpy(user_data_copy.data(), plan.user_data.data(), plan.user_data.size());
  }
  const std::span<const std::byte> user_data(
      reinterpret_cast<const std::byte*>(user_data_copy.data()), plan.user_data.size());
  HostBuild built;
  built.t_build = RunClock::now();
  builder.build(callable.orchestration, args, next_run_number(), user_data);
  built.build_ns = ns_between(built.t_build, RunClock::now());
  built.image = builder.take_image();
  built.edge_kinds = builder.take_edge_kinds();
  built.accessed_tensor_data = builder.accessed_tensor_data();
  throw_if(check_image(built.image, &built.task_count, &built.user_task_count));
  return built;
}

void DeviceRunner::prepare_host_graph(PreparedLaunch& prepared, const RegisteredCallable& callable,
                                      const TaskArgs& args,
                                      const common::KernelTable& kernel_table) {
  const RunPlan& plan = prepared.plan;
  const uint32_t bank = plan.bank;
  HostGraphRun& run = prepared.host_graph;
  // A freshly built image lives in `built_image` (moved out of the builder, then into the replay
  // cache); a replay reads the cached one in place. Either way `image` points at it, so no run
  // copies the image on the host.
  std::vector<uint8_t> built_image;
  const std::vector<uint8_t>* image = &built_image;
  // The edges' kinds for deps.json, kept with a cached image (a replay with the deps diagnostics
  // on needs them).
  std::vector<DependencyKinds> built_kinds;
  const std::vector<DependencyKinds>* edge_kinds = &built_kinds;
  uint64_t task_count = 0;  // records: the chip's tasks, scope fences included
  uint64_t user_task_count = 0;
  uint64_t build_ns = 0;
  bool replayed = false;
  if (plan.replay_graph) {
    run.replay_key = replay_key(callable, args, plan);
    if (const PrebuiltImage* cached = arenas_.lookup_prebuilt(bank, run.replay_key)) {
      image = &cached->image;
      edge_kinds = &cached->edge_kinds;
      task_count = cached->task_count;
      user_task_count = cached->user_task_count;
      replayed = true;
      run.prevalidated = cached->chip_validated;
    }
  }
  // A graph whose orchestration read or wrote tensor data is not cached: a replay skips the
  // orchestration function, so those accesses would silently not happen.
  bool cacheable = plan.replay_graph;
  if (!replayed) {
    HostBuild built = orchestrate_host_graph(
        plan, callable, args, kernel_table, plan.replay_graph || plan.diagnostics.dependency_graph);
    built_image = std::move(built.image);
    built_kinds = std::move(built.edge_kinds);
    task_count = built.task_count;
    user_task_count = built.user_task_count;
    build_ns = built.build_ns;
    if (built.accessed_tensor_data) cacheable = false;
    if (prepared.diag) {
      prepared.diag->host_span("orchestration", built.t_build,
                               built.t_build + std::chrono::nanoseconds(build_ns));
    }
    host_graphs_built_.fetch_add(1, std::memory_order_release);
  }

  const uint64_t shared_bytes = common::shared_state_bytes(task_count);
  // The output heap was committed by the orchestration or, for a replay, is the cached layout's
  // (any change of the bank's layout drops its cache); a replayed image keeps the layout it was
  // cached with, so this commits nothing new then.
  const uint64_t image_size = image->size();
  throw_if(arenas_.setup(bank, {plan.heap_bytes, shared_bytes, image_size},
                         arena_regions(ArenaRegion::SharedState, ArenaRegion::RuntimeImage)));
  const bool stored_prebuilt = cacheable && !replayed;
  if (stored_prebuilt) {
    PrebuiltImage entry;
    entry.key = run.replay_key;
    entry.image = std::move(built_image);
    entry.edge_kinds = std::move(built_kinds);
    entry.task_count = task_count;
    entry.user_task_count = user_task_count;
    entry.output_heap = arenas_.region(bank, ArenaRegion::OutputHeap);
    entry.shared_state = arenas_.region(bank, ArenaRegion::SharedState);
    entry.runtime_image = arenas_.region(bank, ArenaRegion::RuntimeImage);
    arenas_.store_prebuilt(bank, std::move(entry));
  }
  run.cached = replayed || stored_prebuilt;
  if (run.cached) {
    // The image now lives in the cache; setup above drops the cache only when a region moved,
    // which a replay's unchanged layout never does (checked rather than assumed).
    const PrebuiltImage* cached = arenas_.lookup_prebuilt(bank, run.replay_key);
    if (cached == nullptr && task_count != 0) {
      throw Error(StatusCode::InternalError,
                  "the cached graph image of callable " + std::to_string(callable.id) +
                      " was dropped while its run was being prepared (arena bank " +
                      std::to_string(bank) + " changed layout)");
    }
    if (cached != nullptr) {
      image = &cached->image;
      edge_kinds = &cached->edge_kinds;
    }
  }
  if (replayed) ++replayed_runs_;

  RunReport& report = prepared.report;
  report.task_count = user_task_count;
  report.internal_task_count = task_count - user_task_count;
  report.output_heap_committed_bytes = arenas_.committed_sizes(bank).output_heap;
  PhaseSpan& graph_build = report.phases[static_cast<int>(Phase::GraphBuild)];
  graph_build.present = !replayed;
  graph_build.start_ns = 0;
  graph_build.span_ns = build_ns;
  // Diagnostics: the graph as launched (nodes and edges of deps.json, names of the tasks).
  if (prepared.diag && task_count > 0) {
    prepared.diag->note_host_graph(decode_graph_image(*image, {}, *edge_kinds));
  }
  // Nothing for the chip to do: no launch.
  if (task_count == 0) return;

  const DeviceBuffer image_region = arenas_.region(bank, ArenaRegion::RuntimeImage);
  const DeviceBuffer shared_region = arenas_.region(bank, ArenaRegion::SharedState);
  // The chip only reads the image, so a replay finds it where the caching run left it unless
  // another image has been written to the bank since.
  if (!(replayed && prebuilt_image_resident_[bank])) {
    prebuilt_image_resident_[bank] = false;
    const RunClock::time_point t_upload = RunClock::now();
    throw_if(memory_.copy_to_device(image_region.addr, image->data(), image_size));
    if (prepared.diag) prepared.diag->host_span("upload", t_upload, RunClock::now());
    prebuilt_image_resident_[bank] = run.cached;
  }
  // A built image that was not cached is done with once it is on the device: its storage, pages
  // already faulted in, serves the next build.
  if (image == &built_image) {
    builder_scratch_.recycle_image(std::move(built_image));
    image = nullptr;
  }
  // Only the fixed-size head of the region: the chip formats its per-task arrays and queues
  // itself, so zeroing them here would cost megabytes of writes per run for nothing.
  throw_if(
      memory_.memset(shared_region.addr, 0, std::min(shared_bytes, common::kSharedClearedBytes)));

  DeviceBuffer staging;
  throw_if(staging_.acquire(plan.slot, kLaunchArgsBytes + kPhaseBufferBytes, &staging));
  common::ChipLaunchArgs& launch_args = start_launch_args(
      prepared, shared_region, shared_bytes, staging.addr, staging.addr + kLaunchArgsBytes);
  launch_args.image_addr = image_region.addr;
  launch_args.image_size = image_size;
  launch_args.image_prevalidated = run.prevalidated;
  write_launch_args(prepared);
}

}  // namespace chiprt::host
