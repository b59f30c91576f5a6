// DiagWriteQueue: the background writer of run directories (DiagnosticsConfig::background_write).
// A run with background writing hands its finished collector here instead of turning its records
// into files itself, so Worker::run returns once the chip's records are read; one thread of the
// DeviceRunner's own writes the queued directories in order.
//
// Back-pressure rather than unbounded memory: at most kMaxPending directories wait (each holds
// its run's records); a push beyond that blocks until the oldest is written, as the chip's own
// record writers wait on a full stream.
//
// Lifetime and threading: owned by the DeviceRunner, whose thread pushes and flushes (under the
// Worker's mutex); the writer thread starts with the first push and is joined by the destructor,
// which writes whatever is still queued first. Jobs must not touch the device: they run after
// the run has released its region, possibly after a reset.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace chiprt::host {

class DiagWriteQueue {
 public:
  static constexpr std::size_t kMaxPending = 4;

  // Writes the directory; returns "" or what went wrong.
  using Job = std::function<std::string()>;

  DiagWriteQueue() = default;
  ~DiagWriteQueue();
  DiagWriteQueue(const DiagWriteQueue&) = delete;
  DiagWriteQueue& operator=(const DiagWriteQueue&) = delete;

  // Queues the writing of `dir`; blocks while kMaxPending directories are waiting.
  void push(std::string dir, Job job);
  // Waits until every queued directory is written; returns "DIR: reason" per failed write since
  // the last flush (and forgets them).
  std::vector<std::string> flush();
  // Directories queued or being written.
  std::size_t pending() const;

 private:
  struct Entry {
    std::string dir;
    Job job;
  };
  void loop();

  mutable std::mutex mutex_;
  std::condition_variable work_cv_;  // the writer waits for entries (or stop)
  std::condition_variable done_cv_;  // pushers and flushers wait for progress
  std::deque<Entry> queue_;
  bool writing_ = false;  // the writer holds an entry taken from queue_
  bool stop_ = false;
  std::vector<std::string> failures_;
  std::thread writer_;
};

}  // namespace chiprt::host
