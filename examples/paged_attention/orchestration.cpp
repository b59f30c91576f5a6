// paged_attention orchestration: per (sequence, head) a scope holding the running softmax state,
// per KV block a nested scope whose intermediates (scores, probabilities, block statistics,
// partial product) retire once the online update consumed them. The block table is read from
// device memory with get_tensor_data, so each sequence walks its own non-contiguous blocks.
// In manual mode both scopes are manual and every dependency is an explicit TaskArgs::after.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "paged_attention/protocol.h"

namespace {

using chiprt::CoreType;
using chiprt::DataType;
using chiprt::Error;
using chiprt::Orchestration;
using chiprt::ScopeMode;
using chiprt::StatusCode;
using chiprt::TaskArgs;
using chiprt::TaskId;
using chiprt::Tensor;
namespace proto = chiprt::examples::paged_attention;

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(StatusCode::InvalidArgument, "paged_attention: " + what);
}

void require_shape(const Tensor& t, const char* name, uint32_t ndim, DataType dtype) {
  require(t.ndim == ndim && t.dtype == dtype && t.is_contiguous(),
          std::string("tensor '") + name + "' is " + t.to_string() + ", expected a contiguous " +
              std::to_string(ndim) + "-D tensor of " + std::string(chiprt::dtype_name(dtype)));
}

struct Geometry {
  uint64_t batch, heads, q_rows, head_dim, num_blocks, block_size, max_blocks;
};

Geometry check_arguments(const chiprt::TaskArgs& args) {
  const Tensor& q = args.tensor(0);
  const Tensor& k = args.tensor(1);
  const Tensor& v = args.tensor(2);
  const Tensor& table = args.tensor(3);
  const Tensor& lens = args.tensor(4);
  const Tensor& out = args.tensor(5);
  require_shape(q, "Q", 4, DataType::F32);
  require_shape(k, "key_cache", 4, DataType::F32);
  require_shape(v, "value_cache", 4, DataType::F32);
  require_shape(table, "block_table", 2, DataType::I32);
  require_shape(lens, "seq_lens", 1, DataType::I32);
  require_shape(out, "out", 4, DataType::F32);
  Geometry g{q.shape[0], q.shape[1], q.shape[2],    q.shape[3],
             k.shape[0], k.shape[2], table.shape[1]};
  for (uint32_t d = 0; d < 4; ++d) {
    require(out.shape[d] == q.shape[d], "out " + out.to_string() + " differs from Q " +
                                            q.to_string() + " in dimension " + std::to_string(d));
    require(v.shape[d] == k.shape[d], "value_cache " + v.to_string() + " differs from key_cache " +
                                          k.to_string() + " in dimension " + std::to_string(d));
  }
  require(k.shape[1] == g.heads && k.shape[3] == g.head_dim,
          "key_cache " + k.to_string() + " must have Q's heads=" + std::to_string(g.heads) +
              " and head_dim=" + std::to_string(g.head_dim));
  require(table.shape[0] == g.batch && lens.shape[0] == g.batch,
          "block_table " + table.to_string() + " and seq_lens " + lens.to_string() +
              " must have one row per sequence (batch=" + std::to_string(g.batch) + ")");
  return g;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    Orchestration& orch, const chiprt::TaskArgs& args) {
  const Geometry g = check_arguments(args);
  const Tensor& q = args.tensor(0);
  const Tensor& key_cache = args.tensor(1);
  const Tensor& value_cache = args.tensor(2);
  const Tensor& out = args.tensor(5);
  const uint64_t scale_bits = args.scalar_bits(0);
  float scale = 0;
  std::memcpy(&scale, &scale_bits, sizeof(scale));
  const int64_t mode = static_cast<int64_t>(args.scalar_bits(1));
  require(mode == proto::kAutoScopes || mode == proto::kManualScopes,
          "scope mode " + std::to_string(mode) + " is neither 0 (automatic) nor 1 (manual)");
  const bool manual = mode == proto::kManualScopes;
  const ScopeMode scope_mode = manual ? ScopeMode::Manual : ScopeMode::Auto;

  // No task writes the table or the lengths, so the reads do not wait (and are allowed on
  // host_build_graph).
  std::vector<int32_t> table(g.batch * g.max_blocks);
  std::vector<int32_t> lens(g.batch);
  orch.get_tensor_data(args.tensor(3), table.data(), table.size() * sizeof(int32_t));
  orch.get_tensor_data(args.tensor(4), lens.data(), lens.size() * sizeof(int32_t));
  if (orch.failed()) return;

  const auto q_rows = static_cast<int64_t>(g.q_rows);
  const auto head_dim = static_cast<int64_t>(g.head_dim);
  for (uint64_t b = 0; b < g.batch; ++b) {
    const int64_t seq_len = lens[b];
    require(seq_len >= 1 && static_cast<uint64_t>(seq_len) <= g.max_blocks * g.block_size,
            "seq_lens[" + std::to_string(b) + "]=" + std::to_string(seq_len) +
                " must be in [1, max_blocks_per_seq * block_size = " +
                std::to_string(g.max_blocks * g.block_size) + "]");
    const uint64_t blocks = (static_cast<uint64_t>(seq_len) + g.block_size - 1) / g.block_size;
    for (uint64_t h = 0; h < g.heads; ++h) {
      if (orch.failed()) return;
      chiprt::Scope head_scope(orch, scope_mode);
      TaskArgs state;
      state.out({g.q_rows}, DataType::F32)
          .out({g.q_rows}, DataType::F32)
          .out({g.q_rows, g.head_dim}, DataType::F32);
      TaskId last_update = orch.allocate(state);
      // After a latched error ids are kNoTask and outputs unallocated: stop before using them.
      if (orch.failed()) return;
      const Tensor running_max = state.output(0);
      const Tensor running_sum = state.output(1);
      const Tensor acc = state.output(2);
      const Tensor q_bh = q.view({1, 1, g.q_rows, g.head_dim}, {b, h, 0, 0});

      for (uint64_t j = 0; j < blocks; ++j) {
        const int32_t physical = table[b * g.max_blocks + j];
        require(physical >= 0 && static_cast<uint64_t>(physical) < g.num_blocks,
                "block_table[" + std::to_string(b) + "][" + std::to_string(j) +
                    "]=" + std::to_string(physical) +
                    " is outside [0, num_blocks=" + std::to_string(g.num_blocks) + ")");
        const uint64_t len = std::min<uint64_t>(g.block_size, seq_len - j * g.block_size);
        const auto len_arg = static_cast<int64_t>(len);
        const auto block = static_cast<uint64_t>(physical);
        chiprt::Scope block_scope(orch, scope_mode);

        TaskArgs qk;
        qk.in(q_bh)
            .in(key_cache.view({1, 1, len, g.head_dim}, {block, h, 0, 0}))
            .out({g.q_rows, len}, DataType::F32)
            .scalar(q_rows)
            .scalar(head_dim)
            .scalar(len_arg)
            .scalar(scale);
        const TaskId qk_id = orch.submit(proto::kQk, CoreType::AIC, qk);
        if (orch.failed()) return;

        TaskArgs softmax;
        softmax.in(qk.output(0))
            .out({g.q_rows, len}, DataType::F32)
            .out({g.q_rows}, DataType::F32)
            .out({g.q_rows}, DataType::F32)
            .scalar(q_rows)
            .scalar(len_arg);
        if (manual) softmax.after(qk_id);
        const TaskId softmax_id = orch.submit(proto::kSoftmax, CoreType::AIV, softmax);
        if (orch.failed()) return;

        TaskArgs pv;
        pv.in(softmax.output(0))
            .in(value_cache.view({1, 1, len, g.head_dim}, {block, h, 0, 0}))
            .out({g.q_rows, g.head_dim}, DataType::F32)
            .scalar(q_rows)
            .scalar(head_dim)
            .scalar(len_arg);
        if (manual) pv.after(softmax_id);
        const TaskId pv_id = orch.submit(proto::kPv, CoreType::AIC, pv);
        if (orch.failed()) return;

        TaskArgs update;
        update.in(pv.output(0))
            .in(softmax.output(1))
            .in(softmax.output(2))
            .inout(running_max)
            .inout(running_sum)
            .inout(acc)
            .scalar(q_rows)
            .scalar(head_dim)
            .scalar(static_cast<int64_t>(j == 0 ? 1 : 0));
        if (manual) update.after(pv_id).after(softmax_id).after(last_update);
        last_update = orch.submit(proto::kOnlineUpdate, CoreType::AIV, update);
        if (orch.failed()) return;
      }

      TaskArgs normalize;
      normalize.in(acc)
          .in(running_sum)
          .output_existing(out.view({1, 1, g.q_rows, g.head_dim}, {b, h, 0, 0}))
          .scalar(q_rows)
          .scalar(head_dim);
      if (manual) normalize.after(last_update);
      orch.submit(proto::kNormalize, CoreType::AIV, normalize);
    }
  }
}
