// Which later runs a failed run cancels: the cases that the in-process suite
// (tests/unit/host/run_cancellation_test.cpp) and the isolated-device suite
// (tests/isolation/run_cancellation_test.cpp) share, each run on both runtime variants.
//
// A case is a stream of runs submitted back to back with Worker::submit (a submit waits while two
// runs are admitted, so how far a run got when its predecessor failed varies from stream to
// stream): run 0 sleeps in its kernel, a later run fails, and each run names some of the
// buffers A..F with its tags. The table says how each run ends: success, its own error, or
// Cancelled naming the failed run (and the cancelled run that left the memory unwritten, for a
// chain). Each stream is repeated on one Worker, the buffers rewritten from the host in between
// (which clears what the failure poisoned), so a cancellation that depended on timing shows up.
// Failures are reported through gtest (EXPECT_*), so a caller goes on.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/worker.h"

namespace chiprt::cancellation_cases {

constexpr uint64_t kN = 16;  // floats of every buffer
constexpr uint64_t kBytes = kN * sizeof(float);
constexpr int kBuffers = 6;  // A..F
constexpr int32_t kCallable = 0;
constexpr int32_t kUnknownCallable = 9;  // never registered: refused by the run's checks

// What a run does, scalar 0 of its arguments.
enum class Action : uint64_t {
  Add,                 // one task: the last tensor = the first + 1 (one tensor: += 1)
  SleepAdd,            // Add after sleeping 100 ms in the kernel
  KernelThrows,        // one task whose kernel throws (KernelFault)
  OrchestrationThrows  // the orchestration function throws before submitting (OrchestrationFailed)
};

inline void add_kernel(int64_t* args) {
  const int last = kernel::tensor_count(args) - 1;
  const float* in = kernel::tensor_arg<float>(args, 0);
  float* out = kernel::tensor_arg<float>(args, last);
  for (uint64_t i = 0; i < kN; ++i) out[i] = in[i] + 1.0f;
}
inline void sleep_add_kernel(int64_t* args) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  add_kernel(args);
}
inline void throwing_kernel(int64_t*) {
  throw std::runtime_error("the kernel of the failing run gives up");
}
constexpr int32_t kAddFunc = 0;
constexpr int32_t kSleepAddFunc = 1;
constexpr int32_t kThrowFunc = 2;

// One task over the run's tensors, with the run's tags, running the action's kernel.
inline void one_task(Orchestration& orch, const TaskArgs& args) {
  const auto action = static_cast<Action>(args.scalar_bits(0));
  if (action == Action::OrchestrationThrows) {
    throw std::runtime_error("the orchestration of the failing run gives up");
  }
  TaskArgs task;
  for (int i = 0; i < args.tensor_count(); ++i) task.add(args.tag(i), args.tensor(i));
  const int32_t func = action == Action::SleepAdd       ? kSleepAddFunc
                       : action == Action::KernelThrows ? kThrowFunc
                                                        : kAddFunc;
  orch.submit(func, CoreType::AIV, task);
}

inline void register_callable(Worker& worker) {
  worker.register_callable(
      kCallable,
      CallableBuilder()
          .orchestration_function(&one_task, ArgSignature{})
          .kernel_function(kAddFunc, CoreType::AIV, &add_kernel, ArgSignature{})
          .kernel_function(kSleepAddFunc, CoreType::AIV, &sleep_add_kernel, ArgSignature{})
          .kernel_function(kThrowFunc, CoreType::AIV, &throwing_kernel, ArgSignature{})
          .build());
}

// A tensor argument: buffer (0..5 for A..F) and tag.
struct Use {
  int buffer;
  ArgTag tag;
};
inline Use in(int buffer) {
  return {buffer, ArgTag::In};
}
inline Use inout(int buffer) {
  return {buffer, ArgTag::InOut};
}
inline Use output(int buffer) {
  return {buffer, ArgTag::OutputExisting};
}

struct Step {
  Action action;
  std::vector<Use> uses;
  // How the run ends: Ok, its own error's code, or Cancelled.
  StatusCode expected = StatusCode::Ok;
  // Cancelled: the step whose failure it names, and the cancelled step that left the memory it
  // names unwritten (-1: the failed step wrote it itself).
  int failed_step = -1;
  int via_step = -1;
  int32_t callable = kCallable;
};

struct Case {
  const char* name;
  std::vector<Step> steps;
  // Each buffer's value after the stream (every buffer starts at 0).
  std::vector<float> final_values;
};

enum Buffer { A, B, C, D, E, F };

// The streams. Run 0 keeps the chip busy for 100 ms, so the failing run and its successor are
// admitted while it executes.
inline std::vector<Case> cases() {
  return {
      // The failing run writes A. Runs on other buffers run (C, and B which only run 0 wrote);
      // readers and writers of A are cancelled naming it; D, written by a cancelled run, cancels
      // its reader naming the original failure.
      {"KernelFault",
       {
           {Action::SleepAdd, {inout(B)}},
           {Action::KernelThrows, {inout(A)}, StatusCode::KernelFault},
           {Action::Add, {inout(C)}},
           {Action::Add, {in(A), output(D)}, StatusCode::Cancelled, 1},
           {Action::Add, {inout(C)}},
           {Action::Add, {inout(A)}, StatusCode::Cancelled, 1},
           {Action::Add, {in(D), output(E)}, StatusCode::Cancelled, 1, 3},
           {Action::Add, {in(B), output(F)}},
           {Action::Add, {inout(C)}},
           {Action::Add, {output(A)}, StatusCode::Cancelled, 1},
           {Action::Add, {inout(C)}},
       },
       {0, 1, 4, 0, 0, 2}},
      // The failing run's orchestration function throws (host_build_graph: while it is prepared
      // under run 0): the same rule, whether or not its successor was admitted by then.
      {"OrchestrationFailed",
       {
           {Action::SleepAdd, {inout(B)}},
           {Action::OrchestrationThrows, {in(B), output(A)}, StatusCode::OrchestrationFailed},
           {Action::Add, {inout(C)}},
           {Action::Add, {in(A), output(D)}, StatusCode::Cancelled, 1},
           {Action::Add, {in(B), output(F)}},
           {Action::Add, {inout(C)}},
       },
       {0, 1, 2, 0, 0, 2}},
      // A run refused by its checks (an unknown callable) wrote nothing: it cancels nothing.
      {"RefusedAtItsChecks",
       {
           {Action::SleepAdd, {inout(B)}},
           {Action::Add, {inout(A)}, StatusCode::UnknownCallable, -1, -1, kUnknownCallable},
           {Action::Add, {inout(A)}},
           {Action::Add, {in(A), output(D)}},
       },
       {1, 1, 0, 2, 0, 0}},
  };
}

// The buffers of a case, on one Worker.
struct Buffers {
  DeviceBuffer at[kBuffers];
};
inline Buffers allocate(Worker& worker) {
  Buffers buffers;
  for (DeviceBuffer& buffer : buffers.at) buffer = worker.malloc(kBytes);
  return buffers;
}
// memset every buffer to 0 (which also clears what a failure poisoned).
inline void zero(Worker& worker, const Buffers& buffers) {
  for (const DeviceBuffer& buffer : buffers.at) worker.memset(buffer, 0, kBytes);
}
inline float value_of(Worker& worker, const DeviceBuffer& buffer) {
  std::vector<float> values(kN);
  worker.copy_from(values.data(), buffer, kBytes);
  for (float value : values) EXPECT_EQ(value, values[0]);
  return values[0];
}

inline TaskArgs args_of(const Step& step, const Buffers& buffers) {
  TaskArgs args;
  for (const Use& use : step.uses) {
    args.add(use.tag, Tensor::make(buffers.at[use.buffer], {kN}, DataType::F32));
  }
  args.scalar(static_cast<uint64_t>(step.action));
  return args;
}

// What a Cancelled run's message must name: the failed run's sequence and error, and for a
// chain the cancelled run that left the memory unwritten.
inline void expect_cancellation(const Error& error, uint64_t failed_sequence, StatusCode failed,
                                int64_t via_sequence) {
  using ::testing::HasSubstr;
  EXPECT_THAT(error.message(), HasSubstr("poisoned by run " + std::to_string(failed_sequence) +
                                         ", which failed with " + std::string(status_name(failed))))
      << error.what();
  if (via_sequence >= 0) {
    EXPECT_THAT(error.message(),
                HasSubstr("(run " + std::to_string(via_sequence) + ", cancelled for that failure"))
        << error.what();
  } else {
    EXPECT_THAT(error.message(), ::testing::Not(HasSubstr("cancelled for that failure")))
        << error.what();
  }
}

// Runs `c` `repeats` times on `worker` (callable registered) with `config`.
inline void run_case(Worker& worker, const Case& c, const CallConfig& config, int repeats) {
  const Buffers buffers = allocate(worker);
  for (int repeat = 0; repeat < repeats; ++repeat) {
    SCOPED_TRACE(std::string(c.name) + ", stream " + std::to_string(repeat));
    zero(worker, buffers);
    std::vector<RunHandle> handles;
    for (const Step& step : c.steps) {
      handles.push_back(worker.submit(step.callable, args_of(step, buffers), config));
    }
    for (std::size_t i = 0; i < c.steps.size(); ++i) {
      const Step& step = c.steps[i];
      SCOPED_TRACE("run " + std::to_string(i) + " (sequence " +
                   std::to_string(handles[i].sequence()) + ")");
      try {
        handles[i].wait();
        EXPECT_EQ(step.expected, StatusCode::Ok) << "the run succeeded";
      } catch (const Error& e) {
        ASSERT_EQ(e.code(), step.expected) << e.what();
        if (e.code() != StatusCode::Cancelled) continue;
        const Step& failed = c.steps[static_cast<std::size_t>(step.failed_step)];
        expect_cancellation(
            e, handles[static_cast<std::size_t>(step.failed_step)].sequence(), failed.expected,
            step.via_step < 0 ? -1
                              : static_cast<int64_t>(
                                    handles[static_cast<std::size_t>(step.via_step)].sequence()));
      }
    }
    for (int b = 0; b < kBuffers; ++b) {
      EXPECT_EQ(value_of(worker, buffers.at[b]), c.final_values[static_cast<std::size_t>(b)])
          << "buffer " << static_cast<char>('A' + b);
    }
  }
  for (const DeviceBuffer& buffer : buffers.at) worker.free(buffer);
}

// When poison ends: the host rewriting part of a poisoned buffer leaves the rest poisoned,
// rewriting all of it (copy_to, memset) or freeing it clears it; a Cancelled run poisons what it
// would have written. run() and run_async() are cancelled by the same rule, but their caller sees
// the error at once, so a failed or cancelled run() poisons nothing.
inline void expect_rewrites_clear_poison(Worker& worker, const CallConfig& config) {
  const Buffers buffers = allocate(worker);
  zero(worker, buffers);
  auto args = [&](Action action, std::initializer_list<Use> uses) {
    return args_of(Step{action, uses}, buffers);
  };
  auto code_of = [&](auto&& call) {
    try {
      call();
      return StatusCode::Ok;
    } catch (const Error& e) {
      return e.code();
    }
  };
  auto submitted = [&](Action action, std::initializer_list<Use> uses) {
    return code_of([&] { worker.submit(kCallable, args(action, uses), config).wait(); });
  };
  auto ran = [&](Action action, std::initializer_list<Use> uses) {
    return code_of([&] { worker.run(kCallable, args(action, uses), config); });
  };
  // A failing submitted run poisons what it writes (A), not what it reads (B).
  EXPECT_EQ(submitted(Action::KernelThrows, {in(B), output(A)}), StatusCode::KernelFault);
  EXPECT_EQ(ran(Action::Add, {in(A), output(C)}), StatusCode::Cancelled);
  EXPECT_EQ(ran(Action::Add, {inout(C)}), StatusCode::Ok) << "a cancelled run() poisons nothing";
  EXPECT_EQ(submitted(Action::Add, {inout(B)}), StatusCode::Ok);
  // A cancelled submitted run poisons what it would have written (D), naming the failure.
  EXPECT_EQ(submitted(Action::Add, {in(A), output(D)}), StatusCode::Cancelled);
  EXPECT_EQ(submitted(Action::Add, {inout(D)}), StatusCode::Cancelled);
  // Half of A rewritten: still poisoned (a reader only: a cancelled writer of A would poison the
  // rewritten half again, as what it would have written).
  const std::vector<float> zeros(kN, 0.0f);
  worker.copy_to(buffers.at[A], zeros.data(), kBytes / 2);
  EXPECT_EQ(submitted(Action::Add, {in(A)}), StatusCode::Cancelled);
  // The rest too: cleared.
  worker.copy_to(buffers.at[A], zeros.data(), kBytes / 2, kBytes / 2);
  EXPECT_EQ(submitted(Action::Add, {inout(A)}), StatusCode::Ok);
  EXPECT_EQ(value_of(worker, buffers.at[A]), 1.0f);
  worker.memset(buffers.at[D], 0, kBytes);
  EXPECT_EQ(submitted(Action::Add, {inout(D)}), StatusCode::Ok);
  // A failed run() poisons nothing.
  EXPECT_EQ(ran(Action::KernelThrows, {inout(E)}), StatusCode::KernelFault);
  EXPECT_EQ(submitted(Action::Add, {inout(E)}), StatusCode::Ok);
  // run_async() is run() with a handle: a failed one poisons nothing, and it is cancelled itself
  // when it names poisoned memory.
  auto ran_async = [&](Action action, std::initializer_list<Use> uses) {
    return code_of([&] { worker.run_async(kCallable, args(action, uses), config).wait(); });
  };
  EXPECT_EQ(ran_async(Action::KernelThrows, {inout(E)}), StatusCode::KernelFault);
  EXPECT_EQ(submitted(Action::Add, {inout(E)}), StatusCode::Ok);
  EXPECT_EQ(submitted(Action::KernelThrows, {inout(E)}), StatusCode::KernelFault);
  EXPECT_EQ(ran_async(Action::Add, {in(E)}), StatusCode::Cancelled);
  worker.memset(buffers.at[E], 0, kBytes);
  // A freed buffer takes its poison with it (in process a new buffer may get its address).
  EXPECT_EQ(submitted(Action::KernelThrows, {inout(F)}), StatusCode::KernelFault);
  worker.free(buffers.at[F]);
  const DeviceBuffer fresh = worker.malloc(kBytes);
  worker.memset(fresh, 0, kBytes);
  TaskArgs on_fresh;
  on_fresh.inout(Tensor::make(fresh, {kN}, DataType::F32))
      .scalar(static_cast<uint64_t>(Action::Add));
  EXPECT_EQ(worker.submit(kCallable, on_fresh, config).wait().task_count, 1u);
  worker.free(fresh);
  for (int b = 0; b < kBuffers; ++b) {
    if (b != F) worker.free(buffers.at[b]);
  }
}

}  // namespace chiprt::cancellation_cases
