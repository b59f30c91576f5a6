// NodeChips (src/node/node_chips.h): a node's chips, each a run pipeline of its own, in a device
// process of its own (or all in process), with the device-to-device copy between them. Every
// behaviour runs on both runtime variants and both placements of the chips through one table,
// with 1, 2 and 4 chips where the count matters.
#include "node/node_chips.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"
#include "faults.h"
#include "isolation_support.h"
#include "node_test_support.h"

namespace chiprt::node {
namespace {

constexpr uint64_t kN = 256;
constexpr uint64_t kBytes = kN * sizeof(float);

struct Row {
  const char* name;
  RuntimeVariant runtime;
  bool in_process;
};
const Row kRows[] = {
    {"HostBuildGraphIsolated", RuntimeVariant::HostBuildGraph, false},
    {"RingIsolated", RuntimeVariant::TensormapRingbuffer, false},
    {"HostBuildGraphInProcess", RuntimeVariant::HostBuildGraph, true},
    {"RingInProcess", RuntimeVariant::TensormapRingbuffer, true},
};

NodeOptions options_for(const Row& row, uint32_t chips) {
  NodeOptions options;
  options.chips = chips;
  options.runtime = row.runtime;
  options.in_process = row.in_process;
  options.sim.clusters = 1;
  options.sim.memory_bytes = 256ull << 20;
  return options;
}

std::vector<float> iota(float base) {
  std::vector<float> v(kN);
  for (uint64_t i = 0; i < kN; ++i) v[i] = base + static_cast<float>(i);
  return v;
}

// A chip's buffer, through its pipeline.
DeviceBuffer allocate(host::RunPipeline& chip) {
  const auto call = chip.enter("malloc");
  return chip.runner(call).allocate(kBytes);
}
void upload(host::RunPipeline& chip, DeviceBuffer buffer, const std::vector<float>& values) {
  auto call = chip.enter("copy_to");
  chip.copy_to(call, buffer.addr, values.data(), kBytes);
}
std::vector<float> download(host::RunPipeline& chip, DeviceBuffer buffer) {
  std::vector<float> values(kN);
  auto call = chip.enter("copy_from");
  chip.copy_from(call, values.data(), buffer.addr, kBytes);
  return values;
}
void register_add(host::RunPipeline& chip) {
  const auto call = chip.enter("register_callable");
  chip.runner(call).register_callable(kCallable, add_callable());
}
RunReport run_add(host::RunPipeline& chip, DeviceBuffer in, DeviceBuffer out, float f,
                  bool crash = false) {
  return chip.run(chip.enter("run"), kCallable,
                  add_args(Tensor::make(in, {kN}, DataType::F32),
                           Tensor::make(out, {kN}, DataType::F32), f, crash),
                  CallConfig{});
}

// `call` throws `code` naming every text of `mentions`, and never "Worker" (a node's errors name
// the node's calls).
template <class Call>
void expect_error(StatusCode code, const std::vector<std::string>& mentions, Call&& call) {
  try {
    call();
    ADD_FAILURE() << "no error; expected " << status_name(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& text : mentions) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos)
          << "'" << text << "' missing from: " << e.what();
    }
    EXPECT_EQ(std::string(e.what()).find("Worker"), std::string::npos) << e.what();
  }
}

class NodeChipsTest : public testing::TestWithParam<Row> {};

TEST_P(NodeChipsTest, EveryChipRunsItsOwnCallableOnItsOwnMemory) {
  const bool isolated = !GetParam().in_process;
  for (uint32_t chips : {1u, 2u, (isolated && kUnderSanitizer) ? 2u : 4u}) {
    SCOPED_TRACE("chips=" + std::to_string(chips));
    const auto before = isolation_test::process_resources();
    NodeChips node(options_for(GetParam(), chips));
    ASSERT_EQ(node.count(), chips);
    std::vector<DeviceBuffer> in(chips), out(chips);
    for (uint32_t k = 0; k < chips; ++k) {
      register_add(node.chip(k));
      in[k] = allocate(node.chip(k));
      out[k] = allocate(node.chip(k));
      upload(node.chip(k), in[k], iota(100.0f * k));
    }
    for (uint32_t k = 0; k < chips; ++k) run_add(node.chip(k), in[k], out[k], 0.5f + k);
    for (uint32_t k = 0; k < chips; ++k) {
      const std::vector<float> got = download(node.chip(k), out[k]);
      for (uint64_t i = 0; i < kN; ++i) {
        ASSERT_EQ(got[i], 100.0f * k + static_cast<float>(i) + 0.5f + k) << "chip " << k;
      }
    }
    if (!GetParam().in_process) {
      // One device process per chip (its init and the device), and the fork server.
      EXPECT_GT(isolation_test::process_resources().live_children, before.live_children)
          << isolation_test::process_resources().describe();
    }
    node.close();
  }
}

TEST_P(NodeChipsTest, CopiesBetweenChipsAndWithinOne) {
  NodeChips node(options_for(GetParam(), 4));
  std::vector<DeviceBuffer> buffers(4);
  for (uint32_t k = 0; k < 4; ++k) {
    register_add(node.chip(k));
    buffers[k] = allocate(node.chip(k));
  }
  upload(node.chip(2), buffers[2], iota(7.0f));
  // 2 -> 0 (down the chip order), 0 -> 3 (up), then a run on 3 reads the copy.
  node.copy(0, buffers[0].addr, 2, buffers[2].addr, kBytes);
  node.copy(3, buffers[3].addr, 0, buffers[0].addr, kBytes);
  EXPECT_EQ(download(node.chip(0), buffers[0]), iota(7.0f));
  EXPECT_EQ(download(node.chip(3), buffers[3]), iota(7.0f));
  const DeviceBuffer result = allocate(node.chip(3));
  run_add(node.chip(3), buffers[3], result, 1.0f);
  EXPECT_EQ(download(node.chip(3), result), iota(8.0f));
  // Within one chip, overlapping: the first half moves up by a quarter (memmove).
  node.copy(0, buffers[0].addr + kBytes / 4, 0, buffers[0].addr, kBytes / 2);
  std::vector<float> expected = iota(7.0f);
  std::copy(expected.begin(), expected.begin() + kN / 2, expected.begin() + kN / 4);
  EXPECT_EQ(download(node.chip(0), buffers[0]), expected);
  // Bytes at odd offsets and of an odd length land exactly there.
  upload(node.chip(1), buffers[1], iota(0.0f));
  node.copy(1, buffers[1].addr + 3, 2, buffers[2].addr + 5, 17);
  std::vector<uint8_t> want(kBytes), got(kBytes);
  const std::vector<float> zero_based = iota(0.0f), seven_based = iota(7.0f);
  std::memcpy(want.data(), zero_based.data(), kBytes);
  std::memcpy(want.data() + 3, reinterpret_cast<const uint8_t*>(seven_based.data()) + 5, 17);
  const std::vector<float> landed = download(node.chip(1), buffers[1]);
  std::memcpy(got.data(), landed.data(), kBytes);
  EXPECT_EQ(got, want);
}

TEST_P(NodeChipsTest, CopyRefusesWhatIsNotALiveAllocationAndWritesNothing) {
  NodeChips node(options_for(GetParam(), 2));
  const DeviceBuffer a = allocate(node.chip(0));
  const DeviceBuffer b = allocate(node.chip(1));
  upload(node.chip(1), b, iota(1.0f));
  upload(node.chip(0), a, iota(50.0f));
  expect_error(StatusCode::InvalidDevicePointer, {"copy_from_peer (source)"},
               [&] { node.copy(0, a.addr, 1, b.addr + 8, kBytes); });
  expect_error(StatusCode::InvalidDevicePointer, {"copy_from_peer (destination)"},
               [&] { node.copy(0, a.addr + 4, 1, b.addr, kBytes); });
  // A chip-0 address named as chip 1's.
  expect_error(StatusCode::InvalidDevicePointer, {"copy_from_peer (source)"},
               [&] { node.copy(0, a.addr, 1, a.addr, kBytes); });
  expect_error(StatusCode::InvalidArgument, {"chip 2 does not exist", "2 chip(s)"},
               [&] { node.copy(2, a.addr, 0, a.addr, kBytes); });
  EXPECT_EQ(download(node.chip(0), a), iota(50.0f));
}

TEST_P(NodeChipsTest, OppositeCopiesFromTwoThreadsNeverDeadlock) {
  NodeChips node(options_for(GetParam(), 2));
  const DeviceBuffer a = allocate(node.chip(0));
  const DeviceBuffer b = allocate(node.chip(1));
  const DeviceBuffer a2 = allocate(node.chip(0));
  const DeviceBuffer b2 = allocate(node.chip(1));
  upload(node.chip(0), a, iota(1.0f));
  upload(node.chip(1), b, iota(2.0f));
  constexpr int kCopies = 200;
  std::thread up([&] {
    for (int i = 0; i < kCopies; ++i) node.copy(1, b2.addr, 0, a.addr, kBytes);
  });
  for (int i = 0; i < kCopies; ++i) node.copy(0, a2.addr, 1, b.addr, kBytes);
  up.join();
  EXPECT_EQ(download(node.chip(1), b2), iota(1.0f));
  EXPECT_EQ(download(node.chip(0), a2), iota(2.0f));
}

TEST_P(NodeChipsTest, ResetChipLosesOnlyThatChipsBuffers) {
  NodeChips node(options_for(GetParam(), 2));
  for (uint32_t k = 0; k < 2; ++k) register_add(node.chip(k));
  const DeviceBuffer kept = allocate(node.chip(0));
  const DeviceBuffer lost = allocate(node.chip(1));
  upload(node.chip(0), kept, iota(3.0f));
  upload(node.chip(1), lost, iota(4.0f));
  node.reset_chip(1);
  EXPECT_EQ(download(node.chip(0), kept), iota(3.0f));
  // Refused: named as lost in the reset, or (where the fresh device handed the range out again
  // for its own use) as no live allocation of chip 1.
  const auto stale = [](const std::string& what) {
    return what.find("was lost when the device was reset") != std::string::npos ||
           what.find("is not inside a live allocation of device 1") != std::string::npos;
  };
  expect_error(StatusCode::InvalidDevicePointer, {}, [&] {
    try {
      download(node.chip(1), lost);
    } catch (const Error& e) {
      EXPECT_TRUE(stale(e.what())) << e.what();
      throw;
    }
  });
  expect_error(StatusCode::InvalidDevicePointer, {"copy_from_peer (source)"}, [&] {
    try {
      node.copy(0, kept.addr, 1, lost.addr, kBytes);
    } catch (const Error& e) {
      EXPECT_TRUE(stale(e.what())) << e.what();
      throw;
    }
  });
  // The chip works again, with its callable registered anew.
  const DeviceBuffer in = allocate(node.chip(1));
  const DeviceBuffer out = allocate(node.chip(1));
  upload(node.chip(1), in, iota(0.0f));
  run_add(node.chip(1), in, out, 2.0f);
  EXPECT_EQ(download(node.chip(1), out), iota(2.0f));
  expect_error(StatusCode::InvalidArgument, {"chip 5 does not exist"}, [&] { node.reset_chip(5); });
}

INSTANTIATE_TEST_SUITE_P(Chips, NodeChipsTest, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<Row>& info) { return info.param.name; });

// A kernel that crashes takes down its own chip only: the run fails naming the node's reset call
// for that chip, the other chips go on, copies from the dead chip are refused, and reset_chip(k)
// brings it back. Isolated chips only (in process, the crash would end the test).
class NodeChipsFaultTest : public testing::TestWithParam<RuntimeVariant> {};

TEST_P(NodeChipsFaultTest, ACrashedChipIsContainedAndNamedByTheNodesCalls) {
  NodeOptions options = options_for(kRows[0], 3);
  options.runtime = GetParam();
  NodeChips node(options);
  std::vector<DeviceBuffer> in(3), out(3);
  for (uint32_t k = 0; k < 3; ++k) {
    register_add(node.chip(k));
    in[k] = allocate(node.chip(k));
    out[k] = allocate(node.chip(k));
    upload(node.chip(k), in[k], iota(static_cast<float>(k)));
  }
  expect_error(StatusCode::KernelCrashed, {"Node::reset_chip(1)"},
               [&] { run_add(node.chip(1), in[1], out[1], 1.0f, /*crash=*/true); });
  for (uint32_t k : {0u, 2u}) {
    run_add(node.chip(k), in[k], out[k], 1.0f);
    EXPECT_EQ(download(node.chip(k), out[k]), iota(k + 1.0f));
  }
  expect_error(StatusCode::DeviceFaulted, {"Node::reset_chip(1)"},
               [&] { node.copy(0, out[0].addr, 1, in[1].addr, kBytes); });
  expect_error(StatusCode::DeviceFaulted, {"Node::reset_chip(1)"},
               [&] { run_add(node.chip(1), in[1], out[1], 1.0f); });
  node.reset_chip(1);
  const DeviceBuffer fresh_in = allocate(node.chip(1));
  const DeviceBuffer fresh_out = allocate(node.chip(1));
  upload(node.chip(1), fresh_in, iota(9.0f));
  run_add(node.chip(1), fresh_in, fresh_out, 1.0f);
  EXPECT_EQ(download(node.chip(1), fresh_out), iota(10.0f));
}

INSTANTIATE_TEST_SUITE_P(Variants, NodeChipsFaultTest,
                         testing::Values(RuntimeVariant::HostBuildGraph,
                                         RuntimeVariant::TensormapRingbuffer),
                         [](const testing::TestParamInfo<RuntimeVariant>& info) {
                           return info.param == RuntimeVariant::HostBuildGraph ? "HostBuildGraph"
                                                                               : "Ring";
                         });

TEST(NodeOptions, OutOfRangeOptionsNameTheField) {
  NodeOptions options;
  options.chips = 0;
  expect_error(StatusCode::InvalidConfig, {"NodeOptions::chips=0", "1..16"},
               [&] { NodeChips node(options); });
  options.chips = 17;
  expect_error(StatusCode::InvalidConfig, {"NodeOptions::chips=17"},
               [&] { NodeChips node(options); });
  options.chips = 2;
  options.chip_sim.resize(3);
  expect_error(StatusCode::InvalidConfig, {"chip_sim has 3 entries for 2 chips"},
               [&] { NodeChips node(options); });
  options.chip_sim.clear();
  options.sim.isolation = SimIsolation::None;
  expect_error(StatusCode::InvalidConfig, {"NodeOptions::sim.isolation", "in_process"},
               [&] { NodeChips node(options); });
  options.sim.isolation = SimIsolation::Default;
  options.chip_sim.assign(2, default_node_chip_options());
  options.chip_sim[1].isolation = SimIsolation::Process;
  expect_error(StatusCode::InvalidConfig, {"NodeOptions::chip_sim[1].isolation"},
               [&] { NodeChips node(options); });
  options.chip_sim[1] = default_node_chip_options();
  options.chip_sim[1].clusters = 99;
  options.in_process = true;
  expect_error(StatusCode::InvalidConfig, {"clusters"}, [&] { NodeChips node(options); });
  options.platform = "no-such-platform";
  options.chip_sim.clear();
  options.in_process = false;
  expect_error(StatusCode::InvalidConfig, {"no-such-platform"}, [&] { NodeChips node(options); });
}

TEST(NodeOptions, EachChipTakesItsOwnOptions) {
  NodeOptions options;
  options.chips = 2;
  options.in_process = true;
  options.chip_sim.assign(2, default_node_chip_options());
  options.chip_sim[0].clusters = 1;
  options.chip_sim[1].clusters = 3;
  NodeChips node(options);
  for (uint32_t k = 0; k < 2; ++k) {
    const auto call = node.chip(k).enter("geometry");
    host::DeviceRunner& runner = node.chip(k).runner(call);
    runner.ensure_initialized();
    EXPECT_EQ(runner.geometry().clusters, options.chip_sim[k].clusters);
    EXPECT_EQ(runner.geometry().default_aicpu_threads, 2u) << "a node chip's default";
    EXPECT_TRUE(runner.geometry().kicks_run_kernels) << "a node chip runs kernels on its AICPU";
  }
}

// Creating and destroying nodes leaves nothing behind: no device process, no fork server, no fd,
// no thread.
constexpr int kLifecycles = kUnderSanitizer ? 2 : 20;

TEST(NodeChipsLifecycle, CreateDestroyCyclesLeaveNothingBehind) {
  isolation_test::ProcessResources before;
  for (int cycle = 0; cycle <= kLifecycles; ++cycle) {
    // After a warm-up cycle: what a first use starts for good (a sanitizer's background thread)
    // is not the node's.
    if (cycle == 1) before = isolation_test::process_resources();
    NodeChips node(options_for(kRows[cycle % 2], 2));
    for (uint32_t k = 0; k < 2; ++k) {
      register_add(node.chip(k));
      const DeviceBuffer in = allocate(node.chip(k));
      const DeviceBuffer out = allocate(node.chip(k));
      upload(node.chip(k), in, iota(1.0f));
      run_add(node.chip(k), in, out, 1.0f);
    }
  }
  const auto after = isolation_test::process_resources();
  EXPECT_EQ(after.live_children, before.live_children) << after.describe();
  EXPECT_EQ(after.zombie_children, 0u) << after.describe();
  EXPECT_EQ(after.fds, before.fds) << after.describe();
  EXPECT_EQ(after.threads, before.threads) << after.describe();
}

}  // namespace
}  // namespace chiprt::node
