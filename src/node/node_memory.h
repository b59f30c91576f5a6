// NodeMemory: a node's buffers. A node buffer is an address in the node's own address space (a
// range this process reserves and never maps, so that no device or host allocation can take one
// of its addresses) and a size; its bytes live in copies, one per location that needed them (a
// device allocation on a chip, host memory on the host), kept coherent by Coherence. The node
// rewrites a run's arguments from node addresses to the addresses of the copies on the chip that
// runs it (acquire).
//
// A buffer's home (a chip or the host) holds its first copy, made at allocation; host writes
// (copy_to, memset) land there. Copies elsewhere are made when a run or a host task acquires a
// region there, and stay as replicas until the region is next written; when a chip's memory is
// full, its unpinned replicas are dropped, least recently used first, before OutOfDeviceMemory.
// A chip reset (chip_reset) forgets the chip's copies; bytes whose only valid copy was there are
// lost, and reading them is refused naming the reset until they are written again.
//
// Lifetime: created over a node's chips, which it outlives never (the node destroys it first).
// Threading: every method may be called from any thread; one mutex serialises them (copies
// included).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/types.h"
#include "node/byte_ranges.h"
#include "node/coherence.h"
#include "node/node_chips.h"

namespace chiprt::node {

// A node buffer: [addr, addr + size) of the node's address space.
struct NodeAllocation {
  uint64_t addr = 0;
  uint64_t size = 0;
  bool operator==(const NodeAllocation&) const = default;
};

// Where a location's copy of an acquired region starts: a chip's device address, or a host
// pointer.
struct CopyAddress {
  Location location = 0;
  uint64_t addr = 0;  // of the buffer's first byte at `location`
};

class NodeMemory {
 public:
  // Bytes of node address space a node reserves: the most its live buffers may add up to.
  static constexpr uint64_t kAddressSpaceBytes = uint64_t{64} << 30;
  // Node addresses and sizes are multiples of this.
  static constexpr uint64_t kAlignment = 256;

  explicit NodeMemory(NodeChips& chips);
  ~NodeMemory();
  NodeMemory(const NodeMemory&) = delete;
  NodeMemory& operator=(const NodeMemory&) = delete;

  // A buffer of `bytes` (>= 1) whose first copy is allocated at `home` now (a chip: dropping its
  // replicas first when full, then OutOfDeviceMemory naming the chip).
  NodeAllocation allocate(uint64_t bytes, Location home);
  // Frees the buffer starting at `addr` and every copy of it (InvalidDevicePointer for an address
  // that does not start a live node buffer).
  void free(uint64_t addr);
  // Host writes and reads of [addr, addr + bytes), which must lie inside one live buffer. Writes
  // land at the buffer's home; reads gather each byte from a location holding it valid (lost bytes
  // are refused), making no copy.
  void copy_to(uint64_t addr, const void* src, uint64_t bytes);
  void copy_from(void* dst, uint64_t addr, uint64_t bytes);
  void memset(uint64_t addr, int value, uint64_t bytes);

  // The buffer [addr, addr + bytes) lies in, or InvalidDevicePointer naming the address.
  NodeAllocation buffer_of(uint64_t addr, uint64_t bytes, const char* what = "buffer_of") const;
  bool is_node_address(uint64_t addr) const noexcept;
  // Where the buffer starting at `buffer` was homed (InvalidDevicePointer when none starts there).
  Location home_of(uint64_t buffer) const;

  // Makes [lo, hi) of `buffer` (offsets) valid at `at` for `access` (Coherence::plan: Write makes
  // it valid too, as the writer may write only part of it), allocating `at`'s copy when it has
  // none, and pins that copy until release. Returns where the copy starts.
  CopyAddress acquire(uint64_t buffer, uint64_t lo, uint64_t hi, Location at,
                      Coherence::Access access);
  // After the run or task that acquired it: a write leaves `at` the only valid copy of [lo, hi)
  // (`dense`: the writer's view covers every byte of it, Coherence::written). False when `at`'s
  // copy is gone (its chip faulted or was reset meanwhile): nothing was recorded.
  bool release(uint64_t buffer, uint64_t lo, uint64_t hi, Location at, Coherence::Access access,
               bool dense = true);

  // After a run or task that was writing [lo, hi) of `buffer` failed or was cancelled: its bytes
  // are lost (reads refused naming `why`) until written again, never silently stale.
  void discard(uint64_t buffer, uint64_t lo, uint64_t hi, const std::string& why);
  // Chip k faulted or was reset: its copies are gone, never read again (`why` says what happened,
  // for the lost bytes' errors).
  void chip_reset(uint32_t k, const std::string& why);

  // What was copied between locations so far (bytes, copies), for reports and tests.
  struct Traffic {
    uint64_t copies = 0;
    uint64_t bytes = 0;
    uint64_t evictions = 0;
  };
  Traffic traffic() const;
  // Whether `at` holds a copy of `buffer` (allocated, valid bytes or not).
  bool has_copy(uint64_t buffer, Location at) const;

 private:
  struct Copy {
    uint64_t addr = 0;                // device address, or the host pointer
    std::unique_ptr<uint8_t[]> host;  // the host's copy
    uint32_t pins = 0;
    uint64_t last_use = 0;
  };
  struct Buffer {
    uint64_t size = 0;
    Location home = 0;
    std::map<Location, Copy> copies;
  };

  Buffer& find(uint64_t buffer);
  const Buffer& find(uint64_t buffer) const;
  // Where [addr, addr + bytes) lies: its buffer's address (mutex held).
  uint64_t locate(uint64_t addr, uint64_t bytes, const char* what) const;
  // `at`'s copy of `buffer`, allocated when missing (mutex held).
  Copy& copy_at(Buffer& b, Location at);
  // A chip allocation, dropping the chip's unpinned replicas (least recently used first) while it
  // is full.
  DeviceBuffer allocate_on_chip(uint32_t k, uint64_t bytes);
  // A host write of [addr, addr + bytes) at the buffer's home: `host_write(uint8_t*)` or
  // `chip_write(chip, device address)` (mutex held).
  template <class HostWrite, class ChipWrite>
  void write_at_home(uint64_t addr, uint64_t bytes, const char* what, HostWrite&& host_write,
                     ChipWrite&& chip_write);
  // chip_reset with the mutex held.
  void forget_chip(uint32_t k, const std::string& why);
  // Moves the bytes of one planned transfer and records it.
  void transfer(const Transfer& t);
  // Frees a chip's copy (a faulted chip's is left to its reset) or the host's.
  void free_copy(Location at, Copy& copy, uint64_t size) noexcept;

  NodeChips& chips_;
  void* reservation_ = nullptr;
  uint64_t base_ = 0;
  mutable std::mutex mutex_;
  ByteRanges free_space_;               // offsets from base_
  std::map<uint64_t, Buffer> buffers_;  // by node address
  Coherence coherence_;
  uint64_t tick_ = 0;
  Traffic traffic_;
};

}  // namespace chiprt::node
