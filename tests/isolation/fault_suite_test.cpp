// The fault suite of the isolated platform (SimIsolation::Process): one table of every fault a
// kernel can raise (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, exit(3)) in every task kind (AIC,
// AIV, MIX, SPMD at a block > 0) on both runtime variants, threaded and serial, plus the same
// faults in a chip-object kernel (whose symbol the message names) and in the tensormap_ringbuffer
// orchestration function, which runs on the chip. Every case asserts:
//   - the run ends with KernelCrashed naming the signal (or the exit code), the task id, the
//     kernel's func_id, the core and its type, the block of an SPMD task, and the faulting address
//     of SIGSEGV / SIGBUS;
//   - the host survives it and the dead device process is reaped;
//   - later runs and allocations are refused with DeviceFaulted until reset();
//   - after reset() a normal run gives the right result, buffers allocated after the reset are
//     intact, and a buffer of the old device is refused with InvalidDevicePointer naming the reset.
// Each case has a Worker of its own (2 clusters), so a failing case cannot disturb the next.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/worker.h"
#include "isolation_support.h"

namespace chiprt::isolation_test {
namespace {

struct FaultCase {
  Fault fault;
  TaskKind kind;
  RuntimeVariant variant;
  bool serial;
  bool in_orchestration = false;  // the ring orchestration function faults, not a kernel
};

// Each fault: its name in test names and how the message names it (the signal, or exit and its
// code).
struct FaultNames {
  Fault fault;
  const char* test_name;
  const char* message_pattern;
};
const FaultNames kFaultNames[] = {
    {Fault::Segv, "Segv", "SIGSEGV"},   {Fault::Bus, "Bus", "SIGBUS"},
    {Fault::Ill, "Ill", "SIGILL"},      {Fault::Fpe, "Fpe", "SIGFPE"},
    {Fault::Abort, "Abort", "SIGABRT"}, {Fault::Exit, "Exit", "exit[^0-9]{0,24}3\\b"},
};
static_assert(kExitCode == 3, "the Exit pattern names the exit code");
const FaultNames& names_of(Fault fault) {
  for (const FaultNames& names : kFaultNames) {
    if (names.fault == fault) return names;
  }
  throw std::logic_error("a fault without names");
}
const char* kind_name(TaskKind kind) {
  switch (kind) {
    case TaskKind::Aic:
      return "Aic";
    case TaskKind::Aiv:
      return "Aiv";
    case TaskKind::Mix:
      return "Mix";
    case TaskKind::Spmd:
      return "Spmd";
    case TaskKind::So:
      return "ChipObject";
  }
  return "?";
}

std::string case_name(const testing::TestParamInfo<FaultCase>& info) {
  const FaultCase& c = info.param;
  return std::string(names_of(c.fault).test_name) + "_" +
         (c.in_orchestration ? "RingOrchestration" : kind_name(c.kind)) + "_" +
         (c.variant == RuntimeVariant::HostBuildGraph ? "HostBuildGraph" : "Ringbuffer") + "_" +
         (c.serial ? "Serial" : "Threaded");
}

constexpr RuntimeVariant kVariants[] = {RuntimeVariant::HostBuildGraph,
                                        RuntimeVariant::TensormapRingbuffer};

// Every fault x task kind x variant x mode; the chip-object kernel threaded on both variants; the
// ring orchestration function, threaded and serial. With CHIPRT_FAULT_CASES=sampled (what the test
// command sets under the sanitizers, where each case costs seconds) each fault gets one task kind
// per variant and mode, rotating so that every fault, kind, variant and mode still meet: 48 cases
// instead of 120.
bool sampled_fault_cases() {
  const char* value = std::getenv("CHIPRT_FAULT_CASES");
  if (value == nullptr || std::string(value) == "all") return false;
  if (std::string(value) == "sampled") return true;
  throw std::invalid_argument(std::string("CHIPRT_FAULT_CASES='") + value +
                              "': expected 'all' or 'sampled'");
}

std::vector<FaultCase> fault_table() {
  constexpr TaskKind kKinds[] = {TaskKind::Aic, TaskKind::Aiv, TaskKind::Mix, TaskKind::Spmd};
  const bool sampled = sampled_fault_cases();
  std::vector<FaultCase> table;
  for (uint32_t f = 0; f < std::size(kFaultNames); ++f) {
    const Fault fault = kFaultNames[f].fault;
    for (uint32_t k = 0; k < std::size(kKinds); ++k) {
      for (uint32_t v = 0; v < std::size(kVariants); ++v) {
        for (const bool serial : {false, true}) {
          if (sampled && (f + 2 * v + serial) % std::size(kKinds) != k) continue;
          table.push_back({fault, kKinds[k], kVariants[v], serial});
        }
      }
    }
    for (const RuntimeVariant variant : kVariants) {
      table.push_back({fault, TaskKind::So, variant, false});
    }
    for (const bool serial : {false, true}) {
      table.push_back({fault, TaskKind::Aiv, RuntimeVariant::TensormapRingbuffer, serial, true});
    }
  }
  return table;
}

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%llx", static_cast<unsigned long long>(value));
  return text;
}

void expect_matches(const std::string& message, const std::string& pattern, const char* what) {
  EXPECT_TRUE(std::regex_search(message, std::regex(pattern, std::regex::icase)))
      << "the message does not name " << what << " (/" << pattern << "/):\n"
      << message;
}

// What a KernelCrashed message of `c` must name.
void expect_crash_message(const FaultCase& c, const std::string& message) {
  expect_matches(message, names_of(c.fault).message_pattern, "the signal or exit code");
  if (c.fault == Fault::Segv) {
    expect_matches(message, "0x0*" + hex(kSegvAddress) + "\\b", "the faulting address");
  }
  if (c.fault == Fault::Bus) {
    expect_matches(message, "0x0*" + hex(bus_address()) + "\\b", "the faulting address");
  }
  if (c.in_orchestration) {
    expect_matches(message, "orchestration", "the orchestration function");
    return;
  }
  expect_matches(message, "task " + std::to_string(kFaultingTask) + "\\b", "the task id");
  const int32_t func_id = c.kind == TaskKind::Aic  ? kFaultAic
                          : c.kind == TaskKind::So ? kFaultSo
                                                   : kFaultAiv;
  expect_matches(message, "func_id " + std::to_string(func_id) + "\\b", "the func_id");
  expect_matches(message, "core [0-9]+", "the core");
  expect_matches(message, c.kind == TaskKind::Aic ? "\\bAIC\\b" : "\\bAIV\\b", "the core type");
  if (c.kind == TaskKind::Spmd) {
    expect_matches(message, "block " + std::to_string(kSpmdFaultBlock) + "\\b", "the block");
  }
  if (c.kind == TaskKind::So) {
    expect_matches(message, "func_id 6 'fault', symbol kernel_entry",
                   "the kernel's name and symbol");
  }
}

class FaultSuite : public testing::TestWithParam<FaultCase> {};

TEST_P(FaultSuite, CrashIsADeviceErrorAndResetRecovers) {
  const FaultCase& c = GetParam();
  bus_address();  // mapped before the device process is forked
  Worker worker;
  worker.init(isolated_options());
  register_suite_callables(worker, c.kind == TaskKind::So);
  const DeviceBuffer x = worker.malloc(kBytes);
  const DeviceBuffer y = worker.malloc(kBytes);
  const std::vector<float> xs = x_values();
  worker.copy_to(x, xs.data(), kBytes);

  const Scenario scenario =
      c.in_orchestration ? Scenario::OrchestrationFault : Scenario::KernelFault;
  try {
    worker.run(c.kind == TaskKind::So ? kSoCallable : kCallable,
               scenario_args(x, y, scenario, c.kind, c.fault), run_config(c.variant, c.serial));
    FAIL() << "the faulting run succeeded";
  } catch (const Error& e) {
    ASSERT_EQ(e.code(), StatusCode::KernelCrashed) << e.what();
    expect_crash_message(c, e.message());
  }
  // The host survived (this line runs); the dead device process was reaped.
  const ProcessResources after_crash = process_resources();
  EXPECT_EQ(after_crash.live_children, 0u) << after_crash.describe();
  EXPECT_EQ(after_crash.zombie_children, 0u) << after_crash.describe();

  // Refused until reset.
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      worker.run(kCallable, scenario_args(x, y, Scenario::Normal), run_config(c.variant, false));
      ADD_FAILURE() << "a run after the fault was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
    }
  }
  try {
    worker.malloc(kBytes);
    ADD_FAILURE() << "an allocation after the fault was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::DeviceFaulted) << e.what();
  }

  worker.reset();
  EXPECT_EQ(worker.reset_count(), 1u);
  expect_works_after_reset(worker, x, c.variant);
  worker.close();
  EXPECT_FALSE(has_unreaped_child());
  EXPECT_EQ(process_resources().live_children, 0u) << "a device process outlived close()";
}

INSTANTIATE_TEST_SUITE_P(Isolated, FaultSuite, testing::ValuesIn(fault_table()), case_name);

}  // namespace
}  // namespace chiprt::isolation_test
