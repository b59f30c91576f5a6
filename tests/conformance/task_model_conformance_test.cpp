// Conformance of the two runtime variants: every public task-model feature and every error the
// task model raises, each case run through the public API only (include/chiprt) on
// host_build_graph and tensormap_ringbuffer, threaded and serial. Every combination must give the
// case's expected outcome: the output bytes of the reference, or the status code and the full
// message. Addresses in messages differ between runs and variants; they are normalised (the run
// arguments by name, any other address as <addr>) before comparing.
//
// Out of scope by design: errors of placement (HeapExhausted, CapacityExceeded, RingDeadlock,
// WaitTimeout name the heap or ring that filled, which only one variant has) and reading a tensor
// a task writes (host_build_graph cannot wait for a task, tensormap_ringbuffer can).
#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <regex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "chiprt/call_config.h"
#include "chiprt/callable.h"
#include "chiprt/kernel.h"
#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/worker.h"

namespace chiprt {
namespace {

constexpr uint64_t kN = 16;  // elements of x and y
constexpr uint64_t kBytes = kN * sizeof(float);

// Kernels (func ids). Every kernel works on kN floats.
constexpr int32_t kAdd = 0;        // AIV: in a, out b, scalar f: b = a + f
constexpr int32_t kDouble = 1;     // AIC: in a, out b: b = 2a
constexpr int32_t kMixAic = 2;     // AIC part of a MIX task: in a, out b: b[0..8) = a + 100
constexpr int32_t kMixAiv = 3;     // AIV part: in a, out b: b[8..16) = a + 200
constexpr int32_t kSpmd = 4;       // AIV, 4 blocks: in a, out b: b[block's 4] = a + 10 * block
constexpr int32_t kSigned = 5;     // AIV, signature {In, Out} + 1 scalar: b = a + f
constexpr int32_t kIncrement = 6;  // AIV: inout a: a += 1

void add_kernel(int64_t* args) {
  const float* a = kernel::tensor_arg<const float>(args, 0);
  float* b = kernel::tensor_arg<float>(args, 1);
  const auto f = kernel::scalar_arg<float>(args, 2);
  for (uint64_t i = 0; i < kN; ++i) b[i] = a[i] + f;
}
void double_kernel(int64_t* args) {
  const float* a = kernel::tensor_arg<const float>(args, 0);
  float* b = kernel::tensor_arg<float>(args, 1);
  for (uint64_t i = 0; i < kN; ++i) b[i] = 2 * a[i];
}
void mix_aic_kernel(int64_t* args) {
  const float* a = kernel::tensor_arg<const float>(args, 0);
  float* b = kernel::tensor_arg<float>(args, 1);
  for (uint64_t i = 0; i < kN / 2; ++i) b[i] = a[i] + 100;
}
void mix_aiv_kernel(int64_t* args) {
  const float* a = kernel::tensor_arg<const float>(args, 0);
  float* b = kernel::tensor_arg<float>(args, 1);
  for (uint64_t i = kN / 2; i < kN; ++i) b[i] = a[i] + 200;
}
void spmd_kernel(int64_t* args) {
  const float* a = kernel::tensor_arg<const float>(args, 0);
  float* b = kernel::tensor_arg<float>(args, 1);
  const uint32_t block = kernel::block_idx(args);
  const uint32_t blocks = kernel::block_num(args);
  const uint64_t per = kN / blocks;
  for (uint64_t i = block * per; i < (block + 1) * per; ++i) b[i] = a[i] + 10.0f * block;
}
void increment_kernel(int64_t* args) {
  float* a = kernel::tensor_arg<float>(args, 0);
  for (uint64_t i = 0; i < kN; ++i) a[i] += 1;
}

// Run arguments: 0 x (In, x[i] = i), 1 y (InOut, zero), 2 flags (In, int32 {0, 1}).
const Tensor& x_of(const TaskArgs& run) {
  return run.tensor(0);
}
const Tensor& y_of(const TaskArgs& run) {
  return run.tensor(1);
}
Tensor flag_of(const TaskArgs& run, uint64_t index) {
  return run.tensor(2).view({1}, {index});
}

TaskArgs add_args(const Tensor& a, const Tensor& b, float f) {
  TaskArgs t;
  t.in(a).output_existing(b).scalar(f);
  return t;
}

// What a case observed through the Orchestration API, beyond the run's outcome (written by the
// orchestration function; the run returning orders it before the test reads it).
std::string g_observed;

struct Case {
  const char* name;
  OrchestrationEntry orchestration;
  // Success: y's expected contents (x[i] = i on entry, y zero), else empty.
  std::vector<float> (*expected_y)() = nullptr;
  // Failure: the code and full message (addresses normalised).
  StatusCode code = StatusCode::Ok;
  const char* message = "";
  // Expected g_observed, when the case records observations.
  const char* observed = "";
  // Success: RunReport::task_count, when >= 0 (every successful case must report the same count
  // on every variant and mode either way).
  int64_t task_count = -1;
  // CallConfig::user_data of the run (none when null); the runner passes it from an odd address,
  // so the orchestration sees the run's aligned copy, not the caller's bytes.
  std::vector<uint8_t> (*user_data)() = nullptr;
};

std::vector<float> y_where(float (*f)(uint64_t)) {
  std::vector<float> y(kN);
  for (uint64_t i = 0; i < kN; ++i) y[i] = f(i);
  return y;
}

// ---- features --------------------------------------------------------------------------------

// in / out / output_existing with a scalar: y = (x + 1) + 2.
void in_out_existing(Orchestration& o, const TaskArgs& run) {
  TaskArgs first;
  first.in(x_of(run)).out({kN}, DataType::F32).scalar(1.0f);
  o.submit(kAdd, CoreType::AIV, first);
  TaskArgs second = add_args(first.output(0), y_of(run), 2.0f);
  o.submit(kAdd, CoreType::AIV, second);
}
// inout: y = x, then three increments in order.
void inout_chain(Orchestration& o, const TaskArgs& run) {
  TaskArgs copy = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(kAdd, CoreType::AIV, copy);
  for (int k = 0; k < 3; ++k) {
    TaskArgs inc;
    inc.inout(y_of(run));
    o.submit(kIncrement, CoreType::AIV, inc);
  }
}
// no_dep with after(): the increment names its producer explicitly.
void no_dep_after(Orchestration& o, const TaskArgs& run) {
  TaskArgs copy = add_args(x_of(run), y_of(run), 5.0f);
  const TaskId producer = o.submit(kAdd, CoreType::AIV, copy);
  TaskArgs inc;
  inc.no_dep(y_of(run)).after(producer);
  o.submit(kIncrement, CoreType::AIV, inc);
}
// AIC task, then a dummy joining it, then the AIV task after the dummy.
void aic_and_dummy(Orchestration& o, const TaskArgs& run) {
  TaskArgs twice;
  twice.in(x_of(run)).out({kN}, DataType::F32);
  const TaskId doubled = o.submit(kDouble, CoreType::AIC, twice);
  TaskArgs join;
  join.after(doubled).out({kN}, DataType::F32);
  o.submit_dummy(join);
  TaskArgs last = add_args(twice.output(0), y_of(run), 1.0f);
  o.submit(kAdd, CoreType::AIV, last);
}
void mix_task(Orchestration& o, const TaskArgs& run) {
  TaskArgs args;
  args.in(x_of(run)).output_existing(y_of(run));
  o.submit(TaskSpec::mixed({.aic = kMixAic, .aiv0 = kMixAiv, .aiv1 = -1}), args);
}
void spmd_task(Orchestration& o, const TaskArgs& run) {
  TaskArgs args;
  args.in(x_of(run)).output_existing(y_of(run));
  o.submit(TaskSpec::kernel(kSpmd, CoreType::AIV, 4), args);
}
// Predicated tasks: flag 0 skips (y stays x + 1), flag 1 runs (one increment).
void predicates(Orchestration& o, const TaskArgs& run) {
  TaskArgs copy = add_args(x_of(run), y_of(run), 1.0f);
  o.submit(kAdd, CoreType::AIV, copy);
  TaskArgs skipped;
  skipped.inout(y_of(run)).when(flag_of(run, 0));
  o.submit(kIncrement, CoreType::AIV, skipped);
  TaskArgs taken;
  taken.inout(y_of(run)).when(flag_of(run, 1));
  o.submit(kIncrement, CoreType::AIV, taken);
}
// A manual scope: dependencies only through after().
void manual_scope(Orchestration& o, const TaskArgs& run) {
  Scope scope(o, ScopeMode::Manual);
  TaskArgs copy = add_args(x_of(run), y_of(run), 0.0f);
  const TaskId first = o.submit(kAdd, CoreType::AIV, copy);
  TaskArgs inc;
  inc.inout(y_of(run)).after(first);
  const TaskId second = o.submit(kIncrement, CoreType::AIV, inc);
  TaskArgs again;
  again.inout(y_of(run)).after(second);
  o.submit(kIncrement, CoreType::AIV, again);
}
// Nested scopes: auto in auto, manual in auto, manual in manual; outputs of inner scopes used
// inside them, the result carried out through y.
void nested_scopes(Orchestration& o, const TaskArgs& run) {
  Scope outer(o);
  TaskArgs a;
  a.in(x_of(run)).out({kN}, DataType::F32).scalar(1.0f);
  o.submit(kAdd, CoreType::AIV, a);
  {
    Scope inner(o);
    TaskArgs b;
    b.in(a.output(0)).out({kN}, DataType::F32).scalar(1.0f);
    o.submit(kAdd, CoreType::AIV, b);
    TaskArgs c = add_args(b.output(0), y_of(run), 1.0f);
    o.submit(kAdd, CoreType::AIV, c);
  }
  const TaskId last_auto = static_cast<TaskId>(o.task_count()) - 1;
  Scope manual(o, ScopeMode::Manual);
  Scope manual_inner(o, ScopeMode::Manual);
  TaskArgs inc;
  inc.inout(y_of(run)).after(last_auto);
  o.submit(kIncrement, CoreType::AIV, inc);
}
// allocate: an output filled in place, then copied into y.
void allocate_then_fill(Orchestration& o, const TaskArgs& run) {
  TaskArgs buffer;
  buffer.out({kN}, DataType::F32);
  o.allocate(buffer);
  const Tensor acc = buffer.output(0);
  TaskArgs fill = add_args(x_of(run), acc, 3.0f);
  o.submit(kAdd, CoreType::AIV, fill);
  TaskArgs inc;
  inc.inout(acc);
  o.submit(kIncrement, CoreType::AIV, inc);
  TaskArgs copy = add_args(acc, y_of(run), 0.0f);
  o.submit(kAdd, CoreType::AIV, copy);
}
// get_tensor_data of an input, set_tensor_data of y before any task uses it.
void tensor_data(Orchestration& o, const TaskArgs& run) {
  std::array<float, kN> x{};
  o.get_tensor_data(x_of(run), x.data(), kBytes);
  std::array<float, kN> y{};
  for (uint64_t i = 0; i < kN; ++i) y[i] = x[i] * 3;
  o.set_tensor_data(y_of(run), y.data(), kBytes);
  TaskArgs inc;
  inc.inout(y_of(run));
  o.submit(kIncrement, CoreType::AIV, inc);
}
// task_count and cluster_count through the API.
void counts(Orchestration& o, const TaskArgs& run) {
  TaskArgs copy = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(kAdd, CoreType::AIV, copy);
  g_observed = "tasks " + std::to_string(o.task_count()) + ", clusters " +
               std::to_string(o.cluster_count()) + ", failed " + std::to_string(o.failed());
}

// ---- errors ----------------------------------------------------------------------------------

void unknown_func_id(Orchestration& o, const TaskArgs& run) {
  TaskArgs args = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(9, CoreType::AIV, args);
}
void core_type_mismatch(Orchestration& o, const TaskArgs& run) {
  TaskArgs args = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(kAdd, CoreType::AIC, args);
}
void core_type_value(Orchestration& o, const TaskArgs& run) {
  TaskArgs args = add_args(x_of(run), y_of(run), 0.0f);
  TaskSpec spec = TaskSpec::kernel(kAdd, CoreType::AIV);
  spec.core = static_cast<CoreType>(7);
  o.submit(spec, args);
}
void block_num_zero(Orchestration& o, const TaskArgs& run) {
  TaskArgs args = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(TaskSpec::kernel(kAdd, CoreType::AIV, 0), args);
}
void mix_without_kernels(Orchestration& o, const TaskArgs& run) {
  TaskArgs args = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(TaskSpec::mixed({}), args);
}
void mix_part_on_wrong_core(Orchestration& o, const TaskArgs& run) {
  TaskArgs args = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(TaskSpec::mixed({.aic = kMixAiv, .aiv0 = -1, .aiv1 = -1}), args);
}
void signature_tensor_count(Orchestration& o, const TaskArgs& run) {
  TaskArgs args;
  args.in(x_of(run)).scalar(1.0f);
  o.submit(kSigned, CoreType::AIV, args);
}
void signature_tag(Orchestration& o, const TaskArgs& run) {
  TaskArgs args;
  args.in(x_of(run)).inout(y_of(run)).scalar(1.0f);
  o.submit(kSigned, CoreType::AIV, args);
}
void signature_scalar_count(Orchestration& o, const TaskArgs& run) {
  TaskArgs args;
  args.in(x_of(run)).out({kN}, DataType::F32);
  o.submit(kSigned, CoreType::AIV, args);
}
void later_dependency(Orchestration& o, const TaskArgs& run) {
  TaskArgs args = add_args(x_of(run), y_of(run), 0.0f);
  args.after(5);
  o.submit(kAdd, CoreType::AIV, args);
}
void first_task_dependency(Orchestration& o, const TaskArgs& run) {
  TaskArgs args;
  args.in(x_of(run)).after(0);
  o.submit_dummy(args);
}
void rank_zero(Orchestration& o, const TaskArgs& run) {
  Tensor bad = x_of(run);
  bad.ndim = 0;
  TaskArgs args;
  args.in(bad).output_existing(y_of(run)).scalar(0.0f);
  o.submit(kAdd, CoreType::AIV, args);
}
void dtype_value(Orchestration& o, const TaskArgs& run) {
  Tensor bad = x_of(run);
  bad.dtype = static_cast<DataType>(200);
  TaskArgs args;
  args.in(bad).output_existing(y_of(run)).scalar(0.0f);
  o.submit(kAdd, CoreType::AIV, args);
}
void view_out_of_bounds(Orchestration& o, const TaskArgs& run) {
  Tensor bad = x_of(run);
  bad.shape[0] = kN + 1;
  TaskArgs args;
  args.in(bad).output_existing(y_of(run)).scalar(0.0f);
  o.submit(kAdd, CoreType::AIV, args);
}
// Host memory that no device allocation can cover: an address made up by the orchestration.
// (x + 1 MiB was used before and landed in the output heap on some machines.)
alignas(64) std::array<float, kN * 4> g_not_device_memory{};
uint64_t made_up_address() {
  return reinterpret_cast<uintptr_t>(g_not_device_memory.data());
}

void made_up_buffer(Orchestration& o, const TaskArgs& run) {
  Tensor bad = x_of(run);
  bad.buffer.addr = made_up_address();
  TaskArgs args;
  args.in(bad).output_existing(y_of(run)).scalar(0.0f);
  o.submit(kAdd, CoreType::AIV, args);
}
void float_predicate(Orchestration& o, const TaskArgs& run) {
  TaskArgs args;
  args.inout(y_of(run)).when(x_of(run));
  o.submit(kIncrement, CoreType::AIV, args);
}
void predicate_made_up_buffer(Orchestration& o, const TaskArgs& run) {
  Tensor flag = flag_of(run, 1);
  flag.buffer.addr = made_up_address();
  TaskArgs args;
  args.inout(y_of(run)).when(flag);
  o.submit(kIncrement, CoreType::AIV, args);
}
void scope_mode_value(Orchestration& o, const TaskArgs&) {
  o.scope_begin(static_cast<ScopeMode>(3));
}
void auto_inside_manual(Orchestration& o, const TaskArgs&) {
  o.scope_begin(ScopeMode::Manual);
  o.scope_begin(ScopeMode::Auto);
}
void scope_end_without_begin(Orchestration& o, const TaskArgs&) {
  o.scope_end();
}
void scope_left_open(Orchestration& o, const TaskArgs&) {
  o.scope_begin();
}
void allocate_in(Orchestration& o, const TaskArgs& run) {
  TaskArgs args;
  args.out({kN}, DataType::F32).in(x_of(run));
  o.allocate(args);
}
void allocate_scalar(Orchestration& o, const TaskArgs&) {
  TaskArgs args;
  args.out({kN}, DataType::F32).scalar(1.0f);
  o.allocate(args);
}
void allocate_after(Orchestration& o, const TaskArgs& run) {
  TaskArgs first = add_args(x_of(run), y_of(run), 0.0f);
  const TaskId id = o.submit(kAdd, CoreType::AIV, first);
  TaskArgs args;
  args.out({kN}, DataType::F32).after(id);
  o.allocate(args);
}
void allocate_predicate(Orchestration& o, const TaskArgs& run) {
  TaskArgs args;
  args.out({kN}, DataType::F32).when(flag_of(run, 1));
  o.allocate(args);
}
void released_output(Orchestration& o, const TaskArgs& run) {
  Tensor kept;
  {
    Scope scope(o);
    TaskArgs a;
    a.in(x_of(run)).out({kN}, DataType::F32).scalar(1.0f);
    o.submit(kAdd, CoreType::AIV, a);
    kept = a.output(0);
  }
  TaskArgs b = add_args(kept, y_of(run), 0.0f);
  o.submit(kAdd, CoreType::AIV, b);
}
void get_wrong_bytes(Orchestration& o, const TaskArgs& run) {
  std::array<float, kN> x{};
  o.get_tensor_data(x_of(run), x.data(), kBytes - 4);
}
void get_null_destination(Orchestration& o, const TaskArgs& run) {
  o.get_tensor_data(x_of(run), nullptr, kBytes);
}
void set_null_source(Orchestration& o, const TaskArgs& run) {
  o.set_tensor_data(y_of(run), nullptr, kBytes);
}
void get_rank_zero(Orchestration& o, const TaskArgs& run) {
  Tensor bad = x_of(run);
  bad.ndim = 0;
  std::array<float, kN> x{};
  o.get_tensor_data(bad, x.data(), kBytes);
}
void get_out_of_bounds(Orchestration& o, const TaskArgs& run) {
  Tensor bad = x_of(run);
  bad.start_offset = 1;
  std::array<float, kN> x{};
  o.get_tensor_data(bad, x.data(), kBytes);
}
void get_made_up_buffer(Orchestration& o, const TaskArgs& run) {
  Tensor bad = x_of(run);
  bad.buffer.addr = made_up_address();
  std::array<float, kN> x{};
  o.get_tensor_data(bad, x.data(), kBytes);
}
void throws_error(Orchestration& o, const TaskArgs& run) {
  TaskArgs args = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(kAdd, CoreType::AIV, args);
  throw Error(StatusCode::InvalidArgument, "step 3 found no tile");
}
// Longer than any fixed message buffer between chip and host.
void throws_long_error(Orchestration&, const TaskArgs&) {
  throw Error(StatusCode::InvalidArgument, "long: " + std::string(3000, 'x'));
}
// A code the watchdog also uses: the function's own error, so the device stays usable.
void throws_scheduler_timeout(Orchestration&, const TaskArgs&) {
  throw Error(StatusCode::SchedulerTimeout, "the function gave up waiting");
}
// An Error that claims success is still a thrown exception: the run must not succeed.
void throws_ok_error(Orchestration& o, const TaskArgs& run) {
  TaskArgs args = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(kAdd, CoreType::AIV, args);
  throw Error(StatusCode::Ok, "not really fine");
}
void throws_empty_error(Orchestration&, const TaskArgs&) {
  throw Error(StatusCode::InvalidArgument, "");
}
void throws_error_with_nul(Orchestration&, const TaskArgs&) {
  throw Error(StatusCode::InvalidArgument, std::string("before\0after", 12));
}
void throws_std(Orchestration&, const TaskArgs&) {
  throw std::runtime_error("boom at step 3");
}
void throws_int(Orchestration&, const TaskArgs&) {
  throw 42;
}
// The first error latches: later calls are no-ops, an exception thrown afterwards loses to it.
void latched(Orchestration& o, const TaskArgs& run) {
  unknown_func_id(o, run);
  TaskArgs fine = add_args(x_of(run), y_of(run), 0.0f);
  const TaskId id = o.submit(kAdd, CoreType::AIV, fine);
  o.scope_end();
  g_observed = "id " + std::to_string(id) + ", tasks " + std::to_string(o.task_count()) +
               ", failed " + std::to_string(o.failed()) + ", error " +
               std::string(status_name(o.error().code()));
  throw std::runtime_error("a consequence");
}

// ---- issue 13: write-after-read ------------------------------------------------------------
// A writer waits for the earlier readers of what it overwrites. Each case delays a reader (a slow
// copy kernel) so that a writer not ordered after it overwrites the data before it is read: the
// result then differs (threaded runs; a serial run executes in submission order either way).

constexpr int32_t kSlowCopy = 20;   // AIV: in a, out b, scalar n: sleeps, then b[0..n) = a[0..n)
constexpr int32_t kClearFlag = 21;  // AIV: output_existing f (i32): f[0] = 0

void slow_copy_kernel(int64_t* args) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const float* a = kernel::tensor_arg<const float>(args, 0);
  float* b = kernel::tensor_arg<float>(args, 1);
  const auto n = kernel::scalar_arg<uint64_t>(args, 2);
  for (uint64_t i = 0; i < n; ++i) b[i] = a[i];
}
void clear_flag_kernel(int64_t* args) {
  kernel::tensor_arg<int32_t>(args, 0)[0] = 0;
}

// A slow reader of y, then an inout of y: the reader must see y before the increment.
// y = x; tmp = y (slow); y += 1; y = tmp + 10.
void war_slow_reader_then_inout(Orchestration& o, const TaskArgs& run) {
  TaskArgs copy = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(kAdd, CoreType::AIV, copy);
  TaskArgs read;
  read.in(y_of(run)).out({kN}, DataType::F32).scalar(kN);
  o.submit(kSlowCopy, CoreType::AIV, read);
  TaskArgs inc;
  inc.inout(y_of(run));
  o.submit(kIncrement, CoreType::AIV, inc);
  TaskArgs last = add_args(read.output(0), y_of(run), 10.0f);
  o.submit(kAdd, CoreType::AIV, last);
}
// Slow readers of each half of y, then an output_existing of the whole of y: it waits for both.
// y = x; lo, hi = halves of y (slow); y = x + 100; y halves = lo, hi.
void war_subview_readers_then_whole_writer(Orchestration& o, const TaskArgs& run) {
  TaskArgs copy = add_args(x_of(run), y_of(run), 0.0f);
  o.submit(kAdd, CoreType::AIV, copy);
  const Tensor halves[2] = {y_of(run).view({kN / 2}, {0}), y_of(run).view({kN / 2}, {kN / 2})};
  TaskArgs reads[2];
  for (int h = 0; h < 2; ++h) {
    reads[h].in(halves[h]).out({kN / 2}, DataType::F32).scalar(kN / 2);
    o.submit(kSlowCopy, CoreType::AIV, reads[h]);
  }
  TaskArgs overwrite = add_args(x_of(run), y_of(run), 100.0f);
  o.submit(kAdd, CoreType::AIV, overwrite);
  for (int h = 0; h < 2; ++h) {
    TaskArgs back;
    back.in(reads[h].output(0)).output_existing(halves[h]).scalar(kN / 2);
    o.submit(kSlowCopy, CoreType::AIV, back);
  }
}
// A predicate flag read, then overwritten: the predicated task (held back by a slow producer of
// y) must see the flag before the clearing task runs. y = x (slow); y += 1 when flag 1; flag 1 = 0.
void war_predicate_flag_overwritten(Orchestration& o, const TaskArgs& run) {
  TaskArgs copy;
  copy.in(x_of(run)).output_existing(y_of(run)).scalar(kN);
  o.submit(kSlowCopy, CoreType::AIV, copy);
  TaskArgs inc;
  inc.inout(y_of(run)).when(flag_of(run, 1));
  o.submit(kIncrement, CoreType::AIV, inc);
  TaskArgs clear;
  clear.output_existing(flag_of(run, 1));
  o.submit(kClearFlag, CoreType::AIV, clear);
}

// The message of throws_long_error as both variants report it: an error's message is cut at
// 1023 bytes (orchestration.h), the bound of the chip's result detail.
const std::string kLongText = ("long: " + std::string(3000, 'x')).substr(0, 1023);
const char* const kLongMessage = kLongText.c_str();

// ---- issue 13: user data for the orchestration function
// The user data is a program: float addends, one chained task each, the last writing y, so the
// graph's shape and its scalars follow the bytes. Records what the function saw of its copy.
void user_data_program(Orchestration& o, const TaskArgs& run) {
  const std::span<const std::byte> data = o.user_data();
  const auto address = reinterpret_cast<std::uintptr_t>(data.data());
  g_observed = "bytes " + std::to_string(data.size()) + ", aligned " +
               std::to_string(address % CallConfig::kUserDataAlign == 0);
  std::vector<float> addends(data.size() / sizeof(float));
  if (!addends.empty()) std::memcpy(addends.data(), data.data(), addends.size() * sizeof(float));
  Tensor current = x_of(run);
  for (std::size_t i = 0; i + 1 < addends.size(); ++i) {
    TaskArgs step;
    step.in(current).out({kN}, DataType::F32).scalar(addends[i]);
    o.submit(kAdd, CoreType::AIV, step);
    current = step.output(0);
  }
  TaskArgs last = add_args(current, y_of(run), addends.empty() ? 0.0f : addends.back());
  o.submit(kAdd, CoreType::AIV, last);
  g_observed += ", tasks " + std::to_string(o.task_count());
}
// The most user data a run takes, every byte delivered: y = x + the last byte.
void user_data_at_limit(Orchestration& o, const TaskArgs& run) {
  const std::span<const std::byte> data = o.user_data();
  bool intact = data.size() == CallConfig::kMaxUserDataBytes;
  for (std::size_t i = 0; intact && i < data.size(); ++i) {
    intact = data[i] == static_cast<std::byte>(i % 251);
  }
  g_observed = "bytes " + std::to_string(data.size()) + ", intact " + std::to_string(intact);
  TaskArgs copy =
      add_args(x_of(run), y_of(run),
               data.empty() ? 0.0f : static_cast<float>(std::to_integer<int>(data.back())));
  o.submit(kAdd, CoreType::AIV, copy);
}
std::vector<uint8_t> addends_bytes(std::initializer_list<float> addends) {
  std::vector<uint8_t> bytes(addends.size() * sizeof(float));
  std::memcpy(bytes.data(), std::data(addends), bytes.size());
  return bytes;
}
std::vector<uint8_t> pattern_bytes(uint64_t count) {
  std::vector<uint8_t> bytes(count);
  for (uint64_t i = 0; i < count; ++i) bytes[i] = static_cast<uint8_t>(i % 251);
  return bytes;
}

// ---- issue 13: predicated-off outputs and task ids (item D) --------------------------------

// Leaves non-zero data where the next scope's first runtime output will be placed, on both
// variants: four scopes each allocate a quarter of the output heap (a whole ring heap of depth 1
// on tensormap_ringbuffer, CallConfig::output_heap_bytes / 4) and write x + 99 into its first
// elements. host_build_graph's cursor then stands at the heap end and the next output wraps to
// offset 0 (S1's released block); the ring heap of depth 1 is full until S4 retires and then
// rebases to offset 0. Either way the next output lies on x + 99.
constexpr uint64_t kQuarterHeapFloats = (uint64_t{1} << 20) / 4 / sizeof(float);
void dirty_heap(Orchestration& o, const TaskArgs& run) {
  for (int s = 0; s < 4; ++s) {
    Scope scope(o);
    TaskArgs quarter;
    quarter.out({kQuarterHeapFloats}, DataType::F32);
    o.allocate(quarter);
    TaskArgs dirt = add_args(x_of(run), quarter.output(0).view({kN}, {0}), 99.0f);
    o.submit(kAdd, CoreType::AIV, dirt);
  }
}
// A skipped task's out reads zeros, its inout keeps its contents: y = x + 1; the skipped task
// names y inout and allocates o; a predicated-on task computes t = o + 3; the MIX task's AIC part
// writes y[0, 8) = t + 100 = 103 and leaves y[8, 16) = x + 1.
void skipped_out_reads_zero(Orchestration& o, const TaskArgs& run) {
  dirty_heap(o, run);
  Scope scope(o);
  TaskArgs base = add_args(x_of(run), y_of(run), 1.0f);
  o.submit(kAdd, CoreType::AIV, base);
  TaskArgs skipped;
  skipped.inout(y_of(run)).out({kN}, DataType::F32).scalar(5.0f).when(flag_of(run, 0));
  o.submit(kAdd, CoreType::AIV, skipped);
  TaskArgs taken;
  taken.in(skipped.output(0)).out({kN}, DataType::F32).scalar(3.0f).when(flag_of(run, 1));
  o.submit(kAdd, CoreType::AIV, taken);
  TaskArgs half;
  half.in(taken.output(0)).output_existing(y_of(run));
  o.submit(TaskSpec::mixed({.aic = kMixAic, .aiv0 = -1, .aiv1 = -1}), half);
}
// A skipped SPMD task's out reads zeros (filled once, not per block): y = o + 2.
void skipped_spmd_out_reads_zero(Orchestration& o, const TaskArgs& run) {
  dirty_heap(o, run);
  Scope scope(o);
  TaskArgs skipped;
  skipped.in(x_of(run)).out({kN}, DataType::F32).when(flag_of(run, 0));
  o.submit(TaskSpec::kernel(kSpmd, CoreType::AIV, 4), skipped);
  TaskArgs into_y = add_args(skipped.output(0), y_of(run), 2.0f);
  o.submit(kAdd, CoreType::AIV, into_y);
}

// Task ids are the user's tasks on both variants: three scopes owning outputs (host_build_graph
// ends each with an internal fence) take ids 0-2, the next tasks 3-5; after() names them, and in
// a manual scope after() is the only order: y = x, then two increments.
void ids_skip_scope_fences(Orchestration& o, const TaskArgs& run) {
  std::string ids = "ids";
  for (int s = 0; s < 3; ++s) {
    Scope scope(o);
    TaskArgs a;
    a.in(x_of(run)).out({kN}, DataType::F32).scalar(1.0f);
    ids += " " + std::to_string(o.submit(kAdd, CoreType::AIV, a));
  }
  TaskArgs copy = add_args(x_of(run), y_of(run), 0.0f);
  const TaskId copied = o.submit(kAdd, CoreType::AIV, copy);
  ids += " " + std::to_string(copied);
  Scope manual(o, ScopeMode::Manual);
  TaskArgs inc;
  inc.inout(y_of(run)).after(copied);
  const TaskId first = o.submit(kIncrement, CoreType::AIV, inc);
  TaskArgs again;
  again.inout(y_of(run)).after(first);
  ids += " " + std::to_string(first) + " " +
         std::to_string(o.submit(kIncrement, CoreType::AIV, again));
  g_observed = ids + ", tasks " + std::to_string(o.task_count());
}
// after() past the last task, behind two scopes owning outputs: both variants count 2 tasks.
void after_beyond_scope_fences(Orchestration& o, const TaskArgs& run) {
  for (int s = 0; s < 2; ++s) {
    Scope scope(o);
    TaskArgs a;
    a.in(x_of(run)).out({kN}, DataType::F32).scalar(1.0f);
    o.submit(kAdd, CoreType::AIV, a);
  }
  TaskArgs late = add_args(x_of(run), y_of(run), 0.0f);
  late.after(2);
  o.submit(kAdd, CoreType::AIV, late);
}

// ---- issue 13: kernels see their views; the block context without the arity
constexpr int32_t kViewAdd = 22;  // AIV: in a, out b (2-D views, same shape), scalar f: b = a + f
constexpr int32_t kSumInto = 23;  // AIV, any arity: last tensor = sum of the others + the scalars

// Walks both views through their own geometry (shape, strides, start offset), so a wrong
// descriptor gives a wrong y; a descriptor that disagrees with the arguments is a kernel fault.
void view_add_kernel(int64_t* args) {
  const kernel::TensorView& a = kernel::view(args, 0);
  const kernel::TensorView& b = kernel::view(args, 1);
  const bool described = kernel::tensor_count(args) == 2 && kernel::scalar_count(args) == 1 &&
                         a.dtype == static_cast<uint8_t>(DataType::F32) &&
                         b.element_bytes == sizeof(float) && a.ndim == 2 && b.ndim == 2 &&
                         a.shape(0) == b.shape(0) && a.shape(1) == b.shape(1) &&
                         a.data_addr() == static_cast<uint64_t>(args[0]) &&
                         b.data_addr() == static_cast<uint64_t>(args[1]);
  if (!described) throw std::runtime_error("view_add: the views do not describe the arguments");
  const auto f = kernel::scalar_arg<float>(args, 2);
  for (uint64_t i = 0; i < a.shape(0); ++i) {
    for (uint64_t j = 0; j < a.shape(1); ++j)
      *b.element<float>(i, j) = *a.element<const float>(i, j) + f;
  }
}
// Reads its arity, its block and the output's length from the argument block only.
void sum_into_kernel(int64_t* args) {
  const int tensors = kernel::tensor_count(args);
  const int scalars = kernel::scalar_count(args);
  float add = 0;
  for (int s = 0; s < scalars; ++s) add += kernel::scalar_arg<float>(args, tensors + s);
  const kernel::TensorView& out = kernel::view(args, tensors - 1);
  const uint64_t per = out.shape(0) / kernel::block_num(args);
  const uint64_t first = kernel::block_idx(args) * per;
  for (uint64_t i = first; i < first + per; ++i) {
    float sum = add;
    for (int t = 0; t + 1 < tensors; ++t) sum += *kernel::view(args, t).element<const float>(i);
    *out.element<float>(i) = sum;
  }
}

// y (as 4x4) rows 2..3, columns 1..3 = x (as 4x4) transposed, rows 1..2, columns 1..3, + 0.5:
// a strided view with a start offset on each side, a transposed one read.
void kernel_reads_views(Orchestration& o, const TaskArgs& run) {
  const Tensor x = Tensor::make(x_of(run).buffer, {4, 4}, DataType::F32);
  const Tensor y = Tensor::make(y_of(run).buffer, {4, 4}, DataType::F32);
  TaskArgs t;
  t.in(x.transpose(0, 1).view({2, 3}, {1, 1})).output_existing(y.view({2, 3}, {2, 1})).scalar(0.5f);
  o.submit(kViewAdd, CoreType::AIV, t);
}
std::vector<float> kernel_reads_views_y() {
  std::vector<float> y(kN, 0.0f);
  for (uint64_t i = 0; i < 2; ++i) {
    for (uint64_t j = 0; j < 3; ++j) y[4 * (i + 2) + (j + 1)] = float(4 * (j + 1) + (i + 1)) + 0.5f;
  }
  return y;
}
// One func_id, two arities: t = x + 1 in 4 blocks (2 tensors, 1 scalar), then one block
// y = x + t + 2 + 3 (3 tensors, 2 scalars) = 2x + 6.
void arity_free_block_context(Orchestration& o, const TaskArgs& run) {
  TaskArgs first;
  first.in(x_of(run)).out({kN}, DataType::F32).scalar(1.0f);
  o.submit(TaskSpec::kernel(kSumInto, CoreType::AIV, 4), first);
  TaskArgs second;
  second.in(x_of(run)).in(first.output(0)).output_existing(y_of(run)).scalar(2.0f).scalar(3.0f);
  o.submit(kSumInto, CoreType::AIV, second);
}

const Case kCases[] = {
    {"InOutExisting", &in_out_existing,
     [] { return y_where([](uint64_t i) { return i + 3.0f; }); }},
    {"InOutChain", &inout_chain, [] { return y_where([](uint64_t i) { return i + 3.0f; }); }},
    {"NoDepAfter", &no_dep_after, [] { return y_where([](uint64_t i) { return i + 6.0f; }); }},
    {"AicAndDummy", &aic_and_dummy,
     [] { return y_where([](uint64_t i) { return 2.0f * i + 1; }); }},
    {"Mix", &mix_task,
     [] { return y_where([](uint64_t i) { return i + (i < kN / 2 ? 100.0f : 200.0f); }); }},
    {"SpmdBlocks", &spmd_task,
     [] { return y_where([](uint64_t i) { return i + 10.0f * static_cast<float>(i / 4); }); }},
    {"Predicates", &predicates, [] { return y_where([](uint64_t i) { return i + 2.0f; }); }},
    {"ManualScope", &manual_scope, [] { return y_where([](uint64_t i) { return i + 2.0f; }); }},
    {"NestedScopes", &nested_scopes, [] { return y_where([](uint64_t i) { return i + 4.0f; }); }},
    {"Allocate", &allocate_then_fill, [] { return y_where([](uint64_t i) { return i + 4.0f; }); }},
    {"TensorData", &tensor_data, [] { return y_where([](uint64_t i) { return 3.0f * i + 1; }); }},
    {"Counts", &counts, [] { return y_where([](uint64_t i) { return float(i); }); }, StatusCode::Ok,
     "", "tasks 1, clusters 2, failed 0"},

    {"UnknownFuncId", &unknown_func_id, nullptr, StatusCode::UnknownFuncId,
     "func_id 9 is not provided by the active callable (submitted as task 0 (func_id 9))"},
    {"CoreTypeMismatch", &core_type_mismatch, nullptr, StatusCode::CoreTypeMismatch,
     "func_id 0 runs on aiv cores but task 0 (func_id 0) was submitted to aic"},
    {"CoreTypeValue", &core_type_value, nullptr, StatusCode::InvalidArgument,
     "task 0: core type value 7 is not a CoreType"},
    {"BlockNumZero", &block_num_zero, nullptr, StatusCode::InvalidArgument,
     "task 0 (func_id 0, 0 blocks): block_num 0 is outside [1, 65535] (kMaxBlockNum)"},
    {"MixWithoutKernels", &mix_without_kernels, nullptr, StatusCode::InvalidArgument,
     "task 0 (mix -1/-1/-1): a MIX task needs at least one kernel (every part of MixKernels is "
     "-1)"},
    {"MixPartOnWrongCore", &mix_part_on_wrong_core, nullptr, StatusCode::CoreTypeMismatch,
     "func_id 3 runs on aiv cores but task 0 (mix 3/-1/-1) part aic was submitted to aic"},
    {"SignatureTensorCount", &signature_tensor_count, nullptr, StatusCode::SignatureMismatch,
     "func_id 5: expected 2 tensor args, got 1 (task 0 (func_id 5))"},
    {"SignatureTag", &signature_tag, nullptr, StatusCode::SignatureMismatch,
     "func_id 5 arg 1: expected out, got inout (task 0 (func_id 5))"},
    {"SignatureScalarCount", &signature_scalar_count, nullptr, StatusCode::SignatureMismatch,
     "func_id 5: expected 1 scalar args, got 0 (task 0 (func_id 5))"},
    {"LaterDependency", &later_dependency, nullptr, StatusCode::InvalidTask,
     "task 0 (func_id 0): explicit dependency on task 5 is not an earlier task of this run (this "
     "is the first task)"},
    {"FirstTaskDependency", &first_task_dependency, nullptr, StatusCode::InvalidTask,
     "task 0 (dummy): explicit dependency on task 0 is not an earlier task of this run (this is "
     "the first task)"},
    {"RankZero", &rank_zero, nullptr, StatusCode::InvalidArgument,
     "task 0 (func_id 0) arg 0: rank 0 is outside [1, 5]"},
    {"DtypeValue", &dtype_value, nullptr, StatusCode::InvalidArgument,
     "task 0 (func_id 0) arg 0: dtype value 200 is not a DataType"},
    {"ViewOutOfBounds", &view_out_of_bounds, nullptr, StatusCode::ViewOutOfBounds,
     "task 0 (func_id 0) arg 0: tensor Tensor(f32, shape=[17], strides=[1], offset=0, "
     "buffer=<x>+64B) covers bytes "
     "[0, 68) of a 64-byte buffer"},
    {"MadeUpBuffer", &made_up_buffer, nullptr, StatusCode::InvalidDevicePointer,
     "task 0 (func_id 0) arg 0: tensor Tensor(f32, shape=[16], strides=[1], offset=0, "
     "buffer=<addr>+64B) covers "
     "device bytes [<addr>, <addr>), which lie in no run argument's buffer and not in the run's "
     "output heap [<addr>, <addr>); a task names only memory of the run's arguments and runtime "
     "outputs of this run (a DeviceBuffer made up or enlarged by the orchestration is refused)"},
    // TaskArgs::when refuses it before it reaches either orchestrator.
    {"FloatPredicate", &float_predicate, nullptr, StatusCode::InvalidArgument,
     "when: predicate tensor has dtype f32; use an integer or bool tensor (its first element is "
     "tested)"},
    {"PredicateMadeUpBuffer", &predicate_made_up_buffer, nullptr, StatusCode::InvalidDevicePointer,
     "task 0 (func_id 6) predicate: tensor Tensor(i32, shape=[1], strides=[1], offset=1, "
     "buffer=<addr>+8B) covers device bytes [<addr>, <addr>), which lie in no run argument's "
     "buffer and not in the run's output heap [<addr>, <addr>); a task names only memory of the "
     "run's arguments and runtime outputs of this run (a DeviceBuffer made up or enlarged by the "
     "orchestration is refused)"},
    {"ScopeModeValue", &scope_mode_value, nullptr, StatusCode::InvalidArgument,
     "scope_begin: mode value 3 is not a ScopeMode (Auto 0, Manual 1)"},
    {"AutoInsideManual", &auto_inside_manual, nullptr, StatusCode::InvalidScope,
     "scope_begin(Auto) at depth 2 inside 1 open manual scope(s): the tensor map knows nothing "
     "of "
     "the manual tasks' writes; nest automatic scopes only outside manual ones (task 0 would be "
     "next)"},
    {"ScopeEndWithoutBegin", &scope_end_without_begin, nullptr, StatusCode::ScopeMismatch,
     "scope_end without a matching scope_begin (0 tasks submitted, no scope is open)"},
    {"ScopeLeftOpen", &scope_left_open, nullptr, StatusCode::ScopeMismatch,
     "1 scope(s) still open when the orchestration function returned"},
    {"AllocateIn", &allocate_in, nullptr, StatusCode::InvalidArgument,
     "allocate (task 0) arg 1: tag in; an allocation-only task takes Out tensors only (use "
     "submit_dummy to order on other tensors)"},
    {"AllocateScalar", &allocate_scalar, nullptr, StatusCode::InvalidArgument,
     "allocate (task 0): 1 scalars, 0 explicit dependencies; an allocation-only task completes "
     "at "
     "once and takes Out tensors only"},
    {"AllocateAfter", &allocate_after, nullptr, StatusCode::InvalidArgument,
     "allocate (task 1): 0 scalars, 1 explicit dependencies; an allocation-only task completes "
     "at "
     "once and takes Out tensors only"},
    {"AllocatePredicate", &allocate_predicate, nullptr, StatusCode::InvalidArgument,
     "allocate (task 0): 0 scalars, 0 explicit dependencies and a predicate; an allocation-only "
     "task completes at once and takes Out tensors only"},
    {"ReleasedOutput", &released_output, nullptr, StatusCode::InvalidTask,
     "task 1 (func_id 0) arg 0: tensor at <addr> (output of task 0) was released when its scope "
     "ended; create it in an enclosing scope to use it after that scope"},
    {"GetWrongBytes", &get_wrong_bytes, nullptr, StatusCode::InvalidArgument,
     "get_tensor_data: tensor Tensor(f32, shape=[16], strides=[1], offset=0, buffer=<x>+64B): 60 "
     "bytes given, the "
     "tensor has 64 (numel x element size)"},
    {"GetNullDestination", &get_null_destination, nullptr, StatusCode::InvalidArgument,
     "get_tensor_data: tensor Tensor(f32, shape=[16], strides=[1], offset=0, buffer=<x>+64B): "
     "the "
     "host pointer is "
     "null"},
    {"SetNullSource", &set_null_source, nullptr, StatusCode::InvalidArgument,
     "set_tensor_data: tensor Tensor(f32, shape=[16], strides=[1], offset=0, buffer=<y>+64B): "
     "the "
     "host pointer is "
     "null"},
    {"GetRankZero", &get_rank_zero, nullptr, StatusCode::InvalidArgument,
     "get_tensor_data: tensor Tensor(f32, shape=[], strides=[], offset=0, buffer=<x>+64B) has an "
     "invalid rank or "
     "dtype (rank 1..5, a DataType)"},
    {"GetOutOfBounds", &get_out_of_bounds, nullptr, StatusCode::ViewOutOfBounds,
     "get_tensor_data: tensor Tensor(f32, shape=[16], strides=[1], offset=1, buffer=<x>+64B) "
     "does "
     "not lie inside its "
     "buffer <x>+64"},
    {"GetMadeUpBuffer", &get_made_up_buffer, nullptr, StatusCode::InvalidDevicePointer,
     "get_tensor_data: tensor Tensor(f32, shape=[16], strides=[1], offset=0, buffer=<addr>+64B) "
     "covers device bytes "
     "[<addr>, <addr>), which lie in no run argument's buffer and not in the run's output heap "
     "[<addr>, <addr>); a task names only memory of the run's arguments and runtime outputs of "
     "this run (a DeviceBuffer made up or enlarged by the orchestration is refused)"},
    {"ThrowsError", &throws_error, nullptr, StatusCode::InvalidArgument, "step 3 found no tile"},
    {"ThrowsLongError", &throws_long_error, nullptr, StatusCode::InvalidArgument, kLongMessage},
    {"ThrowsSchedulerTimeout", &throws_scheduler_timeout, nullptr, StatusCode::SchedulerTimeout,
     "the function gave up waiting"},
    {"ThrowsOkError", &throws_ok_error, nullptr, StatusCode::OrchestrationFailed,
     "orchestration function threw a chiprt::Error with code Ok: not really fine"},
    // The chip's result is a C string: an empty message reads as the code's description, and a
    // message ends at its first NUL, on both variants.
    {"ThrowsEmptyError", &throws_empty_error, nullptr, StatusCode::InvalidArgument,
     "an argument is outside its allowed range"},
    {"ThrowsErrorWithNul", &throws_error_with_nul, nullptr, StatusCode::InvalidArgument, "before"},
    {"ThrowsStdException", &throws_std, nullptr, StatusCode::OrchestrationFailed,
     "orchestration function threw: boom at step 3"},
    {"ThrowsNonStd", &throws_int, nullptr, StatusCode::OrchestrationFailed,
     "orchestration function threw: an exception not derived from std::exception"},
    {"ErrorLatches", &latched, nullptr, StatusCode::UnknownFuncId,
     "func_id 9 is not provided by the active callable (submitted as task 0 (func_id 9))",
     "id -1, tasks 0, failed 1, error UnknownFuncId"},

    // ---- issue 13: user data for the orchestration function
    {.name = "UserDataProgram",
     .orchestration = &user_data_program,
     .expected_y = [] { return y_where([](uint64_t i) { return i + 6.0f; }); },
     .observed = "bytes 12, aligned 1, tasks 3",
     .user_data =
         [] {
           return addends_bytes({1.0f, 2.0f, 3.0f});
         }},
    {.name = "UserDataOtherProgram",
     .orchestration = &user_data_program,
     .expected_y = [] { return y_where([](uint64_t i) { return i + 10.0f; }); },
     .observed = "bytes 4, aligned 1, tasks 1",
     .user_data = [] { return addends_bytes({10.0f}); }},
    {.name = "UserDataEmpty",
     .orchestration = &user_data_program,
     .expected_y = [] { return y_where([](uint64_t i) { return float(i); }); },
     .observed = "bytes 0, aligned 1, tasks 1"},
    {.name = "UserDataAtLimit",
     .orchestration = &user_data_at_limit,
     .expected_y = [] { return y_where([](uint64_t i) { return i + 24.0f; }); },  // 65535 % 251
     .observed = "bytes 65536, intact 1",
     .user_data = [] { return pattern_bytes(CallConfig::kMaxUserDataBytes); }},
    {.name = "UserDataOverLimit",
     .orchestration = &user_data_at_limit,
     .code = StatusCode::InvalidConfig,
     .message = "user_data: 65537 bytes exceed the limit of 65536 "
                "(CallConfig::kMaxUserDataBytes); pass larger inputs in a device tensor (a run "
                "argument), and for replay_graph name their version in replay_key",
     .user_data = [] { return pattern_bytes(CallConfig::kMaxUserDataBytes + 1); }},

    // ---- issue 13: write-after-read
    {"WarSlowReaderThenInout", &war_slow_reader_then_inout,
     [] { return y_where([](uint64_t i) { return i + 10.0f; }); }},
    {"WarSubviewReadersThenWholeWriter", &war_subview_readers_then_whole_writer,
     [] { return y_where([](uint64_t i) { return float(i); }); }},
    {"WarPredicateFlagOverwritten", &war_predicate_flag_overwritten,
     [] { return y_where([](uint64_t i) { return i + 1.0f; }); }},

    // ---- issue 13: predicated-off outputs and task ids (item D)
    {"SkippedOutReadsZero", &skipped_out_reads_zero,
     [] { return y_where([](uint64_t i) { return i < kN / 2 ? 103.0f : i + 1.0f; }); }},
    {"SkippedSpmdOutReadsZero", &skipped_spmd_out_reads_zero,
     [] { return y_where([](uint64_t) { return 2.0f; }); }},
    {"IdsSkipScopeFences", &ids_skip_scope_fences,
     [] { return y_where([](uint64_t i) { return i + 2.0f; }); }, StatusCode::Ok, "",
     "ids 0 1 2 3 4 5, tasks 6", 6},
    {"AfterBeyondScopeFences", &after_beyond_scope_fences, nullptr, StatusCode::InvalidTask,
     "task 2 (func_id 0): explicit dependency on task 2 is not an earlier task of this run "
     "(valid: "
     "0..1)"},

    // ---- issue 13: kernels see their views; the block context without the arity
    {"KernelReadsItsViews", &kernel_reads_views, &kernel_reads_views_y},
    {"BlockContextWithoutArity", &arity_free_block_context,
     [] { return y_where([](uint64_t i) { return 2.0f * float(i) + 6.0f; }); }},
};

std::vector<uint8_t> conformance_callable() {
  return CallableBuilder()
      .orchestration_function(
          +[](Orchestration& o, const TaskArgs& run) {
            const auto index = static_cast<std::size_t>(run.scalar_bits(0));
            kCases[index].orchestration(o, run);
          },
          ArgSignature{})
      .kernel_function(kAdd, CoreType::AIV, &add_kernel, ArgSignature{})
      .kernel_function(kDouble, CoreType::AIC, &double_kernel, ArgSignature{})
      .kernel_function(kMixAic, CoreType::AIC, &mix_aic_kernel, ArgSignature{})
      .kernel_function(kMixAiv, CoreType::AIV, &mix_aiv_kernel, ArgSignature{})
      .kernel_function(kSpmd, CoreType::AIV, &spmd_kernel, ArgSignature{})
      .kernel_function(kSigned, CoreType::AIV, &add_kernel,
                       ArgSignature::of({ArgTag::In, ArgTag::Out}, 1))
      .kernel_function(kIncrement, CoreType::AIV, &increment_kernel, ArgSignature{})
      .kernel_function(kSlowCopy, CoreType::AIV, &slow_copy_kernel, ArgSignature{})
      .kernel_function(kClearFlag, CoreType::AIV, &clear_flag_kernel, ArgSignature{})
      // issue 13: kernels see their views; the block context without the arity
      .kernel_function(kViewAdd, CoreType::AIV, &view_add_kernel, ArgSignature{})
      .kernel_function(kSumInto, CoreType::AIV, &sum_into_kernel, ArgSignature{})
      .build();
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// What one run gave: the error's code and normalised message, y's bytes, the observations.
struct Outcome {
  StatusCode code = StatusCode::Ok;
  std::string message;
  std::vector<float> y;
  std::string observed;
  uint64_t task_count = 0;  // RunReport::task_count of a successful run
};

class Conformance {
 public:
  Conformance() {
    WorkerOptions options;
    options.sim.clusters = 2;
    options.sim.host_threads = 2;
    options.sim.memory_bytes = 256ull << 20;
    worker_.init(options);
    x_ = worker_.malloc(kBytes);
    y_ = worker_.malloc(kBytes);
    flags_ = worker_.malloc(2 * sizeof(int32_t));
    worker_.register_callable(0, conformance_callable());
  }

  Outcome run(std::size_t index, RuntimeVariant variant, bool serial) {
    std::array<float, kN> x{};
    for (uint64_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i);
    worker_.copy_to(x_, x.data(), kBytes);
    worker_.memset(y_, 0, kBytes);
    const int32_t flags[2] = {0, 1};
    worker_.copy_to(flags_, flags, sizeof(flags));
    TaskArgs args;
    args.in(Tensor::make(x_, {kN}, DataType::F32))
        .inout(Tensor::make(y_, {kN}, DataType::F32))
        .in(Tensor::make(flags_, {2}, DataType::I32))
        .scalar(static_cast<uint64_t>(index));
    CallConfig config;
    config.runtime = variant;
    config.serial = serial;
    config.output_heap_bytes = 1 << 20;
    config.max_tasks = 1024;
    // From an odd address: the function must see the run's aligned copy.
    std::vector<uint8_t> user_data;
    if (kCases[index].user_data != nullptr) {
      const std::vector<uint8_t> bytes = kCases[index].user_data();
      user_data.resize(bytes.size() + 1);
      std::memcpy(user_data.data() + 1, bytes.data(), bytes.size());
      config.user_data = std::as_bytes(std::span(user_data).subspan(1));
    }
    Outcome outcome;
    g_observed.clear();
    try {
      outcome.task_count = worker_.run(0, args, config).task_count;
      outcome.y.resize(kN);
      worker_.copy_from(outcome.y.data(), y_, kBytes);
    } catch (const Error& e) {
      outcome.code = e.code();
      outcome.message = normalise(e.message());
    }
    outcome.observed = g_observed;
    return outcome;
  }

 private:
  std::string normalise(std::string text) const {
    const std::pair<uint64_t, const char*> named[] = {
        {x_.addr, "<x>"}, {y_.addr, "<y>"}, {flags_.addr, "<flags>"}};
    for (const auto& [addr, name] : named) {
      const std::string h = hex(addr);
      for (std::size_t at = text.find(h); at != std::string::npos; at = text.find(h, at)) {
        // Only the whole address (0x1000 must not match inside 0x10000).
        const std::size_t end = at + h.size();
        if (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) {
          at = end;
          continue;
        }
        text.replace(at, h.size(), name);
      }
    }
    return std::regex_replace(text, std::regex("0x[0-9a-f]+"), "<addr>");
  }

  Worker worker_;
  DeviceBuffer x_;
  DeviceBuffer y_;
  DeviceBuffer flags_;
};

Conformance& conformance() {
  static Conformance* instance = new Conformance();  // one device for every case
  return *instance;
}

struct Combo {
  RuntimeVariant variant;
  bool serial;
};
constexpr Combo kCombos[] = {{RuntimeVariant::HostBuildGraph, false},
                             {RuntimeVariant::HostBuildGraph, true},
                             {RuntimeVariant::TensormapRingbuffer, false},
                             {RuntimeVariant::TensormapRingbuffer, true}};

class TaskModel : public ::testing::TestWithParam<std::size_t> {};

TEST_P(TaskModel, EveryVariantAndModeGivesTheExpectedOutcome) {
  const std::size_t index = GetParam();
  const Case& c = kCases[index];
  std::optional<uint64_t> first_task_count;  // of the first combination
  for (const Combo& combo : kCombos) {
    SCOPED_TRACE(std::string(runtime_variant_name(combo.variant)) +
                 (combo.serial ? " serial" : " threaded"));
    const Outcome got = conformance().run(index, combo.variant, combo.serial);
    EXPECT_EQ(got.code, c.code) << got.message;
    if (c.expected_y != nullptr) {
      EXPECT_EQ(got.y, c.expected_y());
      // The user's tasks, whatever each variant adds internally (host_build_graph's fences).
      if (c.task_count >= 0) {
        EXPECT_EQ(got.task_count, static_cast<uint64_t>(c.task_count));
      }
      if (!first_task_count) first_task_count = got.task_count;
      EXPECT_EQ(got.task_count, *first_task_count) << "RunReport::task_count differs";
    } else {
      EXPECT_EQ(got.message, c.message);
    }
    EXPECT_EQ(got.observed, c.observed);
  }
}

INSTANTIATE_TEST_SUITE_P(BothVariantsBothModes, TaskModel,
                         ::testing::Range<std::size_t>(0, std::size(kCases)),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           return std::string(kCases[info.param].name);
                         });

}  // namespace
}  // namespace chiprt
