// Loading chip objects from memory on the simulated chip: a real shared object (the C math
// library, read from the file the process loaded it from), dedup by content with reference
// counts, and malformed input.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include "libm_image.h"
#include "platform/sim/sim_platform.h"

namespace chiprt::platform {
namespace {

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

class SimObjectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = libm_image();
    ASSERT_GT(image_.size(), 1024u) << "could not read the libm image of this process";
  }
  sim::SimPlatform platform_{SimOptions{}};
  std::vector<uint8_t> image_;
};

TEST_F(SimObjectTest, LoadsSharedObjectFromMemoryAndResolvesSymbol) {
  LoadedObject object;
  const Status loaded = platform_.load_object(image_, &object);
  ASSERT_TRUE(loaded.is_ok()) << loaded.to_string();
  EXPECT_NE(object.handle, 0u);
  uint64_t addr = 0;
  ASSERT_TRUE(platform_.resolve_symbol(object, "cos", &addr).is_ok());
  ASSERT_NE(addr, 0u);
  auto cos_fn = reinterpret_cast<double (*)(double)>(addr);
  EXPECT_DOUBLE_EQ(cos_fn(0.0), 1.0);
  EXPECT_TRUE(platform_.unload_object(object).is_ok());
  EXPECT_EQ(platform_.loaded_objects(), 0u);
}

TEST_F(SimObjectTest, IdenticalImagesShareOneObjectWithRefcount) {
  LoadedObject first;
  LoadedObject second;
  ASSERT_TRUE(platform_.load_object(image_, &first).is_ok());
  const std::vector<uint8_t> copy = image_;  // same bytes, different buffer
  ASSERT_TRUE(platform_.load_object(copy, &second).is_ok());
  EXPECT_EQ(first.handle, second.handle);
  EXPECT_EQ(platform_.loaded_objects(), 1u);
  EXPECT_EQ(platform_.object_refcount(first), 2u);

  ASSERT_TRUE(platform_.unload_object(first).is_ok());
  EXPECT_EQ(platform_.object_refcount(first), 1u);
  uint64_t addr = 0;
  EXPECT_TRUE(platform_.resolve_symbol(second, "cos", &addr).is_ok());
  ASSERT_TRUE(platform_.unload_object(second).is_ok());
  EXPECT_EQ(platform_.loaded_objects(), 0u);

  const Status again = platform_.unload_object(second);
  EXPECT_EQ(again.code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(contains(again, "unknown object handle")) << again.message();
  EXPECT_EQ(platform_.resolve_symbol(second, "cos", &addr).code(), StatusCode::InvalidArgument);
}

TEST_F(SimObjectTest, DifferentImagesAreSeparateObjects) {
  // Trailing bytes after the ELF sections do not stop it loading but change the content.
  std::vector<uint8_t> padded = image_;
  padded.resize(padded.size() + 64, 0);
  LoadedObject a;
  LoadedObject b;
  ASSERT_TRUE(platform_.load_object(image_, &a).is_ok());
  ASSERT_TRUE(platform_.load_object(padded, &b).is_ok());
  EXPECT_NE(a.handle, b.handle);
  EXPECT_EQ(platform_.loaded_objects(), 2u);
  uint64_t addr_a = 0;
  uint64_t addr_b = 0;
  ASSERT_TRUE(platform_.resolve_symbol(a, "cos", &addr_a).is_ok());
  ASSERT_TRUE(platform_.resolve_symbol(b, "cos", &addr_b).is_ok());
  EXPECT_NE(addr_a, addr_b);
  EXPECT_TRUE(platform_.unload_object(a).is_ok());
  EXPECT_TRUE(platform_.unload_object(b).is_ok());
}

TEST_F(SimObjectTest, MissingSymbolIsLoadFailedWithLoaderText) {
  LoadedObject object;
  ASSERT_TRUE(platform_.load_object(image_, &object).is_ok());
  uint64_t addr = 0;
  const Status status = platform_.resolve_symbol(object, "no_such_symbol_in_libm", &addr);
  EXPECT_EQ(status.code(), StatusCode::LoadFailed);
  EXPECT_TRUE(contains(status, "'no_such_symbol_in_libm' not found")) << status.message();
  EXPECT_EQ(platform_.resolve_symbol(object, nullptr, &addr).code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(platform_.unload_object(object).is_ok());
}

TEST(SimObjectErrorsTest, RandomBytesAreLoadFailed) {
  sim::SimPlatform platform{SimOptions{}};
  std::mt19937 rng(7);
  std::vector<uint8_t> garbage(4096);
  for (auto& byte : garbage) byte = static_cast<uint8_t>(rng());
  LoadedObject object;
  const Status status = platform.load_object(garbage, &object);
  EXPECT_EQ(status.code(), StatusCode::LoadFailed);
  EXPECT_TRUE(contains(status, "not a loadable shared object")) << status.message();
  EXPECT_EQ(platform.loaded_objects(), 0u);
}

TEST(SimObjectErrorsTest, TruncatedElfIsLoadFailed) {
  std::vector<uint8_t> truncated = libm_image();
  ASSERT_GT(truncated.size(), 512u);
  truncated.resize(512);
  sim::SimPlatform platform{SimOptions{}};
  LoadedObject object;
  EXPECT_EQ(platform.load_object(truncated, &object).code(), StatusCode::LoadFailed);
}

TEST(SimObjectErrorsTest, EmptyImageAndNullOutAreInvalidArgument) {
  sim::SimPlatform platform{SimOptions{}};
  LoadedObject object;
  const Status empty = platform.load_object({}, &object);
  EXPECT_EQ(empty.code(), StatusCode::InvalidArgument);
  EXPECT_TRUE(contains(empty, "empty")) << empty.message();
  const uint8_t byte = 0;
  EXPECT_EQ(platform.load_object({&byte, 1}, nullptr).code(), StatusCode::InvalidArgument);
}

TEST(SimObjectErrorsTest, UnknownHandleIsInvalidArgument) {
  sim::SimPlatform platform{SimOptions{}};
  uint64_t addr = 0;
  EXPECT_EQ(platform.resolve_symbol(LoadedObject{42}, "cos", &addr).code(),
            StatusCode::InvalidArgument);
  EXPECT_EQ(platform.unload_object(LoadedObject{42}).code(), StatusCode::InvalidArgument);
}

}  // namespace
}  // namespace chiprt::platform
