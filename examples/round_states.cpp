#include "round_states.h"

#include <algorithm>

#include "chiprt/status.h"

namespace chiprt::examples {

RoundStates::RoundStates(Worker& worker, const TaskArgs& args, int copies)
    : worker_(worker), args_(args) {
  if (copies < 1) {
    throw Error(StatusCode::InvalidArgument, "RoundStates: copies must be >= 1");
  }
  try {
    for (int t = 0; t < args.tensor_count(); ++t) {
      const ArgTag tag = args.tag(t);
      // What the call may write: InOut, OutputExisting, and NoDep (untracked, maybe written).
      if (tag == ArgTag::In || tag == ArgTag::Out) continue;
      const DeviceBuffer& buffer = args.tensor(t).buffer;
      const bool seen = std::any_of(written_.begin(), written_.end(), [&](const Written& w) {
        return w.original.addr == buffer.addr;
      });
      if (seen || buffer.size == 0) continue;
      Written& w = written_.emplace_back();
      w.original = buffer;
      w.snapshot.resize(buffer.size);
      worker.copy_from(w.snapshot.data(), buffer, buffer.size);
      for (int i = 0; i < copies; ++i) w.copies.push_back(worker.malloc(buffer.size));
    }
  } catch (...) {
    for (Written& w : written_) {
      for (const DeviceBuffer& copy : w.copies) worker.free(copy);
    }
    throw;
  }
}

RoundStates::~RoundStates() {
  for (Written& w : written_) {
    for (const DeviceBuffer& copy : w.copies) {
      try {
        worker_.free(copy);
      } catch (const Error&) {
        // The device faulted under a run: its memory is gone with it.
      }
    }
  }
}

TaskArgs RoundStates::round_args(int i) {
  TaskArgs args = args_;
  for (Written& w : written_) {
    const DeviceBuffer& copy = w.copies.at(static_cast<std::size_t>(i));
    worker_.copy_to(copy, w.snapshot.data(), w.snapshot.size());
    for (int t = 0; t < args.tensor_count(); ++t) {
      if (args.tensor(t).buffer.addr == w.original.addr) args.tensor(t).buffer = copy;
    }
  }
  return args;
}

}  // namespace chiprt::examples
