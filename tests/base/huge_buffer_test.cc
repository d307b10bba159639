// HugeBuffer: aligned, zeroed, writable memory; moves hand ownership over;
// a request that cannot be met is an error, not a crash.
#include "base/huge_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace drtmx {
namespace {

TEST(HugeBuffer, AlignedZeroedAndWritable) {
  const size_t want = 3 * HugeBuffer::kHugePage + 100;
  Result<HugeBuffer> b = HugeBuffer::allocate(want);
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  EXPECT_GE(b->size(), want);
  EXPECT_EQ(b->size() % HugeBuffer::kHugePage, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % HugeBuffer::kHugePage, 0u);
  auto* p = static_cast<uint8_t*>(b->data());
  for (size_t i = 0; i < b->size(); i += 4096) ASSERT_EQ(p[i], 0) << "at " << i;
  EXPECT_EQ(p[b->size() - 1], 0);
  std::memset(p, 0xAB, b->size());
  EXPECT_EQ(p[b->size() - 1], 0xAB);
}

TEST(HugeBuffer, MoveTransfersOwnership) {
  Result<HugeBuffer> a = HugeBuffer::allocate(4096);
  ASSERT_TRUE(a.is_ok());
  void* where = a->data();
  HugeBuffer b = std::move(*a);
  EXPECT_EQ(b.data(), where);
  EXPECT_EQ(a->data(), nullptr);
  EXPECT_EQ(a->size(), 0u);
  HugeBuffer c;
  c = std::move(b);
  EXPECT_EQ(c.data(), where);
  static_cast<uint8_t*>(c.data())[0] = 1;  // still mapped
}

TEST(HugeBuffer, BadSizesAreErrors) {
  Result<HugeBuffer> zero = HugeBuffer::allocate(0);
  ASSERT_FALSE(zero.is_ok());
  EXPECT_NE(zero.status().message().find("zero bytes"), std::string::npos);
  Result<HugeBuffer> huge = HugeBuffer::allocate(size_t{1} << 50);
  ASSERT_FALSE(huge.is_ok());
  EXPECT_NE(huge.status().message().find("HugeBuffer"), std::string::npos);
}

}  // namespace
}  // namespace drtmx
