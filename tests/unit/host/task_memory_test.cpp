// The device memory a run's tasks may name, on both runtime variants through one table of cases:
// views of the run's arguments and the run's own runtime outputs are accepted; a forged buffer
// (inflated size, made-up address) and a runtime output kept from an earlier run are refused with
// InvalidDevicePointer naming the task and the argument, before any kernel runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "host_test_support.h"

namespace chiprt {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kElements = 64;
constexpr uint64_t kBytes = kElements * sizeof(float);

// out[i] = in[i] + 1; a task's kernel never runs in a refused case.
void inc_kernel(int64_t* args) {
  const float* in = kernel::tensor_arg<float>(args, 0);
  float* out = kernel::tensor_arg<float>(args, 1);
  for (uint64_t i = 0; i < kElements; ++i) out[i] = in[i] + 1.0f;
}

// Touches nothing: the forged cases must be refused at submission, so a kernel that wrote
// through the forged tensor would only turn a failing test into a crash.
void noop_kernel(int64_t*) {}

constexpr int32_t kInc = 0;
constexpr int32_t kNoop = 1;

// Host memory that is no device allocation: a "device address" made up by the orchestration
// (readable, so that a check that lets it through fails the test instead of crashing it).
alignas(64) float g_not_device_memory[kElements * 4];

uint64_t made_up_address() {
  return reinterpret_cast<uintptr_t>(g_not_device_memory);
}

// A runtime output kept in a static by one run and passed to a task of a later one.
Tensor g_kept_output;

void submit_noop(Orchestration& orch, TaskArgs& task) {
  orch.submit(kNoop, CoreType::AIV, task);
}

// Run argument 0: x, kElements F32 (In).

void view_of_argument(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.in(args.tensor(0).view({kElements / 2}, {kElements / 2}));
  submit_noop(orch, task);
}

void hand_made_sub_buffer_of_argument(Orchestration& orch, const TaskArgs& args) {
  const DeviceBuffer x = args.tensor(0).buffer;
  TaskArgs task;
  task.in(Tensor::make(DeviceBuffer{x.addr + 64, 64}, {16}, DataType::F32));
  submit_noop(orch, task);
}

void output_of_this_run(Orchestration& orch, const TaskArgs& args) {
  TaskArgs produce;
  produce.in(args.tensor(0)).out({kElements}, DataType::F32);
  orch.submit(kInc, CoreType::AIV, produce);
  TaskArgs consume;
  consume.inout(produce.output(0).view({8}, {8}));
  submit_noop(orch, consume);
}

void inflated_size(Orchestration& orch, const TaskArgs& args) {
  const DeviceBuffer x = args.tensor(0).buffer;
  TaskArgs task;
  task.in(args.tensor(0));
  // The same address claiming four times the allocation: the view reaches past its end.
  task.inout(Tensor::make(DeviceBuffer{x.addr, x.size * 4}, {kElements * 4}, DataType::F32));
  submit_noop(orch, task);
}

void made_up_address_task(Orchestration& orch, const TaskArgs&) {
  TaskArgs task;
  task.output_existing(
      Tensor::make(DeviceBuffer{made_up_address(), kBytes}, {kElements}, DataType::F32));
  submit_noop(orch, task);
}

void made_up_predicate(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.in(args.tensor(0));
  task.when(Tensor::make(DeviceBuffer{made_up_address(), 8}, {1}, DataType::I32));
  submit_noop(orch, task);
}

void get_data_of_made_up_address(Orchestration& orch, const TaskArgs&) {
  float data[kElements];
  orch.get_tensor_data(
      Tensor::make(DeviceBuffer{made_up_address(), kBytes}, {kElements}, DataType::F32), data,
      kBytes);
}

void set_data_of_made_up_address(Orchestration& orch, const TaskArgs&) {
  float data[kElements] = {};
  orch.set_tensor_data(
      Tensor::make(DeviceBuffer{made_up_address(), kBytes}, {kElements}, DataType::F32), data,
      kBytes);
}

// The first run of the stale cases: keeps a runtime output for the next run.
void keep_an_output(Orchestration& orch, const TaskArgs& args) {
  TaskArgs produce;
  produce.in(args.tensor(0)).out({kElements}, DataType::F32);
  orch.submit(kInc, CoreType::AIV, produce);
  g_kept_output = produce.output(0);
}

// The later run: its own output first (placed where the kept one was), then the stale tensor.
template <ArgTag kTag>
void use_the_kept_output(Orchestration& orch, const TaskArgs& args) {
  TaskArgs produce;
  produce.in(args.tensor(0)).out({kElements}, DataType::F32);
  orch.submit(kInc, CoreType::AIV, produce);
  TaskArgs task;
  if constexpr (kTag == ArgTag::In) {
    task.in(g_kept_output);
  } else {
    task.inout(g_kept_output);
  }
  submit_noop(orch, task);
}

struct MemoryCase {
  const char* name;
  OrchestrationEntry earlier_run;  // null: one run only
  OrchestrationEntry run;
  StatusCode code;                   // Ok: the run succeeds
  std::vector<std::string> message;  // substrings of the error message
};

const MemoryCase kCases[] = {
    {"ViewOfArgument", nullptr, &view_of_argument, StatusCode::Ok, {}},
    {"HandMadeSubBufferOfArgument", nullptr, &hand_made_sub_buffer_of_argument, StatusCode::Ok, {}},
    {"OutputOfThisRun", nullptr, &output_of_this_run, StatusCode::Ok, {}},
    {"InflatedSize",
     nullptr,
     &inflated_size,
     StatusCode::InvalidDevicePointer,
     {"task 0 (func_id 1) arg 1", "lie in no run argument's buffer"}},
    {"MadeUpAddress",
     nullptr,
     &made_up_address_task,
     StatusCode::InvalidDevicePointer,
     {"task 0 (func_id 1) arg 0", "lie in no run argument's buffer"}},
    {"MadeUpPredicate",
     nullptr,
     &made_up_predicate,
     StatusCode::InvalidDevicePointer,
     {"task 0 (func_id 1) predicate", "lie in no run argument's buffer"}},
    {"GetTensorDataOfMadeUpAddress",
     nullptr,
     &get_data_of_made_up_address,
     StatusCode::InvalidDevicePointer,
     {"get_tensor_data", "lie in no run argument's buffer"}},
    {"SetTensorDataOfMadeUpAddress",
     nullptr,
     &set_data_of_made_up_address,
     StatusCode::InvalidDevicePointer,
     {"set_tensor_data", "lie in no run argument's buffer"}},
    {"StaleOutputRead",
     &keep_an_output,
     &use_the_kept_output<ArgTag::In>,
     StatusCode::InvalidDevicePointer,
     {"task 1 (func_id 1) arg 0", "runtime output of task 0 of run #", "not of this run"}},
    {"StaleOutputWritten",
     &keep_an_output,
     &use_the_kept_output<ArgTag::InOut>,
     StatusCode::InvalidDevicePointer,
     {"task 1 (func_id 1) arg 0", "runtime output of task 0 of run #", "not of this run"}},
};

std::vector<uint8_t> callable_with(OrchestrationEntry orchestration) {
  return CallableBuilder()
      .orchestration_function(orchestration, ArgSignature::of({ArgTag::In}, 0))
      .kernel_function(kInc, CoreType::AIV, &inc_kernel, ArgSignature{})
      .kernel_function(kNoop, CoreType::AIV, &noop_kernel, ArgSignature{})
      .build();
}

void PrintTo(const MemoryCase& c, std::ostream* os) {
  *os << c.name;
}

using Param = std::tuple<RuntimeVariant, MemoryCase>;

class TaskMemory : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    worker_.init(host::test::small_worker_options({.runtime = std::get<0>(GetParam())}));
    x_ = worker_.malloc(kBytes);
    worker_.memset(x_, 0, kBytes);
  }

  void run(int32_t id, OrchestrationEntry orchestration) {
    worker_.register_callable(id, callable_with(orchestration));
    TaskArgs args;
    args.in(Tensor::make(x_, {kElements}, DataType::F32));
    worker_.run(id, args, host::test::small_call_config(64));
  }

  Worker worker_;
  DeviceBuffer x_;
};

TEST_P(TaskMemory, TasksNameOnlyTheRunsArgumentsAndItsOwnOutputs) {
  const MemoryCase& c = std::get<1>(GetParam());
  if (c.earlier_run != nullptr) run(1, c.earlier_run);
  if (c.code == StatusCode::Ok) {
    run(2, c.run);
    return;
  }
  try {
    run(2, c.run);
    ADD_FAILURE() << "the run was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), c.code) << e.what();
    for (const std::string& text : c.message) EXPECT_THAT(e.message(), HasSubstr(text));
  }
  // A refused run leaves the Worker usable.
  run(3, &view_of_argument);
}

INSTANTIATE_TEST_SUITE_P(BothVariants, TaskMemory,
                         ::testing::Combine(::testing::ValuesIn(host::test::kBothVariants),
                                            ::testing::ValuesIn(kCases)),
                         host::test::VariantCaseName());

// After one run that kept a runtime output (in g_kept_output).
class KeptOutput : public ::testing::TestWithParam<RuntimeVariant> {
 protected:
  void SetUp() override {
    worker_.init(host::test::small_worker_options({.runtime = GetParam()}));
    const DeviceBuffer x = worker_.malloc(kBytes);
    worker_.register_callable(0, callable_with(&keep_an_output));
    args_.in(Tensor::make(x, {kElements}, DataType::F32));
    worker_.run(0, args_);
  }
  Worker worker_;
  TaskArgs args_;
};

// The run a stale output came from can be named: each run stamps its outputs with its own number.
TEST_P(KeptOutput, EachRunStampsItsOutputsWithItsOwnNumber) {
  const uint32_t first = g_kept_output.owner_run;
  worker_.run(0, args_);
  const uint32_t second = g_kept_output.owner_run;
  EXPECT_NE(first, 0u);
  EXPECT_NE(second, 0u);
  EXPECT_NE(first, second);
}

// A kept runtime output is no run argument either: it lies in the runtime's output heap, not in
// an allocation of the user's.
TEST_P(KeptOutput, IsRefusedAsARunArgument) {
  TaskArgs stale_args;
  stale_args.in(g_kept_output);
  try {
    worker_.run(0, stale_args);
    ADD_FAILURE() << "the run was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::InvalidDevicePointer) << e.what();
    EXPECT_THAT(e.message(), HasSubstr("argument 0 (in)"));
    EXPECT_THAT(e.message(), HasSubstr("not inside a live device allocation from Worker::malloc"));
  }
}

INSTANTIATE_TEST_SUITE_P(BothVariants, KeptOutput, ::testing::ValuesIn(host::test::kBothVariants),
                         [](const ::testing::TestParamInfo<RuntimeVariant>& info) {
                           return std::string(runtime_variant_name(info.param));
                         });

}  // namespace
}  // namespace chiprt
