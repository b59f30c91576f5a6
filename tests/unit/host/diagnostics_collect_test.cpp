// Diagnostics collected from inside a run, beyond the timeline: the ring orchestrator's scope
// statistics (tasks per scope, peak ring occupancy, back-pressure waits and the recommendation
// naming the ring setting) on a graph whose peaks are known, and the args dump (metadata at level
// 1, inputs at 2, inputs and outputs at 3) whose bytes round-trip through args.json + args.bin,
// with what a small byte budget leaves out listed; background writing (the same directory as a
// foreground write, back-pressure, a failed write reported by the flush, a failed run written at
// once). Both variants, threaded and serial.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "diagnostics/artifacts.h"
#include "host/device_runner.h"
#include "host/log.h"
#include "host_test_support.h"

namespace chiprt::host {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr int32_t kTouch = 0;
constexpr int32_t kGated = 1;
constexpr int32_t kDoublePlusOne = 2;
constexpr int32_t kIncrement = 3;

constexpr uint64_t kWindow = 16;      // the depth-1 task window of the scope test
constexpr uint64_t kChainTasks = 40;  // tasks of the depth-1 scope
constexpr uint64_t kInnerTasks = 3;   // tasks of the depth-2 scope
constexpr uint64_t kRootTasks = 2;    // tasks of the root scope

// Chain submissions the orchestration has made; the gated kernels (threaded runs) hold their core
// until the depth-1 window is full, so that the peaks and the wait do not depend on timing.
std::atomic<uint64_t> g_chain_submitted{0};
std::atomic<bool> g_gate_on{false};

void touch_kernel(int64_t*) {}
void gated_kernel(int64_t*) {
  if (!g_gate_on.load(std::memory_order_acquire)) return;
  for (uint64_t seen = g_chain_submitted.load(std::memory_order_acquire); seen < kWindow;
       seen = g_chain_submitted.load(std::memory_order_acquire)) {
    g_chain_submitted.wait(seen, std::memory_order_acquire);
  }
}

// Elementwise over a view of any rank, row-major: f(element of view 0) -> element of view 1.
template <typename F>
void map_views(const int64_t* args, int from, int to, F f) {
  const kernel::TensorView& in = kernel::view(args, from);
  const kernel::TensorView& out = kernel::view(args, to);
  const auto* src = reinterpret_cast<const float*>(static_cast<uintptr_t>(in.data_addr()));
  auto* dst = reinterpret_cast<float*>(static_cast<uintptr_t>(out.data_addr()));
  // Both views are 2-D [rows, columns] in these tests.
  uint64_t k = 0;
  for (uint64_t r = 0; r < in.dims[0].shape; ++r) {
    for (uint64_t c = 0; c < in.dims[1].shape; ++c, ++k) {
      const float x = src[r * in.dims[0].stride + c * in.dims[1].stride];
      dst[(k / out.dims[1].shape) * out.dims[0].stride +
          (k % out.dims[1].shape) * out.dims[1].stride] = f(x);
    }
  }
}
void double_plus_one_kernel(int64_t* args) {
  map_views(args, 0, 1, [](float x) { return 2 * x + 1; });
}
void increment_kernel(int64_t* args) {
  map_views(args, 0, 0, [](float x) { return x + 1; });
}

// Root scope: kRootTasks touches. Depth 1: a depth-2 scope of kInnerTasks gated tasks, then a
// chain of kChainTasks (the first gated) in a window of kWindow, which must wait for room.
void nested_scopes(Orchestration& orch, const TaskArgs& args) {
  const Tensor& grid = args.tensor(0);
  auto slot = [&](uint64_t i) { return grid.view({1}, {i}); };
  for (uint64_t i = 0; i < kRootTasks; ++i) {
    orch.submit(kTouch, CoreType::AIV, TaskArgs().output_existing(slot(100 + i)));
  }
  Scope depth1(orch);
  {
    Scope depth2(orch);
    for (uint64_t i = 0; i < kInnerTasks; ++i) {
      orch.submit(kGated, CoreType::AIV, TaskArgs().output_existing(slot(200 + i)));
    }
  }
  for (uint64_t i = 0; i < kChainTasks; ++i) {
    orch.submit(i == 0 ? kGated : kTouch, CoreType::AIV, TaskArgs().inout(slot(0)));
    g_chain_submitted.fetch_add(1, std::memory_order_acq_rel);
    g_chain_submitted.notify_all();
  }
}

// x: a [4, 8] matrix; task 0 reads its even columns (a strided [4, 4] view) into y ([4, 4],
// contiguous) as 2x + 1, task 1 increments y in place.
void strided_pair(Orchestration& orch, const TaskArgs& args) {
  const Tensor even_columns = args.tensor(0).slice(1, 0, 8, 2);
  const Tensor& y = args.tensor(1);
  orch.submit(kDoublePlusOne, CoreType::AIV, TaskArgs().in(even_columns).output_existing(y));
  orch.submit(kIncrement, CoreType::AIV, TaskArgs().inout(y));
}

std::vector<uint8_t> callable_with(OrchestrationEntry orchestration) {
  return CallableBuilder()
      .orchestration_function(orchestration, ArgSignature{})
      .kernel_function(kTouch, CoreType::AIV, &touch_kernel, ArgSignature{})
      .kernel_function(kGated, CoreType::AIV, &gated_kernel, ArgSignature{})
      .kernel_function(kDoublePlusOne, CoreType::AIV, &double_plus_one_kernel, ArgSignature{})
      .kernel_function(kIncrement, CoreType::AIV, &increment_kernel, ArgSignature{})
      .build();
}

struct Mode {
  const char* name;
  RuntimeVariant runtime;
  bool serial;
};
const Mode kModes[] = {
    {"hbg", RuntimeVariant::HostBuildGraph, false},
    {"hbg_serial", RuntimeVariant::HostBuildGraph, true},
    {"ring", RuntimeVariant::TensormapRingbuffer, false},
    {"ring_serial", RuntimeVariant::TensormapRingbuffer, true},
};

class DiagnosticsCollect : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    saved_level_ = log_level();
    set_log_level(LogLevel::Off);
    g_chain_submitted.store(0);
    // A serial run executes kernels on the orchestrating thread: a gate would never open.
    g_gate_on.store(!GetParam().serial);
    dir_ = fs::temp_directory_path() /
           ("chiprt_diag_collect_" + std::to_string(::getpid()) + "_" + GetParam().name);
    fs::remove_all(dir_);
    runner_ = std::make_unique<DeviceRunner>(
        test::make_sim(/*clusters=*/3, GetParam().serial, 256ull << 20, /*host_threads=*/2));
    runner_->attach(0);
    runner_->ensure_initialized();
  }
  void TearDown() override {
    g_chain_submitted.store(kWindow);
    g_chain_submitted.notify_all();
    runner_.reset();
    set_log_level(saved_level_);
    fs::remove_all(dir_);
  }

  CallConfig config(const DiagnosticsConfig& diagnostics) const {
    CallConfig config = test::small_call_config(4096);
    config.runtime = GetParam().runtime;
    config.serial = GetParam().serial;
    config.diagnostics = diagnostics;
    config.diagnostics.output_dir = dir_.string();
    return config;
  }
  bool ring() const { return GetParam().runtime == RuntimeVariant::TensormapRingbuffer; }

  std::unique_ptr<DeviceRunner> runner_;
  fs::path dir_;
  LogLevel saved_level_ = LogLevel::Warn;
};

const diagnostics::ScopeStat* scope_numbered(const diagnostics::RunModel& model, uint64_t number) {
  for (const diagnostics::ScopeStat& s : model.scopes) {
    if (s.scope == number) return &s;
  }
  return nullptr;
}

TEST_P(DiagnosticsCollect, ScopeStatsShowTheKnownPeaksAndTheWindowWait) {
  const DeviceBuffer grid = runner_->allocate(1024 * sizeof(float));
  runner_->register_callable(0, callable_with(&nested_scopes));
  DiagnosticsConfig diagnostics;
  diagnostics.scope_stats = true;
  CallConfig call = config(diagnostics);
  call.rings.task_window = {1024, kWindow, 1024};
  TaskArgs args;
  args.inout(Tensor::make(grid, {1024}, DataType::F32));
  const RunReport report = runner_->run(0, args, call);
  const fs::path run_dir = report.diagnostics_dir;
  const diagnostics::RunModel model = diagnostics::read_run_directory(run_dir.string());
  if (!ring()) {
    // host_build_graph has no rings: the note says so and no file is written.
    EXPECT_TRUE(model.scopes.empty());
    EXPECT_FALSE(fs::exists(run_dir / diagnostics::kScopeStatsFile));
    bool noted = false;
    for (const std::string& note : model.notes) noted |= note.find("scope stats") == 0;
    EXPECT_TRUE(noted);
    return;
  }
  ASSERT_TRUE(fs::exists(run_dir / diagnostics::kScopeStatsFile));
  ASSERT_EQ(model.scopes.size(), 3u);
  const diagnostics::ScopeStat* root = scope_numbered(model, 0);
  const diagnostics::ScopeStat* depth1 = scope_numbered(model, 1);
  const diagnostics::ScopeStat* depth2 = scope_numbered(model, 2);
  ASSERT_TRUE(root && depth1 && depth2);

  EXPECT_EQ(root->depth, 0u);
  EXPECT_EQ(root->tasks, kRootTasks);
  EXPECT_EQ(root->task_window_capacity, 1024u);
  EXPECT_EQ(depth1->depth, 1u);
  EXPECT_EQ(depth1->tasks, kChainTasks);  // its nested scope's tasks excluded
  EXPECT_EQ(depth1->task_window_capacity, kWindow);
  EXPECT_EQ(depth2->depth, 2u);
  EXPECT_EQ(depth2->tasks, kInnerTasks);
  for (const diagnostics::ScopeStat* s : {root, depth1, depth2}) {
    EXPECT_EQ(s->peak_heap_bytes, 0u) << "scope " << s->scope;  // no runtime outputs
    EXPECT_EQ(s->waits[1] + s->waits[2], 0u) << "scope " << s->scope;
  }
  // The chain fills its window of 16 (its first task holds its core until then) and the 17th
  // submission waits for room: the recommendation names the setting and the depth.
  EXPECT_EQ(depth1->peak_task_window, kWindow);
  EXPECT_GE(depth1->waits[0], 1u);
  EXPECT_GT(depth1->wait_ns[0], 0u);
  // scope_stats.jsonl: one line per scope; the waiting one's recommendation names the setting.
  std::ifstream lines(run_dir / diagnostics::kScopeStatsFile);
  std::map<uint64_t, std::string> advice;
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json scope = nlohmann::json::parse(line);
    advice[scope.at("scope").get<uint64_t>()] = scope.at("recommendation").get<std::string>();
  }
  ASSERT_EQ(advice.size(), 3u);
  EXPECT_THAT(advice[1],
              HasSubstr("raise rings.task_window (CHIPRT_RING_TASK_WINDOW) for depth 1"));
  EXPECT_EQ(advice[0], "");
  EXPECT_EQ(advice[2], "");
  EXPECT_LE(root->peak_task_window, kRootTasks);
  EXPECT_GE(root->peak_task_window, 1u);
  if (!GetParam().serial) {
    // The gated tasks of depth 2 all hold their cores while the scope is open.
    EXPECT_EQ(depth2->peak_task_window, kInnerTasks);
  } else {
    EXPECT_GE(depth2->peak_task_window, 1u);
    EXPECT_LE(depth2->peak_task_window, kInnerTasks);
  }
  EXPECT_EQ(root->waits[0], 0u);
  EXPECT_EQ(depth2->waits[0], 0u);
}

TEST_P(DiagnosticsCollect, AFailureInsideAScopeStillReportsWhatTheScopesSaw) {
  if (!ring()) GTEST_SKIP() << "scope statistics are the ring variant's";
  const DeviceBuffer grid = runner_->allocate(1024 * sizeof(float));
  runner_->register_callable(
      0, callable_with([](Orchestration& orch, const TaskArgs& args) {
        orch.submit(kTouch, CoreType::AIV,
                    TaskArgs().output_existing(args.tensor(0).view({1}, {0})));
        Scope inner(orch);
        orch.submit(kTouch, CoreType::AIV,
                    TaskArgs().output_existing(args.tensor(0).view({1}, {1})));
        throw Error(StatusCode::InvalidArgument, "gives up inside a scope");
      }));
  DiagnosticsConfig diagnostics;
  diagnostics.scope_stats = true;
  TaskArgs args;
  args.inout(Tensor::make(grid, {1024}, DataType::F32));
  EXPECT_THROW(runner_->run(0, args, config(diagnostics)), Error);
  const diagnostics::RunModel model =
      diagnostics::read_run_directory(latest_diagnostics_run(dir_.string()));
  ASSERT_TRUE(model.error.has_value());
  const diagnostics::ScopeStat* root = scope_numbered(model, 0);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->tasks, 1u);
  // The scope the run stopped in never ended: its figures are there up to the stop, and the notes
  // say it did not end.
  const diagnostics::ScopeStat* inner = scope_numbered(model, 1);
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->depth, 1u);
  EXPECT_EQ(inner->tasks, 1u);
  bool noted = false;
  for (const std::string& note : model.notes)
    noted |= note.find("did not end") != std::string::npos;
  EXPECT_TRUE(noted);
}

struct ArgsRun {
  diagnostics::RunModel model;
  std::vector<unsigned char> bin;
  nlohmann::json args_json;
  std::vector<float> x;
};

class DiagnosticsArgs : public DiagnosticsCollect {
 protected:
  ArgsRun run_strided_pair(int level, uint64_t budget) {
    const DeviceBuffer x_buffer = runner_->allocate(32 * sizeof(float));
    const DeviceBuffer y_buffer = runner_->allocate(16 * sizeof(float));
    ArgsRun out;
    for (int i = 0; i < 32; ++i) out.x.push_back(static_cast<float>(i) * 0.5f - 3);
    runner_->copy_to_device(x_buffer.addr, out.x.data(), 32 * sizeof(float));
    runner_->register_callable(0, callable_with(&strided_pair));
    DiagnosticsConfig diagnostics;
    diagnostics.args_dump_level = level;
    diagnostics.args_dump_budget_bytes = budget;
    TaskArgs args;
    args.in(Tensor::make(x_buffer, {4, 8}, DataType::F32))
        .output_existing(Tensor::make(y_buffer, {4, 4}, DataType::F32));
    const RunReport report = runner_->run(0, args, config(diagnostics));
    const fs::path run_dir = report.diagnostics_dir;
    out.model = diagnostics::read_run_directory(run_dir.string());
    std::ifstream json_file(run_dir / diagnostics::kArgsJsonFile);
    out.args_json = nlohmann::json::parse(json_file);
    std::ifstream bin_file(run_dir / diagnostics::kArgsBinFile, std::ios::binary);
    out.bin.assign(std::istreambuf_iterator<char>(bin_file), {});
    EXPECT_EQ(out.args_json.at("bin_bytes").get<uint64_t>(), out.bin.size());
    return out;
  }
  static std::vector<float> floats_at(const std::vector<unsigned char>& bin,
                                      const diagnostics::TensorArgRecord::Data& d) {
    std::vector<float> values(d.bytes / sizeof(float));
    EXPECT_LE(d.offset + d.bytes, bin.size());
    if (d.offset + d.bytes <= bin.size())
      std::memcpy(values.data(), bin.data() + d.offset, d.bytes);
    return values;
  }
  static const diagnostics::TensorArgRecord* arg(const diagnostics::RunModel& model, uint64_t task,
                                                 uint32_t index) {
    for (const diagnostics::TensorArgRecord& a : model.args) {
      if (a.task == task && a.index == index) return &a;
    }
    return nullptr;
  }
};

TEST_P(DiagnosticsArgs, LevelOneRecordsEveryViewsMetadataAndNoData) {
  const ArgsRun run = run_strided_pair(1, DiagnosticsConfig::kDefaultArgsDumpBudgetBytes);
  ASSERT_EQ(run.model.args.size(), 3u);
  const diagnostics::TensorArgRecord* even = arg(run.model, 0, 0);
  const diagnostics::TensorArgRecord* y_out = arg(run.model, 0, 1);
  const diagnostics::TensorArgRecord* y_inout = arg(run.model, 1, 0);
  ASSERT_TRUE(even && y_out && y_inout);
  EXPECT_EQ(even->tag, ArgTag::In);
  EXPECT_EQ(even->dtype, DataType::F32);
  EXPECT_EQ(even->shape, (std::vector<uint64_t>{4, 4}));
  EXPECT_EQ(even->strides, (std::vector<uint64_t>{8, 2}));
  EXPECT_EQ(even->start_offset, 0u);
  EXPECT_EQ(y_out->tag, ArgTag::OutputExisting);
  EXPECT_EQ(y_out->strides, (std::vector<uint64_t>{4, 1}));
  EXPECT_EQ(y_inout->tag, ArgTag::InOut);
  EXPECT_EQ(y_inout->buffer_addr, y_out->buffer_addr);
  EXPECT_NE(even->buffer_addr, y_out->buffer_addr);
  for (const diagnostics::TensorArgRecord& a : run.model.args) {
    EXPECT_FALSE(a.before.present) << "task " << a.task;
    EXPECT_FALSE(a.after.present) << "task " << a.task;
  }
  EXPECT_TRUE(run.bin.empty());
}

TEST_P(DiagnosticsArgs, LevelThreeRoundTripsInputsAndOutputs) {
  const ArgsRun run = run_strided_pair(3, DiagnosticsConfig::kDefaultArgsDumpBudgetBytes);
  std::vector<float> even_columns, doubled, incremented;
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 8; c += 2) {
      const float x = run.x[static_cast<size_t>(r * 8 + c)];
      even_columns.push_back(x);
      doubled.push_back(2 * x + 1);
      incremented.push_back(2 * x + 2);
    }
  }
  const diagnostics::TensorArgRecord* even = arg(run.model, 0, 0);
  const diagnostics::TensorArgRecord* y_out = arg(run.model, 0, 1);
  const diagnostics::TensorArgRecord* y_inout = arg(run.model, 1, 0);
  ASSERT_TRUE(even && y_out && y_inout);
  // An input: its data before the kernel, gathered row-major from the strided view.
  ASSERT_TRUE(even->before.present);
  EXPECT_EQ(even->before.bytes, 64u);
  EXPECT_EQ(floats_at(run.bin, even->before), even_columns);
  EXPECT_FALSE(even->after.present);
  // An output: after the kernel only.
  EXPECT_FALSE(y_out->before.present);
  ASSERT_TRUE(y_out->after.present);
  EXPECT_EQ(floats_at(run.bin, y_out->after), doubled);
  // In and out: both.
  ASSERT_TRUE(y_inout->before.present && y_inout->after.present);
  EXPECT_EQ(floats_at(run.bin, y_inout->before), doubled);
  EXPECT_EQ(floats_at(run.bin, y_inout->after), incremented);
  EXPECT_TRUE(run.args_json.at("left_out").empty());
}

TEST_P(DiagnosticsArgs, LevelTwoDumpsInputsOnly) {
  const ArgsRun run = run_strided_pair(2, DiagnosticsConfig::kDefaultArgsDumpBudgetBytes);
  for (const diagnostics::TensorArgRecord& a : run.model.args) {
    EXPECT_FALSE(a.after.present) << "task " << a.task << " index " << a.index;
    EXPECT_EQ(a.before.present, a.tag != ArgTag::OutputExisting)
        << "task " << a.task << " index " << a.index;
  }
  EXPECT_EQ(run.bin.size(), 128u);  // task 0's input and task 1's in-out, 64 bytes each
}

TEST_P(DiagnosticsArgs, ASmallBudgetListsWhatItLeftOut) {
  // Room for the first view only: task 0's input. Everything after it is listed as left out.
  const ArgsRun run = run_strided_pair(3, 64);
  const diagnostics::TensorArgRecord* even = arg(run.model, 0, 0);
  ASSERT_NE(even, nullptr);
  EXPECT_EQ(even->before.bytes, 64u);
  EXPECT_EQ(run.bin.size(), 64u);
  const nlohmann::json& left_out = run.args_json.at("left_out");
  ASSERT_EQ(left_out.size(), 3u);
  for (const nlohmann::json& entry : left_out) {
    EXPECT_EQ(entry.at("wanted_bytes").get<uint64_t>(), 64u);
  }
  bool noted = false;
  for (const std::string& note : run.model.notes) {
    noted |= note.find("raise args_dump_budget_bytes") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

// DiagnosticsConfig::background_write: run() returns once the records are read and the
// DeviceRunner's writer thread writes the directory; flush_diagnostics waits for it.
class DiagnosticsBackground : public DiagnosticsCollect {
 protected:
  void SetUp() override {
    DiagnosticsCollect::SetUp();
    x_ = runner_->allocate(32 * sizeof(float));
    y_ = runner_->allocate(16 * sizeof(float));
    std::vector<float> x(32, 1.5f);
    runner_->copy_to_device(x_.addr, x.data(), x.size() * sizeof(float));
    runner_->register_callable(0, callable_with(&strided_pair));
  }
  DiagnosticsConfig everything(bool background) const {
    DiagnosticsConfig diagnostics = DiagnosticsConfig::all(dir_.string());
    diagnostics.args_dump_level = 3;
    diagnostics.background_write = background;
    return diagnostics;
  }
  RunReport run(const DiagnosticsConfig& diagnostics) {
    TaskArgs args;
    args.in(Tensor::make(x_, {4, 8}, DataType::F32))
        .output_existing(Tensor::make(y_, {4, 4}, DataType::F32));
    return runner_->run(0, args, config(diagnostics));
  }
  static std::vector<std::string> file_names(const fs::path& run_dir) {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(run_dir)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  static std::string contents(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  DeviceBuffer x_{};
  DeviceBuffer y_{};
};

TEST_P(DiagnosticsBackground, WritesTheSameDirectoryAsAForegroundWrite) {
  const fs::path foreground = run(everything(false)).diagnostics_dir;
  const RunReport report = run(everything(true));
  const fs::path background = report.diagnostics_dir;
  ASSERT_FALSE(background.empty());
  EXPECT_NE(background, foreground);
  EXPECT_TRUE(runner_->flush_diagnostics().empty());
  EXPECT_EQ(file_names(background), file_names(foreground));
  EXPECT_THAT(file_names(background), ::testing::Contains(std::string(diagnostics::kRunFile)));
  // The same graph, tensors and data; only the times differ.
  EXPECT_EQ(contents(background / diagnostics::kArgsBinFile),
            contents(foreground / diagnostics::kArgsBinFile));
  auto args_records = [](const fs::path& run_dir) {
    return nlohmann::json::parse(contents(run_dir / diagnostics::kArgsJsonFile)).at("records");
  };
  EXPECT_EQ(args_records(background), args_records(foreground));
  const diagnostics::RunModel a = diagnostics::read_run_directory(foreground.string());
  const diagnostics::RunModel b = diagnostics::read_run_directory(background.string());
  EXPECT_EQ(b.nodes.size(), a.nodes.size());
  // Every dependency the orchestration derived, on both variants (timing does not change them).
  ASSERT_EQ(b.edges.size(), a.edges.size());
  for (size_t i = 0; i < a.edges.size(); ++i) {
    EXPECT_EQ(b.edges[i].producer, a.edges[i].producer);
    EXPECT_EQ(b.edges[i].consumer, a.edges[i].consumer);
    EXPECT_EQ(b.edges[i].kinds, a.edges[i].kinds);
  }
  EXPECT_EQ(b.blocks.size(), a.blocks.size());
  EXPECT_TRUE(b.config.background_write);
  EXPECT_FALSE(a.config.background_write);
  // The run's wall time ends when run() returns, not when the writer got to it.
  EXPECT_LE(b.wall_ns, report.host_total_ns);
}

// The host track shows the run's phases in order, each inside the run: prepare (holding the
// graph build and the image upload of host_build_graph), launch, wait, read-back.
TEST_P(DiagnosticsBackground, TheHostTrackShowsEachPhaseInOrder) {
  const RunReport report = run(everything(false));
  const diagnostics::RunModel model = diagnostics::read_run_directory(report.diagnostics_dir);
  auto span = [&](const std::string& name) -> const diagnostics::HostSpan* {
    const diagnostics::HostSpan* found = nullptr;
    for (const diagnostics::HostSpan& h : model.host_spans) {
      if (h.name != name) continue;
      EXPECT_EQ(found, nullptr) << "two host spans named " << name;
      found = &h;
    }
    return found;
  };
  for (const diagnostics::HostSpan& h : model.host_spans) {
    EXPECT_LE(h.begin_ns, h.end_ns) << h.name;
    EXPECT_LE(h.end_ns, model.wall_ns) << h.name;
  }
  const diagnostics::HostSpan* prepare = span("prepare");
  const diagnostics::HostSpan* launch = span("launch");
  const diagnostics::HostSpan* wait = span("wait");
  const diagnostics::HostSpan* read_back = span("read-back");
  ASSERT_NE(prepare, nullptr);
  ASSERT_NE(launch, nullptr);
  ASSERT_NE(wait, nullptr);
  ASSERT_NE(read_back, nullptr);
  EXPECT_EQ(prepare->begin_ns, 0u);
  EXPECT_EQ(launch->begin_ns, prepare->end_ns);
  EXPECT_EQ(wait->begin_ns, launch->end_ns);
  EXPECT_LE(wait->end_ns, read_back->begin_ns);
  const diagnostics::HostSpan* orchestration = span("orchestration");
  const diagnostics::HostSpan* upload = span("upload");
  if (GetParam().runtime == RuntimeVariant::HostBuildGraph) {
    // The host builds the graph and uploads its image before the launch.
    ASSERT_NE(orchestration, nullptr);
    ASSERT_NE(upload, nullptr);
    EXPECT_GE(orchestration->begin_ns, prepare->begin_ns);
    EXPECT_LE(orchestration->end_ns, upload->begin_ns);
    EXPECT_LE(upload->end_ns, prepare->end_ns);
  } else {
    // The ring variant orchestrates on the chip: its submits are on the AICPU tracks.
    EXPECT_EQ(orchestration, nullptr);
    EXPECT_EQ(upload, nullptr);
  }
}

TEST_P(DiagnosticsBackground, MoreRunsThanTheQueueHoldsAreAllWritten) {
  std::vector<std::string> dirs;
  for (std::size_t i = 0; i < 2 * DiagWriteQueue::kMaxPending + 1; ++i) {
    dirs.push_back(run(everything(true)).diagnostics_dir);
  }
  EXPECT_TRUE(runner_->flush_diagnostics().empty());
  EXPECT_EQ(latest_diagnostics_run(dir_.string()), dirs.back());
  for (size_t i = 0; i < dirs.size(); ++i) {
    SCOPED_TRACE(dirs[i]);
    if (i > 0) {
      EXPECT_LT(dirs[i - 1], dirs[i]);
    }
    const diagnostics::RunModel model = diagnostics::read_run_directory(dirs[i]);
    EXPECT_EQ(model.run_number, i + 1);
    EXPECT_EQ(model.blocks.size(), 2u);
  }
}

TEST_P(DiagnosticsBackground, AWriteThatFailsInTheBackgroundIsReportedByFlush) {
  // Hold the writer until the run's directory is gone, so the write must fail.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  runner_->diag_write_queue().push("held", [released] {
    released.wait();
    return std::string();
  });
  const std::string lost = run(everything(true)).diagnostics_dir;
  ASSERT_TRUE(fs::is_directory(lost));
  fs::remove_all(lost);
  release.set_value();
  const std::vector<std::string> failures = runner_->flush_diagnostics();
  ASSERT_EQ(failures.size(), 1u);
  EXPECT_THAT(failures[0], HasSubstr(lost + ": "));
  EXPECT_THAT(failures[0], HasSubstr("cannot open for writing"));
  // Nothing else is harmed: the next run writes its directory.
  const std::string next = run(everything(true)).diagnostics_dir;
  EXPECT_TRUE(runner_->flush_diagnostics().empty());
  EXPECT_TRUE(fs::exists(fs::path(next) / diagnostics::kRunFile));
}

TEST_P(DiagnosticsBackground, AFailedRunWritesItsDirectoryBeforeItThrows) {
  runner_->register_callable(1, callable_with([](Orchestration& orch, const TaskArgs& args) {
                               orch.submit(kTouch, CoreType::AIV,
                                           TaskArgs().output_existing(args.tensor(0)));
                               throw Error(StatusCode::InvalidArgument, "gives up");
                             }));
  TaskArgs args;
  args.inout(Tensor::make(y_, {16}, DataType::F32));
  try {
    runner_->run(1, args, config(everything(true)));
    FAIL() << "the run should fail";
  } catch (const Error& e) {
    EXPECT_THAT(e.message(), HasSubstr("gives up"));
    EXPECT_THAT(e.message(), HasSubstr("diagnostics of the failed run: "));
  }
  // Without a flush: the failure path does not queue.
  EXPECT_EQ(runner_->diag_write_queue().pending(), 0u);
  const diagnostics::RunModel model =
      diagnostics::read_run_directory(latest_diagnostics_run(dir_.string()));
  ASSERT_TRUE(model.error.has_value());
  EXPECT_THAT(model.error->message, HasSubstr("gives up"));
}

INSTANTIATE_TEST_SUITE_P(Modes, DiagnosticsCollect, ::testing::ValuesIn(kModes),
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Modes, DiagnosticsArgs, ::testing::ValuesIn(kModes),
                         [](const auto& info) { return std::string(info.param.name); });
INSTANTIATE_TEST_SUITE_P(Modes, DiagnosticsBackground, ::testing::ValuesIn(kModes),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace chiprt::host
