// CLI tests of `chiprt bench`: the table and the JSON it writes have the documented structure,
// whichever peer runtimes were found at configure time. Times are never checked.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli/cli_support.h"

namespace {

using chiprt::cli_test::chiprt_binary;
using chiprt::cli_test::CommandResult;

CommandResult run_bench(const std::string& args) {
  return chiprt::cli_test::run_chiprt("bench " + args);
}

std::filesystem::path temp_json(const char* name) {
  return std::filesystem::temp_directory_path() /
         (std::string(name) + "-" + std::to_string(getpid()) + ".json");
}

// The JSON the bench wrote at `path` (null when there is none); removes the file.
nlohmann::json take_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  nlohmann::json j = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  return j;
}

const std::set<std::string> kGraphWorkloads = {"independent", "chain", "fan", "wavefront",
                                               "random_dag"};
const std::set<std::string> kKernelWorkloads = {"bgemm", "paged_attention"};
const std::set<std::string> kChiprtColumns = {"host_build_graph", "host_build_graph_serial",
                                              "host_build_graph_replay", "tensormap_ringbuffer",
                                              "tensormap_ringbuffer_serial"};
const std::set<std::string> kPeerColumns = {"openmp", "llvm_openmp", "tbb_flow_graph", "starpu"};

// A measured cell: numbers in order, one sample per timed repetition.
void expect_measured_cell(const nlohmann::json& cell, bool peer, const std::string& where) {
  ASSERT_EQ(cell.at("status"), "measured") << where << ": " << cell.dump();
  const double min = cell.at("min").get<double>();
  const double median = cell.at("median").get<double>();
  const double max = cell.at("max").get<double>();
  EXPECT_LE(min, median) << where;
  EXPECT_LE(median, max) << where;
  EXPECT_GT(min, 0.0) << where;
  EXPECT_GE(cell.at("samples").size(), 1u) << where;
  EXPECT_GT(cell.at("tasks").get<uint64_t>(), 0u) << where;
  if (peer) {
    EXPECT_TRUE(cell.at("ratio_to_best_chiprt").is_number()) << where;
  }
}

std::set<std::string> all_workloads() {
  std::set<std::string> all = kGraphWorkloads;
  all.insert(kKernelWorkloads.begin(), kKernelWorkloads.end());
  return all;
}

// The libomp peer's note on real-kernel rows (tools/perf/runners.h kChildProcessKernelNote).
const std::string kChildProcessKernelNote =
    "real-kernel rows run in process (the kernels and buffers belong to the bench's Worker); the "
    "libomp peer runs in a child process";

// A real-kernel row's cell: wall and kernel time, the threads the efficiency divides by (1 for
// serial columns; threaded chiprt, the threads that run kernels: at least --threads, more when
// kernels run on the AICPU threads, of which a chip has at least 2; peers: exactly --threads) and
// an efficiency that is a fraction of those threads' capacity (kernel CPU time cannot exceed the
// wall time of the threads that ran it; 5% slack for clocks). A cell is measured only when the
// example's result matched its reference in every run.
void expect_kernel_cell(const nlohmann::json& cell, const std::string& column, unsigned threads,
                        const std::string& where, bool peer = false) {
  expect_measured_cell(cell, peer, where);
  EXPECT_GT(cell.at("wall_ns").get<double>(), 0.0) << where;
  EXPECT_GT(cell.at("kernel_ns").get<double>(), 0.0) << where;
  const double efficiency = cell.at("efficiency").get<double>();
  EXPECT_GT(efficiency, 0.0) << where;
  EXPECT_LE(efficiency, 1.05) << where;
  const bool serial = column.ends_with("_serial");
  if (serial) {
    EXPECT_EQ(cell.at("threads").get<unsigned>(), 1u) << where;
  } else if (peer) {
    EXPECT_EQ(cell.at("threads").get<unsigned>(), threads) << where;
  } else {
    EXPECT_GE(cell.at("threads").get<unsigned>(), threads) << where;
  }
  EXPECT_EQ(cell.at("wall_ns_samples").size(), cell.at("samples").size()) << where;
  EXPECT_EQ(cell.at("efficiency_samples").size(), cell.at("samples").size()) << where;
  EXPECT_EQ(cell.contains("replayed_runs"), column == "host_build_graph_replay") << where;
  if (cell.contains("replayed_runs")) {
    EXPECT_LE(cell.at("replayed_runs").get<std::size_t>(), cell.at("samples").size()) << where;
  }
}

// Both reports record the load average at their start and end (Linux: /proc/loadavg).
void expect_host_load(const nlohmann::json& j, const std::string& output) {
  const nlohmann::json& load = j.at("host_load");
  EXPECT_TRUE(load.at("start").is_number()) << load;
  EXPECT_TRUE(load.at("end").is_number()) << load;
  const bool busy = load.at("start").get<double>() >= j.at("hardware_threads").get<double>() ||
                    load.at("end").get<double>() >= j.at("hardware_threads").get<double>();
  EXPECT_EQ(load.at("busy").get<bool>(), busy) << load;
  EXPECT_NE(output.find("host load average (1 min): "), std::string::npos) << output;
  EXPECT_EQ(output.find("warning: the host's load reached") != std::string::npos, busy) << output;
}

TEST(ChiprtBenchCli, QuickSuiteWritesTableAndJson) {
  ASSERT_TRUE(std::filesystem::exists(chiprt_binary())) << chiprt_binary();
  const std::filesystem::path json_path = temp_json("chiprt-bench-quick");
  // A small graph and one repetition keep the test short (also under sanitizers).
  const CommandResult r =
      run_bench("--quick --tasks 300 --repetitions 1 --threads 2 --json " + json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 worker threads for every runtime"), std::string::npos) << r.output;
  for (const std::string& workload : all_workloads()) {
    EXPECT_NE(r.output.find(workload), std::string::npos) << workload << "\n" << r.output;
  }
  EXPECT_NE(r.output.find("efficiency = (sum of kernel CPU time / host threads used) / wall time"),
            std::string::npos)
      << r.output;

  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  EXPECT_EQ(j.at("worker_threads"), 2);
  expect_host_load(j, r.output);
  EXPECT_EQ(j.at("quick"), true);
  EXPECT_EQ(j.at("repetitions"), 1);
  EXPECT_EQ(j.at("unit"), "ns_per_task");

  std::set<std::string> chiprt_ids;
  std::set<std::string> peer_ids;
  std::set<std::string> available;
  for (const nlohmann::json& column : j.at("columns")) {
    const std::string id = column.at("id");
    (column.at("kind") == "chiprt" ? chiprt_ids : peer_ids).insert(id);
    if (column.at("available").get<bool>()) {
      available.insert(id);
    } else {
      // An unavailable column says why.
      EXPECT_FALSE(column.at("note").get<std::string>().empty()) << id;
    }
  }
  EXPECT_EQ(chiprt_ids, kChiprtColumns);
  EXPECT_EQ(peer_ids, kPeerColumns);
  for (const std::string& id : kChiprtColumns) EXPECT_TRUE(available.count(id)) << id;

  std::set<std::string> workloads;
  for (const nlohmann::json& row : j.at("rows")) {
    const std::string workload = row.at("workload");
    workloads.insert(workload);
    EXPECT_GT(row.at("tasks").get<uint64_t>(), 0u) << workload;
    ASSERT_TRUE(row.at("best_chiprt").is_string()) << workload;
    EXPECT_TRUE(kChiprtColumns.count(row.at("best_chiprt").get<std::string>())) << workload;
    const bool real_kernels = kKernelWorkloads.count(workload) != 0;
    EXPECT_EQ(row.at("kind"), real_kernels ? "real_kernels" : "graph") << workload;
    if (!real_kernels) {
      // chiprt's graph has at least the edges a peer needs (it orders the same accesses) and no
      // redundant ones on the rows whose tensor regions say exactly the hand-written order.
      const uint64_t edges = row.at("edges").at("chiprt");
      const uint64_t given = row.at("edges").at("given");
      EXPECT_GE(edges, given) << workload;
      if (workload != "fan") {
        EXPECT_EQ(edges, given) << workload;
      }
    }
    for (const std::string& id : chiprt_ids) {
      if (real_kernels) {
        EXPECT_EQ(row.at("case"), "bench") << workload;
        expect_kernel_cell(row.at("cells").at(id), id, 2, workload + "/" + id);
      } else {
        expect_measured_cell(row.at("cells").at(id), false, workload + "/" + id);
      }
    }
    for (const std::string& id : peer_ids) {
      const nlohmann::json& cell = row.at("cells").at(id);
      if (real_kernels && id == "llvm_openmp" && available.count(id)) {
        // The child-process peer does not run the real-kernel rows, and says why.
        EXPECT_EQ(cell.at("status"), "unavailable") << workload << "/" << id;
        EXPECT_EQ(cell.at("note"), kChildProcessKernelNote) << workload << "/" << id;
      } else if (real_kernels && available.count(id)) {
        expect_kernel_cell(cell, id, 2, workload + "/" + id, true);
      } else if (available.count(id)) {
        expect_measured_cell(cell, true, workload + "/" + id);
      } else {
        EXPECT_EQ(cell.at("status"), "unavailable") << workload << "/" << id;
      }
    }
  }
  EXPECT_EQ(workloads, all_workloads());
}

// One graph row: which columns run does not depend on the row (the real-kernel rows' peer cells
// are QuickSuiteWritesTableAndJson's and RealKernelRowHasPeerCells').
TEST(ChiprtBenchCli, NoPeersLeavesPeerColumnsUnavailable) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-no-peers");
  const CommandResult r = run_bench(
      "--quick --tasks 100 --repetitions 1 --threads 1 --no-peers --workloads chain --json " +
      json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  for (const nlohmann::json& column : j.at("columns")) {
    if (column.at("kind") == "peer") {
      EXPECT_FALSE(column.at("available").get<bool>());
    }
  }
  EXPECT_NE(r.output.find("not run:"), std::string::npos) << r.output;
}

TEST(ChiprtBenchCli, WorkloadsSelectsRowsInSuiteOrder) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-workloads");
  const CommandResult r = run_bench(
      "--quick --tasks 100 --repetitions 1 --threads 1 --no-peers --workloads "
      "paged_attention,chain --json " +
      json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  ASSERT_EQ(j.at("rows").size(), 2u) << j.dump(1);
  EXPECT_EQ(j.at("rows")[0].at("workload"), "chain");
  EXPECT_EQ(j.at("rows")[1].at("workload"), "paged_attention");
  for (const std::string& id : kChiprtColumns) {
    expect_kernel_cell(j.at("rows")[1].at("cells").at(id), id, 1, "paged_attention/" + id);
  }
}

// A real-kernel row on its own: every in-process peer runs the exported graph with the example's
// kernels (the same task count as chiprt's host_build_graph, whose graph it is), the table shows
// its cell with the ratio to chiprt's best, and the libomp peer's cells carry their note.
TEST(ChiprtBenchCli, RealKernelRowHasPeerCells) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-peer-kernels");
  const CommandResult r = run_bench(
      "--quick --repetitions 1 --threads 2 --workloads bgemm --json " + json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("peers run the graph Worker::export_graph gives for the same call"),
            std::string::npos)
      << r.output;
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  ASSERT_EQ(j.at("rows").size(), 1u) << j.dump(1);
  const nlohmann::json& cells = j.at("rows")[0].at("cells");
  const uint64_t graph_tasks = cells.at("host_build_graph").at("tasks").get<uint64_t>();
  std::ptrdiff_t peers_run = 0;
  for (const nlohmann::json& column : j.at("columns")) {
    if (column.at("kind") != "peer") continue;
    const std::string id = column.at("id");
    const nlohmann::json& cell = cells.at(id);
    if (!column.at("available").get<bool>()) {
      EXPECT_EQ(cell.at("status"), "unavailable") << id;
    } else if (id == "llvm_openmp") {
      EXPECT_EQ(cell.at("note"), kChildProcessKernelNote) << id;
      EXPECT_NE(r.output.find("n/a on real-kernel rows: " + kChildProcessKernelNote),
                std::string::npos)
          << r.output;
    } else {
      expect_kernel_cell(cell, id, 2, "bgemm/" + id, true);
      EXPECT_EQ(cell.at("tasks").get<uint64_t>(), graph_tasks) << id;
      ++peers_run;
    }
  }
  // The table row: each peer cell shows wall time, efficiency and the ratio ("72.7 ms 49% 1.0x").
  const std::size_t row_start = r.output.find("\nbgemm ");
  ASSERT_NE(row_start, std::string::npos) << r.output;
  const std::string row =
      r.output.substr(row_start + 1, r.output.find('\n', row_start + 1) - row_start - 1);
  const std::regex peer_cell(R"(\d+\.\d ms \d+% \d+\.\dx)");
  EXPECT_EQ(std::distance(std::sregex_iterator(row.begin(), row.end(), peer_cell),
                          std::sregex_iterator()),
            peers_run)
      << row;
  EXPECT_EQ(r.output.find("error:"), std::string::npos) << r.output;
}

// --isolation process: the suite's chiprt columns run on the isolated chip, and say so.
TEST(ChiprtBenchCli, IsolationProcessRunsTheChiprtColumnsIsolated) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-isolation-process");
  const CommandResult r = run_bench(
      "--quick --tasks 100 --repetitions 1 --threads 2 --no-peers --workloads chain "
      "--isolation process --json " +
      json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("chip in an isolated device process"), std::string::npos) << r.output;
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  EXPECT_EQ(j.at("sim_isolation"), "process");
  for (const std::string& id : kChiprtColumns) {
    expect_measured_cell(j.at("rows")[0].at("cells").at(id), false, "chain/" + id);
  }
}

// --isolation both over every workload: the in-process Workers of the earlier rows keep their chip
// objects loaded while isolated devices are forked, and each device must load its own objects
// (a device once found a host object of the same /proc/self/fd/N name and failed bgemm). One
// timed run per cell: every row and platform is still run and measured (the sample counts are the
// next test's), at two thirds of the cost (103 s under ASan with two).
TEST(ChiprtBenchCli, IsolationBothMeasuresEveryWorkload) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-isolation-every-workload");
  const CommandResult r = run_bench(
      "--quick --tasks 100 --repetitions 1 --threads 2 "
      "--isolation both --json " +
      json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("error"), std::string::npos) << r.output;
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  for (const nlohmann::json& row : j.at("rows")) {
    EXPECT_EQ(row.at("status"), "measured") << row.dump();
  }
}

// --isolation both: every chiprt column on every selected row, plus an empty run's latency, on both
// platforms with their ratio; the real-kernel rows report their wall time too.
TEST(ChiprtBenchCli, IsolationBothComparesEveryChiprtColumnOnBothPlatforms) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-isolation-both");
  const CommandResult r = run_bench(
      "--quick --tasks 100 --repetitions 2 --threads 2 --workloads chain,bgemm --isolation both "
      "--json " +
      json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ratio = isolated / in process"), std::string::npos) << r.output;
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  EXPECT_EQ(j.at("comparison"), "isolation");
  std::set<std::pair<std::string, std::string>> seen;
  for (const nlohmann::json& row : j.at("rows")) {
    const std::string where =
        row.at("workload").get<std::string>() + "/" + row.at("column").get<std::string>();
    ASSERT_EQ(row.at("status"), "measured") << where << ": " << row.dump();
    seen.insert({row.at("kind").get<std::string>(), row.at("column").get<std::string>()});
    const bool latency = row.at("kind") == "empty_run_latency";
    EXPECT_EQ(row.at("unit"), latency ? "ns_per_run" : "ns_per_task") << where;
    EXPECT_EQ(row.at("tasks").get<uint64_t>() == 1, latency) << where;
    for (const char* platform : {"in_process", "isolated"}) {
      const nlohmann::json& side = row.at(platform);
      EXPECT_EQ(side.at("samples").size(), latency ? 50u : 2u) << where << " " << platform;
      EXPECT_GT(side.at("median").get<double>(), 0.0) << where << " " << platform;
      if (row.at("kind") == "real_kernels") {
        EXPECT_GT(side.at("wall_ns").get<double>(), 0.0) << where << " " << platform;
      }
    }
    EXPECT_DOUBLE_EQ(row.at("ratio").get<double>(),
                     row.at("isolated").at("median").get<double>() /
                         row.at("in_process").at("median").get<double>())
        << where;
  }
  for (const std::string& id : kChiprtColumns) {
    for (const char* kind : {"graph", "real_kernels", "empty_run_latency"}) {
      EXPECT_EQ(seen.count({kind, id}), 1u) << kind << " row of " << id << " missing";
    }
  }
  EXPECT_EQ(j.at("rows").size(), 3 * kChiprtColumns.size());
}

TEST(ChiprtBenchCli, IsolationOptionIsCheckedAndExcludesScaling) {
  for (const char* args : {"--isolation sometimes", "--isolation both --scaling"}) {
    const CommandResult r = run_bench(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  }
}

TEST(ChiprtBenchCli, RejectsInvalidOptions) {
  for (const char* args : {"--repetitions 0", "--tasks 0", "--threads -1", "--bogus"}) {
    const CommandResult r = run_bench(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  }
}

TEST(ChiprtBenchCli, UnknownWorkloadIsAUsageErrorNamingTheValidOnes) {
  const CommandResult r = run_bench("--quick --no-peers --workloads chain,matmul");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown workload 'matmul'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bgemm, paged_attention"), std::string::npos) << r.output;
}

TEST(ChiprtBenchCli, UnwritableJsonPathFails) {
  const CommandResult r = run_bench(
      "--quick --tasks 50 --repetitions 1 --no-peers --workloads chain --json "
      "/nonexistent-dir/out.json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent-dir/out.json"), std::string::npos) << r.output;
}

// The LLVM libomp column runs chiprt_peer_libomp, built next to chiprt when clang and libomp were
// found at configure time. Pointing CHIPRT_PEER_LIBOMP at a missing file leaves the column, right
// after "openmp", unavailable with a note naming that path (or, without clang / libomp, the
// configure-time reason); the other columns still run. Graph rows only: the real-kernel rows'
// libomp note is QuickSuiteWritesTableAndJson's.
TEST(ChiprtBenchCli, LlvmOpenmpColumnSaysWhyItsExecutableIsMissing) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-no-libomp");
  const std::string missing = "/nonexistent-dir/chiprt_peer_libomp";
  const CommandResult r = chiprt::cli_test::run_chiprt(
      "bench --quick --tasks 100 --repetitions 1 --threads 1 --workloads chain,fan --json " +
          json_path.string(),
      "CHIPRT_PEER_LIBOMP=" + missing);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  std::vector<std::string> ids;
  for (const nlohmann::json& column : j.at("columns")) ids.push_back(column.at("id"));
  const auto openmp = std::find(ids.begin(), ids.end(), "openmp");
  ASSERT_NE(openmp, ids.end());
  ASSERT_NE(openmp + 1, ids.end());
  EXPECT_EQ(*(openmp + 1), "llvm_openmp");
  const nlohmann::json& column = j.at("columns").at(openmp + 1 - ids.begin());
  EXPECT_EQ(column.at("kind"), "peer");
  EXPECT_EQ(column.at("label"), "omp/llvm");
  EXPECT_FALSE(column.at("available").get<bool>());
  const std::string note = column.at("note");
  EXPECT_TRUE(note.find("CHIPRT_PEER_LIBOMP=" + missing) != std::string::npos ||
              note.find("not found at configure time") != std::string::npos)
      << note;
  for (const nlohmann::json& row : j.at("rows")) {
    EXPECT_EQ(row.at("cells").at("llvm_openmp").at("status"), "unavailable") << row.dump();
  }
  EXPECT_NE(r.output.find("omp/llvm"), std::string::npos) << r.output;
}

// Runs `command` through the shell; stdout and stderr together, split into lines.
std::vector<std::string> shell_lines(const std::string& command, int* exit_code) {
  std::vector<std::string> lines;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {"popen failed for: " + command};
  std::array<char, 4096> line{};
  while (std::fgets(line.data(), line.size(), pipe) != nullptr) {
    lines.emplace_back(line.data());
    if (lines.back().ends_with('\n')) lines.back().pop_back();
  }
  const int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return lines;
}

// The child speaks the line protocol of tools/perf/llvm_omp/peer_libomp_main.cpp: a bad request
// gets an error line and the process keeps serving; bad arguments exit 2 with a usage line.
TEST(ChiprtBenchCli, LlvmOpenmpChildAnswersBadRequestsWithErrors) {
  const std::filesystem::path child =
      std::filesystem::path(chiprt_binary()).parent_path() / "chiprt_peer_libomp";
  if (!std::filesystem::exists(child)) {
    GTEST_SKIP() << child << " not built (clang++ with LLVM libomp not found at configure time)";
  }
  int exit_code = -1;
  const std::vector<std::string> lines = shell_lines(
      "printf 'prepare chain 20\\nrun chain 20\\nrun bogus 5\\nrun chain -1\\nfly\\n"
      "run fan 7\\nrun wavefront 200\\n' | " +
          child.string() + " --threads 2",
      &exit_code);
  EXPECT_EQ(exit_code, 0);
  ASSERT_EQ(lines.size(), 8u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0], "ready");
  EXPECT_EQ(lines[1], "ok");
  EXPECT_TRUE(lines[2].starts_with("ok 20 ")) << lines[2];
  EXPECT_TRUE(lines[3].starts_with("error unknown shape 'bogus'")) << lines[3];
  EXPECT_TRUE(lines[4].starts_with("error bad request 'run chain -1'")) << lines[4];
  EXPECT_TRUE(lines[5].starts_with("error bad request 'fly'")) << lines[5];
  // A fan is whole stages of 1002 tasks: 7 is no task count chiprt bench would send.
  EXPECT_TRUE(lines[6].starts_with("error fan cannot have exactly 7 tasks")) << lines[6];
  EXPECT_TRUE(lines[7].starts_with("ok 200 ")) << lines[7];

  for (const char* args : {"", "--threads 0", "--threads x", "--threads 2 extra"}) {
    const std::vector<std::string> usage =
        shell_lines(child.string() + " " + args + " </dev/null", &exit_code);
    EXPECT_EQ(exit_code, 2) << args;
    ASSERT_EQ(usage.size(), 1u) << args << ": " << ::testing::PrintToString(usage);
    EXPECT_TRUE(usage[0].starts_with("chiprt_peer_libomp: usage: chiprt_peer_libomp --threads N"))
        << usage[0];
  }
}

// `bench --scaling`: one row per workload x column with a cell per size and the growth, and the
// memory of the chiprt columns (graph tasks in flight for host_build_graph, window slots for the
// ring). Tiny sizes keep it short; values are only checked for being present and positive.
TEST(ChiprtBenchCli, ScalingReportsEverySizeGrowthAndMemory) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-scaling");
  const CommandResult r = run_bench(
      "--scaling --scaling-sizes 400,200 --workloads chain,independent --no-peers --repetitions 1 "
      "--threads 2 --json " +
      json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("chiprt bench --scaling: ns per task"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory per in-flight task"), std::string::npos) << r.output;
  for (const char* label : {"hbg", "hbg/ser", "hbg/replay", "ring", "ring/ser"}) {
    for (const char* workload : {"chain", "independent"}) {
      // A table line starts with the workload and names the column next.
      bool found = false;
      std::size_t at = 0;
      while (!found &&
             (at = r.output.find(std::string("\n") + workload + " ", at)) != std::string::npos) {
        const std::size_t eol = r.output.find('\n', at + 1);
        const std::string line = r.output.substr(at + 1, eol - at - 1);
        found = line.find(std::string(" ") + label + " ") != std::string::npos;
        ++at;
      }
      EXPECT_TRUE(found) << workload << " / " << label << "\n" << r.output;
    }
  }

  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  EXPECT_EQ(j.at("mode"), "scaling");
  EXPECT_EQ(j.at("worker_threads"), 2);
  expect_host_load(j, r.output);
  EXPECT_EQ(j.at("sizes"), nlohmann::json::array({200, 400}));  // sorted
  EXPECT_EQ(j.at("repetitions"), 1);
  EXPECT_EQ(j.at("unit"), "ns_per_task");
  EXPECT_TRUE(j.at("growth_flag_above").is_number());

  std::set<std::string> available;
  for (const nlohmann::json& column : j.at("columns")) {
    if (column.at("available").get<bool>()) available.insert(column.at("id"));
  }
  EXPECT_EQ(available, kChiprtColumns);  // --no-peers

  std::set<std::pair<std::string, std::string>> rows;
  for (const nlohmann::json& row : j.at("rows")) {
    const std::string workload = row.at("workload");
    const std::string column = row.at("column");
    const std::string where = workload + "/" + column;
    rows.insert({workload, column});
    const nlohmann::json& cells = row.at("cells");
    ASSERT_EQ(cells.size(), 2u) << where;
    if (!available.count(column)) {
      EXPECT_EQ(cells[0].at("status"), "unavailable") << where;
      EXPECT_TRUE(row.at("growth").is_null()) << where;
      continue;
    }
    ASSERT_TRUE(row.at("growth").is_number()) << where << ": " << row.dump();
    EXPECT_GT(row.at("growth").get<double>(), 0.0) << where;
    EXPECT_TRUE(row.at("growth_flagged").is_boolean()) << where;
    const bool ring = column.starts_with("tensormap_ringbuffer");
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const nlohmann::json& cell = cells[i];
      EXPECT_EQ(cell.at("requested_tasks"), i == 0 ? 200 : 400) << where;
      expect_measured_cell(cell, false, where);
      EXPECT_EQ(cell.at("tasks"), cell.at("requested_tasks")) << where;
      const nlohmann::json& memory = cell.at("memory");
      EXPECT_EQ(memory.at("in_flight_unit"), ring ? "window_slot" : "graph_task") << where;
      if (ring) {
        EXPECT_GT(memory.at("in_flight").get<uint64_t>(), 0u) << where;
      } else {
        EXPECT_EQ(memory.at("in_flight"), cell.at("tasks")) << where;
      }
      // The run committed its arenas beyond the output heap on a chip of its own.
      EXPECT_GT(memory.at("device_bytes").get<uint64_t>(),
                memory.at("output_heap_bytes").get<uint64_t>())
          << where;
      EXPECT_GT(memory.at("device_bytes_per_in_flight").get<double>(), 0.0) << where;
      EXPECT_GE(memory.at("peak_rss_bytes_per_task").get<double>(), 0.0) << where;
      EXPECT_TRUE(memory.at("peak_rss_reset").is_boolean()) << where;
    }
  }
  for (const std::string& column : kChiprtColumns) {
    for (const char* workload : {"chain", "independent"}) {
      EXPECT_TRUE(rows.count({workload, column})) << workload << "/" << column;
    }
  }
  // Only the selected workloads, every column listed.
  EXPECT_EQ(rows.size(), 2 * (kChiprtColumns.size() + kPeerColumns.size()));
}

TEST(ChiprtBenchCli, ScalingRejectsBadSizesAndRealKernelRows) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {
           Case{"--scaling --scaling-sizes 1000", "at least two different sizes"},
           Case{"--scaling --scaling-sizes 1000,1000", "at least two different sizes"},
           Case{"--scaling --scaling-sizes 0,1000", "size '0'"},
           Case{"--scaling --scaling-sizes 10k,1000", "size '10k'"},
           Case{"--scaling --scaling-sizes 1000,99999999999", "size '99999999999'"},
           Case{"--scaling --workloads chain,bgemm", "bgemm is a real-kernel row"},
           Case{"--scaling --tasks 1000", "--tasks"},
           Case{"--scaling-sizes 1000,2000", "--scaling"},
       }) {
    const CommandResult r = run_bench(std::string(c.args) + " --no-peers");
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

// The switch groups `chiprt bench --diagnostics` measures by default, as `chiprt run --diag`
// names them, and the columns it runs them on.
const std::vector<std::string> kDiagnosticsSwitches = {
    "swimlane=1", "swimlane=2", "swimlane=3", "swimlane=4", "tasks",
    "deps",       "scopes",     "args=1",     "counters",   "all"};
const std::vector<std::string> kDiagnosticsColumns = {"host_build_graph", "tensormap_ringbuffer"};

// The session directories the diagnostics mode leaves in the temporary directory.
std::set<std::string> diagnostics_session_dirs() {
  std::set<std::string> dirs;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::temp_directory_path())) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("chiprt-bench-diagnostics-")) dirs.insert(name);
  }
  return dirs;
}

// One measured side of a --diagnostics row: `repetitions` samples each of wall and device time,
// medians and per-task values that agree with them.
void expect_diagnostics_side(const nlohmann::json& side, uint64_t tasks, std::size_t repetitions,
                             const std::string& where) {
  for (const char* part : {"wall_ns", "device_ns"}) {
    EXPECT_EQ(side.at(part).at("samples").size(), repetitions) << where << " " << part;
    EXPECT_GT(side.at(part).at("median").get<double>(), 0.0) << where << " " << part;
  }
  EXPECT_DOUBLE_EQ(side.at("wall_ns_per_task").get<double>(),
                   side.at("wall_ns").at("median").get<double>() / static_cast<double>(tasks))
      << where;
  EXPECT_DOUBLE_EQ(side.at("device_ns_per_task").get<double>(),
                   side.at("device_ns").at("median").get<double>() / static_cast<double>(tasks))
      << where;
}

// --diagnostics: a row per (graph workload, column, switch) and per (real-kernel workload,
// column) with all on, each off and on with overhead and ratio; the run directories are gone
// afterwards.
TEST(ChiprtBenchCli, DiagnosticsMeasuresEverySwitchOnBothVariants) {
  const std::set<std::string> dirs_before = diagnostics_session_dirs();
  const std::filesystem::path json_path = temp_json("chiprt-bench-diagnostics");
  const CommandResult r = run_bench(
      "--diagnostics --quick --tasks 100 --repetitions 1 --threads 2 --json " + json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("overhead = on - off per task (wall); ratio = on / off (wall)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("written = (on wall + files) / off wall"), std::string::npos) << r.output;
  // 100-task runs never fill a diagnostics ring.
  EXPECT_NE(r.output.find("\nrecords dropped: none\n"), std::string::npos) << r.output;
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  EXPECT_EQ(j.at("comparison"), "diagnostics");
  EXPECT_EQ(j.at("switches"), nlohmann::json(kDiagnosticsSwitches));
  expect_host_load(j, r.output);

  std::set<std::string> expected;
  for (const std::string& column : kDiagnosticsColumns) {
    for (const char* workload : {"independent", "chain"}) {
      for (const std::string& sw : kDiagnosticsSwitches) {
        expected.insert(std::string("graph/") + workload + "/" + column + "/" + sw);
        // The table's line of the row: workload, column, switch, tasks, unit.
        const std::regex line("(^|\n)" + std::string(workload) + " +" + column + " +" + sw +
                              " +100 +ns/task +[0-9.]+ +[0-9.]+ +[+-][0-9.]+ +[0-9.]+ ");
        EXPECT_TRUE(std::regex_search(r.output, line))
            << workload << "/" << column << "/" << sw << " line missing:\n"
            << r.output;
      }
    }
    for (const std::string& workload : kKernelWorkloads) {
      expected.insert("real_kernels/" + workload + "/" + column + "/all");
    }
  }
  std::set<std::string> seen;
  for (const nlohmann::json& row : j.at("rows")) {
    const std::string where =
        row.at("kind").get<std::string>() + "/" + row.at("workload").get<std::string>() + "/" +
        row.at("column").get<std::string>() + "/" + row.at("switch").get<std::string>();
    EXPECT_TRUE(seen.insert(where).second) << where << " twice";
    ASSERT_EQ(row.at("status"), "measured") << where << ": " << row.dump();
    const uint64_t tasks = row.at("tasks").get<uint64_t>();
    ASSERT_GT(tasks, 0u) << where;
    if (row.at("kind") == "graph") {
      EXPECT_EQ(tasks, 100u) << where;
    }
    expect_diagnostics_side(row.at("off"), tasks, 1, where + " off");
    expect_diagnostics_side(row.at("on"), tasks, 1, where + " on");
    const double off = row.at("off").at("wall_ns").at("median").get<double>();
    const double on = row.at("on").at("wall_ns").at("median").get<double>();
    EXPECT_DOUBLE_EQ(row.at("ratio").get<double>(), on / off) << where;
    EXPECT_DOUBLE_EQ(row.at("overhead_ns_per_task").get<double>(),
                     row.at("on").at("wall_ns_per_task").get<double>() -
                         row.at("off").at("wall_ns_per_task").get<double>())
        << where;
    EXPECT_DOUBLE_EQ(row.at("device_ratio").get<double>(),
                     row.at("on").at("device_ns").at("median").get<double>() /
                         row.at("off").at("device_ns").at("median").get<double>())
        << where;
    const double files = row.at("on").at("files_ns").at("median").get<double>();
    EXPECT_GT(files, 0) << where << ": the on side waits for its background write";
    EXPECT_DOUBLE_EQ(row.at("written_ratio").get<double>(), (on + files) / off) << where;
    EXPECT_EQ(row.at("records_dropped").get<uint64_t>(), 0u) << where;
    EXPECT_EQ(row.contains("above_bound"), row.at("kind") == "real_kernels") << where;
    if (row.contains("above_bound")) {
      EXPECT_EQ(row.at("above_bound").get<bool>(), on / off > 1.10) << where;
    }
  }
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(diagnostics_session_dirs(), dirs_before) << "a session directory was left behind";
}

// --diag-switches and --workloads pick the rows: only those switches, only those workloads.
TEST(ChiprtBenchCli, DiagSwitchesSelectsTheMeasuredSwitches) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-diagnostics-switches");
  const CommandResult r = run_bench(
      "--diagnostics --quick --tasks 50 --repetitions 2 --threads 2 --workloads chain "
      "--diag-switches swimlane=2,all --json " +
      json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path;
  std::set<std::string> seen;
  for (const nlohmann::json& row : j.at("rows")) {
    EXPECT_EQ(row.at("kind"), "graph") << row.dump();
    EXPECT_EQ(row.at("workload"), "chain") << row.dump();
    EXPECT_EQ(row.at("off").at("wall_ns").at("samples").size(), 2u) << row.dump();
    seen.insert(row.at("column").get<std::string>() + "/" + row.at("switch").get<std::string>());
  }
  EXPECT_EQ(seen,
            (std::set<std::string>{"host_build_graph/swimlane=2", "host_build_graph/all",
                                   "tensormap_ringbuffer/swimlane=2", "tensormap_ringbuffer/all"}));
  EXPECT_EQ(j.at("rows").size(), 4u);
}

// --latency: every chiprt column, an empty and a one-task run, both platforms, each cell with
// its samples and p50 / p99 in order (nothing about their size is checked).
TEST(ChiprtBenchCli, LatencyReportsPercentilesOfEveryColumnOnBothPlatforms) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-latency");
  const CommandResult r = run_bench("--latency --repetitions 20 --json " + json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("chiprt bench --latency: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("in process p50"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("isolated p50"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("p99/p50"), std::string::npos) << r.output;
  for (const char* label : {"hbg", "hbg/ser", "hbg/replay", "ring", "ring/ser"}) {
    for (const char* run : {"empty", "1 task"}) {
      const std::regex row("\\n" + std::string(label) + " +" + run + " ");
      EXPECT_TRUE(std::regex_search(r.output, row)) << label << " " << run << "\n" << r.output;
    }
  }
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << r.output;
  EXPECT_EQ(j.at("comparison"), "latency");
  EXPECT_EQ(j.at("runs").get<int>(), 20);
  EXPECT_EQ(j.at("unit"), "ns_per_run");
  expect_host_load(j, r.output);
  std::set<std::pair<std::string, uint64_t>> seen;
  for (const nlohmann::json& row : j.at("rows")) {
    const std::string where = row.dump().substr(0, 200);
    ASSERT_EQ(row.at("status"), "measured") << where;
    EXPECT_TRUE(kChiprtColumns.count(row.at("column").get<std::string>())) << where;
    const uint64_t tasks = row.at("tasks").get<uint64_t>();
    EXPECT_EQ(row.at("run"), tasks == 0 ? "empty" : "one_task") << where;
    seen.insert({row.at("column").get<std::string>(), tasks});
    for (const char* platform : {"in_process", "isolated"}) {
      const nlohmann::json& cell = row.at(platform);
      const double p50 = cell.at("p50_ns").get<double>();
      const double p99 = cell.at("p99_ns").get<double>();
      EXPECT_GT(p50, 0.0) << platform << " " << where;
      EXPECT_GE(p99, p50) << platform << " " << where;
      EXPECT_DOUBLE_EQ(cell.at("p99_over_p50").get<double>(), p99 / p50) << where;
      EXPECT_EQ(cell.at("samples").size(), 20u) << platform << " " << where;
    }
  }
  EXPECT_EQ(seen.size(), 2 * kChiprtColumns.size()) << j.at("rows").size();
}

TEST(ChiprtBenchCli, LatencyExcludesTheOtherModes) {
  for (const char* args :
       {"--latency --scaling", "--latency --isolation both", "--latency --diagnostics",
        "--latency --pipeline", "--latency --tasks 10"}) {
    const CommandResult r = run_bench(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("excludes"), std::string::npos) << args << "\n" << r.output;
  }
}

TEST(ChiprtBenchCli, DiagnosticsRejectsBadSwitchesAndModesItCannotCombineWith) {
  struct Case {
    const char* args;
    const char* message;
  };
  for (const Case& c : {
           Case{"--diagnostics --diag-switches tasks,bogus", "'bogus' is not a diagnostics switch"},
           Case{"--diagnostics --diag-switches swimlane=9", "'swimlane=9'"},
           Case{"--diagnostics --diag-switches tasks=1", "'tasks=1' is not a diagnostics switch"},
           Case{"--diag-switches all", "--diag-switches requires --diagnostics"},
           Case{"--diagnostics --isolation both", "excludes"},
           Case{"--diagnostics --scaling", "excludes"},
           Case{"--diagnostics --workloads chain,matmul", "unknown workload 'matmul'"},
       }) {
    const CommandResult r = run_bench(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
  }
}

}  // namespace

// The tags of `svg` nest properly: every opened element is closed, in order (a minimal
// well-formedness check; attributes and text are not parsed).
bool svg_tags_balanced(const std::string& svg, std::string* why) {
  std::vector<std::string> open;
  for (std::size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
    const std::size_t end = svg.find('>', at);
    if (end == std::string::npos) {
      *why = "unterminated tag at " + std::to_string(at);
      return false;
    }
    const std::string tag = svg.substr(at + 1, end - at - 1);
    if (tag.starts_with("?") || tag.ends_with("/")) continue;
    const std::string name = tag.substr(
        tag.starts_with("/") ? 1 : 0, tag.find_first_of(" \n", 0) - (tag.starts_with("/") ? 1 : 0));
    if (!tag.starts_with("/")) {
      open.push_back(name);
    } else if (open.empty() || open.back() != name) {
      *why = "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
      return false;
    } else {
      open.pop_back();
    }
  }
  if (!open.empty()) *why = "<" + open.back() + "> never closed";
  return open.empty();
}

// --task-bench: a row per selected pattern (Task Bench order) at width = threads (--quick), a
// column per runtime; per cell a METG that is a positive number or "not reached", and one point
// per granularity; the SVG lands next to the JSON.
TEST(ChiprtBenchCli, TaskBenchWritesMetgTableJsonAndSvg) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-task-bench");
  std::filesystem::path svg_path = json_path;
  svg_path.replace_extension(".svg");
  const CommandResult r = run_bench(
      "--task-bench --quick --threads 2 --workloads fft,trivial --granularities 20,200 --json " +
      json_path.string());
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
  const nlohmann::json j = take_json(json_path);
  ASSERT_FALSE(j.is_null()) << "no JSON written at " << json_path << "\n" << r.output;
  EXPECT_EQ(j.at("quick"), true);
  EXPECT_GT(j.at("ns_per_iteration").get<double>(), 0.0);
  EXPECT_EQ(j.at("granularities_us"), nlohmann::json({200.0, 20.0}));
  expect_host_load(j, r.output);
  std::set<std::string> ids;
  for (const nlohmann::json& column : j.at("columns")) ids.insert(column.at("id"));
  std::set<std::string> expected = kChiprtColumns;
  expected.insert(kPeerColumns.begin(), kPeerColumns.end());
  EXPECT_EQ(ids, expected);
  ASSERT_EQ(j.at("patterns").size(), 2u) << j.dump(1);
  EXPECT_EQ(j.at("patterns")[0].at("pattern"), "trivial");
  EXPECT_EQ(j.at("patterns")[1].at("pattern"), "fft");
  for (const nlohmann::json& row : j.at("patterns")) {
    EXPECT_EQ(row.at("width"), 2);
    EXPECT_TRUE(row.at("best").is_null() || ids.count(row.at("best").get<std::string>()) == 1);
    for (const std::string& id : kChiprtColumns) {
      const std::string where = row.at("pattern").get<std::string>() + "/" + id;
      const nlohmann::json& cell = row.at("cells").at(id);
      ASSERT_EQ(cell.at("status"), "measured") << where << ": " << cell.dump();
      EXPECT_EQ(cell.at("threads").get<unsigned>() == 1, id.ends_with("_serial")) << where;
      const nlohmann::json& metg = cell.at("metg");
      if (metg.at("reached").get<bool>()) {
        EXPECT_GT(metg.at("us").get<double>(), 0.0) << where;
        EXPECT_TRUE(metg.at("method") == "interpolated" ||
                    metg.at("method") == "smallest_measured_upper_bound")
            << where;
      } else {
        EXPECT_TRUE(metg.at("us").is_null()) << where;
      }
      ASSERT_EQ(cell.at("points").size(), 2u) << where;
      for (const nlohmann::json& p : cell.at("points")) {
        EXPECT_GT(p.at("task_ns").get<double>(), 0.0) << where;
        EXPECT_GT(p.at("tasks").get<uint64_t>(), 0u) << where;
        if (p.at("status") == "measured") {
          EXPECT_GT(p.at("wall_ns").get<double>(), 0.0) << where;
          EXPECT_GT(p.at("efficiency").get<double>(), 0.0) << where;
        } else {
          EXPECT_EQ(p.at("status"), "skipped") << where << ": " << p.dump();
        }
      }
    }
  }
  // The table: a heading with every column label and one row per pattern and width.
  for (const char* label : {"hbg", "hbg/ser", "hbg/replay", "ring", "ring/ser", "omp", "tbb"}) {
    EXPECT_NE(r.output.find(std::string("  ") + label), std::string::npos) << label;
  }
  EXPECT_NE(r.output.find("\ntrivial w=2 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\nfft w=2 "), std::string::npos) << r.output;
  std::ifstream in(svg_path);
  ASSERT_TRUE(in.good()) << "no SVG at " << svg_path << "\n" << r.output;
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(svg_path);
  EXPECT_TRUE(svg.starts_with("<?xml")) << svg.substr(0, 80);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("fft (width 2)"), std::string::npos);
  std::string why;
  EXPECT_TRUE(svg_tags_balanced(svg, &why)) << why;
}

TEST(ChiprtBenchCli, TaskBenchSvgOptionAndUsageErrors) {
  const std::filesystem::path svg_path = temp_json("chiprt-bench-task-bench-curves");
  const CommandResult r = run_bench(
      "--task-bench --quick --threads 1 --no-peers --workloads "
      "no_comm --granularities 100 --svg " +
      svg_path.string());
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
  EXPECT_TRUE(std::filesystem::exists(svg_path)) << r.output;
  std::filesystem::remove(svg_path);
  EXPECT_NE(r.output.find("\nno_comm w=1 "), std::string::npos) << r.output;

  const CommandResult unknown = run_bench("--task-bench --quick --no-peers --workloads stencil");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("unknown task bench pattern 'stencil'"), std::string::npos)
      << unknown.output;
  EXPECT_NE(unknown.output.find("stencil_1d_periodic"), std::string::npos) << unknown.output;
  for (const char* args :
       {"--task-bench --scaling", "--task-bench --tasks 10", "--task-bench --pipeline",
        "--task-bench --diagnostics", "--task-bench --isolation both", "--svg x.svg",
        "--task-bench --granularities 0"}) {
    const CommandResult bad = run_bench(std::string(args) + " --no-peers");
    EXPECT_EQ(bad.exit_code, 2) << args << ": " << bad.output;
  }
}
