// HostTask: what a host task of a node run sees — a host function run on a host thread of the
// node (pre- and post-processing, a reduction on the host) between chip runs of the same graph.
//
// It gets the task's TaskArgs with host pointers to host copies of the regions its tensors name,
// never device addresses: data<T>(i) points at element [0,...,0] of tensor i, and the tensor's
// shape and strides (in elements) say where the others are. The node has made those regions valid
// on the host before the function runs (copying them from the chips that hold them), and after it
// returns, the regions it may write (inout, output_existing, no_dep) are the host's, the only
// valid copy, until the next task that reads them copies them where it runs.
//
// Lifetime: valid only during the call of the host function it is given to; the pointers must not
// be kept. Threading: the function runs on one host thread of the node; it must not call the Node
// that runs it (its calls would wait for the run it is part of).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "chiprt/status.h"
#include "chiprt/task_args.h"
#include "chiprt/tensor.h"

namespace chiprt {

class HostTask {
 public:
  HostTask(const TaskArgs& args, const std::array<uint8_t*, kMaxTaskTensors>& buffers)
      : args_(args), buffers_(buffers) {}

  int tensor_count() const noexcept { return args_.tensor_count(); }
  // Tensor i as submitted (its buffer names the node buffer; use data<T>(i) for its bytes).
  const Tensor& tensor(int i) const { return args_.tensor(i); }
  ArgTag tag(int i) const { return args_.tag(i); }
  // Host pointer to element [0,...,0] of tensor i.
  template <class T>
  T* data(int i) const {
    const Tensor& t = args_.tensor(i);
    return reinterpret_cast<T*>(buffers_[i] + t.start_offset * t.element_bytes());
  }
  int scalar_count() const noexcept { return args_.scalar_count(); }
  // Scalar i, as the bits were given to TaskArgs::scalar.
  template <class T>
  T scalar(int i) const {
    static_assert(sizeof(T) <= sizeof(uint64_t));
    const uint64_t bits = args_.scalar_bits(i);
    T value;
    std::memcpy(&value, &bits, sizeof(T));
    return value;
  }

 private:
  const TaskArgs& args_;
  const std::array<uint8_t*, kMaxTaskTensors>& buffers_;
};

}  // namespace chiprt
