// tensormap_ringbuffer task slots: the layout and the lock-free protocol shared by the
// orchestrator (one AICPU thread, which submits, wires and retires) and the schedulers (which
// complete tasks). Both sides include this header; neither reaches into the other's private state.
//
// Sets: one set of rings per scope depth (kRingDepths; deeper scopes share the last set). Set d
// owns task slots [slot_base, slot_base + window) of the run's slot space (slot index = the task
// index the dispatch code uses: TaskRecord, per-task counters and ready queues are indexed by it),
// output heap bytes [heap_base, heap_base + heap_size) of the run's heap, dependency-pool entries
// [dep_base, dep_base + dep_size) and spill words [spill_base, spill_base + spill_size).
//
// Life of a slot (task T in slot s):
//   orchestrator (submit):   reset_slot(s), refs = 1 (completion) + 1 if T holds a scope
//                            reference (it allocated outputs); for each live task O that owns a
//                            runtime output T reads it retains O (O.refs++, so O's heap range
//                            outlives T) and records O in T's producer list; for each live
//                            producer P, unless P already completed (fanout sealed), it adds one
//                            to T's fan-in and pushes a DepEntry {consumer = s} onto P's fanout
//                            list (fanout_push). A dependency alone is not retained: T cannot run
//                            before P completed, and the entry belongs to T's dependency ring.
//                            Then it drops the fan-in guard and publishes T when it reached zero.
//   schedulers (complete):   fanout_seal_and_walk (consumers whose fan-in reaches zero become
//                            ready), release every retained owner, then the completion ref.
//   orchestrator (scope end): drops the scope refs of the scope's tasks.
//   orchestrator (retire):   in submission order per set, slots whose refs reached zero are
//                            retired: their heap bytes, dependency entries and spill words are
//                            reusable and their tensor-map entries are erased.
// A slot's last touch by a scheduler is the refs decrement that may take it to zero, so a slot
// observed at refs == 0 (acquire) can be reset without racing anyone.
//
// Memory: everything lives in the shared-state region (zeroed by the host). Threading: fields
// marked (O) are written only by the orchestrator; (S) are written by schedulers; atomics as noted.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/chip_launch.h"
#include "common/handshake.h"

namespace chiprt::common {

inline constexpr uint32_t kFanoutEmpty = 0xFFFFFFFFu;   // fanout_head: no consumer yet
inline constexpr uint32_t kFanoutSealed = 0xFFFFFFFEu;  // fanout_head: the task completed
inline constexpr uint32_t kInlineProducers = 6;         // producers kept in the slot itself

// One consumer on a producer's fanout list. Allocated by the orchestrator from the consumer's set
// (released when the consumer retires: the producer's walk reads `next` before it releases the
// consumer, so a retired consumer's entry is no longer reachable).
struct DepEntry {
  uint32_t consumer;  // slot index
  uint32_t next;      // DepEntry index or kFanoutEmpty
};

struct alignas(64) RingSlot {
  std::atomic<uint32_t> fanout_head;     // DepEntry index, kFanoutEmpty or kFanoutSealed
  std::atomic<uint32_t> refs;            // retirement references (see above)
  uint32_t producer_count;               // (O) producers retained; read by the completing scheduler
  uint32_t spill_begin;                  // (O) spill word index when producer_count > inline
  uint32_t producers[kInlineProducers];  // (O) slot indices of retained producers
  uint64_t sequence;                     // (O) per-set submission sequence of the occupant
  uint64_t reserved[2];
};
static_assert(sizeof(RingSlot) == 64);

// Geometry of one set, written by AICPU thread 0 before the start barrier; read-only afterwards.
struct RingSetGeometry {
  uint32_t slot_base;
  uint32_t window;     // power of two
  uint64_t heap_base;  // byte offset inside the run's heap
  uint64_t heap_size;
  uint32_t dep_base;
  uint32_t dep_size;
  uint32_t spill_base;
  uint32_t spill_size;
};

// Run-wide ring control: geometry and the orchestrator's published progress.
struct alignas(64) RingControl {
  RingSetGeometry sets[kRingDepths];
  uint32_t total_slots;
  uint32_t orchestrator_thread;  // its doorbell is rung on completions and retirable slots
  // Set when the orchestrator waits for completions or retirement; schedulers ring its doorbell
  // only then (Dekker with the doorbell's parked flag, see Doorbell).
  alignas(64) std::atomic<uint32_t> orchestrator_waiting;
  // (O) While orchestrator_waiting is set: the completed count at which a completer rings the
  // doorbell (hysteresis: a back-pressured orchestrator sleeps until a batch completed instead of
  // waking per task). Written before orchestrator_waiting is raised, so a completer that sees the
  // flag (seq_cst load) sees this episode's target or a later one. 0 = every completion rings.
  std::atomic<uint64_t> orchestrator_wake_at;
};

// Pushes `entry` (consumer already set) onto `producer`'s fanout list. Returns false when the
// producer completed meanwhile (sealed): the caller then undoes the fan-in it added and may reuse
// the entry. The consumer's fan-in must be raised BEFORE this call.
inline bool fanout_push(RingSlot& producer, DepEntry* pool, uint32_t entry) {
  uint32_t head = producer.fanout_head.load(std::memory_order_acquire);
  for (;;) {
    if (head == kFanoutSealed) return false;
    pool[entry].next = head;
    if (producer.fanout_head.compare_exchange_weak(head, entry, std::memory_order_acq_rel,
                                                   std::memory_order_acquire)) {
      return true;
    }
  }
}

// Seals `producer`'s fanout list (no push succeeds afterwards) and calls on_consumer(slot) for each
// consumer, reading each entry's `next` before the call, so on_consumer may release the consumer.
template <class OnConsumer>
inline void fanout_seal_and_walk(RingSlot& producer, const DepEntry* pool,
                                 OnConsumer&& on_consumer) {
  uint32_t entry = producer.fanout_head.exchange(kFanoutSealed, std::memory_order_acq_rel);
  while (entry != kFanoutEmpty && entry != kFanoutSealed) {
    const uint32_t consumer = pool[entry].consumer;
    const uint32_t next = pool[entry].next;
    on_consumer(consumer);
    entry = next;
  }
}

// Drops one retirement reference. Returns true when it was the last (the slot is retirable).
// seq_cst: it may end the orchestrator's park (see Doorbell).
inline bool release_slot_ref(RingSlot& slot) {
  return slot.refs.fetch_sub(1, std::memory_order_seq_cst) == 1;
}

}  // namespace chiprt::common
