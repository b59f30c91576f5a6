#include "common/graph_image_validate.h"

#include <cinttypes>
#include <cstdio>
#include <memory>

#include "common/handshake.h"

namespace chiprt::common {
namespace {

using image_detail::broken;

// Section [offset, offset + count * elem) is 8-aligned, starts at or after `floor` (the end of
// the section before it) and ends inside `limit`; on success sets *end.
bool section_ok(uint64_t offset, uint64_t count, uint64_t elem, uint64_t floor, uint64_t limit,
                uint64_t* end) {
  if (offset % 8 != 0 || offset < floor || offset > limit) return false;
  if (count > (limit - offset) / elem) return false;
  *end = offset + count * elem;
  return true;
}

const char* section_name(ImageRule rule) {
  switch (rule) {
    case ImageRule::TasksSection:
      return "tasks";
    case ImageRule::FanoutSection:
      return "fanout";
    case ImageRule::ArgsSection:
      return "args";
    case ImageRule::TaskIdsSection:
      return "task_ids";
    default:
      return "initial_ready";
  }
}

int32_t as_int32(uint64_t value) {
  return static_cast<int32_t>(static_cast<int64_t>(value));
}

}  // namespace

ImageVerdict check_graph_image_header(const uint8_t* data, uint64_t size,
                                      GraphImageHeader* header) {
  const auto address = reinterpret_cast<uintptr_t>(data);
  if (address == 0 || address % 8 != 0) return broken(ImageRule::Address, 0, address);
  if (size < sizeof(GraphImageHeader)) {
    return broken(ImageRule::HeaderSize, 0, size, sizeof(GraphImageHeader));
  }
  const auto h = image_detail::load<GraphImageHeader>(data);
  if (h.magic != kGraphImageMagic) return broken(ImageRule::Magic, 0, h.magic);
  if (h.version != kGraphImageVersion) return broken(ImageRule::Version, 0, h.version);
  if (h.total_size < sizeof(GraphImageHeader) || h.total_size > size) {
    return broken(ImageRule::TotalSize, 0, h.total_size, size);
  }
  // Task indices must stay below the reserved ids of the handshake (kTaskIdle, kTaskExit).
  if (h.task_count >= kMaxRunTasks) return broken(ImageRule::TaskCount, 0, h.task_count);
  const uint64_t total = h.total_size;
  uint64_t end = 0;
  if (!section_ok(h.tasks_offset, h.task_count, sizeof(TaskRecord), sizeof(GraphImageHeader), total,
                  &end)) {
    return broken(ImageRule::TasksSection, 0, h.tasks_offset, h.task_count, total);
  }
  if (!section_ok(h.fanout_offset, h.fanout_count, sizeof(uint32_t), end, total, &end)) {
    return broken(ImageRule::FanoutSection, 0, h.fanout_offset, h.fanout_count, total);
  }
  if (!section_ok(h.args_offset, h.args_count, sizeof(int64_t), end, total, &end)) {
    return broken(ImageRule::ArgsSection, 0, h.args_offset, h.args_count, total);
  }
  if (!section_ok(h.initial_ready_offset, h.initial_ready_count, sizeof(uint32_t), end, total,
                  &end)) {
    return broken(ImageRule::ReadySection, 0, h.initial_ready_offset, h.initial_ready_count, total);
  }
  if (!section_ok(h.task_ids_offset, h.task_count, sizeof(int64_t), end, total, &end)) {
    return broken(ImageRule::TaskIdsSection, 0, h.task_ids_offset, h.task_count, total);
  }
  if (h.output_heap_addr > UINT64_MAX - h.output_heap_size) {
    return broken(ImageRule::OutputHeap, 0, h.output_heap_addr, h.output_heap_size);
  }
  *header = h;
  return {};
}

void format_image_verdict(const ImageVerdict& v, char* out, std::size_t capacity) {
  const uint64_t* x = v.values;
  const unsigned t = v.task;
  switch (v.broken) {
    case ImageRule::Ok:
      std::snprintf(out, capacity, "graph image is valid");
      return;
    case ImageRule::Address:
      std::snprintf(out, capacity,
                    "graph image address 0x%" PRIx64 " is null or not 8-byte aligned", x[0]);
      return;
    case ImageRule::HeaderSize:
      std::snprintf(out, capacity,
                    "graph image of %" PRIu64 " bytes is smaller than its %" PRIu64 "-byte header",
                    x[0], x[1]);
      return;
    case ImageRule::Magic:
      std::snprintf(out, capacity,
                    "graph image magic 0x%08" PRIx64 " is not 0x%08x: not a graph image", x[0],
                    kGraphImageMagic);
      return;
    case ImageRule::Version:
      std::snprintf(out, capacity,
                    "graph image version %" PRIu64 " is not the supported version %u", x[0],
                    kGraphImageVersion);
      return;
    case ImageRule::TotalSize:
      std::snprintf(out, capacity,
                    "graph image total_size %" PRIu64
                    " is outside [header size %zu, image size %" PRIu64 "]",
                    x[0], sizeof(GraphImageHeader), x[1]);
      return;
    case ImageRule::TaskCount:
      std::snprintf(out, capacity, "graph image task_count %" PRIu64 " exceeds the limit %u", x[0],
                    kMaxRunTasks - 1);
      return;
    case ImageRule::TasksSection:
    case ImageRule::FanoutSection:
    case ImageRule::ArgsSection:
    case ImageRule::ReadySection:
    case ImageRule::TaskIdsSection:
      std::snprintf(
          out, capacity,
          "graph image %s section (offset %" PRIu64 ", count %" PRIu64
          ") is misaligned, overlaps the section before it or ends beyond total_size %" PRIu64,
          section_name(v.broken), x[0], x[1], x[2]);
      return;
    case ImageRule::OutputHeap:
      std::snprintf(out, capacity,
                    "graph image output heap at 0x%" PRIx64 " with %" PRIu64
                    " bytes wraps around the address space",
                    x[0], x[1]);
      return;
    case ImageRule::CoreType:
      std::snprintf(out, capacity,
                    "graph image task %u: core_type %" PRIu64 " is not AIC (0), AIV (1) or MIX (2)",
                    t, x[0]);
      return;
    case ImageRule::Flags:
      std::snprintf(out, capacity, "graph image task %u: unknown flags %" PRIu64, t, x[0]);
      return;
    case ImageRule::BlockNum:
      std::snprintf(out, capacity, "graph image task %u: block_num %" PRIu64 " is outside [1, %u]",
                    t, x[0], kMaxBlockNum);
      return;
    case ImageRule::DummyKernels:
      std::snprintf(
          out, capacity,
          "graph image task %u: func_id %d, mix_aiv %d/%d on a dummy task (all must be -1)", t,
          as_int32(x[0]), as_int32(x[1]), as_int32(x[2]));
      return;
    case ImageRule::MixPart:
      std::snprintf(out, capacity,
                    "graph image task %u: MIX part func_id %d is outside [0, %d) and not -1", t,
                    as_int32(x[0]), kMaxFuncId);
      return;
    case ImageRule::MixEmpty:
      std::snprintf(out, capacity, "graph image task %u: MIX task with every part -1", t);
      return;
    case ImageRule::FuncId:
      std::snprintf(out, capacity, "graph image task %u: func_id %d is outside [0, %d)", t,
                    as_int32(x[0]), kMaxFuncId);
      return;
    case ImageRule::NonMixAiv:
      std::snprintf(out, capacity,
                    "graph image task %u: mix_aiv %d/%d on a non-MIX task (must be -1)", t,
                    as_int32(x[0]), as_int32(x[1]));
      return;
    case ImageRule::Predicate:
      std::snprintf(out, capacity,
                    "graph image task %u: predicate at 0x%" PRIx64 " with %" PRIu64
                    " bytes (needs a non-null address and 1, 2, 4 or 8 bytes)",
                    t, x[0], x[1]);
      return;
    case ImageRule::SkipFillRange:
      std::snprintf(out, capacity,
                    "graph image task %u: skip-fill range at 0x%" PRIx64 " of %" PRIu64
                    " granules (flags %" PRIu64
                    ") is not a predicated task's 64-byte aligned range inside the run's output "
                    "heap",
                    t, x[0], x[1], x[2]);
      return;
    case ImageRule::ArgCount:
      std::snprintf(out, capacity,
                    "graph image task %u: arg_count %" PRIu64
                    " exceeds the kernel argument limit %u",
                    t, x[0], kMaxKernelArgs);
      return;
    case ImageRule::ArgRange:
      std::snprintf(out, capacity,
                    "graph image task %u: args [%" PRIu64 ", +%" PRIu64
                    ") exceeds args_count %" PRIu64,
                    t, x[0], x[1], x[2]);
      return;
    case ImageRule::ContextRange:
      std::snprintf(out, capacity,
                    "graph image task %u: args_begin %" PRIu64
                    " leaves no room for the %u-word task context before it",
                    t, x[0], kContextWords);
      return;
    case ImageRule::ContextCounts:
      std::snprintf(out, capacity,
                    "graph image task %u: task context of %" PRIu64 " tensors and %" PRIu64
                    " scalars does not describe its %" PRIu64
                    " arguments (at most %d tensors and %d scalars, adding up to arg_count)",
                    t, x[0], x[1], x[2], kMaxTaskTensors, kMaxTaskScalars);
      return;
    case ImageRule::ViewRange:
      std::snprintf(out, capacity,
                    "graph image task %u: views [%" PRIu64 ", +%" PRIu64
                    " x %u words) exceed "
                    "args_count %" PRIu64,
                    t, x[0], x[1], kViewWords, x[2]);
      return;
    case ImageRule::ViewDescriptor:
      std::snprintf(out, capacity,
                    "graph image task %u: view of tensor %" PRIu64 " has dtype %" PRIu64
                    ", element bytes %" PRIu64 " and ndim %" PRIu64
                    " (needs a known dtype, its element size and ndim in [1, %d])",
                    t, x[0], x[1] & 0xFF, x[1] >> 8, x[2], kMaxTensorDims);
      return;
    case ImageRule::FanoutRange:
      std::snprintf(out, capacity,
                    "graph image task %u: fanout [%" PRIu64 ", +%" PRIu64
                    ") exceeds fanout_count %" PRIu64,
                    t, x[0], x[1], x[2]);
      return;
    case ImageRule::FanoutTarget:
      std::snprintf(out, capacity,
                    "graph image task %u: fanout entry %" PRIu64 " names task %" PRIu64
                    ", which is not a later task (task_count %" PRIu64 ")",
                    t, x[0], x[1], x[2]);
      return;
    case ImageRule::FaninCount:
      std::snprintf(out, capacity,
                    "graph image task %u: fanin_count %" PRIu64 ", but %" PRIu64
                    " fanout entries name it (counting earlier tasks: producers precede their "
                    "consumers)",
                    t, x[0], x[1]);
      return;
    case ImageRule::ReadyCount:
      std::snprintf(out, capacity,
                    "graph image initial_ready_count %" PRIu64 ", but %" PRIu64
                    " tasks have fanin_count 0",
                    x[0], x[1]);
      return;
    case ImageRule::ReadyRange:
      std::snprintf(out, capacity,
                    "graph image initial_ready[%u] = %" PRIu64 " is not a task (task_count %" PRIu64
                    ")",
                    t, x[0], x[1]);
      return;
    case ImageRule::ReadyOrder:
      std::snprintf(out, capacity,
                    "graph image initial_ready[%u] = %" PRIu64 " does not follow %" PRIu64
                    " in increasing order (a task listed twice or out of order)",
                    t, x[0], x[1]);
      return;
    case ImageRule::ReadyProducers:
      std::snprintf(out, capacity,
                    "graph image initial_ready[%u] = %" PRIu64 " has fanin_count %" PRIu64
                    " (only tasks without producers start ready)",
                    t, x[0], x[1]);
      return;
    case ImageRule::TaskId:
      std::snprintf(out, capacity,
                    "graph image task %u: task id %" PRId64 " (flags %" PRIu64
                    ") is neither the next user task id %" PRIu64
                    " nor -1 on a dummy task (a scope fence)",
                    t, static_cast<int64_t>(x[0]), x[2], x[1]);
      return;
    case ImageRule::UserTaskCount:
      std::snprintf(out, capacity,
                    "graph image user_task_count %" PRIu64 ", but %" PRIu64
                    " tasks have a public id",
                    x[0], x[1]);
      return;
  }
  std::snprintf(out, capacity, "graph image breaks rule %u", static_cast<unsigned>(v.broken));
}

Status validate_graph_image(const uint8_t* data, std::size_t size) {
  GraphImageHeader header;
  ImageVerdict verdict = check_graph_image_header(data, size, &header);
  if (verdict.ok()) {
    // Every counter is written before it is read (the check starts them at zero).
    const auto fanin = std::make_unique_for_overwrite<uint32_t[]>(header.task_count);
    verdict =
        check_graph_image_tasks(data, header, fanin.get(), [](uint32_t, const TaskRecord&) {});
  }
  if (verdict.ok()) return Status::ok();
  char message[512];
  format_image_verdict(verdict, message, sizeof(message));
  return Status(StatusCode::InternalError, message);
}

}  // namespace chiprt::common
