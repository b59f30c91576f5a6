// deps.json holds every dependency the orchestration derived, the same on both runtime variants,
// threaded and serial: a run with the deps diagnostics on writes exactly the edges between user
// tasks of Worker::export_graph for the same call, each with its kinds (RAW, WAW, WAR, after()),
// and host_build_graph's scope fence edges apart as internal edges. Examples (bgemm, wavefront,
// paged_attention with tiny rings and with manual scopes' after() edges) and a graph with every
// kind. A threaded ring run retires producers while it submits (the tiny-ring cases force it),
// which must not lose an edge. Each run takes well under a second.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/graph_export.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "diag_run_checks.h"
#include "diagnostics/artifacts.h"
#include "example.h"

namespace chiprt {
namespace {

namespace fs = std::filesystem;

struct DepsParam {
  const char* example;  // nullptr: every_kind_graph
  const char* example_case;
  RuntimeVariant runtime;
  bool serial;
};

std::vector<DepsParam> deps_params() {
  struct Case {
    const char* example;
    const char* example_case;
  };
  const Case cases[] = {{"bgemm", "small"},
                        {"wavefront", "small"},
                        {"paged_attention", "small"},
                        {"paged_attention", "tiny_rings"},
                        {"paged_attention", "manual"},
                        {"paged_attention", "manual_tiny_rings"},
                        {nullptr, "every_kind"}};
  std::vector<DepsParam> params;
  for (const Case& c : cases) {
    for (RuntimeVariant runtime :
         {RuntimeVariant::HostBuildGraph, RuntimeVariant::TensormapRingbuffer}) {
      for (bool serial : {false, true})
        params.push_back({c.example, c.example_case, runtime, serial});
    }
  }
  return params;
}

std::string param_name(const testing::TestParamInfo<DepsParam>& info) {
  const DepsParam& p = info.param;
  return std::string(p.example != nullptr ? p.example : "graph") + "_" + p.example_case + "_" +
         std::string(runtime_variant_name(p.runtime)) + (p.serial ? "_serial" : "_threaded");
}

void PrintTo(const DepsParam& p, std::ostream* os) {
  *os << (p.example != nullptr ? p.example : "graph") << "/" << p.example_case << " on "
      << runtime_variant_name(p.runtime) << (p.serial ? ", serial" : ", threaded");
}

void touch_kernel(int64_t*) {}

// Over x (16 floats) and y (4 floats), user buffers: every kind of edge, kinds merging where two
// reasons join the same pair, and scopes whose runtime outputs host_build_graph fences (a heap of
// a few scope blocks makes the later ones reuse fenced memory).
void every_kind_graph(Orchestration& orch, const TaskArgs& run) {
  const Tensor& x = run.tensor(0);
  const Tensor& y = run.tensor(1);
  const TaskSpec touch = TaskSpec::kernel(0, CoreType::AIV);
  auto submit = [&](TaskArgs& args) { return orch.submit(touch, args); };
  TaskArgs t0;  // writes x[0:8]
  t0.output_existing(x.view({8}, {0}));
  submit(t0);
  TaskArgs t1;  // RAW t0; a runtime output r
  t1.in(x.view({4}, {0})).out({16}, DataType::F32);
  submit(t1);
  TaskArgs t2;  // RAW t0
  t2.in(x.view({4}, {4}));
  const TaskId id2 = submit(t2);
  TaskArgs t3;  // RAW|WAW t0, WAR t1 and t2
  t3.inout(x.view({8}, {0}));
  submit(t3);
  TaskArgs t4;  // RAW t1 (through r)
  t4.in(t1.output(0)).output_existing(y);
  const TaskId id4 = submit(t4);
  TaskArgs t5;  // after t2, RAW t4: a dependency-only task
  t5.in(y).after(id2);
  orch.submit_dummy(t5);
  TaskArgs t6;  // RAW|after t4
  t6.in(y).after(id4);
  submit(t6);
  TaskArgs t7;  // WAW t4, WAR t5 and t6
  t7.output_existing(y);
  submit(t7);
  for (uint64_t s = 0; s < 6; ++s) {
    Scope scope(orch);
    TaskArgs make;  // reads x[8:16], a 1 KiB runtime output
    make.in(x.view({8}, {8})).out({256}, DataType::F32);
    submit(make);
    TaskArgs use;  // reads the output, writes x[8:16]
    use.in(make.output(0)).output_existing(x.view({8}, {8}));
    submit(use);
  }
}

class DepsDiagnostics : public testing::TestWithParam<DepsParam> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("chiprt_deps_" + std::to_string(::getpid()) + "_" + param_name({GetParam(), 0}));
    fs::remove_all(dir_);
    WorkerOptions options;
    options.sim.clusters = 2;
    worker_.init(options);
  }
  void TearDown() override {
    worker_.close();
    fs::remove_all(dir_);
  }

  CallConfig config() const {
    CallConfig config;
    config.runtime = GetParam().runtime;
    config.serial = GetParam().serial;
    config.diagnostics.dependency_graph = true;
    config.diagnostics.output_dir = dir_.string();
    return config;
  }

  // Exports the call's graph, then runs it with the deps diagnostics on; checks deps.json.
  RunReport export_and_run(Worker& worker, int32_t callable_id, const TaskArgs& args,
                           const CallConfig& config) {
    const GraphExport exported = worker.export_graph(callable_id, args, config);
    RunReport report = worker.run(callable_id, args, config);
    EXPECT_FALSE(report.diagnostics_dir.empty());
    EXPECT_EQ(report.diagnostics_records_dropped, 0u);
    const diagnostics::RunModel model = diagnostics::read_run_directory(report.diagnostics_dir);
    diag_checks::expect_graph_is_exported(model, exported, GetParam().runtime);
    exported_ = exported;
    return report;
  }

  Worker worker_;
  fs::path dir_;
  std::optional<GraphExport> exported_;
};

TEST_P(DepsDiagnostics, DepsJsonHoldsTheExportedEdgesWithTheirKinds) {
  const DepsParam& p = GetParam();
  if (p.example != nullptr) {
    const examples::Example* example = examples::find_example(p.example);
    ASSERT_NE(example, nullptr);
    const examples::ExampleCase* example_case = example->find_case(p.example_case);
    ASSERT_NE(example_case, nullptr);
    const examples::Outcome outcome = example->run(
        worker_, *example_case, config(),
        [&](Worker& worker, int32_t id, const TaskArgs& args, const CallConfig& config) {
          return export_and_run(worker, id, args, config);
        });
    EXPECT_TRUE(outcome.passed) << outcome.message;
    ASSERT_TRUE(exported_.has_value());
    EXPECT_FALSE(diag_checks::user_edges_of(*exported_).empty());
    return;
  }

  worker_.register_callable(0, CallableBuilder()
                                   .orchestration_function(&every_kind_graph, ArgSignature{})
                                   .kernel_function(0, CoreType::AIV, &touch_kernel, ArgSignature{})
                                   .build());
  const DeviceBuffer x = worker_.malloc(16 * sizeof(float));
  const DeviceBuffer y = worker_.malloc(4 * sizeof(float));
  TaskArgs args;
  args.inout(Tensor::make(x, {16}, DataType::F32)).inout(Tensor::make(y, {4}, DataType::F32));
  CallConfig call = config();
  call.output_heap_bytes = 4096;  // four scope blocks: the later scopes reuse fenced memory
  export_and_run(worker_, 0, args, call);
  worker_.free(x);
  worker_.free(y);
  worker_.unregister_callable(0);
  ASSERT_TRUE(exported_.has_value());

  // The kinds, as both variants recorded them (checked equal above).
  const diag_checks::KindedEdges edges = diag_checks::user_edges_of(*exported_);
  auto kinds = [&](uint64_t producer, uint64_t consumer) {
    auto it = edges.find({producer, consumer});
    return it == edges.end() ? -1 : it->second;
  };
  const struct {
    uint64_t producer, consumer;
    int kinds;
  } expected[] = {{0, 1, kDependencyRaw},
                  {0, 2, kDependencyRaw},
                  {0, 3, kDependencyRaw | kDependencyWaw},
                  {1, 3, kDependencyWar},
                  {2, 3, kDependencyWar},
                  {1, 4, kDependencyRaw},
                  {2, 5, kDependencyAfter},
                  {4, 5, kDependencyRaw},
                  {4, 6, kDependencyRaw | kDependencyAfter},
                  {5, 7, kDependencyWar},
                  {6, 7, kDependencyWar},
                  // 7 overwrites what 4 wrote, but 5 and 6 read all of it after 4: waiting for them
                  // orders 7 after 4, so the write-after-write edge is redundant and left out.
                  {4, 7, -1}};
  for (const auto& e : expected) {
    EXPECT_EQ(kinds(e.producer, e.consumer), e.kinds) << e.producer << " -> " << e.consumer;
  }
  // Scope s (make 8 + 2s, use 9 + 2s): use reads make's output and overwrites what make read;
  // make reads what the previous use wrote, which use overwrites again (ordered through make:
  // no write-after-write edge).
  for (uint64_t s = 0; s < 6; ++s) {
    EXPECT_EQ(kinds(8 + 2 * s, 9 + 2 * s), kDependencyRaw | kDependencyWar) << "scope " << s;
    if (s > 0) {
      EXPECT_EQ(kinds(7 + 2 * s, 8 + 2 * s), kDependencyRaw) << "scope " << s;
      EXPECT_EQ(kinds(7 + 2 * s, 9 + 2 * s), -1) << "scope " << s;
    }
  }
  EXPECT_EQ(edges.size(), 11u + 1 + 2 * 5);
  // host_build_graph fenced the scopes and reused their memory behind the fences.
  const std::map<int, std::size_t> internal = diag_checks::internal_kinds_of(*exported_);
  EXPECT_GT(internal.count(kDependencyScopeFence), 0u);
  EXPECT_GT(internal.count(kDependencyHeapReuse), 0u);
}

INSTANTIATE_TEST_SUITE_P(ExamplesAndEveryKind, DepsDiagnostics, testing::ValuesIn(deps_params()),
                         param_name);

}  // namespace
}  // namespace chiprt
