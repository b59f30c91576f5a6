// HostGraphBuilder: dependency wiring, output allocation, scopes and fences, errors, the image.
#include "orchestrator/host_graph_builder.h"
#include "orchestrator/tensor_memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "common/graph_image.h"
#include "common/graph_image_validate.h"

namespace chiprt::orchestrator {
namespace {

using common::GraphImageHeader;
using common::TaskRecord;
using common::validate_graph_image;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr DeviceBuffer kHeap{0x40000000, 1 << 20};
constexpr DeviceBuffer kUserBuf{0x10000000, 1 << 16};

// func 0: AIV, unchecked signature; func 1: AIC, unchecked; func 3: AIV (in, inout; 1 scalar);
// func 5: MIX.
KernelTable make_kernels() {
  KernelTable k{};
  k[0] = KernelInfo{true, CoreType::AIV, {}};
  k[1] = KernelInfo{true, CoreType::AIC, {}};
  ArgSignature sig;
  sig.tensor_count = 2;
  sig.scalar_count = 1;
  sig.tags[0] = ArgTag::In;
  sig.tags[1] = ArgTag::InOut;
  k[3] = KernelInfo{true, CoreType::AIV, sig};
  k[5] = KernelInfo{true, CoreType::MIX, {}};
  return k;
}

// A read-only view of a built image.
struct Image {
  GraphImageHeader header{};
  std::vector<TaskRecord> tasks;
  std::vector<uint32_t> fanout;
  std::vector<int64_t> args;
  std::vector<uint32_t> ready;
  std::vector<int64_t> task_ids;  // per record: its public id, -1 for a scope fence

  explicit Image(const std::vector<uint8_t>& bytes) {
    const Status valid = validate_graph_image(bytes.data(), bytes.size());
    EXPECT_TRUE(valid.is_ok()) << valid.to_string();
    if (!valid.is_ok()) return;
    std::memcpy(&header, bytes.data(), sizeof(header));
    copy_section(bytes, header.tasks_offset, header.task_count, &tasks);
    copy_section(bytes, header.fanout_offset, header.fanout_count, &fanout);
    copy_section(bytes, header.args_offset, header.args_count, &args);
    copy_section(bytes, header.initial_ready_offset, header.initial_ready_count, &ready);
    copy_section(bytes, header.task_ids_offset, header.task_count, &task_ids);
  }
  // The record of the task with public id `id` (what submit returned).
  uint32_t record_of(TaskId id) const {
    const auto it = std::find(task_ids.begin(), task_ids.end(), id);
    EXPECT_NE(it, task_ids.end()) << "no task " << id;
    return static_cast<uint32_t>(it - task_ids.begin());
  }
  template <class T>
  static void copy_section(const std::vector<uint8_t>& bytes, uint64_t offset, uint64_t count,
                           std::vector<T>* out) {
    out->resize(count);
    if (count) std::memcpy(out->data(), bytes.data() + offset, count * sizeof(T));
  }
  std::vector<uint32_t> consumers(TaskId t) const {
    const TaskRecord& r = tasks.at(static_cast<std::size_t>(t));
    return {fanout.begin() + r.fanout_begin, fanout.begin() + r.fanout_begin + r.fanout_count};
  }
  std::vector<uint32_t> producers(TaskId t) const {
    std::vector<uint32_t> p;
    for (uint32_t i = 0; i < tasks.size(); ++i) {
      for (uint32_t c : consumers(i)) {
        if (c == t) p.push_back(i);
      }
    }
    return p;
  }
  std::vector<int64_t> args_of(TaskId t) const {
    const TaskRecord& r = tasks.at(static_cast<std::size_t>(t));
    return {args.begin() + static_cast<std::ptrdiff_t>(r.args_begin),
            args.begin() + static_cast<std::ptrdiff_t>(r.args_begin + r.arg_count)};
  }
};

// Runs a lambda as the orchestration function (the entry is a plain function pointer).
std::function<void(Orchestration&)>* g_body = nullptr;
void run_body(Orchestration& orch, const TaskArgs&) {
  (*g_body)(orch);
}

// The injected device memory of get/set_tensor_data: the test's "device" is host memory, which
// only this class dereferences; it counts the copies so that a test sees they went through it.
struct HostTensorMemory final : TensorMemory {
  Status read(uint64_t addr, void* dst, uint64_t bytes) override {
    ++reads;
    std::memcpy(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(addr)), bytes);
    return Status::ok();
  }
  Status write(uint64_t addr, const void* src, uint64_t bytes) override {
    ++writes;
    if (fail_writes) return Status(StatusCode::DeviceFaulted, "injected write failure");
    std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), src, bytes);
    return Status::ok();
  }
  int reads = 0;
  int writes = 0;
  bool fail_writes = false;
};

struct Fixture : ::testing::Test {
  KernelTable kernels = make_kernels();
  BuilderLimits limits;
  DeviceBuffer heap = kHeap;
  HostTensorMemory tensor_memory;

  std::vector<uint8_t> build(std::function<void(Orchestration&)> body,
                             uint64_t* high_water = nullptr) {
    HostGraphBuilder b(kernels, heap, limits, nullptr, &tensor_memory);
    g_body = &body;
    b.build(&run_body, TaskArgs{});
    if (high_water) *high_water = b.heap_high_water();
    return b.image();
  }
  Error build_error(std::function<void(Orchestration&)> body) {
    try {
      build(std::move(body));
    } catch (const Error& e) {
      return e;
    }
    ADD_FAILURE() << "build did not throw";
    return Error(StatusCode::Ok, "");
  }
};

Tensor user_tensor(uint64_t rows = 8, uint64_t cols = 16) {
  return Tensor::make(kUserBuf, {rows, cols}, DataType::F32);
}

using Builder = Fixture;

TEST_F(Builder, FanInAndFanOutWiring) {
  Tensor x, y;
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs a;
    a.out({16}, DataType::F32);
    o.submit(0, CoreType::AIV, a);  // 0
    x = a.output(0);
    TaskArgs b;
    b.out({16}, DataType::F32);
    o.submit(1, CoreType::AIC, b);  // 1
    y = b.output(0);
    TaskArgs c;
    c.in(x).in(y);
    o.submit(0, CoreType::AIV, c);  // 2
    TaskArgs d;
    d.in(x);
    o.submit(0, CoreType::AIV, d);  // 3
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 4u);
  EXPECT_THAT(img.ready, ElementsAre(0u, 1u));
  EXPECT_THAT(img.consumers(0), ElementsAre(2u, 3u));
  EXPECT_THAT(img.consumers(1), ElementsAre(2u));
  EXPECT_EQ(img.tasks[2].fanin_count, 2u);
  EXPECT_EQ(img.tasks[3].fanin_count, 1u);
  EXPECT_EQ(img.tasks[1].core_type, static_cast<uint8_t>(CoreType::AIC));
  EXPECT_EQ(img.tasks[0].func_id, 0);
  EXPECT_EQ(img.tasks[0].flags, common::kTaskFlagNone);
}

TEST_F(Builder, KernelArgsAreDataAddressesThenScalars) {
  const Tensor t = user_tensor();
  const Tensor v = t.view({2, 4}, {1, 8});
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs a;
    a.in(t).no_dep(v).scalar(2.5f).scalar(int64_t{-7});
    o.submit(0, CoreType::AIV, a);
  });
  const Image img(bytes);
  float f = 2.5f;
  uint32_t fbits;
  std::memcpy(&fbits, &f, 4);
  EXPECT_THAT(img.args_of(0), ElementsAre(static_cast<int64_t>(kUserBuf.addr),
                                          static_cast<int64_t>(kUserBuf.addr + (16 + 8) * 4),
                                          static_cast<int64_t>(fbits), -7));
  EXPECT_EQ(img.tasks[0].arg_count, 4u);
  // The block around them: the context before (position independent: no views address, the
  // core sets it), the views after.
  const int64_t* args = img.args.data() + img.tasks[0].args_begin;
  const kernel::TaskContext c = kernel::task_context(args);
  EXPECT_EQ(c.tensor_count, 2);
  EXPECT_EQ(c.scalar_count, 2);
  EXPECT_EQ(c.block_num, 1u);
  EXPECT_EQ(c.views_addr, 0u);
  const auto* views = reinterpret_cast<const kernel::TensorView*>(args + 4);
  EXPECT_EQ(views[1].buffer_addr, kUserBuf.addr);
  EXPECT_EQ(views[1].start_offset, 16u + 8);
  EXPECT_EQ(views[1].ndim, 2);
  EXPECT_EQ(views[1].shape(0), 2u);
  EXPECT_EQ(views[1].shape(1), 4u);
  EXPECT_EQ(views[1].stride(0), t.strides[0]);
  EXPECT_EQ(views[1].stride(1), 1u);
  EXPECT_EQ(img.args.size(), common::kernel_block_words(2, 2));
}

TEST_F(Builder, InoutChainOfTenThousandTasks) {
  const Tensor t = user_tensor();
  const auto bytes = build([&](Orchestration& o) {
    for (int i = 0; i < 10000; ++i) {
      TaskArgs a;
      a.inout(t);
      ASSERT_EQ(o.submit(0, CoreType::AIV, a), i);
    }
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 10000u);
  EXPECT_EQ(img.fanout.size(), 9999u);
  EXPECT_THAT(img.ready, ElementsAre(0u));
  for (uint32_t i = 1; i < 10000; ++i) {
    ASSERT_EQ(img.tasks[i].fanin_count, 1u);
    ASSERT_THAT(img.consumers(i - 1), ElementsAre(i));
  }
}

// A recycled image's storage is where the next build lays its image out (no fresh pages per
// build), and the image is complete and correct there, not a leftover of the recycled one.
TEST_F(Builder, NextBuildReusesARecycledImagesStorage) {
  const Tensor t = user_tensor();
  auto chain = [&](int tasks) {
    return [&t, tasks](Orchestration& o) {
      for (int i = 0; i < tasks; ++i) {
        TaskArgs a;
        a.inout(t);
        o.submit(0, CoreType::AIV, a);
      }
    };
  };
  BuilderScratch scratch;
  std::function<void(Orchestration&)> body = chain(1000);
  std::vector<uint8_t> first;
  {
    HostGraphBuilder b(kernels, heap, limits, &scratch);
    g_body = &body;
    b.build(&run_body, TaskArgs{});
    first = b.take_image();
  }
  const uint8_t* storage = first.data();
  scratch.recycle_image(std::move(first));
  body = chain(10);
  HostGraphBuilder b(kernels, heap, limits, &scratch);
  g_body = &body;
  b.build(&run_body, TaskArgs{});
  const std::vector<uint8_t> second = b.take_image();
  EXPECT_EQ(second.data(), storage);
  const Image img(second);
  ASSERT_EQ(img.tasks.size(), 10u);
  EXPECT_EQ(img.header.total_size, second.size());
  EXPECT_EQ(img.fanout.size(), 9u);
}

TEST_F(Builder, ReadAfterWriteAndWriteAfterWriteOnRegions) {
  const Tensor t = user_tensor();
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs top, bottom, all, lower, rewrite, noted;
    top.output_existing(t.view({4, 16}, {0, 0}));
    o.submit(0, CoreType::AIV, top);  // 0
    bottom.output_existing(t.view({4, 16}, {4, 0}));
    o.submit(0, CoreType::AIV, bottom);  // 1: disjoint from 0
    all.in(t);
    o.submit(0, CoreType::AIV, all);  // 2: reads both
    lower.in(t.view({1, 16}, {6, 0}));
    o.submit(0, CoreType::AIV, lower);  // 3: reads 1 only
    rewrite.inout(t.view({2, 16}, {3, 0}));
    // 4: WAR -> 2, not 3; its WAW on rows 3 and 4 (0, 1) is ordered by 2, which read both after
    // them, so those edges are left out.
    o.submit(0, CoreType::AIV, rewrite);
    noted.no_dep(t);
    o.submit(0, CoreType::AIV, noted);  // 5: no dependency
  });
  const Image img(bytes);
  EXPECT_THAT(img.producers(1), IsEmpty());
  EXPECT_THAT(img.producers(2), ElementsAre(0u, 1u));
  EXPECT_THAT(img.producers(3), ElementsAre(1u));
  EXPECT_THAT(img.producers(4), ElementsAre(2u));
  EXPECT_THAT(img.producers(5), IsEmpty());
  EXPECT_THAT(img.ready, ElementsAre(0u, 1u, 5u));
}

// Writers wait for the earlier readers of what they overwrite (write-after-read); a covering write
// takes the readers' place, so the next writer depends on it alone; NoDep reads stay untracked.
TEST_F(Builder, WriteAfterReadIsTracked) {
  const Tensor t = Tensor::make(kUserBuf, {8, 16}, DataType::I32);  // integer: usable as flags
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs reader, half_reader, untracked, writer, again, ordered, flag_reader, flag_writer;
    reader.in(t);
    const TaskId r = o.submit(0, CoreType::AIV, reader);  // 0
    half_reader.in(t.view({4, 16}, {4, 0}));
    o.submit(0, CoreType::AIV, half_reader);  // 1
    untracked.no_dep(t);
    o.submit(0, CoreType::AIV, untracked);  // 2
    writer.output_existing(t.view({4, 16}, {0, 0}));
    o.submit(0, CoreType::AIV, writer);  // 3: WAR on 0 only (1 reads other rows, 2 is NoDep)
    again.inout(t);
    o.submit(0, CoreType::AIV, again);  // 4: WAR on 0 and 1, WAW on 3
    ordered.output_existing(t).after(r);
    o.submit(0, CoreType::AIV, ordered);  // 5: 4 covered every reader; the explicit edge stays
    flag_reader.in(t.view({1, 1}, {0, 0}));
    flag_reader.when(t.view({1, 1}, {1, 1}));
    o.submit(0, CoreType::AIV, flag_reader);  // 6: RAW on 5 for both
    flag_writer.output_existing(t.view({1, 2}, {1, 0}));
    o.submit(0, CoreType::AIV, flag_writer);  // 7: WAR on 6 (its predicate), WAW on 5
  });
  const Image img(bytes);
  EXPECT_THAT(img.producers(3), ElementsAre(0u));
  EXPECT_THAT(img.producers(4), ElementsAre(0u, 1u, 3u));
  EXPECT_THAT(img.producers(5), ElementsAre(0u, 4u));
  EXPECT_THAT(img.producers(6), ElementsAre(5u));
  EXPECT_THAT(img.producers(7), ElementsAre(5u, 6u));
}

TEST_F(Builder, ExplicitDepsAndDuplicateEdgesCollapse) {
  const Tensor t = user_tensor();
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs w;
    w.inout(t);
    const TaskId a = o.submit(0, CoreType::AIV, w);  // 0
    TaskArgs r;
    r.in(t).in(t.view({2, 2}, {0, 0})).inout(t.view({1, 1}, {7, 7})).after(a).after(a);
    o.submit(0, CoreType::AIV, r);  // 1: four routes to task 0, one edge
    TaskArgs free_task;
    const TaskId c = o.submit_dummy(free_task);  // 2
    TaskArgs later;
    later.after(c).after(a);
    o.submit(0, CoreType::AIV, later);  // 3
  });
  const Image img(bytes);
  EXPECT_EQ(img.tasks[1].fanin_count, 1u);
  EXPECT_THAT(img.consumers(0), ElementsAre(1u, 3u));
  EXPECT_THAT(img.producers(3), ElementsAre(0u, 2u));
  EXPECT_EQ(img.fanout.size(), 3u);
}

TEST_F(Builder, ATaskNeverDependsOnItself) {
  const Tensor t = user_tensor();
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs a;
    a.inout(t).in(t.view({2, 2}, {0, 0})).output_existing(t.view({1, 16}, {3, 0}));
    o.submit(0, CoreType::AIV, a);  // 0
    TaskArgs b;
    b.in(t.view({1, 1}, {3, 3})).inout(t);
    o.submit(0, CoreType::AIV, b);  // 1
  });
  const Image img(bytes);
  EXPECT_EQ(img.tasks[0].fanin_count, 0u);
  EXPECT_THAT(img.producers(1), ElementsAre(0u));
}

TEST_F(Builder, ExplicitDependencyOnFutureTaskIsInvalid) {
  const Error e = build_error([](Orchestration& o) {
    TaskArgs a;
    o.submit(0, CoreType::AIV, a);
    TaskArgs b;
    b.after(1);
    o.submit(0, CoreType::AIV, b);
  });
  EXPECT_EQ(e.code(), StatusCode::InvalidTask);
  EXPECT_THAT(e.message(), HasSubstr("explicit dependency on task 1"));
  EXPECT_THAT(e.message(), HasSubstr("valid: 0..0"));
}

TEST_F(Builder, UnknownFuncId) {
  const Error e = build_error([](Orchestration& o) {
    TaskArgs a;
    o.submit(7, CoreType::AIV, a);
  });
  EXPECT_EQ(e.code(), StatusCode::UnknownFuncId);
  EXPECT_THAT(e.message(), HasSubstr("func_id 7 is not provided by the active callable"));
  const Error neg = build_error([](Orchestration& o) {
    TaskArgs a;
    o.submit(-3, CoreType::AIV, a);
  });
  EXPECT_EQ(neg.code(), StatusCode::UnknownFuncId);
  const Error big = build_error([](Orchestration& o) {
    TaskArgs a;
    o.submit(kMaxFuncId, CoreType::AIV, a);
  });
  EXPECT_EQ(big.code(), StatusCode::UnknownFuncId);
}

TEST_F(Builder, CoreTypeMismatch) {
  const Error e = build_error([](Orchestration& o) {
    TaskArgs a;
    o.submit(1, CoreType::AIV, a);
  });
  EXPECT_EQ(e.code(), StatusCode::CoreTypeMismatch);
  EXPECT_THAT(e.message(), HasSubstr("func_id 1 runs on"));
  EXPECT_THAT(e.message(), HasSubstr("submitted to"));
}

TEST_F(Builder, MixTaskNeedsAtLeastOneKernel) {
  const Error e = build_error([](Orchestration& o) {
    TaskArgs a;
    o.submit(TaskSpec::mixed({}), a);
  });
  EXPECT_EQ(e.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("task 0 (mix -1/-1/-1)"));
  EXPECT_THAT(e.message(), HasSubstr("at least one kernel"));
}

TEST_F(Builder, InvalidCoreTypeValue) {
  const Error e = build_error([](Orchestration& o) {
    TaskArgs a;
    o.submit(0, static_cast<CoreType>(9), a);
  });
  EXPECT_EQ(e.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("core type value 9"));
}

TEST_F(Builder, SignatureMismatchNamesTheArgument) {
  const Tensor t = user_tensor();
  const Error tag = build_error([&](Orchestration& o) {
    TaskArgs a;
    a.in(t).in(t).scalar(1);
    o.submit(3, CoreType::AIV, a);
  });
  EXPECT_EQ(tag.code(), StatusCode::SignatureMismatch);
  EXPECT_THAT(tag.message(), HasSubstr("func_id 3 arg 1: expected inout, got in"));
  const Error count = build_error([&](Orchestration& o) {
    TaskArgs a;
    a.in(t).scalar(1);
    o.submit(3, CoreType::AIV, a);
  });
  EXPECT_EQ(count.code(), StatusCode::SignatureMismatch);
  EXPECT_THAT(count.message(), HasSubstr("func_id 3: expected 2 tensor args, got 1"));
  const Error scalars = build_error([&](Orchestration& o) {
    TaskArgs a;
    a.in(t).inout(t);
    o.submit(3, CoreType::AIV, a);
  });
  EXPECT_EQ(scalars.code(), StatusCode::SignatureMismatch);
  EXPECT_THAT(scalars.message(), HasSubstr("func_id 3: expected 1 scalar args, got 0"));
  // The matching call is accepted.
  build([&](Orchestration& o) {
    TaskArgs a;
    a.in(t).inout(t).scalar(1);
    o.submit(3, CoreType::AIV, a);
  });
}

TEST_F(Builder, TaskCapacity) {
  limits.max_tasks = 4;
  const Error e = build_error([](Orchestration& o) {
    for (int i = 0; i < 5; ++i) {
      TaskArgs a;
      o.submit_dummy(a);
    }
  });
  EXPECT_EQ(e.code(), StatusCode::CapacityExceeded);
  EXPECT_THAT(e.message(), HasSubstr("graph has 5 tasks, limit 4 (CallConfig.max_tasks)"));
}

TEST_F(Builder, DefaultTaskCapacityMessage) {
  limits.max_tasks = 1ull << 20;
  const Error e = build_error([](Orchestration& o) {
    TaskArgs a;
    for (uint64_t i = 0; i <= (1ull << 20); ++i) o.submit_dummy(a);
  });
  EXPECT_EQ(e.code(), StatusCode::CapacityExceeded);
  EXPECT_THAT(e.message(),
              HasSubstr("graph has 1048577 tasks, limit 1048576 (CallConfig.max_tasks)"));
}

TEST_F(Builder, HeapExhaustion) {
  heap = DeviceBuffer{kHeap.addr, 8192};
  const Error e = build_error([](Orchestration& o) {
    TaskArgs a;
    a.out({1024}, DataType::F32);  // 4096 bytes
    o.submit(0, CoreType::AIV, a);
    TaskArgs b;
    b.out({1000}, DataType::F32);  // 4000 bytes: fits
    o.submit(0, CoreType::AIV, b);
    TaskArgs c;
    c.out({1024}, DataType::F32);
    o.submit(0, CoreType::AIV, c);
  });
  EXPECT_EQ(e.code(), StatusCode::HeapExhausted);
  EXPECT_THAT(e.message(), HasSubstr("requested 4096 bytes"));
  EXPECT_THAT(e.message(), HasSubstr("8096 bytes used"));
  EXPECT_THAT(e.message(), HasSubstr("limit 8192 bytes"));
  EXPECT_THAT(e.message(), HasSubstr("CallConfig.output_heap_bytes"));
  EXPECT_THAT(std::string(e.what()), HasSubstr("output_heap_bytes"));
}

TEST_F(Builder, FirstErrorLatchesLaterCallsAreNoOpsAndBuildThrowsIt) {
  heap = DeviceBuffer{kHeap.addr, 4096};
  const Tensor t = user_tensor();
  const Error e = build_error([&](Orchestration& o) {
    TaskArgs a;
    a.inout(t);
    EXPECT_EQ(o.submit(0, CoreType::AIV, a), 0);
    EXPECT_FALSE(o.failed());
    EXPECT_TRUE(o.error().is_ok());
    TaskArgs big;
    big.in(t).out({4096}, DataType::F32);
    EXPECT_EQ(o.submit(0, CoreType::AIV, big), kNoTask);  // HeapExhausted latches, no throw
    EXPECT_TRUE(o.failed());
    EXPECT_EQ(o.error().code(), StatusCode::HeapExhausted);
    // Later calls, valid or not, change nothing and keep the first error.
    TaskArgs bad_dep;
    bad_dep.in(t).after(5);
    EXPECT_EQ(o.submit(0, CoreType::AIV, bad_dep), kNoTask);
    TaskArgs c;
    c.in(t);
    EXPECT_EQ(o.submit(0, CoreType::AIV, c), kNoTask);
    EXPECT_EQ(o.submit_dummy(c), kNoTask);
    o.scope_end();  // would be ScopeMismatch
    o.scope_begin();
    EXPECT_EQ(o.task_count(), 1u);
    EXPECT_EQ(o.error().code(), StatusCode::HeapExhausted);
  });
  EXPECT_EQ(e.code(), StatusCode::HeapExhausted);
  EXPECT_THAT(e.message(), HasSubstr("task 1 (func_id 0) arg 1: output heap exhausted"));
}

TEST_F(Builder, LatchedErrorWinsOverAnExceptionThrownAfterIt) {
  const Error e = build_error([&](Orchestration& o) {
    TaskArgs a;
    o.submit(77, CoreType::AIV, a);
    throw std::runtime_error("gave up after the failed submit");
  });
  EXPECT_EQ(e.code(), StatusCode::UnknownFuncId);
  EXPECT_THAT(e.message(), HasSubstr("func_id 77 is not provided"));
}

TEST_F(Builder, OutputAllocationAlignmentAndTensorFields) {
  heap = DeviceBuffer{0x40000010, 4096};  // unaligned base: addresses still 64-byte aligned
  Tensor a, b;
  uint64_t high = 0;
  build(
      [&](Orchestration& o) {
        TaskArgs t;
        t.out({3}, DataType::F32).out({2, 5}, DataType::F16);
        o.submit(0, CoreType::AIV, t);
        a = t.output(0);
        b = t.output(1);
      },
      &high);
  EXPECT_EQ(a.buffer.addr, 0x40000040u);
  EXPECT_EQ(a.buffer.size, 12u);
  EXPECT_EQ(b.buffer.addr, 0x40000080u);
  EXPECT_EQ(b.buffer.size, 20u);
  EXPECT_EQ(b.ndim, 2u);
  EXPECT_EQ(b.shape[0], 2u);
  EXPECT_EQ(b.shape[1], 5u);
  EXPECT_EQ(b.strides[0], 5u);
  EXPECT_EQ(b.strides[1], 1u);
  EXPECT_EQ(b.dtype, DataType::F16);
  EXPECT_EQ(b.start_offset, 0u);
  EXPECT_EQ(b.owner_task, 0);
  EXPECT_EQ(b.version, 0u);
  EXPECT_TRUE(b.is_contiguous());
  EXPECT_EQ(high, 0x80u - 0x10u + 20u);
}

TEST_F(Builder, ZeroSizeOutputGetsAnAddressAndNoMemory) {
  Tensor empty;
  uint64_t high = 1;
  const auto bytes = build(
      [&](Orchestration& o) {
        TaskArgs t;
        t.out({0, 4}, DataType::F32);
        o.submit(0, CoreType::AIV, t);
        empty = t.output(0);
        TaskArgs r;
        r.in(empty);
        o.submit(0, CoreType::AIV, r);
      },
      &high);
  EXPECT_EQ(high, 0u);
  EXPECT_EQ(empty.buffer.size, 0u);
  EXPECT_GE(empty.buffer.addr, kHeap.addr);
  EXPECT_LE(empty.buffer.addr, kHeap.addr + kHeap.size);
  const Image img(bytes);
  EXPECT_THAT(img.producers(1), IsEmpty());  // no bytes, no dependency
  EXPECT_EQ(img.args_of(0)[0], static_cast<int64_t>(empty.buffer.addr));
}

TEST_F(Builder, DummyTasksCarryArgsAndAllocateOutputs) {
  Tensor made;
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs d;
    d.out({8}, DataType::I32).scalar(3);
    EXPECT_EQ(o.submit_dummy(d), 0);
    made = d.output(0);
    TaskArgs r;
    r.in(made);
    o.submit(0, CoreType::AIV, r);
  });
  const Image img(bytes);
  EXPECT_EQ(img.tasks[0].func_id, -1);
  EXPECT_EQ(img.tasks[0].flags, common::kTaskFlagDummy);
  EXPECT_EQ(img.tasks[0].core_type, static_cast<uint8_t>(CoreType::AIV));
  EXPECT_THAT(img.args_of(0), ElementsAre(static_cast<int64_t>(made.buffer.addr), 3));
  EXPECT_THAT(img.producers(1), ElementsAre(0u));
  EXPECT_EQ(made.buffer.addr, kHeap.addr);
}

TEST_F(Builder, ScopeEndFencesReuseOfReleasedOutputs) {
  heap = DeviceBuffer{kHeap.addr, 256};
  Tensor x, y, z, w;
  uint64_t high = 0;
  const auto bytes = build(
      [&](Orchestration& o) {
        {
          Scope s(o);
          TaskArgs a;
          a.out({16}, DataType::F32);
          o.submit(0, CoreType::AIV, a);  // 0 at [0, 64)
          x = a.output(0);
          TaskArgs b;
          b.in(x).out({16}, DataType::F32);
          o.submit(0, CoreType::AIV, b);  // 1 at [64, 128)
        }                                 // fence (record 2) over both
        EXPECT_EQ(o.task_count(), 2u) << "the fence is internal: no task id";
        TaskArgs c;
        c.out({32}, DataType::F32);
        // Task 2, record 3: the records below are image positions, the fence's included.
        EXPECT_EQ(o.submit(0, CoreType::AIV, c), 2);  // takes fresh memory [128, 256) first
        y = c.output(0);
        TaskArgs d;
        d.out({16}, DataType::F32);
        o.submit(0, CoreType::AIV, d);  // 4 wraps round: reuses x's memory
        z = d.output(0);
        TaskArgs e;
        e.out({8}, DataType::F32);
        o.submit(0, CoreType::AIV, e);  // 5 reuses the second released block
        w = e.output(0);
      },
      &high);
  EXPECT_EQ(y.buffer.addr, kHeap.addr + 128);
  EXPECT_EQ(z.buffer.addr, x.buffer.addr);
  EXPECT_EQ(w.buffer.addr, kHeap.addr + 64);
  EXPECT_EQ(high, 256u);
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 6u);
  EXPECT_THAT(img.task_ids, ElementsAre(0, 1, common::kScopeFenceId, 2, 3, 4));
  EXPECT_EQ(img.header.user_task_count, 5u);
  EXPECT_EQ(img.tasks[2].flags, common::kTaskFlagDummy);
  EXPECT_THAT(img.producers(2), ElementsAre(0u, 1u));
  EXPECT_THAT(img.producers(3), IsEmpty());
  EXPECT_THAT(img.producers(4), ElementsAre(2u));
  EXPECT_THAT(img.producers(5), ElementsAre(2u));
}

// Scope fences take a record but no id: the function's ids number its own tasks, after() and the
// tensor map reach the right records through the mapping, the image's task_ids records it.
TEST_F(Builder, TaskIdsSkipScopeFencesAndAfterReachTheirRecords) {
  std::vector<TaskId> ids;
  uint64_t counted = 0;
  const auto bytes = build([&](Orchestration& o) {
    {
      Scope s(o);
      TaskArgs a;
      a.out({16}, DataType::F32);
      ids.push_back(o.submit(0, CoreType::AIV, a));  // record 0; its scope's fence is record 1
    }
    TaskArgs b;
    b.inout(user_tensor());
    ids.push_back(o.submit(0, CoreType::AIV, b));  // record 2
    {
      Scope s(o);
      TaskArgs c;
      c.out({16}, DataType::F32).after(ids[0]);
      ids.push_back(o.submit(0, CoreType::AIV, c));  // record 3; fence record 4
    }
    TaskArgs d;
    d.in(user_tensor()).after(ids[2]);
    ids.push_back(o.submit(0, CoreType::AIV, d));  // record 5
    counted = o.task_count();
  });
  EXPECT_THAT(ids, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(counted, 4u);
  const Image img(bytes);
  EXPECT_THAT(img.task_ids, ElementsAre(0, common::kScopeFenceId, 1, 2, common::kScopeFenceId, 3));
  EXPECT_EQ(img.header.user_task_count, 4u);
  EXPECT_THAT(img.producers(3), ElementsAre(0u)) << "after(0) is record 0";
  EXPECT_THAT(img.producers(4), ElementsAre(3u)) << "the second fence waits for its scope's task";
  EXPECT_THAT(img.producers(5), UnorderedElementsAre(2u, 3u)) << "b through the map, c by after";
}

TEST_F(Builder, IndependentScopesShareNoMemoryWhileTheHeapHasRoom) {
  // One scope per step, each a producer and a consumer of a scoped intermediate, writing its own
  // slice of a user tensor: the steps are independent, and with room in the heap no step waits
  // for an earlier one (the fence-per-reuse of a stack allocator would chain them all).
  const Tensor result = user_tensor(8, 16);
  std::vector<uint64_t> addrs;
  const auto bytes = build([&](Orchestration& o) {
    for (uint64_t step = 0; step < 8; ++step) {
      Scope s(o);
      TaskArgs a;
      a.out({16}, DataType::F32);
      o.submit(0, CoreType::AIV, a);
      addrs.push_back(a.output(0).buffer.addr);
      TaskArgs b;
      b.in(a.output(0)).output_existing(result.view({1, 16}, {step, 0}));
      o.submit(0, CoreType::AIV, b);
    }  // fence
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 24u);
  for (uint32_t step = 0; step < 8; ++step) {
    EXPECT_THAT(img.producers(3 * step), IsEmpty()) << "step " << step;
    EXPECT_THAT(img.producers(3 * step + 1), ElementsAre(3 * step)) << "step " << step;
    EXPECT_THAT(img.producers(3 * step + 2), ElementsAre(3 * step, 3 * step + 1));
    EXPECT_THAT(img.consumers(3 * step + 2), IsEmpty()) << "no task waits for fence " << step;
  }
  std::sort(addrs.begin(), addrs.end());
  EXPECT_EQ(std::adjacent_find(addrs.begin(), addrs.end()), addrs.end());
}

TEST_F(Builder, ReuseUnderATightHeapWaitsForTheOldReaders) {
  // The heap holds one block: the second scope's output overwrites the first one's, so it must
  // run after the first scope's writer and every reader of the old contents.
  heap = DeviceBuffer{kHeap.addr, 64};
  Tensor first, second;
  const auto bytes = build([&](Orchestration& o) {
    {
      Scope s(o);
      TaskArgs w;
      w.out({16}, DataType::F32);
      o.submit(0, CoreType::AIV, w);  // 0
      first = w.output(0);
      TaskArgs r1;
      r1.in(first);
      o.submit(0, CoreType::AIV, r1);  // 1
      TaskArgs r2;
      r2.no_dep(first);
      o.submit(0, CoreType::AIV, r2);  // 2: a reader the tensor map does not know
    }                                  // fence 3
    {
      Scope s(o);
      TaskArgs w;
      w.out({16}, DataType::F32);
      o.submit(0, CoreType::AIV, w);  // 4 overwrites the old contents
      second = w.output(0);
    }  // fence 5
  });
  EXPECT_EQ(second.buffer.addr, first.buffer.addr);
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 6u);
  EXPECT_THAT(img.producers(3), ElementsAre(0u, 1u, 2u));
  EXPECT_THAT(img.producers(4), ElementsAre(3u));
  EXPECT_THAT(img.producers(5), ElementsAre(4u));
}

TEST_F(Builder, ReuseTakesTheOldestReleasedMemoryFirst) {
  heap = DeviceBuffer{kHeap.addr, 192};
  std::vector<uint64_t> addrs;
  const auto bytes = build([&](Orchestration& o) {
    for (int step = 0; step < 4; ++step) {
      Scope s(o);
      TaskArgs a;
      a.out({16}, DataType::F32);
      o.submit(0, CoreType::AIV, a);  // 2 * step; its fence is 2 * step + 1
      addrs.push_back(a.output(0).buffer.addr - kHeap.addr);
    }
  });
  EXPECT_THAT(addrs, ElementsAre(0u, 64u, 128u, 0u));
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 8u);
  EXPECT_THAT(img.producers(2), IsEmpty());
  EXPECT_THAT(img.producers(4), IsEmpty());
  EXPECT_THAT(img.producers(6), ElementsAre(1u));  // the first scope's fence, not the third's
}

TEST_F(Builder, WrappingAllocationStepsOverLiveOutputs) {
  heap = DeviceBuffer{kHeap.addr, 256};
  Tensor keep, reused;
  const auto bytes = build([&](Orchestration& o) {
    {
      Scope s(o);
      TaskArgs a;
      a.out({16}, DataType::F32);
      o.submit(0, CoreType::AIV, a);  // 0 at [0, 64)
    }                                 // fence 1
    TaskArgs k;
    k.out({16}, DataType::F32);
    o.submit(0, CoreType::AIV, k);  // 2 at [64, 128), top level: live to the end
    keep = k.output(0);
    {
      Scope s(o);
      TaskArgs b;
      b.out({32}, DataType::F32);
      o.submit(0, CoreType::AIV, b);  // 3 at [128, 256)
    }                                 // fence 4
    TaskArgs c;
    c.out({32}, DataType::F32);     // does not fit in [0, 64): steps over `keep`
    o.submit(0, CoreType::AIV, c);  // 5 at [128, 256)
    reused = c.output(0);
    TaskArgs r;
    r.in(keep);
    o.submit(0, CoreType::AIV, r);  // 6: keep is still valid
  });
  EXPECT_EQ(keep.buffer.addr, kHeap.addr + 64);
  EXPECT_EQ(reused.buffer.addr, kHeap.addr + 128);
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 7u);
  EXPECT_THAT(img.producers(5), ElementsAre(4u));
  EXPECT_THAT(img.producers(6), ElementsAre(2u));
}

TEST_F(Builder, PartlyOverwrittenBlockKeepsItsRemainderFenced) {
  heap = DeviceBuffer{kHeap.addr, 256};
  const auto bytes = build([&](Orchestration& o) {
    {
      Scope s(o);
      TaskArgs a;
      a.out({64}, DataType::F32);
      o.submit(0, CoreType::AIV, a);  // 0 at [0, 256)
    }                                 // fence 1
    TaskArgs b;
    b.out({16}, DataType::F32);
    o.submit(0, CoreType::AIV, b);  // 2 at [0, 64)
    TaskArgs c;
    c.out({16}, DataType::F32);
    o.submit(0, CoreType::AIV, c);  // 3 at [64, 128): still the released block's memory
  });
  const Image img(bytes);
  EXPECT_THAT(img.producers(2), ElementsAre(1u));
  EXPECT_THAT(img.producers(3), ElementsAre(1u));
}

TEST_F(Builder, ScatteredLiveOutputsThatLeaveNoRangeAreHeapExhausted) {
  heap = DeviceBuffer{kHeap.addr, 256};
  const Error e = build_error([](Orchestration& o) {
    {
      Scope s(o);
      TaskArgs a;
      a.out({16}, DataType::F32);
      o.submit(0, CoreType::AIV, a);  // [0, 64), released
    }
    TaskArgs k;
    k.out({16}, DataType::F32);
    o.submit(0, CoreType::AIV, k);  // [64, 128), live
    TaskArgs big;
    big.out({48}, DataType::F32);  // 192 bytes: 128 are free, but not in one range
    o.submit(0, CoreType::AIV, big);
  });
  EXPECT_EQ(e.code(), StatusCode::HeapExhausted);
  // Task 2 (record 3, behind the scope's fence): messages name the public id.
  EXPECT_THAT(e.message(), HasSubstr("task 2 (func_id 0): output heap exhausted"));
  EXPECT_THAT(e.message(), HasSubstr("requested 192 bytes"));
  EXPECT_THAT(e.message(), HasSubstr("64 bytes used"));
  EXPECT_THAT(e.message(), HasSubstr("limit 256 bytes (CallConfig.output_heap_bytes)"));
  EXPECT_THAT(e.message(), HasSubstr("no free range is large enough"));
}

TEST_F(Builder, AllOutputsOfATaskMustFitTogether) {
  heap = DeviceBuffer{kHeap.addr, 128};
  const Error e = build_error([](Orchestration& o) {
    TaskArgs a;
    a.out({16}, DataType::F32).out({17}, DataType::F32);  // 64 + 68 bytes
    o.submit(0, CoreType::AIV, a);
  });
  EXPECT_EQ(e.code(), StatusCode::HeapExhausted);
  EXPECT_THAT(e.message(), HasSubstr("arg 1: output heap exhausted: requested 68 bytes (64 "
                                     "before it for the task's other outputs), limit 128 bytes"));
}

TEST_F(Builder, ScopeFenceCoversTasksThatOnlyReadScopeOutputs) {
  heap = DeviceBuffer{kHeap.addr, 64};  // task 5 reuses x's memory
  const auto bytes = build([&](Orchestration& o) {
    o.scope_begin();
    TaskArgs a;
    a.out({16}, DataType::F32);
    o.submit(0, CoreType::AIV, a);  // 0
    const Tensor x = a.output(0);
    for (int i = 0; i < 3; ++i) {
      TaskArgs r;
      r.no_dep(x);
      o.submit(0, CoreType::AIV, r);  // 1..3: no tensor dependency, but they use x
    }
    o.scope_end();  // 4
    TaskArgs c;
    c.out({4}, DataType::F32);
    o.submit(0, CoreType::AIV, c);  // 5
  });
  const Image img(bytes);
  EXPECT_THAT(img.producers(4), ElementsAre(0u, 1u, 2u, 3u));
  EXPECT_THAT(img.producers(5), ElementsAre(4u));
}

TEST_F(Builder, NestedScopesFenceTheirOwnBlocks) {
  heap = DeviceBuffer{kHeap.addr, 256};
  const auto bytes = build([&](Orchestration& o) {
    Scope outer(o);
    TaskArgs a;
    a.out({16}, DataType::F32);     // [0, 64)
    o.submit(0, CoreType::AIV, a);  // 0
    {
      Scope inner(o);
      TaskArgs b;
      b.in(a.output(0)).out({32}, DataType::F32);  // [64, 192)
      o.submit(0, CoreType::AIV, b);               // 1
    }                                              // fence 2: the inner block only
    TaskArgs c;
    c.out({16}, DataType::F32);     // [192, 256): fresh memory first
    o.submit(0, CoreType::AIV, c);  // 3
    TaskArgs d;
    d.out({16}, DataType::F32);     // wraps, steps over the outer [0, 64): [64, 128)
    o.submit(0, CoreType::AIV, d);  // 4
    o.scope_end();                  // fence 5 over the outer blocks 0, 3, 4
    o.scope_begin();                // re-opened so the Scope destructor pairs up
    TaskArgs e;
    e.out({16}, DataType::F32);     // [128, 192): rest of the inner block
    o.submit(0, CoreType::AIV, e);  // 6
    TaskArgs f;
    f.out({16}, DataType::F32);     // [192, 256): outer block 3
    o.submit(0, CoreType::AIV, f);  // 7
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 9u);                 // 8 is the fence of the re-opened scope
  EXPECT_THAT(img.producers(2), ElementsAre(1u));  // a reader of an outer block is not the inner's
  EXPECT_THAT(img.producers(3), IsEmpty());
  EXPECT_THAT(img.producers(4), ElementsAre(2u));
  EXPECT_THAT(img.producers(5), ElementsAre(0u, 1u, 3u, 4u));
  EXPECT_THAT(img.producers(6), ElementsAre(2u));
  EXPECT_THAT(img.producers(7), ElementsAre(5u));
  EXPECT_THAT(img.producers(8), ElementsAre(6u, 7u));
}

TEST_F(Builder, ManyScopesKeepEdgesConstantPerTask) {
  heap = DeviceBuffer{kHeap.addr, 96 * 1024};  // wraps round, stepping over the live outputs
  const auto bytes = build([&](Orchestration& o) {
    for (int i = 0; i < 1000; ++i) {
      TaskArgs keep;
      keep.out({16}, DataType::F32);  // top-level, never released
      o.submit(0, CoreType::AIV, keep);
      Scope s(o);
      TaskArgs a;
      a.out({16}, DataType::F32);
      o.submit(0, CoreType::AIV, a);
    }
  });
  const Image img(bytes);
  for (const TaskRecord& r : img.tasks) ASSERT_LE(r.fanin_count, 2u);
}

TEST_F(Builder, UsingAReleasedTensorIsAnError) {
  const Error e = build_error([](Orchestration& o) {
    Tensor x;
    {
      Scope s(o);
      TaskArgs a;
      a.out({16}, DataType::F32);
      o.submit(0, CoreType::AIV, a);
      x = a.output(0);
    }
    TaskArgs b;
    b.in(x.view({4}, {4}));
    o.submit(0, CoreType::AIV, b);
  });
  EXPECT_EQ(e.code(), StatusCode::InvalidTask);
  EXPECT_THAT(e.message(), HasSubstr("output of task 0"));
  EXPECT_THAT(e.message(), HasSubstr("was released when its scope ended"));
}

TEST_F(Builder, HandMadeTensorOverReleasedHeapMemoryIsAnError) {
  const Error e = build_error([](Orchestration& o) {
    DeviceBuffer released;
    {
      Scope s(o);
      TaskArgs a;
      a.out({16}, DataType::F32);
      o.submit(0, CoreType::AIV, a);
      released = a.output(0).buffer;
    }
    TaskArgs b;
    b.no_dep(Tensor::make(released, {16}, DataType::F32));  // no owner_task to go by
    o.submit(0, CoreType::AIV, b);
  });
  EXPECT_EQ(e.code(), StatusCode::InvalidTask);
  EXPECT_THAT(e.message(), HasSubstr("it was released when its scope ended"));
  EXPECT_THAT(e.message(), HasSubstr("live outputs: 0 bytes"));
}

TEST_F(Builder, OuterScopeTensorsStayUsableInInnerScopes) {
  const auto bytes = build([&](Orchestration& o) {
    Scope outer(o);
    TaskArgs a;
    a.out({16}, DataType::F32);
    o.submit(0, CoreType::AIV, a);  // 0
    const Tensor x = a.output(0);
    {
      Scope inner(o);
      TaskArgs b;
      b.inout(x);
      o.submit(0, CoreType::AIV, b);  // 1 (no inner allocation: no fence)
    }
    TaskArgs c;
    c.in(x);
    o.submit(0, CoreType::AIV, c);  // 2
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 4u);  // 3 is the outer fence
  EXPECT_THAT(img.producers(2), ElementsAre(1u));
  EXPECT_THAT(img.producers(3), ElementsAre(0u, 1u, 2u));
}

TEST_F(Builder, ScopeMismatch) {
  const Error unmatched = build_error([](Orchestration& o) { o.scope_end(); });
  EXPECT_EQ(unmatched.code(), StatusCode::ScopeMismatch);
  EXPECT_THAT(unmatched.message(), HasSubstr("scope_end without a matching scope_begin"));
  const Error left_open = build_error([](Orchestration& o) {
    o.scope_begin();
    o.scope_begin();
    o.scope_end();
  });
  EXPECT_EQ(left_open.code(), StatusCode::ScopeMismatch);
  EXPECT_THAT(left_open.message(), HasSubstr("1 scope(s) still open"));
}

TEST_F(Builder, ErrorsFromTheOrchestrationPassUnchanged) {
  const Error e = build_error(
      [](Orchestration&) { throw Error(StatusCode::InvalidConfig, "custom message 42"); });
  EXPECT_EQ(e.code(), StatusCode::InvalidConfig);
  EXPECT_EQ(e.message(), "custom message 42");
}

TEST_F(Builder, ForeignExceptionsBecomeOrchestrationFailed) {
  const Error e = build_error([](Orchestration&) { throw std::runtime_error("boom"); });
  EXPECT_EQ(e.code(), StatusCode::OrchestrationFailed);
  EXPECT_EQ(e.message(), "orchestration function threw: boom");
  const Error other = build_error([](Orchestration&) { throw 17; });
  EXPECT_EQ(other.code(), StatusCode::OrchestrationFailed);
  EXPECT_THAT(other.message(), HasSubstr("orchestration function threw"));
}

TEST_F(Builder, BadTensorsAreRejected) {
  const Tensor t = user_tensor();
  const Error out_of_buffer = build_error([&](Orchestration& o) {
    Tensor forged = t;
    forged.shape[0] = 2000;  // beyond the 64 KiB buffer
    TaskArgs a;
    a.add(ArgTag::In, forged);
    o.submit(0, CoreType::AIV, a);
  });
  EXPECT_EQ(out_of_buffer.code(), StatusCode::ViewOutOfBounds);
  EXPECT_THAT(out_of_buffer.message(), HasSubstr("arg 0"));
  const Error rank = build_error([&](Orchestration& o) {
    Tensor forged = t;
    forged.ndim = 9;
    TaskArgs a;
    a.add(ArgTag::InOut, forged);
    o.submit(0, CoreType::AIV, a);
  });
  EXPECT_EQ(rank.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(rank.message(), HasSubstr("rank 9"));
  const Error overflow = build_error([&](Orchestration& o) {
    Tensor forged = t;
    forged.strides[0] = UINT64_MAX / 2;
    TaskArgs a;
    a.add(ArgTag::In, forged);
    o.submit(0, CoreType::AIV, a);
  });
  EXPECT_EQ(overflow.code(), StatusCode::ViewOutOfBounds);
}

TEST_F(Builder, EmptyGraphBuildsAValidImage) {
  const auto bytes = build([](Orchestration& o) { EXPECT_EQ(o.task_count(), 0u); });
  const Image img(bytes);
  EXPECT_TRUE(img.tasks.empty());
  EXPECT_TRUE(img.ready.empty());
}

TEST_F(Builder, BuildTwiceAndNullEntryAreRejected) {
  HostGraphBuilder b(kernels, heap, limits);
  EXPECT_THROW(b.build(nullptr, TaskArgs{}), Error);
  std::function<void(Orchestration&)> body = [](Orchestration&) {};
  g_body = &body;
  b.build(&run_body, TaskArgs{});
  try {
    b.build(&run_body, TaskArgs{});
    FAIL() << "second build accepted";
  } catch (const Error& e) {
    EXPECT_THAT(e.message(), HasSubstr("already built"));
  }
  EXPECT_EQ(b.cluster_count(), limits.clusters);
}

TEST_F(Builder, ReportsClusterCount) {
  limits.clusters = 3;
  build([](Orchestration& o) { EXPECT_EQ(o.cluster_count(), 3u); });
}

// --- The full task model -------------------------------------------------------------------

TEST_F(Builder, MixTaskRecordsEveryPartAndSpmdItsBlockCount) {
  const auto bytes = build([](Orchestration& o) {
    TaskArgs a;
    a.out({16}, DataType::F32);
    EXPECT_EQ(o.submit(TaskSpec::mixed({1, 0, -1}, 3), a), 0);
    TaskArgs b;
    b.in(a.output(0));
    EXPECT_EQ(o.submit(TaskSpec::mixed({5, 5, 0}), b), 1);  // MIX-registered kernels fit any part
    TaskArgs c;
    c.in(a.output(0));
    EXPECT_EQ(o.submit(TaskSpec::kernel(0, CoreType::AIV, 40), c), 2);
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 3u);
  EXPECT_EQ(img.tasks[0].core_type, static_cast<uint8_t>(CoreType::MIX));
  EXPECT_EQ(img.tasks[0].func_id, 1);
  EXPECT_EQ(img.tasks[0].mix_aiv[0], 0);
  EXPECT_EQ(img.tasks[0].mix_aiv[1], -1);
  EXPECT_EQ(img.tasks[0].block_num, 3u);
  EXPECT_EQ(img.tasks[1].func_id, 5);
  EXPECT_EQ(img.tasks[1].mix_aiv[1], 0);
  EXPECT_EQ(img.tasks[1].block_num, 1u);
  EXPECT_EQ(img.tasks[2].core_type, static_cast<uint8_t>(CoreType::AIV));
  EXPECT_EQ(img.tasks[2].mix_aiv[0], -1);
  EXPECT_EQ(img.tasks[2].block_num, 40u);
  EXPECT_THAT(img.producers(1), ElementsAre(0u));
  EXPECT_THAT(img.producers(2), ElementsAre(0u));
}

TEST_F(Builder, MixPartOnTheWrongCoreNamesThePart) {
  const Error e = build_error([](Orchestration& o) {
    TaskArgs a;
    o.submit(TaskSpec::mixed({1, 1, -1}), a);  // func 1 is an AIC kernel, part aiv0
  });
  EXPECT_EQ(e.code(), StatusCode::CoreTypeMismatch);
  EXPECT_THAT(e.message(), HasSubstr("task 0 (mix 1/1/-1) part aiv0"));
  const Error unknown = build_error([](Orchestration& o) {
    TaskArgs a;
    o.submit(TaskSpec::mixed({-1, -1, 9}), a);
  });
  EXPECT_EQ(unknown.code(), StatusCode::UnknownFuncId);
  EXPECT_THAT(unknown.message(), HasSubstr("func_id 9 is not provided"));
  EXPECT_THAT(unknown.message(), HasSubstr("part aiv1"));
}

TEST_F(Builder, BlockNumOutsideItsRangeIsRejected) {
  for (uint32_t blocks : {0u, kMaxBlockNum + 1}) {
    const Error e = build_error([&](Orchestration& o) {
      TaskArgs a;
      o.submit(TaskSpec::kernel(0, CoreType::AIV, blocks), a);
    });
    EXPECT_EQ(e.code(), StatusCode::InvalidArgument);
    EXPECT_THAT(e.message(),
                HasSubstr("block_num " + std::to_string(blocks) + " is outside [1, 65535]"));
  }
}

TEST_F(Builder, PredicateIsADependencyOnTheFlagsWriterAndNotAKernelArgument) {
  Tensor flag;
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs w;
    w.out({4}, DataType::I32);
    o.submit(0, CoreType::AIV, w);  // 0: writes the flag
    flag = w.output(0);
    TaskArgs other;
    other.inout(user_tensor());
    o.submit(1, CoreType::AIC, other);  // 1: unrelated
    TaskArgs p;
    p.in(user_tensor()).scalar(int64_t{5}).when(flag.view({1}, {2}));
    o.submit(0, CoreType::AIV, p);  // 2: predicated on flag[2]
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 3u);
  const TaskRecord& r = img.tasks[2];
  EXPECT_EQ(r.flags, common::kTaskFlagPredicated);
  EXPECT_EQ(r.predicate_addr, flag.buffer.addr + 2 * 4);
  EXPECT_EQ(r.predicate_bytes, 4u);
  EXPECT_EQ(r.arg_count, 2u);  // the tensor and the scalar; the flag is not passed
  EXPECT_THAT(img.producers(2), UnorderedElementsAre(0u, 1u));
  EXPECT_EQ(img.tasks[0].flags, common::kTaskFlagNone);
}

// The skip-fill range (TaskFront::encode_record): a predicated task's packed runtime outputs,
// from the first output to the last one's end in whole 64-byte granules; inout and
// output_existing tensors are not in it; tasks without a predicate or outputs carry none.
TEST_F(Builder, APredicatedTasksSkipFillRangeIsItsPackedOutputs) {
  TaskArgs p;
  TaskArgs plain;
  TaskArgs no_outputs;
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs flag;
    flag.out({1}, DataType::I32);
    o.submit(0, CoreType::AIV, flag);  // 0
    p.in(user_tensor()).out({4}, DataType::F32).inout(user_tensor(1, 4)).out({25}, DataType::F32);
    p.when(flag.output(0));
    o.submit(0, CoreType::AIV, p);  // 1
    plain.out({4}, DataType::F32);
    o.submit(0, CoreType::AIV, plain);  // 2
    no_outputs.inout(user_tensor()).when(flag.output(0));
    o.submit(0, CoreType::AIV, no_outputs);  // 3
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 4u);
  const uint64_t first = p.output(0).buffer.addr;
  EXPECT_EQ(first % 64, 0u);
  EXPECT_EQ(p.tensor(3).buffer.addr, first + 64) << "packed in argument order";
  EXPECT_EQ(img.tasks[1].skip_fill_addr, first);
  EXPECT_EQ(img.tasks[1].skip_fill_granules, 3u) << "16 bytes, padding, 100 bytes";
  EXPECT_EQ(img.tasks[2].skip_fill_granules, 0u);
  EXPECT_EQ(img.tasks[2].skip_fill_addr, 0u);
  EXPECT_EQ(img.tasks[3].skip_fill_granules, 0u);
  EXPECT_EQ(img.tasks[3].skip_fill_addr, 0u);
  EXPECT_EQ(img.header.output_heap_addr, heap.addr);
  EXPECT_EQ(img.header.output_heap_size, heap.size);
}

TEST_F(Builder, PredicateOutsideItsBufferIsRejected) {
  const Error e = build_error([](Orchestration& o) {
    Tensor flag = Tensor::make(kUserBuf, {4}, DataType::I32);
    flag.start_offset = kUserBuf.size;  // past the end
    TaskArgs p;
    p.when(flag);
    o.submit(0, CoreType::AIV, p);
  });
  EXPECT_EQ(e.code(), StatusCode::ViewOutOfBounds);
  EXPECT_THAT(e.message(), HasSubstr("task 0 (func_id 0) predicate"));
}

TEST_F(Builder, AllocationOnlyTaskCompletesAtOnceAndOrdersLaterWriters) {
  Tensor acc;
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs alloc;
    alloc.out({64}, DataType::F32);
    EXPECT_EQ(o.allocate(alloc), 0);
    acc = alloc.output(0);
    TaskArgs fill;
    fill.inout(acc);
    EXPECT_EQ(o.submit(0, CoreType::AIV, fill), 1);
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 2u);
  EXPECT_EQ(img.tasks[0].flags, common::kTaskFlagDummy);
  EXPECT_EQ(img.tasks[0].func_id, -1);
  EXPECT_EQ(img.tasks[0].fanin_count, 0u);
  EXPECT_THAT(img.ready, ElementsAre(0u));
  EXPECT_THAT(img.producers(1), ElementsAre(0u));
  EXPECT_EQ(acc.owner_task, 0);
  EXPECT_EQ(acc.buffer.addr, kHeap.addr);
}

TEST_F(Builder, AllocationOnlyTaskTakesOnlyOutputs) {
  const Error e = build_error([](Orchestration& o) {
    TaskArgs a;
    a.out({4}, DataType::F32).in(user_tensor());
    o.allocate(a);
  });
  EXPECT_EQ(e.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("allocate (task 0) arg 1: tag in"));
  const Error scalars = build_error([](Orchestration& o) {
    TaskArgs a;
    a.out({4}, DataType::F32).scalar(int64_t{1});
    o.allocate(a);
  });
  EXPECT_EQ(scalars.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(scalars.message(), HasSubstr("1 scalars"));
}

TEST_F(Builder, ManualScopeUsesOnlyExplicitDependencies) {
  const Tensor t = user_tensor();
  const auto bytes = build([&](Orchestration& o) {
    TaskArgs w;
    w.output_existing(t);
    o.submit(0, CoreType::AIV, w);  // 0: auto writer
    {
      Scope manual(o, ScopeMode::Manual);
      TaskArgs r;
      r.in(t);
      o.submit(0, CoreType::AIV, r);  // 1: no tensor-map lookup
      TaskArgs w2;
      w2.inout(t).after(1);
      o.submit(0, CoreType::AIV, w2);  // 2: only the explicit edge; not recorded
      {
        Scope nested(o, ScopeMode::Manual);  // manual inside manual is fine
        TaskArgs r2;
        r2.in(t).after(2);
        o.submit(1, CoreType::AIC, r2);  // 3
      }
    }
    TaskArgs r3;
    r3.in(t);
    o.submit(0, CoreType::AIV, r3);  // 4: sees task 0 only (manual writes are invisible)
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 5u);
  EXPECT_THAT(img.producers(1), IsEmpty());
  EXPECT_THAT(img.producers(2), ElementsAre(1u));
  EXPECT_THAT(img.producers(3), ElementsAre(2u));
  EXPECT_THAT(img.producers(4), ElementsAre(0u));
}

TEST_F(Builder, ManualScopeStillFencesItsOutputs) {
  heap = DeviceBuffer{kHeap.addr, 64};  // the second output reuses the first one's memory
  const auto bytes = build([](Orchestration& o) {
    {
      Scope manual(o, ScopeMode::Manual);
      TaskArgs a;
      a.out({16}, DataType::F32);
      o.submit(0, CoreType::AIV, a);  // 0
    }                                 // fence 1
    TaskArgs b;
    b.out({16}, DataType::F32);
    o.submit(0, CoreType::AIV, b);  // 2 reuses the memory: after the fence
  });
  const Image img(bytes);
  ASSERT_EQ(img.tasks.size(), 3u);
  EXPECT_EQ(img.tasks[1].flags, common::kTaskFlagDummy);
  EXPECT_THAT(img.producers(1), ElementsAre(0u));
  EXPECT_THAT(img.producers(2), ElementsAre(1u));
}

TEST_F(Builder, AutomaticScopeInsideAManualScopeIsInvalidScope) {
  const Error e = build_error([](Orchestration& o) {
    Scope outer(o);                      // auto
    Scope manual(o, ScopeMode::Manual);  // manual inside auto: fine
    EXPECT_FALSE(o.failed());
    o.scope_begin(ScopeMode::Auto);  // auto inside manual: latches
    EXPECT_TRUE(o.failed());
    EXPECT_EQ(o.error().code(), StatusCode::InvalidScope);
  });
  EXPECT_EQ(e.code(), StatusCode::InvalidScope);
  EXPECT_THAT(e.message(), HasSubstr("scope_begin(Auto) at depth 3 inside 1 open manual scope"));
  EXPECT_THAT(e.message(), HasSubstr("nest automatic scopes only outside manual ones"));
}

// get/set_tensor_data on host_build_graph: copies through the injected TensorMemory while no task
// of the run uses the tensor.
TEST_F(Builder, TensorDataIsReadAndWrittenWhileNoTaskUsesIt) {
  std::vector<float> memory(32);
  for (std::size_t i = 0; i < memory.size(); ++i) memory[i] = static_cast<float>(i);
  const DeviceBuffer buf{reinterpret_cast<uintptr_t>(memory.data()), memory.size() * 4};
  const Tensor m = Tensor::make(buf, {4, 8}, DataType::F32);
  float column[4] = {};
  float block[6] = {};
  float row[8] = {};
  HostGraphBuilder untouched(kernels, heap, limits);
  std::function<void(Orchestration&)> empty = [](Orchestration&) {};
  g_body = &empty;
  untouched.build(&run_body, TaskArgs{});
  EXPECT_FALSE(untouched.accessed_tensor_data());
  HostGraphBuilder b(kernels, heap, limits, nullptr, &tensor_memory);
  std::function<void(Orchestration&)> body = [&](Orchestration& o) {
    o.get_tensor_data(m.slice(1, 3, 4), column, sizeof(column));  // a strided column
    const float values[6] = {-1, -2, -3, -4, -5, -6};
    o.set_tensor_data(m.view({2, 3}, {2, 4}), values, sizeof(values));
    o.get_tensor_data(m.view({2, 3}, {2, 4}), block, sizeof(block));
    TaskArgs r;
    r.in(m.view({1, 8}, {0, 0}));
    o.submit(0, CoreType::AIV, r);  // only reads row 0: it may still be read
    o.get_tensor_data(m.view({1, 8}, {0, 0}), row, sizeof(row));
    EXPECT_FALSE(o.failed()) << o.error().to_string();
  };
  g_body = &body;
  b.build(&run_body, TaskArgs{});
  EXPECT_TRUE(b.accessed_tensor_data());
  EXPECT_EQ(column[0], 3.0f);
  EXPECT_EQ(column[3], 27.0f);
  EXPECT_EQ(memory[2 * 8 + 4], -1.0f);
  EXPECT_EQ(memory[3 * 8 + 6], -6.0f);
  EXPECT_EQ(memory[2 * 8 + 3], 19.0f);  // outside the view: untouched
  EXPECT_EQ(block[0], -1.0f);
  EXPECT_EQ(block[5], -6.0f);
  EXPECT_EQ(row[7], 7.0f);
  // Every byte went through the injected memory: a strided column is 4 runs, a 2x3 block 2.
  EXPECT_EQ(tensor_memory.reads, 4 + 2 + 1);
  EXPECT_EQ(tensor_memory.writes, 2);
}

// Without a TensorMemory the builder cannot reach device bytes; a failing copy fails the run.
TEST_F(Builder, TensorDataNeedsTheInjectedMemoryAndReportsItsErrors) {
  std::vector<int32_t> memory(16, 3);
  const DeviceBuffer buf{reinterpret_cast<uintptr_t>(memory.data()), memory.size() * 4};
  const Tensor v = Tensor::make(buf, {16}, DataType::I32);
  int32_t out[16] = {};
  HostGraphBuilder without(kernels, heap, limits);
  std::function<void(Orchestration&)> body = [&](Orchestration& o) {
    o.get_tensor_data(v, out, sizeof(out));
  };
  g_body = &body;
  try {
    without.build(&run_body, TaskArgs{});
    ADD_FAILURE() << "the build did not fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::UnsupportedFeature);
    EXPECT_EQ(e.message(), "get_tensor_data: this graph builder was given no device memory access");
  }
  tensor_memory.fail_writes = true;
  const Error e = build_error([&](Orchestration& o) { o.set_tensor_data(v, out, sizeof(out)); });
  EXPECT_EQ(e.code(), StatusCode::DeviceFaulted);
  EXPECT_EQ(e.message(), "injected write failure");
  EXPECT_EQ(memory[0], 3);
}

TEST_F(Builder, TensorDataOfATensorATaskWritesIsUnsupported) {
  std::vector<int32_t> memory(16, 3);
  const DeviceBuffer buf{reinterpret_cast<uintptr_t>(memory.data()), memory.size() * 4};
  const Tensor v = Tensor::make(buf, {16}, DataType::I32);
  int32_t out[4] = {};
  const Error e = build_error([&](Orchestration& o) {
    TaskArgs w;
    w.inout(v.view({4}, {8}));
    o.submit(0, CoreType::AIV, w);                          // 0 writes [8, 12)
    o.get_tensor_data(v.view({4}, {0}), out, sizeof(out));  // disjoint: fine
    EXPECT_FALSE(o.failed());
    o.get_tensor_data(v.view({4}, {10}), out, sizeof(out));  // overlaps the write
  });
  EXPECT_EQ(e.code(), StatusCode::UnsupportedFeature);
  EXPECT_THAT(e.message(), HasSubstr("get_tensor_data"));
  EXPECT_THAT(e.message(), HasSubstr("task 0 writes it"));
  EXPECT_THAT(e.message(), HasSubstr("tensormap_ringbuffer"));
  EXPECT_EQ(out[0], 3);
}

TEST_F(Builder, SetTensorDataOfATensorATaskReadsIsUnsupported) {
  std::vector<int32_t> memory(16, 3);
  const DeviceBuffer buf{reinterpret_cast<uintptr_t>(memory.data()), memory.size() * 4};
  const Tensor v = Tensor::make(buf, {16}, DataType::I32);
  const int32_t in[16] = {};
  const Error e = build_error([&](Orchestration& o) {
    TaskArgs r;
    r.in(v.view({2}, {4}));
    o.submit(0, CoreType::AIV, r);
    int32_t read[16] = {};
    o.get_tensor_data(v, read, sizeof(read));  // reading what a task only reads: fine
    EXPECT_FALSE(o.failed());
    o.set_tensor_data(v, in, sizeof(in));
  });
  EXPECT_EQ(e.code(), StatusCode::UnsupportedFeature);
  EXPECT_THAT(e.message(), HasSubstr("set_tensor_data"));
  EXPECT_THAT(e.message(), HasSubstr("task 0 reads it"));
  EXPECT_EQ(memory[0], 3);  // nothing written
}

TEST_F(Builder, TensorDataSizeMustMatchTheTensor) {
  std::vector<int32_t> memory(16, 3);
  const DeviceBuffer buf{reinterpret_cast<uintptr_t>(memory.data()), memory.size() * 4};
  int32_t out[16] = {};
  const Error e = build_error([&](Orchestration& o) {
    o.get_tensor_data(Tensor::make(buf, {16}, DataType::I32), out, 60);
  });
  EXPECT_EQ(e.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(e.message(), HasSubstr("60 bytes given, the tensor has 64"));
}

// Random nested scopes over a heap small enough to go round many times: whenever a block of
// outputs lands on memory an earlier output occupied, the earlier output's producer and every
// task that read it must come before the new producer in the graph.
TEST_F(Builder, RandomScopesNeverOverwriteMemoryBeforeItsUsersFinish) {
  struct Output {
    uint64_t lo, hi;
    uint32_t owner;
    std::vector<uint32_t> users;
  };
  heap = DeviceBuffer{kHeap.addr, 16384};
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    std::vector<Output> outputs;
    std::vector<std::vector<std::size_t>> open;  // live outputs per open scope
    auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
    const auto bytes = build([&](Orchestration& o) {
      open.emplace_back();  // the top level keeps nothing: everything is scoped
      for (int step = 0; step < 800 && !o.failed(); ++step) {
        const uint32_t action = pick(10);
        // At most 4 open scopes of at most 5 outputs each stay live: no heap exhaustion.
        const bool scope_full = open.back().size() >= 4;
        if (action < 2 && open.size() < 4) {
          o.scope_begin();
          open.emplace_back();
        } else if ((action < 4 || scope_full) && open.size() > 1) {
          o.scope_end();
          open.pop_back();
        } else {
          TaskArgs t;
          std::vector<std::size_t> read;
          for (const auto& scope : open) {
            for (std::size_t i : scope) {
              if (pick(4) == 0 && t.tensor_count() < 6) {
                read.push_back(i);
                t.no_dep(Tensor::make(
                    DeviceBuffer{kHeap.addr + outputs[i].lo, outputs[i].hi - outputs[i].lo},
                    {(outputs[i].hi - outputs[i].lo) / 4}, DataType::F32));
              }
            }
          }
          const uint32_t outs = open.size() > 1 ? pick(3) : 0;
          for (uint32_t k = 0; k < outs; ++k) t.out({16 * (1 + pick(4))}, DataType::F32);
          const TaskId id = o.submit(0, CoreType::AIV, t);
          if (id == kNoTask) return;
          for (std::size_t i : read) outputs[i].users.push_back(static_cast<uint32_t>(id));
          for (int k = 0; k < t.tensor_count(); ++k) {
            if (t.tag(k) != ArgTag::Out) continue;
            const Tensor& out = t.tensor(k);
            open.back().push_back(outputs.size());
            outputs.push_back(Output{out.buffer.addr - kHeap.addr,
                                     out.buffer.addr - kHeap.addr + out.buffer.size,
                                     static_cast<uint32_t>(id),
                                     {}});
          }
        }
      }
      while (open.size() > 1) {
        o.scope_end();
        open.pop_back();
      }
    });
    const Image img(bytes);
    const std::size_t n = img.tasks.size();
    // Owners and users are public ids; the graph's edges name records (fences included).
    for (Output& out : outputs) {
      out.owner = img.record_of(out.owner);
      for (uint32_t& user : out.users) user = img.record_of(user);
    }
    // reach[t]: the tasks t depends on, directly or not (producers always have smaller ids).
    std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
    for (std::size_t t = 0; t < n; ++t) {
      for (uint32_t p : img.producers(static_cast<TaskId>(t))) {
        reach[t][p] = true;
        for (std::size_t q = 0; q < p; ++q) {
          if (reach[p][q]) reach[t][q] = true;
        }
      }
    }
    std::size_t overlaps = 0;
    for (std::size_t a = 0; a < outputs.size(); ++a) {
      for (std::size_t b = a + 1; b < outputs.size(); ++b) {
        const Output& old_out = outputs[a];
        const Output& new_out = outputs[b];
        if (new_out.owner == old_out.owner || new_out.hi <= old_out.lo ||
            old_out.hi <= new_out.lo) {
          continue;
        }
        ++overlaps;
        EXPECT_TRUE(reach[new_out.owner][old_out.owner])
            << "task " << new_out.owner << " overwrites task " << old_out.owner << "'s output";
        for (uint32_t user : old_out.users) {
          EXPECT_TRUE(user < new_out.owner && reach[new_out.owner][user])
              << "task " << new_out.owner << " overwrites memory task " << user << " reads";
        }
      }
    }
    EXPECT_GT(overlaps, 0u);  // the heap did go round
  }
}

}  // namespace
}  // namespace chiprt::orchestrator
