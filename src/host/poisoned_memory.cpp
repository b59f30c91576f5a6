// PoisonedMemory (see host/poisoned_memory.h).
#include "host/poisoned_memory.h"

#include <algorithm>
#include <utility>

#include "host/run_steps.h"

namespace chiprt::host {

const PoisonedMemory::Range* PoisonedMemory::find(const TaskArgs& args) const noexcept {
  const Range* found = nullptr;
  for (int i = 0; i < args.tensor_count(); ++i) {
    if (args.tag(i) == ArgTag::Out) continue;  // the runtime allocates it
    const DeviceBuffer& buffer = args.tensor(i).buffer;
    const uint64_t lo = buffer.addr;
    const uint64_t hi = buffer.addr + buffer.size;
    for (const Range& range : ranges_) {
      if (range.lo < hi && lo < range.hi &&
          (found == nullptr || range.failed_run < found->failed_run)) {
        found = &range;
      }
    }
  }
  return found;
}

void PoisonedMemory::poison(const TaskArgs& args, const Range& what, bool replace) {
  for (int i = 0; i < args.tensor_count(); ++i) {
    const ArgTag tag = args.tag(i);
    // Out: runtime outputs of the run itself, which no later run can name.
    if (tag != ArgTag::InOut && tag != ArgTag::OutputExisting) continue;
    const DeviceBuffer& buffer = args.tensor(i).buffer;
    if (buffer.size == 0) continue;
    const uint64_t lo = buffer.addr;
    const uint64_t hi = buffer.addr + buffer.size;
    if (replace) clear(lo, hi);
    // The parts of [lo, hi) no range covers yet.
    std::vector<std::pair<uint64_t, uint64_t>> covered;
    for (const Range& range : ranges_) {
      if (range.lo < hi && lo < range.hi) {
        covered.emplace_back(std::max(range.lo, lo), std::min(range.hi, hi));
      }
    }
    std::sort(covered.begin(), covered.end());
    uint64_t cursor = lo;
    auto add = [&](uint64_t from, uint64_t to) {
      Range range = what;
      range.lo = from;
      range.hi = to;
      ranges_.push_back(std::move(range));
    };
    for (const auto& [from, to] : covered) {
      if (cursor < from) add(cursor, from);
      cursor = std::max(cursor, to);
    }
    if (cursor < hi) add(cursor, hi);
  }
}

void PoisonedMemory::poison_failed(const TaskArgs& args, uint64_t run, const Error& error) {
  Range what;
  what.failed_run = run;
  what.code = error.code();
  what.message = error.message();
  poison(args, what, /*replace=*/true);
}

void PoisonedMemory::poison_cancelled(const TaskArgs& args, uint64_t run, const Range& cause) {
  Range what = cause;  // a copy: poison() grows ranges_, which `cause` lies in
  what.via_run = run;
  // Memory already poisoned keeps its own (more direct) cause.
  poison(args, what, /*replace=*/false);
}

void PoisonedMemory::clear(uint64_t lo, uint64_t hi) {
  if (ranges_.empty() || lo >= hi) return;
  std::vector<Range> kept;
  for (Range& range : ranges_) {
    if (range.hi <= lo || hi <= range.lo) {
      kept.push_back(std::move(range));
      continue;
    }
    // What lies outside [lo, hi) stays poisoned.
    if (range.lo < lo) {
      Range before = range;
      before.hi = lo;
      kept.push_back(std::move(before));
    }
    if (hi < range.hi) {
      Range after = range;
      after.lo = hi;
      kept.push_back(std::move(after));
    }
  }
  ranges_ = std::move(kept);
}

Error PoisonedMemory::cancellation(uint64_t run, int32_t callable_id, const Range& cause) {
  std::string message = "run " + std::to_string(run) + " of callable " +
                        std::to_string(callable_id) + " was not launched: it names memory [" +
                        hex(cause.lo) + ", " + hex(cause.hi) + ") poisoned by run " +
                        std::to_string(cause.failed_run) + ", which failed with " +
                        std::string(status_name(cause.code)) + ": " + cause.message;
  if (cause.via_run != 0) {
    message += " (run " + std::to_string(cause.via_run) +
               ", cancelled for that failure, left the memory unwritten)";
  }
  message +=
      "; rewrite that memory from the host (copy_to, memset) or free it before a run uses it";
  return Error(StatusCode::Cancelled, message);
}

}  // namespace chiprt::host
