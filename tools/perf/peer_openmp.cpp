// The OpenMP peer: the suite's graphs as OpenMP tasks with `depend` clauses, created by one thread
// (`single`) of a parallel region of the suite's thread count, dependencies on one byte per datum.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "runners.h"

namespace chiprt::perf {

namespace {

void empty_body(uint64_t) {}

class OpenmpRunner final : public Runner {
 public:
  explicit OpenmpRunner(unsigned threads) : threads_(static_cast<int>(threads)) {}

  void prepare(const Workload& workload) override {
    // Dependency addresses: one byte per tile / task, allocated before timing.
    tokens_.assign(std::max<uint64_t>(workload.tasks, 2 * kFanWidth) + 1, 0);
    run(workload);
  }

  RunResult run(const Workload& w) override {
    if (tokens_.size() < std::max<uint64_t>(w.tasks, 2 * kFanWidth) + 1) {
      tokens_.assign(std::max<uint64_t>(w.tasks, 2 * kFanWidth) + 1, 0);
    }
    char* tok = tokens_.data();
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads_)
#pragma omp single
    submit(w, tok);
    // The implicit barrier of the parallel region waits for every task.
    const auto end = std::chrono::steady_clock::now();
    return {w.tasks,
            static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count())};
  }

 private:
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
        for (uint64_t i = 0; i < w.tasks; ++i) {
          const uint64_t* preds = w.dag_preds.data() + w.dag_offsets[i];
          const int fan_in = static_cast<int>(w.dag_offsets[i + 1] - w.dag_offsets[i]);
#pragma omp task firstprivate(i) depend(out                                  \
                                        : tok[i]) depend(iterator(j = 0      \
                                                                  : fan_in), \
                                                         in                  \
                                                         : tok[preds[j]])
          empty_body(i);
        }
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
