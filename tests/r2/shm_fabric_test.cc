// The shm fabric's one-sided ops, checks, ordering, delay and messaging,
// with nodes as threads of this process.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "base/resident.h"
#include "r2/common/clock.h"
#include "r2/shm/segment.h"
#include "r2/support/inproc_cluster.h"

namespace drtmx::r2 {
namespace {

using testing::InProcCluster;
using testing::poll_n;

constexpr RegionId kData = 1;
constexpr RegionId kScratch = 2;

WorkRequest wr(Verb v, RemoteAddr r, void* local, uint32_t len, uint64_t id) {
  WorkRequest w;
  w.verb = v;
  w.remote = r;
  w.local = local;
  w.len = len;
  w.wr_id = id;
  return w;
}

int count_segments(const std::string& cluster) {
  std::string prefix = "drtmx." + cluster + ".";
  int n = 0;
  DIR* d = opendir("/dev/shm");
  while (dirent* e = readdir(d)) n += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
  closedir(d);
  return n;
}

TEST(ShmFabric, ReadWriteCasFaaAcrossNodes) {
  auto c = InProcCluster::make(3, 1, {{kData, 1 << 16}, {kScratch, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  std::memcpy(c->base(2, kData) + 128, "hello, node two", 16);
  Endpoint* ep = c->f(0).endpoint(0);
  uint8_t* local = c->base(0, kScratch);

  ASSERT_EQ(ep->post(wr(Verb::kRead, {2, kData, 128}, local, 16, 7)), PostResult::kOk);
  std::memcpy(local + 64, "written by zero", 16);
  ASSERT_EQ(ep->post(wr(Verb::kWrite, {2, kData, 512}, local + 64, 16, 8)), PostResult::kOk);
  auto cas = wr(Verb::kCas, {1, kData, 8}, local + 256, 8, 9);
  cas.compare = 0;
  cas.operand = 42;
  ASSERT_EQ(ep->post(cas), PostResult::kOk);
  auto faa = wr(Verb::kFaa, {1, kData, 16}, local + 264, 8, 10);
  faa.operand = 5;
  ASSERT_EQ(ep->post(faa), PostResult::kOk);
  ep->doorbell(2);
  ep->doorbell(1);
  auto comps = poll_n(ep, 4);
  ASSERT_EQ(comps.size(), 4u);
  for (auto& cp : comps) EXPECT_EQ(cp.status, OpStatus::kOk);
  EXPECT_EQ(std::memcmp(local, "hello, node two", 16), 0);
  EXPECT_EQ(std::memcmp(c->base(2, kData) + 512, "written by zero", 16), 0);
  uint64_t word = 0;
  std::memcpy(&word, c->base(1, kData) + 8, 8);
  EXPECT_EQ(word, 42u);
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(local + 256), 0u);  // old value
  std::memcpy(&word, c->base(1, kData) + 16, 8);
  EXPECT_EQ(word, 5u);

  // A failing CAS returns the current value and changes nothing.
  cas.compare = 1;
  cas.operand = 99;
  ASSERT_EQ(ep->post(cas), PostResult::kOk);
  ep->doorbell(1);
  ASSERT_EQ(poll_n(ep, 1).size(), 1u);
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(local + 256), 42u);
  std::memcpy(&word, c->base(1, kData) + 8, 8);
  EXPECT_EQ(word, 42u);
}

TEST(ShmFabric, ReadsAreAsynchronousButKeepChannelOrder) {
  // READs copy at the next poll (as an RNIC's DMA lands later), yet ops of
  // one channel still take effect in post order: a READ posted before a
  // WRITE / CAS / FAA of the same word sees the old value, one posted after
  // sees the new, whether they share a doorbell or not.
  auto c = InProcCluster::make(2, 1, {{kData, 1 << 16}, {kScratch, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* ep = c->f(0).endpoint(0);
  uint8_t* local = c->base(0, kScratch);
  uint8_t* word = c->base(1, kData) + 64;
  std::memcpy(word, "old-word", 8);
  std::memcpy(local + 512, "new-word", 8);
  // One doorbell: READ, WRITE, READ.
  ASSERT_EQ(ep->post(wr(Verb::kRead, {1, kData, 64}, local, 8, 1)), PostResult::kOk);
  ASSERT_EQ(ep->post(wr(Verb::kWrite, {1, kData, 64}, local + 512, 8, 2)), PostResult::kOk);
  ASSERT_EQ(ep->post(wr(Verb::kRead, {1, kData, 64}, local + 8, 8, 3)), PostResult::kOk);
  ep->doorbell(1);
  auto comps = poll_n(ep, 3);
  ASSERT_EQ(comps.size(), 3u);
  EXPECT_EQ(comps[0].wr_id, 1u);
  EXPECT_EQ(comps[2].wr_id, 3u);
  EXPECT_EQ(std::memcmp(local, "old-word", 8), 0);
  EXPECT_EQ(std::memcmp(local + 8, "new-word", 8), 0);
  // Separate doorbells, nothing polled in between: READ then FAA.
  uint64_t v = 10;
  std::memcpy(word, &v, 8);
  ASSERT_EQ(ep->post(wr(Verb::kRead, {1, kData, 64}, local + 16, 8, 4)), PostResult::kOk);
  ep->doorbell(1);
  auto faa = wr(Verb::kFaa, {1, kData, 64}, local + 24, 8, 5);
  faa.operand = 5;
  ASSERT_EQ(ep->post(faa), PostResult::kOk);
  ep->doorbell(1);
  // A READ of another node's memory is not held back by this channel.
  ASSERT_EQ(ep->post(wr(Verb::kRead, {0, kData, 64}, local + 32, 8, 6)), PostResult::kOk);
  ep->doorbell(0);
  comps = poll_n(ep, 3);
  ASSERT_EQ(comps.size(), 3u);
  uint64_t seen = 0, old = 0;
  std::memcpy(&seen, local + 16, 8);
  std::memcpy(&old, local + 24, 8);
  EXPECT_EQ(seen, 10u);
  EXPECT_EQ(old, 10u);
  std::memcpy(&v, word, 8);
  EXPECT_EQ(v, 15u);
}

TEST(ShmFabric, BadRequestsCompleteWithErrorsAndTouchNothing) {
  auto c = InProcCluster::make(2, 1, {{kData, 4096}, {kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* ep = c->f(0).endpoint(0);
  uint8_t* local = c->base(0, kScratch);
  std::memset(local, 0xAB, 64);
  uint8_t stack_buf[16];
  struct Case {
    WorkRequest w;
    OpStatus want;
  } cases[] = {
      {wr(Verb::kWrite, {1, kData, 4090}, local, 16, 1), OpStatus::kOutOfBounds},
      {wr(Verb::kWrite, {1, kData, ~0ull - 4}, local, 16, 2), OpStatus::kOutOfBounds},
      {wr(Verb::kWrite, {1, 77, 0}, local, 16, 3), OpStatus::kBadRegion},
      {wr(Verb::kWrite, {9, kData, 0}, local, 16, 4), OpStatus::kBadNode},
      {wr(Verb::kCas, {1, kData, 4}, local, 8, 5), OpStatus::kMisaligned},
      {wr(Verb::kRead, {1, kData, 0}, stack_buf, 16, 6), OpStatus::kBadLocalBuffer},
      {wr(Verb::kRead, {1, kData, 0}, local, 0, 7), OpStatus::kBadLength},
  };
  for (auto& cs : cases) {
    cs.w.signaled = false;  // errors complete even when unsignaled
    ASSERT_EQ(ep->post(cs.w), PostResult::kOk);
    ep->doorbell(cs.w.remote.node);
  }
  auto comps = poll_n(ep, std::size(cases));
  ASSERT_EQ(comps.size(), std::size(cases));
  for (size_t i = 0; i < comps.size(); ++i) {
    EXPECT_EQ(comps[i].wr_id, cases[i].w.wr_id);
    EXPECT_EQ(comps[i].status, cases[i].want) << op_status_name(comps[i].status);
  }
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(c->base(1, kData)[i], 0) << "byte " << i;
  EXPECT_EQ(ep->outstanding(1), 0u);
}

TEST(ShmFabric, CompletionsAreFifoPerChannelAndUnsignaledNeverOverflow) {
  auto c = InProcCluster::make(2, 1, {{kData, 1 << 16}, {kScratch, 1 << 16}},
                               [](FabricConfig& f) { f.send_queue_depth = 16; });
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* ep = c->f(0).endpoint(0);
  uint8_t* local = c->base(0, kScratch);
  // Signaled: a full queue refuses until polled.
  for (uint64_t i = 0; i < 16; ++i) {
    ASSERT_EQ(ep->post(wr(Verb::kRead, {1, kData, i * 8}, local, 8, i)), PostResult::kOk);
  }
  EXPECT_EQ(ep->post(wr(Verb::kRead, {1, kData, 0}, local, 8, 99)), PostResult::kQueueFull);
  ep->doorbell(1);
  auto comps = poll_n(ep, 16);
  ASSERT_EQ(comps.size(), 16u);
  for (uint64_t i = 0; i < 16; ++i) EXPECT_EQ(comps[i].wr_id, i);
  EXPECT_EQ(ep->outstanding(1), 0u);
  // Thousands of unsignaled writes: forced signals keep the queue moving and
  // are never reported.
  uint64_t posted = 0;
  Completion buf[8];
  for (int i = 0; i < 5000; ++i) {
    auto w = wr(Verb::kWrite, {1, kData, 0}, local, 8, 1000 + i);
    w.signaled = false;
    while (ep->post(w) == PostResult::kQueueFull) {
      ep->doorbell(1);
      ASSERT_EQ(ep->poll(buf, 8), 0);  // forced completions are internal
    }
    ++posted;
  }
  ep->doorbell(1);
  EXPECT_EQ(posted, 5000u);
  EXPECT_LT(ep->outstanding(1), 16u);
}

TEST(ShmFabric, DelayHoldsCompletionsAndMessages) {
  constexpr uint64_t kDelay = 2'000'000;  // 2 ms
  auto c = InProcCluster::make(2, 1, {{kData, 4096}, {kScratch, 4096}},
                               [](FabricConfig& f) { f.delay_ns = kDelay; });
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* ep = c->f(0).endpoint(0);
  const uint64_t t0 = now_ns();
  ASSERT_EQ(ep->post(wr(Verb::kRead, {1, kData, 0}, c->base(0, kScratch), 8, 1)), PostResult::kOk);
  ep->doorbell(1);
  ASSERT_EQ(ep->send(1, 0, "ping", 4), SendResult::kOk);
  ep->flush_sends();
  auto comps = poll_n(ep, 1);
  ASSERT_EQ(comps.size(), 1u);
  EXPECT_GE(now_ns() - t0, kDelay);
  Endpoint* rx = c->f(1).endpoint(0);
  Message m[4];
  int got = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got == 0 && std::chrono::steady_clock::now() < deadline) got = rx->poll_messages(m, 4);
  ASSERT_EQ(got, 1);
  EXPECT_GE(now_ns() - t0, kDelay);
}

TEST(ShmFabric, MessagingDeliversInOrderAndReportsFullRings) {
  auto c = InProcCluster::make(2, 2, {{kData, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* tx = c->f(0).endpoint(1);
  Endpoint* rx = c->f(1).endpoint(0);
  EXPECT_EQ(tx->send(1, 0, "x", tx->mtu() + 1), SendResult::kTooLarge);
  EXPECT_EQ(tx->send(5, 0, "x", 1), SendResult::kBadPeer);
  EXPECT_EQ(tx->send(1, 9, "x", 1), SendResult::kBadPeer);
  // Fill the ring until it refuses, without the receiver polling.
  std::vector<uint8_t> payload(1000);
  uint32_t sent = 0;
  for (; sent < 100000; ++sent) {
    std::memcpy(payload.data(), &sent, 4);
    if (tx->send(1, 0, payload.data(), 1000) != SendResult::kOk) break;
  }
  tx->flush_sends();
  ASSERT_GT(sent, 10u);
  ASSERT_LT(sent, 100000u);
  // Drain; then the ring takes messages again. Order is FIFO.
  uint32_t next = 0;
  Message m[16];
  for (int rounds = 0; rounds < 100000 && next < sent; ++rounds) {
    int n = rx->poll_messages(m, 16);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(m[i].src_node, 0);
      EXPECT_EQ(m[i].src_thread, 1);
      ASSERT_EQ(m[i].len, 1000u);
      uint32_t v;
      std::memcpy(&v, m[i].data, 4);
      ASSERT_EQ(v, next);
      ++next;
    }
  }
  EXPECT_EQ(next, sent);
  rx->poll_messages(m, 16);  // releases the last batch
  EXPECT_EQ(tx->send(1, 0, payload.data(), 1000), SendResult::kOk);
}

TEST(ShmFabric, SegmentsAreRemovedOnExitAndStaleOnesCleanedAtStart) {
  std::string name;
  {
    auto c = InProcCluster::make(2, 1, {{kData, 4096}});
    ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
    name = c->cluster;
    EXPECT_EQ(count_segments(name), 4);  // 2 x (msg + region)
    c->fabrics.clear();
    EXPECT_EQ(count_segments(name), 0);
  }
  // A stale segment left by a crashed node 0 of the same cluster.
  FabricConfig cfg;
  cfg.cluster = name;
  cfg.num_nodes = 2;
  {
    std::string stale = shm::segment_name(name, 0, "r9");
    int fd = shm_open(stale.c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    close(fd);
  }
  EXPECT_EQ(count_segments(name), 1);
  {
    auto f = make_fabric(cfg);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    EXPECT_EQ(count_segments(name), 1);  // stale r9 gone, own msg created
  }
  EXPECT_EQ(count_segments(name), 0);
}

// A cluster of one node: nobody maps its regions, so they are private
// memory (huge pages where THP allows) with no name in /dev/shm — only
// the message segment is there — zeroed, and a node's ops reach them.
TEST(ShmFabric, AOneNodeClustersRegionsArePrivateZeroedAndServed) {
  auto c = InProcCluster::make(1, 1, {{kData, 3 << 20}, {kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  EXPECT_EQ(count_segments(c->cluster), 1);  // msg only
  uint8_t* base = c->base(0, kData);
  for (size_t at = 0; at < (3u << 20); at += 4096) ASSERT_EQ(base[at], 0) << at;
  std::memcpy(base + (2 << 20) + 64, "one node", 9);
  Endpoint* ep = c->fabrics[0]->endpoint(0);
  char* buf = reinterpret_cast<char*>(c->base(0, kScratch));  // registered
  WorkRequest wr;
  wr.verb = Verb::kRead;
  wr.remote = {0, kData, (2 << 20) + 64};
  wr.local = buf;
  wr.len = 9;
  OpStatus st = OpStatus::kOk;
  ASSERT_TRUE(ep->execute_local(wr, &st));
  ep->finish_local();
  EXPECT_EQ(st, OpStatus::kOk);
  EXPECT_STREQ(buf, "one node");
  // Two nodes: every region is a named segment again.
  auto two = InProcCluster::make(2, 1, {{kData, 4096}});
  ASSERT_TRUE(two->error.is_ok()) << two->error.to_string();
  EXPECT_EQ(count_segments(two->cluster), 4);
}

// Registered regions are in their owner's page tables from the start (as
// ibv_reg_mr pins them): its first write to a page is not a fault.
TEST(ShmFabric, RegisteredRegionsAreMappedInByTheirOwner) {
  if (!resident_supported()) GTEST_SKIP() << "kernel without MADV_POPULATE_WRITE";
  constexpr size_t kBytes = 1 << 20;
  for (int nodes : {1, 2}) {
    auto c = InProcCluster::make(nodes, 1, {{kData, kBytes}});
    ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
    const long mapped = mapped_pages(c->base(0, kData), kBytes);
    if (mapped < 0) GTEST_SKIP() << "/proc/self/pagemap unreadable";
    EXPECT_EQ(mapped, static_cast<long>(kBytes / 4096)) << nodes << " node(s)";
  }
}

TEST(ShmFabric, TransparentHugePageModeIsTheBracketedWord) {
  auto of = [](const std::string& text) {
    std::istringstream in(text);
    return shm::thp_mode(in);
  };
  EXPECT_EQ(of("always [madvise] never\n"), "madvise");
  EXPECT_EQ(of("[always] madvise never\n"), "always");
  EXPECT_EQ(of("always madvise [never]\n"), "never");
  EXPECT_EQ(of("always madvise never\n"), "");
  EXPECT_EQ(of("] [\n"), "");
  EXPECT_EQ(of(""), "");
}

TEST(ShmFabric, HugeOptionOfDevShmIsReadFromTheMountTable) {
  auto of = [](const std::string& text) {
    std::istringstream in(text);
    return shm::dev_shm_huge_option(in);
  };
  EXPECT_EQ(of("proc /proc proc rw 0 0\n"
               "tmpfs /dev/shm tmpfs rw,relatime,size=24684084k,huge=within_size 0 0\n"),
            "within_size");
  EXPECT_EQ(of("tmpfs /dev/shm tmpfs rw,huge=always,relatime 0 0\n"), "always");
  // No huge= option: the kernel's default for a tmpfs mount, never.
  EXPECT_EQ(of("tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"), "never");
  // Mounted over: the last mount is the one in effect.
  EXPECT_EQ(of("tmpfs /dev/shm tmpfs rw 0 0\ntmpfs /dev/shm tmpfs rw,huge=within_size 0 0\n"),
            "within_size");
  EXPECT_EQ(of("tmpfs /dev/shm tmpfs rw,huge=always 0 0\ntmpfs /dev/shm tmpfs rw 0 0\n"), "never");
  // Other mounts' options are not /dev/shm's; no /dev/shm at all is "".
  EXPECT_EQ(of("tmpfs /run tmpfs rw,huge=always 0 0\n"), "");
  EXPECT_EQ(of("tmpfs /dev/shm2 tmpfs rw,huge=always 0 0\ngarbage\n\n"), "");
  EXPECT_EQ(of(""), "");
}

TEST(ShmFabric, SegmentsOfKilledLaunchersAreSweptAndLiveOnesKept) {
  // A launcher name of this test only, so concurrent runs of the real
  // launchers are never touched.
  const std::string launcher = "sweeptest" + std::to_string(getpid());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);  // now a pid nobody has
  const std::string dead = launcher + "-" + std::to_string(child);
  const std::string live = launcher + "-" + std::to_string(getpid());
  const std::string named = launcher + "-mycluster";  // as --cluster names it
  auto dead0 = shm::Segment::create(shm::segment_name(dead, 0, "r1"), 1 << 20);
  auto dead1 = shm::Segment::create(shm::segment_name(dead, 1, "msg"), 1 << 16);
  auto alive = shm::Segment::create(shm::segment_name(live, 0, "r1"), 1 << 16);
  auto custom = shm::Segment::create(shm::segment_name(named, 0, "r1"), 1 << 16);
  ASSERT_TRUE(dead0.is_ok() && dead1.is_ok() && alive.is_ok() && custom.is_ok());
  const shm::OrphanSweep r = shm::remove_orphan_segments(launcher);
  EXPECT_EQ(r.segments, 2);
  EXPECT_GE(r.bytes, uint64_t{1} << 20);  // the dead cluster's pages
  ASSERT_EQ(r.clusters.size(), 1u);
  EXPECT_EQ(r.clusters[0], dead);
  EXPECT_NE(r.summary().find("removed 2 shm segments"), std::string::npos) << r.summary();
  EXPECT_NE(r.summary().find(dead), std::string::npos) << r.summary();
  auto exists = [](const std::string& name) {
    return access(("/dev/shm" + name).c_str(), F_OK) == 0;
  };
  EXPECT_FALSE(exists(shm::segment_name(dead, 0, "r1")));
  EXPECT_FALSE(exists(shm::segment_name(dead, 1, "msg")));
  EXPECT_TRUE(exists(shm::segment_name(live, 0, "r1")));
  EXPECT_TRUE(exists(shm::segment_name(named, 0, "r1")));
  // The removed segment's mapping stays usable by whoever holds it.
  dead0->data()[0] = 7;
  EXPECT_EQ(dead0->data()[0], 7);
  const shm::OrphanSweep again = shm::remove_orphan_segments(launcher);
  EXPECT_EQ(again.segments, 0);
  EXPECT_EQ(again.summary(), "");
}

TEST(ShmFabric, RegistrationErrors) {
  FabricConfig cfg;
  cfg.cluster = testing::unique_cluster("reg");
  auto f = make_fabric(cfg);
  ASSERT_TRUE(f.is_ok());
  EXPECT_TRUE((*f)->register_region(1, 4096).is_ok());
  auto dup = (*f)->register_region(1, 4096);
  EXPECT_EQ(dup.status().code(), Code::kAlreadyExists);
  EXPECT_EQ((*f)->register_region(2, 0).status().code(), Code::kInvalidArgument);
}

TEST(FabricConfig, BadValuesAreRefusedWithTheOptionName) {
  FabricConfig c;
  c.backend = "tcp";
  EXPECT_NE(c.validate().message().find("--fabric"), std::string::npos);
  c = FabricConfig();
  c.node = 3;
  c.num_nodes = 2;
  EXPECT_NE(c.validate().message().find("--node"), std::string::npos);
  c = FabricConfig();
  c.cluster = "a/b";
  EXPECT_NE(c.validate().message().find("--cluster"), std::string::npos);
  c = FabricConfig();
  c.threads = 0;
  EXPECT_NE(c.validate().message().find("--threads"), std::string::npos);
  c = FabricConfig();
  c.backend = "verbs";
  c.delay_ns = 10;
  EXPECT_NE(c.validate().message().find("--fabric-delay-ns"), std::string::npos);
  for (uint32_t bad : {0u, 19u, 600001u}) {
    c = FabricConfig();
    c.lease_ms = bad;
    EXPECT_NE(
        c.validate().message().find("--lease-ms=" + std::to_string(bad) + ": expected 20..600000"),
        std::string::npos)
        << c.validate().message();
  }
  for (uint32_t ok : {20u, 1000u, 600000u}) {
    c = FabricConfig();
    c.lease_ms = ok;
    EXPECT_TRUE(c.validate().is_ok()) << ok;
  }
  EXPECT_TRUE(FabricConfig().validate().is_ok());
  // Lease and mode are cluster-wide settings: in the fingerprint.
  EXPECT_EQ(FabricConfig().fingerprint().at("lease_ms"), "1000");
  EXPECT_EQ(FabricConfig().fingerprint().at("survive_failures"), "no");
}

}  // namespace
}  // namespace drtmx::r2
