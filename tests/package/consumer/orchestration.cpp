// Per chunk of x and y: t = square(x chunk) in SPMD blocks, then y chunk += alpha * t. The
// runtime orders each axpy after its square (t is read after written) and nothing else.
#include <string>

#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "protocol.h"

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    chiprt::Orchestration& orch, const chiprt::TaskArgs& args) {
  using chiprt::CoreType;
  using chiprt::DataType;
  const chiprt::Tensor& x = args.tensor(0);
  const chiprt::Tensor& y = args.tensor(1);
  const uint64_t length = x.numel();
  const uint64_t chunk = args.scalar_bits(0);
  if (chunk == 0 || length % chunk != 0 || y.numel() != length) {
    throw chiprt::Error(chiprt::StatusCode::InvalidArgument,
                        "consumer: chunk " + std::to_string(chunk) + " must divide the length " +
                            std::to_string(length) + " of x and y");
  }
  const uint64_t alpha_bits = args.scalar_bits(1);
  for (uint64_t offset = 0; offset < length; offset += chunk) {
    chiprt::Scope scope(orch);
    chiprt::TaskArgs square;
    square.in(x.view({chunk}, {offset})).out({chunk}, DataType::F32);
    square.scalar(static_cast<int64_t>(chunk));
    orch.submit(chiprt::TaskSpec::kernel(consumer::kSquare, CoreType::AIV, consumer::kSquareBlocks),
                square);
    chiprt::TaskArgs axpy;
    axpy.in(square.output(0)).inout(y.view({chunk}, {offset}));
    axpy.scalar(static_cast<int64_t>(chunk)).add_scalar_bits(alpha_bits);
    orch.submit(consumer::kAxpy, CoreType::AIV, axpy);
  }
}
