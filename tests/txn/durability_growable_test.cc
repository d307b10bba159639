// NodePools with growable regions (issue 46): their pools are created
// sparse and their file regions are growable; a restart (--recover) accepts
// them and keeps them growable (the pool header says so); the others stay
// whole.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "txn/durability.h"

namespace drtmx::txn {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(NodePoolsGrowable, GrowableRegionsGetSparsePoolsAcrossARestart) {
  const fs::path dir = fs::path("/dev/shm") / ("drtmx-nodepools-" + std::to_string(getpid()));
  fs::create_directories(dir);
  struct Cleanup {
    fs::path d;
    ~Cleanup() { fs::remove_all(d); }
  } cleanup{dir};
  DurabilityConfig cfg;
  cfg.enabled = true;
  cfg.dir = dir.string();
  const std::vector<std::pair<r2::RegionId, size_t>> regions = {{3, 64 * kGiB}, {4, 1 << 20}};
  for (bool recover : {false, true}) {
    cfg.recover = recover;
    // At the restart the growable ids are not even needed: the header says.
    auto p = NodePools::open(cfg, 1, regions, 77,
                             recover ? std::vector<r2::RegionId>{} : std::vector<r2::RegionId>{3});
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    ASSERT_NE((*p)->pool(3), nullptr);
    EXPECT_TRUE((*p)->pool(3)->sparse());
    EXPECT_FALSE((*p)->pool(4)->sparse());
    EXPECT_EQ((*p)->pool(9), nullptr);
    for (const auto& [id, fr] : (*p)->file_regions()) {
      EXPECT_EQ(fr.growable, id == 3) << "region " << id;
      if (id == 3) {
        EXPECT_EQ(fr.bytes, 64 * kGiB);
      }
    }
    struct stat st {};
    ASSERT_EQ(::stat(NodePools::region_path(cfg.dir, 1, 3).c_str(), &st), 0);
    EXPECT_LT(uint64_t(st.st_blocks) * 512, 1u << 20) << "the sparse pool holds its header only";
    auto ranges = (*p)->pool(3)->data_ranges();
    ASSERT_TRUE(ranges.is_ok());
    EXPECT_TRUE(ranges->empty());
  }
}

}  // namespace
}  // namespace drtmx::txn
