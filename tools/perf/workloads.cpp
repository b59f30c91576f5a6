#include "workloads.h"

#include <algorithm>

namespace chiprt::perf {

namespace {

// splitmix64: a fixed, library-independent generator so every build draws the same DAG.
uint64_t next_random(uint64_t& state) noexcept {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void empty_task(void* /*context*/, uint64_t /*task*/) noexcept {}

}  // namespace

TaskDag random_dag_of(const Workload& workload) noexcept {
  TaskDag dag;
  dag.tasks = workload.tasks;
  dag.offsets = workload.dag_offsets.data();
  dag.preds = workload.dag_preds.data();
  dag.body = empty_task;
  return dag;
}

std::string_view shape_name(Shape shape) noexcept {
  switch (shape) {
    case Shape::Independent:
      return "independent";
    case Shape::Chain:
      return "chain";
    case Shape::Fan:
      return "fan";
    case Shape::Wavefront:
      return "wavefront";
    case Shape::RandomDag:
      return "random_dag";
  }
  return "unknown";
}

bool parse_shape(std::string_view name, Shape* out) noexcept {
  for (const Shape shape : kAllShapes) {
    if (shape_name(shape) == name) {
      *out = shape;
      return true;
    }
  }
  return false;
}

Workload make_workload(Shape shape, uint64_t requested_tasks) {
  Workload w;
  w.shape = shape;
  const uint64_t requested = std::max<uint64_t>(requested_tasks, 1);
  switch (shape) {
    case Shape::Independent:
    case Shape::Chain:
      w.tasks = requested;
      break;
    case Shape::Fan:
      w.fan_stages = std::max<uint64_t>(requested / (kFanWidth + 2), 1);
      w.tasks = w.fan_stages * (kFanWidth + 2);
      break;
    case Shape::Wavefront:
      w.columns = std::min(kWavefrontColumns, requested);
      w.rows = std::max<uint64_t>(requested / w.columns, 1);
      w.tasks = w.rows * w.columns;
      break;
    case Shape::RandomDag: {
      w.tasks = requested;
      w.dag_offsets.reserve(w.tasks + 1);
      w.dag_preds.reserve(w.tasks * (kDagMinFanIn + kDagMaxFanIn) / 2);
      uint64_t state = kDagSeed;
      w.dag_offsets.push_back(0);
      for (uint64_t i = 0; i < w.tasks; ++i) {
        const uint64_t window = std::min(i, kDagWindow);
        const uint64_t want = kDagMinFanIn + next_random(state) % (kDagMaxFanIn - kDagMinFanIn + 1);
        const uint64_t fan_in = std::min(want, window);
        const std::size_t first = w.dag_preds.size();
        while (w.dag_preds.size() - first < fan_in) {
          const uint64_t pred = i - 1 - next_random(state) % window;
          const auto begin = w.dag_preds.begin() + static_cast<std::ptrdiff_t>(first);
          if (std::find(begin, w.dag_preds.end(), pred) == w.dag_preds.end()) {
            w.dag_preds.push_back(pred);
          }
        }
        w.dag_offsets.push_back(w.dag_preds.size());
      }
      break;
    }
  }
  return w;
}

uint64_t given_edges(const Workload& w) noexcept {
  switch (w.shape) {
    case Shape::Independent:
      return 0;
    case Shape::Chain:
      return w.tasks > 0 ? w.tasks - 1 : 0;
    case Shape::Fan:  // source -> each middle task -> sink, sink -> the next stage's source
      return w.fan_stages * 2 * kFanWidth + (w.fan_stages > 0 ? w.fan_stages - 1 : 0);
    case Shape::Wavefront:
      return w.rows * (w.columns - 1) + (w.rows - 1) * w.columns;
    case Shape::RandomDag:
      return w.dag_preds.size();
  }
  return 0;
}

}  // namespace chiprt::perf
