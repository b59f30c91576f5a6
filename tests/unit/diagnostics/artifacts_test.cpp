// The run directory: numbering, the files each switch writes, a write/read round trip, the trace
// format, and errors naming the malformed file.
#include "diagnostics/artifacts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "chiprt/status.h"
#include "common/diag_layout.h"

namespace chiprt::diagnostics {
namespace {

namespace fs = std::filesystem;

class DiagnosticsArtifacts : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::path(::testing::TempDir()) /
            ("chiprt_diag_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  // CHIPRT_KEEP_DIAG_TEST_DIRS=1 keeps the written directories for a look.
  void TearDown() override {
    if (std::getenv("CHIPRT_KEEP_DIAG_TEST_DIRS") == nullptr) fs::remove_all(root_);
  }
  fs::path root_;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Two clusters: AIC 0-1, AIV 2-5. A diamond 0 -> {1, 2} -> 3, task 2 SPMD on two cores, task 4
// never ran, task 5 still running when the run failed.
RunModel sample_model() {
  RunModel m;
  m.run_number = 3;
  m.callable_id = 7;
  m.variant = "tensormap_ringbuffer";
  m.serial = false;
  m.isolated = true;
  m.config.swimlane_level = 4;
  m.config.task_timing = true;
  m.config.dependency_graph = true;
  m.config.scope_stats = true;
  m.config.args_dump_level = 2;
  m.config.args_dump_budget_bytes = 4096;
  m.config.hardware_counters = true;
  m.config.output_dir = "out";
  m.shape = {4, 1, 2, 2, 6};
  m.kernels = {{1, "gemm, \"tiled\"", CoreType::AIC, ""}, {2, "add", CoreType::AIV, "add, named"}};
  m.clock_hz = 50000000;
  m.anchors = {{0, 100}, {1000000, 50100}};
  m.wall_ns = 2000;
  m.host_spans = {{"prepare", 0, 10}, {"wait", 20, 1900}};
  auto node = [&](uint64_t task, int32_t func, CoreType type, uint32_t blocks, uint64_t submit,
                  uint64_t ready) {
    TaskNode n;
    n.task = task;
    n.func_id = func;
    n.core_type = type;
    n.block_num = blocks;
    n.scope_depth = task % 2;
    n.submit_begin_ns = submit == kNoTime ? kNoTime : submit - 1;
    n.submit_end_ns = submit;
    n.ready_ns = ready;
    m.nodes.push_back(n);
  };
  node(0, 1, CoreType::AIC, 1, 5, 6);
  node(1, 2, CoreType::AIV, 1, 7, 110);
  node(2, 2, CoreType::AIV, 2, 8, 110);
  node(3, 1, CoreType::AIC, 1, 9, 400);
  node(4, 2, CoreType::AIV, 1, 10, kNoTime);
  node(5, 2, CoreType::AIV, 1, 11, 500);
  m.nodes[3].dependency_only = false;
  m.nodes[4].internal = true;
  m.nodes[4].dependency_only = true;
  m.edges = {{0, 1, kDependencyRaw},
             {0, 2, kDependencyRaw | kDependencyWar},
             {1, 3, kDependencyAfter},
             {2, 3, kDependencyWaw},
             {3, 4, kDependencyScopeFence}};
  m.have_edges = true;
  m.blocks = {{0, 0, 0, 8, 10, 100, 105},           {1, 0, 2, 112, 115, 300, 305},
              {2, 0, 3, 112, 116, 380, 385},        {2, 1, 4, 112, 117, 390, 395},
              {3, 0, 1, 401, 405, 500, 505},        {4, 0, -1, kNoTime, kNoTime, kNoTime, kNoTime},
              {5, 0, 5, 501, 510, kNoTime, kNoTime}};
  m.scheduler_events = {{SchedulerEvent::Kind::Dispatch, 1, 0, 0, 0, 8},
                        {SchedulerEvent::Kind::Complete, 1, 0, 0, 0, 105}};
  m.thread_spans = {{ThreadSpan::Kind::LoopPhase, 1, 1, 0, 7, 9},
                    {ThreadSpan::Kind::Submit, 0, 0, 2, 7, 8},
                    {ThreadSpan::Kind::RingWait, 0, 0, 3, 8, 9}};
  ScopeStat scope;
  scope.scope = 0;
  scope.depth = 0;
  scope.tasks = 6;
  scope.peak_task_window = 16;
  scope.task_window_capacity = 16;
  scope.waits[0] = 2;
  scope.wait_ns[0] = 1;
  m.scopes = {scope};
  TensorArgRecord arg;
  arg.task = 0;
  arg.index = 0;
  arg.tag = ArgTag::InOut;
  arg.buffer_addr = 0x1000;
  arg.start_offset = 4;
  arg.dtype = DataType::BF16;
  arg.shape = {2, 3};
  arg.strides = {3, 1};
  arg.before = {true, 0, 12, 12};
  arg.after = {false, 0, 0, 12};
  m.args = {arg};
  m.counters = {{0, 0, 0, common::kDiagHaveCpuTime, 0, 0, 95}};
  m.counters_note = "perf_event_open not permitted";
  m.records_received = 40;
  m.records_dropped = 2;
  m.drop_reason = "ring full";
  m.notes = {"one note"};
  m.error =
      RunError{27, "SchedulerTimeout", "task 5 stuck", "raise it", "running_task_stalled", 5, 5};
  return m;
}

TEST_F(DiagnosticsArtifacts, CreateRunDirectoryNumbersUpward) {
  const std::string out = (root_ / "a" / "b").string();
  uint32_t number = 0;
  EXPECT_EQ(create_run_directory(out, &number), (root_ / "a" / "b" / "run-0001").string());
  EXPECT_EQ(number, 1u);
  EXPECT_EQ(create_run_directory(out, &number), (root_ / "a" / "b" / "run-0002").string());
  EXPECT_EQ(number, 2u);
  fs::create_directory(root_ / "a" / "b" / "run-0007");
  fs::create_directory(root_ / "a" / "b" / "run-x");
  EXPECT_EQ(create_run_directory(out, &number), (root_ / "a" / "b" / "run-0008").string());
  EXPECT_EQ(number, 8u);
  EXPECT_EQ(latest_diagnostics_run(out), (root_ / "a" / "b" / "run-0008").string());
  EXPECT_EQ(latest_diagnostics_run((root_ / "none").string()), "");
}

TEST_F(DiagnosticsArtifacts, CreateRunDirectoryFailsOnAFile) {
  write_text(root_ / "file", "x");
  uint32_t number = 0;
  try {
    create_run_directory((root_ / "file").string(), &number);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::DiagnosticsError);
    EXPECT_NE(e.message().find((root_ / "file").string()), std::string::npos) << e.message();
  }
  EXPECT_THROW(create_run_directory((root_ / "file" / "sub").string(), &number), Error);
}

TEST_F(DiagnosticsArtifacts, WriteThenReadRoundTrips) {
  const RunModel m = sample_model();
  ArgsData data;
  data.bytes.assign(12, 0xab);
  const auto paths = write_run_directory(root_.string(), m, data);
  std::set<std::string> names;
  for (const auto& p : paths) names.insert(fs::path(p).filename().string());
  EXPECT_EQ(names,
            (std::set<std::string>{"trace.json", "tasks.csv", "deps.json", "critical_path.md",
                                   "critical_path.json", "scope_stats.jsonl", "args.json",
                                   "args.bin", "counters.csv", "report.html", "run.json"}));
  for (const auto& entry : fs::directory_iterator(root_)) {
    EXPECT_NE(entry.path().extension(), ".tmp");
  }
  EXPECT_EQ(fs::file_size(root_ / "args.bin"), 12u);

  const RunModel r = read_run_directory(root_.string());
  EXPECT_EQ(r.run_number, m.run_number);
  EXPECT_EQ(r.callable_id, m.callable_id);
  EXPECT_EQ(r.variant, m.variant);
  EXPECT_EQ(r.isolated, m.isolated);
  EXPECT_EQ(r.config.swimlane_level, 4);
  EXPECT_EQ(r.config.args_dump_level, 2);
  EXPECT_EQ(r.config.args_dump_budget_bytes, 4096u);
  EXPECT_EQ(r.config.output_dir, "out");
  EXPECT_TRUE(r.config.task_timing && r.config.dependency_graph && r.config.scope_stats &&
              r.config.hardware_counters);
  EXPECT_EQ(r.shape.aicpu_threads, 4u);
  EXPECT_EQ(r.shape.orchestrator_threads, 1u);
  EXPECT_EQ(r.shape.device_clusters, 2u);
  ASSERT_EQ(r.kernels.size(), 2u);
  EXPECT_EQ(r.kernels[0].symbol, m.kernels[0].symbol);
  EXPECT_EQ(r.kernels[0].name, "");
  EXPECT_EQ(r.kernels[0].core_type, CoreType::AIC);
  EXPECT_EQ(r.kernels[1].symbol, "add");
  EXPECT_EQ(r.kernels[1].name, "add, named");
  EXPECT_EQ(r.kernel_label(2), "add, named (func 2)");
  EXPECT_EQ(r.clock_hz, m.clock_hz);
  EXPECT_EQ(r.anchors, m.anchors);
  EXPECT_EQ(r.wall_ns, m.wall_ns);
  ASSERT_EQ(r.host_spans.size(), 2u);
  EXPECT_EQ(r.host_spans[1].name, "wait");
  EXPECT_EQ(r.host_spans[1].end_ns, 1900u);
  ASSERT_EQ(r.nodes.size(), m.nodes.size());
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const TaskNode& a = m.nodes[i];
    const TaskNode& b = r.nodes[i];
    EXPECT_EQ(a.task, b.task);
    EXPECT_EQ(a.func_id, b.func_id);
    EXPECT_EQ(a.block_num, b.block_num);
    EXPECT_EQ(a.scope_depth, b.scope_depth);
    EXPECT_EQ(a.core_type, b.core_type);
    EXPECT_EQ(a.dependency_only, b.dependency_only);
    EXPECT_EQ(a.internal, b.internal);
    EXPECT_EQ(a.submit_begin_ns, b.submit_begin_ns);
    EXPECT_EQ(a.submit_end_ns, b.submit_end_ns);
    EXPECT_EQ(a.ready_ns, b.ready_ns) << i;
  }
  ASSERT_EQ(r.edges.size(), m.edges.size());
  for (size_t i = 0; i < m.edges.size(); ++i) {
    EXPECT_EQ(r.edges[i].producer, m.edges[i].producer);
    EXPECT_EQ(r.edges[i].consumer, m.edges[i].consumer);
    EXPECT_EQ(r.edges[i].kinds, m.edges[i].kinds);
  }
  EXPECT_TRUE(r.have_edges);
  // The user's edges and the internal ones apart, each with its kinds by name.
  std::string deps_text = read_text(root_ / kDepsFile);
  const nlohmann::json deps = nlohmann::json::parse(deps_text);
  EXPECT_EQ(deps.at("edges").size(), 4u);
  EXPECT_EQ(deps.at("edges").at(1), nlohmann::json::parse(R"([0,2,["RAW","WAR"]])"));
  EXPECT_EQ(deps.at("internal_edges"), nlohmann::json::parse(R"([[3,4,["scope_fence"]]])"));
  // An edge written without kinds (an older deps.json) reads with none.
  const std::string with_kinds = R"([0,1,["RAW"]])";
  const std::size_t at = deps_text.find(with_kinds);
  ASSERT_NE(at, std::string::npos);
  deps_text.replace(at, with_kinds.size(), "[0,1]");
  write_text(root_ / kDepsFile, deps_text);
  const RunModel old = read_run_directory(root_.string());
  ASSERT_EQ(old.edges.size(), m.edges.size());
  EXPECT_EQ(old.edges[0].consumer, 1u);
  EXPECT_EQ(old.edges[0].kinds, 0);
  EXPECT_EQ(old.edges[1].kinds, kDependencyRaw | kDependencyWar);
  ASSERT_EQ(r.blocks.size(), m.blocks.size());
  for (size_t i = 0; i < m.blocks.size(); ++i) {
    const BlockRun& a = m.blocks[i];
    const BlockRun& b = r.blocks[i];
    EXPECT_EQ(a.task, b.task);
    EXPECT_EQ(a.block, b.block);
    EXPECT_EQ(a.core, b.core);
    EXPECT_EQ(a.dispatch_ns, b.dispatch_ns);
    EXPECT_EQ(a.start_ns, b.start_ns);
    EXPECT_EQ(a.end_ns, b.end_ns);
    EXPECT_EQ(a.complete_ns, b.complete_ns);
  }
  ASSERT_EQ(r.scheduler_events.size(), 2u);
  EXPECT_EQ(r.scheduler_events[1].kind, SchedulerEvent::Kind::Complete);
  EXPECT_EQ(r.scheduler_events[1].t_ns, 105u);
  EXPECT_EQ(r.scheduler_events[1].thread, 1u);
  ASSERT_EQ(r.thread_spans.size(), 3u);
  EXPECT_EQ(r.thread_spans[2].kind, ThreadSpan::Kind::RingWait);
  EXPECT_EQ(r.thread_spans[2].task, 3u);
  EXPECT_EQ(r.thread_spans[0].what, 1u);
  EXPECT_EQ(r.thread_spans[0].end_ns, 9u);
  ASSERT_EQ(r.scopes.size(), 1u);
  EXPECT_EQ(r.scopes[0].tasks, 6u);
  EXPECT_EQ(r.scopes[0].waits[0], 2u);
  EXPECT_EQ(r.scopes[0].task_window_capacity, 16u);
  ASSERT_EQ(r.args.size(), 1u);
  EXPECT_EQ(r.args[0].tag, ArgTag::InOut);
  EXPECT_EQ(r.args[0].dtype, DataType::BF16);
  EXPECT_EQ(r.args[0].shape, m.args[0].shape);
  EXPECT_EQ(r.args[0].strides, m.args[0].strides);
  EXPECT_EQ(r.args[0].start_offset, 4u);
  EXPECT_EQ(r.args[0].before.bytes, 12u);
  EXPECT_EQ(r.args[0].after.wanted_bytes, 12u);
  ASSERT_EQ(r.counters.size(), 1u);
  EXPECT_EQ(r.counters[0].valid, static_cast<uint32_t>(common::kDiagHaveCpuTime));
  EXPECT_EQ(r.counters[0].cpu_ns, 95u);
  EXPECT_EQ(r.counters_note, m.counters_note);
  EXPECT_EQ(r.records_received, 40u);
  EXPECT_EQ(r.records_dropped, 2u);
  EXPECT_EQ(r.drop_reason, "ring full");
  EXPECT_EQ(r.notes, m.notes);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->code, 27);
  EXPECT_EQ(r.error->stall, "running_task_stalled");
  EXPECT_EQ(r.error->stuck_task, 5);
  EXPECT_EQ(r.error->stuck_core, 5);

  // The analysis of the rebuilt model is the analysis of the original.
  const Analysis a = analyze(m);
  const Analysis b = analyze(r);
  EXPECT_EQ(a.verdict, b.verdict);
  EXPECT_EQ(a.path_ns, b.path_ns);
  EXPECT_EQ(a.path.size(), b.path.size());

  // The human files carry the verdict and the ring recommendation.
  EXPECT_NE(read_text(root_ / "critical_path.md").find(a.verdict), std::string::npos);
  const auto path_json = nlohmann::json::parse(read_text(root_ / "critical_path.json"));
  EXPECT_EQ(path_json["steps"].size(), a.path.size());
  EXPECT_EQ(path_json["verdict"], a.verdict);
  EXPECT_NE(read_text(root_ / "scope_stats.jsonl").find("rings.task_window"), std::string::npos);
  const auto args_json = nlohmann::json::parse(read_text(root_ / "args.json"));
  ASSERT_EQ(args_json["left_out"].size(), 1u);
  EXPECT_EQ(args_json["left_out"][0]["phase"], "after");
  EXPECT_NE(read_text(root_ / "counters.csv").find("# note: perf_event_open"), std::string::npos);
  const std::string tasks = read_text(root_ / "tasks.csv");
  EXPECT_EQ(tasks.rfind("task,block,func_id,kernel,core_type,core,submit_ns,ready_ns,dispatch_ns,"
                        "start_ns,end_ns,producers,consumers",
                        0),
            0u);
  EXPECT_NE(tasks.find("\n3,0,1,\"gemm, \"\"tiled\"\" (func 1)\",aic,1,9,400,401,405,500,1 2,4,"),
            std::string::npos)
      << tasks;
}

TEST_F(DiagnosticsArtifacts, TraceIsValidChromeTraceJson) {
  const RunModel m = sample_model();
  write_run_directory(root_.string(), m, {});
  const auto trace = nlohmann::json::parse(read_text(root_ / "trace.json"));
  ASSERT_TRUE(trace.contains("traceEvents"));
  EXPECT_EQ(trace["displayTimeUnit"], "ns");
  EXPECT_EQ(trace["otherData"]["anchors"].size(), 2u);
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> tracks;
  std::map<uint64_t, std::pair<int, int>> flows;  // id -> (starts, finishes)
  std::set<std::pair<uint64_t, uint64_t>> flow_edges;
  size_t task_slices = 0, names = 0, instants = 0;
  bool stuck = false;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M") {
      names += e["name"] == "thread_name" ? 1 : 0;
    } else if (ph == "X" && e["cat"] == "task") {
      ++task_slices;
      EXPECT_GE(e["pid"].get<int>(), 3);
      tracks[{e["pid"], e["tid"]}].emplace_back(e["ts"].get<double>(),
                                                e["ts"].get<double>() + e["dur"].get<double>());
      if (e["args"].contains("state")) stuck |= e["args"]["state"] == "stuck";
    } else if (ph == "i") {
      ++instants;
    } else if (ph == "s" || ph == "f") {
      auto& f = flows[e["id"].get<uint64_t>()];
      (ph == "s" ? f.first : f.second)++;
      flow_edges.insert(std::make_pair(e["args"]["producer"].get<uint64_t>(),
                                       e["args"]["consumer"].get<uint64_t>()));
    }
  }
  EXPECT_EQ(task_slices, 6u);  // every block that started (task 4 never ran)
  EXPECT_TRUE(stuck);
  EXPECT_EQ(instants, 2u);
  EXPECT_EQ(names, 1u + 4u + 2u * 3u);  // host, 4 AICPU threads, 2 clusters x 3 lanes
  for (auto& [track, slices] : tracks) {
    std::sort(slices.begin(), slices.end());
    for (size_t i = 1; i < slices.size(); ++i) EXPECT_LE(slices[i - 1].second, slices[i].first);
  }
  // Every edge where both ran (not 3 -> 4), one start and one finish each.
  EXPECT_EQ(flows.size(), 4u);
  for (const auto& [id, f] : flows) {
    EXPECT_EQ(f.first, 1);
    EXPECT_EQ(f.second, 1);
    ASSERT_LT(id, m.edges.size());
  }
  EXPECT_EQ(flow_edges, (std::set<std::pair<uint64_t, uint64_t>>{{0, 1}, {0, 2}, {1, 3}, {2, 3}}));
}

TEST_F(DiagnosticsArtifacts, SwimlaneOnlyRebuildsBlocksFromTheTrace) {
  RunModel m = sample_model();
  m.config = DiagnosticsConfig{};
  m.config.swimlane_level = 1;
  m.config.output_dir = "out";
  m.have_edges = false;
  m.edges.clear();
  const auto paths = write_run_directory(root_.string(), m, {});
  EXPECT_EQ(paths.size(), 3u);  // trace.json, report.html, run.json
  const RunModel r = read_run_directory(root_.string());
  ASSERT_EQ(r.blocks.size(), 6u);
  EXPECT_EQ(r.blocks[2].task, 2u);
  EXPECT_EQ(r.blocks[2].block, 0u);
  EXPECT_EQ(r.blocks[2].core, 3);
  EXPECT_EQ(r.blocks[2].start_ns, 116u);
  EXPECT_EQ(r.blocks[2].end_ns, 380u);
  EXPECT_EQ(r.blocks[5].end_ns, kNoTime);  // still running
  ASSERT_EQ(r.nodes.size(), 5u);           // the tasks that started
  EXPECT_EQ(r.nodes[2].block_num, 2u);
  EXPECT_EQ(r.nodes[2].func_id, 2);
  EXPECT_EQ(analyze(r).kernels.size(), analyze(m).kernels.size());
}

TEST_F(DiagnosticsArtifacts, OnlyTheSwitchedFilesAreWritten) {
  RunModel m = sample_model();
  m.config = DiagnosticsConfig{};
  m.config.hardware_counters = true;
  m.variant = "host_build_graph";
  m.scopes.clear();
  write_run_directory(root_.string(), m, {});
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(root_)) names.insert(entry.path().filename());
  EXPECT_EQ(names, (std::set<std::string>{"counters.csv", "report.html", "run.json"}));
}

TEST_F(DiagnosticsArtifacts, MalformedFilesNameTheFile) {
  const RunModel m = sample_model();
  write_run_directory(root_.string(), m, {});
  const std::string tasks = read_text(root_ / "tasks.csv");
  auto expect_error = [&](const std::string& file, const std::string& fragment) {
    try {
      read_run_directory(root_.string());
      ADD_FAILURE() << "no error for " << file;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::DiagnosticsError);
      EXPECT_NE(e.message().find(file), std::string::npos) << e.message();
      EXPECT_NE(e.message().find(fragment), std::string::npos) << e.message();
    }
  };
  // A bad number on the second line of tasks.csv.
  std::string bad = tasks;
  bad.replace(bad.find('\n') + 1, 1, "x");
  write_text(root_ / "tasks.csv", bad);
  expect_error("tasks.csv", "line 2");
  write_text(root_ / "tasks.csv", "nonsense\n");
  expect_error("tasks.csv", "line 1");
  fs::remove(root_ / "tasks.csv");
  expect_error("tasks.csv", "missing");
  write_text(root_ / "tasks.csv", tasks);

  // deps.json: a broken node line, a broken edge, a truncated file; a whole-document deps.json
  // (not one element per line) still reads.
  const std::string deps = read_text(root_ / "deps.json");
  std::string broken = deps;
  broken.replace(broken.find("{\"task\":2"), 9, "{\"task\":x");
  write_text(root_ / "deps.json", broken);
  expect_error("deps.json", "line 4");
  broken = deps;
  broken.replace(broken.find("[1,3,"), 5, "[1;3,");
  write_text(root_ / "deps.json", broken);
  expect_error("deps.json", "malformed edge");
  broken = deps;  // a kind no version writes
  broken.replace(broken.find("\"after\""), 7, "\"later\"");
  write_text(root_ / "deps.json", broken);
  expect_error("deps.json", "malformed edge");
  write_text(root_ / "deps.json", deps.substr(0, deps.size() - 3));
  expect_error("deps.json", "truncated");
  write_text(root_ / "deps.json", nlohmann::json::parse(deps).dump(2));
  const RunModel whole = read_run_directory(root_.string());
  ASSERT_EQ(whole.edges.size(), m.edges.size());
  for (size_t i = 0; i < m.edges.size(); ++i) EXPECT_EQ(whole.edges[i].kinds, m.edges[i].kinds);
  const std::string trace = read_text(root_ / "trace.json");
  write_text(root_ / "trace.json", nlohmann::json::parse(trace).dump());
  EXPECT_EQ(read_run_directory(root_.string()).thread_spans.size(), m.thread_spans.size());
  write_text(root_ / "trace.json", trace.substr(0, trace.size() / 2));
  expect_error("trace.json", "malformed JSON");  // cut mid-line

  const std::string run = read_text(root_ / "run.json");
  write_text(root_ / "run.json", "{\n\"run_number\": 3,\n oops\n}");
  expect_error("run.json", "line 3");
  write_text(root_ / "run.json", "{\"run_number\": 3}");
  expect_error("run.json", "malformed");
  fs::remove(root_ / "run.json");
  expect_error("run.json", "missing");
}

TEST_F(DiagnosticsArtifacts, PublicSummaryAndReportRewrite) {
  const RunModel m = sample_model();
  write_run_directory(root_.string(), m, {});
  const std::string summary = diagnostics_summary(root_.string());
  EXPECT_NE(summary.find("verdict: "), std::string::npos);
  EXPECT_NE(summary.find(root_.string()), std::string::npos);
  fs::remove(root_ / "report.html");
  const std::string path = rewrite_diagnostics_report(root_.string());
  EXPECT_EQ(path, (root_ / "report.html").string());
  EXPECT_TRUE(fs::exists(path));
  EXPECT_THROW(diagnostics_summary((root_ / "missing").string()), Error);
}

}  // namespace
}  // namespace chiprt::diagnostics

namespace chiprt::diagnostics {
namespace {

// A wide, long run (CHIPRT_DIAG_LARGE_TASKS tasks, default 20000): every file streams, the
// reader rebuilds every block, and the path through the layered graph is found.
TEST_F(DiagnosticsArtifacts, LargeRunWritesAndReadsBack) {
  const char* env = std::getenv("CHIPRT_DIAG_LARGE_TASKS");
  const uint64_t tasks = env ? std::strtoull(env, nullptr, 10) : 20000;
  constexpr uint64_t kWidth = 16;  // tasks per layer, one per AIV core of 8 clusters
  RunModel m;
  m.run_number = 1;
  m.variant = "host_build_graph";
  m.config.swimlane_level = 2;
  m.config.task_timing = true;
  m.config.dependency_graph = true;
  m.config.output_dir = "out";
  m.shape = {4, 1, 8, 8, 24};
  m.kernels = {{0, "layer", CoreType::AIV, ""}};
  m.have_edges = true;
  for (uint64_t t = 0; t < tasks; ++t) {
    const uint64_t layer = t / kWidth;
    TaskNode node;
    node.task = t;
    node.func_id = 0;
    node.submit_begin_ns = t;
    node.submit_end_ns = t + 1;
    node.ready_ns = layer * 100 + 2;
    m.nodes.push_back(node);
    const int32_t core = 8 + static_cast<int32_t>(t % kWidth);
    m.blocks.push_back(
        {t, 0, core, layer * 100 + 3, layer * 100 + 5, layer * 100 + 95, layer * 100 + 97});
    m.scheduler_events.push_back({SchedulerEvent::Kind::Dispatch, 1, core, t, 0, layer * 100 + 3});
    if (layer > 0) {
      m.edges.push_back({t - kWidth, t});
      m.edges.push_back({(layer - 1) * kWidth + (t + 1) % kWidth, t});
    }
  }
  m.wall_ns = (tasks / kWidth + 1) * 100;
  write_run_directory(root_.string(), m, {});
  const RunModel r = read_run_directory(root_.string());
  ASSERT_EQ(r.blocks.size(), m.blocks.size());
  ASSERT_EQ(r.edges.size(), m.edges.size());
  EXPECT_EQ(r.scheduler_events.size(), m.scheduler_events.size());
  const Analysis a = analyze(r);
  EXPECT_EQ(a.path.size(), (tasks + kWidth - 1) / kWidth);
  EXPECT_EQ(a.bound, Bound::Kernels);
}

}  // namespace
}  // namespace chiprt::diagnostics
