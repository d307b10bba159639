// make_resident: every page of the block is in this process's page tables
// afterwards (bit 63 of /proc/self/pagemap: "present"), where a fresh
// mapping has none; bad blocks are errors, not crashes.
#include "base/resident.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace drtmx {
namespace {

constexpr size_t kPage = 4096;

TEST(Resident, EveryPageIsMappedAndZero) {
  if (!resident_supported()) GTEST_SKIP() << "kernel without MADV_POPULATE_WRITE";
  const size_t bytes = 64 * kPage;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  const long before = mapped_pages(p, bytes);
  if (before < 0) {
    munmap(p, bytes);
    GTEST_SKIP() << "/proc/self/pagemap unreadable";
  }
  EXPECT_EQ(before, 0) << "a fresh mapping already has pages";
  ASSERT_TRUE(make_resident(p, bytes, "a test block").is_ok());
  EXPECT_EQ(mapped_pages(p, bytes), static_cast<long>(bytes / kPage));
  const auto* b = static_cast<const uint8_t*>(p);
  for (size_t i = 0; i < bytes; i += 512) ASSERT_EQ(b[i], 0) << "at " << i;
  munmap(p, bytes);
}

TEST(Resident, SharedFileMappingsToo) {
  if (!resident_supported()) GTEST_SKIP() << "kernel without MADV_POPULATE_WRITE";
  const std::string name = "/drtmx-resident-test-" + std::to_string(getpid());
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  const size_t bytes = 32 * kPage;
  ASSERT_EQ(posix_fallocate(fd, 0, bytes), 0);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  shm_unlink(name.c_str());
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_EQ(mapped_pages(p, bytes), 0);
  ASSERT_TRUE(make_resident(p, bytes, "a test segment").is_ok());
  EXPECT_EQ(mapped_pages(p, bytes), static_cast<long>(bytes / kPage));
  munmap(p, bytes);
}

TEST(Resident, NothingToDoAndUnmappedMemory) {
  EXPECT_TRUE(make_resident(nullptr, 0, "nothing").is_ok());
  if (!resident_supported()) GTEST_SKIP() << "kernel without MADV_POPULATE_WRITE";
  // A range with no mapping: an error naming the block, not a crash.
  void* p = mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  munmap(p, 4 * kPage);
  Status st = make_resident(p, 4 * kPage, "a block that is gone");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("a block that is gone"), std::string::npos) << st.message();
}

// Private memory is populated only with an eighth of the machine to spare.
TEST(Resident, RoomIsWhatMemAvailableLeavesAboveAnEighth) {
  const std::string mi =
      "MemTotal:       8000000 kB\nMemFree:        1000 kB\nMemAvailable:   3000000 kB\n";
  EXPECT_TRUE(has_room_for(size_t{1} << 30, mi));                 // 1 GiB: 1.95 M kB left
  EXPECT_TRUE(has_room_for(size_t{1999999} * 1024, mi));          // 1 000 001 kB left
  EXPECT_FALSE(has_room_for(size_t{2000001} * 1024, mi));         // under 1 000 000 kB left
  EXPECT_FALSE(has_room_for(size_t{4000000} * 1024, mi));         // more than available
  EXPECT_TRUE(has_room_for(size_t{1} << 40, "Nothing: 1 kB\n"));  // cannot tell: as before
  // Primaries' inserts keep 3/16 (1 500 000 kB here): the backups' share
  // between 2/16 and 3/16 stays for what the primaries committed.
  EXPECT_TRUE(has_room_for(size_t{1499999} * 1024, mi, 3));   // 1 500 001 kB left
  EXPECT_FALSE(has_room_for(size_t{1500001} * 1024, mi, 3));  // under 1 500 000 kB left
  EXPECT_TRUE(has_room_for(size_t{1500001} * 1024, mi, 2));   // an eighth: still room
}

}  // namespace
}  // namespace drtmx
