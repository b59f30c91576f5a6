// DeviceChannel: the control block of the isolated simulated device (isolated_platform.h), the
// layout both of its processes read in the first bytes of the shared memory file.
//
// The host (IsolatedPlatform) writes one command at a time into the mailbox and publishes it by
// bumping `command_seq`; the device process (device_process.h) runs it and answers by setting
// `reply_seq` to the same number, both words waited on and woken with shared futexes
// (futex.h, FutexScope::Shared); each side sleeps as soon as it finds nothing (no sched_yield
// polling: a yielding thread stays runnable and, on a loaded host, waits for a scheduler tick
// where a woken one runs at once) and wakes the other only when it sleeps. The device publishes
// its ChipServices once at start (`ready`), and its fault handlers write the fault record (first
// fault wins) and wake `reply_seq`, so a host waiting for a reply sees the death at once. The
// device's init (the process between the host and the device, device_process.h) writes how the
// device process ended once it reaped it, since the host reaps only the init.
//
// Lifetime: lives as long as the memory file (one per device process; a reset makes a new one).
// Threading: the mailbox is written by the host's calling thread only while no command is
// outstanding, read by the device's server thread after it saw the new `command_seq`, and the
// reply the other way round (release/acquire on the sequence words). The fault record is written
// by whichever device thread faults first (the `fault_state` CAS) and read by the host.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "common/chip_services.h"

namespace chiprt::platform::sim {

inline constexpr uint32_t kDeviceChannelMagic = 0x43484456;  // "CHDV"
inline constexpr uint32_t kDeviceChannelVersion = 2;
// Bytes reserved for the control block at the start of the memory file (device memory follows).
inline constexpr uint64_t kDeviceChannelBytes = 64 * 1024;
inline constexpr std::size_t kChannelMessageBytes = 2048;
inline constexpr std::size_t kChannelSymbolBytes = 1024;

enum class DeviceCommand : uint32_t {
  None = 0,
  StartStreams,
  StopStreams,
  Launch,
  Wait,
  WaitAicpu,
  AbandonLaunch,
  Recover,
  LoadObject,
  ResolveSymbol,
  UnloadObject,
  Shutdown,
};

// What the device recorded about its end before it died (the host adds waitpid's view).
enum class DeviceEndKind : uint32_t { None = 0, Signal = 1, Exit = 2 };

struct DeviceEndRecord {
  DeviceEndKind kind = DeviceEndKind::None;
  int32_t signal = 0;
  int32_t signal_code = 0;
  int32_t exit_code = 0;
  uint64_t fault_addr = 0;
  int32_t tid = 0;
  // The faulting (or exiting) thread's common::RunContext.
  uint32_t role = 0;
  int32_t func_id = -1;
  uint32_t unit = 0;
  uint64_t task_id = 0;
};

struct DeviceChannel {
  uint32_t magic = 0;
  uint32_t version = 0;
  // Set (release) by the device once `services` is valid and the server loop runs.
  std::atomic<uint32_t> ready{0};
  uint32_t device_pid = 0;  // getpid() in the device (in its pid namespace when it has one)
  common::ChipServices services{};

  // --- mailbox: host -> device ------------------------------------------------------------------
  alignas(64) std::atomic<uint32_t> command_seq{0};
  // 1 while the device's server sleeps on command_seq: only then does the host pay for a wake
  // (a Dekker handshake: both sides publish, then look, sequentially consistent).
  std::atomic<uint32_t> server_parked{0};
  DeviceCommand command = DeviceCommand::None;
  // Launch: the programs (addresses valid in the device process, which is forked from the host).
  uint64_t ctx = 0;
  uint64_t aicpu_entry = 0;
  uint64_t core_service = 0;
  uint32_t aicpu_threads = 0;
  uint32_t cores = 0;
  uint32_t serial = 0;
  // Wait / WaitAicpu: the timeout; LoadObject: the staged image (device address, bytes);
  // ResolveSymbol / UnloadObject: the object handle and the symbol.
  uint64_t timeout_ms = 0;
  uint64_t image_addr = 0;
  uint64_t image_bytes = 0;
  uint64_t handle = 0;
  char symbol[kChannelSymbolBytes] = {};

  // --- reply: device -> host --------------------------------------------------------------------
  alignas(64) std::atomic<uint32_t> reply_seq{0};
  // 1 while the host sleeps on reply_seq (the same handshake the other way).
  std::atomic<uint32_t> host_parked{0};
  int32_t reply_code = 0;  // a StatusCode
  uint64_t reply_value = 0;
  char reply_message[kChannelMessageBytes] = {};

  // --- the fault record -------------------------------------------------------------------------
  alignas(64) std::atomic<uint32_t> fault_state{0};  // 0 none, 1 being written, 2 recorded
  DeviceEndRecord end{};

  // --- the init's record ------------------------------------------------------------------------
  // Set (release) by the device's init once it reaped the device process, after
  // `device_wait_status` (the status waitpid gave it).
  alignas(64) std::atomic<uint32_t> device_reaped{0};
  int32_t device_wait_status = 0;
};

static_assert(sizeof(DeviceChannel) <= kDeviceChannelBytes);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

}  // namespace chiprt::platform::sim
