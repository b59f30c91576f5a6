// validate_graph_image: accepts built images, rejects every kind of corruption with a message.
#include "common/graph_image_validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "common/graph_image.h"
#include "orchestrator/host_graph_builder.h"

namespace chiprt::orchestrator {
namespace {

using common::GraphImageHeader;
using common::TaskRecord;
using common::validate_graph_image;
using ::testing::HasSubstr;

void diamond(Orchestration& o, const TaskArgs&) {
  TaskArgs a;
  a.out({16}, DataType::F32).scalar(1);
  o.submit(0, CoreType::AIV, a);  // 0
  const Tensor x = a.output(0);
  TaskArgs b;
  b.in(x).out({16}, DataType::F32);
  o.submit(0, CoreType::AIV, b);  // 1
  TaskArgs c;
  c.in(x).out({16}, DataType::F32);
  o.submit(0, CoreType::AIV, c);  // 2
  TaskArgs d;
  d.in(b.output(0)).in(c.output(0));
  o.submit_dummy(d);  // 3
  TaskArgs e;
  o.submit(0, CoreType::AIV, e);  // 4: independent
}

class ImageValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    kernels_[0] = KernelInfo{true, CoreType::AIV, {}};
    HostGraphBuilder b(kernels_, DeviceBuffer{0x40000000, 1 << 16}, BuilderLimits{});
    b.build(&diamond, TaskArgs{});
    image_ = b.image();
    std::memcpy(&header_, image_.data(), sizeof(header_));
  }
  TaskRecord task(uint32_t t) const {
    TaskRecord r;
    std::memcpy(&r, image_.data() + header_.tasks_offset + t * sizeof(TaskRecord), sizeof(r));
    return r;
  }
  void set_task(std::vector<uint8_t>& img, uint32_t t, const TaskRecord& r) const {
    std::memcpy(img.data() + header_.tasks_offset + t * sizeof(TaskRecord), &r, sizeof(r));
  }
  template <class T>
  void poke(std::vector<uint8_t>& img, std::size_t offset, T value) const {
    std::memcpy(img.data() + offset, &value, sizeof(T));
  }
  Status check(const std::vector<uint8_t>& img) const {
    return validate_graph_image(img.data(), img.size());
  }
  void expect_rejected(const std::vector<uint8_t>& img, const char* needle) const {
    const Status s = check(img);
    EXPECT_EQ(s.code(), StatusCode::InternalError) << needle;
    EXPECT_THAT(s.message(), HasSubstr(needle));
  }

  KernelTable kernels_{};
  std::vector<uint8_t> image_;
  GraphImageHeader header_{};
};

TEST_F(ImageValidation, BuiltImageIsValidAndWellFormed) {
  EXPECT_TRUE(check(image_).is_ok()) << check(image_).to_string();
  EXPECT_EQ(header_.magic, common::kGraphImageMagic);
  EXPECT_EQ(header_.version, common::kGraphImageVersion);
  EXPECT_EQ(header_.total_size, image_.size());
  EXPECT_EQ(header_.task_count, 5u);
  EXPECT_EQ(header_.fanout_count, 4u);
  EXPECT_EQ(header_.initial_ready_count, 2u);
  for (uint64_t off : {header_.tasks_offset, header_.fanout_offset, header_.args_offset,
                       header_.initial_ready_offset, header_.total_size}) {
    EXPECT_EQ(off % 8, 0u);
  }
  EXPECT_EQ(task(3).fanin_count, 2u);
  EXPECT_EQ(task(3).flags, common::kTaskFlagDummy);
}

TEST_F(ImageValidation, RejectsTruncationAndHeaderDamage) {
  std::vector<uint8_t> img = image_;
  img.resize(sizeof(GraphImageHeader) - 1);
  expect_rejected(img, "smaller than");
  img = image_;
  img.resize(image_.size() - 8);
  expect_rejected(img, "total_size");
  img = image_;
  poke<uint32_t>(img, offsetof(GraphImageHeader, magic), 0x12345678);
  expect_rejected(img, "graph image magic 0x12345678");
  img = image_;
  poke<uint32_t>(img, offsetof(GraphImageHeader, version), 99);
  expect_rejected(img, "version 99");
  EXPECT_FALSE(validate_graph_image(nullptr, 0).is_ok());
}

TEST_F(ImageValidation, RejectsBadSections) {
  std::vector<uint8_t> img = image_;
  poke<uint64_t>(img, offsetof(GraphImageHeader, tasks_offset), header_.tasks_offset + 4);
  expect_rejected(img, "tasks section");
  img = image_;
  poke<uint32_t>(img, offsetof(GraphImageHeader, task_count), 1u << 30);
  expect_rejected(img, "tasks section");
  img = image_;
  poke<uint64_t>(img, offsetof(GraphImageHeader, fanout_count), uint64_t{1} << 62);
  expect_rejected(img, "fanout section");
  img = image_;
  poke<uint64_t>(img, offsetof(GraphImageHeader, args_offset), header_.fanout_offset);
  expect_rejected(img, "args section");
  img = image_;
  poke<uint64_t>(img, offsetof(GraphImageHeader, initial_ready_offset), header_.total_size + 8);
  expect_rejected(img, "initial_ready section");
}

TEST_F(ImageValidation, RejectsBadTaskRecords) {
  std::vector<uint8_t> img = image_;
  TaskRecord r = task(1);
  r.core_type = 7;
  set_task(img, 1, r);
  expect_rejected(img, "task 1: core_type 7");

  img = image_;
  r = task(3);
  r.func_id = 0;  // a dummy must carry -1
  set_task(img, 3, r);
  expect_rejected(img, "dummy");

  img = image_;
  r = task(0);
  r.func_id = 300;
  set_task(img, 0, r);
  expect_rejected(img, "func_id 300");

  img = image_;
  r = task(2);
  r.flags = 0x80;
  set_task(img, 2, r);
  expect_rejected(img, "unknown flags");

  img = image_;
  r = task(0);
  r.fanout_begin = 3;
  set_task(img, 0, r);
  expect_rejected(img, "exceeds fanout_count");

  img = image_;
  r = task(4);
  r.args_begin = header_.args_count;
  r.arg_count = 1;
  set_task(img, 4, r);
  expect_rejected(img, "exceeds args_count");
}

// Each task's argument block: the context before args_begin, counts adding up to arg_count, the
// views after the arguments with a known dtype, its element size and a rank in [1, 5].
TEST_F(ImageValidation, RejectsBrokenArgumentBlocks) {
  // Task 1: one tensor in, one out, no scalars.
  const TaskRecord r1 = task(1);
  ASSERT_EQ(r1.arg_count, 2u);
  const std::size_t context_at =
      header_.args_offset + (r1.args_begin - common::kContextWords) * sizeof(int64_t);
  const std::size_t views_at = header_.args_offset + (r1.args_begin + 2) * sizeof(int64_t);

  std::vector<uint8_t> img = image_;
  TaskRecord r = task(0);
  r.args_begin = 1;
  r.arg_count = 0;
  set_task(img, 0, r);
  expect_rejected(img, "task 0: args_begin 1 leaves no room for the 3-word task context");

  img = image_;
  poke<uint16_t>(img, context_at + offsetof(kernel::TaskContext, tensor_count), 1);
  expect_rejected(img, "task 1: task context of 1 tensors and 0 scalars does not describe its 2");

  img = image_;
  poke<uint16_t>(img, context_at + offsetof(kernel::TaskContext, scalar_count), 17);
  expect_rejected(img, "task 1: task context of 2 tensors and 17 scalars");

  img = image_;
  r = task(4);  // one tensor in the last word of args[]: its view would end past it
  r.args_begin = header_.args_count - 1;
  r.arg_count = 1;
  set_task(img, 4, r);
  const std::size_t last_context =
      header_.args_offset + (r.args_begin - common::kContextWords) * sizeof(int64_t);
  poke<uint16_t>(img, last_context + offsetof(kernel::TaskContext, tensor_count), 1);
  poke<uint16_t>(img, last_context + offsetof(kernel::TaskContext, scalar_count), 0);
  expect_rejected(img, "task 4: views [");

  const std::size_t second_view = views_at + sizeof(kernel::TensorView);
  img = image_;
  poke<uint8_t>(img, second_view + offsetof(kernel::TensorView, ndim), 6);
  expect_rejected(img, "task 1: view of tensor 1 has dtype 0, element bytes 4 and ndim 6");

  img = image_;
  poke<uint8_t>(img, second_view + offsetof(kernel::TensorView, ndim), 0);
  expect_rejected(img, "and ndim 0 (needs a known dtype, its element size and ndim in [1, 5])");

  img = image_;
  poke<uint8_t>(img, views_at + offsetof(kernel::TensorView, dtype), 13);
  expect_rejected(img, "task 1: view of tensor 0 has dtype 13");

  img = image_;
  poke<uint8_t>(img, views_at + offsetof(kernel::TensorView, element_bytes), 2);
  expect_rejected(img, "task 1: view of tensor 0 has dtype 0, element bytes 2");
}

TEST_F(ImageValidation, RejectsInconsistentEdges) {
  std::vector<uint8_t> img = image_;
  TaskRecord r = task(3);
  r.fanin_count = 1;
  set_task(img, 3, r);
  expect_rejected(img, "fanin_count 1");

  img = image_;
  poke<uint32_t>(img, header_.fanout_offset, 17);  // consumer out of range
  expect_rejected(img, "not a later task");

  img = image_;
  poke<uint32_t>(img, header_.fanout_offset, 0);  // self edge: a cycle
  expect_rejected(img, "not a later task");
}

TEST_F(ImageValidation, RejectsBadInitialReadyList) {
  std::vector<uint8_t> img = image_;
  poke<uint32_t>(img, header_.initial_ready_offset, 1);  // task 1 has a producer
  expect_rejected(img, "initial_ready[0]");

  img = image_;
  poke<uint32_t>(img, header_.initial_ready_offset, 4);
  poke<uint32_t>(img, header_.initial_ready_offset + 4, 0);  // out of order
  expect_rejected(img, "initial_ready[1]");

  img = image_;
  poke<uint32_t>(img, offsetof(GraphImageHeader, initial_ready_count), 1);
  expect_rejected(img, "initial_ready_count 1");
}

// Rules only the chip applied before the host's and the chip's validators were made one.
TEST_F(ImageValidation, RejectsWhatOnlyTheChipRejectedBefore) {
  std::vector<uint8_t> img = image_;
  poke<uint32_t>(img, offsetof(GraphImageHeader, task_count), 0xFFFFFFFEu);  // a reserved id
  expect_rejected(img, "task_count 4294967294 exceeds the limit 4294967293");

  img = image_;
  TaskRecord r = task(0);
  r.arg_count = common::kMaxKernelArgs + 1;
  set_task(img, 0, r);
  expect_rejected(img, "task 0: arg_count 33 exceeds the kernel argument limit 32");

  img = image_;
  poke<uint32_t>(img, header_.initial_ready_offset + 4, 0);  // {0, 0}: task 0 listed twice
  expect_rejected(img, "initial_ready[1] = 0 does not follow 0");

  // The chip reads the image in place: a misaligned one is refused, not read unaligned.
  std::vector<uint8_t> shifted(image_.size() + 1);
  std::memcpy(shifted.data() + 1, image_.data(), image_.size());
  const Status s = validate_graph_image(shifted.data() + 1, image_.size());
  EXPECT_EQ(s.code(), StatusCode::InternalError);
  EXPECT_THAT(s.message(), HasSubstr("not 8-byte aligned"));
}

TEST_F(ImageValidation, RejectsBadTaskModelFields) {
  struct Case {
    const char* needle;
    void (*apply)(TaskRecord&);
  };
  const Case cases[] = {
      {"task 1: block_num 0 is outside [1, 65535]", [](TaskRecord& r) { r.block_num = 0; }},
      {"task 1: block_num 65536", [](TaskRecord& r) { r.block_num = 65536; }},
      {"task 1: unknown flags 4", [](TaskRecord& r) { r.flags = 4; }},
      {"task 1: mix_aiv 3/-1 on a non-MIX task", [](TaskRecord& r) { r.mix_aiv[0] = 3; }},
      {"task 1: MIX task with every part -1",
       [](TaskRecord& r) {
         r.core_type = static_cast<uint8_t>(CoreType::MIX);
         r.func_id = -1;
       }},
      {"task 1: MIX part func_id 300",
       [](TaskRecord& r) {
         r.core_type = static_cast<uint8_t>(CoreType::MIX);
         r.mix_aiv[1] = 300;
       }},
      {"task 1: predicate at 0x0 with 4 bytes",
       [](TaskRecord& r) {
         r.flags = common::kTaskFlagPredicated;
         r.predicate_bytes = 4;
       }},
      {"task 1: predicate at 0x1000 with 3 bytes",
       [](TaskRecord& r) {
         r.flags = common::kTaskFlagPredicated;
         r.predicate_addr = 4096;
         r.predicate_bytes = 3;
       }},
      {"task 3: func_id -1, mix_aiv 0/-1 on a dummy task", [](TaskRecord& r) { r.mix_aiv[0] = 0; }},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> img = image_;
    const uint32_t t = c.needle[5] - '0';
    TaskRecord r = task(t);
    c.apply(r);
    set_task(img, t, r);
    expect_rejected(img, c.needle);
  }
  // A valid MIX task with an idle part, SPMD and a predicate pass.
  std::vector<uint8_t> img = image_;
  TaskRecord r = task(1);
  r.core_type = static_cast<uint8_t>(CoreType::MIX);
  r.mix_aiv[1] = 0;
  r.block_num = 65535;
  r.flags = common::kTaskFlagPredicated;
  r.predicate_addr = 4096;
  r.predicate_bytes = 8;
  set_task(img, 1, r);
  EXPECT_TRUE(check(img).is_ok()) << check(img).to_string();
}

}  // namespace
}  // namespace chiprt::orchestrator

namespace chiprt::orchestrator {
namespace {

// A skipped predicated task zero-fills its skip-fill range: the validator admits only a
// predicated task's 64-byte aligned range inside the run's output heap (the header's).
TEST_F(ImageValidation, SkipFillRangeMustBeAPredicatedTasksRangeInTheOutputHeap) {
  EXPECT_EQ(header_.output_heap_addr, 0x40000000u);
  EXPECT_EQ(header_.output_heap_size, uint64_t{1} << 16);
  for (uint32_t t = 0; t < header_.task_count; ++t) {
    EXPECT_EQ(task(t).skip_fill_granules, 0u) << "no predicated task, nothing to fill";
    EXPECT_EQ(task(t).skip_fill_addr, 0u);
  }
  auto predicated = [&](uint64_t addr, uint32_t granules) {
    TaskRecord r = task(1);
    r.flags = common::kTaskFlagPredicated;
    r.predicate_addr = 4096;
    r.predicate_bytes = 4;
    r.skip_fill_addr = addr;
    r.skip_fill_granules = granules;
    return r;
  };
  struct Case {
    const char* why;
    TaskRecord record;
  };
  TaskRecord unpredicated = task(1);
  unpredicated.skip_fill_addr = 0x40000000;
  unpredicated.skip_fill_granules = 1;
  const Case refused[] = {
      {"not predicated", unpredicated},
      {"misaligned", predicated(0x40000020, 1)},
      {"below the heap", predicated(0x40000000 - 64, 1)},
      {"past the heap end", predicated(0x40000000 + (1 << 16) - 64, 2)},
      {"beyond the heap", predicated(0x40000000 + (1 << 16), 1)},
      {"an address without granules", predicated(0x40000000, 0)},
      {"wraps", predicated(UINT64_MAX - 63, 2)},
  };
  for (const Case& c : refused) {
    std::vector<uint8_t> img = image_;
    set_task(img, 1, c.record);
    SCOPED_TRACE(c.why);
    expect_rejected(img, "graph image task 1: skip-fill range at 0x");
  }
  std::vector<uint8_t> img = image_;
  set_task(img, 1, predicated(0x40000000, 1 << 10));  // the whole heap
  EXPECT_TRUE(check(img).is_ok()) << check(img).to_string();

  img = image_;
  poke<uint64_t>(img, offsetof(GraphImageHeader, output_heap_addr), UINT64_MAX - 8);
  expect_rejected(img, "graph image output heap at 0xfffffffffffffff7 with 65536 bytes wraps");
}

}  // namespace
}  // namespace chiprt::orchestrator

namespace chiprt::orchestrator {
namespace {

// task_ids: the user's tasks numbered 0.. in record order, -1 only on a dummy (a scope fence),
// user_task_count their number; the section follows initial_ready.
TEST_F(ImageValidation, TaskIdsNumberTheUsersTasksAndSkipOnlyDummyFences) {
  auto id_at = [&](uint32_t t) { return header_.task_ids_offset + t * sizeof(int64_t); };
  std::vector<uint8_t> img = image_;
  for (uint32_t t = 0; t < 5; ++t) {
    int64_t id = 0;
    std::memcpy(&id, image_.data() + id_at(t), sizeof(id));
    EXPECT_EQ(id, t);
  }
  EXPECT_EQ(header_.user_task_count, 5u);

  poke<int64_t>(img, id_at(2), 7);
  expect_rejected(img,
                  "graph image task 2: task id 7 (flags 0) is neither the next user task id 2");
  img = image_;
  poke<int64_t>(img, id_at(1), common::kScopeFenceId);  // task 1 runs a kernel: no fence
  expect_rejected(img, "graph image task 1: task id -1 (flags 0)");
  img = image_;
  poke<uint32_t>(img, offsetof(GraphImageHeader, user_task_count), 9);
  expect_rejected(img, "graph image user_task_count 9, but 5 tasks have a public id");
  img = image_;
  poke<uint64_t>(img, offsetof(GraphImageHeader, task_ids_offset), header_.task_ids_offset + 4);
  expect_rejected(img, "graph image task_ids section");
  img = image_;
  poke<uint64_t>(img, offsetof(GraphImageHeader, task_ids_offset), header_.initial_ready_offset);
  expect_rejected(img, "graph image task_ids section");

  // Task 3 is a dummy: as a fence it has no id, and task 4 is then the user's task 3.
  img = image_;
  poke<int64_t>(img, id_at(3), common::kScopeFenceId);
  poke<int64_t>(img, id_at(4), 3);
  poke<uint32_t>(img, offsetof(GraphImageHeader, user_task_count), 4);
  EXPECT_TRUE(check(img).is_ok()) << check(img).to_string();
}

}  // namespace
}  // namespace chiprt::orchestrator
