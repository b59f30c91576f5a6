// The oneTBB peer: the suite's graphs as a tbb::flow::graph of continue_nodes with hand-written
// edges (no dependency inference), built and run inside a task_arena of the suite's thread count.
// Building the nodes and edges is timed, as chiprt's graph construction is. Task DAGs (the random
// DAG row, the real-kernel rows): one node per task, an edge from each predecessor.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <chrono>
#include <deque>
#include <memory>
#include <vector>

#include "runners.h"

namespace chiprt::perf {

namespace {

using oneapi::tbb::flow::continue_msg;
using oneapi::tbb::flow::continue_node;
using oneapi::tbb::flow::graph;
using oneapi::tbb::flow::make_edge;
using Node = continue_node<continue_msg>;

struct EmptyBody {
  void operator()(const continue_msg&) const noexcept {}
};

struct DagTaskBody {
  const TaskDag* dag;
  uint64_t task;
  void operator()(const continue_msg&) const noexcept { dag->run(task); }
};

uint64_t elapsed_since(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

class TbbRunner final : public DagRunner {
 public:
  explicit TbbRunner(unsigned threads) : arena_(static_cast<int>(threads)) {}

  RunResult run(const Workload& w) override {
    if (w.shape == Shape::RandomDag) return {w.tasks, run_dag(random_dag_of(w))};
    uint64_t elapsed = 0;
    arena_.execute([&] { elapsed = build_and_run(w); });
    return {w.tasks, elapsed};
  }

  uint64_t run_dag(const TaskDag& dag) override {
    uint64_t elapsed = 0;
    arena_.execute([&] { elapsed = build_and_run_dag(dag); });
    return elapsed;
  }

 private:
  static uint64_t build_and_run_dag(const TaskDag& dag) {
    const auto start = std::chrono::steady_clock::now();
    {
      graph g;
      std::deque<Node> nodes;  // stable addresses; a node's edges refer to it
      std::vector<Node*> task_nodes(dag.tasks);
      std::vector<Node*> roots;
      for (uint64_t i = 0; i < dag.tasks; ++i) {
        Node& task = nodes.emplace_back(g, DagTaskBody{&dag, i});
        task_nodes[i] = &task;
        const auto preds = dag.predecessors(i);
        for (const uint64_t pred : preds) make_edge(*task_nodes[pred], task);
        if (preds.empty()) roots.push_back(&task);
      }
      for (Node* root : roots) root->try_put(continue_msg());
      g.wait_for_all();
      // Nodes are destroyed before `g` (declared after it) and before the clock stops.
    }
    return elapsed_since(start);
  }

  static uint64_t build_and_run(const Workload& w) {
    const auto start = std::chrono::steady_clock::now();
    {
      graph g;
      std::deque<Node> nodes;  // stable addresses; a node's edges refer to it
      std::vector<Node*> roots;
      auto add = [&]() -> Node& { return nodes.emplace_back(g, EmptyBody{}); };
      switch (w.shape) {
        case Shape::Independent:
          for (uint64_t i = 0; i < w.tasks; ++i) roots.push_back(&add());
          break;
        case Shape::Chain: {
          Node* previous = &add();
          roots.push_back(previous);
          for (uint64_t i = 1; i < w.tasks; ++i) {
            Node& next = add();
            make_edge(*previous, next);
            previous = &next;
          }
          break;
        }
        case Shape::Fan: {
          Node* previous_sink = nullptr;
          for (uint64_t stage = 0; stage < w.fan_stages; ++stage) {
            Node& source = add();
            if (previous_sink != nullptr) {
              make_edge(*previous_sink, source);
            } else {
              roots.push_back(&source);
            }
            std::vector<Node*> middle;
            middle.reserve(kFanWidth);
            for (uint64_t i = 0; i < kFanWidth; ++i) {
              Node& m = add();
              make_edge(source, m);
              middle.push_back(&m);
            }
            Node& sink = add();
            for (Node* m : middle) make_edge(*m, sink);
            previous_sink = &sink;
          }
          break;
        }
        case Shape::Wavefront: {
          std::vector<Node*> tiles(w.rows * w.columns);
          for (uint64_t r = 0; r < w.rows; ++r) {
            for (uint64_t c = 0; c < w.columns; ++c) {
              Node& tile = add();
              tiles[r * w.columns + c] = &tile;
              if (c > 0) make_edge(*tiles[r * w.columns + c - 1], tile);
              if (r > 0) make_edge(*tiles[(r - 1) * w.columns + c], tile);
              if (r == 0 && c == 0) roots.push_back(&tile);
            }
          }
          break;
        }
        case Shape::RandomDag:
          // run() sends it to run_dag.
          break;
      }
      for (Node* root : roots) root->try_put(continue_msg());
      g.wait_for_all();
      // Nodes are destroyed before `g` (declared after it) and before the clock stops.
    }
    return elapsed_since(start);
  }

  oneapi::tbb::task_arena arena_;
};

}  // namespace

std::unique_ptr<Runner> make_tbb_runner(unsigned threads) {
  return std::make_unique<TbbRunner>(threads);
}

}  // namespace chiprt::perf
