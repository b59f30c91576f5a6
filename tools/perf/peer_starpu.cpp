// The StarPU peer: the suite's graphs as StarPU tasks whose dependencies StarPU infers from data
// handles accessed R / W / RW (sequential consistency), on StarPU CPU workers of the suite's
// thread count. Handles are "void" data (dependency tokens without content), registered outside
// the timed region: chiprt's views need no registration, so this favours StarPU.
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

class StarpuRunner final : public Runner {
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
  }

  ~StarpuRunner() override {
    for (starpu_data_handle_t h : handles_) starpu_data_unregister_no_coherency(h);
    starpu_shutdown();
  }

  StarpuRunner(const StarpuRunner&) = delete;
  StarpuRunner& operator=(const StarpuRunner&) = delete;

  void prepare(const Workload& w) override {
    ensure_handles(w);
    run(w);
  }

  RunResult run(const Workload& w) override {
    ensure_handles(w);
    const auto start = std::chrono::steady_clock::now();
    submit(w);
    starpu_task_wait_for_all();
    const auto end = std::chrono::steady_clock::now();
    return {w.tasks,
            static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count())};
  }

 private:
  void ensure_handles(const Workload& w) {
    const uint64_t needed = std::max<uint64_t>(w.tasks, kFanWidth + 1);
    while (handles_.size() < needed) {
      starpu_data_handle_t h = nullptr;
      starpu_void_data_register(&h);
      handles_.push_back(h);
    }
  }

  void insert(std::vector<starpu_data_descr>& descrs) {
    const int rc = starpu_task_insert(&codelet_, STARPU_DATA_MODE_ARRAY, descrs.data(),
                                      static_cast<int>(descrs.size()), 0);
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
        for (uint64_t i = 0; i < w.tasks; ++i) {
          add(i, STARPU_W);
          for (const uint64_t pred : w.predecessors(i)) add(pred, STARPU_R);
          insert(d);
        }
        break;
    }
  }

  starpu_codelet codelet_{};
  std::vector<starpu_data_handle_t> handles_;
};

}  // namespace

std::unique_ptr<Runner> make_starpu_runner(unsigned threads) {
  return std::make_unique<StarpuRunner>(threads);
}

}  // namespace chiprt::perf
