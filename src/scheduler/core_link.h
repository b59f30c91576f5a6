// CoreLink: the scheduler's end of one core's handshake cell (see common/handshake.h).
//
// Owned by the one scheduler thread that owns the core; not shared. Tracks what was dispatched
// and which finishes were already collected, so the n-th finish the core reports maps to the n-th
// dispatch (a core finishes its running task before its pending one). The loads a parking
// scheduler re-checks are seq_cst (see common::Doorbell).
#pragma once

#include <atomic>
#include <cstdint>

#include "common/handshake.h"

namespace chiprt::scheduler {

class CoreLink {
 public:
  void attach(common::HandshakeCell* cell, uint32_t core, int queue) {
    cell_ = cell;
    core_ = core;
    queue_ = queue;
  }
  uint32_t core() const { return core_; }
  int queue() const { return queue_; }  // ready queue this core takes tasks from
  common::HandshakeCell* cell() const { return cell_; }

  bool opened() const { return opened_; }
  bool reported_ready() const {
    return cell_->status.load(std::memory_order_seq_cst) == common::kCoreReady;
  }
  void open() {
    cell_->control.store(common::kCoreOpen, std::memory_order_release);
    opened_ = true;
  }

  uint64_t outstanding() const { return dispatched_ - collected_; }
  bool running_free() const { return opened_ && !exit_ordered_ && outstanding() == 0; }
  bool pending_free() const {
    return opened_ && !exit_ordered_ && outstanding() == 1 &&
           cell_->pending.load(std::memory_order_acquire) == common::kTaskIdle;
  }
  bool has_free_slot() const { return running_free() || pending_free(); }

  void dispatch_running(uint32_t task, const common::DispatchPayload& payload) {
    cell_->running_payload = payload;
    cell_->running.store(task, std::memory_order_release);
    record_dispatch(task);
  }
  void dispatch_pending(uint32_t task, const common::DispatchPayload& payload) {
    cell_->pending_payload = payload;
    cell_->pending.store(task, std::memory_order_release);
    record_dispatch(task);
  }

  bool has_new_finish() const {
    return cell_->finished_count.load(std::memory_order_seq_cst) != collected_;
  }
  // Takes the next finished task in dispatch order; false when none is left to collect.
  bool take_finished(uint32_t* task) {
    if (cell_->finished_count.load(std::memory_order_acquire) == collected_) return false;
    *task = inflight_[collected_ % 2];
    ++collected_;
    return true;
  }

  void order_exit() {
    cell_->control.store(common::kCoreExit, std::memory_order_release);
    exit_ordered_ = true;
  }
  bool exit_acked() const {
    return cell_->status.load(std::memory_order_seq_cst) == common::kCoreExited;
  }

 private:
  void record_dispatch(uint32_t task) {
    inflight_[dispatched_ % 2] = task;
    ++dispatched_;
  }

  common::HandshakeCell* cell_ = nullptr;
  uint32_t core_ = 0;
  int queue_ = 0;
  bool opened_ = false;
  bool exit_ordered_ = false;
  uint64_t dispatched_ = 0;
  uint64_t collected_ = 0;
  uint32_t inflight_[2] = {common::kTaskIdle, common::kTaskIdle};
};

}  // namespace chiprt::scheduler
