// PmemPool: allocations are aligned and padded as the hints say and survive
// a reopen; accesses outside an allocation are refused; every bad pool
// file — missing, existing without --format, truncated, corrupted, of
// another identity, half-created — is refused with a message naming it,
// and nothing is written to it.
#include "rdpma/pool.h"

#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "rdpma/dir_probe.h"

namespace drtmx::rdpma {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    path = fs::temp_directory_path() /
           ("rdpma_pool_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
  fs::path path;
  static inline int counter = 0;
};

const PoolIdentity kId{42, 1, 1001, 0xabcdef};

PoolSpec create_spec(const std::string& path, uint64_t bytes = 1 << 20) {
  return {path, bytes, kId, PoolOpen::kCreate, false};
}
PoolSpec recover_spec(const std::string& path, PoolIdentity id = kId) {
  return {path, 0, id, PoolOpen::kRecover, false};
}

std::vector<uint8_t> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(PmemPool, AllocationsAreAlignedAndPaddedByTheirSize) {
  EXPECT_EQ(alloc_span(1), 64u);
  EXPECT_EQ(alloc_span(64), 64u);
  EXPECT_EQ(alloc_span(65), 128u);
  EXPECT_EQ(alloc_span(255), 256u);
  EXPECT_EQ(alloc_span(256), 256u);
  EXPECT_EQ(alloc_span(257), 512u);
  TempDir d;
  auto p = PmemPool::open(create_spec(d.file("a.pool")));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  PmemPool& pool = **p;
  EXPECT_EQ(pool.allocated(), 0u);
  auto a = pool.alloc(16);   // H6: one 64 B line
  auto b = pool.alloc(300);  // H5: 256-aligned, two XPLines
  auto c = pool.alloc(8);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  EXPECT_EQ(a->offset % 64, 0u);
  EXPECT_EQ(a->span, 64u);
  EXPECT_EQ(b->offset % 256, 0u);
  EXPECT_EQ(b->span, 512u);
  EXPECT_GE(b->offset, a->offset + a->span);
  EXPECT_EQ(c->offset, b->offset + b->span);
  EXPECT_EQ(pool.allocated(), c->offset + c->span - PmemPool::kHeaderBytes);
  EXPECT_FALSE(pool.alloc(0).is_ok());
  auto full = pool.alloc(4u << 20);
  ASSERT_FALSE(full.is_ok());
  EXPECT_EQ(full.status().code(), Code::kResourceExhausted);
  EXPECT_NE(full.status().message().find("a.pool"), std::string::npos);
}

TEST(PmemPool, ContentsAndAllocationsSurviveAReopen) {
  TempDir d;
  const std::string f = d.file("b.pool");
  FatPtr a, b;
  {
    auto p = PmemPool::open(create_spec(f));
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    a = *(*p)->alloc(25);
    b = *(*p)->alloc(1000);
    const char msg[] = "persisted through pwrite";
    ASSERT_TRUE((*p)->pwrite(a, 0, msg, sizeof msg).is_ok());  // with its NUL
    std::vector<uint8_t> big(1000, 0x5a);
    ASSERT_TRUE((*p)->write(b, 0, big.data(), big.size()).is_ok());
    ASSERT_TRUE((*p)->persist(b, 0, 1000).is_ok());
    const std::string mode = (*p)->persistence();
    EXPECT_TRUE(mode == "pmem" || mode == "memfs" || mode == "msync") << mode;
  }
  auto p = PmemPool::open(recover_spec(f));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  char out[25];
  ASSERT_TRUE((*p)->read(a, 0, out, sizeof out).is_ok());
  EXPECT_STREQ(out, "persisted through pwrite");
  uint8_t last = 0;
  ASSERT_TRUE((*p)->read(b, 999, &last, 1).is_ok());
  EXPECT_EQ(last, 0x5a);
  EXPECT_EQ((*p)->allocated(), b.offset + b.span - PmemPool::kHeaderBytes);
  // Allocating again continues after what was there.
  auto c = (*p)->alloc(8);
  ASSERT_TRUE(c.is_ok());
  EXPECT_GE(c->offset, b.offset + b.span);
}

TEST(PmemPool, AccessesOutsideAnAllocationAreRefused) {
  TempDir d;
  auto p = PmemPool::open(create_spec(d.file("c.pool")));
  ASSERT_TRUE(p.is_ok());
  FatPtr a = *(*p)->alloc(40);
  uint8_t buf[64] = {};
  EXPECT_TRUE((*p)->write(a, 0, buf, 40).is_ok());
  EXPECT_EQ((*p)->write(a, 1, buf, 40).code(), Code::kOutOfRange);  // past the payload
  EXPECT_EQ((*p)->read(a, 41, buf, 0).code(), Code::kOutOfRange);
  EXPECT_EQ((*p)->pwrite(a, ~uint64_t{0}, buf, 2).code(), Code::kOutOfRange);  // overflow
  FatPtr forged = a;
  forged.offset += 8;  // inside the allocation, but not one
  EXPECT_EQ((*p)->read(forged, 0, buf, 1).code(), Code::kInvalidArgument);
  FatPtr beyond{(*p)->bytes() - 64, 16, 64};  // never allocated
  EXPECT_EQ((*p)->write(beyond, 0, buf, 1).code(), Code::kInvalidArgument);
  FatPtr header{0, 16, 64};
  EXPECT_EQ((*p)->write(header, 0, buf, 1).code(), Code::kInvalidArgument);
  EXPECT_EQ((*p)->read(FatPtr{}, 0, buf, 1).code(), Code::kInvalidArgument);
}

TEST(PmemPool, ExistingPoolsAreOverwrittenOnlyWithFormat) {
  TempDir d;
  const std::string f = d.file("d.pool");
  {
    auto p = PmemPool::open(create_spec(f));
    ASSERT_TRUE(p.is_ok());
    FatPtr a = *(*p)->alloc(8);
    ASSERT_TRUE((*p)->pwrite(a, 0, "keepme!", 8).is_ok());
  }
  const std::vector<uint8_t> before = slurp(f);
  auto again = PmemPool::open(create_spec(f));
  ASSERT_FALSE(again.is_ok());
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  EXPECT_NE(again.status().message().find("--format"), std::string::npos);
  EXPECT_NE(again.status().message().find(f), std::string::npos);
  EXPECT_EQ(slurp(f), before);  // untouched
  PoolSpec fmt = create_spec(f, 1 << 16);
  fmt.format = true;
  auto p = PmemPool::open(fmt);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ((*p)->allocated(), 0u);
  EXPECT_EQ((*p)->bytes(), uint64_t{1} << 16);
}

TEST(PmemPool, BadPoolFilesAreRefusedNamingTheFileAndLeftUntouched) {
  TempDir d;
  const std::string f = d.file("e.pool");
  auto missing = PmemPool::open(recover_spec(f));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find(f), std::string::npos);
  { ASSERT_TRUE(PmemPool::open(create_spec(f)).is_ok()); }
  const std::vector<uint8_t> good = slurp(f);

  auto expect_refused = [&](const std::string& why, const std::vector<uint8_t>& bytes,
                            PoolIdentity id = kId) {
    {
      std::ofstream out(f, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()),
                static_cast<std::streamsize>(bytes.size()));
    }
    auto r = PmemPool::open(recover_spec(f, id));
    ASSERT_FALSE(r.is_ok()) << why;
    EXPECT_NE(r.status().message().find(f), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
    EXPECT_EQ(slurp(f), bytes) << why << ": the file was written";
  };
  std::vector<uint8_t> b = good;
  b.resize(100);
  expect_refused("truncated", b);
  b = good;
  b.resize(good.size() - 4096);
  expect_refused("truncated", b);
  b = good;
  b[20] ^= 0x10;  // a bit of the identity
  expect_refused("corrupted header", b);
  b = good;
  b[0] = 'X';
  expect_refused("not a drtmx pool", b);
  b = good;
  const uint32_t v1 = 1;  // format 1: records with ts at +48 (store/record.h before 2026-11-28)
  std::memcpy(b.data() + 8, &v1, sizeof v1);
  expect_refused("has format version 1, this build reads 2", b);
  b = good;
  b[256] = 3;  // the watermark: not a line boundary
  expect_refused("watermark", b);
  expect_refused("belongs to cluster 42", good, PoolIdentity{43, 1, 1001, 0xabcdef});
  expect_refused("layout 11259375", good, PoolIdentity{42, 1, 1001, 7});
  // A create that crashed before its magic: not a pool.
  b = good;
  std::memset(b.data(), 0, 8);
  expect_refused("not a drtmx pool", b);
}

// Where a pool's bytes become durable follows from where its file lies:
// a memory file system (statfs: tmpfs, ramfs) is "memfs" — flushes and a
// fence, no msync; a disk file system is "msync".
TEST(PmemPool, TheModeFollowsTheFileSystem) {
  const std::string shm_file = "/dev/shm/rdpma_pool_test_" + std::to_string(getpid()) + ".pool";
  {
    auto p = PmemPool::open(create_spec(shm_file));
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    if (!(*p)->is_pmem()) {  // PMEM_IS_PMEM_FORCE=1 would make it "pmem"
      EXPECT_EQ((*p)->persistence_mode(), r2::Persistence::kMemFs);
      EXPECT_STREQ((*p)->persistence(), "memfs");
    }
    FatPtr a = *(*p)->alloc(100);
    ASSERT_TRUE((*p)->pwrite(a, 0, "memfs bytes", 12).is_ok());
  }
  auto again = PmemPool::open(recover_spec(shm_file));
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(std::string((*again)->persistence()),
            std::string((*again)->is_pmem() ? "pmem" : "memfs"));
  again->reset();
  fs::remove(shm_file);

  TempDir d;  // the system's temporary directory
  struct statfs sfs {};
  ASSERT_EQ(statfs(d.path.c_str(), &sfs), 0);
  if (static_cast<uint64_t>(sfs.f_type) == TMPFS_MAGIC) GTEST_SKIP() << "/tmp is a tmpfs here";
  auto p = PmemPool::open(create_spec(d.file("disk.pool")));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  if (!(*p)->is_pmem()) {
    EXPECT_EQ((*p)->persistence_mode(), r2::Persistence::kMsync);
    EXPECT_STREQ((*p)->persistence(), "msync");
  }
}

// Before a run, probe_dir says what a directory gives a pool, in one line
// a user can act on; it leaves nothing behind.
TEST(DirProbe, AMemoryDirectoryIsMemfsAndADiskIsMsyncWithItsCost) {
  const std::string shm_dir = "/dev/shm/rdpma_probe_test_" + std::to_string(getpid());
  fs::create_directories(shm_dir);
  auto m = probe_dir(shm_dir);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  if (m->mode != r2::Persistence::kPmem) {  // (PMEM_IS_PMEM_FORCE=1 makes it "pmem")
    EXPECT_EQ(m->mode, r2::Persistence::kMemFs);
    EXPECT_EQ(m->fs_type, "tmpfs");
    EXPECT_EQ(m->persist_ns, 0u);
    EXPECT_NE(m->line().find("--pmem-dir=" + shm_dir + " is in memory (tmpfs"), std::string::npos)
        << m->line();
    EXPECT_NE(m->line().find("not a power loss"), std::string::npos) << m->line();
  }
  EXPECT_TRUE(fs::is_empty(shm_dir));
  fs::remove_all(shm_dir);

  TempDir d;  // the system's temporary directory
  struct statfs sfs {};
  ASSERT_EQ(statfs(d.path.c_str(), &sfs), 0);
  if (static_cast<uint64_t>(sfs.f_type) == TMPFS_MAGIC) GTEST_SKIP() << "/tmp is a tmpfs here";
  auto k = probe_dir(d.path);
  ASSERT_TRUE(k.is_ok()) << k.status().to_string();
  if (k->mode == r2::Persistence::kPmem) GTEST_SKIP() << "PMEM_IS_PMEM_FORCE";
  EXPECT_EQ(k->mode, r2::Persistence::kMsync);
  EXPECT_GT(k->persist_ns, 0u);
  EXPECT_FALSE(k->fs_type.empty());
  const std::string line = k->line();
  EXPECT_NE(line.find("is on a disk file system (" + k->fs_type), std::string::npos) << line;
  EXPECT_NE(line.find("every persist is an msync"), std::string::npos) << line;
  EXPECT_NE(line.find(" us each here"), std::string::npos) << line;
  EXPECT_NE(line.find("DAX"), std::string::npos) << line;
  EXPECT_NE(line.find("/dev/shm"), std::string::npos) << line;
  EXPECT_TRUE(fs::is_empty(d.path));
}

TEST(DirProbe, AnUnwritableDirectoryIsAClearError) {
  auto r = probe_dir("/nonexistent-drtmx-dir/x");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("--pmem-dir=/nonexistent-drtmx-dir/x: cannot create a file"),
            std::string::npos)
      << r.status().to_string();
}

TEST(PmemPool, TheDataAreaIsAFileRegionWithoutTheHeader) {
  TempDir d;
  auto p = PmemPool::open(create_spec(d.file("r.pool"), 1 << 20));
  ASSERT_TRUE(p.is_ok());
  const r2::FileRegion fr = (*p)->data_region();
  EXPECT_EQ(fr.base, (*p)->mapping() + PmemPool::kHeaderBytes);
  EXPECT_EQ(fr.bytes, (1u << 20) - PmemPool::kHeaderBytes);
  EXPECT_EQ(fr.file_offset, PmemPool::kHeaderBytes);
  EXPECT_EQ(fr.path, d.file("r.pool"));
  EXPECT_EQ(fr.mode, (*p)->persistence_mode());
  FatPtr a = *(*p)->alloc(64);
  EXPECT_EQ(PmemPool::region_offset(a), a.offset - PmemPool::kHeaderBytes);
  EXPECT_TRUE((*p)->check_allocation(a).is_ok());
  FatPtr forged = a;
  forged.span = 128;
  EXPECT_EQ((*p)->check_allocation(forged).code(), Code::kInvalidArgument);
}

TEST(PmemPool, WholePayloadWritesZeroThePaddingPartialOnesDoNot) {
  for (const char* dir : {"/dev/shm", ""}) {
    TempDir d;
    const std::string f =
        *dir ? std::string(dir) + "/rdpma_pool_test_pad_" + std::to_string(getpid()) + ".pool"
             : d.file("pad.pool");
    auto p = PmemPool::open(create_spec(f));
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    for (uint32_t size : {16u, 64u, 100u, 300u, 1024u, 1030u}) {
      FatPtr a = *(*p)->alloc(size);
      uint8_t* span = (*p)->mapping() + a.offset;
      std::memset(span, 0xee, a.span);  // stale bytes in payload and padding
      std::vector<uint8_t> data(size, 0x11);
      ASSERT_TRUE((*p)->pwrite(a, 0, data.data(), size).is_ok());
      EXPECT_EQ(std::vector<uint8_t>(span, span + size), data) << (*p)->persistence() << size;
      EXPECT_EQ(std::vector<uint8_t>(span + size, span + a.span),
                std::vector<uint8_t>(a.span - size, 0))
          << "padding of " << size << " in " << (*p)->persistence();
      if (a.span == size) continue;  // no padding
      // A partial write leaves the padding alone; a whole one zeroes it.
      std::memset(span + size, 0xee, a.span - size);
      ASSERT_TRUE((*p)->pwrite(a, 1, data.data(), size - 1).is_ok());
      EXPECT_EQ(span[size], 0xee);
      ASSERT_TRUE((*p)->write_nt(a, 0, data.data(), size).is_ok());
      ASSERT_TRUE((*p)->persist(a, 0, size).is_ok());
      EXPECT_EQ(span[size], 0);
      EXPECT_EQ(span[a.span - 1], 0);
    }
    p->reset();
    if (*dir) fs::remove(f);
  }
}

TEST(PmemPool, RawWritesAndMappedPersistsStayInsideAllocatedData) {
  TempDir d;
  auto p = PmemPool::open(create_spec(d.file("raw.pool"), 1 << 16));
  ASSERT_TRUE(p.is_ok());
  PmemPool& pool = **p;
  FatPtr a = *pool.alloc(1000);  // allocated data: [4096, 4096 + 1024)
  const uint64_t end = PmemPool::region_offset(a) + a.span;
  uint8_t buf[64];
  std::memset(buf, 0x42, sizeof buf);
  EXPECT_TRUE(pool.pwrite_raw(8, buf, 24).is_ok());  // unaligned, unpadded
  EXPECT_EQ(pool.mapping()[PmemPool::kHeaderBytes + 8], 0x42);
  EXPECT_TRUE(pool.pwrite_raw(end - 10, buf, 10).is_ok());
  EXPECT_EQ(pool.pwrite_raw(end - 10, buf, 11).code(), Code::kOutOfRange);  // past the watermark
  EXPECT_EQ(pool.pwrite_raw(~uint64_t{0} - 3, buf, 8).code(), Code::kOutOfRange);
  EXPECT_EQ(pool.pwrite_raw(pool.bytes(), buf, 1).code(), Code::kOutOfRange);
  const uint8_t* heap = pool.mapping() + a.offset;
  EXPECT_TRUE(pool.persist_mapped(heap + 100, 200).is_ok());
  EXPECT_EQ(pool.persist_mapped(heap + 1000, 100).code(), Code::kOutOfRange);
  EXPECT_EQ(pool.persist_mapped(pool.mapping(), 8).code(), Code::kOutOfRange);  // the header
  EXPECT_EQ(pool.persist_mapped(buf, 8).code(), Code::kOutOfRange);             // not the pool
  auto r = pool.persist_mapped(heap + 1000, 100);
  EXPECT_NE(r.message().find("raw.pool"), std::string::npos) << r.message();
}

TEST(PmemPool, ACreateInAMissingDirectoryIsAClearError) {
  TempDir d;
  auto r = PmemPool::open(create_spec(d.file("no/such/dir/f.pool")));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), Code::kIoError);
  EXPECT_NE(r.status().message().find("directory"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace drtmx::rdpma
