// What the files of a run's steps share (run_prepare*.cpp, run_launch.cpp, run_collect.cpp): the
// layout of a pipeline slot's staging buffer, the wait's constants, the run clock and the run
// numbers. Internal to src/host; constants and pure functions, any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>

#include "chiprt/types.h"
#include "common/chip_launch.h"
#include "common/kernel_table.h"
#include "common/task_args_wire.h"
#include "host/device_memory.h"  // kDeviceAlign

namespace chiprt::host {

using RunClock = std::chrono::steady_clock;

inline uint64_t ns_between(RunClock::time_point a, RunClock::time_point b) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

constexpr uint64_t round_up(uint64_t value, uint64_t align) {
  return (value + align - 1) / align * align;
}

// A slot's staging buffer: launch args | phase buffer, then for tensormap_ringbuffer the kernel
// table, the run's arguments and its user data (the chip-side orchestrator validates submissions
// against the copied table and calls the orchestration function with the run's arguments, sent in
// their wire format, common/task_args_wire.h, and the copied user data).
inline constexpr uint64_t kLaunchArgsBytes = round_up(sizeof(common::ChipLaunchArgs), kDeviceAlign);
inline constexpr uint64_t kPhaseBufferBytes = round_up(sizeof(common::PhaseBuffer), kDeviceAlign);
static_assert(std::is_trivially_copyable_v<common::KernelTable>);
inline constexpr uint64_t kKernelInfoBytes = round_up(sizeof(common::KernelTable), kDeviceAlign);
inline constexpr uint64_t kOrchestrationArgsBytes =
    round_up(sizeof(common::TaskArgsWire), kDeviceAlign);

// Once the chip latched an error, the rest of the launch (the cores, or an AICPU thread inside a
// kernel) gets this long, at most the stream-sync timeout, before it is abandoned: a stuck kernel
// will not return.
inline constexpr uint64_t kFaultDrainGraceMs = 1000;
// How often the host looks for a latched chip error while it waits for the AICPU threads.
inline constexpr uint64_t kAicpuWaitSliceMs = 20;

// A number no other run of this process has (0 is skipped when it wraps after 2^32 - 1 runs): a
// run's runtime outputs carry it, so an output kept from an earlier run, of any runner, is refused
// instead of aliasing this run's outputs at the same heap address. Thread-safe.
uint32_t next_run_number();

// "0x1f40": a device address or protocol word as the messages print it.
std::string hex(uint64_t value);

}  // namespace chiprt::host
