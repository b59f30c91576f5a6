// CLI tests: run the built `chiprt` binary (found next to this test binary's build directory, at
// <build>/tools/chiprt) and check its output and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "chiprt/version.h"
#include "cli/cli_support.h"

namespace {

using chiprt::cli_test::chiprt_binary;
using chiprt::cli_test::CommandResult;
using chiprt::cli_test::run_chiprt;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

class ChiprtCli : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(chiprt_binary()))
        << "chiprt binary not found at " << chiprt_binary() << "; build target chiprt_cli";
  }
};

TEST_F(ChiprtCli, ListShowsEveryExampleAndCase) {
  const CommandResult r = run_chiprt("list");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* name :
       {"vector_example", "bgemm", "wavefront", "default", "small", "medium", "large"}) {
    EXPECT_TRUE(contains(r.output, name)) << name << " missing from:\n" << r.output;
  }
}

TEST_F(ChiprtCli, VersionPrintsTheVersionOfTheHeader) {
  const CommandResult r = run_chiprt("--version");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "chiprt " CHIPRT_VERSION_STRING "\n");
}

TEST_F(ChiprtCli, RunVectorExamplePassesWithTimingTable) {
  const CommandResult r = run_chiprt("run vector_example");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "PASS vector_example/default")) << r.output;
  EXPECT_TRUE(contains(r.output, "max abs error")) << r.output;
  EXPECT_TRUE(contains(r.output, "), 20 kernel tasks\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "timing (us)")) << r.output;
  EXPECT_TRUE(contains(r.output, "host prepare")) << r.output;
  EXPECT_TRUE(contains(r.output, "device wall")) << r.output;
  EXPECT_TRUE(contains(r.output, "run_wall")) << r.output;
}

// --graph: the first round's exported graph, its shape printed and its DOT written.
TEST_F(ChiprtCli, GraphOptionPrintsTheShapeAndWritesDot) {
  const std::filesystem::path dot =
      std::filesystem::temp_directory_path() / ("chiprt-cli-graph-" + std::to_string(getpid()));
  for (const char* runtime : {"host_build_graph", "tensormap_ringbuffer"}) {
    SCOPED_TRACE(runtime);
    std::filesystem::remove(dot);
    const CommandResult r = run_chiprt("run bgemm --case small --rounds 2 --runtime " +
                                       std::string(runtime) + " --graph " + dot.string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "PASS bgemm/small")) << r.output;
    // 4 x 4 C tiles, each a chain of 4 (matmul -> accumulate) steps and its scope's fence.
    EXPECT_TRUE(contains(r.output,
                         "graph: 128 kernel tasks, 16 runtime scope fences, 240 edges, 64 "
                         "sources, 16 sinks, depth 6"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "graph written to " + dot.string())) << r.output;
    std::ifstream in(dot);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.rfind("digraph chiprt {\n", 0), 0u) << text.substr(0, 200);
    // The last node is the last tile's scope fence: internal, no task id.
    EXPECT_TRUE(contains(text, "  t143 [label=\"fence\", style=dashed];")) << text;
    EXPECT_TRUE(contains(text, "  t142 [label=\"t127 f1 aiv\"];")) << text;
    std::size_t edges = 0;
    for (std::size_t at = text.find(" -> "); at != std::string::npos;
         at = text.find(" -> ", at + 1)) {
      ++edges;
    }
    EXPECT_EQ(edges, 240u);
  }
  std::filesystem::remove(dot);

  const CommandResult bad = run_chiprt("run vector_example --graph /nonexistent-dir/g.dot");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_TRUE(contains(bad.output, "--graph: cannot open '/nonexistent-dir/g.dot' for writing"))
      << bad.output;
  EXPECT_FALSE(contains(bad.output, "PASS")) << bad.output;
}

TEST_F(ChiprtCli, RoundsReportMedianMinMax) {
  const CommandResult r = run_chiprt("run bgemm --case small --rounds 3 --clusters 2 --serial");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "PASS bgemm/small")) << r.output;
  // The task count as the report and the docs state it.
  EXPECT_TRUE(contains(r.output, "), 128 kernel tasks\n")) << r.output;
  EXPECT_TRUE(contains(r.output, "over 3 rounds")) << r.output;
  EXPECT_TRUE(contains(r.output, "median")) << r.output;
  EXPECT_TRUE(contains(r.output, "serial")) << r.output;
}

TEST_F(ChiprtCli, WavefrontWithExplicitAicpuThreads) {
  const CommandResult r = run_chiprt("run wavefront --case small --aicpu-threads 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "PASS wavefront/small")) << r.output;
  EXPECT_TRUE(contains(r.output, "), 64 kernel tasks\n")) << r.output;
}

// A run's task count with dependency-only tasks, stated as the report and the docs state it.
TEST_F(ChiprtCli, TaskCountNamesTheDependencyOnlyTasks) {
  const CommandResult r = run_chiprt("run paged_attention --case small");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "), 76 kernel tasks + 4 dependency-only\n")) << r.output;
}

TEST_F(ChiprtCli, UnknownExampleNamesTheValidOnes) {
  const CommandResult r = run_chiprt("run no_such_example");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "no_such_example")) << r.output;
  EXPECT_TRUE(contains(r.output, "vector_example, bgemm, wavefront")) << r.output;
}

TEST_F(ChiprtCli, UnknownCaseNamesTheValidOnes) {
  const CommandResult r = run_chiprt("run bgemm --case huge");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "huge")) << r.output;
  EXPECT_TRUE(contains(r.output, "small, medium, large")) << r.output;
}

TEST_F(ChiprtCli, ZeroClustersIsAUsageError) {
  const CommandResult r = run_chiprt("run vector_example --clusters 0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--clusters")) << r.output;
}

// An invalid configuration the runtime's validation finds is a usage error (exit 2), as a bad
// option is.
TEST_F(ChiprtCli, OneAicpuThreadIsRejectedByTheRuntime) {
  const CommandResult r = run_chiprt("run vector_example --aicpu-threads 1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "[InvalidConfig]")) << r.output;
  EXPECT_TRUE(contains(r.output, "aicpu_thread_num")) << r.output;
}

TEST_F(ChiprtCli, TooManyClustersIsRejectedByTheRuntime) {
  const CommandResult r = run_chiprt("run vector_example --clusters 25");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "[InvalidConfig]")) << r.output;
  EXPECT_TRUE(contains(r.output, "25")) << r.output;
}

TEST_F(ChiprtCli, BadOptionsAreUsageErrors) {
  EXPECT_EQ(run_chiprt("").exit_code, 2);
  EXPECT_EQ(run_chiprt("run").exit_code, 2);
  EXPECT_EQ(run_chiprt("run vector_example --runtime fastest").exit_code, 2);
  EXPECT_EQ(run_chiprt("run vector_example --rounds 0").exit_code, 2);
  EXPECT_EQ(run_chiprt("run vector_example --no-such-flag").exit_code, 2);
}

// An empty value would read as an option not given; an option before the subcommand, or a number
// too large for an int, is named as what it is.
TEST_F(ChiprtCli, EmptyValuesLeadingOptionsAndHugeNumbersAreNamed) {
  CommandResult r = run_chiprt("run bgemm --case ''");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--case is empty")) << r.output;
  r = run_chiprt("run ''");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "the example argument is empty")) << r.output;
  r = run_chiprt("--serial run vector_example");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "'--serial' is not an option of chiprt itself")) << r.output;
  EXPECT_FALSE(contains(r.output, "A subcommand is required")) << r.output;
  r = run_chiprt("run vector_example --rounds 99999999999");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "'99999999999' is too large")) << r.output;
}

TEST_F(ChiprtCli, UnknownSubcommandIsNamedWithTheClosest) {
  CommandResult r = run_chiprt("rnu vector_example");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "unknown subcommand 'rnu'; did you mean 'run'?")) << r.output;
  EXPECT_TRUE(contains(r.output, "list, run, report, bench")) << r.output;
  EXPECT_FALSE(contains(r.output, "A subcommand is required")) << r.output;
  r = run_chiprt("lsit");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "did you mean 'list'?")) << r.output;
  r = run_chiprt("xyzzyplugh");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "unknown subcommand 'xyzzyplugh'")) << r.output;
  EXPECT_FALSE(contains(r.output, "did you mean")) << r.output;
}

TEST_F(ChiprtCli, RunHelpExplainsTheTimingRowsAndExitCodes) {
  const CommandResult r = run_chiprt("run --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* row :
       {"host prepare", "device wall", "host total", "run_wall", "preamble", "load", "graph_build",
        "orchestration", "scheduling", "post_orchestration", "Exit codes: 0"}) {
    EXPECT_TRUE(contains(r.output, row)) << row << "\n" << r.output;
  }
}

TEST_F(ChiprtCli, HelpExitsZero) {
  const CommandResult r = run_chiprt("run --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--aicpu-threads")) << r.output;
}

// --isolated: the chip runs in a device process of its own (SimIsolation::Process), on both
// runtimes, and the run says so.
TEST_F(ChiprtCli, IsolatedRunsTheExampleInADeviceProcess) {
  const CommandResult help = run_chiprt("run --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_TRUE(contains(help.output, "--isolated")) << help.output;
  for (const char* runtime : {"host_build_graph", "tensormap_ringbuffer"}) {
    SCOPED_TRACE(runtime);
    const CommandResult r =
        run_chiprt(std::string("run vector_example --isolated --rounds 2 --runtime ") + runtime);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "PASS vector_example/default")) << r.output;
    EXPECT_TRUE(contains(r.output, "chip in an isolated device process")) << r.output;
  }
  // Without the flag the chip is in process (unless CHIPRT_SIM_ISOLATION says otherwise).
  const CommandResult in_process = run_chiprt("run vector_example", "CHIPRT_SIM_ISOLATION=none");
  EXPECT_EQ(in_process.exit_code, 0) << in_process.output;
  EXPECT_FALSE(contains(in_process.output, "isolated device process")) << in_process.output;
}

TEST_F(ChiprtCli, RingbufferRuntimeRunsTheExamples) {
  for (const char* example : {"vector_example --case small", "bgemm --case small"}) {
    const CommandResult r =
        run_chiprt(std::string("run ") + example + " --runtime tensormap_ringbuffer --clusters 2");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "PASS")) << r.output;
    EXPECT_TRUE(contains(r.output, "runtime tensormap_ringbuffer")) << r.output;
    EXPECT_TRUE(contains(r.output, "orchestration")) << r.output;
  }
  const CommandResult serial = run_chiprt(
      "run vector_example --case small --runtime tensormap_ringbuffer --clusters 2 --serial");
  EXPECT_EQ(serial.exit_code, 0) << serial.output;
  EXPECT_TRUE(contains(serial.output, "1 AICPU threads, serial")) << serial.output;
}

TEST_F(ChiprtCli, RingSizeOptionsApplyToTheRun) {
  const CommandResult r = run_chiprt(
      "run vector_example --case small --runtime tensormap_ringbuffer --clusters 2 "
      "--ring-window 64,32 --ring-heap 1048576 --ring-dep-pool 256");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "PASS vector_example/small")) << r.output;
  // The options override the environment (an invalid variable would fail the run otherwise).
  const CommandResult over_env = run_chiprt(
      "run vector_example --case small --runtime tensormap_ringbuffer --clusters 2 "
      "--ring-window 128",
      "CHIPRT_RING_TASK_WINDOW=7");
  EXPECT_EQ(over_env.exit_code, 0) << over_env.output;
}

TEST_F(ChiprtCli, InvalidRingSizesAreUsageErrorsNamingTheRule) {
  CommandResult r = run_chiprt(
      "run vector_example --case small --runtime tensormap_ringbuffer --ring-window 100");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--ring-window=\"100\"")) << r.output;
  EXPECT_TRUE(contains(r.output, "power of two in [16, 1048576]")) << r.output;

  r = run_chiprt(
      "run vector_example --case small --runtime tensormap_ringbuffer --ring-heap 4096,abc");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "\"abc\" is not a positive decimal")) << r.output;

  r = run_chiprt(
      "run vector_example --case small --runtime tensormap_ringbuffer --ring-dep-pool "
      "64,64,64,64,64");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "more than 4 values")) << r.output;

  r = run_chiprt("run vector_example --case small --ring-window 64");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--runtime tensormap_ringbuffer")) << r.output;
}

TEST_F(ChiprtCli, InvalidRingEnvironmentFailsTheRunNamingTheVariable) {
  const CommandResult r =
      run_chiprt("run vector_example --case small --runtime tensormap_ringbuffer --clusters 2",
                 "CHIPRT_RING_DEP_POOL=10");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "[InvalidConfig]")) << r.output;
  EXPECT_TRUE(contains(r.output, "CHIPRT_RING_DEP_POOL=\"10\"")) << r.output;
  EXPECT_TRUE(contains(r.output, "must be in [64, 67108864]")) << r.output;
}

TEST_F(ChiprtCli, MissingChipObjectNamesPathAndEnvironmentVariable) {
  const CommandResult r =
      run_chiprt("run vector_example", "CHIPRT_CHIP_OBJECT_DIR=/nonexistent/chip_objects");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "[LoadFailed]")) << r.output;
  EXPECT_TRUE(contains(r.output, "'/nonexistent/chip_objects/vector_example_")) << r.output;
  EXPECT_TRUE(contains(r.output, ".so' cannot be opened")) << r.output;
  EXPECT_TRUE(contains(r.output, "CHIPRT_CHIP_OBJECT_DIR")) << r.output;
}

namespace diag_cli {

std::string fresh_dir(const char* name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      (std::string("chiprt_cli_") + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

TEST_F(ChiprtCli, DiagWritesARunDirectoryAndPrintsTheSummary) {
  const std::string dir = fresh_dir("diag");
  const CommandResult r =
      run_chiprt("run vector_example --runtime tensormap_ringbuffer --diag all --diag-dir " + dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "timing (us)")) << r.output;
  EXPECT_TRUE(contains(r.output, "diagnostics: " + dir + "/run-0001")) << r.output;
  EXPECT_TRUE(contains(r.output, "critical path: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "verdict: ")) << r.output;
  for (const char* file :
       {"run.json", "trace.json", "tasks.csv", "deps.json", "critical_path.md", "report.html"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/run-0001/" + file)) << file;
  }
  // `chiprt report` on the --diag-dir takes its latest run and rewrites report.html.
  std::filesystem::remove(dir + "/run-0001/report.html");
  const CommandResult report = run_chiprt("report " + dir);
  EXPECT_EQ(report.exit_code, 0) << report.output;
  EXPECT_TRUE(contains(report.output, "critical path: ")) << report.output;
  EXPECT_TRUE(contains(report.output, "report: " + dir + "/run-0001/report.html")) << report.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/run-0001/report.html"));
  std::filesystem::remove_all(dir);
}

// critical_path.json's number `key` (the first occurrence), or -1.
double json_number(const std::string& text, const std::string& key) {
  const std::size_t at = text.find("\"" + key + "\":");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size() + 3));
}

// Parallelism is the cores' busy time over the chip span: never more than the run's cores, on
// every example, on both variants.
TEST_F(ChiprtCli, ParallelismNeverExceedsTheCoresOnAnyExample) {
  for (const char* example : {"vector_example", "bgemm", "wavefront", "paged_attention"}) {
    for (const char* runtime : {"host_build_graph", "tensormap_ringbuffer"}) {
      SCOPED_TRACE(std::string(example) + " " + runtime);
      const std::string dir = fresh_dir("parallelism");
      const CommandResult r = run_chiprt("run " + std::string(example) + " --runtime " + runtime +
                                         " --diag deps,tasks --diag-dir " + dir);
      EXPECT_EQ(r.exit_code, 0) << r.output;
      std::ifstream in(dir + "/run-0001/critical_path.json");
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      const double parallelism = json_number(text, "parallelism");
      const double cores = json_number(text, "run_cores");
      EXPECT_GT(parallelism, 0) << text.substr(0, 400);
      EXPECT_GT(cores, 0) << text.substr(0, 400);
      EXPECT_LE(parallelism, cores) << text.substr(0, 400);
      EXPECT_TRUE(contains(r.output, " cores")) << r.output;
      std::filesystem::remove_all(dir);
    }
  }
}

// --pipeline submits the rounds two in flight, on both variants, with diagnostics on: every
// round gets its directory and a row in the timing table; --graph does not combine with it.
TEST_F(ChiprtCli, PipelineSubmitsTheRounds) {
  for (const char* runtime : {"host_build_graph", "tensormap_ringbuffer"}) {
    const std::string dir = fresh_dir((std::string("pipeline_") + runtime).c_str());
    const CommandResult r = run_chiprt(std::string("run bgemm --case small --rounds 4 --pipeline "
                                                   "--diag tasks --diag-dir ") +
                                       dir + " --runtime " + runtime);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "PASS bgemm/small")) << r.output;
    EXPECT_TRUE(contains(r.output, "pipelined: rounds submitted with two in flight")) << r.output;
    EXPECT_TRUE(contains(r.output, "over 4 rounds")) << r.output;
    EXPECT_TRUE(contains(r.output, "diagnostics: " + dir + "/run-0004")) << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir + "/run-0005")) << r.output;
    std::filesystem::remove_all(dir);
  }
  EXPECT_EQ(run_chiprt("run bgemm --case small --pipeline --graph g.dot").exit_code, 2);
}

TEST_F(ChiprtCli, DiagUsageErrorsNameTheFix) {
  const std::string dir = fresh_dir("diag_usage");
  CommandResult r = run_chiprt("run vector_example --diag all");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--diag needs --diag-dir DIR")) << r.output;
  r = run_chiprt("run vector_example --diag-dir " + dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "add --diag all")) << r.output;
  r = run_chiprt("run vector_example --diag swimlane=7 --diag-dir " + dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "'swimlane=7': the level must be an integer in [1, 4]"))
      << r.output;
  r = run_chiprt("report " + dir);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "neither a diagnostics run directory")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir));
}

// A run directory whose run.json is corrupt is a DiagnosticsError naming the file.
TEST_F(ChiprtCli, ReportOfACorruptRunNamesTheFile) {
  const std::string dir = fresh_dir("diag_corrupt");
  ASSERT_EQ(run_chiprt("run vector_example --diag tasks --diag-dir " + dir).exit_code, 0);
  { std::ofstream(dir + "/run-0001/run.json") << "{\"format\": 12"; }
  const CommandResult r = run_chiprt("report " + dir + "/run-0001");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "DiagnosticsError")) << r.output;
  EXPECT_TRUE(contains(r.output, "run.json")) << r.output;
  std::filesystem::remove_all(dir);
}

}  // namespace diag_cli
}  // namespace
