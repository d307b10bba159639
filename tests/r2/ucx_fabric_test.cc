// The ucx fabric's contract (r2/fabric.h) with nodes as threads of this
// process, on UCX's own choice of transports (shared memory, cma) and on
// TCP (UCX_TLS=tcp): one-sided ops, checks, per-channel order, unsignaled
// ops, messaging, the WRITE-source reuse hazard, fencing, growable and
// persistent regions, and the transports reported.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <ostream>
#include <thread>

#include "r2/support/inproc_cluster.h"
#include "r2/support/mapped_file.h"
#include "r2/support/ucx_pump.h"
#include "r2/ucx/ucx_endpoint.h"

namespace drtmx::r2 {
namespace {

using testing::InProcCluster;
using testing::poll_n;
using testing::Pump;

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

// UCX's transports ("" = its own choice, "tcp") and whether channels keep
// strict order (FabricConfig::ucx_strict_order).
struct Mode {
  std::string tls;
  bool strict = false;
};
void PrintTo(const Mode& m, std::ostream* os) {
  *os << "UCX_TLS=" << (m.tls.empty() ? "(unset)" : m.tls) << (m.strict ? " strict" : "");
}

class UcxFabric : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override { testing::use_ucx_transports(GetParam().tls); }
  void TearDown() override { testing::use_ucx_transports(""); }

  std::unique_ptr<InProcCluster> make(
      uint16_t nodes, uint16_t threads, std::vector<std::pair<RegionId, size_t>> regions,
      const std::function<void(FabricConfig&)>& tweak = nullptr,
      const std::function<Status(NodeId, Fabric&)>& more = nullptr,
      const std::vector<std::pair<RegionId, size_t>>& growable = {}) {
    return InProcCluster::make(
        nodes, threads, std::move(regions),
        [&](FabricConfig& f) {
          f.backend = "ucx";
          f.ucx_strict_order = GetParam().strict;
          if (tweak) tweak(f);
        },
        more, growable);
  }
  // Pumps every endpoint of nodes other than `except`.
  static std::unique_ptr<Pump> pump_others(InProcCluster& c, NodeId except) {
    std::vector<Endpoint*> eps;
    for (NodeId n = 0; n < c.fabrics.size(); ++n) {
      if (n == except) continue;
      for (ThreadId t = 0; t < c.f(n).info().threads; ++t) eps.push_back(c.f(n).endpoint(t));
    }
    return std::make_unique<Pump>(eps);
  }
  static ucx::UcxEndpoint* ucx_ep(Fabric& f, ThreadId t) {
    return static_cast<ucx::UcxEndpoint*>(f.endpoint(t));
  }
};

TEST_P(UcxFabric, ReadWriteCasFaaAcrossNodes) {
  auto c = make(3, 1, {{kData, 1 << 16}, {kScratch, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  EXPECT_EQ(c->f(0).info().backend, "ucx");
  auto pump = pump_others(*c, 0);
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
  for (auto& cp : comps) EXPECT_EQ(cp.status, OpStatus::kOk) << op_status_name(cp.status);
  EXPECT_EQ(std::memcmp(local, "hello, node two", 16), 0);
  // The WRITE completed before the READ behind it on the channel... here
  // it was last on its channel: read it back through the fabric.
  ASSERT_EQ(ep->post(wr(Verb::kRead, {2, kData, 512}, local + 128, 16, 11)), PostResult::kOk);
  ep->doorbell(2);
  ASSERT_EQ(poll_n(ep, 1).size(), 1u);
  EXPECT_EQ(std::memcmp(local + 128, "written by zero", 16), 0);
  EXPECT_EQ(std::memcmp(c->base(2, kData) + 512, "written by zero", 16), 0);
  uint64_t word = 0;
  std::memcpy(&word, c->base(1, kData) + 8, 8);
  EXPECT_EQ(word, 42u);
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(local + 256), 0u);  // old value
  std::memcpy(&word, c->base(1, kData) + 16, 8);
  EXPECT_EQ(word, 5u);
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(local + 264), 0u);
  // A failing CAS returns the current value and changes nothing.
  cas.compare = 1;
  cas.operand = 99;
  ASSERT_EQ(ep->post(cas), PostResult::kOk);
  ep->doorbell(1);
  ASSERT_EQ(poll_n(ep, 1).size(), 1u);
  EXPECT_EQ(*reinterpret_cast<uint64_t*>(local + 256), 42u);
  std::memcpy(&word, c->base(1, kData) + 8, 8);
  EXPECT_EQ(word, 42u);
  // Ops on the node's own memory go through UCX too (loopback).
  ASSERT_EQ(ep->post(wr(Verb::kWrite, {0, kData, 0}, local + 64, 16, 12)), PostResult::kOk);
  ASSERT_EQ(ep->post(wr(Verb::kRead, {0, kData, 0}, local + 512, 16, 13)), PostResult::kOk);
  ep->doorbell(0);
  ASSERT_EQ(poll_n(ep, 2).size(), 2u);
  EXPECT_EQ(std::memcmp(local + 512, "written by zero", 16), 0);
}

// Ops of one channel take effect in post order, whatever lanes UCX uses:
// a READ after a WRITE / CAS / FAA of the same word sees it, one before
// does not, over many rounds in one doorbell and across doorbells.
TEST_P(UcxFabric, OpsOfAChannelTakeEffectInPostOrder) {
  auto c = make(2, 1, {{kData, 1 << 16}, {kScratch, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  auto pump = pump_others(*c, 0);
  Endpoint* ep = c->f(0).endpoint(0);
  uint8_t* local = c->base(0, kScratch);
  auto* src = reinterpret_cast<uint64_t*>(local);              // 100 WRITE sources
  auto* seen = reinterpret_cast<uint64_t*>(local + 1024);      // READ results
  auto* olds = reinterpret_cast<uint64_t*>(local + 8 * 1024);  // FAA results
  for (uint64_t i = 0; i < 100; ++i) src[i] = 1000 + i;
  uint64_t id = 0;
  std::vector<Completion> comps;
  Completion buf[16];
  // Posts `w`; a full queue is drained by polling (completions kept).
  auto post = [&](const WorkRequest& w) {
    for (int tries = 0; tries < 1000000; ++tries) {
      if (ep->post(w) == PostResult::kOk) return true;
      ep->doorbell(1);
      const int n = ep->poll(buf, 16);
      comps.insert(comps.end(), buf, buf + n);
    }
    return false;
  };
  for (uint64_t i = 0; i < 100; ++i) {
    // WRITE v, READ, FAA +1, READ: the READs see v, then v + 1.
    ASSERT_TRUE(post(wr(Verb::kWrite, {1, kData, 64}, &src[i], 8, id++)));
    ASSERT_TRUE(post(wr(Verb::kRead, {1, kData, 64}, &seen[2 * i], 8, id++)));
    auto faa = wr(Verb::kFaa, {1, kData, 64}, &olds[i], 8, id++);
    faa.operand = 1;
    ASSERT_TRUE(post(faa));
    ASSERT_TRUE(post(wr(Verb::kRead, {1, kData, 64}, &seen[2 * i + 1], 8, id++)));
    if (i % 3 == 0) ep->doorbell(1);  // some doorbells hold several rounds
    if (i % 7 == 0) {                 // and some completions are polled in between
      const int n = ep->poll(buf, 16);
      comps.insert(comps.end(), buf, buf + n);
    }
  }
  ep->doorbell(1);
  auto rest = poll_n(ep, 400 - comps.size());
  comps.insert(comps.end(), rest.begin(), rest.end());
  ASSERT_EQ(comps.size(), 400u);
  for (uint64_t i = 0; i < 400; ++i) {
    ASSERT_EQ(comps[i].wr_id, i);
    ASSERT_EQ(comps[i].status, OpStatus::kOk);
  }
  for (uint64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(seen[2 * i], 1000 + i) << i;
    EXPECT_EQ(olds[i], 1000 + i) << i;
    EXPECT_EQ(seen[2 * i + 1], 1001 + i) << i;
  }
  // Runs of WRITEs and atomics (pipelined on one lane): 50 unsignaled
  // WRITEs of one word, then a CAS expecting the last value, then WRITEs
  // of another word and a READ of both.
  comps.clear();
  for (uint64_t round = 0; round < 20; ++round) {
    for (uint64_t i = 0; i < 50; ++i) {
      auto w = wr(Verb::kWrite, {1, kData, 128}, &src[i], 8, id++);
      w.signaled = false;
      ASSERT_TRUE(post(w));
    }
    auto cas = wr(Verb::kCas, {1, kData, 128}, &olds[round], 8, id++);
    cas.compare = src[49];
    cas.operand = 7000 + round;
    cas.signaled = false;
    ASSERT_TRUE(post(cas));
    auto w = wr(Verb::kWrite, {1, kData, 136}, &src[round], 8, id++);
    w.signaled = false;
    ASSERT_TRUE(post(w));
    ASSERT_TRUE(post(wr(Verb::kRead, {1, kData, 128}, &seen[2 * round], 16, id++)));
    ep->doorbell(1);
  }
  rest = poll_n(ep, 20 - comps.size());
  comps.insert(comps.end(), rest.begin(), rest.end());
  ASSERT_EQ(comps.size(), 20u);
  for (uint64_t round = 0; round < 20; ++round) {
    EXPECT_EQ(olds[round], src[49]) << round;  // the CAS saw the last WRITE
    EXPECT_EQ(seen[2 * round], 7000 + round) << round;
    EXPECT_EQ(seen[2 * round + 1], src[round]) << round;
  }
}

TEST_P(UcxFabric, BadRequestsCompleteWithErrorsAndTouchNothing) {
  auto c = make(2, 1, {{kData, 4096}, {kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  auto pump = pump_others(*c, 0);
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

TEST_P(UcxFabric, CompletionsAreFifoAndUnsignaledOpsNeverFillTheQueue) {
  auto c = make(2, 1, {{kData, 1 << 16}, {kScratch, 1 << 16}},
                [](FabricConfig& f) { f.send_queue_depth = 16; });
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  auto pump = pump_others(*c, 0);
  Endpoint* ep = c->f(0).endpoint(0);
  uint8_t* local = c->base(0, kScratch);
  for (uint64_t i = 0; i < 16; ++i) {
    ASSERT_EQ(ep->post(wr(Verb::kRead, {1, kData, i * 8}, local, 8, i)), PostResult::kOk);
  }
  EXPECT_EQ(ep->post(wr(Verb::kRead, {1, kData, 0}, local, 8, 99)), PostResult::kQueueFull);
  ep->doorbell(1);
  auto comps = poll_n(ep, 16);
  ASSERT_EQ(comps.size(), 16u);
  for (uint64_t i = 0; i < 16; ++i) EXPECT_EQ(comps[i].wr_id, i);
  EXPECT_EQ(ep->outstanding(1), 0u);
  // Thousands of unsignaled WRITEs, then one signaled READ: its completion
  // (passive ACK) means every WRITE before it is done.
  Completion buf[8];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (uint64_t i = 0; i < 5000; ++i) {
    std::memcpy(local + 64, &i, 8);
    auto w = wr(Verb::kWrite, {1, kData, 0}, local + 64, 8, 1000 + i);
    w.signaled = false;
    while (ep->post(w) == PostResult::kQueueFull) {
      ep->doorbell(1);
      ASSERT_EQ(ep->poll(buf, 8), 0);  // nothing to report: all unsignaled, all ok
      ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    }
  }
  for (int tries = 0;
       ep->post(wr(Verb::kRead, {1, kData, 0}, local + 128, 8, 7)) != PostResult::kOk; ++tries) {
    ep->doorbell(1);
    ASSERT_EQ(ep->poll(buf, 8), 0);
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
  }
  ep->doorbell(1);
  comps = poll_n(ep, 1);
  ASSERT_EQ(comps.size(), 1u);
  EXPECT_EQ(comps[0].wr_id, 7u);
  uint64_t last = 0;
  std::memcpy(&last, local + 128, 8);
  EXPECT_EQ(last, 4999u);
  EXPECT_EQ(ep->outstanding(1), 0u);
}

// The passive-ACK hazard (issue 47): a caller that reuses a WRITE's source
// buffer right after posting it — before any completion — must not change
// what lands at the target. The backend copies WRITEs up to kStageBytes at
// post(); this test poisons the source at once and fails if it did not.
TEST_P(UcxFabric, AWriteSourceReusedAfterPostDoesNotChangeWhatLands) {
  auto c = make(2, 1, {{kData, 1 << 20}, {kScratch, 1 << 20}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  auto pump = pump_others(*c, 0);
  Endpoint* ep = c->f(0).endpoint(0);
  uint8_t* local = c->base(0, kScratch);
  uint64_t id = 0;
  for (uint32_t len : {8u, 64u, 1000u, 4096u, 8192u, ucx::UcxEndpoint::kStageBytes}) {
    for (int round = 0; round < 20; ++round) {
      const uint8_t v = static_cast<uint8_t>(round + 1);
      std::memset(local, v, len);
      auto w = wr(Verb::kWrite, {1, kData, 4096}, local, len, id++);
      w.signaled = false;
      ASSERT_EQ(ep->post(w), PostResult::kOk);
      std::memset(local, 0xEE, len);  // the next transaction's image
      ep->doorbell(1);
      std::memset(local, 0xEF, len);
    }
    ASSERT_EQ(ep->post(wr(Verb::kRead, {1, kData, 4096}, local + (512 << 10), len, id++)),
              PostResult::kOk);
    ep->doorbell(1);
    auto comps = poll_n(ep, 1);
    ASSERT_EQ(comps.size(), 1u);
    ASSERT_EQ(comps[0].status, OpStatus::kOk);
    for (uint32_t i = 0; i < len; ++i) {
      ASSERT_EQ(local[(512 << 10) + i], 20) << "len " << len << " byte " << i;
    }
  }
}

TEST_P(UcxFabric, MessagesArriveInOrderAndBadSendsAreRefused) {
  auto c = make(2, 2, {{kData, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* tx = c->f(0).endpoint(1);
  Endpoint* rx = c->f(1).endpoint(0);
  auto pump =
      std::make_unique<Pump>(std::vector<Endpoint*>{c->f(0).endpoint(0), c->f(1).endpoint(1)});
  EXPECT_EQ(tx->send(1, 0, "x", tx->mtu() + 1), SendResult::kTooLarge);
  EXPECT_EQ(tx->send(5, 0, "x", 1), SendResult::kBadPeer);
  EXPECT_EQ(tx->send(1, 9, "x", 1), SendResult::kBadPeer);
  std::vector<uint8_t> payload(tx->mtu());
  constexpr uint32_t kCount = 3000;
  uint32_t next = 0, sent = 0;
  Message m[16];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (next < kCount && std::chrono::steady_clock::now() < deadline) {
    while (sent < kCount) {
      std::memcpy(payload.data(), &sent, 4);
      const uint32_t len = 4 + (sent * 37) % (tx->mtu() - 4);  // sizes up to the mtu
      const SendResult r = tx->send(1, 0, payload.data(), len);
      if (r == SendResult::kNoSpace) break;
      ASSERT_EQ(r, SendResult::kOk);
      ++sent;
    }
    tx->flush_sends();
    tx->poll(nullptr, 0);
    const int n = rx->poll_messages(m, 16);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(m[i].src_node, 0);
      ASSERT_EQ(m[i].src_thread, 1);
      uint32_t v;
      std::memcpy(&v, m[i].data, 4);
      ASSERT_EQ(v, next);
      ASSERT_EQ(m[i].len, 4 + (next * 37) % (tx->mtu() - 4));
      ++next;
    }
  }
  EXPECT_EQ(next, kCount);
}

// apply_membership removes node 2: ops and sends to it are fenced on node
// 0, and node 1 drops node 2's messages and closes its UCP endpoints to it.
TEST_P(UcxFabric, RemovedNodesAreFenced) {
  auto c = make(3, 1, {{kData, 4096}, {kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* e0 = c->f(0).endpoint(0);
  Endpoint* e1 = c->f(1).endpoint(0);
  Endpoint* e2 = c->f(2).endpoint(0);
  uint8_t* l0 = c->base(0, kScratch);
  uint8_t* l2 = c->base(2, kScratch);
  // Before: node 2's message reaches node 1.
  ASSERT_EQ(e2->send(1, 0, "before", 6), SendResult::kOk);
  e2->flush_sends();
  Message m[4];
  int got = 0;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       got == 0 && std::chrono::steady_clock::now() < until;) {
    e2->poll(nullptr, 0);
    got = e1->poll_messages(m, 4);
  }
  ASSERT_EQ(got, 1);
  NodeSet live;
  live.set(0);
  live.set(1);
  c->f(0).apply_membership(1, live);
  c->f(1).apply_membership(1, live);
  e1->poll(nullptr, 0);  // node 1's worker applies the epoch
  {
    auto pump = std::make_unique<Pump>(std::vector<Endpoint*>{e1});
    ASSERT_EQ(e0->post(wr(Verb::kWrite, {2, kData, 0}, l0, 8, 1)), PostResult::kOk);
    ASSERT_EQ(e0->post(wr(Verb::kRead, {1, kData, 0}, l0 + 8, 8, 2)), PostResult::kOk);
    e0->doorbell(2);
    e0->doorbell(1);
    auto comps = poll_n(e0, 2);
    ASSERT_EQ(comps.size(), 2u);
    for (auto& cp : comps) {
      EXPECT_EQ(cp.status, cp.peer == 2 ? OpStatus::kFenced : OpStatus::kOk)
          << cp.peer << ": " << op_status_name(cp.status);
    }
    EXPECT_EQ(e0->send(2, 0, "x", 1), SendResult::kFenced);
  }
  // Node 2 does not know yet: its message to node 1 is dropped there.
  ASSERT_EQ(e2->send(1, 0, "after", 5), SendResult::kOk);
  e2->flush_sends();
  int drained = 0;
  for (int i = 0; i < 1000; ++i) {
    e2->poll(nullptr, 0);
    drained += e1->poll_messages(m, 4);
  }
  EXPECT_EQ(drained, 0);
  EXPECT_GT(ucx_ep(c->f(1), 0)->stats().messages_dropped, 0u);
  // Node 2's one-sided WRITE into node 1, issued before node 2 heard
  // anything: node 1's worker executes it (UCX has no RMA lane on tcp) and
  // refuses it (the target's fence), or node 2 already refuses it.
  // (With --ucx-strict-order UCX emulates the op itself and cannot refuse
  // it: not checked there; README.md, "Fencing".)
  auto* x2 = ucx_ep(c->f(2), 0);
  if (!GetParam().strict) {
    auto pump = std::make_unique<Pump>(std::vector<Endpoint*>{e1});
    std::memset(l2, 0x5B, 8);
    ASSERT_EQ(e2->post(wr(Verb::kWrite, {1, kData, 72}, l2, 8, 9)), PostResult::kOk);
    e2->doorbell(1);
    auto early = poll_n(e2, 1);
    ASSERT_EQ(early.size(), 1u);
    EXPECT_EQ(early[0].status, OpStatus::kFenced) << op_status_name(early[0].status);
    EXPECT_EQ(c->base(1, kData)[72], 0);
  }
  // Node 1's worker told node 2 it was removed: once node 2's worker has
  // read the notice, its ops and sends are refused at the source.
  {
    auto pump = std::make_unique<Pump>(std::vector<Endpoint*>{e1});
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (x2->stats().fenced_notices == 0 && std::chrono::steady_clock::now() < until) {
      e2->poll(nullptr, 0);
    }
  }
  ASSERT_EQ(x2->stats().fenced_notices, 1u);
  std::memset(l2, 0x5A, 8);
  ASSERT_EQ(e2->post(wr(Verb::kWrite, {1, kData, 64}, l2, 8, 3)), PostResult::kOk);
  e2->doorbell(1);
  auto comps = poll_n(e2, 1);
  ASSERT_EQ(comps.size(), 1u);
  EXPECT_EQ(comps[0].status, OpStatus::kFenced);
  EXPECT_EQ(c->base(1, kData)[64], 0);
  EXPECT_EQ(e2->send(1, 0, "x", 1), SendResult::kFenced);
  EXPECT_EQ(e2->send(0, 0, "x", 1), SendResult::kFenced);
}

TEST_P(UcxFabric, GrowableRegionsServeCommittedRanges) {
  constexpr size_t kVirtual = size_t{1} << 40;  // 1 TiB of address space
  constexpr uint64_t kAt = (size_t{512} << 30) + 4096;
  auto c = make(2, 1, {{kScratch, 1 << 16}}, nullptr, nullptr, {{kData, kVirtual}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  EXPECT_EQ(c->f(1).committed_bytes(kData), 0u);
  ASSERT_TRUE(c->f(1).commit(kData, kAt, 1 << 20).is_ok());
  EXPECT_EQ(c->f(1).committed_bytes(kData), uint64_t{1} << 20);
  EXPECT_EQ(c->f(0).remote_region_size(1, kData), kVirtual);
  auto pump = pump_others(*c, 0);
  Endpoint* ep = c->f(0).endpoint(0);
  uint8_t* local = c->base(0, kScratch);
  std::memcpy(local, "far away", 8);
  ASSERT_EQ(ep->post(wr(Verb::kWrite, {1, kData, kAt + 100}, local, 8, 1)), PostResult::kOk);
  ASSERT_EQ(ep->post(wr(Verb::kRead, {1, kData, kAt + 100}, local + 64, 8, 2)), PostResult::kOk);
  auto cas = wr(Verb::kCas, {1, kData, kAt + 4096}, local + 128, 8, 3);
  cas.compare = 0;
  cas.operand = 77;
  ASSERT_EQ(ep->post(cas), PostResult::kOk);
  ep->doorbell(1);
  auto comps = poll_n(ep, 3);
  ASSERT_EQ(comps.size(), 3u);
  for (auto& cp : comps) EXPECT_EQ(cp.status, OpStatus::kOk) << op_status_name(cp.status);
  EXPECT_EQ(std::memcmp(local + 64, "far away", 8), 0);
  EXPECT_EQ(std::memcmp(c->base(1, kData) + kAt + 100, "far away", 8), 0);
  uint64_t w = 0;
  std::memcpy(&w, c->base(1, kData) + kAt + 4096, 8);
  EXPECT_EQ(w, 77u);
  EXPECT_EQ(ep->post(wr(Verb::kRead, {1, kData, kVirtual - 4}, local, 8, 4)), PostResult::kOk);
  ep->doorbell(1);
  comps = poll_n(ep, 1);
  ASSERT_EQ(comps.size(), 1u);
  EXPECT_EQ(comps[0].status, OpStatus::kOutOfBounds);
}

// H9 over ucx: WRITEs into a peer's persistent region, then a READ on the
// channel: the READ completes only after the peer persisted the written
// ranges (its worker flushed them, or msynced the pages of a disk file).
TEST_P(UcxFabric, AReadAfterPersistentWritesMakesThemDurableAtThePeer) {
  for (const std::string& dir : {std::string("/dev/shm"), testing::disk_dir()}) {
    if (dir.empty()) continue;
    const Persistence mode = testing::on_memory_fs(dir) ? Persistence::kMemFs : Persistence::kMsync;
    testing::MappedFile file(dir, 1 << 20);
    ASSERT_TRUE(file.ok()) << dir;
    constexpr RegionId kPool = 5;
    auto c = make(2, 1, {{kScratch, 1 << 16}}, nullptr, [&](NodeId n, Fabric& f) -> Status {
      if (n != 1) return Status::ok();
      FileRegion fr;
      fr.base = file.base();
      fr.bytes = file.size();
      fr.path = file.path();
      fr.mode = mode;
      return f.register_file_region(kPool, fr).status();
    });
    ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
    EXPECT_EQ(c->f(0).region_persistence(1, kPool), mode);
    auto pump = pump_others(*c, 0);
    Endpoint* ep = c->f(0).endpoint(0);
    uint8_t* local = c->base(0, kScratch);
    std::memset(local, 0x42, 8192);
    for (uint64_t i = 0; i < 4; ++i) {
      auto w = wr(Verb::kWrite, {1, kPool, 8192 + i * 2048}, local, 2048, i);
      w.signaled = false;
      ASSERT_EQ(ep->post(w), PostResult::kOk);
    }
    auto w = wr(Verb::kWrite, {1, kPool, 65536}, local, 100, 4);
    w.signaled = false;
    ASSERT_EQ(ep->post(w), PostResult::kOk);
    ASSERT_EQ(ep->post(wr(Verb::kRead, {1, kPool, 0}, local + 16384, 8, 5)), PostResult::kOk);
    ep->doorbell(1);
    auto comps = poll_n(ep, 1);
    ASSERT_EQ(comps.size(), 1u);
    EXPECT_EQ(comps[0].wr_id, 5u);
    EXPECT_EQ(comps[0].status, OpStatus::kOk) << op_status_name(comps[0].status);
    auto* issuer = ucx_ep(c->f(0), 0);
    EXPECT_EQ(issuer->stats().persist_requests, 1u);
    pump.reset();  // node 1's worker is quiet now: its stats can be read
    auto* target = ucx_ep(c->f(1), 0);
    EXPECT_EQ(target->stats().persist_served, 1u);
    EXPECT_EQ(target->stats().persisted_bytes, 4u * 2048 + 100);
    auto back = file.read_back(8192, 8192);
    ASSERT_EQ(back.size(), 8192u);
    for (uint8_t b : back) ASSERT_EQ(b, 0x42);
    if (mode == Persistence::kMsync) EXPECT_EQ(testing::dirty_kb_of_file(file.path()), 0) << dir;
    // A READ with no WRITE before it asks for nothing.
    pump = pump_others(*c, 0);
    ASSERT_EQ(ep->post(wr(Verb::kRead, {1, kPool, 0}, local + 16384, 8, 6)), PostResult::kOk);
    ep->doorbell(1);
    ASSERT_EQ(poll_n(ep, 1).size(), 1u);
    EXPECT_EQ(issuer->stats().persist_requests, 1u);
  }
}

TEST_P(UcxFabric, TheTransportsUcxChoseAreReported) {
  auto c = make(2, 1, {{kData, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  const auto& t = c->f(0).info().peer_transports;
  ASSERT_EQ(t.size(), 2u);
  for (const std::string& s : t) {
    EXPECT_NE(s, "unknown");
    if (GetParam().tls == "tcp") EXPECT_NE(s.find("tcp/"), std::string::npos) << s;
  }
  std::printf("{\"ucx_transports\":\"%s\",\"tls\":\"%s\"}\n", t[1].c_str(), GetParam().tls.c_str());
}

// Own memory with the CPU (execute_local): where UCX emulates atomics with
// the target's worker (tcp), a node's CPU FAAs on its own word and a peer's
// UCX FAAs on the same word, concurrently, add up.
TEST_P(UcxFabric, OwnMemoryOpsAreAtomicWithPeersUcxAtomics) {
  auto c = make(2, 1, {{kData, 4096}, {kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* e0 = c->f(0).endpoint(0);
  Endpoint* e1 = c->f(1).endpoint(0);
  if (!e0->executes_local()) GTEST_SKIP() << "UCX uses NIC atomics here: own ops are posted";
  constexpr int kEach = 2000;
  std::thread peer([&] {
    uint8_t* l1 = c->base(1, kScratch);
    for (int i = 0; i < kEach; ++i) {
      auto faa = wr(Verb::kFaa, {0, kData, 64}, l1, 8, i);
      faa.operand = 1;
      ASSERT_EQ(e1->post(faa), PostResult::kOk);
      e1->doorbell(0);
      ASSERT_EQ(poll_n(e1, 1).size(), 1u);
    }
  });
  uint8_t* l0 = c->base(0, kScratch);
  Completion buf[4];
  int done = 0;
  for (int i = 0; i < kEach; ++i) {
    auto faa = wr(Verb::kFaa, {0, kData, 64}, l0, 8, i);
    faa.operand = 1000;
    OpStatus st = OpStatus::kTransportError;
    ASSERT_TRUE(e0->execute_local(faa, &st));
    ASSERT_EQ(st, OpStatus::kOk);
    done += e0->poll(buf, 4);  // node 0's worker executes node 1's FAAs
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::atomic<bool> joined{false};
  std::thread waiter([&] {
    peer.join();
    joined = true;
  });
  while (!joined && std::chrono::steady_clock::now() < until) e0->poll(buf, 4);
  waiter.join();
  EXPECT_EQ(done, 0);
  uint64_t v = 0;
  std::memcpy(&v, c->base(0, kData) + 64, 8);
  EXPECT_EQ(v, uint64_t{kEach} * 1001);
  // A READ of its own memory sees the word; a bad one is refused as posted.
  auto rd = wr(Verb::kRead, {0, kData, 64}, l0 + 8, 8, 1);
  OpStatus st = OpStatus::kTransportError;
  ASSERT_TRUE(e0->execute_local(rd, &st));
  EXPECT_EQ(st, OpStatus::kOk);
  EXPECT_EQ(std::memcmp(l0 + 8, c->base(0, kData) + 64, 8), 0);
  rd.remote.offset = 4090;
  ASSERT_TRUE(e0->execute_local(rd, &st));
  EXPECT_EQ(st, OpStatus::kOutOfBounds);
}

INSTANTIATE_TEST_SUITE_P(Transports, UcxFabric,
                         ::testing::Values(Mode{"", false}, Mode{"tcp", false}, Mode{"tcp", true}),
                         [](const auto& info) {
                           const Mode& m = info.param;
                           return (m.tls.empty() ? std::string("ucx_choice") : m.tls) +
                                  (m.strict ? "_strict" : "");
                         });

}  // namespace
}  // namespace drtmx::r2
