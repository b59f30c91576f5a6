#include "diagnostics/artifacts/files.h"

#include <unordered_map>

namespace chiprt::diagnostics::artifact {
namespace {

constexpr const char* kTasksHeader =
    "task,block,func_id,kernel,core_type,core,submit_ns,ready_ns,dispatch_ns,start_ns,end_ns,"
    "producers,consumers,submit_begin_ns,complete_ns";

std::string id_list(const Index& index, bool producers, uint64_t task) {
  std::string text;
  auto add = [&](uint64_t id) {
    if (!text.empty()) text += ' ';
    text += std::to_string(id);
  };
  if (producers) {
    index.for_each_producer(task, add);
  } else {
    index.for_each_consumer(task, add);
  }
  return text;
}

}  // namespace

void write_tasks(TextOut& out, const RunModel& model, const Index& index) {
  out << kTasksHeader << "\n";
  std::unordered_map<int32_t, std::string> labels;
  auto row = [&](uint64_t task, const std::string& block, const BlockRun* run) {
    const TaskNode* node = find_node(model, index, task);
    const int32_t func_id = node ? node->func_id : -1;
    auto label = labels.find(func_id);
    if (label == labels.end()) label = labels.emplace(func_id, model.kernel_label(func_id)).first;
    out << task << ',' << block << ',' << func_id << ',' << csv_field(label->second) << ','
        << (node ? core_type_name(node->core_type) : "") << ',' << (run ? run->core : -1) << ','
        << csv_time(node ? node->submit_end_ns : kNoTime) << ','
        << csv_time(node ? node->ready_ns : kNoTime) << ','
        << csv_time(run ? run->dispatch_ns : kNoTime) << ','
        << csv_time(run ? run->start_ns : kNoTime) << ',' << csv_time(run ? run->end_ns : kNoTime)
        << ',' << id_list(index, true, task) << ',' << id_list(index, false, task) << ','
        << csv_time(node ? node->submit_begin_ns : kNoTime) << ','
        << csv_time(run ? run->complete_ns : kNoTime) << '\n';
  };
  for (const BlockRun& b : model.blocks) row(b.task, std::to_string(b.block), &b);
  // Tasks without a block record: a row with an empty block (submitted, never dispatched).
  for (const TaskNode& node : model.nodes) {
    if (auto [first, last] = index.blocks(node.task); first == last) row(node.task, "", nullptr);
  }
}

void read_tasks(const std::string& path, RunModel& model) {
  std::unordered_map<uint64_t, size_t> node_index;
  for (size_t i = 0; i < model.nodes.size(); ++i) node_index.emplace(model.nodes[i].task, i);
  const bool had_nodes = !model.nodes.empty();
  read_csv(path, kTasksHeader, 15, [&](const std::vector<std::string>& f, size_t line) {
    const uint64_t task = number<uint64_t>(f[0], path, line, "task");
    auto it = node_index.find(task);
    if (it == node_index.end()) {
      // No deps.json: the node comes from the rows.
      TaskNode node;
      node.task = task;
      node.func_id = number<int32_t>(f[2], path, line, "func_id");
      if (!f[4].empty() && !parse_core_type(f[4], &node.core_type)) {
        fail(path, "line " + std::to_string(line) + ": unknown core_type \"" + f[4] + "\"");
      }
      node.submit_end_ns = time_field(f[6], path, line, "submit_ns");
      node.ready_ns = time_field(f[7], path, line, "ready_ns");
      node.submit_begin_ns = time_field(f[13], path, line, "submit_begin_ns");
      node.block_num = 0;
      it = node_index.emplace(task, model.nodes.size()).first;
      model.nodes.push_back(node);
    } else if (had_nodes) {
      TaskNode& node = model.nodes[it->second];
      if (node.submit_end_ns == kNoTime)
        node.submit_end_ns = time_field(f[6], path, line, "submit_ns");
      if (node.ready_ns == kNoTime) node.ready_ns = time_field(f[7], path, line, "ready_ns");
      if (node.submit_begin_ns == kNoTime) {
        node.submit_begin_ns = time_field(f[13], path, line, "submit_begin_ns");
      }
    }
    if (f[1].empty()) return;  // a task without a block record
    BlockRun block;
    block.task = task;
    block.block = number<uint32_t>(f[1], path, line, "block");
    block.core = number<int32_t>(f[5], path, line, "core");
    block.dispatch_ns = time_field(f[8], path, line, "dispatch_ns");
    block.start_ns = time_field(f[9], path, line, "start_ns");
    block.end_ns = time_field(f[10], path, line, "end_ns");
    block.complete_ns = time_field(f[14], path, line, "complete_ns");
    model.blocks.push_back(block);
    if (!had_nodes) {
      TaskNode& node = model.nodes[it->second];
      node.block_num = std::max(node.block_num, block.block + 1);
    }
  });
  if (!had_nodes) {
    for (TaskNode& node : model.nodes) node.block_num = std::max(node.block_num, 1u);
    std::stable_sort(model.nodes.begin(), model.nodes.end(),
                     [](const TaskNode& a, const TaskNode& b) { return a.task < b.task; });
  }
}

}  // namespace chiprt::diagnostics::artifact
