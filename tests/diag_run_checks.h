// Checks of a diagnostics run directory that the in-process suite
// (tests/unit/host/diagnostics_run_test.cpp) and the isolated-device suite
// (tests/isolation/diagnostics_test.cpp) share: the graph as a set of (producer, consumer) task
// ids, deps.json against Worker::export_graph (equal, kinds included), no two slices of a core
// overlapping, every file of a full run present. Failures are reported through gtest (EXPECT_*), so
// a caller goes on.
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

// Edges with their kinds (DependencyKinds bits, as int for readable failures), by (producer,
// consumer) task id.
using KindedEdges = std::map<std::pair<uint64_t, uint64_t>, int>;

// The edges between the user's tasks of an exported graph (the scope fences' left out), with
// their kinds.
inline KindedEdges user_edges_of(const GraphExport& graph) {
  KindedEdges edges;
  for (const ExportedTask& task : graph.tasks) {
    const auto consumers = graph.consumers_of(task);
    const auto kinds = graph.kinds_of(task);
    for (std::size_t k = 0; k < consumers.size(); ++k) {
      const ExportedTask& consumer = graph.tasks[consumers[k]];
      if (task.scope_fence || consumer.scope_fence) continue;
      edges[{static_cast<uint64_t>(task.task_id), static_cast<uint64_t>(consumer.task_id)}] =
          kinds.empty() ? 0 : kinds[k];
    }
  }
  return edges;
}

// The user's edges deps.json recorded ("edges"), with their kinds.
inline KindedEdges user_edges_of(const diagnostics::RunModel& model) {
  KindedEdges edges;
  for (const diagnostics::Edge& edge : model.edges) {
    if ((edge.kinds & kInternalDependencies) == 0) {
      EXPECT_TRUE(edges.emplace(std::pair{edge.producer, edge.consumer}, edge.kinds).second)
          << "edge " << edge.producer << " -> " << edge.consumer << " recorded twice";
    }
  }
  return edges;
}

// The kinds of internal edges (scope fences') and how many edges have each.
inline std::map<int, std::size_t> internal_kinds_of(const GraphExport& graph) {
  std::map<int, std::size_t> counts;
  for (const DependencyKinds kinds : graph.consumer_kinds) {
    if ((kinds & kInternalDependencies) != 0) ++counts[kinds];
  }
  return counts;
}
inline std::map<int, std::size_t> internal_kinds_of(const diagnostics::RunModel& model) {
  std::map<int, std::size_t> counts;
  for (const diagnostics::Edge& edge : model.edges) {
    if ((edge.kinds & kInternalDependencies) != 0) ++counts[edge.kinds];
  }
  return counts;
}

// deps.json is the graph of the call on every variant, threaded or serial: its user edges are
// exactly the exported graph's edges between user tasks, kinds included; host_build_graph's
// internal edges are the exported graph's edges of its scope fences (the ring has none).
inline void expect_graph_is_exported(const diagnostics::RunModel& model,
                                     const GraphExport& exported, RuntimeVariant runtime) {
  ASSERT_TRUE(model.have_edges);
  ASSERT_EQ(exported.consumer_kinds.size(), exported.consumers.size());
  EXPECT_EQ(user_edges_of(model), user_edges_of(exported));
  if (runtime == RuntimeVariant::HostBuildGraph) {
    EXPECT_EQ(internal_kinds_of(model), internal_kinds_of(exported));
  } else {
    EXPECT_TRUE(internal_kinds_of(model).empty());
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
