// Persistent regions on the shm fabric: a node registers memory it mapped
// from a file; peers map the same file (data visible both ways, in the
// file too); a WRITE into it is made durable by the next READ on the same
// channel — flushed lines fenced (memfs/pmem), dirty pages msynced (a disk
// file) — and not by anything else; bad file regions are refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "r2/shm/shm_endpoint.h"
#include "r2/support/inproc_cluster.h"
#include "r2/support/mapped_file.h"

namespace drtmx::r2 {
namespace {

using testing::InProcCluster;
using testing::MappedFile;
using testing::poll_n;

constexpr RegionId kScratch = 2;
constexpr RegionId kFile = 5;
constexpr uint64_t kFileOffset = 4096;  // the region starts one page into the file
constexpr size_t kFileBytes = 64 * 1024;

WorkRequest wr(Verb v, RemoteAddr r, void* local, uint32_t len, uint64_t id, bool signaled = true) {
  WorkRequest w;
  w.verb = v;
  w.remote = r;
  w.local = local;
  w.len = len;
  w.wr_id = id;
  w.signaled = signaled;
  return w;
}

FileRegion region_of(const MappedFile& f, Persistence mode) {
  return {f.base() + kFileOffset, f.size() - kFileOffset, f.path(), kFileOffset, mode};
}

// A cluster whose node 0 registers `file` as region kFile.
std::unique_ptr<InProcCluster> cluster_with_file(uint16_t nodes, uint16_t threads,
                                                 const MappedFile& file, Persistence mode) {
  return InProcCluster::make(nodes, threads, {{kScratch, 1 << 16}}, nullptr,
                             [&](NodeId n, Fabric& f) -> Status {
                               if (n != 0) return Status::ok();
                               auto r = f.register_file_region(kFile, region_of(file, mode));
                               return r.status();
                             });
}

shm::ShmEndpoint& shm_ep(InProcCluster& c, NodeId n, ThreadId t) {
  return *dynamic_cast<shm::ShmEndpoint*>(c.f(n).endpoint(t));
}

void expect_ok(const std::vector<Completion>& comps, size_t n) {
  ASSERT_EQ(comps.size(), n);
  for (const Completion& c : comps) EXPECT_EQ(c.status, OpStatus::kOk) << op_status_name(c.status);
}

class FileRegions : public ::testing::TestWithParam<Persistence> {
 protected:
  std::string dir() const {
    return GetParam() == Persistence::kMsync ? testing::disk_dir() : std::string("/dev/shm");
  }
};

TEST_P(FileRegions, PeersMapTheFileAndSeeDataBothWays) {
  if (dir().empty()) GTEST_SKIP() << "no disk file system to put an msync-mode file on";
  MappedFile file(dir(), kFileBytes);
  ASSERT_TRUE(file.ok()) << file.path();
  auto c = cluster_with_file(3, 1, file, GetParam());
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();

  // Every node knows the region and its persistence; the owner's Region too.
  const Region* own = c->f(0).region(kFile);
  ASSERT_NE(own, nullptr);
  EXPECT_TRUE(own->persistent());
  EXPECT_EQ(own->persistence, GetParam());
  EXPECT_EQ(own->base, file.base() + kFileOffset);
  for (NodeId n = 0; n < 3; ++n) {
    EXPECT_EQ(c->f(n).region_persistence(0, kFile), GetParam()) << "node " << n;
    EXPECT_EQ(c->f(n).remote_region_size(0, kFile), kFileBytes - kFileOffset);
    EXPECT_EQ(c->f(n).region_persistence(0, kScratch), Persistence::kNone);
    EXPECT_FALSE(c->f(n).region(kScratch)->persistent());
  }

  // Peer -> owner: node 2 WRITEs; the owner's mapping and the file have it.
  uint8_t* local = c->base(2, kScratch);
  std::memcpy(local, "from node two", 14);
  Endpoint* ep = c->f(2).endpoint(0);
  ASSERT_EQ(ep->post(wr(Verb::kWrite, {0, kFile, 1000}, local, 14, 1)), PostResult::kOk);
  ep->doorbell(0);
  expect_ok(poll_n(ep, 1), 1);
  EXPECT_EQ(std::memcmp(own->base + 1000, "from node two", 14), 0);
  const auto in_file = file.read_back(kFileOffset + 1000, 14);
  ASSERT_EQ(in_file.size(), 14u);
  EXPECT_EQ(std::memcmp(in_file.data(), "from node two", 14), 0);

  // Owner -> peer: node 0 stores with its CPU; node 1 READs it.
  std::memcpy(own->base + 5000, "owner's bytes", 14);
  Endpoint* ep1 = c->f(1).endpoint(0);
  uint8_t* local1 = c->base(1, kScratch);
  ASSERT_EQ(ep1->post(wr(Verb::kRead, {0, kFile, 5000}, local1, 14, 2)), PostResult::kOk);
  ep1->doorbell(0);
  expect_ok(poll_n(ep1, 1), 1);
  EXPECT_EQ(std::memcmp(local1, "owner's bytes", 14), 0);

  // Atomics work on the file's words too; the owner's own channel as well.
  uint64_t* old = reinterpret_cast<uint64_t*>(local1 + 64);
  auto faa = wr(Verb::kFaa, {0, kFile, 64}, old, 8, 3);
  faa.operand = 7;
  ASSERT_EQ(ep1->post(faa), PostResult::kOk);
  ep1->doorbell(0);
  expect_ok(poll_n(ep1, 1), 1);
  Endpoint* ep0 = c->f(0).endpoint(0);
  uint8_t* local0 = c->base(0, kScratch);
  ASSERT_EQ(ep0->post(wr(Verb::kRead, {0, kFile, 64}, local0, 8, 4)), PostResult::kOk);
  ep0->doorbell(0);
  expect_ok(poll_n(ep0, 1), 1);
  uint64_t v = 0;
  std::memcpy(&v, local0, 8);
  EXPECT_EQ(v, 7u);

  // Out of the region's bounds: refused, the file untouched beyond it.
  ASSERT_EQ(ep->post(wr(Verb::kWrite, {0, kFile, kFileBytes - kFileOffset - 4}, local, 14, 5)),
            PostResult::kOk);
  ep->doorbell(0);
  auto comps = poll_n(ep, 1);
  ASSERT_EQ(comps.size(), 1u);
  EXPECT_EQ(comps[0].status, OpStatus::kOutOfBounds);
}

TEST_P(FileRegions, TheFileOutlivesTheFabric) {
  if (dir().empty()) GTEST_SKIP() << "no disk file system to put an msync-mode file on";
  MappedFile file(dir(), kFileBytes);
  ASSERT_TRUE(file.ok());
  {
    auto c = cluster_with_file(2, 1, file, GetParam());
    ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
    uint8_t* local = c->base(1, kScratch);
    std::memcpy(local, "kept", 4);
    Endpoint* ep = c->f(1).endpoint(0);
    ASSERT_EQ(ep->post(wr(Verb::kWrite, {0, kFile, 8}, local, 4, 1, false)), PostResult::kOk);
    ASSERT_EQ(ep->post(wr(Verb::kRead, {0, kFile, 8}, local + 64, 4, 2)), PostResult::kOk);
    ep->doorbell(0);
    expect_ok(poll_n(ep, 1), 1);
  }
  // The fabric is gone (peers unmapped); the owner never removes the file.
  ASSERT_TRUE(std::filesystem::exists(file.path()));
  const auto bytes = file.read_back(kFileOffset + 8, 4);
  ASSERT_EQ(bytes.size(), 4u);
  EXPECT_EQ(std::memcmp(bytes.data(), "kept", 4), 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, FileRegions,
                         ::testing::Values(Persistence::kMemFs, Persistence::kMsync),
                         [](const auto& info) {
                           return std::string(persistence_name(info.param));
                         });

TEST(FileRegionPersistence, FlushedLinesAreFencedByTheNextReadOnTheSameChannel) {
  MappedFile file("/dev/shm", kFileBytes);
  ASSERT_TRUE(file.ok());
  auto c = cluster_with_file(3, 2, file, Persistence::kMemFs);
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* ep = c->f(1).endpoint(0);
  auto& st = shm_ep(*c, 1, 0).persist_stats();
  uint8_t* local = c->base(1, kScratch);
  std::memset(local, 0xab, 256);

  // WRITE of [60, 160): lines 0, 1 and 2 flushed, no fence yet.
  ASSERT_EQ(ep->post(wr(Verb::kWrite, {0, kFile, 60}, local, 100, 1)), PostResult::kOk);
  ep->doorbell(0);
  expect_ok(poll_n(ep, 1), 1);
  EXPECT_EQ(st.flushed_writes, 1u);
  EXPECT_EQ(st.flushed_lines, 3u);
  EXPECT_EQ(st.fences, 0u);
  EXPECT_EQ(st.msyncs, 0u);

  // Neither a CAS on the channel, nor a READ by another thread, nor a READ
  // of this thread to another node fences it.
  auto cas = wr(Verb::kCas, {0, kFile, 512}, local + 512, 8, 2);
  ASSERT_EQ(ep->post(cas), PostResult::kOk);
  ep->doorbell(0);
  expect_ok(poll_n(ep, 1), 1);
  Endpoint* other_thread = c->f(1).endpoint(1);
  ASSERT_EQ(other_thread->post(wr(Verb::kRead, {0, kFile, 60}, c->base(1, kScratch) + 1024, 8, 3)),
            PostResult::kOk);
  other_thread->doorbell(0);
  expect_ok(poll_n(other_thread, 1), 1);
  ASSERT_EQ(ep->post(wr(Verb::kRead, {2, kScratch, 0}, local + 768, 8, 4)), PostResult::kOk);
  ep->doorbell(2);
  expect_ok(poll_n(ep, 1), 1);
  EXPECT_EQ(st.fences, 0u);
  EXPECT_EQ(shm_ep(*c, 1, 1).persist_stats().fences, 0u);

  // The READ on the same channel — of any region of the peer — fences it.
  ASSERT_EQ(ep->post(wr(Verb::kRead, {0, kScratch, 0}, local + 768, 8, 5)), PostResult::kOk);
  ep->doorbell(0);
  expect_ok(poll_n(ep, 1), 1);
  EXPECT_EQ(st.fences, 1u);
  // Nothing left to fence: the next READ does not.
  ASSERT_EQ(ep->post(wr(Verb::kRead, {0, kFile, 0}, local + 768, 8, 6)), PostResult::kOk);
  ep->doorbell(0);
  expect_ok(poll_n(ep, 1), 1);
  EXPECT_EQ(st.fences, 1u);

  // H9: an unsignaled WRITE and the flushing READ behind one doorbell —
  // one completion, and the WRITE fenced before it.
  ASSERT_EQ(ep->post(wr(Verb::kWrite, {0, kFile, 4096}, local, 64, 7, false)), PostResult::kOk);
  ASSERT_EQ(ep->post(wr(Verb::kRead, {0, kFile, 4096}, local + 768, 8, 8)), PostResult::kOk);
  ep->doorbell(0);
  auto comps = poll_n(ep, 1);
  expect_ok(comps, 1);
  EXPECT_EQ(comps[0].wr_id, 8u);
  EXPECT_EQ(st.flushed_writes, 2u);
  EXPECT_EQ(st.flushed_lines, 4u);
  EXPECT_EQ(st.fences, 2u);
  EXPECT_EQ(std::memcmp(c->base(1, kScratch) + 768, local, 8), 0);

  // Volatile regions are never flushed.
  ASSERT_EQ(ep->post(wr(Verb::kWrite, {0, kScratch, 0}, local, 64, 9)), PostResult::kOk);
  ep->doorbell(0);
  expect_ok(poll_n(ep, 1), 1);
  EXPECT_EQ(st.flushed_writes, 2u);
}

TEST(FileRegionPersistence, DirtyPagesOfADiskFileAreMsyncedByTheNextReadOnTheSameChannel) {
  const std::string dir = testing::disk_dir();
  if (dir.empty()) GTEST_SKIP() << "no disk file system to put an msync-mode file on";
  MappedFile file(dir, kFileBytes);
  ASSERT_TRUE(file.ok());
  auto c = cluster_with_file(3, 2, file, Persistence::kMsync);
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* ep = c->f(1).endpoint(0);
  auto& st = shm_ep(*c, 1, 0).persist_stats();
  uint8_t* local = c->base(1, kScratch);
  std::memset(local, 0x5c, 8192);

  // Two WRITEs in one page and one straddling pages 2 and 3 of the region:
  // two remembered ranges (the first two merged), nothing synced yet.
  for (auto [off, len] : {std::pair<uint64_t, uint32_t>{100, 50}, {300, 50}, {3 * 4096 - 10, 20}}) {
    ASSERT_EQ(ep->post(wr(Verb::kWrite, {0, kFile, off}, local, len, off)), PostResult::kOk);
  }
  ep->doorbell(0);
  expect_ok(poll_n(ep, 3), 3);
  EXPECT_EQ(st.dirty_writes, 3u);
  EXPECT_EQ(st.msyncs, 0u);
  EXPECT_EQ(st.flushed_lines, 0u);
  const long dirty_before = testing::dirty_kb_of_file(file.path());

  // A READ by another thread of the node, or to another node: no msync.
  Endpoint* other_thread = c->f(1).endpoint(1);
  ASSERT_EQ(other_thread->post(wr(Verb::kRead, {0, kFile, 0}, local + 8192, 8, 10)),
            PostResult::kOk);
  other_thread->doorbell(0);
  expect_ok(poll_n(other_thread, 1), 1);
  ASSERT_EQ(ep->post(wr(Verb::kRead, {2, kScratch, 0}, local + 8192, 8, 11)), PostResult::kOk);
  ep->doorbell(2);
  expect_ok(poll_n(ep, 1), 1);
  EXPECT_EQ(st.msyncs, 0u);
  EXPECT_EQ(shm_ep(*c, 1, 1).persist_stats().msyncs, 0u);

  // The READ on the channel: both ranges msynced before it completes; the
  // file's pages are clean in every mapping (written back to the disk).
  ASSERT_EQ(ep->post(wr(Verb::kRead, {0, kFile, 100}, local + 8192, 8, 12)), PostResult::kOk);
  ep->doorbell(0);
  expect_ok(poll_n(ep, 1), 1);
  EXPECT_EQ(st.msyncs, 2u);
  EXPECT_EQ(st.msync_errors, 0u);
  EXPECT_EQ(testing::dirty_kb_of_file(file.path()), 0)
      << "dirty before the READ: " << dirty_before << " kB";
  // And the bytes are the file's (read through another descriptor).
  const auto bytes = file.read_back(kFileOffset + 3 * 4096 - 10, 20);
  ASSERT_EQ(bytes.size(), 20u);
  EXPECT_EQ(bytes, std::vector<uint8_t>(20, 0x5c));
}

TEST(FileRegionChecks, BadFileRegionsAreRefusedNamingWhatIsWrong) {
  MappedFile file("/dev/shm", kFileBytes);
  ASSERT_TRUE(file.ok());
  FabricConfig cfg;
  cfg.cluster = testing::unique_cluster("fr");
  cfg.ring_bytes = 64 * 1024;
  auto f = make_fabric(cfg);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto refused = [&](RegionId id, FileRegion fr, const std::string& needle) {
    auto r = (*f)->register_file_region(id, fr);
    ASSERT_FALSE(r.is_ok()) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  const FileRegion good = region_of(file, Persistence::kMemFs);
  FileRegion b = good;
  b.base = nullptr;
  refused(1, b, "base is null");
  b = good;
  b.base += 8;
  refused(1, b, "not page aligned");
  b = good;
  b.bytes = 0;
  refused(1, b, "size 0");
  b = good;
  b.file_offset = 100;
  refused(1, b, "not a multiple of the page size");
  b = good;
  b.mode = Persistence::kNone;
  refused(1, b, "use register_region");
  b = good;
  b.path = "";
  refused(1, b, "no file path");
  b = good;
  b.path = "/dev/shm/a\nb";
  refused(1, b, "newline");
  b = good;
  b.path = "/dev/shm/drtmx-no-such-file-" + std::to_string(getpid());
  refused(1, b, "drtmx-no-such-file");
  b = good;
  b.bytes = kFileBytes;  // from offset 4096: one page past the end
  refused(1, b, "fewer than offset 4096");
  ASSERT_TRUE((*f)->register_region(3, 4096).is_ok());
  refused(3, good, "already registered");
  auto ok = (*f)->register_file_region(4, good);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->persistence, Persistence::kMemFs);
  EXPECT_EQ((*f)->region_persistence(0, 4), Persistence::kMemFs);
  EXPECT_EQ((*f)->region_persistence(0, 3), Persistence::kNone);
  EXPECT_EQ((*f)->region_persistence(0, 9), Persistence::kNone);
  f->reset();
  remove_shm_segments(cfg.cluster);
}

TEST(FileRegionChecks, AFileReplacedBeforeConnectIsRefusedByPeers) {
  MappedFile file("/dev/shm", kFileBytes);
  ASSERT_TRUE(file.ok());
  auto c =
      InProcCluster::make(2, 1, {{kScratch, 1 << 16}}, nullptr, [&](NodeId n, Fabric& f) -> Status {
        if (n != 0) return Status::ok();
        auto r = f.register_file_region(kFile, region_of(file, Persistence::kMemFs));
        if (!r) return r.status();
        // Another file now sits at the path (same size).
        unlink(file.path().c_str());
        const int fd = ::open(file.path().c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0) return io_error("recreate", errno);
        const int rc = ftruncate(fd, kFileBytes);
        close(fd);
        return rc == 0 ? Status::ok() : io_error("ftruncate", errno);
      });
  ASSERT_FALSE(c->error.is_ok());
  EXPECT_NE(c->error.message().find("is not the file the node registered"), std::string::npos)
      << c->error.to_string();
  EXPECT_NE(c->error.message().find(file.path()), std::string::npos) << c->error.to_string();
}

}  // namespace
}  // namespace drtmx::r2
