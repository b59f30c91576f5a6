// The fixed graph shapes of `chiprt bench` and chiprt_bench's peer benchmarks, described once so
// that chiprt and every peer runtime build the same graph (same tasks, same dependencies).
//
// A Workload is an immutable value made by make_workload() before timing starts (the random DAG's
// predecessor lists are generated there); runners only read it, from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "task_dag.h"

namespace chiprt::perf {

enum class Shape : uint8_t { Independent, Chain, Fan, Wavefront, RandomDag };
inline constexpr Shape kAllShapes[] = {Shape::Independent, Shape::Chain, Shape::Fan,
                                       Shape::Wavefront, Shape::RandomDag};

std::string_view shape_name(Shape shape) noexcept;  // "independent", "chain", ...
bool parse_shape(std::string_view name, Shape* out) noexcept;

inline constexpr uint64_t kFanWidth = 1000;         // fan: 1 -> 1000 -> 1 per stage
inline constexpr uint64_t kWavefrontColumns = 100;  // wavefront: (tasks / 100) x 100 tiles
inline constexpr uint64_t kDagMinFanIn = 1;         // random DAG: fan-in uniform in [1, 5]
inline constexpr uint64_t kDagMaxFanIn = 5;         //   (average 3), clamped to the task index
inline constexpr uint64_t kDagWindow = 1000;        // predecessors among the previous 1000 tasks
inline constexpr uint64_t kDagSeed = 0x5eed'c41b'0000'0003ull;

struct Workload {
  Shape shape = Shape::Independent;
  uint64_t tasks = 0;  // exact task count of the graph (the shape may round the request)
  // fan
  uint64_t fan_stages = 0;  // each stage: 1 source, kFanWidth middle tasks, 1 sink
  // wavefront: task (r, c) updates tile (r, c) after reading tiles (r, c-1) and (r-1, c)
  uint64_t rows = 0;
  uint64_t columns = 0;
  // random DAG: task i's predecessors are dag_preds[dag_offsets[i] .. dag_offsets[i+1]), all < i
  std::vector<uint64_t> dag_offsets;
  std::vector<uint64_t> dag_preds;

  std::span<const uint64_t> predecessors(uint64_t task) const noexcept {
    return {dag_preds.data() + dag_offsets[task], dag_offsets[task + 1] - dag_offsets[task]};
  }
};

// A RandomDag workload's graph as a TaskDag with empty bodies (peers run that row through their
// DagRunner::run_dag). The view points into `workload`.
TaskDag random_dag_of(const Workload& workload) noexcept;

// The workload of `shape` closest to `requested_tasks` (at least one stage / row / task).
Workload make_workload(Shape shape, uint64_t requested_tasks);
// The dependency edges of the workload's graph as the peers are given them by hand (oneTBB's
// make_edge calls): the fewest that order it. chiprt infers its own from the tensor regions.
uint64_t given_edges(const Workload& workload) noexcept;

}  // namespace chiprt::perf
