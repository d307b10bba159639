// RDPMA over R2: pools registered as persistent fabric regions, written by
// a remote coroutine with every PWrite method — H9 (one round trip), the
// strawman (two) and two-sided (the owner fences) — and found durable in
// the owner's pool and its file; whole-payload writes are aligned and
// padded; forged pointers, bytes outside a payload, volatile or missing
// regions and malformed two-sided requests are refused and touch nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "r2/common/clock.h"
#include "r2/shm/shm_endpoint.h"
#include "r2/support/inproc_cluster.h"
#include "r2/support/mapped_file.h"
#include "r2/support/worker_cluster.h"
#include "rdpma/client.h"
#include "rdpma/persist_op.h"
#include "rdpma/pmem_service.h"
#include "rdpma/pmem_wire.h"
#include "rdpma/pool.h"

namespace drtmx::rdpma {
namespace {

namespace fs = std::filesystem;
using r2::Co;
using r2::NodeId;
using r2::Persistence;
using r2::testing::InProcCluster;
using r2::testing::run_workers;

constexpr r2::RegionId kScratch = 2;  // volatile: client scratch, and a volatile target
constexpr r2::RegionId kPool = 7;     // the pool's data area
constexpr uint64_t kPoolBytes = 1 << 20;

struct PoolDir {
  explicit PoolDir(const std::string& parent) {
    static int counter = 0;
    path = fs::path(parent) /
           ("rdpma_remote_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~PoolDir() { fs::remove_all(path); }
  fs::path path;
};

// Allocations every node makes in the same order (so every node knows the
// others' FatPtrs).
struct Layout {
  FatPtr small, line, big, page;
};

// A cluster of `nodes` nodes, each with a pool in `dir` registered as
// kPool, a volatile kScratch region, and a pool directory.
struct PmemCluster {
  PmemCluster(uint16_t nodes, const std::string& dir, uint64_t delay_ns = 0) : where(dir) {
    for (NodeId n = 0; n < nodes; ++n) {
      PoolSpec spec;
      spec.path = (where.path / ("n" + std::to_string(n) + ".pool")).string();
      spec.bytes = kPoolBytes;
      spec.id = {7, n, kPool, 1};
      auto p = PmemPool::open(spec);
      if (!p) {
        error = p.status();
        return;
      }
      Layout l;
      l.small = *(*p)->alloc(16);
      l.line = *(*p)->alloc(64);
      l.big = *(*p)->alloc(300);
      l.page = *(*p)->alloc(4096);
      layout = l;
      pools.push_back(std::move(p.value()));
      dirs.emplace_back();
      error = dirs.back().add(kPool, pools.back().get());
      if (!error.is_ok()) return;
    }
    cluster = InProcCluster::make(
        nodes, 1, {{kScratch, 1 << 16}}, [&](r2::FabricConfig& c) { c.delay_ns = delay_ns; },
        [&](NodeId n, r2::Fabric& f) {
          return f.register_file_region(kPool, pools[n]->data_region()).status();
        });
    if (!cluster->error.is_ok()) error = cluster->error;
  }
  ~PmemCluster() { cluster.reset(); }  // the fabric goes before the pools

  RemotePtr at(NodeId n, const FatPtr& p) const { return {n, kPool, p}; }
  uint8_t* bytes(NodeId n, const FatPtr& p) { return pools[n]->mapping() + p.offset; }
  std::span<uint8_t> scratch(NodeId n) { return {cluster->base(n, kScratch), size_t{1} << 16}; }
  // shm's count of flushed lines and fences (what H9 costs there); other
  // fabrics make the bytes durable their own way (r2/ucx/README.md), and
  // the tests check only the bytes on them.
  bool shm() const { return cluster->f(0).info().backend == "shm"; }
  const r2::shm::ShmEndpoint::PersistStats& persist_stats(NodeId n) {
    static const r2::shm::ShmEndpoint::PersistStats kNone{};
    auto* ep = dynamic_cast<r2::shm::ShmEndpoint*>(cluster->f(n).endpoint(0));
    return ep != nullptr ? ep->persist_stats() : kNone;
  }
  // Runs `body` as a coroutine of node `client`; every node serves RDPMA.
  void run(NodeId client, const std::function<void(Co&, Client&)>& body) {
    r2::WorkerConfig wc;
    wc.rpc_timeout_ms = 20000;
    auto r = run_workers(*cluster, wc, [&](r2::Worker& w) {
      ASSERT_TRUE(register_pmem_handler(w, dirs[w.node()]).is_ok());
      if (w.node() != client) return;
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     auto c = Client::make(co, cluster->f(client), scratch(client));
                     ASSERT_TRUE(c.is_ok()) << c.status().to_string();
                     body(co, *c);
                   }).is_ok());
    });
    EXPECT_FALSE(r.timed_out);
  }

  PoolDir where;
  Status error;
  Layout layout;
  std::vector<std::unique_ptr<PmemPool>> pools;
  std::vector<PoolDirectory> dirs;
  std::unique_ptr<InProcCluster> cluster;
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

const PersistMethod kMethods[] = {PersistMethod::kH9, PersistMethod::kStrawman,
                                  PersistMethod::kTwoSided};

class PWrite : public ::testing::TestWithParam<Persistence> {
 protected:
  std::string dir() const {
    return GetParam() == Persistence::kMsync ? r2::testing::disk_dir() : std::string("/dev/shm");
  }
};

// Every method lands the bytes in the owner's pool and its file, and
// returns only once they are durable — for an msync-mode pool: every page
// of the file is clean (written back) when pwrite returns.
TEST_P(PWrite, EveryMethodLandsDurablyInTheOwnersPoolAndFile) {
  if (dir().empty()) GTEST_SKIP() << "no disk file system for an msync-mode pool";
  PmemCluster pc(2, dir());
  ASSERT_TRUE(pc.error.is_ok()) << pc.error.to_string();
  ASSERT_EQ(pc.pools[0]->persistence_mode(), GetParam());
  const Layout& l = pc.layout;
  std::vector<std::string> dirty_after;
  uint8_t seed = 1;
  pc.run(1, [&](Co& co, Client& c) {
    for (PersistMethod m : kMethods) {
      for (const FatPtr& p : {l.small, l.line, l.big, l.page}) {
        const auto data = pattern(p.size, seed++);
        const Status s = c.pwrite(pc.at(0, p), 0, data.data(), p.size, m);
        EXPECT_TRUE(s.is_ok()) << method_name(m) << ": " << s.to_string();
        // Durable now: visible in the owner's pool, and (msync) written back.
        std::vector<uint8_t> got(p.size);
        ASSERT_TRUE(pc.pools[0]->read(p, 0, got.data(), p.size).is_ok());
        EXPECT_EQ(got, data) << method_name(m) << " " << p.size;
        if (GetParam() == Persistence::kMsync) {
          const long kb = r2::testing::dirty_kb_of_file(pc.pools[0]->path());
          if (kb != 0)
            dirty_after.push_back(std::string(method_name(m)) + ": " + std::to_string(kb));
        }
      }
      // A partial PWrite in the middle of a payload.
      const auto part = pattern(10, 99);
      EXPECT_TRUE(c.pwrite(pc.at(0, l.big), 100, part.data(), 10, m).is_ok());
      EXPECT_EQ(std::memcmp(pc.bytes(0, l.big) + 100, part.data(), 10), 0);
    }
    (void)co;
  });
  EXPECT_TRUE(dirty_after.empty())
      << "dirty kB of the pool file after pwrite returned: " << dirty_after.front();
  // And the file itself has them (a separate read of the file).
  std::ifstream in(pc.pools[0]->path(), std::ios::binary);
  in.seekg(static_cast<std::streamoff>(l.page.offset));
  std::vector<char> got(4096);
  in.read(got.data(), 4096);
  std::vector<uint8_t> want(4096);
  ASSERT_TRUE(pc.pools[0]->read(l.page, 0, want.data(), 4096).is_ok());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), 4096), 0);
}

INSTANTIATE_TEST_SUITE_P(Modes, PWrite, ::testing::Values(Persistence::kMemFs, Persistence::kMsync),
                         [](const auto& i) { return std::string(r2::persistence_name(i.param)); });

// H9 is one round trip (one completion, one fence), the strawman two; with
// a fabric delay D, the strawman cannot finish before 2D.
TEST(RemotePmem, H9TakesOneRoundTripTheStrawmanTwo) {
  constexpr uint64_t kDelay = 2'000'000;  // 2 ms
  if (r2::testing::test_fabric() != "shm") GTEST_SKIP() << "--fabric-delay-ns is shm's";
  PmemCluster pc(2, "/dev/shm", kDelay);
  ASSERT_TRUE(pc.error.is_ok()) << pc.error.to_string();
  const auto data = pattern(64, 3);
  pc.run(1, [&](Co& co, Client& c) {
    const auto& st = pc.persist_stats(1);
    const auto& ws = co.worker().stats();
    uint64_t comps = ws.completions, fences = st.fences, t0 = r2::now_ns();
    ASSERT_TRUE(c.pwrite(pc.at(0, pc.layout.line), 0, data.data(), 64, PersistMethod::kH9).is_ok());
    const uint64_t h9_ns = r2::now_ns() - t0;
    EXPECT_EQ(ws.completions - comps, 1u);  // the READ's; the WRITE was unsignaled
    if (pc.shm()) {
      EXPECT_EQ(st.fences - fences, 1u);
    }
    EXPECT_GE(h9_ns, kDelay);
    comps = ws.completions;
    fences = st.fences;
    t0 = r2::now_ns();
    ASSERT_TRUE(
        c.pwrite(pc.at(0, pc.layout.line), 0, data.data(), 64, PersistMethod::kStrawman).is_ok());
    const uint64_t straw_ns = r2::now_ns() - t0;
    EXPECT_EQ(ws.completions - comps, 2u);
    if (pc.shm()) {
      EXPECT_EQ(st.fences - fences, 1u);
    }
    EXPECT_GE(straw_ns, 2 * kDelay);
  });
}

// Whole payloads go out as their padded span (one full line for 16 bytes):
// the padding is zeroed at the target and only whole lines are flushed; a
// partial or raw write sends just its bytes.
TEST(RemotePmem, WholePayloadWritesAreAlignedAndPadded) {
  PmemCluster pc(2, "/dev/shm");
  ASSERT_TRUE(pc.error.is_ok()) << pc.error.to_string();
  const Layout& l = pc.layout;
  std::memset(pc.bytes(0, l.small), 0xee, 64);
  std::memset(pc.bytes(0, l.big), 0xee, 512);
  const auto d16 = pattern(16, 5), d300 = pattern(300, 6), d64 = pattern(64, 7);
  pc.run(1, [&](Co&, Client& c) {
    const auto& st = pc.persist_stats(1);
    uint64_t lines = st.flushed_lines;
    ASSERT_TRUE(c.pwrite(pc.at(0, l.small), 0, d16.data(), 16, PersistMethod::kH9).is_ok());
    if (pc.shm()) {
      EXPECT_EQ(st.flushed_lines - lines, 1u);
    }
    ASSERT_TRUE(c.pwrite(pc.at(0, l.big), 0, d300.data(), 300, PersistMethod::kH9).is_ok());
    lines = st.flushed_lines;
    ASSERT_TRUE(c.pwrite(pc.at(0, l.big), 3, d16.data(), 16, PersistMethod::kH9).is_ok());
    if (pc.shm()) {
      EXPECT_EQ(st.flushed_lines - lines, 1u);
    }
    // Raw, 8 bytes into a line: 64 bytes straddle two lines.
    lines = st.flushed_lines;
    const r2::RemoteAddr raw{0, kPool, PmemPool::region_offset(l.page) + 8};
    ASSERT_TRUE(c.pwrite_raw(raw, d64.data(), 64, PersistMethod::kH9).is_ok());
    if (pc.shm()) {
      EXPECT_EQ(st.flushed_lines - lines, 2u);
    }
    ASSERT_TRUE(c.pwrite_raw(raw, d64.data(), 64, PersistMethod::kTwoSided).is_ok());
  });
  EXPECT_EQ(std::memcmp(pc.bytes(0, l.small), d16.data(), 16), 0);
  EXPECT_EQ(std::vector<uint8_t>(pc.bytes(0, l.small) + 16, pc.bytes(0, l.small) + 64),
            std::vector<uint8_t>(48, 0));
  EXPECT_EQ(std::memcmp(pc.bytes(0, l.big) + 3, d16.data(), 16), 0);
  EXPECT_EQ(std::vector<uint8_t>(pc.bytes(0, l.big) + 300, pc.bytes(0, l.big) + 512),
            std::vector<uint8_t>(212, 0));
  EXPECT_EQ(std::memcmp(pc.bytes(0, l.page) + 8, d64.data(), 64), 0);
}

TEST(RemotePmem, ReadAndWriteByBothPrimitives) {
  PmemCluster pc(2, "/dev/shm");
  ASSERT_TRUE(pc.error.is_ok()) << pc.error.to_string();
  const Layout& l = pc.layout;
  const auto a = pattern(300, 11), b = pattern(300, 12);
  pc.run(1, [&](Co&, Client& c) {
    std::vector<uint8_t> got(300);  // not registered: staged
    ASSERT_TRUE(c.write(pc.at(0, l.big), 0, a.data(), 300, Primitive::kOneSided).is_ok());
    ASSERT_TRUE(c.read(pc.at(0, l.big), 0, got.data(), 300, Primitive::kTwoSided).is_ok());
    EXPECT_EQ(got, a);
    ASSERT_TRUE(c.write(pc.at(0, l.big), 0, b.data(), 300, Primitive::kTwoSided).is_ok());
    ASSERT_TRUE(c.read(pc.at(0, l.big), 0, got.data(), 300, Primitive::kOneSided).is_ok());
    EXPECT_EQ(got, b);
    // Into registered memory: read directly; a slice of the payload.
    uint8_t* reg = pc.scratch(1).data() + 8192;
    ASSERT_TRUE(c.read(pc.at(0, l.big), 290, reg, 10, Primitive::kOneSided).is_ok());
    EXPECT_EQ(std::memcmp(reg, b.data() + 290, 10), 0);
    // The client's own node works as a target too.
    ASSERT_TRUE(c.pwrite(pc.at(1, l.small), 0, a.data(), 16, PersistMethod::kH9).is_ok());
    ASSERT_TRUE(c.pwrite(pc.at(1, l.small), 0, a.data(), 16, PersistMethod::kTwoSided).is_ok());
  });
  EXPECT_EQ(std::memcmp(pc.bytes(1, l.small), a.data(), 16), 0);
}

// Nothing is written when a request is refused.
TEST(RemotePmem, BadRequestsAreRefusedAndTouchNothing) {
  PmemCluster pc(2, "/dev/shm");
  ASSERT_TRUE(pc.error.is_ok()) << pc.error.to_string();
  const Layout& l = pc.layout;
  const std::vector<uint8_t> before(pc.bytes(0, l.small), pc.bytes(0, l.small) + 8192);
  const auto d = pattern(4096, 1);
  pc.run(1, [&](Co&, Client& c) {
    auto expect = [&](const Status& s, Code code, const std::string& needle) {
      EXPECT_EQ(s.code(), code) << s.to_string();
      EXPECT_NE(s.message().find(needle), std::string::npos) << s.to_string();
    };
    for (PersistMethod m : kMethods) {
      SCOPED_TRACE(method_name(m));
      // Forged pointers: inside an allocation but not one; a wrong span;
      // the header; a null pointer.
      FatPtr f = l.big;
      f.offset += 64;
      expect(c.pwrite(pc.at(0, f), 0, d.data(), 8, m), Code::kInvalidArgument, "forged");
      f = l.small;
      f.span = 128;
      expect(c.pwrite(pc.at(0, f), 0, d.data(), 8, m), Code::kInvalidArgument, "forged");
      expect(c.pwrite(pc.at(0, FatPtr{0, 16, 64}), 0, d.data(), 8, m), Code::kInvalidArgument,
             "forged");
      expect(c.pwrite(pc.at(0, FatPtr{}), 0, d.data(), 8, m), Code::kInvalidArgument, "forged");
      // Outside the payload (and an overflowing offset).
      expect(c.pwrite(pc.at(0, l.small), 10, d.data(), 7, m), Code::kOutOfRange, "[10, 17)");
      expect(c.pwrite(pc.at(0, l.small), ~uint64_t{0}, d.data(), 2, m), Code::kOutOfRange,
             "allocation");
      expect(c.pwrite(pc.at(0, l.small), 0, d.data(), 0, m), Code::kInvalidArgument, "0 bytes");
      // A volatile region, a missing region, a missing node.
      expect(c.pwrite({0, kScratch, l.small}, 0, d.data(), 16, m), Code::kInvalidArgument,
             "volatile");
      expect(c.pwrite({0, 9, l.small}, 0, d.data(), 16, m), Code::kNotFound, "no region 9");
      expect(c.pwrite({5, kPool, l.small}, 0, d.data(), 16, m), Code::kNotFound, "node 5");
      // Well shaped but beyond the pool's region.
      const FatPtr beyond{kPoolBytes + 4096, 16, 64};
      const Status s = c.pwrite(pc.at(0, beyond), 0, d.data(), 16, m);
      EXPECT_FALSE(s.is_ok());
      EXPECT_EQ(s.code(),
                m == PersistMethod::kTwoSided ? Code::kInvalidArgument : Code::kOutOfRange)
          << s.to_string();
    }
    // Two-sided only: the owner knows its watermark — a well-shaped pointer
    // inside the region but never allocated is refused there.
    const FatPtr unallocated{kPoolBytes - 4096, 16, 64};
    expect(c.pwrite(pc.at(0, unallocated), 0, d.data(), 16, PersistMethod::kTwoSided),
           Code::kInvalidArgument, "not an allocation");
    expect(c.pwrite_raw({0, kPool, kPoolBytes - 8192}, d.data(), 16, PersistMethod::kTwoSided),
           Code::kOutOfRange, "outside its allocated data");
    expect(c.pwrite_raw({0, kPool, kPoolBytes - 8}, d.data(), 16, PersistMethod::kH9),
           Code::kOutOfRange, "outside the region");
    expect(c.pwrite_raw({0, kScratch, 0}, d.data(), 16, PersistMethod::kH9), Code::kInvalidArgument,
           "volatile");
    // More than the staging memory holds: a client with 1 KiB of scratch.
  });
  pc.run(1, [&](Co& co, Client&) {
    auto small = Client::make(co, pc.cluster->f(1), pc.scratch(1).subspan(0, 1024));
    ASSERT_TRUE(small.is_ok());
    const Status s = small->pwrite(pc.at(0, l.page), 0, d.data(), 4096, PersistMethod::kH9);
    EXPECT_EQ(s.code(), Code::kOutOfRange) << s.to_string();
    EXPECT_NE(s.message().find("staging"), std::string::npos) << s.to_string();
    EXPECT_EQ(small->max_one_sided_bytes(), 1024u - 64u);
  });
  EXPECT_EQ(std::memcmp(pc.bytes(0, l.small), before.data(), before.size()), 0);
}

// Malformed two-sided requests — arbitrary bytes — get an error reply with
// a code, never a crash, and change nothing; through the RPC as well.
TEST(RemotePmem, MalformedTwoSidedRequestsGetErrors) {
  PmemCluster pc(2, "/dev/shm");
  ASSERT_TRUE(pc.error.is_ok()) << pc.error.to_string();
  const Layout& l = pc.layout;
  const std::vector<uint8_t> before(pc.bytes(0, l.small),
                                    pc.bytes(0, l.small) + (l.page.offset + 4096 - l.small.offset));
  auto req = [&](PmemRequest h, size_t data_bytes) {
    std::vector<uint8_t> v(sizeof h + data_bytes, 0x77);
    std::memcpy(v.data(), &h, sizeof h);
    return v;
  };
  PmemRequest ok;
  ok.op = static_cast<uint8_t>(PmemOp::kPWrite);
  ok.region = kPool;
  ok.len = 16;
  ok.offset = l.small.offset;
  ok.size = l.small.size;
  ok.span = l.small.span;
  struct Case {
    std::vector<uint8_t> bytes;
    Code code;
    std::string needle;
  };
  std::vector<Case> cases;
  cases.push_back({{1, 2, 3}, Code::kInvalidArgument, "header alone"});
  PmemRequest h = ok;
  h.op = 9;
  cases.push_back({req(h, 16), Code::kInvalidArgument, "unknown op 9"});
  h = ok;
  h.addressing = 5;
  cases.push_back({req(h, 16), Code::kInvalidArgument, "unknown addressing 5"});
  cases.push_back({req(ok, 15), Code::kInvalidArgument, "15 came"});
  h = ok;
  h.len = 0;
  cases.push_back({req(h, 0), Code::kInvalidArgument, "length 0"});
  h = ok;
  h.len = kMaxPmemBytes + 1;
  cases.push_back({req(h, 0), Code::kInvalidArgument, "is not 1.."});
  h = ok;
  h.region = 3;
  cases.push_back({req(h, 16), Code::kNotFound, "no persistent pool as region 3"});
  h = ok;
  h.offset += 8;  // misaligned for its size
  cases.push_back({req(h, 16), Code::kInvalidArgument, "not an allocation"});
  h = ok;
  h.offset = 64;  // the header
  cases.push_back({req(h, 16), Code::kInvalidArgument, "not an allocation"});
  h = ok;
  h.offset = kPoolBytes - 4096;  // well shaped, never allocated
  cases.push_back({req(h, 16), Code::kInvalidArgument, "not an allocation"});
  h = ok;
  h.span = 128;
  cases.push_back({req(h, 16), Code::kInvalidArgument, "not an allocation"});
  h = ok;
  h.at = 1;
  cases.push_back({req(h, 16), Code::kOutOfRange, "of an allocation of 16 bytes"});
  h = ok;
  h.addressing = static_cast<uint8_t>(Addressing::kRaw);
  h.op = static_cast<uint8_t>(PmemOp::kRead);
  cases.push_back({req(h, 0), Code::kInvalidArgument, "PWrite only"});
  std::vector<uint8_t> reply;
  for (const Case& k : cases) {
    serve_pmem_request(pc.dirs[0], k.bytes, 0, &reply);
    std::span<const uint8_t> data;
    const Status s = decode_reply(reply, &data);
    EXPECT_EQ(s.code(), k.code) << k.needle << ": " << s.to_string();
    EXPECT_NE(s.message().find(k.needle), std::string::npos) << s.to_string();
  }
  // Random bytes (a fixed seed): always an error, never a crash.
  std::mt19937_64 rng(14);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> junk(rng() % 80);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    if (junk.size() >= 1) junk[0] = static_cast<uint8_t>(1 + rng() % 3);  // a valid op, often
    serve_pmem_request(pc.dirs[0], junk, 0, &reply);
    std::span<const uint8_t> data;
    const Status s = decode_reply(reply, &data);
    if (s.is_ok()) {
      // Only a read of a real allocation can succeed; random bytes do not
      // name one (checked by the pool against its watermark).
      ADD_FAILURE() << "random request of " << junk.size() << " bytes accepted";
    }
  }
  // The same through the RPC layer from a remote coroutine.
  pc.run(1, [&](Co& co, Client&) {
    for (const Case& k : cases) {
      r2::RpcBuffer rb;
      ASSERT_TRUE(co.call(r2::Target{0, 0}, kRpcPmem, k.bytes.data(),
                          static_cast<uint32_t>(k.bytes.size()), rb)
                      .is_ok());
      std::span<const uint8_t> data;
      EXPECT_EQ(decode_reply(rb, &data).code(), k.code) << k.needle;
    }
  });
  EXPECT_EQ(std::memcmp(pc.bytes(0, l.small), before.data(), before.size()), 0);
}

TEST(RemotePmem, AClientNeedsRegisteredScratch) {
  PmemCluster pc(2, "/dev/shm");
  ASSERT_TRUE(pc.error.is_ok()) << pc.error.to_string();
  pc.run(1, [&](Co& co, Client&) {
    std::vector<uint8_t> heap(4096);
    auto a = Client::make(co, pc.cluster->f(1), heap);
    ASSERT_FALSE(a.is_ok());
    EXPECT_NE(a.status().message().find("not registered"), std::string::npos);
    auto b = Client::make(co, pc.cluster->f(1), pc.scratch(1).subspan(0, 100));
    ASSERT_FALSE(b.is_ok());
    EXPECT_NE(b.status().message().find("at least 128"), std::string::npos);
  });
}

// The building block for the engine's log: H9 inside the caller's own
// batch, among its other ops; a failing unsignaled WRITE still reports.
TEST(RemotePmem, APersistentWriteInTheCallersBatch) {
  PmemCluster pc(2, "/dev/shm");
  ASSERT_TRUE(pc.error.is_ok()) << pc.error.to_string();
  const Layout& l = pc.layout;
  pc.run(1, [&](Co& co, Client&) {
    uint8_t* local = pc.scratch(1).data() + 16384;
    auto* flush = reinterpret_cast<uint64_t*>(local + 4096);
    std::memcpy(local, "log entry 1 -- durable", 23);
    const auto& st = pc.persist_stats(1);
    const uint64_t fences = st.fences;
    r2::OpBatch b;
    b.read({0, kScratch, 0}, local + 8192, 64);  // the caller's own ops
    add_persistent_write(b, RemotePtr{0, kPool, l.line}.addr(), local, 64, flush);
    ASSERT_EQ(b.size(), 3u);
    EXPECT_EQ(co.run(b), r2::OpStatus::kOk);
    if (pc.shm()) {
      EXPECT_EQ(st.fences - fences, 1u);
    }
    EXPECT_EQ(std::memcmp(flush, "log entr", 8), 0);  // the READ read the written bytes
    // A WRITE out of bounds, unsignaled: its error shows in the batch.
    b.clear();
    add_persistent_write(b, {0, kPool, kPoolBytes}, local, 64, flush);
    EXPECT_EQ(co.run(b), r2::OpStatus::kOutOfBounds);
    EXPECT_EQ(b.status(0), r2::OpStatus::kOutOfBounds);
  });
  EXPECT_EQ(std::memcmp(pc.bytes(0, l.line), "log entry 1 -- durable", 23), 0);
}

}  // namespace
}  // namespace drtmx::rdpma
