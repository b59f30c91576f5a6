// Scene tests: every example and every case runs on the simulated chip and matches its
// reference, on both runtime variants (host_build_graph and tensormap_ringbuffer), in normal and
// serial mode, on chips of 1, 2 and 8 clusters. Large cases run in one configuration per variant
// only to keep the suite quick. The examples register their callable for CallConfig::runtime, so
// one Worker (initialised with the default variant) runs either.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "chiprt/worker.h"
#include "example.h"

namespace {

using chiprt::RuntimeVariant;
using chiprt::examples::Example;
using chiprt::examples::ExampleCase;
using chiprt::examples::Outcome;

constexpr RuntimeVariant kVariants[] = {RuntimeVariant::HostBuildGraph,
                                        RuntimeVariant::TensormapRingbuffer};

struct SceneParam {
  const Example* example;
  const ExampleCase* example_case;
  uint32_t clusters;
  bool serial;
  RuntimeVariant runtime;
};

std::vector<SceneParam> scene_params() {
  std::vector<SceneParam> params;
  for (RuntimeVariant runtime : kVariants) {
    for (const Example& example : chiprt::examples::all_examples()) {
      for (const ExampleCase& c : example.cases) {
        if (c.large) {
          params.push_back({&example, &c, 8, false, runtime});
          continue;
        }
        for (uint32_t clusters : {1u, 2u, 8u}) {
          for (bool serial : {false, true}) {
            params.push_back({&example, &c, clusters, serial, runtime});
          }
        }
      }
    }
  }
  return params;
}

std::string variant_name(RuntimeVariant runtime) {
  return std::string(chiprt::runtime_variant_name(runtime));
}

// Readable parameters in failure messages.
void PrintTo(const SceneParam& p, std::ostream* os) {
  *os << p.example->name << "/" << p.example_case->name << " on " << variant_name(p.runtime) << ", "
      << p.clusters << " clusters, " << (p.serial ? "serial" : "parallel");
}

std::string param_name(const testing::TestParamInfo<SceneParam>& info) {
  const SceneParam& p = info.param;
  return variant_name(p.runtime) + "_" + p.example->name + "_" + p.example_case->name + "_" +
         std::to_string(p.clusters) + "clusters_" + (p.serial ? "serial" : "parallel");
}

chiprt::WorkerOptions sim_options(uint32_t clusters) {
  chiprt::WorkerOptions options;
  options.sim.clusters = clusters;
  return options;
}

class ExampleScene : public testing::TestWithParam<SceneParam> {};

TEST_P(ExampleScene, MatchesReference) {
  const SceneParam& p = GetParam();
  chiprt::Worker worker;
  worker.init(sim_options(p.clusters));
  chiprt::CallConfig config;
  config.serial = p.serial;
  config.runtime = p.runtime;

  const Outcome outcome = p.example->run(worker, *p.example_case, config);

  EXPECT_TRUE(outcome.passed) << outcome.message;
  EXPECT_LE(outcome.max_abs_error, outcome.tolerance);
  EXPECT_GT(outcome.kernel_tasks, 0u);
  EXPECT_GE(outcome.task_count, outcome.kernel_tasks);
  EXPECT_EQ(outcome.task_count, outcome.report.task_count);
  EXPECT_EQ(outcome.report.serial, p.serial);
  EXPECT_EQ(outcome.report.cores, p.clusters * 3);
  // The example unregistered its callable.
  EXPECT_FALSE(worker.has_callable(0));
  worker.close();
}

INSTANTIATE_TEST_SUITE_P(AllExamples, ExampleScene, testing::ValuesIn(scene_params()), param_name);

// One Worker runs the small case of every example back to back on both variants, twice: callable
// ids are reused and every example frees its buffers, so the second pass ends with the device
// memory where the first left it (the runtime's own arenas are allocated on the first run of each
// variant and retained).
TEST(ExampleSceneSequence, SmallCasesTwiceOnOneWorkerOnBothVariants) {
  chiprt::Worker worker;
  worker.init(sim_options(2));
  uint64_t bytes_after_first_pass = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (RuntimeVariant runtime : kVariants) {
      chiprt::CallConfig config;
      config.runtime = runtime;
      for (const Example& example : chiprt::examples::all_examples()) {
        const ExampleCase* small = example.find_case("small");
        ASSERT_NE(small, nullptr) << example.name << " has no 'small' case";
        const Outcome outcome = example.run(worker, *small, config);
        EXPECT_TRUE(outcome.passed)
            << example.name << "/small on " << variant_name(runtime) << ": " << outcome.message;
      }
    }
    if (pass == 0) bytes_after_first_pass = worker.device_bytes_in_use();
  }
  EXPECT_EQ(worker.device_bytes_in_use(), bytes_after_first_pass);
  for (int32_t id = 0; id < chiprt::kMaxCallableIds; ++id) EXPECT_FALSE(worker.has_callable(id));
}

// Example::run hands the call to the executor it is given, exactly once, and checks what the
// executor reports and left in the buffers: one that forwards to Worker::run passes, one that runs
// nothing fails (no task executed).
TEST(ExampleExecutor, EveryExampleRunsItsCallThroughTheGivenExecutor) {
  chiprt::Worker worker;
  worker.init(sim_options(2));
  for (const Example& example : chiprt::examples::all_examples()) {
    const ExampleCase* small = example.find_case("small");
    ASSERT_NE(small, nullptr) << example.name << " has no 'small' case";
    int calls = 0;
    chiprt::RunReport forwarded;
    const chiprt::examples::Executor forwarding = [&](chiprt::Worker& w, int32_t callable_id,
                                                      const chiprt::TaskArgs& args,
                                                      const chiprt::CallConfig& config) {
      ++calls;
      EXPECT_EQ(&w, &worker) << example.name;
      EXPECT_TRUE(w.has_callable(callable_id)) << example.name;
      forwarded = chiprt::examples::run_on_worker(w, callable_id, args, config);
      return forwarded;
    };
    const Outcome outcome = example.run(worker, *small, {}, forwarding);
    EXPECT_EQ(calls, 1) << example.name;
    EXPECT_TRUE(outcome.passed) << example.name << ": " << outcome.message;
    EXPECT_EQ(outcome.report.task_count, forwarded.task_count) << example.name;

    const chiprt::examples::Executor running_nothing =
        [](chiprt::Worker&, int32_t, const chiprt::TaskArgs&, const chiprt::CallConfig&) {
          return chiprt::RunReport{};
        };
    EXPECT_FALSE(example.run(worker, *small, {}, running_nothing).passed) << example.name;
  }
  EXPECT_FALSE(worker.has_callable(0));
  worker.close();
}

TEST(ExampleRegistry, NamesAndCasesAreUniqueAndFindable) {
  const auto examples = chiprt::examples::all_examples();
  ASSERT_EQ(examples.size(), 4u);
  for (const Example& example : examples) {
    EXPECT_EQ(chiprt::examples::find_example(example.name), &example);
    EXPECT_FALSE(example.description.empty()) << example.name;
    ASSERT_FALSE(example.cases.empty()) << example.name;
    EXPECT_TRUE(static_cast<bool>(example.runner)) << example.name;
    for (const ExampleCase& c : example.cases) {
      EXPECT_EQ(example.find_case(c.name), &c) << example.name << "/" << c.name;
    }
    EXPECT_EQ(example.find_case("no_such_case"), nullptr);
  }
  EXPECT_EQ(chiprt::examples::find_example("no_such_example"), nullptr);
  EXPECT_EQ(chiprt::examples::example_names(), "vector_example, bgemm, wavefront, paged_attention");
}

TEST(ExampleRegistry, MissingParameterNamesCaseAndKey) {
  const ExampleCase& c = chiprt::examples::find_example("bgemm")->cases.front();
  try {
    c.param("no_such_param");
    FAIL() << "expected chiprt::Error";
  } catch (const chiprt::Error& e) {
    EXPECT_EQ(e.code(), chiprt::StatusCode::InvalidArgument);
    EXPECT_NE(e.message().find("no_such_param"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find(c.name), std::string::npos) << e.what();
  }
}

}  // namespace
