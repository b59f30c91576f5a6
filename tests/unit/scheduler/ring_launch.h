// Test helper for tensormap_ringbuffer launches without the host runner: owns the memory of one
// ring launch (shared-state region, output heap, kernel tables, orchestration arguments, phase
// buffer, launch arguments) for an in-process orchestration function and in-process kernels.
// The caller supplies the chip (the harness's FakeChip or the sim platform) through
// ChipServices and runs the AICPU entry: run_threads() runs ring_aicpu_entry on host threads.
//
// Header-only so both the scheduler unit tests and the stress suite can use it.
// Lifetime: a RingLaunch owns everything it points the launch arguments at; it must outlive the
// launch. Not thread-safe itself.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/task_args.h"
#include "common/chip_launch.h"
#include "common/ring_layout.h"
#include "common/task_args_wire.h"
#include "orchestrator/task_checks.h"
#include "platform/platform.h"
#include "scheduler/ring_hooks.h"

namespace chiprt::scheduler::test {

struct RingKernel {
  int32_t func_id = 0;
  CoreType core = CoreType::AIV;  // MIX registers a kernel usable as any part of a MIX task
  KernelEntry entry = nullptr;
};

struct RingLaunchOptions {
  uint32_t threads = 3;  // AICPU threads (thread 0 orchestrates); 1 with serial
  bool serial = false;
  uint32_t clusters = 2;
  uint32_t device_clusters = 8;
  uint64_t timeout_ms = 0;  // 0: the scheduler default
  common::RingSizes rings = uniform_rings(64, 64 * 1024, 256);
  uint64_t heap_bytes = 0;  // 0: the sum of rings.heap_bytes

  static common::RingSizes uniform_rings(uint64_t window, uint64_t heap, uint64_t dep_pool) {
    common::RingSizes sizes;
    for (uint32_t d = 0; d < common::kRingDepths; ++d) {
      sizes.task_window[d] = window;
      sizes.heap_bytes[d] = heap;
      sizes.dep_pool[d] = dep_pool;
    }
    return sizes;
  }
};

class RingLaunch {
 public:
  RingLaunch(OrchestrationEntry entry, const TaskArgs& orchestration_args,
             const std::vector<RingKernel>& kernels, const RingLaunchOptions& options)
      : options_(options),
        kernel_table_(kMaxFuncId, 0),
        kernel_info_(std::make_unique<common::KernelTable>()),
        orchestration_args_(std::make_unique<common::TaskArgsWire>()),
        phases_(std::make_unique<common::PhaseBuffer>()),
        args_(std::make_unique<common::ChipLaunchArgs>()) {
    common::encode_task_args(orchestration_args, orchestration_args_.get());
    for (const RingKernel& k : kernels) {
      kernel_table_[k.func_id] = reinterpret_cast<uintptr_t>(k.entry);
      (*kernel_info_)[k.func_id].present = true;
      (*kernel_info_)[k.func_id].core = k.core;
    }
    uint64_t heap = options.heap_bytes;
    if (heap == 0) {
      for (uint64_t bytes : options.rings.heap_bytes) heap += bytes;
    }
    shared_bytes_ = common::ring_shared_state_bytes(options.rings);
    // Invalid ring sizes: the chip must reject them; give it a region of the prefix only.
    if (shared_bytes_ == UINT64_MAX) shared_bytes_ = sizeof(common::SharedPrefix);
    shared_ = aligned_bytes(shared_bytes_);
    heap_ = aligned_bytes(heap == 0 ? 64 : heap);
    common::ChipLaunchArgs& a = *args_;
    a.variant = RuntimeVariant::TensormapRingbuffer;
    a.serial = options.serial;
    a.aicpu_threads = options.threads;
    a.clusters = options.clusters;
    a.device_clusters = options.device_clusters;
    a.orchestration_entry = reinterpret_cast<uintptr_t>(entry);
    a.orchestration_args_addr = reinterpret_cast<uintptr_t>(orchestration_args_.get());
    a.kernel_info_addr = reinterpret_cast<uintptr_t>(kernel_info_.get());
    a.heap_addr = reinterpret_cast<uintptr_t>(heap_.get());
    a.heap_size = heap;
    a.rings = options.rings;
    a.shared_addr = reinterpret_cast<uintptr_t>(shared_.get());
    a.shared_size = shared_bytes_;
    a.kernel_table_addr = reinterpret_cast<uintptr_t>(kernel_table_.data());
    a.phase_buffer_addr = reinterpret_cast<uintptr_t>(phases_.get());
    a.scheduler_timeout_ms = options.timeout_ms;
    a.clock_hz = 1000000000ull;
  }

  common::ChipLaunchArgs& args() { return *args_; }
  const common::PhaseBuffer& phases() const { return *phases_; }
  uint64_t shared_bytes() const { return shared_bytes_; }
  // The orchestration arguments as the chip reads them (wire format).
  common::TaskArgsWire& orchestration_wire() { return *orchestration_args_; }
  void set_services(const platform::ChipServices* services, uint64_t clock_hz) {
    args_->services_addr = reinterpret_cast<uintptr_t>(services);
    args_->clock_hz = clock_hz;
  }

  // Runs ring_aicpu_entry on options.threads host threads (inline for one) and joins them.
  void run_threads() {
    const uint32_t n = options_.threads;
    if (n == 1) {
      ring_aicpu_entry(args_.get(), 0, 1);
      return;
    }
    std::vector<std::thread> threads;
    for (uint32_t i = 0; i < n; ++i) {
      threads.emplace_back([this, i, n] { ring_aicpu_entry(args_.get(), i, n); });
    }
    for (auto& t : threads) t.join();
  }

  StatusCode code() const { return static_cast<StatusCode>(args_->result.code.load()); }
  std::string detail() const { return args_->result.detail; }
  uint64_t tasks_completed() const { return args_->result.tasks_completed; }

 private:
  struct AlignedFree {
    void operator()(uint8_t* p) const { ::operator delete(p, std::align_val_t(64)); }
  };
  using AlignedBytes = std::unique_ptr<uint8_t, AlignedFree>;
  static AlignedBytes aligned_bytes(uint64_t bytes) {
    auto* p = static_cast<uint8_t*>(::operator new(bytes, std::align_val_t(64)));
    std::memset(p, 0, bytes);
    return AlignedBytes(p);
  }

  RingLaunchOptions options_;
  std::vector<uint64_t> kernel_table_;
  std::unique_ptr<common::KernelTable> kernel_info_;
  std::unique_ptr<common::TaskArgsWire> orchestration_args_;
  std::unique_ptr<common::PhaseBuffer> phases_;
  std::unique_ptr<common::ChipLaunchArgs> args_;
  uint64_t shared_bytes_ = 0;
  AlignedBytes shared_;
  AlignedBytes heap_;
};

}  // namespace chiprt::scheduler::test
