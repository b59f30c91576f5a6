// Tests of the real-kernel rows' peer execution (tools/perf/kernel_graph.h): a hand-built
// GraphExport whose kernels are host functions runs on a serial reference runner and on every peer
// runtime built into chiprt_perf; each kernel call must see its producers' results, get its block
// context, and dummy and predicated tasks must behave as on the chip. Times are never checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "chiprt/graph_export.h"
#include "chiprt/status.h"
#include "kernel_graph.h"
#include "runners.h"

namespace chiprt::perf {
namespace {

constexpr int64_t kModulus = 1'000'000'007;

// Kernel arguments: [values, block_masks, block_nums, self, n, reads[n]...], all passed as
// scalars; block_idx and block_num come from the task context (chiprt/kernel.h). Block 0 writes
// values[self] = (self + 1 + 31 * sum of values[reads]) mod kModulus; every block sets its bit in
// block_masks[self] and records block_num.
void accumulate_kernel(int64_t* args) {
  auto* values = reinterpret_cast<int64_t*>(args[0]);
  auto* masks = reinterpret_cast<uint64_t*>(args[1]);
  auto* block_nums = reinterpret_cast<int64_t*>(args[2]);
  const int64_t self = args[3];
  const int64_t n = args[4];
  const int64_t block_idx = kernel::block_idx(args);
  const int64_t block_num = kernel::block_num(args);
  if (kernel::tensor_count(args) != 0 || kernel::scalar_count(args) != 5 + n) {
    throw std::runtime_error("the task context does not describe the arguments");
  }
  // Some work, so that the measured kernel CPU time is not all clock granularity.
  volatile uint64_t spin = 0;
  for (int i = 0; i < 2000; ++i) spin = spin + static_cast<uint64_t>(i);
  if (block_idx == 0) {
    int64_t sum = 0;
    for (int64_t r = 0; r < n; ++r) sum += values[args[5 + r]];
    values[self] = (self + 1 + 31 * sum) % kModulus;
  }
  std::atomic_ref<uint64_t>(masks[self]).fetch_or(uint64_t{1} << block_idx);
  std::atomic_ref<int64_t>(block_nums[self]).store(block_num);
}

// [flag, values, self]: sets the flag a later predicated task reads, and values[self] = 7.
void set_flag_kernel(int64_t* args) {
  *reinterpret_cast<uint8_t*>(args[0]) = 1;
  reinterpret_cast<int64_t*>(args[1])[args[2]] = 7;
}

void throwing_kernel(int64_t* /*args*/) {
  throw std::runtime_error("kernel failure");
}

uint64_t addr(void (*kernel)(int64_t*)) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(kernel));
}

// Builds a GraphExport and the results the chip would compute for it.
class TestGraph {
 public:
  explicit TestGraph(std::size_t capacity)
      : values_(capacity), masks_(capacity), block_nums_(capacity), flags_(capacity) {}

  // A task running accumulate_kernel over `reads`, waiting for `producers`.
  uint32_t kernel(const std::vector<uint32_t>& producers, const std::vector<uint32_t>& reads,
                  uint32_t block_num = 1) {
    ExportedTask task;
    task.func_id = 1;
    task.block_num = block_num;
    task.kernel_addr = addr(accumulate_kernel);
    const auto self = static_cast<uint32_t>(graph_.tasks.size());
    std::vector<int64_t> args = {ptr(values_.data()), ptr(masks_.data()), ptr(block_nums_.data()),
                                 self, static_cast<int64_t>(reads.size())};
    for (const uint32_t r : reads) args.push_back(r);
    push_args(task, args);
    return add(task, producers, Expect::Accumulate, reads);
  }
  uint32_t kernel(const std::vector<uint32_t>& producers) { return kernel(producers, producers); }

  uint32_t dummy(const std::vector<uint32_t>& producers) {
    ExportedTask task;
    task.dummy = true;
    return add(task, producers, Expect::Nothing, {});
  }

  uint32_t set_flag(const std::vector<uint32_t>& producers) {
    ExportedTask task;
    task.func_id = 2;
    task.kernel_addr = addr(set_flag_kernel);
    const auto self = static_cast<uint32_t>(graph_.tasks.size());
    push_args(task, {ptr(flags_.data() + self), ptr(values_.data()), self});
    return add(task, producers, Expect::SetFlag, {});
  }

  // accumulate_kernel over `producers`, predicated on the flag of task `flag_of` (a set_flag
  // task: runs; any other: its flag stays 0, skipped).
  uint32_t predicated(const std::vector<uint32_t>& producers, uint32_t flag_of) {
    const uint32_t self = kernel(producers);
    ExportedTask& task = graph_.tasks[self];
    task.predicated = true;
    task.predicate_bytes = 1;
    task.predicate_addr = ptr(flags_.data() + flag_of);
    expect_[self] = expect_[flag_of] == Expect::SetFlag ? Expect::Accumulate : Expect::Skipped;
    return self;
  }

  // Consumer lists from the producer lists; call once, after the last task.
  GraphExport& finish() {
    std::vector<std::vector<uint32_t>> consumers(graph_.tasks.size());
    for (uint32_t t = 0; t < producers_.size(); ++t) {
      for (const uint32_t p : producers_[t]) consumers[p].push_back(t);
    }
    for (uint32_t t = 0; t < graph_.tasks.size(); ++t) {
      ExportedTask& task = graph_.tasks[t];
      task.consumers_begin = graph_.consumers.size();
      task.consumer_count = static_cast<uint32_t>(consumers[t].size());
      task.producer_count = static_cast<uint32_t>(producers_[t].size());
      graph_.consumers.insert(graph_.consumers.end(), consumers[t].begin(), consumers[t].end());
    }
    return graph_;
  }

  GraphExport& graph() { return graph_; }

  void reset() {
    std::fill(values_.begin(), values_.end(), 0);
    std::fill(masks_.begin(), masks_.end(), 0);
    std::fill(block_nums_.begin(), block_nums_.end(), 0);
    std::fill(flags_.begin(), flags_.end(), 0);
  }

  uint64_t expected_kernel_calls() const {
    uint64_t calls = 0;
    for (uint32_t t = 0; t < expect_.size(); ++t) {
      if (expect_[t] == Expect::Accumulate || expect_[t] == Expect::SetFlag) {
        calls += graph_.tasks[t].block_num;
      }
    }
    return calls;
  }

  // Compares every task's effects with a serial execution in submission order.
  void expect_results(const std::string& where) const {
    std::vector<int64_t> want(expect_.size(), 0);
    for (uint32_t t = 0; t < expect_.size(); ++t) {
      const ExportedTask& task = graph_.tasks[t];
      switch (expect_[t]) {
        case Expect::Accumulate: {
          int64_t sum = 0;
          for (const uint32_t r : reads_[t]) sum += want[r];
          want[t] = (t + 1 + 31 * sum) % kModulus;
          EXPECT_EQ(masks_[t], (uint64_t{1} << task.block_num) - 1) << where << ": task " << t;
          EXPECT_EQ(block_nums_[t], task.block_num) << where << ": task " << t;
          break;
        }
        case Expect::SetFlag:
          want[t] = 7;
          break;
        case Expect::Nothing:
        case Expect::Skipped:
          EXPECT_EQ(masks_[t], 0u) << where << ": task " << t << " must not run a kernel";
          break;
      }
      EXPECT_EQ(values_[t], want[t]) << where << ": task " << t;
    }
  }

 private:
  enum class Expect : uint8_t { Accumulate, SetFlag, Nothing, Skipped };

  template <typename T>
  static int64_t ptr(T* p) {
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p));
  }

  // The task's argument block as Worker::export_graph lays it out: its context (no tensors, so no
  // views), then the arguments.
  void push_args(ExportedTask& task, const std::vector<int64_t>& args) {
    kernel::TaskContext context{};
    context.block_num = task.block_num;
    context.scalar_count = static_cast<uint16_t>(args.size());
    const std::size_t at = graph_.args.size();
    graph_.args.resize(at + kernel::kTaskContextWords);
    std::memcpy(graph_.args.data() + at, &context, sizeof(context));
    task.args_begin = graph_.args.size();
    graph_.args.insert(graph_.args.end(), args.begin(), args.end());
    task.arg_count = static_cast<uint32_t>(args.size());
  }

  uint32_t add(const ExportedTask& task, const std::vector<uint32_t>& producers, Expect expect,
               const std::vector<uint32_t>& reads) {
    graph_.tasks.push_back(task);
    producers_.push_back(producers);
    reads_.push_back(reads);
    expect_.push_back(expect);
    return static_cast<uint32_t>(graph_.tasks.size() - 1);
  }

  GraphExport graph_;
  std::vector<std::vector<uint32_t>> producers_;
  std::vector<std::vector<uint32_t>> reads_;
  std::vector<Expect> expect_;
  std::vector<int64_t> values_;
  std::vector<uint64_t> masks_;
  std::vector<int64_t> block_nums_;
  std::vector<uint8_t> flags_;
};

// A small graph with each kind of task: a diamond, a dependency through a dummy task (the
// consumer reads a value it gets no edge from), SPMD blocks, a predicate set by a producer
// kernel at run time (runs) and one that stays zero (skipped, its consumer still runs).
void build_feature_graph(TestGraph& t) {
  const uint32_t a = t.kernel({});
  const uint32_t b = t.kernel({a});
  const uint32_t c = t.kernel({a}, {a}, 3);
  const uint32_t d = t.kernel({b, c});
  const uint32_t fence = t.dummy({d});
  t.kernel({fence}, {d, a});
  const uint32_t setter = t.set_flag({d});
  const uint32_t runs = t.predicated({setter}, setter);
  const uint32_t skipped = t.predicated({runs}, a);
  t.kernel({skipped, runs}, {skipped, runs}, 2);
  t.finish();
}

// A random DAG of `tasks` tasks (fixed seed): 1-4 producers among the previous 40, every 9th task
// a dummy, every 7th task 3 blocks, a flag setter and its predicated consumer every 50 tasks.
void build_random_graph(TestGraph& t, uint32_t tasks) {
  std::mt19937 rng(12345);
  for (uint32_t i = 0; i < tasks; ++i) {
    std::vector<uint32_t> producers;
    if (i > 0) {
      const uint32_t fan_in = std::uniform_int_distribution<uint32_t>(1, 4)(rng);
      const uint32_t lo = i > 40 ? i - 40 : 0;
      for (uint32_t k = 0; k < fan_in; ++k) {
        producers.push_back(std::uniform_int_distribution<uint32_t>(lo, i - 1)(rng));
      }
      std::sort(producers.begin(), producers.end());
      producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
    }
    if (i % 50 == 49 && i + 1 < tasks) {
      const uint32_t setter = t.set_flag(producers);
      t.predicated({setter}, setter);
      ++i;
    } else if (i % 9 == 8) {
      t.dummy(producers);
    } else {
      t.kernel(producers, producers, i % 7 == 6 ? 3 : 1);
    }
  }
  t.finish();
}

// Runs tasks in submission order on the calling thread: the reference DagRunner.
class SerialDagRunner final : public DagRunner {
 public:
  RunResult run(const Workload& workload) override { return {workload.tasks, 0}; }
  uint64_t run_dag(const TaskDag& dag) override {
    for (uint64_t i = 0; i < dag.tasks; ++i) dag.run(i);
    return 1;
  }
};

TEST(KernelDag, SerialRunnerComputesTheChipsResults) {
  TestGraph t(16);
  build_feature_graph(t);
  SerialDagRunner runner;
  t.reset();
  const RunReport report = run_graph_export(runner, t.graph());
  t.expect_results("serial");
  EXPECT_EQ(report.task_count, t.graph().tasks.size());
  EXPECT_TRUE(report.kernel_time_measured);
  EXPECT_GT(report.kernel_ns, 0u);

  KernelDag kernel_dag(t.graph());
  t.reset();
  runner.run_dag(kernel_dag.dag());
  EXPECT_EQ(kernel_dag.kernel_calls(), t.expected_kernel_calls());
  EXPECT_EQ(kernel_dag.skipped_tasks(), 1u);
}

// A skipped task's runtime outputs read as zeros on the chip: the executor zero-fills the
// exported skip-fill range (and nothing else) before the consumers run.
TEST(KernelDag, ASkippedTaskZeroFillsItsSkipFillRange) {
  TestGraph t(4);
  const uint32_t skipped = t.predicated({}, 0);  // its own flag, never set: skipped
  t.finish();
  alignas(64) std::array<uint8_t, 192> outputs;
  outputs.fill(0xAB);
  ExportedTask& task = t.graph().tasks[skipped];
  task.skip_fill_addr = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(outputs.data()));
  task.skip_fill_bytes = 128;
  KernelDag kernel_dag(t.graph());
  t.reset();
  SerialDagRunner runner;
  runner.run_dag(kernel_dag.dag());
  EXPECT_EQ(kernel_dag.skipped_tasks(), 1u);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    EXPECT_EQ(outputs[i], i < 128 ? 0 : 0xAB) << i;
  }
}

TEST(KernelDag, PredecessorListsInvertTheConsumers) {
  TestGraph t(8);
  const uint32_t a = t.kernel({});
  const uint32_t b = t.kernel({a});
  t.kernel({a, b});
  t.finish();
  KernelDag kernel_dag(t.graph());
  const TaskDag dag = kernel_dag.dag();
  ASSERT_EQ(dag.tasks, 3u);
  EXPECT_TRUE(dag.predecessors(0).empty());
  EXPECT_EQ(std::vector<uint64_t>(dag.predecessors(1).begin(), dag.predecessors(1).end()),
            (std::vector<uint64_t>{0}));
  EXPECT_EQ(std::vector<uint64_t>(dag.predecessors(2).begin(), dag.predecessors(2).end()),
            (std::vector<uint64_t>{0, 1}));
}

StatusCode code_of_rejection(GraphExport& graph) {
  try {
    KernelDag kernel_dag(graph);
  } catch (const Error& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
    return e.code();
  }
  return StatusCode::Ok;
}

TEST(KernelDag, RejectsGraphsAPeerCannotRunFaithfully) {
  {
    TestGraph t(4);
    t.kernel({});
    t.finish().tasks[0].core_type = CoreType::MIX;
    EXPECT_EQ(code_of_rejection(t.graph()), StatusCode::UnsupportedFeature);
  }
  {
    TestGraph t(4);
    t.kernel({});
    t.finish().tasks[0].kernel_addr = 0;
    EXPECT_EQ(code_of_rejection(t.graph()), StatusCode::UnknownFuncId);
  }
  {
    TestGraph t(4);
    t.kernel({});
    t.kernel({0});
    t.finish().consumers[0] = 0;  // task 0 consuming itself
    EXPECT_EQ(code_of_rejection(t.graph()), StatusCode::InvalidArgument);
  }
  {
    TestGraph t(4);
    t.predicated({}, 0);
    t.finish().tasks[0].predicate_bytes = 3;
    EXPECT_EQ(code_of_rejection(t.graph()), StatusCode::InvalidArgument);
  }
  {
    TestGraph t(4);
    t.kernel({});
    t.finish().tasks[0].arg_count = 40;
    EXPECT_EQ(code_of_rejection(t.graph()), StatusCode::InvalidArgument);
  }
  {
    TestGraph t(4);
    t.kernel({});
    t.finish().tasks[0].args_begin = 1;  // no room for the task context before the arguments
    EXPECT_EQ(code_of_rejection(t.graph()), StatusCode::InvalidArgument);
  }
  {
    TestGraph t(4);
    t.kernel({});
    t.finish().tasks[0].tensor_count = 2;  // two views past the graph's arguments
    EXPECT_EQ(code_of_rejection(t.graph()), StatusCode::InvalidArgument);
  }
}

TEST(KernelDag, AThrowingKernelIsAKernelFault) {
  TestGraph t(4);
  t.kernel({});
  t.kernel({0});
  t.finish().tasks[0].kernel_addr = addr(throwing_kernel);
  SerialDagRunner runner;
  t.reset();
  try {
    run_graph_export(runner, t.graph());
    ADD_FAILURE() << "no error for a throwing kernel";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::KernelFault);
    EXPECT_NE(std::string(e.what()).find("task 0"), std::string::npos) << e.what();
  }
}

// Every in-process peer built into chiprt_perf, on 2 threads; the libomp peer (a child process)
// must say why it does not run the real-kernel rows.
TEST(PeerKernelDag, EveryPeerComputesTheChipsResults) {
  std::vector<RunnerColumn> columns = make_runners({2, 1, true, false});
  int peers_run = 0;
  for (RunnerColumn& column : columns) {
    if (!column.available()) continue;
    if (!column.kernel_rows_note.empty()) continue;
    SCOPED_TRACE(column.id);
    std::unique_ptr<Runner> started = column.start(2);
    auto* peer = dynamic_cast<DagRunner*>(started.get());
    ASSERT_NE(peer, nullptr) << column.id << " runs in process but is not a DagRunner";
    {
      TestGraph t(16);
      build_feature_graph(t);
      t.reset();
      const RunReport report = run_graph_export(*peer, t.graph());
      t.expect_results(column.id + " features");
      EXPECT_EQ(report.task_count, t.graph().tasks.size());
      EXPECT_GT(report.kernel_ns, 0u);
    }
    TestGraph t(700);
    build_random_graph(t, 700);
    KernelDag kernel_dag(t.graph());
    for (int rep = 0; rep < 2; ++rep) {
      t.reset();
      kernel_dag.reset_counters();
      peer->run_dag(kernel_dag.dag());
      kernel_dag.throw_if_faulted();
      t.expect_results(column.id + " random DAG, run " + std::to_string(rep));
      EXPECT_EQ(kernel_dag.kernel_calls(), t.expected_kernel_calls());
      EXPECT_GT(kernel_dag.kernel_ns(), 0u);
    }
    ++peers_run;
  }
  for (const RunnerColumn& column : columns) {
    if (column.id == "llvm_openmp" && column.available()) {
      EXPECT_EQ(column.kernel_rows_note, kChildProcessKernelNote);
    }
  }
  if (peers_run == 0) GTEST_SKIP() << "no in-process peer runtime was built (CHIPRT_BENCH_PEERS)";
}

}  // namespace
}  // namespace chiprt::perf
