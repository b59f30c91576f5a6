// FaultPlatform: a test double of an isolated device (the chip in its own process), for the
// host's fault handling. It decorates a real in-process SimPlatform and plays what an isolated
// platform does (platform/platform.h, "device isolation"): isolated() is true; once a test's
// chip code calls FaultControl::crash (a kernel or orchestration function "dies", recording its
// RunContext as the device's signal handler would), every wait and launch returns KernelCrashed
// and device_fault() the record; kill_device records Killed and makes them return
// DeviceFaulted; reset_device forwards to the sim and brings the device back. Memory calls always
// forward, as the host's mapping of a dead device's memory keeps working. Like the fixed-size
// shared memory of a device process, memory abandoned after a fault stays unavailable
// (quarantined: counted in bytes_in_use, refused to alloc) until reset_device.
//
// The in-process chip cannot really die: the test's "crashing" code must block until the test
// releases it (after its assertions), so that the handshake cells still show what it executes
// and no thread outlives the test.
//
// Lifetime: the FaultControl is shared between the test and the platform (which the runner
// owns). Threading: crash() from any chip thread; the rest from the host thread, like Platform.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/run_context.h"
#include "platform/platform.h"

namespace chiprt::host::test {

inline constexpr int kFakeDevicePid = 4242;

struct FaultControl {
  std::atomic<bool> isolated{true};
  std::atomic<int> kills{0};
  std::atomic<int> resets{0};

  // What the device process "died" of; the thread's RunContext fills the context fields.
  void crash(platform::DeviceFault fault, const common::RunContext& context) {
    fault.context_known = context.role != common::RunRole::None;
    fault.role = context.role;
    fault.func_id = context.func_id;
    fault.task_id = context.task;
    fault.unit = context.unit;
    record(std::move(fault));
  }
  // A death that recorded no context (e.g. SIGKILL from outside).
  void crash_without_context(platform::DeviceFault fault) {
    fault.context_known = false;
    record(std::move(fault));
  }
  // The next launch "dies" while the device takes it (its reply never comes), of `fault`.
  void crash_at_next_launch(platform::DeviceFault fault) {
    std::lock_guard<std::mutex> lock(mutex_);
    launch_fault_ = std::move(fault);
    launch_crash_armed_ = true;
  }
  // Called by the platform's launch: true when it is to die now (the fault is then recorded).
  bool take_launch_crash() {
    platform::DeviceFault fault;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!launch_crash_armed_) return false;
      launch_crash_armed_ = false;
      fault = launch_fault_;
    }
    record(std::move(fault));
    return true;
  }
  bool dead() const { return dead_.load(std::memory_order_acquire); }
  platform::DeviceFault fault() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return fault_;
  }
  std::string kill_reason() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return fault_.kind == platform::DeviceFault::Kind::Killed ? fault_.reason : std::string();
  }
  void kill(const std::string& reason) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!dead_.load()) {
      fault_ = platform::DeviceFault{};
      fault_.kind = platform::DeviceFault::Kind::Killed;
      fault_.signal = 9;
      fault_.reason = reason;
      fault_.pid = kFakeDevicePid;
      dead_.store(true, std::memory_order_release);
    }
    kills.fetch_add(1);
  }
  void revive() {
    std::lock_guard<std::mutex> lock(mutex_);
    fault_ = platform::DeviceFault{};
    dead_.store(false, std::memory_order_release);
  }
  // What a dead device's waits and launches return.
  Status dead_status() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fault_.kind == platform::DeviceFault::Kind::Killed) {
      return Status(StatusCode::DeviceFaulted, "the device process was killed: " + fault_.reason);
    }
    return Status(StatusCode::KernelCrashed, "the device process died");
  }

 private:
  void record(platform::DeviceFault fault) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (dead_.load()) return;  // the first death is the one reported
    fault.pid = kFakeDevicePid;
    fault_ = std::move(fault);
    dead_.store(true, std::memory_order_release);
  }

  mutable std::mutex mutex_;
  std::atomic<bool> dead_{false};
  platform::DeviceFault fault_;
  bool launch_crash_armed_ = false;
  platform::DeviceFault launch_fault_;
};

class FaultPlatform : public platform::Platform {
 public:
  FaultPlatform(std::unique_ptr<platform::Platform> inner, std::shared_ptr<FaultControl> control)
      : inner_(std::move(inner)), control_(std::move(control)) {}

  std::string name() const override { return "fault(" + inner_->name() + ")"; }
  platform::Geometry geometry() const override { return inner_->geometry(); }
  bool serial() const override { return inner_->serial(); }
  Status attach(int device_id) override { return inner_->attach(device_id); }
  void detach() override { inner_->detach(); }

  Status alloc(uint64_t bytes, uint64_t align, DeviceBuffer* out) override {
    if (bytes > inner_->capacity() - bytes_in_use()) {
      return Status(StatusCode::OutOfDeviceMemory,
                    "alloc: requested " + std::to_string(bytes) + " bytes, " +
                        std::to_string(quarantined_bytes_) + " bytes quarantined by a fault");
    }
    return inner_->alloc(bytes, align, out);
  }
  Status free(uint64_t addr) override { return inner_->free(addr); }
  Status copy_to_device(uint64_t dst, const void* src, uint64_t bytes) override {
    return inner_->copy_to_device(dst, src, bytes);
  }
  Status copy_from_device(void* dst, uint64_t src, uint64_t bytes) override {
    return inner_->copy_from_device(dst, src, bytes);
  }
  Status memset(uint64_t dst, int value, uint64_t bytes) override {
    return inner_->memset(dst, value, bytes);
  }
  // copy_from_peer: the interface's staging default (a platform that only copies).
  Status check_device_range(const char* operation, uint64_t addr, uint64_t bytes) const override {
    return inner_->check_device_range(operation, addr, bytes);
  }
  Status load_device_word(uint64_t src, uint32_t* out) override {
    return inner_->load_device_word(src, out);
  }
  Status load_device_u64(uint64_t src, uint64_t* out) override {
    return inner_->load_device_u64(src, out);
  }
  Status store_device_u64(uint64_t dst, uint64_t value) override {
    return inner_->store_device_u64(dst, value);
  }
  uint64_t chip_cycles_now() const override { return inner_->chip_cycles_now(); }
  uint64_t bytes_in_use() const override { return inner_->bytes_in_use() + quarantined_bytes_; }
  uint64_t capacity() const override { return inner_->capacity(); }
  void abandon_memory() override {
    quarantined_bytes_ += inner_->bytes_in_use();
    inner_->abandon_memory();
  }

  Status load_object(std::span<const uint8_t> image, platform::LoadedObject* out) override {
    return inner_->load_object(image, out);
  }
  Status resolve_symbol(platform::LoadedObject object, const char* symbol,
                        uint64_t* addr) override {
    return inner_->resolve_symbol(object, symbol, addr);
  }
  Status unload_object(platform::LoadedObject object) override {
    return inner_->unload_object(object);
  }
  const platform::ChipServices& services() const override { return inner_->services(); }
  Status load_chip_runtime() override { return inner_->load_chip_runtime(); }
  Status start_streams() override { return inner_->start_streams(); }
  void stop_streams() override { inner_->stop_streams(); }

  Status launch(const platform::LaunchRequest& request) override {
    if (control_->dead() || control_->take_launch_crash()) return control_->dead_status();
    return inner_->launch(request);
  }
  Status wait(uint64_t timeout_ms) override {
    if (control_->dead()) return control_->dead_status();
    Status status = inner_->wait(timeout_ms);
    return control_->dead() ? control_->dead_status() : status;
  }
  Status wait_aicpu(uint64_t timeout_ms) override {
    if (control_->dead()) return control_->dead_status();
    Status status = inner_->wait_aicpu(timeout_ms);
    return control_->dead() ? control_->dead_status() : status;
  }
  void abandon_launch() override { inner_->abandon_launch(); }
  Status recover() override { return inner_->recover(); }

  bool isolated() const override { return control_->isolated.load(); }
  platform::DeviceFault device_fault() const override {
    return control_->dead() ? control_->fault() : platform::DeviceFault{};
  }
  Status kill_device(const std::string& reason) override {
    if (!isolated()) return Platform::kill_device(reason);
    control_->kill(reason);
    return Status::ok();
  }
  Status reset_device() override {
    control_->resets.fetch_add(1);
    control_->revive();
    quarantined_bytes_ = 0;
    return inner_->reset_device();
  }

 private:
  std::unique_ptr<platform::Platform> inner_;
  std::shared_ptr<FaultControl> control_;
  uint64_t quarantined_bytes_ = 0;
};

}  // namespace chiprt::host::test
