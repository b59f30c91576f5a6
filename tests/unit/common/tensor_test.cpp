#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "chiprt/status.h"
#include "chiprt/tensor.h"

namespace chiprt {
namespace {

constexpr uint64_t kBase = 0x100000;

// Runs `fn`, expects Error with `code` whose message contains `needle`.
template <class Fn>
void expect_error(Fn&& fn, StatusCode code, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown; expected " << status_name(code) << " with '" << needle
                  << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos)
        << "message '" << e.message() << "' lacks '" << needle << "'";
  }
}

// Element index (from buffer.addr) of the element at `idx`.
uint64_t element_at(const Tensor& t, std::vector<uint64_t> idx) {
  uint64_t e = t.start_offset;
  for (uint32_t d = 0; d < t.ndim; ++d) e += idx[d] * t.strides[d];
  return e;
}

Tensor matrix(uint64_t rows, uint64_t cols, DataType dtype = DataType::F32) {
  return Tensor::make({kBase, rows * cols * element_size(dtype)}, {rows, cols}, dtype);
}

TEST(TensorMakeTest, ContiguousRowMajor) {
  const Tensor t = Tensor::make({kBase, 2 * 3 * 4 * 2}, {2, 3, 4}, DataType::F16);
  EXPECT_EQ(t.ndim, 3u);
  EXPECT_EQ(t.shape[0], 2u);
  EXPECT_EQ(t.shape[2], 4u);
  EXPECT_EQ(t.strides[0], 12u);
  EXPECT_EQ(t.strides[1], 4u);
  EXPECT_EQ(t.strides[2], 1u);
  EXPECT_EQ(t.numel(), 24u);
  EXPECT_EQ(t.element_bytes(), 2u);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.data_addr(), kBase);
  EXPECT_EQ(t.owner_task, kNoTask);
  uint64_t lo = 1, hi = 1;
  t.byte_extent(&lo, &hi);
  EXPECT_EQ(lo, 0u);
  EXPECT_EQ(hi, 48u);
}

TEST(TensorMakeTest, StartOffsetAndExactFit) {
  const Tensor t = Tensor::make({kBase, 40}, {8}, DataType::F32, 2);
  EXPECT_EQ(t.data_addr(), kBase + 8);
  uint64_t lo = 0, hi = 0;
  t.byte_extent(&lo, &hi);
  EXPECT_EQ(lo, 8u);
  EXPECT_EQ(hi, 40u);
  expect_error(
      [] {
        Tensor::make({kBase, 40}, {8}, DataType::F32, 3);
      },
      StatusCode::ViewOutOfBounds, "needs 44 bytes but the buffer holds 40");
}

TEST(TensorMakeTest, RejectsBadRankDtypeAndOverflow) {
  expect_error(
      [] {
        Tensor::make({kBase, 1024}, std::span<const uint64_t>(), DataType::F32);
      },
      StatusCode::InvalidArgument, "rank 0");
  expect_error(
      [] {
        Tensor::make({kBase, 1024}, {1, 1, 1, 1, 1, 1}, DataType::F32);
      },
      StatusCode::InvalidArgument, "rank 6");
  expect_error(
      [] {
        Tensor::make({kBase, 1024}, {4}, static_cast<DataType>(99));
      },
      StatusCode::InvalidArgument, "dtype value 99");
  expect_error(
      [] {
        Tensor::make({kBase, 1024}, {1ull << 40, 1ull << 40}, DataType::F32);
      },
      StatusCode::ViewOutOfBounds, "64-bit");
  expect_error(
      [] {
        Tensor::make({kBase, 1024}, {1ull << 62}, DataType::F32);
      },
      StatusCode::ViewOutOfBounds, "64-bit");
  expect_error(
      [] {
        Tensor::make({kBase, 1024}, {4}, DataType::F32, ~0ull - 1);
      },
      StatusCode::ViewOutOfBounds, "64-bit");
}

TEST(TensorMakeTest, NullBufferHoldsNothing) {
  expect_error([] { Tensor::make(DeviceBuffer{}, {4}, DataType::F32); },
               StatusCode::ViewOutOfBounds, "needs 16 bytes but the buffer holds 0");
  EXPECT_EQ(Tensor::make(DeviceBuffer{}, {0}, DataType::F32).numel(), 0u);
}

TEST(TensorMakeTest, ZeroSizedDimensionHasEmptyExtent) {
  const Tensor t = Tensor::make({kBase, 16}, {4, 0}, DataType::F32, 2);
  EXPECT_EQ(t.numel(), 0u);
  EXPECT_TRUE(t.is_contiguous());
  uint64_t lo = 7, hi = 7;
  t.byte_extent(&lo, &hi);
  EXPECT_EQ(lo, 0u);
  EXPECT_EQ(hi, 0u);
  expect_error(
      [] {
        Tensor::make({kBase, 16}, {0}, DataType::F32, 5);
      },
      StatusCode::ViewOutOfBounds, "needs 20 bytes");
}

TEST(TensorViewTest, SubBlockAddressesMatchTheSource) {
  const Tensor t = matrix(8, 8);
  const Tensor v = t.view({4, 2}, {2, 5});
  EXPECT_EQ(v.shape[0], 4u);
  EXPECT_EQ(v.shape[1], 2u);
  EXPECT_EQ(v.strides[0], 8u);
  EXPECT_EQ(v.strides[1], 1u);
  EXPECT_FALSE(v.is_contiguous());
  for (uint64_t i = 0; i < 4; ++i) {
    for (uint64_t j = 0; j < 2; ++j) {
      EXPECT_EQ(element_at(v, {i, j}), element_at(t, {i + 2, j + 5}));
    }
  }
  uint64_t lo = 0, hi = 0;
  v.byte_extent(&lo, &hi);
  EXPECT_EQ(lo, (2 * 8 + 5) * 4u);
  EXPECT_EQ(hi, (5 * 8 + 6 + 1) * 4u);
}

TEST(TensorViewTest, KeepsBufferDtypeOwnerAndVersion) {
  Tensor t = matrix(8, 8, DataType::I16);
  t.owner_task = 7;
  t.version = 3;
  for (const Tensor& v :
       {t.view({2, 2}, {1, 1}), t.slice(1, 0, 8, 2), t.reshape({64}), t.transpose(0, 1)}) {
    EXPECT_EQ(v.buffer, t.buffer);
    EXPECT_EQ(v.dtype, DataType::I16);
    EXPECT_EQ(v.owner_task, 7);
    EXPECT_EQ(v.version, 3u);
  }
}

TEST(TensorViewTest, OutOfBoundsNamesTheDimension) {
  const Tensor t = matrix(4, 8);
  expect_error(
      [&] {
        t.view({2, 4}, {0, 6});
      },
      StatusCode::ViewOutOfBounds, "view dim 1: offset 6 + size 4 exceeds extent 8");
  expect_error(
      [&] {
        t.view({5, 1}, {0, 0});
      },
      StatusCode::ViewOutOfBounds, "view dim 0: offset 0 + size 5 exceeds extent 4");
  expect_error([&] { t.view({1, 1}, {~0ull, 0}); }, StatusCode::ViewOutOfBounds, "view dim 0");
  expect_error([&] { t.view({2}, {0}); }, StatusCode::InvalidArgument, "rank 2");
  EXPECT_NO_THROW(t.view({0, 8}, {4, 0}));  // empty view at the very end
}

TEST(TensorSliceTest, StepAndAddresses) {
  const Tensor t = matrix(4, 10);
  const Tensor s = t.slice(1, 1, 8, 3);  // columns 1, 4, 7
  EXPECT_EQ(s.shape[1], 3u);
  EXPECT_EQ(s.strides[1], 3u);
  for (uint64_t i = 0; i < 4; ++i) {
    for (uint64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(element_at(s, {i, j}), element_at(t, {i, 1 + 3 * j}));
    }
  }
  EXPECT_EQ(t.slice(0, 2, 2).shape[0], 0u);
  EXPECT_EQ(t.slice(1, 9, 10, 100).shape[1], 1u);
}

TEST(TensorSliceTest, ErrorsNameTheDimension) {
  const Tensor t = matrix(4, 10);
  expect_error([&] { t.slice(1, 0, 11); }, StatusCode::ViewOutOfBounds,
               "slice dim 1: end 11 exceeds extent 10");
  expect_error([&] { t.slice(0, 3, 2); }, StatusCode::ViewOutOfBounds,
               "slice dim 0: start 3 is after end 2");
  expect_error([&] { t.slice(1, 0, 4, 0); }, StatusCode::InvalidArgument, "slice dim 1: step");
  expect_error([&] { t.slice(2, 0, 1); }, StatusCode::InvalidArgument, "dim 2");
}

TEST(TensorReshapeTest, ContiguousOnly) {
  const Tensor t = matrix(4, 6);
  const Tensor r = t.reshape({2, 3, 4});
  EXPECT_EQ(r.ndim, 3u);
  EXPECT_EQ(r.strides[0], 12u);
  EXPECT_EQ(r.strides[1], 4u);
  EXPECT_EQ(r.start_offset, t.start_offset);
  // A view that keeps full rows is still contiguous.
  const Tensor rows = t.view({2, 6}, {1, 0});
  EXPECT_TRUE(rows.is_contiguous());
  EXPECT_EQ(rows.reshape({12}).start_offset, 6u);

  expect_error([&] { t.reshape({5, 5}); }, StatusCode::InvalidArgument, "element count");
  expect_error(
      [&] {
        t.view({2, 3}, {0, 0}).reshape({6});
      },
      StatusCode::InvalidArgument, "copy it into a contiguous buffer first");
  expect_error([&] { t.transpose(0, 1).reshape({24}); }, StatusCode::InvalidArgument,
               "non-contiguous");
  expect_error([&] { t.reshape({1, 1, 1, 1, 1, 24}); }, StatusCode::InvalidArgument, "rank 6");
  expect_error(
      [&] {
        t.reshape({1ull << 32, 1ull << 32});
      },
      StatusCode::InvalidArgument, "element count");
}

TEST(TensorTransposeTest, SwapsShapeAndStrides) {
  const Tensor t = Tensor::make({kBase, 2 * 3 * 5 * 8}, {2, 3, 5}, DataType::F64);
  const Tensor tr = t.transpose(0, 2);
  EXPECT_EQ(tr.shape[0], 5u);
  EXPECT_EQ(tr.shape[2], 2u);
  EXPECT_FALSE(tr.is_contiguous());
  for (uint64_t i = 0; i < 2; ++i)
    for (uint64_t j = 0; j < 3; ++j)
      for (uint64_t k = 0; k < 5; ++k)
        EXPECT_EQ(element_at(tr, {k, j, i}), element_at(t, {i, j, k}));
  uint64_t lo_t, hi_t, lo_tr, hi_tr;
  t.byte_extent(&lo_t, &hi_t);
  tr.byte_extent(&lo_tr, &hi_tr);
  EXPECT_EQ(lo_t, lo_tr);
  EXPECT_EQ(hi_t, hi_tr);
  expect_error([&] { t.transpose(0, 3); }, StatusCode::InvalidArgument, "rank 3");
}

TEST(TensorPermuteTest, MapsEveryElement) {
  const Tensor t = Tensor::make({kBase, 2 * 3 * 4 * 4}, {2, 3, 4}, DataType::I32);
  const uint32_t order[] = {2, 0, 1};
  const Tensor p = t.permute(order);
  EXPECT_EQ(p.shape[0], 4u);
  EXPECT_EQ(p.shape[1], 2u);
  EXPECT_EQ(p.shape[2], 3u);
  for (uint64_t i = 0; i < 2; ++i)
    for (uint64_t j = 0; j < 3; ++j)
      for (uint64_t k = 0; k < 4; ++k)
        EXPECT_EQ(element_at(p, {k, i, j}), element_at(t, {i, j, k}));
  const uint32_t identity[] = {0, 1, 2};
  EXPECT_TRUE(t.permute(identity).is_contiguous());

  const uint32_t repeated[] = {0, 0, 1};
  const uint32_t too_big[] = {0, 1, 3};
  const uint32_t too_short[] = {0, 1};
  expect_error([&] { t.permute(repeated); }, StatusCode::InvalidArgument, "order[1]=0 repeats");
  expect_error([&] { t.permute(too_big); }, StatusCode::InvalidArgument, "order[2]=3");
  expect_error([&] { t.permute(too_short); }, StatusCode::InvalidArgument, "2 entries");
}

TEST(TensorTest, BroadcastStrideAndSizeOneDims) {
  Tensor t = Tensor::make({kBase, 16}, {4}, DataType::F32);
  t.strides[0] = 0;  // every element is element 0
  uint64_t lo, hi;
  t.byte_extent(&lo, &hi);
  EXPECT_EQ(lo, 0u);
  EXPECT_EQ(hi, 4u);
  EXPECT_FALSE(t.is_contiguous());
  // Strides of size-1 dims do not affect addresses, so they do not break contiguity.
  Tensor u = Tensor::make({kBase, 32}, {1, 8}, DataType::F32);
  u.strides[0] = 1234;
  EXPECT_TRUE(u.is_contiguous());
}

TEST(TensorTest, HandMadeTensorsAreCheckedToo) {
  Tensor t;  // default: rank 0
  EXPECT_EQ(t.numel(), 0u);
  expect_error([&] { t.slice(0, 0, 0); }, StatusCode::InvalidArgument, "rank 0");
  t.ndim = 9;  // corrupt: accessors must stay inside the arrays
  EXPECT_EQ(t.numel(), 0u);
  expect_error([&] { t.transpose(0, 1); }, StatusCode::InvalidArgument, "rank 9");
  EXPECT_FALSE(t.to_string().empty());

  Tensor lying = Tensor::make({kBase, 64}, {4, 4}, DataType::F32);
  lying.buffer.size = 32;  // shrunk after construction: views re-check the buffer
  expect_error([&] { lying.view({4, 4}, {0, 0}); }, StatusCode::ViewOutOfBounds, "buffer holds 32");
}

// Tensor::view against a reference written with 128-bit arithmetic, over hand-made tensors whose
// strides, offsets and buffer sizes are random (small, near the limit, or past 64 bits), so both
// the single-pass accept path and every way to fail are exercised: a view is accepted exactly
// when every size fits its extent and, for a non-empty view of a buffer-backed tensor, every
// element lies inside the buffer; a rejected view throws ViewOutOfBounds.
TEST(TensorTest, ViewMatchesA128BitReference) {
  using u128 = unsigned __int128;
  constexpr u128 kLimit = u128{1} << 64;
  std::mt19937_64 rng(20261130);
  auto pick = [&](uint64_t small) -> uint64_t {
    switch (rng() % 8) {
      case 0:
        return ~0ull - rng() % 4;
      case 1:
        return (1ull << 62) + rng() % 4;
      case 2:
        return 0;
      default:
        return rng() % small;
    }
  };
  auto upto = [&](uint64_t n) { return n == ~0ull ? rng() : rng() % (n + 1); };  // [0, n]
  int accepted = 0;
  int rejected = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    Tensor t;
    t.ndim = 1 + static_cast<uint32_t>(rng() % kMaxTensorDims);
    t.dtype = static_cast<DataType>(rng() % kDataTypeCount);
    t.buffer = {rng() % 8 == 0 ? 0 : kBase, pick(4096)};
    t.start_offset = pick(64);
    std::vector<uint64_t> shape(t.ndim);
    std::vector<uint64_t> offsets(t.ndim);
    for (uint32_t d = 0; d < t.ndim; ++d) {
      t.shape[d] = pick(9);
      t.strides[d] = pick(40);
      offsets[d] = rng() % 4 == 0 ? pick(9) : upto(t.shape[d]);
      const uint64_t room = t.shape[d] >= offsets[d] ? t.shape[d] - offsets[d] : 0;
      shape[d] = rng() % 8 == 0 ? pick(9) : upto(room);
    }
    // Reference.
    bool ok = true;
    u128 start = t.start_offset;
    u128 reach = 0;
    bool empty = false;
    for (uint32_t d = 0; d < t.ndim; ++d) {
      ok &= u128{offsets[d]} + shape[d] <= t.shape[d];
      start += u128{offsets[d]} * t.strides[d];
      ok &= start < kLimit;
      empty |= shape[d] == 0;
      if (shape[d] > 0) reach += u128{shape[d] - 1} * t.strides[d];
    }
    if (ok && !t.buffer.empty()) {
      const u128 end = empty ? start : start + reach + 1;
      ok = end < kLimit && end * element_size(t.dtype) < kLimit &&
           end * element_size(t.dtype) <= t.buffer.size;
    }
    try {
      const Tensor v = t.view(shape, offsets);
      ASSERT_TRUE(ok) << "accepted " << v.to_string() << " of " << t.to_string();
      EXPECT_TRUE(u128{v.start_offset} == start);
      for (uint32_t d = 0; d < t.ndim; ++d) {
        EXPECT_EQ(v.shape[d], shape[d]);
        EXPECT_EQ(v.strides[d], t.strides[d]);
      }
      EXPECT_EQ(v.buffer, t.buffer);
      EXPECT_EQ(v.ndim, t.ndim);
      ++accepted;
    } catch (const Error& e) {
      ASSERT_FALSE(ok) << "rejected a valid view of " << t.to_string() << ": " << e.what();
      EXPECT_EQ(e.code(), StatusCode::ViewOutOfBounds) << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(accepted, 2000);
  EXPECT_GT(rejected, 2000);
}

TEST(TensorTest, ToStringNamesTheLayout) {
  Tensor t = matrix(2, 3);
  t.owner_task = 5;
  const std::string s = t.to_string();
  EXPECT_NE(s.find("f32"), std::string::npos) << s;
  EXPECT_NE(s.find("shape=[2, 3]"), std::string::npos) << s;
  EXPECT_NE(s.find("strides=[3, 1]"), std::string::npos) << s;
  EXPECT_NE(s.find("owner_task=5"), std::string::npos) << s;
}

}  // namespace
}  // namespace chiprt
