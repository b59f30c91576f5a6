// Error text that reaches the user whole and once: a kernel's exception text in KernelFault, one
// format for an orchestration's errors on both runtime variants, and one error for a callable id
// outside the supported range in every call that takes one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"
#include "common/chip_launch.h"
#include "host_test_support.h"

namespace chiprt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kElements = 16;
constexpr uint64_t kBytes = kElements * sizeof(float);

constexpr int32_t kThrowsStd = 0;
constexpr int32_t kThrowsInt = 1;
constexpr int32_t kThrowsLong = 2;
constexpr int32_t kNoop = 3;

void throws_std_kernel(int64_t*) {
  throw std::runtime_error("tile 7 has a NaN");
}
void throws_int_kernel(int64_t*) {
  throw 42;
}
// A what() longer than the chip's result detail.
void throws_long_kernel(int64_t*) {
  throw std::runtime_error("long: " + std::string(4 * common::kResultDetailBytes, 'x'));
}
void noop_kernel(int64_t*) {}

// Run argument 0: x, kElements F32 (In).
template <int32_t kFuncId>
void one_task(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.in(args.tensor(0));
  orch.submit(kFuncId, CoreType::AIV, task);
}

void throws_chiprt_error(Orchestration& orch, const TaskArgs& args) {
  one_task<kNoop>(orch, args);
  throw Error(StatusCode::InvalidArgument, "after: step 3 found no tile");
}
void throws_std_exception(Orchestration&, const TaskArgs&) {
  throw std::runtime_error("boom at step 3");
}
void submits_unknown_func_id(Orchestration& orch, const TaskArgs& args) {
  one_task<9>(orch, args);
}
void depends_on_a_later_task(Orchestration& orch, const TaskArgs& args) {
  TaskArgs task;
  task.in(args.tensor(0)).after(5);
  orch.submit(kNoop, CoreType::AIV, task);
}
void leaves_a_scope_open(Orchestration& orch, const TaskArgs&) {
  orch.scope_begin();
}

std::vector<uint8_t> callable_with(OrchestrationEntry orchestration) {
  return CallableBuilder()
      .orchestration_function(orchestration, ArgSignature::of({ArgTag::In}, 0))
      .kernel_function(kThrowsStd, CoreType::AIV, &throws_std_kernel, ArgSignature{})
      .kernel_function(kThrowsInt, CoreType::AIV, &throws_int_kernel, ArgSignature{})
      .kernel_function(kThrowsLong, CoreType::AIV, &throws_long_kernel, ArgSignature{})
      .kernel_function(kNoop, CoreType::AIV, &noop_kernel, ArgSignature{})
      .build();
}

// A Worker of one variant with x allocated.
struct VariantWorker {
  explicit VariantWorker(RuntimeVariant variant) {
    worker.init(host::test::small_worker_options({.runtime = variant}));
    x = worker.malloc(kBytes);
    worker.memset(x, 0, kBytes);
  }
  // Registers `orchestration` under a fresh id, runs it and returns the error it raised.
  Error run_error(OrchestrationEntry orchestration) {
    const int32_t id = next_id++;
    worker.register_callable(id, callable_with(orchestration));
    TaskArgs args;
    args.in(Tensor::make(x, {kElements}, DataType::F32));
    try {
      worker.run(id, args);
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "the run did not fail";
    return Error(StatusCode::Ok, "");
  }
  Worker worker;
  DeviceBuffer x;
  int32_t next_id = 0;
};

struct ThrowCase {
  const char* name;
  OrchestrationEntry orchestration;
  std::vector<std::string> message;  // substrings of the KernelFault message
};
void PrintTo(const ThrowCase& c, std::ostream* os) {
  *os << c.name;
}

const ThrowCase kThrowCases[] = {
    {"StdException",
     &one_task<kThrowsStd>,
     {"kernel func_id 0 of task 0 threw an exception on core", ": tile 7 has a NaN"}},
    {"NonStdException",
     &one_task<kThrowsInt>,
     {"kernel func_id 1 of task 0 threw an exception on core", ": a non-std exception"}},
    // Bounded: the kernel's name and the start of the text fit the chip's result detail.
    {"LongText",
     &one_task<kThrowsLong>,
     {"kernel func_id 2 of task 0 threw an exception on core", ": long: xxxx"}},
};

using ThrowParam = std::tuple<RuntimeVariant, ThrowCase>;
class KernelException : public ::testing::TestWithParam<ThrowParam> {};

TEST_P(KernelException, KernelFaultCarriesTheExceptionText) {
  VariantWorker w(std::get<0>(GetParam()));
  const ThrowCase& c = std::get<1>(GetParam());
  const Error e = w.run_error(c.orchestration);
  EXPECT_EQ(e.code(), StatusCode::KernelFault) << e.what();
  for (const std::string& text : c.message) EXPECT_THAT(e.message(), HasSubstr(text));
  EXPECT_LT(e.message().size(), common::kResultDetailBytes + 64);
  // A kernel's exception does not fault the device: the next run works.
  TaskArgs args;
  args.in(Tensor::make(w.x, {kElements}, DataType::F32));
  w.worker.register_callable(60, callable_with(&one_task<kNoop>));
  EXPECT_EQ(w.worker.run(60, args).task_count, 1u);
}

INSTANTIATE_TEST_SUITE_P(BothVariants, KernelException,
                         ::testing::Combine(::testing::ValuesIn(host::test::kBothVariants),
                                            ::testing::ValuesIn(kThrowCases)),
                         host::test::VariantCaseName());

// The same failing orchestration gives the same chiprt::Error (code, message, what()) on both
// variants: the user's own Error as thrown, the shared submission checks' messages, each once.
TEST(OrchestrationErrorText, IsTheSameOnBothVariants) {
  struct Case {
    const char* name;
    OrchestrationEntry orchestration;
    StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"chiprt::Error", &throws_chiprt_error, StatusCode::InvalidArgument,
       "after: step 3 found no tile"},
      {"std::exception", &throws_std_exception, StatusCode::OrchestrationFailed,
       "orchestration function threw: boom at step 3"},
      {"unknown func id", &submits_unknown_func_id, StatusCode::UnknownFuncId,
       "func_id 9 is not provided by the active callable (submitted as task 0 (func_id 9))"},
      {"later dependency", &depends_on_a_later_task, StatusCode::InvalidTask,
       "task 0 (func_id 3): explicit dependency on task 5 is not an earlier task of this run"},
      {"scope left open", &leaves_a_scope_open, StatusCode::ScopeMismatch,
       "1 scope(s) still open when the orchestration function returned"},
  };
  VariantWorker host_graph(RuntimeVariant::HostBuildGraph);
  VariantWorker ring(RuntimeVariant::TensormapRingbuffer);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Error from_host_graph = host_graph.run_error(c.orchestration);
    const Error from_ring = ring.run_error(c.orchestration);
    for (const Error* e : {&from_host_graph, &from_ring}) {
      EXPECT_EQ(e->code(), c.code) << e->what();
      EXPECT_THAT(e->message(), HasSubstr(c.message));
      // One "[NAME] message (hint: ...)": the message embeds no formatted error.
      EXPECT_THAT(e->message(), Not(HasSubstr("(hint:"))) << e->what();
      EXPECT_THAT(e->message(), Not(HasSubstr("[" + std::string(e->name()) + "]")));
    }
    EXPECT_EQ(from_ring.message(), from_host_graph.message());
    EXPECT_STREQ(from_ring.what(), from_host_graph.what());
  }
  // The user's chiprt::Error comes back exactly as thrown.
  EXPECT_EQ(host_graph.run_error(&throws_chiprt_error).message(), "after: step 3 found no tile");
}

// Every call that takes a callable id refuses one outside [0, kMaxCallableIds) with
// CallableIdOutOfRange, and an unregistered id inside it with UnknownCallable.
TEST(CallableIdRange, OneErrorForAnOutOfRangeIdEverywhere) {
  for (RuntimeVariant variant : host::test::kBothVariants) {
    SCOPED_TRACE(std::string(runtime_variant_name(variant)));
    VariantWorker w(variant);
    TaskArgs args;
    args.in(Tensor::make(w.x, {kElements}, DataType::F32));
    const std::vector<uint8_t> callable = callable_with(&one_task<kNoop>);
    auto code_of = [](auto&& call) {
      try {
        call();
      } catch (const Error& e) {
        return e.code();
      }
      return StatusCode::Ok;
    };
    for (const int32_t id : {kMaxCallableIds, -1, 1000}) {
      SCOPED_TRACE(id);
      EXPECT_EQ(code_of([&] { w.worker.register_callable(id, callable); }),
                StatusCode::CallableIdOutOfRange);
      EXPECT_EQ(code_of([&] { w.worker.run(id, args); }), StatusCode::CallableIdOutOfRange);
      EXPECT_EQ(code_of([&] { w.worker.export_graph(id, args); }),
                StatusCode::CallableIdOutOfRange);
      EXPECT_EQ(code_of([&] { w.worker.unregister_callable(id); }),
                StatusCode::CallableIdOutOfRange);
      EXPECT_FALSE(w.worker.has_callable(id));
    }
    const int32_t unregistered = kMaxCallableIds - 1;
    EXPECT_EQ(code_of([&] { w.worker.run(unregistered, args); }), StatusCode::UnknownCallable);
    EXPECT_EQ(code_of([&] { w.worker.export_graph(unregistered, args); }),
              StatusCode::UnknownCallable);
    EXPECT_EQ(code_of([&] { w.worker.unregister_callable(unregistered); }),
              StatusCode::UnknownCallable);
  }
}

}  // namespace
}  // namespace chiprt
