// The oneTBB peer: the suite's graphs as a tbb::flow::graph of continue_nodes with hand-written
// edges (no dependency inference), built and run inside a task_arena of the suite's thread count.
// Building the nodes and edges is timed, as chiprt's graph construction is.
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

class TbbRunner final : public Runner {
 public:
  explicit TbbRunner(unsigned threads) : arena_(static_cast<int>(threads)) {}

  RunResult run(const Workload& w) override {
    uint64_t elapsed = 0;
    arena_.execute([&] { elapsed = build_and_run(w); });
    return {w.tasks, elapsed};
  }

 private:
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
        case Shape::RandomDag: {
          std::vector<Node*> tasks(w.tasks);
          for (uint64_t i = 0; i < w.tasks; ++i) {
            Node& task = add();
            tasks[i] = &task;
            const auto preds = w.predecessors(i);
            for (const uint64_t pred : preds) make_edge(*tasks[pred], task);
            if (preds.empty()) roots.push_back(&task);
          }
          break;
        }
      }
      for (Node* root : roots) root->try_put(continue_msg());
      g.wait_for_all();
      // Nodes are destroyed before `g` (declared after it) and before the clock stops.
    }
    const auto end = std::chrono::steady_clock::now();
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
  }

  oneapi::tbb::task_arena arena_;
};

}  // namespace

std::unique_ptr<Runner> make_tbb_runner(unsigned threads) {
  return std::make_unique<TbbRunner>(threads);
}

}  // namespace chiprt::perf
