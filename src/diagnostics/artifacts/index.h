// Lookups the artifact writers share (a task's node, blocks, producers, consumers, arguments).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "diagnostics/run_model.h"

namespace chiprt::diagnostics::artifact {

// Lookups the writers share, as sorted index arrays over the model's rows (a few bytes per row;
// per-task hash maps of vectors cost a hundred bytes and more per task at a million tasks).
// A run's model comes sorted by task (nodes, blocks, args); a model built otherwise (by hand,
// read back) is indexed through the order arrays.
class Index {
 public:
  Index(const RunModel& model, bool with_edges, bool with_args) : model_(model) {
    nodes_sorted_ =
        std::is_sorted(model.nodes.begin(), model.nodes.end(),
                       [](const TaskNode& a, const TaskNode& b) { return a.task < b.task; });
    if (!nodes_sorted_)
      node_order_ = order_by(model.nodes.size(), [&](size_t i) { return model.nodes[i].task; });
    block_order_ = order_by(model.blocks.size(), [&](size_t i) { return model.blocks[i].task; });
    if (with_edges) {
      by_consumer_ =
          order_by(model.edges.size(), [&](size_t i) { return model.edges[i].consumer; });
      by_producer_ =
          order_by(model.edges.size(), [&](size_t i) { return model.edges[i].producer; });
    }
    if (with_args) {
      args_order_ = order_by(model.args.size(), [&](size_t i) { return model.args[i].task; });
    }
  }

  const TaskNode* node(uint64_t task) const {
    if (nodes_sorted_) {
      auto it = std::lower_bound(model_.nodes.begin(), model_.nodes.end(), task,
                                 [](const TaskNode& n, uint64_t t) { return n.task < t; });
      return it != model_.nodes.end() && it->task == task ? &*it : nullptr;
    }
    auto [first, last] = range(node_order_, task, [&](size_t i) { return model_.nodes[i].task; });
    return first != last ? &model_.nodes[*first] : nullptr;
  }
  // The task's producers (consumers), in the order of the model's edges, to `f`.
  template <class F>
  void for_each_producer(uint64_t task, F&& f) const {
    auto key = [&](size_t i) { return model_.edges[i].consumer; };
    for (auto [it, end] = range(by_consumer_, task, key); it != end; ++it)
      f(model_.edges[*it].producer);
  }
  template <class F>
  void for_each_consumer(uint64_t task, F&& f) const {
    auto key = [&](size_t i) { return model_.edges[i].producer; };
    for (auto [it, end] = range(by_producer_, task, key); it != end; ++it)
      f(model_.edges[*it].consumer);
  }
  // Indices into model.blocks (model.args) of the task's rows, in model order.
  std::pair<const size_t*, const size_t*> blocks(uint64_t task) const {
    auto [first, last] = range(block_order_, task, [&](size_t i) { return model_.blocks[i].task; });
    return {block_order_.data() + (first - block_order_.begin()),
            block_order_.data() + (last - block_order_.begin())};
  }
  std::pair<const size_t*, const size_t*> args(uint64_t task) const {
    auto [first, last] = range(args_order_, task, [&](size_t i) { return model_.args[i].task; });
    return {args_order_.data() + (first - args_order_.begin()),
            args_order_.data() + (last - args_order_.begin())};
  }

 private:
  using Order = std::vector<size_t>;
  // 0..n-1 sorted by (key, position).
  template <class Key>
  static Order order_by(size_t n, Key key) {
    Order order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; ++i) sorted = key(i - 1) <= key(i);
    if (!sorted) {
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const uint64_t ka = key(a), kb = key(b);
        return ka != kb ? ka < kb : a < b;
      });
    }
    return order;
  }
  template <class Key>
  static std::pair<Order::const_iterator, Order::const_iterator> range(const Order& order,
                                                                       uint64_t task, Key key) {
    auto first = std::lower_bound(order.begin(), order.end(), task,
                                  [&](size_t i, uint64_t t) { return key(i) < t; });
    auto last = std::upper_bound(first, order.end(), task,
                                 [&](uint64_t t, size_t i) { return t < key(i); });
    return {first, last};
  }

  const RunModel& model_;
  bool nodes_sorted_ = true;
  Order node_order_;
  Order block_order_;
  Order by_consumer_, by_producer_;
  Order args_order_;
};

inline const TaskNode* find_node(const RunModel&, const Index& index, uint64_t task) {
  return index.node(task);
}

}  // namespace chiprt::diagnostics::artifact
