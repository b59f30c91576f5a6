// Drives one core's handshake cell by hand: the scheduler side through CoreLink, the core side by
// calling core_service directly (inline, or on a thread while a kernel blocks).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "aicore/core_executor.h"
#include "chip_harness.h"
#include "common/handshake.h"
#include "scheduler/core_link.h"
#include "scheduler/shared_state.h"

namespace chiprt::scheduler {
namespace {

using common::kTaskIdle;
using test::ChipRun;
using test::ImageWriter;
using test::RunOptions;

common::DispatchPayload payload_for(const RunView& view, uint32_t task) {
  const common::TaskRecord& r = view.tasks[task];
  common::DispatchPayload p{};
  p.kernel_addr = view.kernel_table[r.func_id];
  p.args_addr = reinterpret_cast<uintptr_t>(view.task_args + r.args_begin);
  p.func_id = r.func_id;
  p.arg_count = r.arg_count;
  p.block_idx = 0;
  p.block_num = 1;
  return p;
}

void wait_until(const std::atomic<uint32_t>& word, uint32_t value) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (word.load() != value) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "core never reached " << value;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

TEST(Handshake, CellReservedIdsAndLayout) {
  EXPECT_EQ(common::kTaskIdle, 0xFFFFFFFFu);
  EXPECT_EQ(common::kTaskExit, 0xFFFFFFFEu);
  EXPECT_EQ(alignof(common::HandshakeCell), 64u);
  EXPECT_EQ(offsetof(common::HandshakeCell, status) % 64, 0u);
  EXPECT_EQ(offsetof(common::SharedPrefix, cells) % 64, 0u);
}

TEST(Handshake, ReadyOpenDispatchPendingPromoteFinishExit) {
  ImageWriter writer;
  writer.add(test::kBlockingFunc, CoreType::AIC);  // 0
  writer.add(test::kRecordFunc, CoreType::AIC);    // 1
  writer.add(test::kRecordFunc, CoreType::AIC);    // 2
  RunOptions options;
  options.threads = 1;
  options.clusters = 1;
  options.device_clusters = 1;
  options.service_threads = 0;
  ChipRun run(writer, options);
  common::ChipLaunchArgs& args = run.args();
  common::HandshakeCell& cell = common::shared_prefix(args)->cells[0];

  // 1. A core serviced on the zeroed region reports ready and touches nothing else.
  aicore::core_service(&args, 0);
  EXPECT_EQ(cell.status.load(), common::kCoreReady);
  EXPECT_EQ(cell.finished_count.load(), 0u);

  RunView view;
  ASSERT_TRUE(validate_launch(&args, 1, &view)) << args.result.detail;
  init_shared_state(view);
  common::shared_prefix(args)->init_state.store(common::kInitDone);
  EXPECT_EQ(cell.running.load(), kTaskIdle);
  EXPECT_EQ(cell.pending.load(), kTaskIdle);

  // 2. Open, 3. dispatch into RUNNING; the kernel blocks so the core stays busy.
  CoreLink link;
  link.attach(&cell, 0, kQueueAic);
  EXPECT_TRUE(link.reported_ready());
  EXPECT_FALSE(link.running_free()) << "a closed core takes no task";
  link.open();
  ASSERT_TRUE(link.running_free());
  test::close_blocking_gate();
  link.dispatch_running(0, payload_for(view, 0));
  std::thread core([&] { aicore::core_service(&args, 0); });
  wait_until(cell.executing, 0);  // 4. ack
  EXPECT_FALSE(link.running_free());
  EXPECT_FALSE(link.has_new_finish());

  // A busy core is handed its next task in advance through PENDING.
  ASSERT_TRUE(link.pending_free());
  link.dispatch_pending(1, payload_for(view, 1));
  EXPECT_FALSE(link.pending_free()) << "two outstanding tasks fill both slots";
  EXPECT_EQ(cell.pending.load(), 1u);

  // 5. Finish: the same service call promotes PENDING and runs it.
  test::release_blocking_kernels();
  core.join();
  test::close_blocking_gate();
  EXPECT_EQ(cell.finished_count.load(), 2u);
  EXPECT_EQ(cell.finished_task.load(), 1u);
  EXPECT_EQ(cell.running.load(), kTaskIdle);
  EXPECT_EQ(cell.pending.load(), kTaskIdle);
  EXPECT_EQ(cell.executing.load(), kTaskIdle);
  uint32_t task = 0;
  ASSERT_TRUE(link.take_finished(&task));
  EXPECT_EQ(task, 0u);
  ASSERT_TRUE(link.take_finished(&task));
  EXPECT_EQ(task, 1u);
  EXPECT_FALSE(link.take_finished(&task));
  EXPECT_EQ(run.recorder().order[0], 0u);
  EXPECT_EQ(run.recorder().order[1], 1u);

  // A task that lands in PENDING after the core emptied RUNNING is promoted on the next service.
  cell.pending_payload = payload_for(view, 2);
  cell.pending.store(2, std::memory_order_release);
  aicore::core_service(&args, 0);
  EXPECT_EQ(cell.finished_count.load(), 3u);
  EXPECT_EQ(cell.finished_task.load(), 2u);
  EXPECT_EQ(cell.pending.load(), kTaskIdle);
  EXPECT_EQ(run.recorder().runs[2].load(), 1u);

  // 6. Exit: acknowledged with status Exited and the EXIT id; later services do nothing.
  EXPECT_FALSE(link.exit_acked());
  link.order_exit();
  EXPECT_FALSE(link.has_free_slot());
  aicore::core_service(&args, 0);
  EXPECT_TRUE(link.exit_acked());
  EXPECT_EQ(cell.executing.load(), common::kTaskExit);
  aicore::core_service(&args, 0);
  EXPECT_EQ(cell.finished_count.load(), 3u);
}

TEST(Handshake, ExitDropsTasksNotYetStarted) {
  ImageWriter writer;
  writer.add(test::kRecordFunc, CoreType::AIV);
  RunOptions options;
  options.threads = 1;
  options.clusters = 1;
  options.device_clusters = 1;
  options.service_threads = 0;
  ChipRun run(writer, options);
  common::ChipLaunchArgs& args = run.args();
  RunView view;
  ASSERT_TRUE(validate_launch(&args, 1, &view)) << args.result.detail;
  init_shared_state(view);
  common::shared_prefix(args)->init_state.store(common::kInitDone);
  common::HandshakeCell& cell = common::shared_prefix(args)->cells[1];  // AIV core of cluster 0
  aicore::core_service(&args, 1);
  CoreLink link;
  link.attach(&cell, 1, kQueueAiv);
  link.open();
  link.dispatch_running(0, payload_for(view, 0));
  link.order_exit();
  aicore::core_service(&args, 1);
  EXPECT_TRUE(link.exit_acked());
  EXPECT_EQ(run.recorder().runs[0].load(), 0u);
  EXPECT_EQ(cell.finished_count.load(), 0u);
}

TEST(Handshake, CoreServiceIgnoresInvalidLaunchArgs) {
  common::ChipLaunchArgs args;
  args.magic = 0;
  aicore::core_service(&args, 0);
  aicore::core_service(nullptr, 0);
  args.magic = common::kLaunchMagic;
  args.shared_addr = 0;
  aicore::core_service(&args, 0);
  EXPECT_EQ(args.result.code.load(), 0);
}

}  // namespace
}  // namespace chiprt::scheduler
