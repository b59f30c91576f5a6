// TaskArgs: the arguments of one task (or of one orchestration call).
//
// Tensors come first, each tagged with how the task uses it; then scalars, stored bit-cast to 64
// bits. Counts are bounded (kMaxTaskTensors, kMaxTaskScalars, kMaxExplicitDeps) so a TaskArgs
// never allocates; exceeding a bound throws chiprt::Error(TooManyArgs). A TaskArgs is a value
// owned by its creator and is not thread-safe; the orchestrator fills in the tensors of `OUT`
// arguments during submit (see Orchestration::submit).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "chiprt/tensor.h"

namespace chiprt {

inline constexpr int kMaxTaskTensors = 16;
inline constexpr int kMaxTaskScalars = 16;
inline constexpr int kMaxExplicitDeps = 8;

enum class ArgTag : uint8_t {
  In = 0,              // read; depends on the last writer of any overlapping region
  Out = 1,             // written; allocated by the runtime from shape + dtype
  InOut = 2,           // read and written in place; depends on the last writer
  OutputExisting = 3,  // written into a caller-provided tensor; becomes its last writer
  NoDep = 4,           // passed to the kernel, ignored by dependency tracking
};
inline constexpr int kArgTagCount = 5;
std::string_view arg_tag_name(ArgTag tag) noexcept;
// Whether the tag writes (Out, InOut, OutputExisting) / reads (In, InOut) its tensor.
constexpr bool arg_tag_writes(ArgTag t) noexcept {
  return t == ArgTag::Out || t == ArgTag::InOut || t == ArgTag::OutputExisting;
}
constexpr bool arg_tag_reads(ArgTag t) noexcept {
  return t == ArgTag::In || t == ArgTag::InOut;
}

class TaskArgs {
 public:
  TaskArgs& in(const Tensor& t) { return add(ArgTag::In, t); }
  TaskArgs& inout(const Tensor& t) { return add(ArgTag::InOut, t); }
  TaskArgs& output_existing(const Tensor& t) { return add(ArgTag::OutputExisting, t); }
  TaskArgs& no_dep(const Tensor& t) { return add(ArgTag::NoDep, t); }
  // A runtime-allocated output: only shape and dtype matter; the buffer is filled in by submit.
  TaskArgs& out(std::span<const uint64_t> shape, DataType dtype);
  TaskArgs& out(std::initializer_list<uint64_t> shape, DataType dtype) {
    return out(std::span<const uint64_t>(shape.begin(), shape.size()), dtype);
  }
  TaskArgs& add(ArgTag tag, const Tensor& t);

  // Any trivially copyable value of at most 8 bytes, stored bit-cast and zero-extended.
  template <class T>
  TaskArgs& scalar(T value) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                  "scalars must be trivially copyable and at most 8 bytes");
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    return add_scalar_bits(bits);
  }
  TaskArgs& add_scalar_bits(uint64_t bits);

  // An explicit dependency on an earlier task of the same run (besides those derived from
  // tensors, which cover read-after-write, write-after-write and write-after-read). For orders
  // regions cannot express: NoDep arguments, manual scopes, aliasing between different buffers,
  // empty tensors, side effects outside tensors.
  TaskArgs& after(TaskId task);

  // Predicate: the task runs only when the first element of `flag` (an integer or Bool tensor
  // with at least one element) is non-zero at dispatch; otherwise it is skipped and still releases
  // its consumers. A skipped task's runtime outputs (`out`) read as zeros: the dispatcher
  // zero-fills them before its consumers run (both variants, and an executor of an exported
  // graph through ExportedTask::skip_fill_addr / skip_fill_bytes); its inout and output_existing
  // tensors keep their contents. A predicated task's outputs take at most 256 GiB
  // (InvalidArgument otherwise). The flag is an In dependency (ordered after its writer; a later
  // writer of it waits for the task) and is not passed to the kernel. A second call replaces the
  // first.
  TaskArgs& when(const Tensor& flag);
  bool has_predicate() const noexcept { return has_predicate_; }
  const Tensor& predicate() const;  // InvalidArgument when there is none

  int tensor_count() const noexcept { return tensor_count_; }
  int scalar_count() const noexcept { return scalar_count_; }
  int dep_count() const noexcept { return dep_count_; }
  const Tensor& tensor(int i) const { return tensors_[checked(i, tensor_count_)]; }
  Tensor& tensor(int i) { return tensors_[checked(i, tensor_count_)]; }
  ArgTag tag(int i) const { return tags_[checked(i, tensor_count_)]; }
  uint64_t scalar_bits(int i) const { return scalars_[checked(i, scalar_count_)]; }
  TaskId dep(int i) const { return deps_[checked(i, dep_count_)]; }
  // The k-th argument tagged Out (after submit: the allocated tensor).
  const Tensor& output(int k) const;

  void clear() noexcept {
    tensor_count_ = scalar_count_ = dep_count_ = 0;
    has_predicate_ = false;
  }

 private:
  // Inline: every accessor of a submission runs it (a call per argument on the orchestrator's
  // hot path); only the failure is out of line.
  static int checked(int i, int count) {
    if (i < 0 || i >= count) [[unlikely]]
      throw_index_outside(i, count);
    return i;
  }
  [[noreturn]] static void throw_index_outside(int i, int count);

  Tensor tensors_[kMaxTaskTensors];
  ArgTag tags_[kMaxTaskTensors]{};
  uint64_t scalars_[kMaxTaskScalars]{};
  TaskId deps_[kMaxExplicitDeps]{};
  Tensor predicate_;
  bool has_predicate_ = false;
  int tensor_count_ = 0;
  int scalar_count_ = 0;
  int dep_count_ = 0;
};

}  // namespace chiprt
