// Sparse pools for growable regions (issue 46): a pool of many GiB holds
// only its header until the fabric's commit() backs ranges of its data area;
// a reopen (kRecover) knows it is sparse from its header and maps nothing in
// advance but the header; data_ranges() lists exactly the ranges that hold
// data — on a memory file system the committed ones, on a disk the written
// ones inside them. NodePools creates the pools of growable regions sparse
// and gives their file regions as growable.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "base/resident.h"
#include "r2/fabric_factory.h"
#include "r2/shm/shm_fabric.h"
#include "rdpma/pool.h"

namespace drtmx::rdpma {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr r2::RegionId kRegion = 5;
const PoolIdentity kId{42, 0, kRegion, 0x5a5a};

struct Dir {
  explicit Dir(const fs::path& root) {
    static int counter = 0;
    path =
        root / ("drtmx-sparse-pool-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  fs::path path;
};

bool on_memory_fs(const fs::path& p) {
  struct statfs s {};
  return ::statfs(p.c_str(), &s) == 0 && (static_cast<uint64_t>(s.f_type) == TMPFS_MAGIC ||
                                          static_cast<uint64_t>(s.f_type) == RAMFS_MAGIC);
}

uint64_t allocated_bytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_blocks) * 512 : ~uint64_t{0};
}

PoolSpec spec(const std::string& path, uint64_t bytes, PoolOpen mode, bool sparse) {
  PoolSpec s;
  s.path = path;
  s.bytes = bytes;
  s.id = kId;
  s.mode = mode;
  s.sparse = sparse;
  return s;
}

// A one-node shm fabric (no connect needed: commit works before it).
struct OneNode {
  OneNode() {
    r2::FabricConfig cfg;
    cfg.cluster = "sparsepool-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    cfg.node = 0;
    cfg.num_nodes = 1;
    cfg.threads = 1;
    cfg.ring_bytes = 64 * 1024;
    cluster = cfg.cluster;
    auto f = r2::make_fabric(cfg);
    if (f) fabric = std::move(f.value());
  }
  ~OneNode() {
    fabric.reset();
    r2::remove_shm_segments(cluster);
  }
  std::string cluster;
  std::unique_ptr<r2::Fabric> fabric;
  static inline int counter = 0;
};

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

TEST(SparsePool, HoldsOnlyWhatWasCommittedAndSaysSoAfterARecovery) {
  Dir d("/dev/shm");
  const std::string path = d.file("r5.pool");
  const uint64_t size = 64 * kGiB;
  {
    auto p = PmemPool::open(spec(path, size, PoolOpen::kCreate, true));
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    PmemPool& pool = **p;
    EXPECT_TRUE(pool.sparse());
    EXPECT_EQ(pool.bytes(), size);
    EXPECT_LE(allocated_bytes(path), 64 * 1024u);  // the header page
    const r2::FileRegion fr = pool.data_region();
    EXPECT_TRUE(fr.growable);
    auto none = pool.data_ranges();
    ASSERT_TRUE(none.is_ok()) << none.status().to_string();
    EXPECT_TRUE(none->empty());

    OneNode node;
    ASSERT_NE(node.fabric, nullptr);
    auto r = node.fabric->register_file_region(kRegion, fr);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(node.fabric->committed_bytes(kRegion), 0u);
    ASSERT_TRUE(node.fabric->commit(kRegion, 0, 2 * kMiB).is_ok());
    ASSERT_TRUE(node.fabric->commit(kRegion, 10 * kGiB + 5, kMiB - 5).is_ok());
    EXPECT_EQ(node.fabric->committed_bytes(kRegion), 3 * kMiB);
    EXPECT_GE(allocated_bytes(path), 3 * kMiB);
    EXPECT_LT(allocated_bytes(path), 8 * kMiB);
    if (resident_supported()) {
      EXPECT_EQ(mapped_pages(fr.base + 10 * kGiB, kMiB), long(kMiB / 4096));
    }
    std::memcpy(fr.base + 10 * kGiB + 100, "a committed row", 16);
  }
  // Reopened without the flag: the header says sparse; nothing else is
  // allocated or mapped by the reopen.
  auto p = PmemPool::open(spec(path, 0, PoolOpen::kRecover, false));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_TRUE((*p)->sparse());
  EXPECT_TRUE((*p)->data_region().growable);
  EXPECT_LT(allocated_bytes(path), 8 * kMiB);
  auto ranges = (*p)->data_ranges();
  ASSERT_TRUE(ranges.is_ok()) << ranges.status().to_string();
  EXPECT_EQ(*ranges, (Ranges{{0, 2 * kMiB}, {10 * kGiB, kMiB}}));
  EXPECT_EQ(std::memcmp((*p)->data_region().base + 10 * kGiB + 100, "a committed row", 16), 0);
}

TEST(SparsePool, OnADiskTheWrittenPagesOfCommittedRangesAreItsData) {
  const fs::path tmp = fs::temp_directory_path();
  if (on_memory_fs(tmp)) GTEST_SKIP() << tmp << " is a memory file system";
  Dir d(tmp);
  const std::string path = d.file("r5.pool");
  {
    auto p = PmemPool::open(spec(path, 4 * kGiB, PoolOpen::kCreate, true));
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    ASSERT_EQ((*p)->persistence_mode(), r2::Persistence::kMsync);
    const r2::FileRegion fr = (*p)->data_region();
    OneNode node;
    ASSERT_NE(node.fabric, nullptr);
    ASSERT_TRUE(node.fabric->register_file_region(kRegion, fr).is_ok());
    ASSERT_TRUE(node.fabric->commit(kRegion, kGiB, 4 * kMiB).is_ok());
    EXPECT_EQ(node.fabric->committed_bytes(kRegion), 4 * kMiB);
    // msync mode: blocks allocated, pages not mapped in advance.
    EXPECT_GE(allocated_bytes(path), 4 * kMiB);
    std::memcpy(fr.base + kGiB + kMiB + 10, "written", 8);
    ASSERT_EQ(::msync(fr.base + kGiB + kMiB, 4096, MS_SYNC), 0);
  }
  auto p = PmemPool::open(spec(path, 0, PoolOpen::kRecover, false));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  auto ranges = (*p)->data_ranges();
  ASSERT_TRUE(ranges.is_ok()) << ranges.status().to_string();
  ASSERT_FALSE(ranges->empty());
  // Every range lies inside the committed one, and the written page is in one.
  bool written = false;
  for (const auto& [at, n] : *ranges) {
    EXPECT_GE(at, kGiB);
    EXPECT_LE(at + n, kGiB + 4 * kMiB);
    written = written || (at <= kGiB + kMiB && at + n >= kGiB + kMiB + 4096);
  }
  EXPECT_TRUE(written);
}

TEST(SparsePool, APoolCreatedWholeIsOneRangeAndNotGrowable) {
  Dir d("/dev/shm");
  auto p = PmemPool::open(spec(d.file("whole.pool"), 8 * kMiB, PoolOpen::kCreate, false));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_FALSE((*p)->sparse());
  EXPECT_FALSE((*p)->data_region().growable);
  auto ranges = (*p)->data_ranges();
  ASSERT_TRUE(ranges.is_ok());
  EXPECT_EQ(*ranges, (Ranges{{0, 8 * kMiB - PmemPool::kHeaderBytes}}));
  // commit() on it is a no-op; committed_bytes is its size.
  OneNode node;
  ASSERT_NE(node.fabric, nullptr);
  ASSERT_TRUE(node.fabric->register_file_region(kRegion, (*p)->data_region()).is_ok());
  EXPECT_TRUE(node.fabric->commit(kRegion, 0, kMiB).is_ok());
  EXPECT_EQ(node.fabric->committed_bytes(kRegion), 8 * kMiB - PmemPool::kHeaderBytes);
}

}  // namespace
}  // namespace drtmx::rdpma
