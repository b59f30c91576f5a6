// paged_attention protocol: the func_ids and argument layouts shared by the orchestration, the
// kernels and the host side. Constants only.
//
// Attention over a paged KV cache: for every sequence b and head h,
//   out[b,h] = softmax(Q[b,h] K[b,h]^T * scale) V[b,h]
// where the keys and values of sequence b live in fixed-size blocks of the caches, listed in
// order by row b of the block table; the last block of a sequence may be partly used.
//
// Orchestration args (row-major, f32 unless noted):
//   0 Q           In              [batch, heads, q_rows, head_dim]
//   1 key_cache   In              [num_blocks, heads, block_size, head_dim]
//   2 value_cache In              [num_blocks, heads, block_size, head_dim]
//   3 block_table In  (i32)       [batch, max_blocks_per_seq]: physical block of each logical one
//   4 seq_lens    In  (i32)       [batch]: keys of each sequence, 1..max_blocks * block_size
//   5 out         OutputExisting  [batch, heads, q_rows, head_dim]
//   scalar 0: scale (f32); scalar 1: scope mode (0 automatic dependencies, 1 manual scopes with
//   explicit TaskArgs::after dependencies).
//
// Per (b, h) one scope holds the running state (allocation-only task: running max, running sum,
// accumulator); per KV block one nested scope holds the block's intermediates, which retire once
// the online update consumed them:
//   kQk (AIC)           q [q_rows, D], k [len, D] -> scores Out [q_rows, len];
//                       scalars q_rows, head_dim, len, scale (f32)
//   kSoftmax (AIV)      scores -> probs Out [q_rows, len] = exp(scores - block_max),
//                       block_max Out [q_rows], block_sum Out [q_rows]; scalars q_rows, len
//   kPv (AIC)           probs, v [len, D] -> partial Out [q_rows, D]; scalars q_rows, head_dim, len
//   kOnlineUpdate (AIV) partial, block_max, block_sum In; running_max, running_sum, acc InOut;
//                       scalars q_rows, head_dim, first (1: initialise the state from this block)
//   kNormalize (AIV)    acc, running_sum In; out OutputExisting [q_rows, D] = acc / running_sum;
//                       scalars q_rows, head_dim
#pragma once

#include <cstdint>

namespace chiprt::examples::paged_attention {

inline constexpr int32_t kQk = 0;
inline constexpr int32_t kSoftmax = 1;
inline constexpr int32_t kPv = 2;
inline constexpr int32_t kOnlineUpdate = 3;
inline constexpr int32_t kNormalize = 4;

inline constexpr int64_t kAutoScopes = 0;
inline constexpr int64_t kManualScopes = 1;

// Kernel tasks per KV block (QK, softmax, PV, online update) and per (b, h) (the normalisation).
inline constexpr uint64_t kTasksPerBlock = 4;
inline constexpr uint64_t kTasksPerHead = 1;

}  // namespace chiprt::examples::paged_attention
