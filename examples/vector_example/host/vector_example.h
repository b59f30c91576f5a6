// vector_example: f = (a+b+1)(a+b+2) + (a+b) over f32 vectors, with nested scopes.
// See vector_example/protocol.h for the argument layout. Stateless.
#pragma once

#include "example.h"

namespace chiprt::examples {
Example make_vector_example();
}
