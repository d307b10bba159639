// Growable regions on the shm fabric (issue 46): a region of a terabyte of
// address space whose /dev/shm segment holds nothing until the owner
// commits ranges; committed ranges are backed (st_blocks), resident in the
// owner and reachable by peers' READ/WRITE/CAS; the virtual size bounds ops
// as any region's size does; commit is idempotent, exact in its accounting
// under concurrent overlapping commits, and a commit the host cannot back
// is kResourceExhausted with a message (never a SIGBUS): /dev/shm smaller
// than the range, a private region beyond the machine's memory, a growable
// file region on a small tmpfs the test mounts (root only).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "base/resident.h"
#include "r2/shm/segment.h"
#include "r2/support/inproc_cluster.h"

namespace drtmx::r2 {
namespace {

using testing::InProcCluster;
using testing::poll_n;

constexpr RegionId kScratch = 1;
constexpr RegionId kGrow = 7;
constexpr uint64_t kTiB = uint64_t{1} << 40;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

// Every node registers a scratch region (local buffers) and growable
// regions `ids` of `bytes` virtual bytes each.
std::unique_ptr<InProcCluster> growable_cluster(uint16_t nodes, std::vector<RegionId> ids,
                                                uint64_t bytes) {
  return InProcCluster::make(nodes, 1, {{kScratch, 1 << 16}}, nullptr,
                             [ids, bytes](NodeId, Fabric& f) -> Status {
                               for (RegionId id : ids) {
                                 auto r = f.register_growable_region(id, bytes);
                                 if (!r) return r.status();
                               }
                               return Status::ok();
                             });
}

// The segment of region `id` of `node` in /dev/shm.
struct stat segment_stat(const InProcCluster& c, NodeId node, RegionId id) {
  struct stat st {};
  const std::string path =
      "/dev/shm" + shm::segment_name(c.cluster, node, "r" + std::to_string(id));
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st;
}

uint64_t allocated(const struct stat& st) {
  return uint64_t(st.st_blocks) * 512;
}

WorkRequest wr(Verb v, NodeId node, uint64_t offset, void* local, uint32_t len) {
  WorkRequest w;
  w.verb = v;
  w.remote = {node, kGrow, offset};
  w.local = local;
  w.len = len;
  return w;
}

OpStatus run_one(Endpoint* ep, const WorkRequest& w) {
  EXPECT_EQ(ep->post(w), PostResult::kOk);
  ep->doorbell(w.remote.node);
  auto c = poll_n(ep, 1);
  EXPECT_EQ(c.size(), 1u);
  return c.empty() ? OpStatus::kTransportError : c[0].status;
}

TEST(ShmGrowable, OnlyCommittedRangesAreBackedAndPeersReachThem) {
  auto c = growable_cluster(3, {kGrow}, kTiB);
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Fabric& owner = c->f(0);

  // A terabyte of address space on every node, nothing in /dev/shm.
  struct stat st = segment_stat(*c, 0, kGrow);
  EXPECT_EQ(uint64_t(st.st_size), kTiB);
  EXPECT_LT(allocated(st), 64 * 1024u);
  EXPECT_EQ(owner.committed_bytes(kGrow), 0u);
  EXPECT_EQ(c->f(1).remote_region_size(0, kGrow), kTiB);
  EXPECT_EQ(owner.region(kGrow)->size, kTiB);

  // A range in the middle, not page aligned: rounded out to pages.
  const uint64_t at = 3 * kGiB + 100;
  ASSERT_TRUE(owner.commit(kGrow, at, kMiB).is_ok());
  const uint64_t backed = kMiB + 4096;  // [3 GiB, 3 GiB + 1 MiB + 4 KiB)
  EXPECT_EQ(owner.committed_bytes(kGrow), backed);
  st = segment_stat(*c, 0, kGrow);
  EXPECT_GE(allocated(st), backed);
  EXPECT_LT(allocated(st), backed + 4 * kMiB);  // huge pages may round it up
  uint8_t* base = owner.region(kGrow)->base;
  if (resident_supported()) {
    EXPECT_EQ(mapped_pages(base + 3 * kGiB, backed), long(backed / 4096));
  }

  // Idempotent: nothing more backed, nothing counted twice.
  ASSERT_TRUE(owner.commit(kGrow, at, kMiB).is_ok());
  ASSERT_TRUE(owner.commit(kGrow, 3 * kGiB, 4096).is_ok());
  EXPECT_EQ(owner.committed_bytes(kGrow), backed);
  EXPECT_EQ(allocated(segment_stat(*c, 0, kGrow)), allocated(st));

  // The owner's bytes, read by a peer; a peer's WRITE and CAS, seen by the owner.
  std::memcpy(base + at, "grown table row", 16);
  Endpoint* ep = c->f(1).endpoint(0);
  uint8_t* scratch = c->base(1, kScratch);
  ASSERT_EQ(run_one(ep, wr(Verb::kRead, 0, at, scratch, 16)), OpStatus::kOk);
  EXPECT_EQ(std::memcmp(scratch, "grown table row", 16), 0);
  std::memcpy(scratch, "from node one!!", 16);
  ASSERT_EQ(run_one(ep, wr(Verb::kWrite, 0, at + 4096, scratch, 16)), OpStatus::kOk);
  EXPECT_EQ(std::memcmp(base + at + 4096, "from node one!!", 16), 0);
  WorkRequest cas = wr(Verb::kCas, 0, 3 * kGiB + 8192, scratch + 64, 8);
  cas.compare = 0;
  cas.operand = 0x1234;
  ASSERT_EQ(run_one(ep, cas), OpStatus::kOk);
  uint64_t word = 0;
  std::memcpy(&word, base + 3 * kGiB + 8192, 8);
  EXPECT_EQ(word, 0x1234u);

  // Bounds are the virtual size, as for any region.
  EXPECT_EQ(run_one(ep, wr(Verb::kRead, 0, kTiB - 8, scratch, 16)), OpStatus::kOutOfBounds);
  EXPECT_EQ(run_one(ep, wr(Verb::kRead, 0, kTiB, scratch, 8)), OpStatus::kOutOfBounds);

  // A range at the very end, and errors.
  ASSERT_TRUE(owner.commit(kGrow, kTiB - 10, 10).is_ok());
  EXPECT_EQ(owner.committed_bytes(kGrow), backed + 4096);
  EXPECT_EQ(owner.commit(kGrow, kTiB - 10, 11).code(), Code::kInvalidArgument);
  EXPECT_EQ(owner.commit(kGrow, ~uint64_t{0}, 2).code(), Code::kInvalidArgument);
  Status unknown = owner.commit(99, 0, 1);
  EXPECT_EQ(unknown.code(), Code::kInvalidArgument);
  EXPECT_NE(unknown.message().find("never registered"), std::string::npos) << unknown.message();
  // A region registered whole is backed already: a no-op.
  EXPECT_TRUE(owner.commit(kScratch, 0, 4096).is_ok());
  EXPECT_EQ(owner.committed_bytes(kScratch), owner.region(kScratch)->size);
  EXPECT_EQ(owner.committed_bytes(99), 0u);
  // Another node's segment stayed empty.
  EXPECT_LT(allocated(segment_stat(*c, 1, kGrow)), 64 * 1024u);
}

TEST(ShmGrowable, ConcurrentOverlappingCommitsCountEachPageOnce) {
  auto c = growable_cluster(2, {kGrow}, kTiB);
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Fabric& owner = c->f(0);
  // Four threads, each 12 MiB in 1 MiB steps, overlapping its neighbours by
  // half: [t * 6 MiB, t * 6 MiB + 12 MiB); the union is [0, 30 MiB).
  std::vector<std::thread> ts;
  std::vector<Status> st(4);
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (uint64_t i = 0; i < 12 && st[t].is_ok(); ++i) {
        st[t] = owner.commit(kGrow, (t * 6 + i) * kMiB, kMiB);
      }
      if (st[t].is_ok()) st[t] = owner.commit(kGrow, t * 6 * kMiB, 12 * kMiB);
    });
  }
  for (auto& t : ts) t.join();
  for (auto& s : st) EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(owner.committed_bytes(kGrow), 30 * kMiB);
  const uint64_t a = allocated(segment_stat(*c, 0, kGrow));
  EXPECT_GE(a, 30 * kMiB);
  EXPECT_LT(a, 34 * kMiB);
}

TEST(ShmGrowable, ACommitLargerThanDevShmIsResourceExhaustedNotASigbus) {
  struct statvfs vfs {};
  ASSERT_EQ(::statvfs("/dev/shm", &vfs), 0);
  const uint64_t total = uint64_t(vfs.f_blocks) * vfs.f_frsize;
  if (total == 0 || total > 256 * kGiB) GTEST_SKIP() << "/dev/shm has no size limit below 256 GiB";
  auto c = growable_cluster(2, {kGrow}, kTiB);
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  // More than the machine keeps available is refused before any block is
  // allocated (a tmpfs as large as the memory would otherwise take it and
  // leave the OOM killer to end a process), as is more than the file
  // system holds (fallocate's ENOSPC).
  Status s = c->f(0).commit(kGrow, 0, total + kGiB);
  EXPECT_EQ(s.code(), Code::kResourceExhausted) << s.to_string();
  for (const char* want :
       {"/dev/shm has no room for", "region 7", "node 0 holds 0 B", "free there"}) {
    EXPECT_NE(s.message().find(want), std::string::npos) << want << " in: " << s.message();
  }
  EXPECT_TRUE(s.message().find("mount -o remount,size=") != std::string::npos ||
              s.message().find("an eighth of the machine's memory") != std::string::npos)
      << s.message();
  EXPECT_EQ(c->f(0).committed_bytes(kGrow), 0u);
  EXPECT_LT(allocated(segment_stat(*c, 0, kGrow)), 64 * 1024u);
  // The region still works for what fits.
  EXPECT_TRUE(c->f(0).commit(kGrow, 0, kMiB).is_ok());
  EXPECT_EQ(c->f(0).committed_bytes(kGrow), kMiB);
}

TEST(ShmGrowable, OneNodeReservesPrivateMemoryAndRefusesWhatTheMachineLacks) {
  auto c = growable_cluster(1, {kGrow}, kTiB);
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Fabric& f = c->f(0);
  uint8_t* base = f.region(kGrow)->base;
  if (resident_supported()) {
    EXPECT_EQ(mapped_pages(base, 4 * kMiB), 0);
  }
  ASSERT_TRUE(f.commit(kGrow, 0, 4 * kMiB).is_ok());
  EXPECT_EQ(f.committed_bytes(kGrow), 4 * kMiB);
  if (resident_supported()) {
    EXPECT_EQ(mapped_pages(base, 4 * kMiB), long(4 * kMiB / 4096));
  }
  base[4 * kMiB - 1] = 1;
  // Half a terabyte: more than this machine (has_room_for is checked before
  // a page is touched, so nothing is populated).
  if (has_room_for(512 * kGiB)) GTEST_SKIP() << "this machine has 512 GiB to spare";
  Status s = f.commit(kGrow, 8 * kMiB, 512 * kGiB);
  EXPECT_EQ(s.code(), Code::kResourceExhausted) << s.to_string();
  EXPECT_NE(s.message().find("has no room for 512 GiB more of region 7"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("holds 4 MiB"), std::string::npos) << s.message();
  EXPECT_EQ(f.committed_bytes(kGrow), 4 * kMiB);
}

TEST(ShmGrowable, TerabytesOfSegmentsMapInEveryNode) {
  // 3 nodes x 5 regions x 2 TiB: each node maps its own 10 TiB and its two
  // peers' 20 TiB, and all three are in this process: 90 TiB of mappings
  // (ASan's shadow takes a part of the address space: 1 TiB regions).
  const uint64_t each = kAsan ? kTiB : 2 * kTiB;
  std::vector<RegionId> ids = {10, 11, 12, 13, 14};
  auto c = growable_cluster(3, ids, each);
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  for (NodeId n = 0; n < 3; ++n) {
    for (RegionId id : ids) {
      ASSERT_TRUE(c->f(n).commit(id, each - 4096, 4096).is_ok());
      c->f(n).region(id)->base[each - 1] = static_cast<uint8_t>(n * 16 + id);
    }
  }
  Endpoint* ep = c->f(2).endpoint(0);
  uint8_t* scratch = c->base(2, kScratch);
  for (NodeId n = 0; n < 2; ++n) {
    for (RegionId id : ids) {
      WorkRequest w = wr(Verb::kRead, n, each - 1, scratch, 1);
      w.remote.region = id;
      ASSERT_EQ(run_one(ep, w), OpStatus::kOk);
      EXPECT_EQ(scratch[0], n * 16 + id);
    }
  }
}

// A tmpfs of 16 MiB mounted by the test (root only), unmounted on every
// exit path.
class SmallTmpfs {
 public:
  SmallTmpfs() {
    char tmpl[] = "/tmp/drtmx-growable-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return;
    dir_ = tmpl;
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=16m") == 0) mounted_ = true;
  }
  ~SmallTmpfs() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  bool ok() const { return mounted_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  bool mounted_ = false;
};

TEST(ShmGrowable, AGrowableFileRegionOnAFullFileSystemIsResourceExhausted) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  SmallTmpfs fs;
  if (!fs.ok()) GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  // A sparse file of 1 GiB on a 16 MiB file system, mapped whole.
  const std::string path = fs.dir() + "/pool";
  const uint64_t size = kGiB;
  const int fd = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(size)), 0);
  void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  ::close(fd);
  ASSERT_NE(m, MAP_FAILED);
  {
    FileRegion fr{
        static_cast<uint8_t*>(m) + 4096, size - 4096, path, 4096, Persistence::kMemFs, true};
    auto c = InProcCluster::make(2, 1, {{kScratch, 1 << 16}}, nullptr,
                                 [&](NodeId n, Fabric& f) -> Status {
                                   if (n != 0) return Status::ok();
                                   return f.register_file_region(kGrow, fr).status();
                                 });
    ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
    Fabric& owner = c->f(0);
    ASSERT_TRUE(owner.commit(kGrow, 0, 8 * kMiB).is_ok());
    EXPECT_EQ(owner.committed_bytes(kGrow), 8 * kMiB);
    // 9 MiB more do not fit beside the first 8: refused, nothing counted.
    Status s = owner.commit(kGrow, 8 * kMiB, 9 * kMiB);
    EXPECT_EQ(s.code(), Code::kResourceExhausted) << s.to_string();
    for (const std::string& want :
         std::vector<std::string>{path + " has no room for 9 MiB more of region 7",
                                  "node 0 holds 8 MiB", "free there", "--pmem-dir"}) {
      EXPECT_NE(s.message().find(want), std::string::npos) << want << " in: " << s.message();
    }
    EXPECT_EQ(owner.committed_bytes(kGrow), 8 * kMiB);
    // What was committed works from a peer.
    std::memcpy(owner.region(kGrow)->base + 8 * kMiB - 16, "end of the file", 16);
    uint8_t* scratch = c->base(1, kScratch);
    ASSERT_EQ(run_one(c->f(1).endpoint(0), wr(Verb::kRead, 0, 8 * kMiB - 16, scratch, 16)),
              OpStatus::kOk);
    EXPECT_EQ(std::memcmp(scratch, "end of the file", 16), 0);
  }
  ::munmap(m, size);
}

// What backing costs (machine-readable, for docs/design-notes.md): one
// commit of 64 MiB and 64 commits of 1 MiB on a fresh growable segment, and
// a commit of a range already backed.
TEST(ShmGrowable, CommitCostPerMiB) {
  auto c = growable_cluster(2, {kGrow}, kTiB);
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Fabric& f = c->f(0);
  using clk = std::chrono::steady_clock;
  auto us = [](clk::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
  auto t0 = clk::now();
  ASSERT_TRUE(f.commit(kGrow, 0, 64 * kMiB).is_ok());
  auto t1 = clk::now();
  for (uint64_t i = 0; i < 64; ++i) ASSERT_TRUE(f.commit(kGrow, (64 + i) * kMiB, kMiB).is_ok());
  auto t2 = clk::now();
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_TRUE(f.commit(kGrow, i * 4096, 4096).is_ok());
  auto t3 = clk::now();
  EXPECT_EQ(f.committed_bytes(kGrow), 128 * kMiB);
  std::printf(
      "{\"commit_cost\": {\"us_per_mib_64mib_commit\": %.1f, \"us_per_mib_1mib_commits\": %.1f, "
      "\"ns_per_repeat_commit\": %.0f, \"resident\": %s}}\n",
      us(t1 - t0) / 64, us(t2 - t1) / 64, us(t3 - t2) * 1000 / 1000,
      resident_supported() ? "true" : "false");
}

}  // namespace
}  // namespace drtmx::r2
