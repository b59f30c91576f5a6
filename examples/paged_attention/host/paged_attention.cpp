#include "paged_attention/host/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "chiprt/callable.h"
#include "chiprt/tensor.h"
#include "paged_attention/protocol.h"
#include "support.h"

namespace chiprt::examples {
namespace {

namespace proto = paged_attention;

// One object holds the five kernels, each under its own symbol; the container stores it once.
std::vector<uint8_t> build_container() {
  using T = ArgTag;
  const std::vector<uint8_t> kernels = read_chip_object("paged_attention_kernels");
  CallableBuilder builder;
  builder
      .orchestration_object(
          read_chip_object("paged_attention_orchestration"),
          ArgSignature::of({T::In, T::In, T::In, T::In, T::In, T::OutputExisting}, 2))
      .kernel_object(proto::kQk, CoreType::AIC, kernels,
                     ArgSignature::of({T::In, T::In, T::Out}, 4), "paged_attention_qk", "qk")
      .kernel_object(proto::kSoftmax, CoreType::AIV, kernels,
                     ArgSignature::of({T::In, T::Out, T::Out, T::Out}, 2),
                     "paged_attention_softmax", "softmax")
      .kernel_object(proto::kPv, CoreType::AIC, kernels,
                     ArgSignature::of({T::In, T::In, T::Out}, 3), "paged_attention_pv", "pv")
      .kernel_object(proto::kOnlineUpdate, CoreType::AIV, kernels,
                     ArgSignature::of({T::In, T::In, T::In, T::InOut, T::InOut, T::InOut}, 3),
                     "paged_attention_online_update", "online_update")
      .kernel_object(proto::kNormalize, CoreType::AIV, kernels,
                     ArgSignature::of({T::In, T::In, T::OutputExisting}, 2),
                     "paged_attention_normalize", "normalize");
  return builder.build();
}

struct Shape {
  uint64_t batch, heads, q_rows, head_dim, block_size, max_seq_len;
  uint64_t max_blocks() const { return (max_seq_len + block_size - 1) / block_size; }
};

// Ragged lengths: sequence b is shorter than the longest by a stride that is not a multiple of
// the block size, so last blocks are partly used; every sequence keeps at least one key.
std::vector<int32_t> sequence_lengths(const Shape& s) {
  std::vector<int32_t> lens(s.batch);
  for (uint64_t b = 0; b < s.batch; ++b) {
    const uint64_t shorter = (b * (s.block_size + 3)) % s.max_seq_len;
    lens[b] = static_cast<int32_t>(std::max<uint64_t>(1, s.max_seq_len - shorter));
  }
  return lens;
}

// softmax(q k^T * scale) v per (b, h) in double, reading the caches through the block table.
std::vector<double> reference_attention(const Shape& s, const std::vector<float>& q,
                                        const std::vector<float>& key_cache,
                                        const std::vector<float>& value_cache,
                                        const std::vector<int32_t>& table,
                                        const std::vector<int32_t>& lens, double scale) {
  const uint64_t d = s.head_dim;
  std::vector<double> out(s.batch * s.heads * s.q_rows * d, 0.0);
  auto cache_row = [&](const std::vector<float>& cache, uint64_t b, uint64_t h, uint64_t pos) {
    const auto block = static_cast<uint64_t>(table[b * s.max_blocks() + pos / s.block_size]);
    return &cache[((block * s.heads + h) * s.block_size + pos % s.block_size) * d];
  };
  std::vector<double> scores;
  for (uint64_t b = 0; b < s.batch; ++b) {
    const auto len = static_cast<uint64_t>(lens[b]);
    scores.assign(len, 0.0);
    for (uint64_t h = 0; h < s.heads; ++h) {
      for (uint64_t r = 0; r < s.q_rows; ++r) {
        const float* q_row = &q[((b * s.heads + h) * s.q_rows + r) * d];
        double max = -INFINITY;
        for (uint64_t pos = 0; pos < len; ++pos) {
          const float* k_row = cache_row(key_cache, b, h, pos);
          double dot = 0;
          for (uint64_t x = 0; x < d; ++x) dot += static_cast<double>(q_row[x]) * k_row[x];
          scores[pos] = dot * scale;
          max = std::max(max, scores[pos]);
        }
        double sum = 0;
        for (double& score : scores) {
          score = std::exp(score - max);
          sum += score;
        }
        double* out_row = &out[((b * s.heads + h) * s.q_rows + r) * d];
        for (uint64_t pos = 0; pos < len; ++pos) {
          const float* v_row = cache_row(value_cache, b, h, pos);
          const double weight = scores[pos] / sum;
          for (uint64_t x = 0; x < d; ++x) out_row[x] += weight * v_row[x];
        }
      }
    }
  }
  return out;
}

// The case's ring sizes (tiny rings exercise back-pressure) apply unless the caller chose its own.
CallConfig case_config(const ExampleCase& example_case, const CallConfig& config) {
  CallConfig resolved = config;
  const auto window = static_cast<uint64_t>(example_case.param("ring_window"));
  const auto heap = static_cast<uint64_t>(example_case.param("ring_heap"));
  const auto dep_pool = static_cast<uint64_t>(example_case.param("ring_dep_pool"));
  if (window != 0 && resolved.rings.task_window.empty()) resolved.rings.task_window = {window};
  if (heap != 0 && resolved.rings.heap_bytes.empty()) resolved.rings.heap_bytes = {heap};
  if (dep_pool != 0 && resolved.rings.dep_pool.empty()) resolved.rings.dep_pool = {dep_pool};
  return resolved;
}

Outcome run_paged_attention(Worker& worker, const ExampleCase& example_case,
                            const CallConfig& config, const Executor& executor) {
  const auto param = [&](const char* key) {
    return static_cast<uint64_t>(example_case.param(key));
  };
  const Shape s{param("batch"),    param("heads"),      param("q_rows"),
                param("head_dim"), param("block_size"), param("max_seq_len")};
  const int64_t scope_mode =
      example_case.param("manual") != 0 ? proto::kManualScopes : proto::kAutoScopes;
  const std::vector<int32_t> lens = sequence_lengths(s);

  // Physical blocks: every sequence's blocks, shuffled, plus spares nobody uses, so logical
  // neighbours are rarely physical neighbours.
  uint64_t used_blocks = 0;
  for (int32_t len : lens)
    used_blocks += (static_cast<uint64_t>(len) + s.block_size - 1) / s.block_size;
  const uint64_t num_blocks = used_blocks + s.batch;
  std::mt19937 rng(2024);
  std::vector<int32_t> physical(num_blocks);
  std::iota(physical.begin(), physical.end(), 0);
  std::shuffle(physical.begin(), physical.end(), rng);
  // Unused table entries point at a block that exists, so a wrong length would read real data
  // and be caught by the comparison rather than fault.
  std::vector<int32_t> table(s.batch * s.max_blocks(), physical.back());
  uint64_t next = 0;
  for (uint64_t b = 0; b < s.batch; ++b) {
    const uint64_t blocks = (static_cast<uint64_t>(lens[b]) + s.block_size - 1) / s.block_size;
    for (uint64_t j = 0; j < blocks; ++j) table[b * s.max_blocks() + j] = physical[next++];
  }

  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  auto random_values = [&](uint64_t n) {
    std::vector<float> values(n);
    for (float& x : values) x = dist(rng);
    return values;
  };
  const uint64_t qo_elements = s.batch * s.heads * s.q_rows * s.head_dim;
  const uint64_t cache_elements = num_blocks * s.heads * s.block_size * s.head_dim;
  const std::vector<float> q = random_values(qo_elements);
  const std::vector<float> key_cache = random_values(cache_elements);
  const std::vector<float> value_cache = random_values(cache_elements);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  const std::vector<double> want =
      reference_attention(s, q, key_cache, value_cache, table, lens, scale);
  // Outputs are convex combinations of values in [-1, 1], so errors stay near float epsilon
  // (about 3e-8 measured); the bound grows with the dot-product length and the keys averaged, and
  // a wrong, missing or repeated block moves outputs by orders of magnitude more.
  const double tolerance = 1e-8 * static_cast<double>(s.head_dim + s.max_seq_len) + 1e-6;

  DeviceAllocation dev_q(worker, qo_elements * sizeof(float));
  DeviceAllocation dev_k(worker, cache_elements * sizeof(float));
  DeviceAllocation dev_v(worker, cache_elements * sizeof(float));
  DeviceAllocation dev_table(worker, table.size() * sizeof(int32_t));
  DeviceAllocation dev_lens(worker, lens.size() * sizeof(int32_t));
  DeviceAllocation dev_out(worker, qo_elements * sizeof(float));
  worker.copy_to(dev_q.buffer(), q.data(), q.size() * sizeof(float));
  worker.copy_to(dev_k.buffer(), key_cache.data(), key_cache.size() * sizeof(float));
  worker.copy_to(dev_v.buffer(), value_cache.data(), value_cache.size() * sizeof(float));
  worker.copy_to(dev_table.buffer(), table.data(), table.size() * sizeof(int32_t));
  worker.copy_to(dev_lens.buffer(), lens.data(), lens.size() * sizeof(int32_t));
  // NaN bit patterns: an output no task wrote fails the comparison.
  worker.memset(dev_out.buffer(), 0xff, qo_elements * sizeof(float));

  const CallConfig resolved = case_config(example_case, config);
  const std::vector<uint8_t> container = build_container();
  RegisteredCallable callable(worker, container);
  const uint64_t nb = num_blocks, hd = s.head_dim;
  TaskArgs args;
  args.in(Tensor::make(dev_q.buffer(), {s.batch, s.heads, s.q_rows, hd}, DataType::F32))
      .in(Tensor::make(dev_k.buffer(), {nb, s.heads, s.block_size, hd}, DataType::F32))
      .in(Tensor::make(dev_v.buffer(), {nb, s.heads, s.block_size, hd}, DataType::F32))
      .in(Tensor::make(dev_table.buffer(), {s.batch, s.max_blocks()}, DataType::I32))
      .in(Tensor::make(dev_lens.buffer(), {s.batch}, DataType::I32))
      .output_existing(
          Tensor::make(dev_out.buffer(), {s.batch, s.heads, s.q_rows, hd}, DataType::F32))
      .scalar(scale)
      .scalar(scope_mode);
  const RunReport report = executor(worker, callable.id(), args, resolved);

  std::vector<float> got(qo_elements);
  worker.copy_from(got.data(), dev_out.buffer(), got.size() * sizeof(float));
  callable.release();
  dev_out.release();
  dev_lens.release();
  dev_table.release();
  dev_v.release();
  dev_k.release();
  dev_q.release();
  uint64_t kernel_tasks = 0;
  for (int32_t len : lens) {
    const uint64_t blocks = (static_cast<uint64_t>(len) + s.block_size - 1) / s.block_size;
    kernel_tasks += s.heads * (blocks * proto::kTasksPerBlock + proto::kTasksPerHead);
  }
  return make_outcome(compare_results(got, want, tolerance, s.head_dim), tolerance, report,
                      kernel_tasks);
}

std::vector<CaseParam> case_params(uint64_t batch, uint64_t heads, uint64_t q_rows,
                                   uint64_t head_dim, uint64_t block_size, uint64_t max_seq_len,
                                   bool manual = false, bool tiny_rings = false) {
  const auto v = [](uint64_t x) { return static_cast<int64_t>(x); };
  return {{"batch", v(batch)},
          {"heads", v(heads)},
          {"q_rows", v(q_rows)},
          {"head_dim", v(head_dim)},
          {"block_size", v(block_size)},
          {"max_seq_len", v(max_seq_len)},
          {"manual", manual ? 1 : 0},
          // 0 = the caller's CallConfig, else the environment or the defaults.
          {"ring_window", tiny_rings ? 64 : 0},
          {"ring_heap", tiny_rings ? 8192 : 0},
          {"ring_dep_pool", tiny_rings ? 64 : 0}};
}

}  // namespace

Example make_paged_attention_example() {
  Example example;
  example.name = "paged_attention";
  example.description =
      "attention over a paged KV cache: per block QK (AIC), softmax (AIV), PV (AIC), online "
      "update (AIV) in nested scopes, non-contiguous blocks via a block table";
  example.cases = {
      {"small", case_params(2, 2, 2, 16, 8, 37)},
      {"medium", case_params(4, 4, 4, 32, 16, 100)},
      {"large", case_params(8, 8, 4, 64, 16, 300), true},
      // `chiprt bench`'s paged_attention row: 32 query rows, head_dim 128 and 128-token blocks
      // make the QK and PV kernels about a hundred microseconds each (softmax and update tens),
      // so kernels dominate the runtime's per-task cost; 16 (sequence, head) pairs run in
      // parallel, each a chain of 5-8 block updates.
      {"bench", case_params(4, 4, 32, 128, 128, 1024), true},
      // Window 64, 8 KiB heaps and 64 dependency entries per depth (tensormap_ringbuffer;
      // host_build_graph has no rings). The 52 block scopes submit 208 tasks and 57 KiB of
      // intermediates at depth 2, so the orchestrator can only finish by waiting for retirement
      // and reusing slots and heap many times; one block scope (4 tasks, 1152 bytes) always fits.
      {"tiny_rings", case_params(3, 2, 4, 32, 16, 150, false, true)},
      // Manual scopes: no tensor-map tracking, only explicit TaskArgs::after dependencies.
      {"manual", case_params(3, 2, 4, 32, 16, 70, true)},
      {"manual_tiny_rings", case_params(3, 2, 4, 32, 16, 150, true, true)},
  };
  example.runner = run_paged_attention;
  return example;
}

}  // namespace chiprt::examples
