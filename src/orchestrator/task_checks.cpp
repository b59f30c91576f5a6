#include "orchestrator/task_checks.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "orchestrator/tensor_map.h"

namespace chiprt::orchestrator {
namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

bool integral_dtype(DataType dtype) {
  return dtype != DataType::F32 && dtype != DataType::F16 && dtype != DataType::BF16 &&
         dtype != DataType::F64 && element_size(dtype) != 0;
}

// One kernel of the task: present, on a core the part allows, argument signature.
Status check_kernel(const KernelTable& kernels, uint64_t id, const TaskSpec& spec, int32_t func_id,
                    CoreType part_core, const char* part, const TaskArgs& args) {
  const bool mix = spec.core == CoreType::MIX;
  auto where = [&] {
    return task_label(id, &spec) + (mix ? std::string(" part ") + part : std::string());
  };
  if (func_id < 0 || func_id >= kMaxFuncId || !kernels[func_id].present) {
    return Status(StatusCode::UnknownFuncId,
                  "func_id " + std::to_string(func_id) +
                      " is not provided by the active callable (submitted as " + where() + ")");
  }
  const KernelInfo& k = kernels[func_id];
  // A kernel registered as MIX may run as any part of a MIX task.
  const bool core_ok = k.core == part_core || (mix && k.core == CoreType::MIX);
  if (!core_ok) {
    return Status(StatusCode::CoreTypeMismatch, "func_id " + std::to_string(func_id) + " runs on " +
                                                    std::string(core_type_name(k.core)) +
                                                    " cores but " + where() + " was submitted to " +
                                                    std::string(core_type_name(part_core)));
  }
  const ArgSignature& sig = k.signature;
  if (sig.tensor_count == 0) return Status::ok();
  auto fn = [&] { return "func_id " + std::to_string(func_id); };
  if (args.tensor_count() != sig.tensor_count) {
    return Status(StatusCode::SignatureMismatch,
                  fn() + ": expected " + std::to_string(sig.tensor_count) + " tensor args, got " +
                      std::to_string(args.tensor_count()) + " (" + where() + ")");
  }
  for (int i = 0; i < args.tensor_count(); ++i) {
    if (args.tag(i) != sig.tags[i]) {
      return Status(StatusCode::SignatureMismatch,
                    fn() + " arg " + std::to_string(i) + ": expected " +
                        std::string(arg_tag_name(sig.tags[i])) + ", got " +
                        std::string(arg_tag_name(args.tag(i))) + " (" + where() + ")");
    }
  }
  if (args.scalar_count() != sig.scalar_count) {
    return Status(StatusCode::SignatureMismatch,
                  fn() + ": expected " + std::to_string(sig.scalar_count) + " scalar args, got " +
                      std::to_string(args.scalar_count()) + " (" + where() + ")");
  }
  return Status::ok();
}

// Rank, dtype and (unless it is an Out declaration) that the view lies inside its buffer and the
// run's memory admits it. `where()` names the argument; it is called only on failure, so a valid
// tensor allocates nothing.
template <class Where>
Status check_tensor(const RunMemory& memory, Where where, const Tensor& t, bool declaration) {
  if (t.ndim < 1 || t.ndim > static_cast<uint32_t>(kMaxTensorDims)) {
    return Status(StatusCode::InvalidArgument, where() + ": rank " + std::to_string(t.ndim) +
                                                   " is outside [1, " +
                                                   std::to_string(kMaxTensorDims) + "]");
  }
  const uint64_t esize = element_size(t.dtype);
  if (esize == 0) {
    return Status(StatusCode::InvalidArgument, where() + ": dtype value " +
                                                   std::to_string(static_cast<int>(t.dtype)) +
                                                   " is not a DataType");
  }
  if (declaration) {
    uint64_t bytes = esize;
    for (uint32_t d = 0; d < t.ndim; ++d) {
      if (__builtin_mul_overflow(bytes, t.shape[d], &bytes)) {
        return Status(StatusCode::InvalidArgument,
                      where() + ": output shape dim " + std::to_string(d) + "=" +
                          std::to_string(t.shape[d]) + " makes it larger than 2^64 bytes");
      }
    }
    return Status::ok();
  }
  uint64_t buffer_end;
  if (__builtin_add_overflow(t.buffer.addr, t.buffer.size, &buffer_end)) {
    return Status(StatusCode::ViewOutOfBounds, where() + ": buffer " + hex(t.buffer.addr) + "+" +
                                                   std::to_string(t.buffer.size) +
                                                   " wraps around the address space");
  }
  const TensorRegion region = TensorRegion::of(t);
  if (!region.bounded || region.hi > t.buffer.size) {
    return Status(StatusCode::ViewOutOfBounds,
                  where() + ": tensor " + t.to_string() +
                      (region.bounded ? " covers bytes [" + std::to_string(region.lo) + ", " +
                                            std::to_string(region.hi) + ") of a " +
                                            std::to_string(t.buffer.size) + "-byte buffer"
                                      : std::string(" overflows 64-bit addressing")));
  }
  if (!memory.admits(t, region.lo, region.hi)) {
    return memory.refusal(where(), t, region.lo, region.hi);
  }
  return Status::ok();
}

}  // namespace

RunMemory::RunMemory(const TaskArgs& run_args, DeviceBuffer heap, uint32_t run) noexcept
    : run_(run), bounded_(true), heap_(heap) {
  auto add = [&](const DeviceBuffer& b) {
    uint64_t end;
    if (b.size == 0 || __builtin_add_overflow(b.addr, b.size, &end)) return;
    ranges_[count_++] = Range{b.addr, end};
  };
  const int tensors = std::clamp(run_args.tensor_count(), 0, kMaxTaskTensors);
  for (int i = 0; i < tensors; ++i) {
    if (run_args.tag(i) != ArgTag::Out) add(run_args.tensor(i).buffer);
  }
  add(heap);
  std::sort(ranges_.begin(), ranges_.begin() + count_,
            [](const Range& a, const Range& b) { return a.lo < b.lo; });
  uint32_t merged = 0;
  for (uint32_t i = 0; i < count_; ++i) {
    if (merged > 0 && ranges_[i].lo < ranges_[merged - 1].hi) {
      ranges_[merged - 1].hi = std::max(ranges_[merged - 1].hi, ranges_[i].hi);
    } else {
      ranges_[merged++] = ranges_[i];
    }
  }
  count_ = merged;
}

Status RunMemory::refusal(const std::string& where, const Tensor& t, uint64_t lo,
                          uint64_t hi) const {
  if (t.owner_run != 0 && t.owner_run != run_) {
    return Status(StatusCode::InvalidDevicePointer,
                  where + ": tensor at " + hex(t.buffer.addr) + " is a runtime output of task " +
                      std::to_string(t.owner_task) + " of run #" + std::to_string(t.owner_run) +
                      ", not of this run (#" + std::to_string(run_) +
                      "); a runtime output is valid only in the run that produced it (its memory "
                      "belongs to this run's outputs now): pass data between runs in buffers "
                      "from Worker::malloc");
  }
  return Status(StatusCode::InvalidDevicePointer,
                where + ": tensor " + t.to_string() + " covers device bytes [" +
                    hex(t.buffer.addr + lo) + ", " + hex(t.buffer.addr + hi) +
                    "), which lie in no run argument's buffer and not in the run's output heap [" +
                    hex(heap_.addr) + ", " + hex(heap_.addr + heap_.size) +
                    "); a task names only memory of the run's arguments and runtime outputs of "
                    "this run (a DeviceBuffer made up or enlarged by the orchestration is "
                    "refused)");
}

Status check_data_access(const RunMemory& memory, const char* call, const Tensor& t) {
  const TensorRegion region = TensorRegion::of(t);
  if (memory.admits(t, region.lo, region.hi)) return Status::ok();
  return memory.refusal(call, t, region.lo, region.hi);
}

std::string task_label(uint64_t id, const TaskSpec* spec) {
  std::string label = "task " + std::to_string(id);
  if (spec == nullptr) return label + " (dummy)";
  if (spec->core == CoreType::MIX) {
    label += " (mix " + std::to_string(spec->mix.aic) + "/" + std::to_string(spec->mix.aiv0) + "/" +
             std::to_string(spec->mix.aiv1);
  } else {
    label += " (func_id " + std::to_string(spec->func_id);
  }
  if (spec->block_num != 1) label += ", " + std::to_string(spec->block_num) + " blocks";
  return label + ")";
}

Status check_task_spec(const KernelTable& kernels, uint64_t id, const TaskSpec& spec,
                       const TaskArgs& args) {
  if (static_cast<int>(spec.core) >= kCoreTypeCount) {
    return Status(StatusCode::InvalidArgument, "task " + std::to_string(id) + ": core type value " +
                                                   std::to_string(static_cast<int>(spec.core)) +
                                                   " is not a CoreType");
  }
  if (spec.block_num < 1 || spec.block_num > kMaxBlockNum) {
    return Status(StatusCode::InvalidArgument,
                  task_label(id, &spec) + ": block_num " + std::to_string(spec.block_num) +
                      " is outside [1, " + std::to_string(kMaxBlockNum) + "] (kMaxBlockNum)");
  }
  if (spec.core != CoreType::MIX) {
    return check_kernel(kernels, id, spec, spec.func_id, spec.core, "", args);
  }
  const MixKernels& m = spec.mix;
  if (m.aic == -1 && m.aiv0 == -1 && m.aiv1 == -1) {
    return Status(StatusCode::InvalidArgument,
                  task_label(id, &spec) +
                      ": a MIX task needs at least one kernel (every part of MixKernels is -1)");
  }
  const struct {
    int32_t func_id;
    CoreType core;
    const char* name;
  } parts[3] = {{m.aic, CoreType::AIC, "aic"},
                {m.aiv0, CoreType::AIV, "aiv0"},
                {m.aiv1, CoreType::AIV, "aiv1"}};
  for (const auto& part : parts) {
    if (part.func_id == -1) continue;
    Status status = check_kernel(kernels, id, spec, part.func_id, part.core, part.name, args);
    if (!status.is_ok()) return status;
  }
  return Status::ok();
}

Status check_task_args(const RunMemory& memory, uint64_t id, const TaskSpec* spec,
                       const TaskArgs& args) {
  if (args.tensor_count() < 0 || args.tensor_count() > kMaxTaskTensors || args.scalar_count() < 0 ||
      args.scalar_count() > kMaxTaskScalars) {
    return Status(StatusCode::TooManyArgs,
                  task_label(id, spec) + ": " + std::to_string(args.tensor_count()) +
                      " tensors and " + std::to_string(args.scalar_count()) +
                      " scalars exceed kMaxTaskTensors/kMaxTaskScalars");
  }
  for (int d = 0; d < args.dep_count(); ++d) {
    const TaskId dep = args.dep(d);
    if (dep < 0 || static_cast<uint64_t>(dep) >= id) {
      return Status(StatusCode::InvalidTask,
                    task_label(id, spec) + ": explicit dependency on task " + std::to_string(dep) +
                        " is not an earlier task of this run" +
                        (id == 0 ? std::string(" (this is the first task)")
                                 : " (valid: 0.." + std::to_string(id - 1) + ")"));
    }
  }
  for (int i = 0; i < args.tensor_count(); ++i) {
    const ArgTag tag = args.tag(i);
    auto where = [&] { return task_label(id, spec) + " arg " + std::to_string(i); };
    if (static_cast<int>(tag) >= kArgTagCount) {
      return Status(
          StatusCode::InvalidArgument,
          where() + ": tag value " + std::to_string(static_cast<int>(tag)) + " is not an ArgTag");
    }
    Status status = check_tensor(memory, where, args.tensor(i), tag == ArgTag::Out);
    if (!status.is_ok()) return status;
  }
  if (args.has_predicate()) {
    const Tensor& flag = args.predicate();
    auto where = [&] { return task_label(id, spec) + " predicate"; };
    Status status = check_tensor(memory, where, flag, false);
    if (!status.is_ok()) return status;
    if (!integral_dtype(flag.dtype) || flag.numel() == 0) {
      return Status(StatusCode::InvalidArgument,
                    where() + ": tensor " + flag.to_string() +
                        " must be an integer or bool tensor with at least one element");
    }
  }
  return Status::ok();
}

bool read_args(TaskArgs& args, ArgList* out) {
  const int count = args.tensor_count();
  if (count < 0 || count > kMaxTaskTensors) return false;
  out->tensor_count = count;
  for (int i = 0; i < count; ++i) {
    out->tags[i] = args.tag(i);
    out->tensors[i] = &args.tensor(i);
  }
  return true;
}

bool task_spec_accepted(const KernelTable& kernels, const TaskSpec& spec, const TaskArgs& args,
                        const ArgList& list) noexcept {
  // The non-MIX branch of check_task_spec and check_kernel, as one predicate.
  if (spec.core == CoreType::MIX || static_cast<int>(spec.core) >= kCoreTypeCount) return false;
  if (spec.block_num < 1 || spec.block_num > kMaxBlockNum) return false;
  const int32_t func_id = spec.func_id;
  if (func_id < 0 || func_id >= kMaxFuncId) return false;
  const KernelInfo& k = kernels[func_id];
  if (!k.present || k.core != spec.core) return false;
  const ArgSignature& sig = k.signature;
  if (sig.tensor_count == 0) return true;
  if (list.tensor_count != sig.tensor_count || args.scalar_count() != sig.scalar_count) {
    return false;
  }
  for (int i = 0; i < list.tensor_count; ++i) {
    if (list.tags[i] != sig.tags[i]) return false;
  }
  return true;
}

bool task_args_accepted(const RunMemory& memory, uint64_t id, const TaskArgs& args,
                        const ArgList& list) noexcept {
  // check_task_args and check_tensor as one predicate; any overflow is left to the full check.
  if (args.has_predicate() || args.scalar_count() < 0 || args.scalar_count() > kMaxTaskScalars) {
    return false;
  }
  for (int d = 0; d < args.dep_count(); ++d) {
    const TaskId dep = args.dep(d);
    if (dep < 0 || static_cast<uint64_t>(dep) >= id) return false;
  }
  for (int i = 0; i < list.tensor_count; ++i) {
    const ArgTag tag = list.tags[i];
    const Tensor& t = *list.tensors[i];
    if (static_cast<int>(tag) >= kArgTagCount || t.ndim < 1 ||
        t.ndim > static_cast<uint32_t>(kMaxTensorDims)) {
      return false;
    }
    const uint64_t esize = element_size(t.dtype);
    if (esize == 0) return false;
    if (tag == ArgTag::Out) {
      uint64_t bytes = esize;
      for (uint32_t d = 0; d < t.ndim; ++d) {
        if (__builtin_mul_overflow(bytes, t.shape[d], &bytes)) return false;
      }
      continue;
    }
    // The view lies inside its buffer: TensorRegion::of's extent, bounded and below the size.
    uint64_t buffer_end;
    if (__builtin_add_overflow(t.buffer.addr, t.buffer.size, &buffer_end)) return false;
    uint64_t last = t.start_offset;
    bool empty = false;
    for (uint32_t d = 0; d < t.ndim; ++d) {
      if (t.shape[d] == 0) {
        empty = true;  // no elements: an empty region lies in any buffer
        break;
      }
      uint64_t span;
      if (__builtin_mul_overflow(t.shape[d] - 1, t.strides[d], &span) ||
          __builtin_add_overflow(last, span, &last)) {
        return false;
      }
    }
    if (empty) {
      if (!memory.admits(t, 0, 0)) return false;  // a stale output, even with no elements
      continue;
    }
    uint64_t hi;
    uint64_t lo;
    if (__builtin_add_overflow(last, 1, &last) || __builtin_mul_overflow(last, esize, &hi) ||
        __builtin_mul_overflow(t.start_offset, esize, &lo) || hi > t.buffer.size ||
        !memory.admits(t, lo, hi)) {
      return false;
    }
  }
  return true;
}

uint64_t output_bytes(const Tensor& declaration) noexcept {
  uint64_t bytes = element_size(declaration.dtype);
  for (uint32_t d = 0; d < declaration.ndim; ++d) bytes *= declaration.shape[d];
  return bytes;
}

Tensor make_output(const Tensor& declaration, uint64_t addr, uint64_t bytes, TaskId owner,
                   uint32_t run) noexcept {
  Tensor out;
  out.ndim = declaration.ndim;
  out.dtype = declaration.dtype;
  uint64_t stride = 1;
  for (uint32_t d = declaration.ndim; d-- > 0;) {
    out.shape[d] = declaration.shape[d];
    out.strides[d] = stride;
    stride *= declaration.shape[d];
  }
  out.buffer = {addr, bytes};
  out.owner_task = owner;
  out.version = 0;
  out.owner_run = run;
  return out;
}

}  // namespace chiprt::orchestrator
