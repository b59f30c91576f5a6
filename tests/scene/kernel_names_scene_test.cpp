// Every example names its kernels: in the tasks.csv of a run of each example's small case, on both
// runtime variants, every kernel task's `kernel` column is "<display name> (func N)" with a name
// of the example's own, never a bare "func N" nor the default symbol kernel_entry.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "chiprt/worker.h"
#include "example.h"
#include "tasks_csv_kernels.h"

namespace {

namespace fs = std::filesystem;
using chiprt::RuntimeVariant;

class ExampleKernelNames : public testing::TestWithParam<RuntimeVariant> {};

TEST_P(ExampleKernelNames, EveryKernelTaskOfEveryExampleIsCalledByItsName) {
  const fs::path dir =
      fs::temp_directory_path() / ("chiprt_example_kernel_names_" + std::to_string(::getpid()) +
                                   "_" + std::string(chiprt::runtime_variant_name(GetParam())));
  fs::remove_all(dir);
  chiprt::WorkerOptions options;
  options.sim.clusters = 2;
  chiprt::Worker worker;
  worker.init(options);
  const std::regex named(R"(([A-Za-z_][ -~]*) \(func ([0-9]+)\))");
  for (const chiprt::examples::Example& example : chiprt::examples::all_examples()) {
    SCOPED_TRACE(example.name);
    const chiprt::examples::ExampleCase* small = example.find_case("small");
    ASSERT_NE(small, nullptr);
    chiprt::CallConfig config;
    config.runtime = GetParam();
    config.diagnostics.task_timing = true;
    config.diagnostics.output_dir = (dir / example.name).string();
    const chiprt::examples::Outcome outcome = example.run(worker, *small, config);
    ASSERT_TRUE(outcome.passed) << outcome.message;
    ASSERT_FALSE(outcome.report.diagnostics_dir.empty());

    uint64_t kernel_rows = 0;
    for (const chiprt::test::TaskRowKernel& row :
         chiprt::test::tasks_csv_kernels(outcome.report.diagnostics_dir)) {
      if (row.func_id < 0) continue;  // a dependency-only task runs no kernel
      ++kernel_rows;
      std::smatch match;
      ASSERT_TRUE(std::regex_match(row.kernel, match, named))
          << "row '" << row.line << "': kernel '" << row.kernel << "' is not '<name> (func N)'";
      EXPECT_EQ(std::stoi(match[2].str()), row.func_id) << row.line;
      EXPECT_NE(match[1].str(), "kernel_entry") << "an unnamed kernel: " << row.line;
    }
    EXPECT_GE(kernel_rows, outcome.kernel_tasks);
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(BothVariants, ExampleKernelNames,
                         testing::Values(RuntimeVariant::HostBuildGraph,
                                         RuntimeVariant::TensormapRingbuffer),
                         [](const testing::TestParamInfo<RuntimeVariant>& info) {
                           return std::string(chiprt::runtime_variant_name(info.param));
                         });

}  // namespace
