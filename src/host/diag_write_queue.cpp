#include "host/diag_write_queue.h"

#include <exception>
#include <utility>

#include "chiprt/status.h"

namespace chiprt::host {

DiagWriteQueue::~DiagWriteQueue() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

void DiagWriteQueue::push(std::string dir, Job job) {
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return queue_.size() + (writing_ ? 1 : 0) < kMaxPending; });
  queue_.push_back({std::move(dir), std::move(job)});
  if (!writer_.joinable()) writer_ = std::thread([this] { loop(); });
  lock.unlock();
  work_cv_.notify_one();
}

std::vector<std::string> DiagWriteQueue::flush() {
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return queue_.empty() && !writing_; });
  return std::exchange(failures_, {});
}

std::size_t DiagWriteQueue::pending() const {
  std::lock_guard lock(mutex_);
  return queue_.size() + (writing_ ? 1 : 0);
}

void DiagWriteQueue::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    // Stopping still writes what is queued: a run's directory is never silently dropped.
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    Entry entry = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    std::string failure;
    try {
      failure = entry.job();
    } catch (const Error& e) {
      failure = e.message();  // the flush's own error gives the name and hint
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      failure = "unknown exception";
    }
    entry.job = nullptr;  // the collector it holds goes now, outside the lock
    lock.lock();
    writing_ = false;
    if (!failure.empty()) failures_.push_back(entry.dir + ": " + failure);
    done_cv_.notify_all();
  }
}

}  // namespace chiprt::host
