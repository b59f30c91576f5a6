#include "orchestrator/graph_image_validate.h"

#include <cstring>
#include <string>
#include <vector>

#include "chiprt/orchestration.h"
#include "chiprt/types.h"
#include "common/graph_image.h"

namespace chiprt::orchestrator {
namespace {

using common::GraphImageHeader;
using common::TaskRecord;

Status bad(const std::string& what) {
  return Status(StatusCode::InternalError, "graph image: " + what);
}

// Checks that section [offset, offset + count * elem) is 8-aligned, starts at or after `floor`
// and ends inside `limit`; on success sets *end.
bool section_ok(uint64_t offset, uint64_t count, uint64_t elem, uint64_t floor, uint64_t limit,
                uint64_t* end) {
  if (offset % 8 != 0 || offset < floor || offset > limit) return false;
  if (count > (limit - offset) / elem) return false;
  *end = offset + count * elem;
  return true;
}

template <class T>
T load(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

}  // namespace

Status validate_graph_image(const uint8_t* data, std::size_t size) {
  if (data == nullptr) return bad("no data");
  if (size < sizeof(GraphImageHeader)) {
    return bad(std::to_string(size) + " bytes is smaller than the " +
               std::to_string(sizeof(GraphImageHeader)) + "-byte header");
  }
  const auto h = load<GraphImageHeader>(data);
  if (h.magic != common::kGraphImageMagic) return bad("bad magic " + std::to_string(h.magic));
  if (h.version != common::kGraphImageVersion) {
    return bad("version " + std::to_string(h.version) + ", expected " +
               std::to_string(common::kGraphImageVersion));
  }
  if (h.total_size < sizeof(GraphImageHeader) || h.total_size > size) {
    return bad("total_size " + std::to_string(h.total_size) + " is outside [" +
               std::to_string(sizeof(GraphImageHeader)) + ", " + std::to_string(size) + "]");
  }
  const uint64_t total = h.total_size;
  uint64_t tasks_end = 0;
  uint64_t fanout_end = 0;
  uint64_t args_end = 0;
  uint64_t ready_end = 0;
  if (!section_ok(h.tasks_offset, h.task_count, sizeof(TaskRecord), sizeof(GraphImageHeader), total,
                  &tasks_end)) {
    return bad("tasks section (offset " + std::to_string(h.tasks_offset) + ", " +
               std::to_string(h.task_count) + " tasks) is misaligned or outside the image");
  }
  if (!section_ok(h.fanout_offset, h.fanout_count, sizeof(uint32_t), tasks_end, total,
                  &fanout_end)) {
    return bad("fanout section (offset " + std::to_string(h.fanout_offset) + ", count " +
               std::to_string(h.fanout_count) + ") is misaligned, overlaps or is outside");
  }
  if (!section_ok(h.args_offset, h.args_count, sizeof(int64_t), fanout_end, total, &args_end)) {
    return bad("args section (offset " + std::to_string(h.args_offset) + ", count " +
               std::to_string(h.args_count) + ") is misaligned, overlaps or is outside");
  }
  if (!section_ok(h.initial_ready_offset, h.initial_ready_count, sizeof(uint32_t), args_end, total,
                  &ready_end)) {
    return bad("initial_ready section (offset " + std::to_string(h.initial_ready_offset) +
               ", count " + std::to_string(h.initial_ready_count) +
               ") is misaligned, overlaps or is outside");
  }

  const uint32_t n = h.task_count;
  std::vector<uint32_t> fanin_seen(n, 0);
  uint64_t ready_expected = 0;
  for (uint32_t t = 0; t < n; ++t) {
    const auto r = load<TaskRecord>(data + h.tasks_offset + uint64_t{t} * sizeof(TaskRecord));
    // Built only on failure: formatting it for every task would cost more than the checks.
    const auto where = [t] { return "task " + std::to_string(t) + ": "; };
    if (r.core_type >= kCoreTypeCount) {
      return bad(where() + "core_type " + std::to_string(r.core_type) + " is not a CoreType");
    }
    constexpr uint8_t kKnownFlags = common::kTaskFlagDummy | common::kTaskFlagPredicated;
    if ((r.flags & ~kKnownFlags) != 0) {
      return bad(where() + "unknown flags " + std::to_string(r.flags));
    }
    if (r.block_num < 1 || r.block_num > kMaxBlockNum) {
      return bad(where() + "block_num " + std::to_string(r.block_num) + " is outside [1, " +
                 std::to_string(kMaxBlockNum) + "]");
    }
    const bool dummy = (r.flags & common::kTaskFlagDummy) != 0;
    const bool mix = r.core_type == static_cast<uint8_t>(CoreType::MIX);
    auto func_ok = [](int32_t f) { return f >= 0 && f < kMaxFuncId; };
    if (dummy) {
      if (r.func_id != -1 || r.mix_aiv[0] != -1 || r.mix_aiv[1] != -1) {
        return bad(where() + "func_id " + std::to_string(r.func_id) + ", mix_aiv " +
                   std::to_string(r.mix_aiv[0]) + "/" + std::to_string(r.mix_aiv[1]) +
                   " on a dummy task (all must be -1)");
      }
    } else if (mix) {
      const int32_t parts[3] = {r.func_id, r.mix_aiv[0], r.mix_aiv[1]};
      bool any = false;
      for (int32_t f : parts) {
        if (f != -1 && !func_ok(f)) {
          return bad(where() + "MIX part func_id " + std::to_string(f) + " is outside [0, " +
                     std::to_string(kMaxFuncId) + ") and not -1");
        }
        any |= f != -1;
      }
      if (!any) return bad(where() + "MIX task with every part -1");
    } else {
      if (!func_ok(r.func_id)) {
        return bad(where() + "func_id " + std::to_string(r.func_id) + " is outside [0, " +
                   std::to_string(kMaxFuncId) + ")");
      }
      if (r.mix_aiv[0] != -1 || r.mix_aiv[1] != -1) {
        return bad(where() + "mix_aiv " + std::to_string(r.mix_aiv[0]) + "/" +
                   std::to_string(r.mix_aiv[1]) + " on a non-MIX task (must be -1)");
      }
    }
    if ((r.flags & common::kTaskFlagPredicated) != 0) {
      const uint32_t b = r.predicate_bytes;
      if (r.predicate_addr == 0 || (b != 1 && b != 2 && b != 4 && b != 8)) {
        return bad(where() + "predicate at " + std::to_string(r.predicate_addr) + " with " +
                   std::to_string(b) + " bytes (needs a non-null address and 1, 2, 4 or 8 bytes)");
      }
    }
    if (r.fanout_begin > h.fanout_count || r.fanout_count > h.fanout_count - r.fanout_begin) {
      return bad(where() + "fanout [" + std::to_string(r.fanout_begin) + ", +" +
                 std::to_string(r.fanout_count) + ") exceeds fanout_count " +
                 std::to_string(h.fanout_count));
    }
    if (r.args_begin > h.args_count || r.arg_count > h.args_count - r.args_begin) {
      return bad(where() + "args [" + std::to_string(r.args_begin) + ", +" +
                 std::to_string(r.arg_count) + ") exceeds args_count " +
                 std::to_string(h.args_count));
    }
    const uint8_t* fanout = data + h.fanout_offset + uint64_t{r.fanout_begin} * sizeof(uint32_t);
    for (uint32_t k = 0; k < r.fanout_count; ++k) {
      const auto consumer = load<uint32_t>(fanout + uint64_t{k} * sizeof(uint32_t));
      if (consumer >= n || consumer <= t) {
        return bad(where() + "fanout entry " + std::to_string(k) + " names task " +
                   std::to_string(consumer) + ", which is not a later task (task_count " +
                   std::to_string(n) + ")");
      }
      ++fanin_seen[consumer];
    }
    if (r.fanin_count == 0) ++ready_expected;
  }
  for (uint32_t t = 0; t < n; ++t) {
    const auto r = load<TaskRecord>(data + h.tasks_offset + uint64_t{t} * sizeof(TaskRecord));
    if (r.fanin_count != fanin_seen[t]) {
      return bad("task " + std::to_string(t) + ": fanin_count " + std::to_string(r.fanin_count) +
                 " but " + std::to_string(fanin_seen[t]) + " fanout entries name it");
    }
  }
  if (h.initial_ready_count != ready_expected) {
    return bad("initial_ready_count " + std::to_string(h.initial_ready_count) + " but " +
               std::to_string(ready_expected) + " tasks have fanin_count 0");
  }
  int64_t previous = -1;
  for (uint32_t k = 0; k < h.initial_ready_count; ++k) {
    const auto t = load<uint32_t>(data + h.initial_ready_offset + uint64_t{k} * sizeof(uint32_t));
    if (t >= n || static_cast<int64_t>(t) <= previous || fanin_seen[t] != 0) {
      return bad("initial_ready[" + std::to_string(k) + "] = " + std::to_string(t) +
                 " is out of range, out of order or has producers");
    }
    previous = t;
  }
  return Status::ok();
}

}  // namespace chiprt::orchestrator
