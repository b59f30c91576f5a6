#include "orchestrator/graph_image_writer.h"

#include <cstring>
#include <string>

#include "chiprt/status.h"
#include "orchestrator/tensor_map.h"

namespace chiprt::orchestrator {
namespace {

uint64_t align8(uint64_t v) {
  return (v + 7) & ~uint64_t{7};
}

}  // namespace

uint64_t GraphImageWriter::retained_bytes() const noexcept {
  return capacity_bytes(fanout_begin_) + capacity_bytes(cursor_) + capacity_bytes(fanout_);
}

void GraphImageWriter::write(std::span<const common::TaskRecord> records,
                             std::span<const uint32_t> producers,
                             std::span<const int64_t> kernel_args,
                             std::span<const int64_t> task_ids, DeviceBuffer output_heap,
                             std::vector<uint8_t>& image,
                             std::span<const DependencyKinds> producer_kinds,
                             std::vector<DependencyKinds>* fanout_kinds) {
  const uint64_t n = records.size();
  const uint64_t edges = producers.size();
  if (edges > UINT32_MAX) {
    throw Error(StatusCode::CapacityExceeded,
                "graph has " + std::to_string(edges) + " dependency edges, limit " +
                    std::to_string(UINT32_MAX) + " (split the graph into several runs)");
  }
  // Fan-out lists: the transpose of the per-consumer producer lists (CSR), so each list is in
  // ascending consumer order.
  fanout_begin_.assign(n + 1, 0);
  for (uint32_t p : producers) ++fanout_begin_[p + 1];
  for (uint64_t t = 0; t < n; ++t) fanout_begin_[t + 1] += fanout_begin_[t];
  cursor_.assign(fanout_begin_.begin(), fanout_begin_.end() - 1);
  fanout_.resize(edges);
  if (fanout_kinds != nullptr) fanout_kinds->resize(edges);
  uint64_t fanin_begin = 0;
  for (uint64_t c = 0; c < n; ++c) {
    const uint32_t fanin = records[c].fanin_count;
    for (uint64_t k = 0; k < fanin; ++k) {
      const uint32_t at = cursor_[producers[fanin_begin + k]]++;
      fanout_[at] = static_cast<uint32_t>(c);
      if (fanout_kinds != nullptr) (*fanout_kinds)[at] = producer_kinds[fanin_begin + k];
    }
    fanin_begin += fanin;
  }
  uint64_t ready = 0;
  for (const common::TaskRecord& r : records) ready += r.fanin_count == 0;

  common::GraphImageHeader h{};
  h.magic = common::kGraphImageMagic;
  h.version = common::kGraphImageVersion;
  h.task_count = static_cast<uint32_t>(n);
  h.initial_ready_count = static_cast<uint32_t>(ready);
  h.tasks_offset = align8(sizeof(common::GraphImageHeader));
  h.fanout_offset = h.tasks_offset + n * sizeof(common::TaskRecord);
  h.fanout_count = edges;
  h.args_offset = align8(h.fanout_offset + edges * sizeof(uint32_t));
  h.args_count = kernel_args.size();
  h.initial_ready_offset = h.args_offset + h.args_count * sizeof(int64_t);
  h.task_ids_offset = align8(h.initial_ready_offset + ready * sizeof(uint32_t));
  h.total_size = h.task_ids_offset + n * sizeof(int64_t);
  h.output_heap_addr = output_heap.addr;
  h.output_heap_size = output_heap.size;
  uint64_t user_tasks = 0;
  for (const int64_t id : task_ids) user_tasks += id != common::kScopeFenceId;
  h.user_task_count = static_cast<uint32_t>(user_tasks);

  // Every byte is written below (sections, then the padding between them), so storage reused from
  // an earlier image is not cleared first: the argument blocks are most of an image.
  static_assert(sizeof(common::GraphImageHeader) % 8 == 0 && sizeof(common::TaskRecord) % 8 == 0);
  image.resize(h.total_size);
  uint8_t* base = image.data();
  const uint64_t fanout_end = h.fanout_offset + edges * sizeof(uint32_t);
  std::memset(base + fanout_end, 0, h.args_offset - fanout_end);
  const uint64_t ready_end = h.initial_ready_offset + ready * sizeof(uint32_t);
  std::memset(base + ready_end, 0, h.task_ids_offset - ready_end);
  std::memcpy(base, &h, sizeof(h));
  uint8_t* ready_out = base + h.initial_ready_offset;
  for (uint64_t t = 0; t < n; ++t) {
    common::TaskRecord r = records[t];
    r.fanout_begin = fanout_begin_[t];
    r.fanout_count = fanout_begin_[t + 1] - fanout_begin_[t];
    std::memcpy(base + h.tasks_offset + t * sizeof(r), &r, sizeof(r));
    if (r.fanin_count == 0) {
      const auto id = static_cast<uint32_t>(t);
      std::memcpy(ready_out, &id, sizeof(id));
      ready_out += sizeof(id);
    }
  }
  if (edges) std::memcpy(base + h.fanout_offset, fanout_.data(), edges * sizeof(uint32_t));
  if (!kernel_args.empty()) {
    std::memcpy(base + h.args_offset, kernel_args.data(), kernel_args.size() * sizeof(int64_t));
  }
  if (n != 0) std::memcpy(base + h.task_ids_offset, task_ids.data(), n * sizeof(int64_t));
}

}  // namespace chiprt::orchestrator
