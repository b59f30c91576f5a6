#include "host/diag_decoder.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "chiprt/task_args.h"

namespace chiprt::host {
namespace {

using common::DiagKind;
using common::DiagRecord;
using diagnostics::BlockRun;
using diagnostics::kNoTime;
using diagnostics::TaskNode;

template <class T>
uint64_t capacity_bytes(const std::vector<T>& v) {
  return static_cast<uint64_t>(v.capacity()) * sizeof(T);
}
// The rows of `rows`, leaving it empty.
template <class T>
std::vector<T> take(std::vector<T>& rows) {
  std::vector<T> out = std::move(rows);
  std::vector<T>().swap(rows);
  return out;
}

template <class T>
void release(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

bool block_key_less(const BlockRun& a, const BlockRun& b) {
  return std::tie(a.task, a.block, a.core) < std::tie(b.task, b.block, b.core);
}

}  // namespace

DiagDecoder::DiagDecoder(const Setup& setup) : setup_(setup), streams_(setup.stream_count) {}

void DiagDecoder::set_anchor(uint64_t host_ns, uint64_t cycles) {
  setup_.anchor_host_ns = host_ns;
  setup_.anchor_cycles = cycles;
  have_anchor_ = true;
}

uint64_t DiagDecoder::to_run_ns(uint64_t cycles) const noexcept {
  if (!have_anchor_ || setup_.clock_hz == 0) return kNoTime;
  const long double delta =
      (static_cast<long double>(cycles) - static_cast<long double>(setup_.anchor_cycles)) * 1e9L /
      static_cast<long double>(setup_.clock_hz);
  const long double ns = static_cast<long double>(setup_.anchor_host_ns) + delta;
  return ns <= 0 ? 0 : static_cast<uint64_t>(ns);
}

uint64_t DiagDecoder::retained_bytes() const noexcept {
  return capacity_bytes(blocks_) + capacity_bytes(hints_) + capacity_bytes(dispatches_) +
         capacity_bytes(completions_) + capacity_bytes(nodes_) + capacity_bytes(edges_) +
         capacity_bytes(thread_spans_) + capacity_bytes(counters_) + capacity_bytes(args_) +
         arg_shape_words_ * sizeof(uint64_t) + capacity_bytes(streams_) +
         capacity_bytes(scopes_recorded_) +
         scopes_.size() * (sizeof(diagnostics::ScopeStat) + 4 * sizeof(void*));
}

void DiagDecoder::decode(const DiagRecord* records, std::size_t count, uint32_t stream) {
  for (std::size_t k = 0; k < count; ++k) decode_one(records[k], stream);
  records_received_ += count;
}

void DiagDecoder::decode_one(const DiagRecord& r, uint32_t stream) {
  switch (static_cast<DiagKind>(r.kind)) {
    case DiagKind::TaskExec: {
      BlockRun block;
      block.task = r.task;
      block.block = r.block;
      block.core = r.where;
      block.start_ns = to_run_ns(r.begin);
      block.end_ns = to_run_ns(r.end);
      blocks_.push_back(block);
      hints_.push_back({r.task, r.func_id, std::max<uint32_t>(r.value, 1)});
      break;
    }
    case DiagKind::Counters: {
      diagnostics::TaskCounters c;
      c.task = r.task;
      c.block = r.block;
      c.core = r.where;
      c.valid = r.value;
      c.instructions = r.a;
      c.cycles = r.b;
      c.cpu_ns = r.c;
      counters_.push_back(c);
      break;
    }
    case DiagKind::Dispatch:
    case DiagKind::Complete: {
      SchedRecord s;
      s.task = r.task;
      s.t_ns = to_run_ns(r.begin);
      s.block = r.block;
      s.func_id = r.func_id;
      s.block_num = std::max<uint32_t>(r.value, 1);
      s.core = r.where;
      s.thread = static_cast<uint16_t>(thread_of(stream));
      (static_cast<DiagKind>(r.kind) == DiagKind::Dispatch ? dispatches_ : completions_)
          .push_back(s);
      break;
    }
    case DiagKind::LoopPhase: {
      diagnostics::ThreadSpan span;
      span.kind = diagnostics::ThreadSpan::Kind::LoopPhase;
      span.thread = thread_of(stream);
      span.what = r.value;
      span.begin_ns = to_run_ns(r.begin);
      span.end_ns = to_run_ns(r.end);
      thread_spans_.push_back(span);
      break;
    }
    case DiagKind::Submit: {
      TaskNode n;
      n.task = r.task;
      n.func_id = r.func_id;
      n.block_num = std::max<uint32_t>(r.value, 1);
      n.scope_depth = static_cast<uint32_t>(r.a);
      n.core_type = static_cast<CoreType>(r.b);
      n.dependency_only = r.c != 0;
      n.submit_begin_ns = to_run_ns(r.begin);
      n.submit_end_ns = to_run_ns(r.end);
      nodes_.push_back(n);
      if (setup_.config.swimlane_level >= 4) {
        diagnostics::ThreadSpan span;
        span.kind = diagnostics::ThreadSpan::Kind::Submit;
        span.thread = 0;
        span.task = r.task;
        span.begin_ns = n.submit_begin_ns;
        span.end_ns = n.submit_end_ns;
        thread_spans_.push_back(span);
      }
      break;
    }
    case DiagKind::Edge:
      edges_.push_back({r.a, r.task, static_cast<DependencyKinds>(r.value)});
      break;
    case DiagKind::ScopeStats:
    case DiagKind::RingWait: {
      const bool stats = static_cast<DiagKind>(r.kind) == DiagKind::ScopeStats;
      if (!stats && r.value >= 3) break;
      const uint64_t number = stats ? r.task : r.b;
      const uint64_t depth = stats ? r.value : r.a;
      auto [it, inserted] = scopes_.try_emplace(number);
      diagnostics::ScopeStat& s = it->second;
      if (inserted) {
        s.scope = number;
        s.depth = static_cast<uint32_t>(depth);
        const std::size_t set = std::min<uint64_t>(depth, kRingScopeDepths - 1);
        s.task_window_capacity = setup_.rings.task_window[set];
        s.heap_capacity = setup_.rings.heap_bytes[set];
        s.dep_pool_capacity = setup_.rings.dep_pool[set];
      }
      if (stats) {
        s.tasks = r.a;
        s.peak_task_window = r.b;
        s.peak_heap_bytes = r.c;
        s.peak_dep_pool = r.begin;
        scopes_recorded_.push_back(r.task);
        if (r.end != 0) ++scopes_open_at_stop_;
      } else {
        ++s.waits[r.value];
        const uint64_t begin = to_run_ns(r.begin), end = to_run_ns(r.end);
        if (begin != kNoTime && end != kNoTime && end > begin) s.wait_ns[r.value] += end - begin;
      }
      break;
    }
    case DiagKind::TensorArg: {
      if (stream >= streams_.size()) break;
      StreamState& st = streams_[stream];
      if (!st.have_task || st.task != r.task) {
        st.have_task = true;
        st.task = r.task;
        st.task_args = args_.size();
      }
      diagnostics::TensorArgRecord a;
      a.task = r.task;
      a.index = r.value & 0xff;
      const uint32_t tag = (r.value >> 8) & 0xff;
      a.tag = tag < kArgTagCount ? static_cast<ArgTag>(tag) : ArgTag::NoDep;
      const uint32_t ndim = std::min<uint32_t>((r.value >> 16) & 0xff, kMaxTensorDims);
      a.buffer_addr = r.a;
      a.start_offset = r.b;
      a.dtype = static_cast<DataType>(r.c & 0xff);
      a.shape.assign(ndim, 0);
      a.strides.assign(ndim, 0);
      arg_shape_words_ += 2 * ndim;
      if (r.begin > 1) spmd_args_ = true;
      st.arg = args_.size();
      st.words_left = 2 * ndim;
      st.word = 0;
      args_.push_back(std::move(a));
      break;
    }
    case DiagKind::Continuation: {
      if (stream >= streams_.size()) break;
      StreamState& st = streams_[stream];
      if (st.words_left == 0) break;
      diagnostics::TensorArgRecord& a = args_[st.arg];
      for (const uint64_t word : {r.begin, r.end, r.a, r.b, r.c}) {
        if (st.words_left == 0) break;
        (st.word % 2 == 0 ? a.shape : a.strides)[st.word / 2] = word;
        ++st.word;
        --st.words_left;
      }
      break;
    }
    case DiagKind::ArgData: {
      if (r.b > 0 && r.a <= setup_.args_arena_bytes && r.b <= setup_.args_arena_bytes - r.a) {
        args_data_used_ = std::max(args_data_used_, r.a + r.b);
      }
      if (stream >= streams_.size()) break;
      const StreamState& st = streams_[stream];
      if (!st.have_task || st.task != r.task) break;
      // The task's latest view with this index (its TensorArg came before, on this stream).
      for (std::size_t i = args_.size(); i > st.task_args; --i) {
        diagnostics::TensorArgRecord& a = args_[i - 1];
        if (a.index != (r.value & 0xff)) continue;
        diagnostics::TensorArgRecord::Data& d =
            ((r.value >> 8) & 0xff) == static_cast<uint32_t>(common::DiagArgPhase::Before)
                ? a.before
                : a.after;
        d.present = true;
        d.wanted_bytes = r.c;
        // Checked against the bytes read back in build().
        d.offset = r.a;
        d.bytes = r.b;
        break;
      }
      break;
    }
    default:
      break;
  }
}

void DiagDecoder::build(diagnostics::RunModel& model, uint64_t args_data_bytes) {
  std::vector<BlockRun> blocks = take(blocks_);
  const std::size_t executed = match_dispatches(blocks, model);
  match_completions(blocks, model);
  if (blocks.size() != executed) std::sort(blocks.begin(), blocks.end(), block_key_less);
  merge_nodes(model);
  if (model.edges.empty()) {
    model.edges = take(edges_);
  } else {
    model.edges.insert(model.edges.end(), edges_.begin(), edges_.end());
    release(edges_);
  }
  if (model.have_edges) set_ready_times(blocks, model);
  model.blocks = std::move(blocks);
  model.thread_spans = take(thread_spans_);
  model.counters = take(counters_);
  model.args = take_args(args_data_bytes);
  if (setup_.ring && setup_.config.scope_stats) build_scopes(model);
  release(streams_);
}

std::size_t DiagDecoder::match_dispatches(std::vector<BlockRun>& blocks,
                                          diagnostics::RunModel& model) {
  using diagnostics::SchedulerEvent;
  const bool sched_events = setup_.config.swimlane_level >= 2;

  // Blocks by (task, block, core): a Dispatch finds its TaskExec's block by that key. The core
  // belongs to the key: the parts of a MIX task (AIC, AIV0, AIV1) are all block 0 of their task,
  // one on each core, so keyed by (task, block) alone the Dispatch of a part that never ended (the
  // AIV0 kernel that crashed the device) found the TaskExec of a part that did, and the crashed
  // part had no slice.
  std::sort(blocks.begin(), blocks.end(), block_key_less);
  const std::size_t executed = blocks.size();
  // Blocks dispatched and never finished (still running: stuck, or the device died under them),
  // by key; few.
  std::map<std::tuple<uint64_t, uint32_t, int32_t>, std::size_t> unfinished;
  if (sched_events) model.scheduler_events.reserve(dispatches_.size() + completions_.size());
  for (const SchedRecord& d : dispatches_) {
    BlockRun key;
    key.task = d.task;
    key.block = d.block;
    key.core = d.core;
    auto it = std::lower_bound(blocks.begin(), blocks.begin() + executed, key, block_key_less);
    std::size_t at = 0;
    if (it != blocks.begin() + executed && !block_key_less(key, *it)) {
      at = static_cast<std::size_t>(it - blocks.begin());
    } else {
      auto [u, inserted] = unfinished.try_emplace({d.task, d.block, key.core}, blocks.size());
      if (inserted) {
        key.start_ns = d.t_ns;
        blocks.push_back(key);
        hints_.push_back({d.task, d.func_id, d.block_num});
      }
      at = u->second;
    }
    blocks[at].dispatch_ns = d.t_ns;
    if (sched_events) {
      model.scheduler_events.push_back(
          {SchedulerEvent::Kind::Dispatch, d.thread, d.core, d.task, d.block, d.t_ns});
    }
  }
  release(dispatches_);
  return executed;
}

// Completions carry the core but not the block: each goes to the earliest-starting block of its
// task on that core not yet matched.
void DiagDecoder::match_completions(std::vector<BlockRun>& blocks, diagnostics::RunModel& model) {
  using diagnostics::SchedulerEvent;
  const bool sched_events = setup_.config.swimlane_level >= 2;
  std::vector<std::size_t> order(blocks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto by_task_core_start = [&](std::size_t a, std::size_t b) {
    const BlockRun& x = blocks[a];
    const BlockRun& y = blocks[b];
    return std::tie(x.task, x.core, x.start_ns, a) < std::tie(y.task, y.core, y.start_ns, b);
  };
  std::sort(order.begin(), order.end(), by_task_core_start);
  std::vector<uint32_t> matched(order.size(), 0);  // at each (task, core) run's first entry
  for (const SchedRecord& c : completions_) {
    const int32_t core = c.core;
    auto first =
        std::lower_bound(order.begin(), order.end(), c, [&](std::size_t i, const SchedRecord& s) {
          return std::tie(blocks[i].task, blocks[i].core) < std::tie(s.task, core);
        });
    if (first != order.end() && blocks[*first].task == c.task && blocks[*first].core == core) {
      const std::size_t run = static_cast<std::size_t>(first - order.begin());
      const std::size_t next = run + matched[run];
      if (next < order.size() && blocks[order[next]].task == c.task &&
          blocks[order[next]].core == core) {
        blocks[order[next]].complete_ns = c.t_ns;
        ++matched[run];
      }
    }
    if (sched_events) {
      model.scheduler_events.push_back(
          {SchedulerEvent::Kind::Complete, c.thread, core, c.task, 0, c.t_ns});
    }
  }
  release(completions_);
}

// Nodes: the model's (the host graph's) and the Submit records', then what the blocks say of their
// task (a task with blocks and no node gets one).
void DiagDecoder::merge_nodes(diagnostics::RunModel& model) {
  if (model.nodes.empty()) {
    model.nodes = take(nodes_);
  } else {
    model.nodes.insert(model.nodes.end(), nodes_.begin(), nodes_.end());
    release(nodes_);
  }
  auto by_task = [](const TaskNode& a, const TaskNode& b) { return a.task < b.task; };
  auto sort_nodes = [&] {
    if (!std::is_sorted(model.nodes.begin(), model.nodes.end(), by_task)) {
      std::sort(model.nodes.begin(), model.nodes.end(), by_task);
    }
    // One node per task (the last of a duplicate).
    std::size_t out = 0;
    for (std::size_t i = 0; i < model.nodes.size(); ++i) {
      if (out > 0 && model.nodes[out - 1].task == model.nodes[i].task) --out;
      if (out != i) model.nodes[out] = model.nodes[i];
      ++out;
    }
    model.nodes.resize(out);
  };
  sort_nodes();
  std::vector<NodeHint> hints = take(hints_);
  std::stable_sort(hints.begin(), hints.end(),
                   [](const NodeHint& a, const NodeHint& b) { return a.task < b.task; });
  const std::size_t known = model.nodes.size();
  for (const NodeHint& h : hints) {
    auto it = std::lower_bound(model.nodes.begin(), model.nodes.begin() + known, h.task,
                               [](const TaskNode& n, uint64_t task) { return n.task < task; });
    TaskNode* node = nullptr;
    if (it != model.nodes.begin() + known && it->task == h.task) {
      node = &*it;
    } else if (model.nodes.size() > known && model.nodes.back().task == h.task) {
      node = &model.nodes.back();
    } else {
      model.nodes.emplace_back();
      node = &model.nodes.back();
      node->task = h.task;
    }
    node->func_id = h.func_id;
    node->block_num = h.block_num;
  }
  release(hints);
  if (model.nodes.size() != known) sort_nodes();
}

// Ready times: when the task's last producer's kernel returned (or its submission ended, whichever
// came later); sources are ready at their submission (or the run start). The data is there when
// the producer's kernel returned; the scheduler noticing it later is scheduling latency (ready to
// dispatch), not a wait for data. `blocks` sorted by task.
void DiagDecoder::set_ready_times(const std::vector<BlockRun>& blocks,
                                  diagnostics::RunModel& model) {
  for (TaskNode& n : model.nodes) n.ready_ns = n.submit_end_ns != kNoTime ? n.submit_end_ns : 0;
  for (const diagnostics::Edge& e : model.edges) {
    auto b = std::lower_bound(blocks.begin(), blocks.end(), e.producer,
                              [](const BlockRun& x, uint64_t task) { return x.task < task; });
    bool finished = false;
    uint64_t end = 0;
    for (; b != blocks.end() && b->task == e.producer; ++b) {
      if (b->end_ns == kNoTime) continue;
      finished = true;
      end = std::max(end, b->end_ns);
    }
    if (!finished) continue;
    auto n = std::lower_bound(model.nodes.begin(), model.nodes.end(), e.consumer,
                              [](const TaskNode& x, uint64_t task) { return x.task < task; });
    if (n != model.nodes.end() && n->task == e.consumer) n->ready_ns = std::max(n->ready_ns, end);
  }
}

// The args sorted by (task, index); data the host could not read back counts as left out.
std::vector<diagnostics::TensorArgRecord> DiagDecoder::take_args(uint64_t args_data_bytes) {
  std::vector<diagnostics::TensorArgRecord> args = take(args_);
  for (diagnostics::TensorArgRecord& a : args) {
    for (diagnostics::TensorArgRecord::Data* d : {&a.before, &a.after}) {
      if (d->bytes > 0 && (d->offset > args_data_bytes || d->bytes > args_data_bytes - d->offset)) {
        d->offset = 0;
        d->bytes = 0;
      }
    }
  }
  std::sort(args.begin(), args.end(),
            [](const diagnostics::TensorArgRecord& x, const diagnostics::TensorArgRecord& y) {
              return x.task != y.task ? x.task < y.task : x.index < y.index;
            });
  arg_shape_words_ = 0;
  return args;
}

void DiagDecoder::build_scopes(diagnostics::RunModel& model) {
  std::sort(scopes_recorded_.begin(), scopes_recorded_.end());
  uint64_t unrecorded = 0;
  for (auto& [number, s] : scopes_) {
    if (!std::binary_search(scopes_recorded_.begin(), scopes_recorded_.end(), number)) ++unrecorded;
    model.scopes.push_back(s);
  }
  if (scopes_open_at_stop_ > 0) {
    model.notes.push_back("scope stats: " + std::to_string(scopes_open_at_stop_) +
                          " scope(s) did not end (the run stopped inside them): their figures "
                          "cover the run up to the stop");
  }
  if (unrecorded > 0) {
    model.notes.push_back("scope stats: " + std::to_string(unrecorded) +
                          " scope(s) left no statistics (the chip stopped before the "
                          "orchestration returned): only their back-pressure waits are known");
  }
  scopes_.clear();
  release(scopes_recorded_);
}

}  // namespace chiprt::host
