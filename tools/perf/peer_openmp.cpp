// The OpenMP peer: the suite's graphs as OpenMP tasks with `depend` clauses, created by one thread
// (`single`) of a parallel region of the suite's thread count, dependencies on one byte per datum.
// Task DAGs (the random DAG row, the real-kernel rows): task i writes token i and reads its
// predecessors' tokens.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "runners.h"

namespace chiprt::perf {

namespace {

void empty_body(uint64_t) {}

class OpenmpRunner final : public DagRunner {
 public:
  explicit OpenmpRunner(unsigned threads) : threads_(static_cast<int>(threads)) {}

  void prepare(const Workload& workload) override {
    // Dependency addresses: one byte per tile / task, allocated before timing.
    ensure_tokens(workload.tasks);
    run(workload);
  }

  RunResult run(const Workload& w) override {
    if (w.shape == Shape::RandomDag) return {w.tasks, run_dag(random_dag_of(w))};
    ensure_tokens(w.tasks);
    char* tok = tokens_.data();
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads_)
#pragma omp single
    submit(w, tok);
    // The implicit barrier of the parallel region waits for every task.
    return {w.tasks, elapsed_since(start)};
  }

  uint64_t run_dag(const TaskDag& dag) override {
    ensure_tokens(dag.tasks);
    char* tok = tokens_.data();
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads_)
#pragma omp single
    submit_dag(dag, tok);
    return elapsed_since(start);
  }

 private:
  void ensure_tokens(uint64_t tasks) {
    if (tokens_.size() < std::max<uint64_t>(tasks, 2 * kFanWidth) + 1) {
      tokens_.assign(std::max<uint64_t>(tasks, 2 * kFanWidth) + 1, 0);
    }
  }

  static uint64_t elapsed_since(std::chrono::steady_clock::time_point start) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - start)
                                     .count());
  }

  static void submit_dag(const TaskDag& dag, [[maybe_unused]] char* tok) {
    for (uint64_t i = 0; i < dag.tasks; ++i) {
      const uint64_t* preds = dag.preds + dag.offsets[i];
      const int fan_in = static_cast<int>(dag.offsets[i + 1] - dag.offsets[i]);
#pragma omp task firstprivate(i) shared(dag) depend(out                                  \
                                                    : tok[i]) depend(iterator(j = 0      \
                                                                              : fan_in), \
                                                                     in                  \
                                                                     : tok[preds[j]])
      dag.run(i);
    }
  }

  static void submit(const Workload& w, char* tok) {
    switch (w.shape) {
      case Shape::Independent:
        for (uint64_t i = 0; i < w.tasks; ++i) {
#pragma omp task firstprivate(i)
          empty_body(i);
        }
        break;
      case Shape::Chain:
        for (uint64_t i = 0; i < w.tasks; ++i) {
#pragma omp task firstprivate(i) depend(inout : tok[0])
          empty_body(i);
        }
        break;
      case Shape::Fan: {
        // x: one token (every middle task reads part of x, the sink rewrites all of it);
        // y: one token per middle task's output.
        [[maybe_unused]] char* x = tok;
        [[maybe_unused]] char* y = tok + 1;
        const int width = static_cast<int>(kFanWidth);
        for (uint64_t stage = 0; stage < w.fan_stages; ++stage) {
#pragma omp task firstprivate(stage) depend(inout : x[0])
          empty_body(stage);
          for (uint64_t i = 0; i < kFanWidth; ++i) {
#pragma omp task firstprivate(i) depend(in : x[0]) depend(out : y[i])
            empty_body(i);
          }
#pragma omp task firstprivate(stage) depend(iterator(j = 0 : width), in : y[j]) depend(inout : x[0])
          empty_body(stage);
        }
        break;
      }
      case Shape::Wavefront: {
        // One pragma per border case: a task never lists its own tile twice.
        const uint64_t cols = w.columns;
        for (uint64_t r = 0; r < w.rows; ++r) {
          for (uint64_t c = 0; c < cols; ++c) {
            char* self = tok + r * cols + c;
            [[maybe_unused]] char* left = c > 0 ? self - 1 : self;
            [[maybe_unused]] char* up = r > 0 ? self - cols : self;
            if (r > 0 && c > 0) {
#pragma omp task firstprivate(r) depend(inout : self[0]) depend(in : left[0], up[0])
              empty_body(r);
            } else if (c > 0) {
#pragma omp task firstprivate(r) depend(inout : self[0]) depend(in : left[0])
              empty_body(r);
            } else if (r > 0) {
#pragma omp task firstprivate(r) depend(inout : self[0]) depend(in : up[0])
              empty_body(r);
            } else {
#pragma omp task firstprivate(r) depend(inout : self[0])
              empty_body(r);
            }
          }
        }
        break;
      }
      case Shape::RandomDag:
        // run() sends it to run_dag.
        break;
    }
  }

  int threads_;
  std::vector<char> tokens_;
};

}  // namespace

std::unique_ptr<Runner> make_openmp_runner(unsigned threads) {
  return std::make_unique<OpenmpRunner>(threads);
}

}  // namespace chiprt::perf
