#include "chiprt/task_args.h"

#include <string>

#include "chiprt/status.h"

namespace chiprt {

std::string_view arg_tag_name(ArgTag tag) noexcept {
  switch (tag) {
    case ArgTag::In:
      return "in";
    case ArgTag::Out:
      return "out";
    case ArgTag::InOut:
      return "inout";
    case ArgTag::OutputExisting:
      return "output_existing";
    case ArgTag::NoDep:
      return "no_dep";
  }
  return "invalid";
}

TaskArgs& TaskArgs::out(std::span<const uint64_t> shape, DataType dtype) {
  if (shape.empty() || shape.size() > static_cast<std::size_t>(kMaxTensorDims)) {
    throw Error(StatusCode::InvalidArgument, "out: rank " + std::to_string(shape.size()) +
                                                 " is outside [1, " +
                                                 std::to_string(kMaxTensorDims) + "]");
  }
  if (element_size(dtype) == 0) {
    throw Error(
        StatusCode::InvalidArgument,
        "out: dtype value " + std::to_string(static_cast<int>(dtype)) + " is not a DataType");
  }
  Tensor t;
  t.ndim = static_cast<uint32_t>(shape.size());
  t.dtype = dtype;
  uint64_t running = element_size(dtype);  // bytes, so the allocation size cannot overflow either
  for (uint32_t i = t.ndim; i-- > 0;) {
    t.shape[i] = shape[i];
    t.strides[i] = running / element_size(dtype);
    if (__builtin_mul_overflow(running, shape[i], &running)) {
      throw Error(StatusCode::InvalidArgument, "out: shape dim " + std::to_string(i) + "=" +
                                                   std::to_string(shape[i]) +
                                                   " makes the output larger than 2^64 bytes");
    }
  }
  return add(ArgTag::Out, t);
}

TaskArgs& TaskArgs::add(ArgTag tag, const Tensor& t) {
  if (static_cast<int>(tag) >= kArgTagCount) {
    throw Error(StatusCode::InvalidArgument,
                "tensor argument " + std::to_string(tensor_count_) + ": tag value " +
                    std::to_string(static_cast<int>(tag)) + " is not an ArgTag");
  }
  if (tag != ArgTag::Out && t.buffer.empty()) {
    throw Error(StatusCode::InvalidArgument,
                "tensor argument " + std::to_string(tensor_count_) + " (" +
                    std::string(arg_tag_name(tag)) +
                    ") has no device buffer: allocate one with malloc or use out() for an "
                    "output the runtime allocates");
  }
  if (tensor_count_ >= kMaxTaskTensors) {
    throw Error(StatusCode::TooManyArgs, "task has more than " + std::to_string(kMaxTaskTensors) +
                                             " tensor arguments (kMaxTaskTensors)");
  }
  tensors_[tensor_count_] = t;
  tags_[tensor_count_] = tag;
  ++tensor_count_;
  return *this;
}

TaskArgs& TaskArgs::add_scalar_bits(uint64_t bits) {
  if (scalar_count_ >= kMaxTaskScalars) {
    throw Error(StatusCode::TooManyArgs, "task has more than " + std::to_string(kMaxTaskScalars) +
                                             " scalar arguments (kMaxTaskScalars)");
  }
  scalars_[scalar_count_++] = bits;
  return *this;
}

TaskArgs& TaskArgs::after(TaskId task) {
  if (task < 0) {
    throw Error(StatusCode::InvalidArgument,
                "after: task id " + std::to_string(task) +
                    " is negative; pass an id returned by submit in this run");
  }
  if (dep_count_ >= kMaxExplicitDeps) {
    throw Error(StatusCode::TooManyArgs, "task has more than " + std::to_string(kMaxExplicitDeps) +
                                             " explicit dependencies (kMaxExplicitDeps)");
  }
  deps_[dep_count_++] = task;
  return *this;
}

TaskArgs& TaskArgs::when(const Tensor& flag) {
  const bool integral = flag.dtype != DataType::F32 && flag.dtype != DataType::F16 &&
                        flag.dtype != DataType::BF16 && flag.dtype != DataType::F64 &&
                        element_size(flag.dtype) != 0;
  if (!integral) {
    throw Error(StatusCode::InvalidArgument,
                "when: predicate tensor has dtype " + std::string(dtype_name(flag.dtype)) +
                    "; use an integer or bool tensor (its first element is tested)");
  }
  if (flag.numel() == 0) {
    throw Error(StatusCode::InvalidArgument,
                "when: predicate tensor " + flag.to_string() + " has no elements");
  }
  predicate_ = flag;
  has_predicate_ = true;
  return *this;
}

const Tensor& TaskArgs::predicate() const {
  if (!has_predicate_) {
    throw Error(StatusCode::InvalidArgument, "predicate requested, but the task has none (when)");
  }
  return predicate_;
}

const Tensor& TaskArgs::output(int k) const {
  int seen = 0;
  for (int i = 0; i < tensor_count_; ++i) {
    if (tags_[i] != ArgTag::Out) continue;
    if (seen == k) return tensors_[i];
    ++seen;
  }
  throw Error(StatusCode::InvalidArgument, "output " + std::to_string(k) +
                                               " requested, but the task has " +
                                               std::to_string(seen) + " Out arguments");
}

void TaskArgs::throw_index_outside(int i, int count) {
  throw Error(StatusCode::InvalidArgument, "argument index " + std::to_string(i) +
                                               " is outside [0, " + std::to_string(count) + ")");
}

}  // namespace chiprt
