// Worker::export_graph and GraphExport::to_dot: the exported graph is exactly what the host
// orchestrator built (tasks, kernels, resolved arguments, edges), exporting launches nothing and
// leaves later runs and replays correct, and bad input fails as run() fails.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/graph_export.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "host/device_runner.h"
#include "host/worker_access.h"
#include "host_test_support.h"

namespace chiprt {
namespace {

constexpr uint64_t kN = 4;  // elements each task works on
constexpr uint64_t kFloat = sizeof(float);

constexpr int32_t kInc = 0;       // AIV: x += 1
constexpr int32_t kCopy = 1;      // AIC: out = x
constexpr int32_t kAdd = 2;       // AIV: z = a + b
constexpr int32_t kCopyInto = 3;  // AIV: y = x
constexpr int32_t kIncAic = 4;    // AIC: x += 1

void inc_kernel(int64_t* args) {
  float* x = kernel::tensor_arg<float>(args, 0);
  const auto n = kernel::scalar_arg<uint64_t>(args, 1);
  for (uint64_t i = 0; i < n; ++i) x[i] += 1.0f;
}

void copy_kernel(int64_t* args) {
  const float* x = kernel::tensor_arg<float>(args, 0);
  float* y = kernel::tensor_arg<float>(args, 1);
  const auto n = kernel::scalar_arg<uint64_t>(args, 2);
  for (uint64_t i = 0; i < n; ++i) y[i] = x[i];
}

void add_kernel(int64_t* args) {
  const float* a = kernel::tensor_arg<float>(args, 0);
  const float* b = kernel::tensor_arg<float>(args, 1);
  float* z = kernel::tensor_arg<float>(args, 2);
  const auto n = kernel::scalar_arg<uint64_t>(args, 3);
  for (uint64_t i = 0; i < n; ++i) z[i] = a[i] + b[i];
}

// Arguments: x (InOut, kN floats), c (OutputExisting, 2 kN floats), d (OutputExisting, kN).
// A chain t0 -> t1 (both increment x), t2 copies x into a runtime output r, a diamond
// t2 -> {t3, t4} -> t5 through r and the two halves of c: d = 2 (x + 2).
void diamond_orchestration(Orchestration& orch, const TaskArgs& args) {
  const Tensor& x = args.tensor(0);
  const Tensor& c = args.tensor(1);
  const Tensor& d = args.tensor(2);
  for (int k = 0; k < 2; ++k) {
    TaskArgs inc;
    inc.inout(x).scalar(kN);
    orch.submit(kInc, CoreType::AIV, inc);
  }
  TaskArgs copy;
  copy.in(x).out({kN}, DataType::F32).scalar(kN);
  orch.submit(kCopy, CoreType::AIC, copy);
  const Tensor r = copy.output(0);
  for (uint64_t half = 0; half < 2; ++half) {
    TaskArgs into;
    into.in(r).output_existing(c.view({kN}, {half * kN})).scalar(kN);
    orch.submit(kCopyInto, CoreType::AIV, into);
  }
  TaskArgs sum;
  sum.in(c.view({kN}, {0})).in(c.view({kN}, {kN})).output_existing(d).scalar(kN);
  orch.submit(kAdd, CoreType::AIV, sum);
}

// Arguments: x (InOut, kN floats), c (OutputExisting, 2 kN floats), d unused. t0 increments x;
// a dummy t1 after t0; t2 copies x into c after t1 (and after t0 through x).
void dot_orchestration(Orchestration& orch, const TaskArgs& args) {
  const Tensor& x = args.tensor(0);
  const Tensor& c = args.tensor(1);
  TaskArgs inc;
  inc.inout(x).scalar(kN);
  const TaskId first = orch.submit(kInc, CoreType::AIV, inc);
  TaskArgs fence;
  fence.after(first);
  const TaskId dummy = orch.submit_dummy(fence);
  TaskArgs into;
  into.in(x).output_existing(c.view({kN}, {0})).scalar(kN).after(dummy);
  orch.submit(kCopyInto, CoreType::AIV, into);
}

// Arguments as diamond_orchestration. Inside a scope: t0 copies x into a runtime output r, t1
// copies r into c; the scope's end adds fence t2 after both (r's memory is released behind it).
void scoped_orchestration(Orchestration& orch, const TaskArgs& args) {
  const Tensor& x = args.tensor(0);
  const Tensor& c = args.tensor(1);
  Scope scope(orch);
  TaskArgs copy;
  copy.in(x).out({kN}, DataType::F32).scalar(kN);
  orch.submit(kCopy, CoreType::AIC, copy);
  TaskArgs into;
  into.in(copy.output(0)).output_existing(c.view({kN}, {0})).scalar(kN);
  orch.submit(kCopyInto, CoreType::AIV, into);
}

// Arguments as diamond_orchestration. Reads x on the host, then t0 increments x only when the
// first int32 of d is non-zero, and t1 is a two-block MIX task (AIC kIncAic, AIV0 kInc).
void predicated_mix_orchestration(Orchestration& orch, const TaskArgs& args) {
  const Tensor& x = args.tensor(0);
  float host_x[kN];
  orch.get_tensor_data(x, host_x, sizeof(host_x));
  TaskArgs inc;
  inc.inout(x).scalar(kN).when(Tensor::make(args.tensor(2).buffer, {1}, DataType::I32));
  orch.submit(kInc, CoreType::AIV, inc);
  TaskArgs mix;
  mix.inout(x).scalar(kN);
  orch.submit(TaskSpec::mixed({kIncAic, kInc, -1}, 2), mix);
}

// Arguments as diamond_orchestration. t0 copies x into a runtime output only when the first
// int32 of d is non-zero.
void predicated_out_orchestration(Orchestration& orch, const TaskArgs& args) {
  TaskArgs copy;
  copy.in(args.tensor(0)).out({kN}, DataType::F32).scalar(kN);
  copy.when(Tensor::make(args.tensor(2).buffer, {1}, DataType::I32));
  orch.submit(kCopy, CoreType::AIC, copy);
}

void empty_orchestration(Orchestration&, const TaskArgs&) {}

const ArgSignature kOrchSig =
    ArgSignature::of({ArgTag::InOut, ArgTag::OutputExisting, ArgTag::OutputExisting}, 0);

std::vector<uint8_t> callable_with(OrchestrationEntry orchestration) {
  return CallableBuilder()
      .orchestration_function(orchestration, kOrchSig)
      .kernel_function(kInc, CoreType::AIV, &inc_kernel, ArgSignature::of({ArgTag::InOut}, 1))
      .kernel_function(kCopy, CoreType::AIC, &copy_kernel,
                       ArgSignature::of({ArgTag::In, ArgTag::Out}, 1))
      .kernel_function(kAdd, CoreType::AIV, &add_kernel,
                       ArgSignature::of({ArgTag::In, ArgTag::In, ArgTag::OutputExisting}, 1))
      .kernel_function(kCopyInto, CoreType::AIV, &copy_kernel,
                       ArgSignature::of({ArgTag::In, ArgTag::OutputExisting}, 1))
      .kernel_function(kIncAic, CoreType::AIC, &inc_kernel, ArgSignature::of({ArgTag::InOut}, 1))
      .build();
}

WorkerOptions small_options(RuntimeVariant runtime = RuntimeVariant::HostBuildGraph) {
  return host::test::small_worker_options({.runtime = runtime});
}

CallConfig small_config() {
  return host::test::small_call_config(1024);
}

uint64_t entry_of(void (*kernel)(int64_t*)) {
  return reinterpret_cast<uint64_t>(kernel);
}

// The caller's buffers: x = {1, 2, 3, 4}, c and d filled with -1.
struct Buffers {
  DeviceBuffer x, c, d;
  TaskArgs args;
};

Buffers make_buffers(Worker& worker) {
  Buffers b;
  b.x = worker.malloc(kN * kFloat);
  b.c = worker.malloc(2 * kN * kFloat);
  b.d = worker.malloc(kN * kFloat);
  b.args.inout(Tensor::make(b.x, {kN}, DataType::F32))
      .output_existing(Tensor::make(b.c, {2 * kN}, DataType::F32))
      .output_existing(Tensor::make(b.d, {kN}, DataType::F32));
  return b;
}

void reset_buffers(Worker& worker, const Buffers& b) {
  const std::vector<float> x{1, 2, 3, 4};
  const std::vector<float> unset(2 * kN, -1.0f);
  worker.copy_to(b.x, x.data(), kN * kFloat);
  worker.copy_to(b.c, unset.data(), 2 * kN * kFloat);
  worker.copy_to(b.d, unset.data(), kN * kFloat);
}

std::vector<float> read(Worker& worker, DeviceBuffer buffer, uint64_t elements) {
  std::vector<float> out(elements);
  worker.copy_from(out.data(), buffer, elements * kFloat);
  return out;
}

// What the diamond graph leaves behind: x + 2, both halves of c = x + 2, d = 2 (x + 2).
void expect_diamond_result(Worker& worker, const Buffers& b) {
  EXPECT_EQ(read(worker, b.x, kN), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(read(worker, b.c, 2 * kN), (std::vector<float>{3, 4, 5, 6, 3, 4, 5, 6}));
  EXPECT_EQ(read(worker, b.d, kN), (std::vector<float>{6, 8, 10, 12}));
}

std::vector<int64_t> args_of(const GraphExport& graph, std::size_t task) {
  const auto span = graph.args_of(graph.tasks[task]);
  return {span.begin(), span.end()};
}

std::vector<uint32_t> consumers_of(const GraphExport& graph, std::size_t task) {
  const auto span = graph.consumers_of(graph.tasks[task]);
  return {span.begin(), span.end()};
}

int64_t addr(DeviceBuffer buffer, uint64_t float_offset = 0) {
  return static_cast<int64_t>(buffer.addr + float_offset * kFloat);
}

// A host_build_graph Worker with every test orchestration registered (under the ids below) and
// the caller's buffers reset.
constexpr int32_t kDiamondId = 7;
constexpr int32_t kScopedId = 1;
constexpr int32_t kDotId = 2;
constexpr int32_t kPredicatedMixId = 3;
constexpr int32_t kEmptyId = 4;
constexpr int32_t kPredicatedOutId = 5;

class GraphExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    worker.init(small_options());
    worker.register_callable(kDiamondId, callable_with(&diamond_orchestration));
    worker.register_callable(kScopedId, callable_with(&scoped_orchestration));
    worker.register_callable(kDotId, callable_with(&dot_orchestration));
    worker.register_callable(kPredicatedMixId, callable_with(&predicated_mix_orchestration));
    worker.register_callable(kEmptyId, callable_with(&empty_orchestration));
    worker.register_callable(kPredicatedOutId, callable_with(&predicated_out_orchestration));
    b = make_buffers(worker);
    reset_buffers(worker, b);
  }

  Worker worker;
  Buffers b;
};

TEST_F(GraphExportTest, DiamondExportsExactTasksArgumentsAndEdges) {
  const GraphExport graph = worker.export_graph(kDiamondId, b.args, small_config());
  // The runtime output r is the first block of bank 0's output heap.
  const auto heap = static_cast<int64_t>(
      host::runner_of(worker).arenas().region(0, host::ArenaRegion::OutputHeap).addr);
  ASSERT_NE(heap, 0);
  const auto n = static_cast<int64_t>(kN);

  ASSERT_EQ(graph.tasks.size(), 6u);
  const int32_t funcs[] = {kInc, kInc, kCopy, kCopyInto, kCopyInto, kAdd};
  const CoreType cores[] = {CoreType::AIV, CoreType::AIV, CoreType::AIC,
                            CoreType::AIV, CoreType::AIV, CoreType::AIV};
  const uint64_t kernels[] = {entry_of(&inc_kernel),  entry_of(&inc_kernel),
                              entry_of(&copy_kernel), entry_of(&copy_kernel),
                              entry_of(&copy_kernel), entry_of(&add_kernel)};
  const std::vector<std::vector<int64_t>> args = {
      {addr(b.x), n},       {addr(b.x), n},           {addr(b.x), heap, n},
      {heap, addr(b.c), n}, {heap, addr(b.c, kN), n}, {addr(b.c), addr(b.c, kN), addr(b.d), n}};
  const std::vector<std::vector<uint32_t>> consumers = {{1}, {2}, {3, 4}, {5}, {5}, {}};
  const uint32_t producers[] = {0, 1, 1, 1, 1, 2};
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    SCOPED_TRACE("task " + std::to_string(i));
    const ExportedTask& task = graph.tasks[i];
    EXPECT_EQ(task.func_id, funcs[i]);
    EXPECT_EQ(task.core_type, cores[i]);
    EXPECT_FALSE(task.dummy);
    EXPECT_FALSE(task.predicated);
    EXPECT_EQ(task.block_num, 1u);
    EXPECT_EQ(task.mix_aiv, (std::array<int32_t, 2>{-1, -1}));
    EXPECT_EQ(task.kernel_addr, kernels[i]);
    EXPECT_EQ(task.mix_aiv_kernel_addr, (std::array<uint64_t, 2>{0, 0}));
    EXPECT_EQ(args_of(graph, i), args[i]);
    EXPECT_EQ(task.tensor_count, args[i].size() - 1) << "every task has one scalar";
    EXPECT_EQ(consumers_of(graph, i), consumers[i]);
    EXPECT_EQ(task.producer_count, producers[i]);
  }
  EXPECT_EQ(graph.edge_count(), 6u);
  // Each task's argument block: context (3 words), arguments, one 13-word view per tensor.
  EXPECT_EQ(graph.args.size(), 2u * (3 + 2 + 13) + 3u * (3 + 3 + 26) + (3 + 4 + 39));
  EXPECT_FALSE(graph.accessed_tensor_data);
}

// An executor of the exported graph gives each kernel what a core gives it (GraphExport::
// kernel_args): the task context before the arguments, with the block and the counts, and the
// views of the tensor arguments; running the kernels in order so computes what a run computes.
TEST_F(GraphExportTest, KernelArgsGiveExecutorsTheTaskContextAndTheViews) {
  const GraphExport graph = worker.export_graph(kDiamondId, b.args, small_config());
  int64_t storage[GraphExport::kKernelArgsWords];
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    SCOPED_TRACE("task " + std::to_string(i));
    const ExportedTask& task = graph.tasks[i];
    int64_t* args = graph.kernel_args(task, 0, storage);
    EXPECT_EQ(args, storage + kernel::kTaskContextWords);
    EXPECT_EQ(std::vector<int64_t>(args, args + task.arg_count), args_of(graph, i));
    EXPECT_EQ(kernel::block_idx(args), 0u);
    EXPECT_EQ(kernel::block_num(args), 1u);
    ASSERT_EQ(kernel::tensor_count(args), static_cast<int>(task.tensor_count));
    EXPECT_EQ(kernel::scalar_count(args), 1);
    EXPECT_EQ(&kernel::view(args, 0), graph.views_of(task));
    for (int t = 0; t < kernel::tensor_count(args); ++t) {
      const kernel::TensorView& v = kernel::view(args, t);
      EXPECT_EQ(v.data_addr(), static_cast<uint64_t>(args[t]));
      EXPECT_EQ(v.ndim, 1);
      EXPECT_EQ(v.shape(0), kN);
      EXPECT_EQ(v.dtype, static_cast<uint8_t>(DataType::F32));
    }
    reinterpret_cast<KernelEntry>(static_cast<uintptr_t>(task.kernel_addr))(args);
  }
  expect_diamond_result(worker, b);

  // The blocks of an SPMD task: one context each, the views shared.
  const GraphExport mix = worker.export_graph(kPredicatedMixId, b.args, small_config());
  const ExportedTask& spmd = mix.tasks[1];
  ASSERT_EQ(spmd.block_num, 2u);
  int64_t* args = mix.kernel_args(spmd, 1, storage);
  EXPECT_EQ(kernel::block_idx(args), 1u);
  EXPECT_EQ(kernel::block_num(args), 2u);
  EXPECT_EQ(kernel::view(args, 0).buffer_addr, b.x.addr);
}

// Field by field, so a failure names the field.
void expect_shape(const GraphShape& got, const GraphShape& want) {
  EXPECT_EQ(got.tasks, want.tasks);
  EXPECT_EQ(got.kernel_tasks, want.kernel_tasks);
  EXPECT_EQ(got.dependency_only_tasks, want.dependency_only_tasks);
  EXPECT_EQ(got.scope_fences, want.scope_fences);
  EXPECT_EQ(got.edges, want.edges);
  EXPECT_EQ(got.sources, want.sources);
  EXPECT_EQ(got.sinks, want.sinks);
  EXPECT_EQ(got.depth, want.depth);
  EXPECT_EQ(got.max_width, want.max_width);
}

TEST_F(GraphExportTest, ShapeCountsLevelsOfTheExportedGraph) {
  // Diamond: levels 1, 2, 3, then the two copies at 4, the add at 5.
  expect_shape(worker.export_graph(kDiamondId, b.args, small_config()).shape(),
               {.tasks = 6,
                .kernel_tasks = 6,
                .dependency_only_tasks = 0,
                .edges = 6,
                .sources = 1,
                .sinks = 1,
                .depth = 5,
                .max_width = 2});
  // Two kernels, then the scope's fence after both.
  expect_shape(worker.export_graph(kScopedId, b.args, small_config()).shape(),
               {.tasks = 3,
                .kernel_tasks = 2,
                .dependency_only_tasks = 1,
                .scope_fences = 1,
                .edges = 3,
                .sources = 1,
                .sinks = 1,
                .depth = 3,
                .max_width = 1});
}

TEST(GraphExport, ShapeOfIndependentAndEmptyGraphs) {
  GraphExport independent;
  independent.tasks.resize(4);
  for (ExportedTask& task : independent.tasks) task.func_id = 0;
  expect_shape(independent.shape(), {.tasks = 4,
                                     .kernel_tasks = 4,
                                     .dependency_only_tasks = 0,
                                     .edges = 0,
                                     .sources = 4,
                                     .sinks = 4,
                                     .depth = 1,
                                     .max_width = 4});
  expect_shape(GraphExport{}.shape(), GraphShape{});
}

TEST_F(GraphExportTest, LaunchesNothingAndLaterRunsAndReplaysStayCorrect) {
  host::DeviceRunner& runner = host::runner_of(worker);
  const CallConfig config = small_config();
  CallConfig replay = config;
  replay.replay_graph = true;

  // replay_graph is ignored by an export: nothing is cached, nothing runs.
  EXPECT_EQ(worker.export_graph(kDiamondId, b.args, replay).tasks.size(), 6u);
  EXPECT_EQ(runner.launches(), 0u);
  EXPECT_FALSE(runner.arenas().prebuilt_valid());
  EXPECT_EQ(read(worker, b.x, kN), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(read(worker, b.c, 2 * kN), std::vector<float>(2 * kN, -1.0f));
  EXPECT_EQ(read(worker, b.d, kN), std::vector<float>(kN, -1.0f));

  worker.run(kDiamondId, b.args, config);
  expect_diamond_result(worker, b);

  // A replay cached before an export still replays correctly after it.
  reset_buffers(worker, b);
  worker.run(kDiamondId, b.args, replay);
  expect_diamond_result(worker, b);
  worker.export_graph(kDiamondId, b.args, config);
  reset_buffers(worker, b);
  const uint64_t replayed = runner.replayed_runs();
  worker.run(kDiamondId, b.args, replay);
  EXPECT_EQ(runner.replayed_runs(), replayed + 1);
  expect_diamond_result(worker, b);

  // An export that needs a larger output heap moves the heap: the cached image, whose runtime
  // output points into the old heap, must be rebuilt rather than replayed.
  CallConfig bigger_heap = config;
  bigger_heap.output_heap_bytes = 64ull << 20;
  worker.export_graph(kDiamondId, b.args, bigger_heap);
  reset_buffers(worker, b);
  const uint64_t replayed_before = runner.replayed_runs();
  worker.run(kDiamondId, b.args, replay);
  EXPECT_EQ(runner.replayed_runs(), replayed_before);
  expect_diamond_result(worker, b);
  reset_buffers(worker, b);
  worker.run(kDiamondId, b.args, replay);
  EXPECT_EQ(runner.replayed_runs(), replayed_before + 1);
  expect_diamond_result(worker, b);
  EXPECT_EQ(runner.launches(), 5u);
}

TEST(GraphExport, ExportsTheHostBuiltGraphOnATensormapRingbufferWorker) {
  Worker worker;
  worker.init(small_options(RuntimeVariant::TensormapRingbuffer));
  worker.register_callable(kDiamondId, callable_with(&diamond_orchestration));
  Buffers b = make_buffers(worker);
  reset_buffers(worker, b);
  const GraphExport graph = worker.export_graph(kDiamondId, b.args, small_config());
  ASSERT_EQ(graph.tasks.size(), 6u);
  EXPECT_EQ(consumers_of(graph, 2), (std::vector<uint32_t>{3, 4}));
  EXPECT_EQ(graph.tasks[5].producer_count, 2u);
  EXPECT_EQ(host::runner_of(worker).launches(), 0u);
  worker.run(kDiamondId, b.args, small_config());
  expect_diamond_result(worker, b);
}

TEST_F(GraphExportTest, ScopeFencesAndSubmitDummyAreDummyTasks) {
  const GraphExport scoped = worker.export_graph(kScopedId, b.args, small_config());
  ASSERT_EQ(scoped.tasks.size(), 3u);
  const ExportedTask& fence = scoped.tasks[2];
  EXPECT_TRUE(fence.dummy);
  EXPECT_EQ(fence.func_id, -1);
  EXPECT_EQ(fence.kernel_addr, 0u);
  EXPECT_EQ(fence.arg_count, 0u);
  EXPECT_EQ(fence.producer_count, 2u);
  EXPECT_EQ(consumers_of(scoped, 0), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(consumers_of(scoped, 1), (std::vector<uint32_t>{2}));
  EXPECT_FALSE(scoped.tasks[0].dummy);
  EXPECT_FALSE(scoped.tasks[1].dummy);
  // The fence is an internal node: no TaskId, marked; the user's tasks keep theirs.
  EXPECT_TRUE(fence.scope_fence);
  EXPECT_EQ(fence.task_id, -1);
  EXPECT_EQ(scoped.tasks[0].task_id, 0);
  EXPECT_EQ(scoped.tasks[1].task_id, 1);
  EXPECT_FALSE(scoped.tasks[1].scope_fence);
  EXPECT_NE(scoped.to_dot().find("  t2 [label=\"fence\", style=dashed];\n"), std::string::npos)
      << scoped.to_dot();

  const GraphExport with_dummy = worker.export_graph(kDotId, b.args, small_config());
  ASSERT_EQ(with_dummy.tasks.size(), 3u);
  EXPECT_TRUE(with_dummy.tasks[1].dummy);
  EXPECT_FALSE(with_dummy.tasks[1].scope_fence) << "submit_dummy's task is the user's";
  EXPECT_EQ(with_dummy.tasks[1].task_id, 1);
  EXPECT_EQ(with_dummy.tasks[1].kernel_addr, 0u);
  EXPECT_EQ(with_dummy.tasks[1].producer_count, 1u);
  EXPECT_EQ(consumers_of(with_dummy, 1), (std::vector<uint32_t>{2}));
}

// An executor that skips the task must zero its outputs: the export names their packed range.
TEST_F(GraphExportTest, ExportsASkippedTasksOutputRange) {
  const GraphExport graph = worker.export_graph(kPredicatedOutId, b.args, small_config());
  ASSERT_EQ(graph.tasks.size(), 1u);
  const ExportedTask& task = graph.tasks[0];
  EXPECT_TRUE(task.predicated);
  const std::vector<int64_t> args = args_of(graph, 0);
  ASSERT_EQ(args.size(), 3u);  // x, the output, the scalar
  EXPECT_EQ(task.skip_fill_addr, static_cast<uint64_t>(args[1]));
  EXPECT_EQ(task.skip_fill_bytes, 64u) << "the output's 16 bytes in a whole 64-byte granule";
}

TEST_F(GraphExportTest, ExportsPredicatesMixSpmdAndTensorDataAccess) {
  const GraphExport graph = worker.export_graph(kPredicatedMixId, b.args, small_config());
  EXPECT_TRUE(graph.accessed_tensor_data);
  ASSERT_EQ(graph.tasks.size(), 2u);
  const auto n = static_cast<int64_t>(kN);

  const ExportedTask& predicated = graph.tasks[0];
  EXPECT_TRUE(predicated.predicated);
  EXPECT_EQ(predicated.predicate_bytes, 4u);
  EXPECT_EQ(predicated.predicate_addr, b.d.addr);
  EXPECT_EQ(predicated.kernel_addr, entry_of(&inc_kernel));
  EXPECT_EQ(predicated.skip_fill_bytes, 0u) << "inout only: kept, nothing to zero when skipped";
  EXPECT_EQ(args_of(graph, 0), (std::vector<int64_t>{addr(b.x), n}));  // the flag is not an arg

  const ExportedTask& mix = graph.tasks[1];
  EXPECT_EQ(mix.core_type, CoreType::MIX);
  EXPECT_EQ(mix.func_id, kIncAic);
  EXPECT_EQ(mix.mix_aiv, (std::array<int32_t, 2>{kInc, -1}));
  EXPECT_EQ(mix.block_num, 2u);
  EXPECT_FALSE(mix.predicated);
  EXPECT_EQ(mix.predicate_addr, 0u);
  EXPECT_EQ(mix.kernel_addr, entry_of(&inc_kernel));
  EXPECT_EQ(mix.mix_aiv_kernel_addr, (std::array<uint64_t, 2>{entry_of(&inc_kernel), 0}));
  EXPECT_EQ(args_of(graph, 1), (std::vector<int64_t>{addr(b.x), n}));
  EXPECT_EQ(consumers_of(graph, 0), (std::vector<uint32_t>{1}));
  EXPECT_EQ(mix.producer_count, 1u);
  EXPECT_EQ(graph.to_dot(),
            "digraph chiprt {\n"
            "  t0 [label=\"t0 f0 aiv pred\"];\n"
            "  t1 [label=\"t1 f4/0/-1 mix x2\"];\n"
            "  t0 -> t1;\n"
            "}\n");
}

TEST_F(GraphExportTest, ToDotOfAnExportedGraphIsExact) {
  const GraphExport graph = worker.export_graph(kDotId, b.args, small_config());
  EXPECT_EQ(graph.to_dot(),
            "digraph chiprt {\n"
            "  t0 [label=\"t0 f0 aiv\"];\n"
            "  t1 [label=\"t1 dummy\", style=dashed];\n"
            "  t2 [label=\"t2 f3 aiv\"];\n"
            "  t0 -> t1;\n"
            "  t0 -> t2;\n"
            "  t1 -> t2;\n"
            "}\n");
}

TEST(GraphExport, ToDotLabelsMixSpmdAndPredicatedTasks) {
  GraphExport graph;
  ExportedTask mix;
  mix.func_id = 4;
  mix.core_type = CoreType::MIX;
  mix.mix_aiv = {5, -1};
  mix.block_num = 3;
  mix.consumers_begin = 0;
  mix.consumer_count = 1;
  ExportedTask predicated;
  predicated.func_id = 6;
  predicated.core_type = CoreType::AIC;
  predicated.predicated = true;
  predicated.producer_count = 1;
  graph.tasks = {mix, predicated};
  graph.consumers = {1};
  EXPECT_EQ(graph.to_dot(),
            "digraph chiprt {\n"
            "  t0 [label=\"t0 f4/5/-1 mix x3\"];\n"
            "  t1 [label=\"t1 f6 aic pred\"];\n"
            "  t0 -> t1;\n"
            "}\n");
  EXPECT_EQ(GraphExport{}.to_dot(), "digraph chiprt {\n}\n");
}

using host::test::error_of;

// run's message with its operation prefix replaced by export_graph's.
std::string as_export_message(const std::string& run_message) {
  const std::string prefix = "run: ";
  if (run_message.rfind(prefix, 0) != 0) return run_message;
  return "export_graph: " + run_message.substr(prefix.size());
}

void expect_same_error_as_run(Worker& worker, int32_t callable_id, const TaskArgs& args,
                              const CallConfig& config, StatusCode code) {
  const Error from_run = error_of([&] { worker.run(callable_id, args, config); });
  const Error from_export = error_of([&] { worker.export_graph(callable_id, args, config); });
  EXPECT_EQ(from_run.code(), code) << from_run.what();
  EXPECT_EQ(from_export.code(), code) << from_export.what();
  EXPECT_EQ(from_export.message(), as_export_message(from_run.message()));
}

TEST_F(GraphExportTest, BadInputFailsExactlyAsRunDoes) {
  expect_same_error_as_run(worker, 63, b.args, small_config(), StatusCode::UnknownCallable);
  EXPECT_EQ(error_of([&] { worker.export_graph(63, b.args); }).message(),
            "export_graph: callable id 63 is not registered");
  expect_same_error_as_run(worker, 99, b.args, small_config(), StatusCode::CallableIdOutOfRange);

  TaskArgs too_few;
  too_few.inout(Tensor::make(b.x, {kN}, DataType::F32));
  expect_same_error_as_run(worker, kDiamondId, too_few, small_config(),
                           StatusCode::SignatureMismatch);

  TaskArgs wrong_tag;
  wrong_tag.in(Tensor::make(b.x, {kN}, DataType::F32))
      .output_existing(Tensor::make(b.c, {2 * kN}, DataType::F32))
      .output_existing(Tensor::make(b.d, {kN}, DataType::F32));
  expect_same_error_as_run(worker, kDiamondId, wrong_tag, small_config(),
                           StatusCode::SignatureMismatch);

  const DeviceBuffer freed = worker.malloc(kN * kFloat);
  worker.free(freed);
  TaskArgs dangling = b.args;
  dangling.tensor(0) = Tensor::make(freed, {kN}, DataType::F32);
  expect_same_error_as_run(worker, kDiamondId, dangling, small_config(),
                           StatusCode::InvalidDevicePointer);

  CallConfig too_many_clusters = small_config();
  too_many_clusters.cluster_count = 64;
  expect_same_error_as_run(worker, kDiamondId, b.args, too_many_clusters,
                           StatusCode::InvalidConfig);

  CallConfig too_few_tasks = small_config();
  too_few_tasks.max_tasks = 2;
  const Error capacity = error_of([&] { worker.export_graph(kDiamondId, b.args, too_few_tasks); });
  EXPECT_EQ(capacity.code(),
            error_of([&] { worker.run(kDiamondId, b.args, too_few_tasks); }).code());

  // Nothing ran and the worker is still usable.
  EXPECT_EQ(host::runner_of(worker).launches(), 0u);
  EXPECT_EQ(worker.export_graph(kDiamondId, b.args, small_config()).tasks.size(), 6u);
}

TEST(GraphExport, RefusedBeforeInitAndAfterClose) {
  Worker worker;
  Buffers unused;
  EXPECT_EQ(error_of([&] { worker.export_graph(0, unused.args); }).code(),
            StatusCode::NotInitialized);
  worker.init(small_options());
  worker.close();
  EXPECT_EQ(error_of([&] { worker.export_graph(0, unused.args); }).code(),
            StatusCode::AlreadyClosed);
}

TEST_F(GraphExportTest, EmptyOrchestrationExportsAnEmptyGraph) {
  const GraphExport graph = worker.export_graph(kEmptyId, b.args, small_config());
  EXPECT_TRUE(graph.tasks.empty());
  EXPECT_TRUE(graph.args.empty());
  EXPECT_EQ(graph.edge_count(), 0u);
}

}  // namespace
}  // namespace chiprt
