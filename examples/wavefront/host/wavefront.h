// wavefront: a 2-D tiled stencil whose dependencies come only from overlapping views of one
// buffer. See wavefront/protocol.h for the argument layout. Stateless.
#pragma once

#include "example.h"

namespace chiprt::examples {
Example make_wavefront_example();
}
