#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstddef>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "callable_v2_container.h"
#include "chiprt/callable.h"
#include "common/callable_format.h"
#include "support.h"

namespace chiprt {
namespace {

extern "C" void test_kernel_add(int64_t* args) {
  args[0] += 1;
}
extern "C" void test_kernel_mul(int64_t* args) {
  args[0] *= 3;
}
void test_orchestration(Orchestration&, const TaskArgs&) {}

std::vector<uint8_t> object_bytes(std::size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

// Orchestration shared object + two shared-object kernels + one in-process kernel.
std::vector<uint8_t> mixed_container(std::size_t orch_bytes = 100, uint8_t kernel_seed = 1) {
  const auto orch = object_bytes(orch_bytes, 9);
  const auto k0 = object_bytes(70, kernel_seed);
  const auto k1 = object_bytes(3, 5);
  return CallableBuilder()
      .orchestration_object(orch, ArgSignature::of({ArgTag::In, ArgTag::Out}, 1))
      .kernel_object(4, CoreType::AIC, k0,
                     ArgSignature::of({ArgTag::In, ArgTag::In, ArgTag::Out}, 0))
      .kernel_object(17, CoreType::AIV, k1, ArgSignature::of({ArgTag::InOut}, 2))
      .kernel_function(255, CoreType::MIX, &test_kernel_add, ArgSignature::of({ArgTag::NoDep}, 0))
      .build();
}

template <class T>
void patch(std::vector<uint8_t>& bytes, std::size_t offset, T value) {
  ASSERT_LE(offset + sizeof(T), bytes.size());
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

constexpr std::size_t kOrchDesc = sizeof(ContainerHeader);
std::size_t kernel_desc(std::size_t i) {
  return sizeof(ContainerHeader) + sizeof(OrchestrationDesc) + i * sizeof(KernelDesc);
}

void expect_malformed(const std::vector<uint8_t>& bytes, const std::string& needle,
                      StatusCode code = StatusCode::MalformedCallable) {
  ParsedCallable parsed;
  const Status s = parse_callable(bytes, &parsed);
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message '" << s.message() << "' lacks '" << needle << "'";
}

template <class Fn>
void expect_build_error(Fn&& fn, StatusCode code, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "build did not throw; expected '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(e.message().find(needle), std::string::npos) << e.message();
  }
}

// Everything a successful parse promises, checked against the buffer it parsed.
void expect_consistent(const std::vector<uint8_t>& bytes, const ParsedCallable& p) {
  const uint8_t* lo = bytes.data();
  const uint8_t* hi = bytes.data() + bytes.size();
  auto check_object = [&](const ParsedObject& o) {
    ASSERT_GE(o.bytes.data(), lo);
    ASSERT_LE(o.bytes.data() + o.bytes.size(), hi);
    EXPECT_EQ((o.bytes.data() - lo) % kObjectAlign, 0);
    // Objects follow the header and both descriptors, wherever those were placed.
    EXPECT_GE(static_cast<std::size_t>(o.bytes.data() - lo),
              sizeof(ContainerHeader) + sizeof(OrchestrationDesc));
    if (o.kind == ObjectKind::InProcess) {
      EXPECT_EQ(o.bytes.size(), 8u);
      EXPECT_NE(o.function_addr(), 0u);
    } else {
      EXPECT_EQ(o.kind, ObjectKind::SharedObject);
      EXPECT_GT(o.bytes.size(), 0u);
      EXPECT_EQ(o.function_addr(), 0u);
    }
    EXPECT_EQ(o.checksum, content_hash64(o.bytes));
  };
  auto check_sig = [](const ArgSignature& s) {
    EXPECT_LE(s.tensor_count, kMaxTaskTensors);
    EXPECT_LE(s.scalar_count, kMaxTaskScalars);
    for (int i = 0; i < s.tensor_count; ++i) EXPECT_LT(static_cast<int>(s.tags[i]), kArgTagCount);
  };
  check_object(p.orchestration);
  check_sig(p.orchestration_signature);
  EXPECT_GE(p.kernels.size(), 1u);
  EXPECT_LE(p.kernels.size(), kMaxKernelsPerCallable);
  std::set<int32_t> ids;
  for (const ParsedKernel& k : p.kernels) {
    check_object(k.object);
    check_sig(k.signature);
    EXPECT_GE(k.func_id, 0);
    EXPECT_LT(k.func_id, kMaxFuncId);
    EXPECT_TRUE(ids.insert(k.func_id).second);
    EXPECT_LT(static_cast<int>(k.core), kCoreTypeCount);
    if (k.object.kind == ObjectKind::SharedObject) {
      EXPECT_EQ(kernel_symbol_problem(k.symbol), nullptr) << k.symbol;
      EXPECT_EQ(kernel_name_problem(k.name), nullptr) << k.name;
    } else {
      EXPECT_TRUE(k.symbol.empty());
      if (!k.name.empty()) {
        EXPECT_EQ(kernel_name_problem(k.name), nullptr) << k.name;
      }
    }
  }
  EXPECT_EQ(p.content_hash, content_hash64(bytes));
}

TEST(CallableBuilderTest, RoundTripSharedObjectsAndInProcessFunctions) {
  const auto orch = object_bytes(100, 9);
  const auto k0 = object_bytes(70, 1);
  const std::vector<uint8_t> bytes = mixed_container();
  ParsedCallable p;
  ASSERT_TRUE(parse_callable(bytes, &p).is_ok()) << parse_callable(bytes, &p).to_string();
  expect_consistent(bytes, p);

  EXPECT_EQ(p.orchestration.kind, ObjectKind::SharedObject);
  EXPECT_TRUE(std::equal(orch.begin(), orch.end(), p.orchestration.bytes.begin(),
                         p.orchestration.bytes.end()));
  EXPECT_EQ(p.orchestration_signature.tensor_count, 2);
  EXPECT_EQ(p.orchestration_signature.tags[1], ArgTag::Out);
  EXPECT_EQ(p.orchestration_signature.scalar_count, 1);

  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.kernels[0].func_id, 4);
  EXPECT_EQ(p.kernels[0].core, CoreType::AIC);
  EXPECT_TRUE(std::equal(k0.begin(), k0.end(), p.kernels[0].object.bytes.begin(),
                         p.kernels[0].object.bytes.end()));
  EXPECT_EQ(p.kernels[0].signature.tensor_count, 3);
  EXPECT_EQ(p.kernels[1].func_id, 17);
  EXPECT_EQ(p.kernels[1].core, CoreType::AIV);
  EXPECT_EQ(p.kernels[1].signature.tags[0], ArgTag::InOut);
  EXPECT_EQ(p.kernels[1].signature.scalar_count, 2);
  EXPECT_EQ(p.kernels[2].func_id, 255);
  EXPECT_EQ(p.kernels[2].core, CoreType::MIX);
  EXPECT_EQ(p.kernels[2].object.kind, ObjectKind::InProcess);

  // The in-process object is the callable function itself.
  auto fn = reinterpret_cast<KernelEntry>(p.kernels[2].object.function_addr());
  int64_t arg = 41;
  fn(&arg);
  EXPECT_EQ(arg, 42);
  for (const ParsedKernel& k : p.kernels) {
    EXPECT_EQ((k.object.bytes.data() - bytes.data()) % kObjectAlign, 0);
  }
}

TEST(CallableBuilderTest, InProcessOrchestration) {
  const std::vector<uint8_t> bytes =
      CallableBuilder()
          .orchestration_function(&test_orchestration, ArgSignature::of({}, 0))
          .kernel_function(0, CoreType::AIV, &test_kernel_mul, ArgSignature::of({ArgTag::InOut}, 0))
          .build();
  ParsedCallable p;
  ASSERT_TRUE(parse_callable(bytes, &p).is_ok());
  expect_consistent(bytes, p);
  EXPECT_EQ(p.orchestration.kind, ObjectKind::InProcess);
  EXPECT_EQ(p.orchestration.function_addr(), reinterpret_cast<uint64_t>(&test_orchestration));
  auto fn = reinterpret_cast<KernelEntry>(p.kernels[0].object.function_addr());
  int64_t arg = 5;
  fn(&arg);
  EXPECT_EQ(arg, 15);
}

TEST(CallableBuilderTest, RejectsIncompleteAndInvalidCallables) {
  const auto so = object_bytes(16, 0);
  const ArgSignature sig = ArgSignature::of({ArgTag::In}, 0);
  expect_build_error([&] { CallableBuilder().kernel_object(0, CoreType::AIC, so, sig).build(); },
                     StatusCode::EmptyCallable, "no orchestration");
  expect_build_error([&] { CallableBuilder().orchestration_object(so, sig).build(); },
                     StatusCode::EmptyCallable, "no kernels");
  auto with_kernel = [&](int32_t id, CoreType core, ArgSignature ksig) {
    return CallableBuilder()
        .orchestration_object(so, sig)
        .kernel_object(id, core, so, ksig)
        .build();
  };
  expect_build_error([&] { with_kernel(-1, CoreType::AIC, sig); }, StatusCode::InvalidArgument,
                     "func_id must be in [0, 256)");
  expect_build_error([&] { with_kernel(kMaxFuncId, CoreType::AIC, sig); },
                     StatusCode::InvalidArgument, "func_id must be in [0, 256)");
  expect_build_error([&] { with_kernel(1, static_cast<CoreType>(3), sig); },
                     StatusCode::InvalidArgument, "core type 3");
  ArgSignature bad = sig;
  bad.tensor_count = kMaxTaskTensors + 1;
  expect_build_error([&] { with_kernel(1, CoreType::AIC, bad); }, StatusCode::InvalidArgument,
                     "tensor_count 17 exceeds kMaxTaskTensors");
  bad = sig;
  bad.scalar_count = kMaxTaskScalars + 1;
  expect_build_error([&] { with_kernel(1, CoreType::AIC, bad); }, StatusCode::InvalidArgument,
                     "scalar_count 17");
  bad = sig;
  bad.tags[0] = static_cast<ArgTag>(7);
  expect_build_error([&] { with_kernel(1, CoreType::AIC, bad); }, StatusCode::InvalidArgument,
                     "tags[0]=7");
  expect_build_error(
      [&] {
        CallableBuilder()
            .orchestration_object(so, sig)
            .kernel_object(3, CoreType::AIC, so, sig)
            .kernel_object(3, CoreType::AIV, so, sig)
            .build();
      },
      StatusCode::InvalidArgument, "kernel 1 (func_id 3): func_id already used by kernel 0");
  expect_build_error(
      [&] {
        CallableBuilder()
            .orchestration_object(so, sig)
            .kernel_object(3, CoreType::AIC, std::span<const uint8_t>(), sig)
            .build();
      },
      StatusCode::InvalidArgument, "a shared object must be 1..");
  expect_build_error(
      [&] { CallableBuilder().orchestration_object(std::span<const uint8_t>(), sig).build(); },
      StatusCode::EmptyCallable, "no kernels");
  expect_build_error(
      [&] {
        CallableBuilder()
            .orchestration_object(std::span<const uint8_t>(), sig)
            .kernel_object(0, CoreType::AIC, so, sig)
            .build();
      },
      StatusCode::InvalidArgument, "orchestration object: 0 bytes");
  expect_build_error([&] { CallableBuilder().kernel_function(0, CoreType::AIC, nullptr, sig); },
                     StatusCode::InvalidArgument, "function pointer is null");
  expect_build_error([&] { CallableBuilder().orchestration_function(nullptr, sig); },
                     StatusCode::InvalidArgument, "function pointer is null");
  CallableBuilder many;
  many.orchestration_object(so, sig);
  for (int i = 0; i <= static_cast<int>(kMaxKernelsPerCallable); ++i) {
    many.kernel_function(i, CoreType::AIV, &test_kernel_add, sig);
  }
  expect_build_error([&] { many.build(); }, StatusCode::InvalidArgument,
                     "more than 128 (kMaxKernelsPerCallable)");
}

TEST(CallableBuilderTest, MaxKernelsRoundTrip) {
  CallableBuilder b;
  b.orchestration_function(&test_orchestration, ArgSignature::of({}, 0));
  for (int i = 0; i < static_cast<int>(kMaxKernelsPerCallable); ++i) {
    b.kernel_function(kMaxFuncId - 1 - i, CoreType::AIV, &test_kernel_add, ArgSignature::of({}, 1));
  }
  const auto bytes = b.build();
  ParsedCallable p;
  ASSERT_TRUE(parse_callable(bytes, &p).is_ok());
  expect_consistent(bytes, p);
  EXPECT_EQ(p.kernels.size(), kMaxKernelsPerCallable);
}

TEST(CallableHashTest, StableAndSensitive) {
  const auto a = mixed_container();
  const auto b = mixed_container();
  EXPECT_EQ(a, b);  // the builder is deterministic, padding included
  ParsedCallable pa, pb;
  ASSERT_TRUE(parse_callable(a, &pa).is_ok());
  ASSERT_TRUE(parse_callable(b, &pb).is_ok());
  EXPECT_EQ(pa.content_hash, pb.content_hash);
  EXPECT_EQ(pa.kernel_image_hash, pb.kernel_image_hash);
  EXPECT_EQ(pa.content_hash, XXH3_64bits(a.data(), a.size()));
  EXPECT_EQ(content_hash64(a), XXH3_64bits(a.data(), a.size()));
  EXPECT_NE(pa.content_hash, pa.kernel_image_hash);

  // One byte of a kernel object changes both hashes.
  const auto c = mixed_container(100, 2);
  ParsedCallable pc;
  ASSERT_TRUE(parse_callable(c, &pc).is_ok());
  EXPECT_NE(pc.content_hash, pa.content_hash);
  EXPECT_NE(pc.kernel_image_hash, pa.kernel_image_hash);

  // A different orchestration object (of another size, which moves every kernel object) changes
  // the content hash only.
  const auto d = mixed_container(300);
  ParsedCallable pd;
  ASSERT_TRUE(parse_callable(d, &pd).is_ok());
  EXPECT_NE(pd.content_hash, pa.content_hash);
  EXPECT_EQ(pd.kernel_image_hash, pa.kernel_image_hash);

  // Flipping one byte inside an object: its checksum no longer matches.
  auto e = a;
  const std::size_t k1_offset = pa.kernels[1].object.bytes.data() - a.data();
  e[k1_offset] ^= 0x5A;
  expect_malformed(e, "kernel[1] (func_id 17).object: checksum");
}

TEST(CallableHashTest, KernelMetadataIsPartOfTheKernelImageHash) {
  const auto so = object_bytes(32, 3);
  auto build = [&](int32_t id, CoreType core, ArgSignature sig) {
    return CallableBuilder()
        .orchestration_object(so, ArgSignature::of({}, 0))
        .kernel_object(id, core, so, sig)
        .build();
  };
  ParsedCallable base, other_id, other_core, other_sig;
  ASSERT_TRUE(
      parse_callable(build(1, CoreType::AIC, ArgSignature::of({ArgTag::In}, 0)), &base).is_ok());
  ASSERT_TRUE(parse_callable(build(2, CoreType::AIC, ArgSignature::of({ArgTag::In}, 0)), &other_id)
                  .is_ok());
  ASSERT_TRUE(
      parse_callable(build(1, CoreType::AIV, ArgSignature::of({ArgTag::In}, 0)), &other_core)
          .is_ok());
  ASSERT_TRUE(
      parse_callable(build(1, CoreType::AIC, ArgSignature::of({ArgTag::Out}, 0)), &other_sig)
          .is_ok());
  EXPECT_NE(base.kernel_image_hash, other_id.kernel_image_hash);
  EXPECT_NE(base.kernel_image_hash, other_core.kernel_image_hash);
  EXPECT_NE(base.kernel_image_hash, other_sig.kernel_image_hash);

  auto build_named = [&](std::string_view symbol, std::string_view name) {
    return CallableBuilder()
        .orchestration_object(so, ArgSignature::of({}, 0))
        .kernel_object(1, CoreType::AIC, so, ArgSignature::of({ArgTag::In}, 0), symbol, name)
        .build();
  };
  ParsedCallable named_default, other_symbol, other_name;
  ASSERT_TRUE(parse_callable(build_named(kKernelSymbol, "kernel_entry"), &named_default).is_ok());
  ASSERT_TRUE(parse_callable(build_named("other_entry", ""), &other_symbol).is_ok());
  ASSERT_TRUE(parse_callable(build_named(kKernelSymbol, "gemm"), &other_name).is_ok());
  // A name equal to the default is the default; another symbol or name is another kernel.
  EXPECT_EQ(base.kernel_image_hash, named_default.kernel_image_hash);
  EXPECT_NE(base.kernel_image_hash, other_symbol.kernel_image_hash);
  EXPECT_NE(base.kernel_image_hash, other_name.kernel_image_hash);
  EXPECT_NE(other_symbol.kernel_image_hash, other_name.kernel_image_hash);
}

TEST(CallableParseTest, EveryTruncationIsRejected) {
  const auto full = mixed_container();
  for (std::size_t len = 0; len < full.size(); ++len) {
    // An exact-size copy so that ASan sees any read past the end.
    const std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(len));
    ParsedCallable p;
    const Status s = parse_callable(cut, &p);
    EXPECT_EQ(s.code(), StatusCode::MalformedCallable) << "length " << len;
    EXPECT_FALSE(s.message().empty());
  }
  expect_malformed({}, "container is 0 bytes, smaller than the 48-byte header");
  expect_malformed(std::vector<uint8_t>(full.begin(), full.begin() + 100),
                   "header.total_size=" + std::to_string(full.size()) +
                       " does not match the container size 100");
}

TEST(CallableParseTest, EveryDescriptorByteFlipParsesConsistentlyOrIsRejected) {
  const auto full = mixed_container();
  const std::size_t descriptor_bytes = kernel_desc(3);
  int accepted = 0;
  for (std::size_t i = 0; i < descriptor_bytes; ++i) {
    for (uint8_t mask : {0x01, 0x10, 0x80, 0xFF}) {
      auto bytes = full;
      bytes[i] ^= mask;
      ParsedCallable p;
      const Status s = parse_callable(bytes, &p);
      if (s.is_ok()) {
        ++accepted;
        SCOPED_TRACE("byte " + std::to_string(i) + " mask " + std::to_string(mask));
        expect_consistent(bytes, p);
        EXPECT_NE(p.content_hash, content_hash64(full));
      } else {
        EXPECT_TRUE(s.code() == StatusCode::MalformedCallable ||
                    s.code() == StatusCode::EmptyCallable)
            << s.to_string();
        EXPECT_FALSE(s.message().empty());
      }
    }
  }
  // Some flips are legitimately valid (a func_id, a core type or a tag becomes another valid one).
  EXPECT_GT(accepted, 0);
}

TEST(CallableParseTest, HeaderCorruptionsNameTheField) {
  const auto good = mixed_container();
  auto b = good;
  b[0] = 'X';
  expect_malformed(b, "header.magic");
  b = good;
  patch<uint32_t>(b, offsetof(ContainerHeader, version), 4);
  expect_malformed(b, "header.version=4 is not supported (2..3 are); rebuild the container");
  b = good;
  patch<uint32_t>(b, offsetof(ContainerHeader, version), 1);
  expect_malformed(b,
                   "header.version=1 is not supported (2..3 are; version 1 containers carry no "
                   "object checksums)");
  b = good;  // a version 3 container read as version 2: its descriptors no longer line up
  patch<uint32_t>(b, offsetof(ContainerHeader, version), 2);
  ParsedCallable misread;
  EXPECT_FALSE(parse_callable(b, &misread).is_ok());
  b = good;
  patch<uint32_t>(b, offsetof(ContainerHeader, header_size), 64);
  expect_malformed(b, "header.header_size=64 must be 48");
  b = good;
  patch<uint64_t>(b, offsetof(ContainerHeader, total_size), good.size() + 1);
  expect_malformed(b, "header.total_size=");
  b = good;
  patch<uint32_t>(b, offsetof(ContainerHeader, reserved), 1);
  expect_malformed(b, "header.reserved=1");
  b = good;
  patch<uint32_t>(b, offsetof(ContainerHeader, kernel_count), kMaxKernelsPerCallable + 1);
  expect_malformed(b, "header.kernel_count=129 exceeds kMaxKernelsPerCallable");
  b = good;
  patch<uint32_t>(b, offsetof(ContainerHeader, kernel_count), 0);
  expect_malformed(b, "header.kernel_count=0", StatusCode::EmptyCallable);
  b = good;
  patch<uint32_t>(b, offsetof(ContainerHeader, kernel_count), 100);
  expect_malformed(b, "header.kernel_table: offset 104 + size 9600 exceeds the container size");
  b = good;
  patch<uint64_t>(b, offsetof(ContainerHeader, orchestration_offset), 49);
  expect_malformed(b, "header.orchestration.offset=49 is not 8-byte aligned");
  b = good;
  patch<uint64_t>(b, offsetof(ContainerHeader, orchestration_offset), 8);
  expect_malformed(b, "header.orchestration.offset=8 overlaps the header");
  b = good;
  patch<uint64_t>(b, offsetof(ContainerHeader, orchestration_offset), ~uint64_t{7});
  expect_malformed(b, "header.orchestration: offset");
  b = good;
  patch<uint64_t>(b, offsetof(ContainerHeader, kernel_table_offset), 56);
  expect_malformed(b, "header.kernel_table_offset=56 overlaps the orchestration descriptor");
}

TEST(CallableParseTest, ObjectCorruptionsNameTheField) {
  const auto good = mixed_container();
  ParsedCallable gp;
  ASSERT_TRUE(parse_callable(good, &gp).is_ok());
  const std::size_t k1_object = kernel_desc(1) + offsetof(KernelDesc, object);
  const uint64_t k1_offset = gp.kernels[1].object.bytes.data() - good.data();

  auto b = good;
  patch<uint64_t>(b, k1_object + offsetof(ObjectDesc, offset), k1_offset + 8);
  expect_malformed(
      b, "kernel[1].object.offset=" + std::to_string(k1_offset + 8) + " is not 64-byte aligned");
  b = good;
  patch<uint64_t>(b, k1_object + offsetof(ObjectDesc, offset), 64);
  expect_malformed(b, "kernel[1].object.offset=64 overlaps the descriptors");
  b = good;
  patch<uint64_t>(b, k1_object + offsetof(ObjectDesc, offset), ~uint64_t{63});
  expect_malformed(b, "kernel[1].object: offset");
  b = good;
  patch<uint64_t>(b, k1_object + offsetof(ObjectDesc, size), 4096);
  expect_malformed(b, "kernel[1].object: offset " + std::to_string(k1_offset) +
                          " + size 4096 exceeds the container size");
  b = good;
  patch<uint64_t>(b, k1_object + offsetof(ObjectDesc, size), kMaxObjectBytes + 1);
  expect_malformed(b, "kernel[1].object.size=268435457 must be in [1, 268435456]");
  b = good;
  patch<uint64_t>(b, k1_object + offsetof(ObjectDesc, size), 0);
  expect_malformed(b, "kernel[1].object.size=0");
  b = good;
  patch<uint32_t>(b, k1_object + offsetof(ObjectDesc, kind), 3);
  expect_malformed(b, "kernel[1].object.kind=3 is not an object kind");
  b = good;
  patch<uint32_t>(b, k1_object + offsetof(ObjectDesc, reserved), 9);
  expect_malformed(b, "kernel[1].object.reserved=9 must be 0");
  b = good;
  patch<uint32_t>(b, kOrchDesc + offsetof(OrchestrationDesc, object) + offsetof(ObjectDesc, kind),
                  0);
  expect_malformed(b, "orchestration.object.kind=0");

  // In-process objects: exactly 8 bytes holding a non-null address.
  const std::size_t k2_object = kernel_desc(2) + offsetof(KernelDesc, object);
  b = good;
  patch<uint64_t>(b, k2_object + offsetof(ObjectDesc, size), 16);
  expect_malformed(b, "kernel[2].object.size=16 must be 8 for an in-process function");
  b = good;  // a null address with a checksum that matches it
  patch<uint64_t>(b, gp.kernels[2].object.bytes.data() - good.data(), uint64_t{0});
  patch<uint64_t>(b, k2_object + offsetof(ObjectDesc, checksum),
                  content_hash64(std::vector<uint8_t>(8, 0)));
  expect_malformed(b, "kernel[2] (func_id 255).object: in-process function address is null");
  b = good;
  patch<uint32_t>(b, k1_object + offsetof(ObjectDesc, kind),
                  static_cast<uint32_t>(ObjectKind::InProcess));
  expect_malformed(b, "kernel[1].object.size=3 must be 8");
}

TEST(CallableParseTest, KernelAndSignatureCorruptionsNameTheField) {
  const auto good = mixed_container();
  auto b = good;
  patch<int32_t>(b, kernel_desc(1) + offsetof(KernelDesc, func_id), kMaxFuncId);
  expect_malformed(b, "kernel[1].func_id=256 is outside [0, 256)");
  b = good;
  patch<int32_t>(b, kernel_desc(0) + offsetof(KernelDesc, func_id), -5);
  expect_malformed(b, "kernel[0].func_id=-5");
  b = good;
  patch<int32_t>(b, kernel_desc(2) + offsetof(KernelDesc, func_id), 4);
  expect_malformed(b, "kernel[2].func_id=4 duplicates kernel[0]");
  b = good;
  patch<uint8_t>(b, kernel_desc(1) + offsetof(KernelDesc, core_type), 3);
  expect_malformed(b, "kernel[1].core_type=3");
  b = good;
  patch<uint8_t>(b, kernel_desc(1) + offsetof(KernelDesc, reserved) + 2, 1);
  expect_malformed(b, "kernel[1].reserved[2]=1 must be 0");

  const std::size_t k0_sig = kernel_desc(0) + offsetof(KernelDesc, signature);
  b = good;
  patch<uint8_t>(b, k0_sig + offsetof(SignatureDesc, tensor_count), kMaxTaskTensors + 1);
  expect_malformed(b, "kernel[0].signature.tensor_count=17 exceeds kMaxTaskTensors");
  b = good;
  patch<uint8_t>(b, k0_sig + offsetof(SignatureDesc, scalar_count), 200);
  expect_malformed(b, "kernel[0].signature.scalar_count=200 exceeds kMaxTaskScalars");
  b = good;
  patch<uint8_t>(b, k0_sig + offsetof(SignatureDesc, tags) + 2, kArgTagCount);
  expect_malformed(b, "kernel[0].signature.tags[2]=5 is not an ArgTag");
  b = good;
  patch<uint8_t>(b, k0_sig + offsetof(SignatureDesc, tags) + 3, 1);
  expect_malformed(b, "kernel[0].signature.tags[3]=1 must be 0 past tensor_count 3");
  b = good;
  patch<uint8_t>(b, k0_sig + offsetof(SignatureDesc, reserved) + 5, 1);
  expect_malformed(b, "kernel[0].signature.reserved[5]=1 must be 0");
  b = good;
  patch<uint8_t>(
      b, kOrchDesc + offsetof(OrchestrationDesc, signature) + offsetof(SignatureDesc, tensor_count),
      40);
  expect_malformed(b, "orchestration.signature.tensor_count=40");
}

// The container carries a checksum per object: a corrupted object is rejected when the container
// is parsed, not loaded and run (where a flipped code byte crashes the process).
TEST(CallableParseTest, EveryFlippedBitOfAKernelObjectIsRejectedByItsChecksum) {
  const std::vector<uint8_t> kernel = examples::read_chip_object("vector_example_add");
  const std::vector<uint8_t> good =
      CallableBuilder()
          .orchestration_function(&test_orchestration, ArgSignature::of({}, 0))
          .kernel_object(7, CoreType::AIV, kernel, ArgSignature::of({}, 0))
          .build();
  ParsedCallable p;
  ASSERT_TRUE(parse_callable(good, &p).is_ok());
  const std::size_t object = p.kernels[0].object.bytes.data() - good.data();
  std::vector<uint8_t> bytes = good;
  int accepted = 0;
  for (std::size_t i = 0; i < kernel.size(); ++i) {
    const auto bit = static_cast<uint8_t>(1u << (i % 8));
    bytes[object + i] ^= bit;
    const Status s = parse_callable(bytes, &p);
    bytes[object + i] ^= bit;
    if (s.is_ok()) {
      ++accepted;
      continue;
    }
    ASSERT_EQ(s.code(), StatusCode::MalformedCallable) << s.to_string();
    ASSERT_NE(s.message().find("kernel[0] (func_id 7).object: checksum"), std::string::npos)
        << s.message();
  }
  EXPECT_EQ(accepted, 0) << "of " << kernel.size() << " corrupted kernel objects";
}

TEST(CallableParseTest, ChecksumMismatchNamesTheObject) {
  const auto good = mixed_container();
  ParsedCallable gp;
  ASSERT_TRUE(parse_callable(good, &gp).is_ok());
  auto offset_of = [&](const ParsedObject& o) { return o.bytes.data() - good.data(); };
  auto b = good;
  b[offset_of(gp.orchestration) + 5] ^= 0x10;
  expect_malformed(b, "orchestration.object: checksum ");
  expect_malformed(b, "does not match the object's bytes");
  b = good;
  b[offset_of(gp.kernels[1].object) + 2] ^= 0x01;
  expect_malformed(b, "kernel[1] (func_id 17).object: checksum ");
  b = good;
  b[offset_of(gp.kernels[2].object)] ^= 0x40;  // the address of an in-process kernel
  expect_malformed(b, "kernel[2] (func_id 255).object: checksum ");
  b = good;  // the checksum itself
  b[kernel_desc(0) + offsetof(KernelDesc, object) + offsetof(ObjectDesc, checksum)] ^= 0x01;
  expect_malformed(b, "kernel[0] (func_id 4).object: checksum ");
}

// ---- symbols and display names (version 3) ---------------------------------------------------

TEST(CallableBuilderTest, SymbolsAndNamesRoundTrip) {
  const auto so = object_bytes(90, 4);
  const std::vector<uint8_t> bytes =
      CallableBuilder()
          .orchestration_function(&test_orchestration, ArgSignature::of({}, 0))
          .kernel_object(0, CoreType::AIV, so, ArgSignature::of({}, 0))  // the defaults
          .kernel_object(1, CoreType::AIV, so, ArgSignature::of({}, 0), "softmax_max")
          .kernel_object(2, CoreType::AIC, so, ArgSignature::of({}, 0), "softmax_exp",
                         "softmax: exp(x - max)")
          .kernel_object(3, CoreType::AIV, so, ArgSignature::of({}, 0), kKernelSymbol, "qk")
          .kernel_function(4, CoreType::AIV, &test_kernel_add, ArgSignature::of({}, 0), "add one")
          .kernel_function(5, CoreType::AIV, &test_kernel_mul, ArgSignature::of({}, 0))
          .build();
  ParsedCallable p;
  ASSERT_TRUE(parse_callable(bytes, &p).is_ok()) << parse_callable(bytes, &p).to_string();
  expect_consistent(bytes, p);
  EXPECT_EQ(p.version, kCallableVersion);
  ASSERT_EQ(p.kernels.size(), 6u);
  const std::pair<std::string, std::string> want[] = {{"kernel_entry", "kernel_entry"},
                                                      {"softmax_max", "softmax_max"},
                                                      {"softmax_exp", "softmax: exp(x - max)"},
                                                      {"kernel_entry", "qk"},
                                                      {"", "add one"},
                                                      {"", ""}};
  for (std::size_t i = 0; i < p.kernels.size(); ++i) {
    SCOPED_TRACE("kernel " + std::to_string(i));
    EXPECT_EQ(p.kernels[i].symbol, want[i].first);
    EXPECT_EQ(p.kernels[i].name, want[i].second);
  }
}

TEST(CallableBuilderTest, OneObjectOfSeveralKernelsIsStoredOnce) {
  const auto so = object_bytes(4096, 6);
  CallableBuilder builder;
  builder.orchestration_object(object_bytes(100, 9), ArgSignature::of({}, 0));
  const char* symbols[] = {"softmax_max", "softmax_exp", "softmax_norm"};
  for (int i = 0; i < 3; ++i) {
    builder.kernel_object(i, CoreType::AIV, so, ArgSignature::of({}, 0), symbols[i]);
  }
  builder.kernel_object(3, CoreType::AIV, object_bytes(64, 1), ArgSignature::of({}, 0));
  const std::vector<uint8_t> bytes = builder.build();
  EXPECT_LT(bytes.size(), 2 * so.size());  // one copy of the 4 KiB object, not three
  ParsedCallable p;
  ASSERT_TRUE(parse_callable(bytes, &p).is_ok());
  expect_consistent(bytes, p);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.kernels[i].symbol, symbols[i]);
    EXPECT_EQ(p.kernels[i].object.bytes.data(), p.kernels[0].object.bytes.data());
    EXPECT_TRUE(std::equal(so.begin(), so.end(), p.kernels[i].object.bytes.begin(),
                           p.kernels[i].object.bytes.end()));
  }
  EXPECT_NE(p.kernels[3].object.bytes.data(), p.kernels[0].object.bytes.data());
  // An object shared by the orchestration and a kernel is stored once too.
  const std::vector<uint8_t> shared = CallableBuilder()
                                          .orchestration_object(so, ArgSignature::of({}, 0))
                                          .kernel_object(0, CoreType::AIV, so, {}, "k")
                                          .build();
  ASSERT_TRUE(parse_callable(shared, &p).is_ok());
  EXPECT_EQ(p.orchestration.bytes.data(), p.kernels[0].object.bytes.data());
  EXPECT_LT(shared.size(), 2 * so.size());
}

TEST(CallableBuilderTest, RejectsSymbolsThatAreNotIdentifiersAndUnprintableNames) {
  const auto so = object_bytes(16, 0);
  auto build = [&](std::string_view symbol, std::string_view name) {
    return CallableBuilder()
        .orchestration_object(so, {})
        .kernel_object(2, CoreType::AIV, so, {}, symbol, name)
        .build();
  };
  expect_build_error([&] { build("", ""); }, StatusCode::InvalidArgument,
                     "kernel 0 (func_id 2): symbol '' is empty");
  expect_build_error([&] { build("2fast", ""); }, StatusCode::InvalidArgument,
                     "symbol '2fast' is not a C identifier (it must start with a letter or '_')");
  expect_build_error([&] { build("soft max", ""); }, StatusCode::InvalidArgument,
                     "symbol 'soft max' is not a C identifier (letters, digits and '_' only); "
                     "name the extern \"C\" function the object exports");
  expect_build_error([&] { build(std::string(256, 'k'), ""); }, StatusCode::InvalidArgument,
                     "is longer than kMaxKernelSymbolBytes (255)");
  EXPECT_NO_THROW(build(std::string(255, 'k'), std::string(64, 'n')));
  expect_build_error([&] { build("k", std::string(65, 'n')); }, StatusCode::InvalidArgument,
                     "is longer than kMaxKernelNameBytes (64)");
  expect_build_error([&] { build("k", "tab\there"); }, StatusCode::InvalidArgument,
                     "display name 'tab\there' is not printable ASCII");
  expect_build_error([&] { build("k", "caf\xc3\xa9"); }, StatusCode::InvalidArgument,
                     "is not printable ASCII");
  expect_build_error(
      [&] {
        CallableBuilder()
            .orchestration_object(so, {})
            .kernel_function(0, CoreType::AIV, &test_kernel_add, {}, "new\nline")
            .build();
      },
      StatusCode::InvalidArgument, "kernel 0 (func_id 0): display name");
}

TEST(CallableParseTest, SymbolAndNameCorruptionsNameTheField) {
  const auto so = object_bytes(40, 2);
  const std::vector<uint8_t> good =
      CallableBuilder()
          .orchestration_object(so, {})
          .kernel_object(0, CoreType::AIV, so, {}, "norm", "normalize")
          .kernel_function(1, CoreType::AIV, &test_kernel_add, {})
          .build();
  ParsedCallable gp;
  ASSERT_TRUE(parse_callable(good, &gp).is_ok());
  const std::size_t symbol = kernel_desc(0) + offsetof(KernelDesc, symbol);
  const std::size_t name = kernel_desc(0) + offsetof(KernelDesc, name);
  KernelDesc k0;
  std::memcpy(&k0, good.data() + kernel_desc(0), sizeof(k0));

  auto b = good;
  b[k0.symbol.offset + 1] = '-';
  expect_malformed(b, "kernel[0].symbol is not a C identifier (letters, digits and '_' only)");
  b = good;
  b[k0.name.offset] = '\x7f';
  expect_malformed(b, "kernel[0].name is not printable ASCII");
  b = good;
  patch<uint32_t>(b, symbol + offsetof(StringDesc, size), 0);
  expect_malformed(b, "kernel[0].symbol.offset=" + std::to_string(k0.symbol.offset) +
                          " must be 0 for no string");
  b = good;
  patch<uint32_t>(b, symbol + offsetof(StringDesc, size), 0);
  patch<uint64_t>(b, symbol + offsetof(StringDesc, offset), 0);
  expect_malformed(b, "kernel[0].symbol is empty");
  b = good;
  patch<uint64_t>(b, name + offsetof(StringDesc, offset), 8);
  expect_malformed(b, "kernel[0].name.offset=8 overlaps the descriptors");
  b = good;
  patch<uint64_t>(b, name + offsetof(StringDesc, offset), good.size() - 2);
  expect_malformed(b, "kernel[0].name: offset " + std::to_string(good.size() - 2) +
                          " + size 9 exceeds the container size");
  b = good;
  patch<uint32_t>(b, name + offsetof(StringDesc, reserved), 1);
  expect_malformed(b, "kernel[0].name.reserved=1 must be 0");
  b = good;
  patch<uint32_t>(b, name + offsetof(StringDesc, size), kMaxKernelNameBytes + 1);
  expect_malformed(b, "kernel[0].name is longer than kMaxKernelNameBytes");
  b = good;  // an in-process function names no symbol
  const std::size_t k1_symbol = kernel_desc(1) + offsetof(KernelDesc, symbol);
  patch<uint64_t>(b, k1_symbol + offsetof(StringDesc, offset), k0.symbol.offset);
  patch<uint32_t>(b, k1_symbol + offsetof(StringDesc, size), k0.symbol.size);
  expect_malformed(b, "kernel[1].symbol.size=4 must be 0 for an in-process function");
}

// ---- version 2 containers ---------------------------------------------------------------------

TEST(CallableVersionTest, Version2ContainersParseWithKernelEntryAsSymbolAndName) {
  const auto orch = object_bytes(100, 9);
  const auto k0 = object_bytes(70, 1);
  const ArgSignature sig = ArgSignature::of({ArgTag::In, ArgTag::Out}, 1);
  const std::vector<uint8_t> v2 = test::version2_container(
      test::v2_object(orch), sig,
      {{4, CoreType::AIC, test::v2_object(k0), sig},
       {9, CoreType::AIV, test::v2_function(reinterpret_cast<uint64_t>(&test_kernel_add)), {}}});
  ParsedCallable p;
  ASSERT_TRUE(parse_callable(v2, &p).is_ok()) << parse_callable(v2, &p).to_string();
  expect_consistent(v2, p);
  EXPECT_EQ(p.version, 2u);
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].func_id, 4);
  EXPECT_EQ(p.kernels[0].core, CoreType::AIC);
  EXPECT_EQ(p.kernels[0].symbol, "kernel_entry");
  EXPECT_EQ(p.kernels[0].name, "kernel_entry");
  EXPECT_EQ(p.kernels[0].signature.tensor_count, 2);
  EXPECT_TRUE(std::equal(k0.begin(), k0.end(), p.kernels[0].object.bytes.begin(),
                         p.kernels[0].object.bytes.end()));
  EXPECT_EQ(p.kernels[1].symbol, "");
  EXPECT_EQ(p.kernels[1].name, "");
  int64_t arg = 1;
  reinterpret_cast<KernelEntry>(p.kernels[1].object.function_addr())(&arg);
  EXPECT_EQ(arg, 2);

  // The same kernels built today: a version 3 container whose kernels hash alike.
  const std::vector<uint8_t> v3 = CallableBuilder()
                                      .orchestration_object(orch, sig)
                                      .kernel_object(4, CoreType::AIC, k0, sig)
                                      .kernel_function(9, CoreType::AIV, &test_kernel_add, {})
                                      .build();
  ParsedCallable p3;
  ASSERT_TRUE(parse_callable(v3, &p3).is_ok());
  EXPECT_EQ(p3.version, 3u);
  EXPECT_EQ(p3.kernel_image_hash, p.kernel_image_hash);
  EXPECT_NE(p3.content_hash, p.content_hash);
}

TEST(CallableVersionTest, Version2ContainersAreCheckedAsBefore) {
  const auto orch = object_bytes(100, 9);
  const std::vector<uint8_t> good = test::version2_container(
      test::v2_object(orch), {}, {{4, CoreType::AIC, test::v2_object(object_bytes(70, 1)), {}}});
  for (std::size_t len = 0; len < good.size(); ++len) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(len));
    ParsedCallable p;
    EXPECT_EQ(parse_callable(cut, &p).code(), StatusCode::MalformedCallable) << "length " << len;
  }
  const std::size_t k0 = sizeof(ContainerHeader) + sizeof(OrchestrationDesc);
  auto b = good;
  patch<int32_t>(b, k0 + offsetof(KernelDescV2, func_id), kMaxFuncId);
  expect_malformed(b, "kernel[0].func_id=256 is outside [0, 256)");
  b = good;
  patch<uint8_t>(b, k0 + offsetof(KernelDescV2, reserved), 1);
  expect_malformed(b, "kernel[0].reserved[0]=1 must be 0");
  b = good;
  b[b.size() - 1] ^= 0x01;
  expect_malformed(b, "kernel[0] (func_id 4).object: checksum");
  b = good;
  patch<uint32_t>(b, offsetof(ContainerHeader, kernel_count), 2);
  expect_malformed(b, "orchestration.object.offset=192 overlaps the descriptors");
}

TEST(CallableParseTest, FunctionAddrIsZeroForSharedObjects) {
  const std::vector<uint8_t> eight(8, 0xAB);
  ParsedObject o;
  o.kind = ObjectKind::SharedObject;
  o.bytes = eight;
  EXPECT_EQ(o.function_addr(), 0u);
  o.kind = ObjectKind::InProcess;
  EXPECT_EQ(o.function_addr(), 0xABABABABABABABABull);
  o.bytes = std::span<const uint8_t>(eight).first(4);
  EXPECT_EQ(o.function_addr(), 0u);
}

TEST(ArgSignatureOf, RecordsTagsInOrderAndRejectsTooMany) {
  const ArgSignature sig = ArgSignature::of({ArgTag::In, ArgTag::InOut, ArgTag::Out}, 2);
  EXPECT_EQ(sig.tensor_count, 3);
  EXPECT_EQ(sig.scalar_count, 2);
  EXPECT_EQ(sig.tags[0], ArgTag::In);
  EXPECT_EQ(sig.tags[1], ArgTag::InOut);
  EXPECT_EQ(sig.tags[2], ArgTag::Out);
  EXPECT_EQ(sig.tags[3], ArgTag::In);  // unused entries stay zero, as the parser requires
  try {
    ArgSignature::of({}, kMaxTaskScalars + 1);
    ADD_FAILURE() << "too many scalars accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), StatusCode::TooManyArgs);
    EXPECT_NE(e.message().find("kMaxTaskScalars"), std::string::npos) << e.message();
  }
  const std::initializer_list<ArgTag> seventeen = {
      ArgTag::In, ArgTag::In, ArgTag::In, ArgTag::In, ArgTag::In, ArgTag::In,
      ArgTag::In, ArgTag::In, ArgTag::In, ArgTag::In, ArgTag::In, ArgTag::In,
      ArgTag::In, ArgTag::In, ArgTag::In, ArgTag::In, ArgTag::In};
  EXPECT_THROW(ArgSignature::of(seventeen, 0), Error);
}

}  // namespace
}  // namespace chiprt
