#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "chiprt/graph_export.h"
#include "common/graph_image.h"
#include "common/kernel_block.h"
#include "host/graph_image_export.h"

namespace chiprt {

std::string GraphExport::to_dot() const {
  std::string dot = "digraph chiprt {\n";
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const ExportedTask& task = tasks[i];
    const std::string id = "t" + std::to_string(i);
    // A hand-built graph may leave task_id unset (-1): its index stands in.
    const int64_t task_id = task.task_id >= 0 ? task.task_id : static_cast<int64_t>(i);
    std::string label = task.scope_fence ? std::string() : "t" + std::to_string(task_id) + " ";
    if (task.scope_fence) {
      label += "fence";
    } else if (task.dummy) {
      label += "dummy";
    } else if (task.core_type == CoreType::MIX) {
      label += "f" + std::to_string(task.func_id) + "/" + std::to_string(task.mix_aiv[0]) + "/" +
               std::to_string(task.mix_aiv[1]) + " mix";
    } else {
      label +=
          "f" + std::to_string(task.func_id) + " " + std::string(core_type_name(task.core_type));
    }
    if (task.block_num > 1) label += " x" + std::to_string(task.block_num);
    if (task.predicated) label += " pred";
    dot += "  " + id + " [label=\"" + label + "\"" + (task.dummy ? ", style=dashed" : "") + "];\n";
  }
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    for (const uint32_t consumer : consumers_of(tasks[i])) {
      dot += "  t" + std::to_string(i) + " -> t" + std::to_string(consumer) + ";\n";
    }
  }
  dot += "}\n";
  return dot;
}

GraphShape GraphExport::shape() const {
  GraphShape shape;
  shape.tasks = tasks.size();
  shape.edges = consumers.size();
  // Consumers come after their producers, so one pass in task order settles every level.
  std::vector<uint64_t> level(tasks.size(), 1);
  std::vector<uint64_t> width;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const ExportedTask& task = tasks[i];
    (task.dummy ? shape.dependency_only_tasks : shape.kernel_tasks) += 1;
    shape.scope_fences += task.scope_fence ? 1 : 0;
    if (task.producer_count == 0) ++shape.sources;
    if (task.consumer_count == 0) ++shape.sinks;
    if (level[i] > width.size()) width.resize(level[i], 0);
    ++width[level[i] - 1];
    for (const uint32_t consumer : consumers_of(task)) {
      if (consumer < level.size()) level[consumer] = std::max(level[consumer], level[i] + 1);
    }
  }
  shape.depth = width.size();
  for (const uint64_t w : width) shape.max_width = std::max(shape.max_width, w);
  return shape;
}

int64_t* GraphExport::kernel_args(const ExportedTask& task, uint32_t block,
                                  int64_t* storage) const noexcept {
  const int64_t* stored = args.data() + task.args_begin;
  std::memcpy(storage, stored - common::kContextWords,
              (common::kContextWords + task.arg_count) * sizeof(int64_t));
  int64_t* kernel_args = storage + common::kContextWords;
  common::complete_context(kernel_args, reinterpret_cast<uintptr_t>(stored), task.arg_count, block,
                           task.block_num);
  return kernel_args;
}

namespace host {
namespace {

template <class T>
T load(const uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof(T));
  return value;
}

uint64_t entry_of(const std::array<uint64_t, kMaxFuncId>& kernel_entries, int32_t func_id) {
  return func_id >= 0 && func_id < kMaxFuncId ? kernel_entries[static_cast<std::size_t>(func_id)]
                                              : 0;
}

}  // namespace

GraphExport decode_graph_image(std::span<const uint8_t> image,
                               const std::array<uint64_t, kMaxFuncId>& kernel_entries,
                               std::span<const DependencyKinds> edge_kinds) {
  const auto header = load<common::GraphImageHeader>(image.data());
  const uint8_t* records = image.data() + header.tasks_offset;
  const uint8_t* fanout = image.data() + header.fanout_offset;
  const uint8_t* args = image.data() + header.args_offset;
  const uint8_t* task_ids = image.data() + header.task_ids_offset;

  GraphExport graph;
  graph.tasks.resize(header.task_count);
  graph.args.reserve(header.args_count);
  graph.consumers.reserve(header.fanout_count);
  for (uint32_t i = 0; i < header.task_count; ++i) {
    const auto record =
        load<common::TaskRecord>(records + uint64_t{i} * sizeof(common::TaskRecord));
    ExportedTask& task = graph.tasks[i];
    task.task_id = load<int64_t>(task_ids + uint64_t{i} * sizeof(int64_t));
    task.scope_fence = task.task_id == common::kScopeFenceId;
    task.func_id = record.func_id;
    task.core_type = static_cast<CoreType>(record.core_type);
    task.mix_aiv = {record.mix_aiv[0], record.mix_aiv[1]};
    task.block_num = record.block_num;
    task.dummy = (record.flags & common::kTaskFlagDummy) != 0;
    task.predicated = (record.flags & common::kTaskFlagPredicated) != 0;
    if (task.predicated) {
      task.predicate_bytes = record.predicate_bytes;
      task.predicate_addr = record.predicate_addr;
      task.skip_fill_addr = record.skip_fill_addr;
      task.skip_fill_bytes = uint64_t{record.skip_fill_granules} * common::kSkipFillGranuleBytes;
    }
    task.kernel_addr = entry_of(kernel_entries, record.func_id);
    task.mix_aiv_kernel_addr = {entry_of(kernel_entries, record.mix_aiv[0]),
                                entry_of(kernel_entries, record.mix_aiv[1])};

    // The task's whole argument block (context, arguments, views), as the image holds it.
    const uint8_t* block = args + (record.args_begin - common::kContextWords) * sizeof(int64_t);
    const auto context = load<kernel::TaskContext>(block);
    const uint64_t block_words =
        common::kernel_block_words(context.tensor_count, context.scalar_count);
    const std::size_t block_at = graph.args.size();
    graph.args.resize(block_at + block_words);
    std::memcpy(graph.args.data() + block_at, block, block_words * sizeof(int64_t));
    task.args_begin = block_at + common::kContextWords;
    task.arg_count = record.arg_count;
    task.tensor_count = context.tensor_count;

    task.consumers_begin = graph.consumers.size();
    task.consumer_count = record.fanout_count;
    const std::size_t consumers_at = graph.consumers.size();
    graph.consumers.resize(consumers_at + record.fanout_count);
    if (record.fanout_count != 0) {
      std::memcpy(graph.consumers.data() + consumers_at,
                  fanout + uint64_t{record.fanout_begin} * sizeof(uint32_t),
                  uint64_t{record.fanout_count} * sizeof(uint32_t));
    }
    task.producer_count = record.fanin_count;
  }
  // Consumers were laid out in the image's fanout order (each task's list in turn).
  if (edge_kinds.size() == graph.consumers.size()) {
    graph.consumer_kinds.assign(edge_kinds.begin(), edge_kinds.end());
  }
  return graph;
}

}  // namespace host
}  // namespace chiprt
