// bgemm: tiled C = sum_k A_k B_k, tile products on AIC cores, accumulation on AIV cores through
// INOUT. See bgemm/protocol.h for the argument layout. Stateless.
#pragma once

#include "example.h"

namespace chiprt::examples {
Example make_bgemm_example();
}
