// CLI tests of `chiprt bench`: the table and the JSON it writes have the documented structure,
// whichever peer runtimes were found at configure time. Times are never checked.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

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

const std::set<std::string> kWorkloads = {"independent", "chain", "fan", "wavefront", "random_dag"};
const std::set<std::string> kChiprtColumns = {"host_build_graph", "host_build_graph_serial",
                                              "host_build_graph_replay", "tensormap_ringbuffer",
                                              "tensormap_ringbuffer_serial"};
const std::set<std::string> kPeerColumns = {"openmp", "tbb_flow_graph", "starpu"};

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

TEST(ChiprtBenchCli, QuickSuiteWritesTableAndJson) {
  ASSERT_TRUE(std::filesystem::exists(chiprt_binary())) << chiprt_binary();
  const std::filesystem::path json_path = temp_json("chiprt-bench-quick");
  // A small graph and one repetition keep the test short (also under sanitizers).
  const CommandResult r =
      run_bench("--quick --tasks 300 --repetitions 1 --threads 2 --json " + json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 worker threads for every runtime"), std::string::npos) << r.output;
  for (const std::string& workload : kWorkloads) {
    EXPECT_NE(r.output.find(workload), std::string::npos) << workload << "\n" << r.output;
  }

  std::ifstream in(json_path);
  ASSERT_TRUE(in) << "no JSON written at " << json_path;
  const nlohmann::json j = nlohmann::json::parse(in);
  std::filesystem::remove(json_path);
  EXPECT_EQ(j.at("worker_threads"), 2);
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
    for (const std::string& id : chiprt_ids) {
      expect_measured_cell(row.at("cells").at(id), false, workload + "/" + id);
    }
    for (const std::string& id : peer_ids) {
      const nlohmann::json& cell = row.at("cells").at(id);
      if (available.count(id)) {
        expect_measured_cell(cell, true, workload + "/" + id);
      } else {
        EXPECT_EQ(cell.at("status"), "unavailable") << workload << "/" << id;
      }
    }
  }
  EXPECT_EQ(workloads, kWorkloads);
}

TEST(ChiprtBenchCli, NoPeersLeavesPeerColumnsUnavailable) {
  const std::filesystem::path json_path = temp_json("chiprt-bench-no-peers");
  const CommandResult r = run_bench(
      "--quick --tasks 100 --repetitions 1 --threads 1 --no-peers --json " + json_path.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(json_path);
  ASSERT_TRUE(in) << "no JSON written at " << json_path;
  const nlohmann::json j = nlohmann::json::parse(in);
  std::filesystem::remove(json_path);
  for (const nlohmann::json& column : j.at("columns")) {
    if (column.at("kind") == "peer") {
      EXPECT_FALSE(column.at("available").get<bool>());
    }
  }
  EXPECT_NE(r.output.find("not run:"), std::string::npos) << r.output;
}

TEST(ChiprtBenchCli, RejectsInvalidOptions) {
  for (const char* args : {"--repetitions 0", "--tasks 0", "--threads -1", "--bogus"}) {
    const CommandResult r = run_bench(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  }
}

TEST(ChiprtBenchCli, UnwritableJsonPathFails) {
  const CommandResult r =
      run_bench("--quick --tasks 50 --repetitions 1 --no-peers --json /nonexistent-dir/out.json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent-dir/out.json"), std::string::npos) << r.output;
}

}  // namespace
