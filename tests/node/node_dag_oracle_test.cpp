// The random node-DAG oracle: random graphs of chip runs and host tasks over strided 2-D views of
// buffers homed on different chips and the host, with explicit and automatic placement, on 1, 2
// and 4 chips, against the same operations executed one after the other on the host. Every byte
// of every buffer must match exactly (the same float operations in the same order).
//
// Seeds: CHIPRT_STRESS_SEEDS (default 5000; scripts/test.sh lowers it under sanitizers) or
// CHIPRT_STRESS_ONLY_SEED=N to reproduce one; the chip count and whether chips are isolated
// follow from the seed (every 50th seed runs on isolated chips).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "chiprt/node.h"
#include "node_test_support.h"
#include "stress/stress_seeds.h"

namespace chiprt::node {
namespace {

constexpr uint64_t kRows = 8;
constexpr uint64_t kCols = 16;
constexpr uint64_t kElems = kRows * kCols;
constexpr int kBuffers = 4;
constexpr int32_t kViewCallable = 11;
constexpr int32_t kViewFunc = 0;

// out (view) = [out +] in (view) + f, element by element in row-major order; scalar 1 says whether
// out is read too (an inout argument).
template <class In, class Out>
void apply(In&& in, Out&& out, uint64_t rows, uint64_t cols, float f, bool accumulate) {
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      float& o = out(r, c);
      o = (accumulate ? o : 0.0f) + in(r, c) + f;
    }
  }
}

void view_kernel(int64_t* args) {
  const kernel::TensorView& in = kernel::view(args, 0);
  const kernel::TensorView& out = kernel::view(args, 1);
  const auto f = kernel::scalar_arg<float>(args, 2);
  const bool accumulate = kernel::scalar_arg<int64_t>(args, 3) != 0;
  apply([&](uint64_t r, uint64_t c) -> float& { return *in.element<float>(r, c); },
        [&](uint64_t r, uint64_t c) -> float& { return *out.element<float>(r, c); }, in.shape(0),
        in.shape(1), f, accumulate);
}

void view_orchestration(Orchestration& o, const TaskArgs& run) {
  TaskArgs task;
  task.in(run.tensor(0)).add(run.tag(1), run.tensor(1));
  task.add_scalar_bits(run.scalar_bits(0)).add_scalar_bits(run.scalar_bits(1));
  o.submit(kViewFunc, CoreType::AIV, task);
}

std::vector<uint8_t> view_callable() {
  CallableBuilder builder;
  builder.orchestration_function(&view_orchestration, {})
      .kernel_function(kViewFunc, CoreType::AIV, &view_kernel, {});
  return builder.build();
}

// One operation of a graph: where its views lie and what it does.
struct Op {
  int in_buffer, out_buffer;
  uint64_t rows, cols;
  uint64_t in_r0, in_c0, in_step, out_r0, out_c0, out_step;  // column step of each view
  bool accumulate;                                           // inout, else output_existing
  float f;
  bool host;  // a host task
  bool any_chip;
  uint32_t chip;
};

Op random_op(std::mt19937_64& rng, uint32_t chips) {
  Op op{};
  op.in_buffer = static_cast<int>(rng() % kBuffers);
  do {
    op.out_buffer = static_cast<int>(rng() % kBuffers);
  } while (op.out_buffer == op.in_buffer);
  op.rows = 1 + rng() % kRows;
  op.in_step = 1 + rng() % 2;
  op.out_step = 1 + rng() % 2;
  const uint64_t max_cols = (kCols - 1) / std::max(op.in_step, op.out_step) + 1;
  op.cols = 1 + rng() % max_cols;
  op.in_r0 = rng() % (kRows - op.rows + 1);
  op.out_r0 = rng() % (kRows - op.rows + 1);
  op.in_c0 = rng() % (kCols - (op.cols - 1) * op.in_step);
  op.out_c0 = rng() % (kCols - (op.cols - 1) * op.out_step);
  op.accumulate = rng() % 2 == 0;
  op.f = static_cast<float>(rng() % 100) * 0.25f;
  op.host = rng() % 5 == 0;
  op.any_chip = rng() % 2 == 0;
  op.chip = static_cast<uint32_t>(rng() % chips);
  return op;
}

Tensor view_of(const NodeBuffer& b, uint64_t r0, uint64_t c0, uint64_t rows, uint64_t cols,
               uint64_t step) {
  const Tensor whole = b.tensor({kRows, kCols}, DataType::F32);
  return whole.view({rows, kCols - c0}, {r0, c0}).slice(1, 0, (cols - 1) * step + 1, step);
}

// The reference: one op on host arrays.
void reference(std::array<std::vector<float>, kBuffers>& data, const Op& op) {
  auto at = [&](int b, uint64_t r0, uint64_t c0, uint64_t step) {
    return [&data, b, r0, c0, step](uint64_t r, uint64_t c) -> float& {
      return data[b][(r0 + r) * kCols + c0 + c * step];
    };
  };
  apply(at(op.in_buffer, op.in_r0, op.in_c0, op.in_step),
        at(op.out_buffer, op.out_r0, op.out_c0, op.out_step), op.rows, op.cols, op.f,
        op.accumulate);
}

// A host task: the same op through HostTask pointers and the views' strides.
void host_op(const HostTask& task) {
  const Tensor& in = task.tensor(0);
  const Tensor& out = task.tensor(1);
  const float* in_data = task.data<const float>(0);
  float* out_data = task.data<float>(1);
  apply(
      [&](uint64_t r, uint64_t c) -> float& {
        return const_cast<float&>(in_data[r * in.strides[0] + c * in.strides[1]]);
      },
      [&](uint64_t r, uint64_t c) -> float& {
        return out_data[r * out.strides[0] + c * out.strides[1]];
      },
      in.shape[0], in.shape[1], task.scalar<float>(0), task.scalar<int64_t>(1) != 0);
}

class Oracle {
 public:
  Oracle(uint32_t chips, bool in_process) {
    NodeOptions options;
    options.chips = chips;
    options.in_process = in_process;
    options.sim.clusters = 1;
    options.sim.memory_bytes = 256ull << 20;
    node_.init(options);
    node_.register_callable(kViewCallable, view_callable());
  }

  void run_seed(uint64_t seed) {
    std::mt19937_64 rng(seed);
    const uint32_t chips = node_.chips();
    std::array<NodeBuffer, kBuffers> buffers;
    std::array<std::vector<float>, kBuffers> expected;
    for (int b = 0; b < kBuffers; ++b) {
      const uint32_t home = rng() % (chips + 1);
      buffers[b] = node_.malloc(kElems * 4, home == chips ? kHostHome : home);
      expected[b].resize(kElems);
      for (uint64_t i = 0; i < kElems; ++i)
        expected[b][i] = static_cast<float>((seed + i * b) % 13);
      node_.copy_to(buffers[b], expected[b].data(), kElems * 4);
    }
    const int ops = 2 + static_cast<int>(rng() % 10);
    std::vector<Op> graph;
    for (int i = 0; i < ops; ++i) graph.push_back(random_op(rng, chips));
    node_.run([&](NodeOrchestration& orch, const TaskArgs&) {
      for (const Op& op : graph) {
        TaskArgs args;
        args.in(view_of(buffers[op.in_buffer], op.in_r0, op.in_c0, op.rows, op.cols, op.in_step));
        const Tensor out =
            view_of(buffers[op.out_buffer], op.out_r0, op.out_c0, op.rows, op.cols, op.out_step);
        op.accumulate ? args.inout(out) : args.output_existing(out);
        args.scalar(op.f).scalar(static_cast<int64_t>(op.accumulate ? 1 : 0));
        if (op.host) {
          orch.submit_host(host_op, args);
        } else {
          orch.submit(kViewCallable, args, op.any_chip ? any_chip() : on_chip(op.chip));
        }
      }
    });
    for (const Op& op : graph) reference(expected, op);
    for (int b = 0; b < kBuffers; ++b) {
      std::vector<float> got(kElems);
      node_.copy_from(got.data(), buffers[b], kElems * 4);
      ASSERT_EQ(std::memcmp(got.data(), expected[b].data(), kElems * 4), 0)
          << "seed " << seed << " (" << chips << " chip(s)): buffer " << b
          << " differs from the sequential host execution";
      node_.free(buffers[b]);
    }
  }

 private:
  Node node_;
};

TEST(NodeDagOracle, RandomGraphsMatchTheSequentialHostExecution) {
  std::map<std::pair<uint32_t, bool>, std::unique_ptr<Oracle>> nodes;  // one node per kind
  for (uint64_t seed : stress::stress_seeds(5000)) {
    const uint32_t chips = std::array<uint32_t, 3>{1, 2, 4}[seed % 3];
    const bool in_process = seed % 50 != 0;
    auto& oracle = nodes[{chips, in_process}];
    if (!oracle) oracle = std::make_unique<Oracle>(chips, in_process);
    oracle->run_seed(seed);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace chiprt::node
