// Structural validation of a graph image (common/graph_image.h) before it is trusted.
//
// The host checks every image before copying it to the device, so a corrupted or mis-built image
// fails the run with a message instead of sending the schedulers out of bounds or into a hang.
// Pure function of the bytes: no state, thread-safe, never reads outside [data, data + size).
#pragma once

#include <cstddef>
#include <cstdint>

#include "chiprt/status.h"

namespace chiprt::orchestrator {

// Checks, in order: header size, magic, version, total_size <= size, every section 8-byte aligned,
// in order and inside total_size; per task: core type, flags, block_num in [1, kMaxBlockNum],
// func ids (-1 exactly for dummy tasks; MIX parts -1 or [0, kMaxFuncId) with at least one kernel;
// else [0, kMaxFuncId) with mix_aiv -1), the predicate (address, 1/2/4/8 bytes), fanout range
// inside fanout[], args range inside args[]; every fanout entry names a later task (images are
// built in submission order, so the graph is acyclic by construction); each task's fanin_count
// equals the number of fanout entries naming it; initial_ready lists exactly the tasks with
// fanin_count 0, in increasing order. Returns Ok or InternalError with a message naming the field
// (an image is produced by the runtime itself, so a bad one is a runtime bug or memory corruption).
Status validate_graph_image(const uint8_t* data, std::size_t size);

}  // namespace chiprt::orchestrator
