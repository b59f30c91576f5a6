// paged_attention: attention over a paged KV cache with online softmax, QK and PV on AIC cores,
// softmax statistics and the online update on AIV cores, nested scopes per head and per KV block.
// See paged_attention/protocol.h for the argument layout. Stateless.
#pragma once

#include "example.h"

namespace chiprt::examples {
Example make_paged_attention_example();
}
