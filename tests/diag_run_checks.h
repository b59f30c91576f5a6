// Checks of a diagnostics run directory that the in-process suite
// (tests/unit/host/diagnostics_run_test.cpp) and the isolated-device suite
// (tests/isolation/diagnostics_test.cpp) share: the graph as a set of (producer, consumer) task
// ids, deps.json against Worker::export_graph, no two slices of a core overlapping, every file of
// a full run present. Failures are reported through gtest (EXPECT_*), so a caller goes on.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/graph_export.h"
#include "diagnostics/artifacts.h"
#include "diagnostics/run_model.h"

namespace chiprt::diag_checks {

using EdgeSet = std::set<std::pair<uint64_t, uint64_t>>;

// The edges of an exported graph, by task id.
inline EdgeSet edges_of(const GraphExport& graph) {
  EdgeSet edges;
  for (const ExportedTask& task : graph.tasks) {
    for (uint32_t consumer : graph.consumers_of(task)) {
      edges.emplace(static_cast<uint64_t>(task.task_id),
                    static_cast<uint64_t>(graph.tasks[consumer].task_id));
    }
  }
  return edges;
}

// The edges deps.json recorded.
inline EdgeSet edges_of(const diagnostics::RunModel& model) {
  EdgeSet edges;
  for (const diagnostics::Edge& edge : model.edges) edges.emplace(edge.producer, edge.consumer);
  return edges;
}

// Whether a run on `runtime` may record fewer edges than Worker::export_graph gives: a threaded
// tensormap_ringbuffer run retires producers that completed before their consumer was submitted,
// and a retired producer is no dependency any more (the ring records the edges to producers still
// live).
inline bool retires_while_submitting(RuntimeVariant runtime, bool serial) {
  return runtime == RuntimeVariant::TensormapRingbuffer && !serial;
}

// deps.json is the graph of the call (a subset of it where the run retires while submitting).
inline void expect_graph_is_exported(const diagnostics::RunModel& model,
                                     const GraphExport& exported, RuntimeVariant runtime,
                                     bool serial) {
  ASSERT_TRUE(model.have_edges);
  const EdgeSet recorded = edges_of(model);
  const EdgeSet expected = edges_of(exported);
  if (retires_while_submitting(runtime, serial)) {
    for (const auto& edge : recorded) {
      EXPECT_TRUE(expected.count(edge)) << "edge " << edge.first << " -> " << edge.second;
    }
  } else {
    EXPECT_EQ(recorded, expected);
  }
}

// No two slices on one core overlap (blocks without both times are left out).
inline void expect_no_overlap_per_core(const diagnostics::RunModel& model) {
  std::map<int32_t, std::vector<std::pair<uint64_t, uint64_t>>> by_core;
  for (const diagnostics::BlockRun& block : model.blocks) {
    if (block.start_ns == diagnostics::kNoTime || block.end_ns == diagnostics::kNoTime) continue;
    by_core[block.core].emplace_back(block.start_ns, block.end_ns);
  }
  for (auto& [core, spans] : by_core) {
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i) {
      EXPECT_GE(spans[i].first, spans[i - 1].second) << "overlapping slices on core " << core;
    }
  }
}

// Every file DiagnosticsConfig::all writes (scope stats and args data are not collected).
inline void expect_full_run_files(const std::string& run_dir) {
  for (const char* file :
       {diagnostics::kTraceFile, diagnostics::kTasksFile, diagnostics::kDepsFile,
        diagnostics::kCriticalPathMdFile, diagnostics::kCriticalPathJsonFile,
        diagnostics::kCountersFile, diagnostics::kRunFile, diagnostics::kReportFile}) {
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(run_dir) / file)) << file;
  }
}

}  // namespace chiprt::diag_checks
