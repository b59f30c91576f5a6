// Decoding of a host-built graph image (common/graph_image.h) into a GraphExport
// (include/chiprt/graph_export.h): the image's position-independent records become host data with
// the kernel entry addresses resolved. Pure function of its inputs; any thread.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "chiprt/graph_export.h"
#include "chiprt/types.h"

namespace chiprt::host {

// `image` must have passed common::validate_graph_image (ranges are trusted);
// `kernel_entries[f]` is the device entry address of func_id f (0 when absent). Tasks keep the
// image's order, each task's arguments and consumers are laid out contiguously in that order
// (consumers in the image's fanout order), producer_count is the image's fanin_count.
// accessed_tensor_data is left false: the image does not record it. `edge_kinds`, when not empty,
// are the edges' kinds in the image's fanout order (HostGraphBuilder::take_edge_kinds): they
// become consumer_kinds.
GraphExport decode_graph_image(std::span<const uint8_t> image,
                               const std::array<uint64_t, kMaxFuncId>& kernel_entries,
                               std::span<const DependencyKinds> edge_kinds = {});

}  // namespace chiprt::host
