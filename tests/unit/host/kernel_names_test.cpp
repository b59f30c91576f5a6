// Kernels have symbols and display names: one chip object of several kernels registers under
// several func_ids (loaded once, each func_id calling its own symbol), every run's tasks.csv calls
// each kernel by its display name, a symbol the object does not export fails the registration
// naming it, and a container of the previous format (version 2: every kernel `kernel_entry`) still
// registers and runs. Both runtime variants, threaded and serial.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "callable_v2_container.h"
#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "host/worker_access.h"
#include "support.h"
#include "tasks_csv_kernels.h"

namespace chiprt {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// func_ids of the chain: x -> 2x -> 2x + 1 -> -(2x + 1) -> -2x.
constexpr int32_t kDouble = 0;
constexpr int32_t kAddOne = 1;
constexpr int32_t kNegate = 2;
constexpr int32_t kAddOneAgain = 3;
constexpr uint64_t kN = 64;
constexpr int32_t kCallable = 3;

void chain_orchestration(Orchestration& orch, const TaskArgs& args) {
  for (int32_t func_id : {kDouble, kAddOne, kNegate, kAddOneAgain}) {
    TaskArgs task;
    task.inout(args.tensor(0));
    orch.submit(func_id, CoreType::AIV, task);
  }
}

void single_task_orchestration(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.inout(args.tensor(0));
  orch.submit(0, CoreType::AIV, task);
}

const ArgSignature kOneTensor = ArgSignature::of({ArgTag::InOut}, 0);

std::vector<uint8_t> named_kernels_object() {
  return examples::read_chip_object("chiprt_test_named_kernels");
}

// The chain over the one object: three symbols, one of them under two func_ids; names given to
// all but one (whose name is its symbol).
std::vector<uint8_t> chain_callable() {
  const std::vector<uint8_t> object = named_kernels_object();
  return CallableBuilder()
      .orchestration_function(&chain_orchestration, kOneTensor)
      .kernel_object(kDouble, CoreType::AIV, object, kOneTensor, "named_double", "double")
      .kernel_object(kAddOne, CoreType::AIV, object, kOneTensor, "named_add_one")
      .kernel_object(kNegate, CoreType::AIV, object, kOneTensor, "named_negate", "negate")
      .kernel_object(kAddOneAgain, CoreType::AIV, object, kOneTensor, "named_add_one",
                     "add one, again")
      .build();
}

// The `kernel` column of tasks.csv, by func_id.
std::map<int32_t, std::string> kernel_column(const std::string& run_dir) {
  std::map<int32_t, std::string> labels;
  for (const test::TaskRowKernel& row : test::tasks_csv_kernels(run_dir)) {
    labels[row.func_id] = row.kernel;
  }
  return labels;
}

using Param = std::tuple<RuntimeVariant, bool>;  // variant, serial

class KernelNames : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    WorkerOptions options;
    options.runtime = std::get<0>(GetParam());
    options.sim.clusters = 2;
    options.sim.host_threads = 2;
    options.sim.memory_bytes = 256ull << 20;
    worker_.init(options);
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : test) {
      if (c == '/') c = '_';
    }
    dir_ = fs::temp_directory_path() /
           ("chiprt_kernel_names_" + std::to_string(::getpid()) + "_" + test);
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  CallConfig config(bool diagnostics) const {
    CallConfig c;
    c.runtime = std::get<0>(GetParam());
    c.serial = std::get<1>(GetParam());
    if (diagnostics) {
      c.diagnostics.task_timing = true;
      c.diagnostics.output_dir = dir_;
    }
    return c;
  }

  // Runs the registered callable on x = 0, 1, ..., kN - 1 and returns x afterwards.
  std::vector<float> run(const CallConfig& c, RunReport* report = nullptr) {
    std::vector<float> x(kN);
    for (uint64_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i);
    const DeviceBuffer buffer = worker_.malloc(kN * sizeof(float));
    worker_.copy_to(buffer, x.data(), kN * sizeof(float));
    TaskArgs args;
    args.inout(Tensor::make(buffer, {kN}, DataType::F32));
    const RunReport r = worker_.run(kCallable, args, c);
    if (report != nullptr) *report = r;
    worker_.copy_from(x.data(), buffer, kN * sizeof(float));
    worker_.free(buffer);
    return x;
  }

  Worker worker_;
  std::string dir_;
};

TEST_P(KernelNames, OneObjectServesSeveralFuncIdsEachUnderItsOwnSymbol) {
  worker_.register_callable(kCallable, chain_callable());
  // One object, loaded once for its four func_ids (the orchestration is an in-process function).
  EXPECT_EQ(host::runner_of(worker_).callables().loaded_object_count(), 1u);
  RunReport report;
  const std::vector<float> x = run(config(true), &report);
  for (uint64_t i = 0; i < kN; ++i)
    ASSERT_EQ(x[i], -2.0f * static_cast<float>(i)) << "x[" << i << "]";

  ASSERT_FALSE(report.diagnostics_dir.empty());
  worker_.flush_diagnostics();
  const std::map<int32_t, std::string> labels = kernel_column(report.diagnostics_dir);
  const std::map<int32_t, std::string> want = {{kDouble, "double (func 0)"},
                                               {kAddOne, "named_add_one (func 1)"},
                                               {kNegate, "negate (func 2)"},
                                               {kAddOneAgain, "add one, again (func 3)"}};
  EXPECT_EQ(labels, want);
}

TEST_P(KernelNames, TheRegistryRecordsEachKernelsSymbolAndName) {
  worker_.register_callable(kCallable, chain_callable());
  const host::RegisteredCallable* callable = host::runner_of(worker_).callables().find(kCallable);
  ASSERT_NE(callable, nullptr);
  EXPECT_EQ(callable->kernels[kDouble].symbol, "named_double");
  EXPECT_EQ(callable->kernels[kDouble].name, "double");
  EXPECT_EQ(callable->kernels[kAddOne].symbol, "named_add_one");
  EXPECT_EQ(callable->kernels[kAddOne].name, "named_add_one");
  EXPECT_EQ(callable->kernels[kAddOneAgain].symbol, "named_add_one");
  EXPECT_EQ(callable->kernels[kAddOneAgain].entry, callable->kernels[kAddOne].entry);
  EXPECT_NE(callable->kernels[kDouble].entry, callable->kernels[kNegate].entry);
}

TEST_P(KernelNames, ASymbolTheObjectDoesNotExportFailsTheRegistrationNamingIt) {
  const std::vector<uint8_t> object = named_kernels_object();
  const std::vector<uint8_t> container =
      CallableBuilder()
          .orchestration_function(&chain_orchestration, kOneTensor)
          .kernel_object(kDouble, CoreType::AIV, object, kOneTensor, "named_double")
          .kernel_object(kAddOne, CoreType::AIV, object, kOneTensor, "named_triple", "triple")
          .build();
  try {
    worker_.register_callable(kCallable, container);
    FAIL() << "registered a callable naming a symbol its object does not export";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::LoadFailed);
    EXPECT_THAT(e.message(), HasSubstr("callable id 3 kernel func_id 1 ('triple'): symbol "
                                       "'named_triple' not found in its "));
    EXPECT_THAT(e.message(), HasSubstr("-byte shared object (checksum 0x"));
    // The fix is the hint's.
    EXPECT_THAT(e.hint(),
                HasSubstr("declare it extern \"C\" __attribute__((visibility(\"default\"))) "
                          "void named_triple(int64_t* args)"));
    EXPECT_THAT(e.hint(), HasSubstr("or name the symbol the object exports"));
  }
  // Nothing stays registered or loaded.
  EXPECT_FALSE(worker_.has_callable(kCallable));
  EXPECT_EQ(host::runner_of(worker_).callables().loaded_object_count(), 0u);
}

TEST_P(KernelNames, AVersion2ContainerStillRegistersAndRunsItsKernelEntry) {
  const std::vector<uint8_t> container = test::version2_container(
      test::v2_function(reinterpret_cast<uint64_t>(&single_task_orchestration)), kOneTensor,
      {{0, CoreType::AIV, test::v2_object(named_kernels_object()), kOneTensor}});
  worker_.register_callable(kCallable, container);
  const host::RegisteredCallable* callable = host::runner_of(worker_).callables().find(kCallable);
  ASSERT_NE(callable, nullptr);
  EXPECT_EQ(callable->kernels[0].symbol, "kernel_entry");
  EXPECT_EQ(callable->kernels[0].name, "kernel_entry");
  RunReport report;
  const std::vector<float> x = run(config(true), &report);
  for (uint64_t i = 0; i < kN; ++i) ASSERT_EQ(x[i], static_cast<float>(i) + 10) << "x[" << i << "]";
  worker_.flush_diagnostics();
  EXPECT_EQ(kernel_column(report.diagnostics_dir),
            (std::map<int32_t, std::string>{{0, "kernel_entry (func 0)"}}));
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(runtime_variant_name(std::get<0>(info.param))) +
         (std::get<1>(info.param) ? "_serial" : "_threaded");
}

INSTANTIATE_TEST_SUITE_P(BothVariants, KernelNames,
                         ::testing::Combine(::testing::Values(RuntimeVariant::HostBuildGraph,
                                                              RuntimeVariant::TensormapRingbuffer),
                                            ::testing::Bool()),
                         param_name);

}  // namespace
}  // namespace chiprt
