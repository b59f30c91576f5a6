// The StarPU peer: the suite's graphs as StarPU tasks whose dependencies StarPU infers from data
// handles accessed R / W / RW (sequential consistency), on StarPU CPU workers of the suite's
// thread count. Handles are "void" data (dependency tokens without content), registered outside
// the timed region: chiprt's views need no registration, so this favours StarPU. Task DAGs (the
// random DAG row, the real-kernel rows): task i writes handle i and reads its predecessors'.
#include <starpu.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runners.h"

namespace chiprt::perf {

namespace {

void empty_cpu_func(void* /*buffers*/[], void* /*cl_arg*/) {}

// A TaskDag task's codelet argument, owned by run_dag (passed with STARPU_CL_ARGS_NFREE).
struct DagTaskArg {
  const TaskDag* dag;
  uint64_t task;
};

void dag_cpu_func(void* /*buffers*/[], void* cl_arg) {
  const auto* arg = static_cast<const DagTaskArg*>(cl_arg);
  arg->dag->run(arg->task);
}

uint64_t elapsed_since(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

class StarpuRunner final : public DagRunner {
 public:
  explicit StarpuRunner(unsigned threads) {
    // Quiet start-up; the caller's environment still wins.
    setenv("STARPU_SILENT", "1", 0);
    starpu_conf conf;
    starpu_conf_init(&conf);
    conf.ncpus = static_cast<int>(threads);
    conf.ncuda = 0;
    conf.nopencl = 0;
    const int rc = starpu_init(&conf);
    if (rc != 0) {
      throw std::runtime_error("starpu_init failed with " + std::to_string(rc) + " for " +
                               std::to_string(threads) + " CPU workers");
    }
    starpu_codelet_init(&codelet_);
    codelet_.cpu_funcs[0] = empty_cpu_func;
    codelet_.nbuffers = STARPU_VARIABLE_NBUFFERS;
    codelet_.name = "chiprt_bench_empty";
    starpu_codelet_init(&dag_codelet_);
    dag_codelet_.cpu_funcs[0] = dag_cpu_func;
    dag_codelet_.nbuffers = STARPU_VARIABLE_NBUFFERS;
    dag_codelet_.name = "chiprt_bench_dag_task";
  }

  ~StarpuRunner() override {
    for (starpu_data_handle_t h : handles_) starpu_data_unregister_no_coherency(h);
    starpu_shutdown();
  }

  StarpuRunner(const StarpuRunner&) = delete;
  StarpuRunner& operator=(const StarpuRunner&) = delete;

  void prepare(const Workload& w) override {
    ensure_handles(w.tasks);
    run(w);
  }

  RunResult run(const Workload& w) override {
    if (w.shape == Shape::RandomDag) return {w.tasks, run_dag(random_dag_of(w))};
    ensure_handles(w.tasks);
    const auto start = std::chrono::steady_clock::now();
    submit(w);
    starpu_task_wait_for_all();
    return {w.tasks, elapsed_since(start)};
  }

  uint64_t run_dag(const TaskDag& dag) override {
    ensure_handles(dag.tasks);
    const auto start = std::chrono::steady_clock::now();
    std::vector<DagTaskArg> args(dag.tasks);
    std::vector<starpu_data_descr> d;
    for (uint64_t i = 0; i < dag.tasks; ++i) {
      args[i] = {&dag, i};
      d.push_back({handles_[i], STARPU_W});
      for (const uint64_t pred : dag.predecessors(i)) d.push_back({handles_[pred], STARPU_R});
      insert(dag_codelet_, d, &args[i], sizeof(DagTaskArg));
    }
    starpu_task_wait_for_all();
    return elapsed_since(start);
  }

 private:
  void ensure_handles(uint64_t tasks) {
    const uint64_t needed = std::max<uint64_t>(tasks, kFanWidth + 1);
    while (handles_.size() < needed) {
      starpu_data_handle_t h = nullptr;
      starpu_void_data_register(&h);
      handles_.push_back(h);
    }
  }

  void insert(std::vector<starpu_data_descr>& descrs) { insert(codelet_, descrs, nullptr, 0); }

  // Submits one task of `codelet` on `descrs` (then cleared) with the codelet argument `cl_arg`
  // (null: none), which stays the caller's.
  static void insert(starpu_codelet& codelet, std::vector<starpu_data_descr>& descrs, void* cl_arg,
                     std::size_t cl_arg_size) {
    const int rc = cl_arg == nullptr
                       ? starpu_task_insert(&codelet, STARPU_DATA_MODE_ARRAY, descrs.data(),
                                            static_cast<int>(descrs.size()), 0)
                       : starpu_task_insert(&codelet, STARPU_DATA_MODE_ARRAY, descrs.data(),
                                            static_cast<int>(descrs.size()), STARPU_CL_ARGS_NFREE,
                                            cl_arg, cl_arg_size, 0);
    if (rc != 0) {
      throw std::runtime_error("starpu_task_insert failed with " + std::to_string(rc));
    }
    descrs.clear();
  }

  void submit(const Workload& w) {
    std::vector<starpu_data_descr> d;
    d.reserve(kFanWidth + 2);
    auto add = [&](uint64_t handle, starpu_data_access_mode mode) {
      d.push_back({handles_[handle], mode});
    };
    switch (w.shape) {
      case Shape::Independent:
        for (uint64_t i = 0; i < w.tasks; ++i) insert(d);
        break;
      case Shape::Chain:
        for (uint64_t i = 0; i < w.tasks; ++i) {
          add(0, STARPU_RW);
          insert(d);
        }
        break;
      case Shape::Fan:
        // handle 0: x; handles 1..kFanWidth: y[i].
        for (uint64_t stage = 0; stage < w.fan_stages; ++stage) {
          add(0, STARPU_RW);
          insert(d);
          for (uint64_t i = 0; i < kFanWidth; ++i) {
            add(0, STARPU_R);
            add(1 + i, STARPU_W);
            insert(d);
          }
          for (uint64_t i = 0; i < kFanWidth; ++i) add(1 + i, STARPU_R);
          add(0, STARPU_RW);
          insert(d);
        }
        break;
      case Shape::Wavefront:
        for (uint64_t r = 0; r < w.rows; ++r) {
          for (uint64_t c = 0; c < w.columns; ++c) {
            const uint64_t self = r * w.columns + c;
            add(self, STARPU_RW);
            if (c > 0) add(self - 1, STARPU_R);
            if (r > 0) add(self - w.columns, STARPU_R);
            insert(d);
          }
        }
        break;
      case Shape::RandomDag:
        // run() sends it to run_dag.
        break;
    }
  }

  starpu_codelet codelet_{};      // empty body: the graph rows
  starpu_codelet dag_codelet_{};  // DagTaskArg body: run_dag
  std::vector<starpu_data_handle_t> handles_;
};

}  // namespace

std::unique_ptr<Runner> make_starpu_runner(unsigned threads) {
  return std::make_unique<StarpuRunner>(threads);
}

}  // namespace chiprt::perf
