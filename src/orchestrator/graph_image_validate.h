// The host's name for the graph-image validator: the orchestrator's builders and DeviceRunner
// check an image before it is copied with the very rules the chip applies again
// (common/graph_image_validate.h holds them, once, for both sides).
#pragma once

#include "common/graph_image_validate.h"

namespace chiprt::orchestrator {

using common::validate_graph_image;

}  // namespace chiprt::orchestrator
