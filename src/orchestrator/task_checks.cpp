#include "orchestrator/task_checks.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "common/graph_image.h"

namespace chiprt::orchestrator {
namespace {

bool integral_dtype(DataType dtype) noexcept {
  return dtype != DataType::F32 && dtype != DataType::F16 && dtype != DataType::BF16 &&
         dtype != DataType::F64 && element_size(dtype) != 0;
}

constexpr const char* kPartNames[3] = {"aic", "aiv0", "aiv1"};
constexpr CoreType kPartCores[3] = {CoreType::AIC, CoreType::AIV, CoreType::AIV};

int32_t part_func_id(const TaskSpec& spec, uint8_t part) noexcept {
  if (spec.core != CoreType::MIX) return spec.func_id;
  return part == 0 ? spec.mix.aic : part == 1 ? spec.mix.aiv0 : spec.mix.aiv1;
}

// One kernel of the task: present, on a core the part allows, argument signature.
Verdict check_kernel(const KernelTable& kernels, const TaskSpec& spec, uint8_t part,
                     CoreType part_core, const ArgList& list, int scalar_count) noexcept {
  const int32_t func_id = part_func_id(spec, part);
  if (func_id < 0 || func_id >= kMaxFuncId || !kernels[func_id].present) {
    return {Rule::UnknownFuncId, kPredicateArg, part};
  }
  const KernelInfo& k = kernels[func_id];
  // A kernel registered as MIX may run as any part of a MIX task.
  if (k.core != part_core && !(spec.core == CoreType::MIX && k.core == CoreType::MIX)) {
    return {Rule::CoreTypeMismatch, kPredicateArg, part};
  }
  const ArgSignature& sig = k.signature;
  if (sig.tensor_count == 0) return {};
  if (list.tensor_count != sig.tensor_count)
    return {Rule::SignatureTensorCount, kPredicateArg, part};
  for (int i = 0; i < list.tensor_count; ++i) {
    if (list.tags[i] != sig.tags[i]) return {Rule::SignatureTag, static_cast<int8_t>(i), part};
  }
  if (scalar_count != sig.scalar_count) return {Rule::SignatureScalarCount, kPredicateArg, part};
  return {};
}

// Rank, dtype and (unless it is an Out declaration) that the view lies inside its buffer and the
// run's memory admits it.
Verdict check_tensor(const RunMemory& memory, int8_t arg, const Tensor& t,
                     bool declaration) noexcept {
  if (t.ndim < 1 || t.ndim > static_cast<uint32_t>(kMaxTensorDims)) return {Rule::Rank, arg};
  const uint64_t esize = element_size(t.dtype);
  if (esize == 0) return {Rule::DtypeValue, arg};
  if (declaration) {
    uint64_t bytes = esize;
    for (uint32_t d = 0; d < t.ndim; ++d) {
      if (__builtin_mul_overflow(bytes, t.shape[d], &bytes)) {
        return {Rule::OutputTooLarge, arg, 0, static_cast<uint8_t>(d)};
      }
    }
    return {};
  }
  uint64_t buffer_end;
  if (__builtin_add_overflow(t.buffer.addr, t.buffer.size, &buffer_end)) {
    return {Rule::BufferWraps, arg};
  }
  uint64_t lo;
  uint64_t hi;
  if (!view_extent(t, &lo, &hi) || hi > t.buffer.size) return {Rule::ViewOutOfBounds, arg};
  if (!memory.admits(t, lo, hi)) return {Rule::NotRunMemory, arg};
  return {};
}

// The error a tensor rule names for `t` at `where`.
Status describe_tensor(const Verdict& v, const RunMemory& memory, const std::string& where,
                       const Tensor& t) {
  switch (v.rule) {
    case Rule::Rank:
      return Status(StatusCode::InvalidArgument, where + ": rank " + std::to_string(t.ndim) +
                                                     " is outside [1, " +
                                                     std::to_string(kMaxTensorDims) + "]");
    case Rule::DtypeValue:
      return Status(StatusCode::InvalidArgument, where + ": dtype value " +
                                                     std::to_string(static_cast<int>(t.dtype)) +
                                                     " is not a DataType");
    case Rule::OutputTooLarge:
      return Status(StatusCode::InvalidArgument,
                    where + ": output shape dim " + std::to_string(v.index) + "=" +
                        std::to_string(t.shape[v.index]) + " makes it larger than 2^64 bytes");
    case Rule::BufferWraps:
      return Status(StatusCode::ViewOutOfBounds, where + ": buffer " + hex_address(t.buffer.addr) +
                                                     "+" + std::to_string(t.buffer.size) +
                                                     " wraps around the address space");
    case Rule::ViewOutOfBounds: {
      uint64_t lo = 0;
      uint64_t hi = 0;
      const bool bounded = view_extent(t, &lo, &hi);
      return Status(
          StatusCode::ViewOutOfBounds,
          where + ": tensor " + t.to_string() +
              (bounded ? " covers bytes [" + std::to_string(lo) + ", " + std::to_string(hi) +
                             ") of a " + std::to_string(t.buffer.size) + "-byte buffer"
                       : std::string(" overflows 64-bit addressing")));
    }
    case Rule::NotRunMemory:
    case Rule::DataNotRunMemory: {
      uint64_t lo = 0;
      uint64_t hi = 0;
      view_extent(t, &lo, &hi);
      return memory.refusal(where, t, lo, hi);
    }
    default:
      return Status(StatusCode::InternalError, where + ": no message for this rule");
  }
}

// Bytes the Out declarations of `args` take packed, each 64-byte aligned (saturating); their
// shapes passed check_tensor. Predicated tasks only, off the hot path.
uint64_t packed_output_bytes(const TaskArgs& args) noexcept {
  uint64_t total = 0;
  for (int i = 0; i < args.tensor_count(); ++i) {
    if (args.tag(i) != ArgTag::Out) continue;
    const uint64_t bytes = output_bytes(args.tensor(i));
    const uint64_t aligned =
        bytes > UINT64_MAX - (common::kSkipFillGranuleBytes - 1)
            ? UINT64_MAX
            : (bytes + common::kSkipFillGranuleBytes - 1) & ~(common::kSkipFillGranuleBytes - 1);
    total = aligned > UINT64_MAX - total ? UINT64_MAX : total + aligned;
  }
  return total;
}

}  // namespace

std::string hex_address(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

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
                  where + ": tensor at " + hex_address(t.buffer.addr) +
                      " is a runtime output of task " + std::to_string(t.owner_task) + " of run #" +
                      std::to_string(t.owner_run) + ", not of this run (#" + std::to_string(run_) +
                      "); a runtime output is valid only in the run that produced it (its memory "
                      "belongs to this run's outputs now): pass data between runs in buffers "
                      "allocated with malloc");
  }
  return Status(StatusCode::InvalidDevicePointer,
                where + ": tensor " + t.to_string() + " covers device bytes [" +
                    hex_address(t.buffer.addr + lo) + ", " + hex_address(t.buffer.addr + hi) +
                    "), which lie in no run argument's buffer and not in the run's output heap [" +
                    hex_address(heap_.addr) + ", " + hex_address(heap_.addr + heap_.size) +
                    "); a task names only memory of the run's arguments and runtime outputs of "
                    "this run (a DeviceBuffer made up or enlarged by the orchestration is "
                    "refused)");
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

Verdict check_task_spec(const KernelTable& kernels, const TaskSpec& spec, const ArgList& list,
                        int scalar_count) noexcept {
  if (static_cast<int>(spec.core) >= kCoreTypeCount) return {Rule::CoreTypeValue};
  if (spec.block_num < 1 || spec.block_num > kMaxBlockNum) return {Rule::BlockNum};
  if (spec.core != CoreType::MIX) {
    return check_kernel(kernels, spec, 0, spec.core, list, scalar_count);
  }
  const MixKernels& m = spec.mix;
  if (m.aic == -1 && m.aiv0 == -1 && m.aiv1 == -1) return {Rule::MixWithoutKernels};
  for (uint8_t part = 0; part < 3; ++part) {
    if (part_func_id(spec, part) == -1) continue;
    const Verdict v = check_kernel(kernels, spec, part, kPartCores[part], list, scalar_count);
    if (!v.ok()) return v;
  }
  return {};
}

Verdict check_task_args(const RunMemory& memory, uint64_t id, const TaskArgs& args,
                        const ArgList& list) noexcept {
  if (args.tensor_count() < 0 || args.tensor_count() > kMaxTaskTensors || args.scalar_count() < 0 ||
      args.scalar_count() > kMaxTaskScalars) {
    return {Rule::TooManyArgs};
  }
  for (int d = 0; d < args.dep_count(); ++d) {
    const TaskId dep = args.dep(d);
    if (dep < 0 || static_cast<uint64_t>(dep) >= id) {
      return {Rule::LaterDependency, kPredicateArg, 0, static_cast<uint8_t>(d)};
    }
  }
  for (int i = 0; i < list.tensor_count; ++i) {
    const ArgTag tag = list.tags[i];
    const auto arg = static_cast<int8_t>(i);
    if (static_cast<int>(tag) >= kArgTagCount) return {Rule::TagValue, arg};
    const Verdict v = check_tensor(memory, arg, *list.tensors[i], tag == ArgTag::Out);
    if (!v.ok()) return v;
  }
  if (args.has_predicate()) {
    const Tensor& flag = args.predicate();
    const Verdict v = check_tensor(memory, kPredicateArg, flag, false);
    if (!v.ok()) return v;
    if (!integral_dtype(flag.dtype) || flag.numel() == 0) return {Rule::PredicateNotIntegral};
    if (packed_output_bytes(args) > common::kMaxSkipFillBytes) return {Rule::SkipFillTooLarge};
  }
  return {};
}

Verdict check_allocation(const TaskArgs& args, const ArgList& list) noexcept {
  for (int i = 0; i < list.tensor_count; ++i) {
    if (list.tags[i] != ArgTag::Out) return {Rule::AllocationTag, static_cast<int8_t>(i)};
  }
  if (args.scalar_count() != 0 || args.dep_count() != 0 || args.has_predicate()) {
    return {Rule::AllocationExtras};
  }
  return {};
}

Verdict check_data_call(const RunMemory& memory, const Tensor& t, const void* data,
                        uint64_t bytes) noexcept {
  if (t.ndim < 1 || t.ndim > static_cast<uint32_t>(kMaxTensorDims) || element_size(t.dtype) == 0) {
    return {Rule::DataRankOrDtype};
  }
  uint64_t end;
  uint64_t lo;
  uint64_t hi;
  if (t.buffer.addr == 0 || __builtin_add_overflow(t.buffer.addr, t.buffer.size, &end) ||
      !view_extent(t, &lo, &hi) || hi > t.buffer.size) {
    return {Rule::DataOutOfBounds};
  }
  if (bytes != t.numel() * t.element_bytes()) return {Rule::DataBytes};
  if (bytes > 0 && data == nullptr) return {Rule::DataNullPointer};
  if (!memory.admits(t, lo, hi)) return {Rule::DataNotRunMemory};
  return {};
}

Status describe_task(const Verdict& v, const KernelTable& kernels, const RunMemory& memory,
                     uint64_t id, const TaskSpec* spec, const TaskArgs& args) {
  auto label = [&] { return task_label(id, spec); };
  auto arg_where = [&] {
    return label() +
           (v.arg == kPredicateArg ? std::string(" predicate") : " arg " + std::to_string(v.arg));
  };
  auto arg_tensor = [&]() -> const Tensor& {
    return v.arg == kPredicateArg ? args.predicate() : args.tensor(v.arg);
  };
  // Kernel rules: "func_id F ..." naming the part of a MIX task.
  const bool mix = spec != nullptr && spec->core == CoreType::MIX;
  auto where = [&] { return label() + (mix ? std::string(" part ") + kPartNames[v.part] : ""); };
  const int32_t func_id = spec != nullptr ? part_func_id(*spec, v.part) : -1;
  auto fn = [&] { return "func_id " + std::to_string(func_id); };
  const ArgSignature* sig =
      func_id >= 0 && func_id < kMaxFuncId ? &kernels[func_id].signature : nullptr;
  switch (v.rule) {
    case Rule::Ok:
      return Status::ok();
    case Rule::CoreTypeValue:
      return Status(StatusCode::InvalidArgument,
                    "task " + std::to_string(id) + ": core type value " +
                        std::to_string(static_cast<int>(spec->core)) + " is not a CoreType");
    case Rule::BlockNum:
      return Status(StatusCode::InvalidArgument,
                    label() + ": block_num " + std::to_string(spec->block_num) +
                        " is outside [1, " + std::to_string(kMaxBlockNum) + "] (kMaxBlockNum)");
    case Rule::MixWithoutKernels:
      return Status(
          StatusCode::InvalidArgument,
          label() + ": a MIX task needs at least one kernel (every part of MixKernels is -1)");
    case Rule::UnknownFuncId:
      return Status(StatusCode::UnknownFuncId, fn() +
                                                   " is not provided by the active callable "
                                                   "(submitted as " +
                                                   where() + ")");
    case Rule::CoreTypeMismatch: {
      const CoreType part_core = mix ? kPartCores[v.part] : spec->core;
      return Status(StatusCode::CoreTypeMismatch,
                    fn() + " runs on " + std::string(core_type_name(kernels[func_id].core)) +
                        " cores but " + where() + " was submitted to " +
                        std::string(core_type_name(part_core)));
    }
    case Rule::SignatureTensorCount:
      return Status(StatusCode::SignatureMismatch,
                    fn() + ": expected " + std::to_string(sig->tensor_count) +
                        " tensor args, got " + std::to_string(args.tensor_count()) + " (" +
                        where() + ")");
    case Rule::SignatureTag:
      return Status(StatusCode::SignatureMismatch,
                    fn() + " arg " + std::to_string(v.arg) + ": expected " +
                        std::string(arg_tag_name(sig->tags[v.arg])) + ", got " +
                        std::string(arg_tag_name(args.tag(v.arg))) + " (" + where() + ")");
    case Rule::SignatureScalarCount:
      return Status(StatusCode::SignatureMismatch,
                    fn() + ": expected " + std::to_string(sig->scalar_count) +
                        " scalar args, got " + std::to_string(args.scalar_count()) + " (" +
                        where() + ")");
    case Rule::TooManyArgs:
      return Status(StatusCode::TooManyArgs, label() + ": " + std::to_string(args.tensor_count()) +
                                                 " tensors and " +
                                                 std::to_string(args.scalar_count()) +
                                                 " scalars exceed kMaxTaskTensors/kMaxTaskScalars");
    case Rule::LaterDependency: {
      const TaskId dep = args.dep(v.index);
      return Status(StatusCode::InvalidTask,
                    label() + ": explicit dependency on task " + std::to_string(dep) +
                        " is not an earlier task of this run" +
                        (id == 0 ? std::string(" (this is the first task)")
                                 : " (valid: 0.." + std::to_string(id - 1) + ")"));
    }
    case Rule::TagValue:
      return Status(StatusCode::InvalidArgument,
                    arg_where() + ": tag value " +
                        std::to_string(static_cast<int>(args.tag(v.arg))) + " is not an ArgTag");
    case Rule::SkipFillTooLarge:
      return Status(StatusCode::InvalidArgument,
                    label() + ": a predicated task's runtime outputs take " +
                        std::to_string(packed_output_bytes(args)) +
                        " bytes (each 64-byte aligned), more than the " +
                        std::to_string(common::kMaxSkipFillBytes) +
                        " a skipped task zero-fills; split the outputs over several tasks");
    case Rule::PredicateNotIntegral:
      return Status(StatusCode::InvalidArgument,
                    arg_where() + ": tensor " + args.predicate().to_string() +
                        " must be an integer or bool tensor with at least one element");
    case Rule::AllocationTag:
      return Status(StatusCode::InvalidArgument,
                    "allocate (task " + std::to_string(id) + ") arg " + std::to_string(v.arg) +
                        ": tag " + std::string(arg_tag_name(args.tag(v.arg))) +
                        "; an allocation-only task takes Out tensors only (use submit_dummy to "
                        "order on other tensors)");
    case Rule::AllocationExtras:
      return Status(StatusCode::InvalidArgument,
                    "allocate (task " + std::to_string(id) +
                        "): " + std::to_string(args.scalar_count()) + " scalars, " +
                        std::to_string(args.dep_count()) + " explicit dependencies" +
                        (args.has_predicate() ? " and a predicate" : "") +
                        "; an allocation-only task completes at once and takes Out tensors only");
    default:
      break;
  }
  return describe_tensor(v, memory, arg_where(), arg_tensor());
}

Status describe_data_call(const Verdict& v, const RunMemory& memory, const char* call,
                          const Tensor& t, uint64_t bytes) {
  const std::string where = std::string(call) + ": tensor " + t.to_string();
  switch (v.rule) {
    case Rule::Ok:
      return Status::ok();
    case Rule::DataRankOrDtype:
      return Status(StatusCode::InvalidArgument, where + " has an invalid rank or dtype (rank 1.." +
                                                     std::to_string(kMaxTensorDims) +
                                                     ", a DataType)");
    case Rule::DataOutOfBounds:
      return Status(StatusCode::ViewOutOfBounds, where + " does not lie inside its buffer " +
                                                     hex_address(t.buffer.addr) + "+" +
                                                     std::to_string(t.buffer.size));
    case Rule::DataBytes:
      return Status(StatusCode::InvalidArgument,
                    where + ": " + std::to_string(bytes) + " bytes given, the tensor has " +
                        std::to_string(t.numel() * t.element_bytes()) + " (numel x element size)");
    case Rule::DataNullPointer:
      return Status(StatusCode::InvalidArgument, where + ": the host pointer is null");
    default:
      return describe_tensor(v, memory, call, t);
  }
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
