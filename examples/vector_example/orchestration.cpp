// vector_example orchestration: f = (a+b+1)(a+b+2) + (a+b), chunk by chunk. The sum and the two
// shifted sums live in an outer scope per chunk, the product in a nested scope, so intermediates
// are released as soon as the chunk's final add has consumed them.
#include <string>

#include "chiprt/orchestration.h"
#include "chiprt/status.h"
#include "vector_example/protocol.h"

namespace {

using chiprt::CoreType;
using chiprt::DataType;
using chiprt::Error;
using chiprt::StatusCode;
using chiprt::TaskArgs;
using chiprt::Tensor;
namespace proto = chiprt::examples::vector_example;

void check_vector(const Tensor& t, const char* name, uint64_t length) {
  if (t.ndim != 1 || t.dtype != DataType::F32 || t.numel() != length) {
    throw Error(StatusCode::InvalidArgument,
                std::string("vector_example: tensor '") + name + "' is " + t.to_string() +
                    ", expected a 1-D f32 tensor of " + std::to_string(length) + " elements");
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void chiprt_orchestration(
    chiprt::Orchestration& orch, const chiprt::TaskArgs& args) {
  const Tensor& a = args.tensor(0);
  const Tensor& b = args.tensor(1);
  const Tensor& f = args.tensor(2);
  const uint64_t length = a.numel();
  check_vector(a, "a", length);
  check_vector(b, "b", length);
  check_vector(f, "f", length);
  const uint64_t chunk = args.scalar_bits(0);
  if (chunk == 0 || length % chunk != 0) {
    throw Error(StatusCode::InvalidArgument, "vector_example: chunk=" + std::to_string(chunk) +
                                                 " must be positive and divide the length " +
                                                 std::to_string(length));
  }
  const auto n = static_cast<int64_t>(chunk);
  for (uint64_t offset = 0; offset < length; offset += chunk) {
    chiprt::Scope chunk_scope(orch);
    TaskArgs sum;
    sum.in(a.view({chunk}, {offset})).in(b.view({chunk}, {offset})).out({chunk}, DataType::F32);
    sum.scalar(n);
    orch.submit(proto::kAdd, CoreType::AIV, sum);
    const Tensor s = sum.output(0);

    TaskArgs plus_one;
    plus_one.in(s).out({chunk}, DataType::F32).scalar(n).scalar(1.0f);
    orch.submit(proto::kAddScalar, CoreType::AIV, plus_one);
    TaskArgs plus_two;
    plus_two.in(s).out({chunk}, DataType::F32).scalar(n).scalar(2.0f);
    orch.submit(proto::kAddScalar, CoreType::AIV, plus_two);
    {
      chiprt::Scope product_scope(orch);
      TaskArgs product;
      product.in(plus_one.output(0)).in(plus_two.output(0)).out({chunk}, DataType::F32);
      product.scalar(n);
      orch.submit(proto::kMul, CoreType::AIV, product);

      TaskArgs result;
      result.in(product.output(0)).in(s).output_existing(f.view({chunk}, {offset})).scalar(n);
      orch.submit(proto::kAddInto, CoreType::AIV, result);
    }
  }
}
