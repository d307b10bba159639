// Worker, coroutines and RPC on the shm fabric, nodes as threads.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>

#include "r2/control/membership.h"
#include "r2/support/worker_cluster.h"

namespace drtmx::r2 {
namespace {

using testing::InProcCluster;
using testing::run_workers;

constexpr RegionId kData = 1;
constexpr RegionId kScratch = 2;
constexpr uint16_t kEcho = 1;
constexpr size_t kSlice = 4096;  // scratch bytes per coroutine

uint8_t* scratch(InProcCluster& c, Co& co, uint16_t cos) {
  return c.base(co.node(), kScratch) + (co.thread() * cos + co.id()) * kSlice;
}

void echo_handler(Worker& w) {
  ASSERT_TRUE(w.register_handler(kEcho, [](RpcRequest& r) {
                 r.reply(r.payload().data(), static_cast<uint32_t>(r.payload().size()));
               }).is_ok());
}

TEST(Worker, CoroutinesReadWriteAndBatchAcrossNodes) {
  constexpr uint16_t kNodes = 3, kThreads = 2, kCos = 8;
  auto c = InProcCluster::make(kNodes, kThreads, {{kData, 1 << 20}, {kScratch, 1 << 20}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  std::atomic<int> bad{0};
  WorkerConfig wc;
  wc.coroutines = kCos;
  auto run = run_workers(*c, wc, [&](Worker& w) {
    for (int i = 0; i < kCos; ++i) {
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     uint8_t* buf = scratch(*c, co, kCos);
                     const uint32_t me = (co.node() * kThreads + co.thread()) * kCos + co.id();
                     for (uint32_t round = 0; round < 200; ++round) {
                       const NodeId peer = (co.node() + 1 + round % (kNodes - 1)) % kNodes;
                       const uint64_t off = me * 64;
                       uint32_t v[16];
                       for (auto& x : v) x = me * 1000 + round;
                       std::memcpy(buf, v, 64);
                       if (co.write({peer, kData, off}, buf, 64) != OpStatus::kOk) ++bad;
                       // Batch: read it back twice plus a neighbour's slot.
                       OpBatch b;
                       b.read({peer, kData, off}, buf + 64, 64);
                       b.read({peer, kData, off}, buf + 128, 64);
                       b.read({peer, kData, 0}, buf + 192, 8);
                       if (co.run(b) != OpStatus::kOk) ++bad;
                       if (std::memcmp(buf, buf + 64, 64) || std::memcmp(buf, buf + 128, 64)) ++bad;
                     }
                   }).is_ok());
    }
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(bad.load(), 0);
  for (auto& w : run.workers) EXPECT_TRUE(w->failure().is_ok());
}

// Co::post returns at once; the coroutine computes, yields (other
// coroutines run their own batches meanwhile) and wait_posted() returns the
// data — whether the completions arrived before it was called or after.
TEST(Worker, PostedBatchesCompleteWhileTheCoroutineRunsOn) {
  constexpr uint16_t kNodes = 3, kThreads = 1, kCos = 4;
  auto c = InProcCluster::make(kNodes, kThreads, {{kData, 1 << 20}, {kScratch, 1 << 20}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  std::atomic<int> bad{0}, posted{0};
  WorkerConfig wc;
  wc.coroutines = kCos;
  auto run = run_workers(*c, wc, [&](Worker& w) {
    for (int i = 0; i < kCos; ++i) {
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     uint8_t* buf = scratch(*c, co, kCos);
                     const uint32_t me = co.node() * kCos + co.id();
                     for (uint32_t round = 0; round < 100; ++round) {
                       const NodeId peer = (co.node() + 1 + round % (kNodes - 1)) % kNodes;
                       const uint64_t off = me * 64;
                       std::memset(buf, static_cast<int>(round + me), 64);
                       if (co.write({peer, kData, off}, buf, 64) != OpStatus::kOk) ++bad;
                       OpBatch b;
                       b.read({peer, kData, off}, buf + 64, 64);
                       b.read({peer, kData, off}, buf + 128, 64);
                       co.post(b);
                       if (!co.posted()) ++bad;
                       ++posted;
                       // Computation and yields while the READs are in flight.
                       for (uint32_t y = 0; y < round % 3; ++y) co.yield();
                       if (co.wait_posted() != OpStatus::kOk) ++bad;
                       if (co.posted()) ++bad;
                       if (std::memcmp(buf, buf + 64, 64) || std::memcmp(buf, buf + 128, 64)) ++bad;
                       // The slot is free again: an ordinary batch works.
                       if (co.read({peer, kData, off}, buf + 192, 64) != OpStatus::kOk) ++bad;
                     }
                     // Waiting with nothing posted returns at once.
                     if (co.wait_posted() != OpStatus::kOk) ++bad;
                   }).is_ok());
    }
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(posted.load(), kNodes * kCos * 100);
  for (auto& w : run.workers) EXPECT_TRUE(w->failure().is_ok());
}

TEST(Worker, AtomicsFromAllNodesGiveExactTotals) {
  constexpr uint16_t kNodes = 3, kThreads = 2, kCos = 4;
  constexpr int kOps = 2000;
  auto c = InProcCluster::make(kNodes, kThreads, {{kData, 4096}, {kScratch, 1 << 20}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  std::atomic<uint64_t> cas_ok{0};
  std::atomic<int> bad{0};
  WorkerConfig wc;
  wc.coroutines = kCos;
  auto run = run_workers(*c, wc, [&](Worker& w) {
    for (int i = 0; i < kCos; ++i) {
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     auto* old = reinterpret_cast<uint64_t*>(scratch(*c, co, kCos));
                     uint64_t seen = 0;
                     for (int k = 0; k < kOps; ++k) {
                       // FAA +1 on node 1's word 0; CAS-increment node 2's word 8.
                       if (co.faa({1, kData, 0}, 1, old) != OpStatus::kOk) ++bad;
                       if (co.cas({2, kData, 8}, seen, seen + 1, old) != OpStatus::kOk) ++bad;
                       if (*old == seen) ++cas_ok;
                       seen = *old == seen ? seen + 1 : *old;
                     }
                   }).is_ok());
    }
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(bad.load(), 0);
  uint64_t faa_total, cas_total;
  std::memcpy(&faa_total, c->base(1, kData), 8);
  std::memcpy(&cas_total, c->base(2, kData) + 8, 8);
  EXPECT_EQ(faa_total, uint64_t{kNodes} * kThreads * kCos * kOps);
  EXPECT_EQ(cas_total, cas_ok.load());
  EXPECT_GT(cas_total, 0u);
}

TEST(Worker, RpcUnderLoadLosesNothing) {
  constexpr uint16_t kNodes = 3, kThreads = 2, kCos = 16;
  constexpr int kCalls = 1500;
  // Small rings force the backlog path.
  auto c = InProcCluster::make(kNodes, kThreads, {{kScratch, 4096}}, [](FabricConfig& f) {
    f.ring_bytes = 4096;
    f.mtu = 512;
  });
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  std::atomic<int> bad{0};
  std::atomic<uint64_t> served{0}, done{0};
  WorkerConfig wc;
  wc.coroutines = kCos;
  auto run = run_workers(*c, wc, [&](Worker& w) {
    ASSERT_TRUE(w.register_handler(kEcho, [&](RpcRequest& r) {
                   ++served;
                   r.reply(r.payload().data(), static_cast<uint32_t>(r.payload().size()));
                 }).is_ok());
    for (int i = 0; i < kCos; ++i) {
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     std::mt19937 rng(co.node() * 1000 + co.thread() * 100 + co.id());
                     RpcBuffer reply;
                     std::vector<uint8_t> req;
                     for (int k = 0; k < kCalls; ++k) {
                       Target t{static_cast<NodeId>(rng() % kNodes),
                                static_cast<ThreadId>(rng() % kThreads)};
                       req.resize(8 + rng() % 900);  // often two fragments
                       for (auto& b : req) b = static_cast<uint8_t>(rng());
                       Status s =
                           co.call(t, kEcho, req.data(), static_cast<uint32_t>(req.size()), reply);
                       if (!s.is_ok() || reply != req) ++bad;
                       ++done;
                     }
                   }).is_ok());
    }
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(done.load(), uint64_t{kNodes} * kThreads * kCos * kCalls);
  EXPECT_EQ(served.load(), done.load());
  uint64_t peak = 0, malformed = 0, stale = 0;
  for (auto& w : run.workers) {
    peak = std::max(peak, w->stats().backlog_peak);
    malformed += w->stats().malformed;
    stale += w->stats().stale_replies;
  }
  EXPECT_EQ(malformed, 0u);
  EXPECT_EQ(stale, 0u);
  // shm's message rings are bounded, so the load fills them and the
  // backlog path runs; ucx queues in UCX (what must hold there is above).
  if (c->f(0).info().backend == "shm") {
    EXPECT_GT(peak, 0u) << "rings never filled: the backlog path went untested";
  }
}

TEST(Worker, LargeMessagesAreFragmentedAndOversizedOnesRefused) {
  auto c = InProcCluster::make(2, 1, {{kScratch, 4096}}, [](FabricConfig& f) {
    f.mtu = 512;
    f.ring_bytes = 16 * 1024;
  });
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  WorkerConfig wc;
  wc.coroutines = 2;
  wc.max_rpc_bytes = 200000;
  std::atomic<int> checks{0};
  auto run = run_workers(*c, wc, [&](Worker& w) {
    ASSERT_TRUE(w.register_handler(kEcho, [](RpcRequest& r) {
                   // Reply twice the request: request and its reverse.
                   std::vector<uint8_t> out(r.payload().begin(), r.payload().end());
                   out.insert(out.end(), r.payload().rbegin(), r.payload().rend());
                   r.reply(out.data(), static_cast<uint32_t>(out.size()));
                 }).is_ok());
    if (w.node() != 0) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   std::vector<uint8_t> req(99999);
                   for (size_t i = 0; i < req.size(); ++i) req[i] = static_cast<uint8_t>(i * 7);
                   RpcBuffer reply;
                   Status s = co.call({1, 0}, kEcho, req.data(), 99999, reply);
                   EXPECT_TRUE(s.is_ok()) << s.to_string();
                   ASSERT_EQ(reply.size(), 199998u);
                   EXPECT_TRUE(std::equal(req.begin(), req.end(), reply.begin()));
                   EXPECT_TRUE(std::equal(req.rbegin(), req.rend(), reply.begin() + 99999));
                   ++checks;
                   // A request above max_rpc_bytes is refused before sending.
                   std::vector<uint8_t> big(200001);
                   s = co.call({1, 0}, kEcho, big.data(), 200001, reply);
                   EXPECT_EQ(s.code(), Code::kOutOfRange);
                   EXPECT_NE(s.message().find("200001"), std::string::npos);
                   ++checks;
                   // A reply above the limit becomes an error reply.
                   s = co.call({1, 0}, kEcho, big.data(), 150000, reply);
                   EXPECT_EQ(s.code(), Code::kOutOfRange) << s.to_string();
                   EXPECT_NE(s.message().find("reply of 300000 bytes"), std::string::npos);
                   ++checks;
                 }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(checks.load(), 3);
}

TEST(Worker, MissingHandlerDeferredReplyAndMulticast) {
  auto c = InProcCluster::make(3, 1, {{kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  WorkerConfig wc;
  wc.coroutines = 2;
  std::atomic<int> checks{0};
  auto run = run_workers(*c, wc, [&](Worker& w) {
    echo_handler(w);
    // Handler 2 answers from a coroutine, later.
    auto tokens = std::make_shared<std::vector<ReplyToken>>();
    ASSERT_TRUE(
        w.register_handler(2, [tokens](RpcRequest& r) { tokens->push_back(r.defer()); }).is_ok());
    Worker* wp = &w;
    if (w.node() == 1) {
      ASSERT_TRUE(w.spawn([tokens, wp](Co& co) {
                     auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                     while (tokens->empty() && std::chrono::steady_clock::now() < until) {
                       co.yield();
                     }
                     for (auto& t : *tokens) wp->reply(t, "late", 4);
                   }).is_ok());
    }
    if (w.node() != 0) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   RpcBuffer reply;
                   Status s = co.call({2, 0}, 77, "x", 1, reply);
                   EXPECT_EQ(s.code(), Code::kNotFound);
                   EXPECT_NE(s.message().find("no handler for RPC 77 on node 2"), std::string::npos)
                       << s.to_string();
                   ++checks;
                   s = co.call({1, 0}, 2, "q", 1, reply);
                   EXPECT_TRUE(s.is_ok()) << s.to_string();
                   EXPECT_EQ(std::string(reply.begin(), reply.end()), "late");
                   ++checks;
                   Target ts[3] = {{0, 0}, {1, 0}, {2, 0}};
                   RpcBuffer rs[3];
                   s = co.call(ts, kEcho, "all", 3, rs);
                   EXPECT_TRUE(s.is_ok()) << s.to_string();
                   for (auto& r : rs) EXPECT_EQ(std::string(r.begin(), r.end()), "all");
                   ++checks;
                   s = co.call({7, 0}, kEcho, "x", 1, reply);
                   EXPECT_EQ(s.code(), Code::kInvalidArgument);
                   ++checks;
                 }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(checks.load(), 4);
}

// A call to the worker's own (node, thread) is served inline (no message)
// with the same results as through the rings: immediate, error and missing
// handlers, a deferred reply (which does come as a message), a reply over
// max_rpc_bytes, a multicast mixing self and others; a long run of inline
// calls still lets the other coroutine run. Both settings, same answers.
TEST(Worker, CallsToItselfAreServedInlineWithTheSameResults) {
  for (const bool inline_self : {true, false}) {
    SCOPED_TRACE(inline_self ? "inline" : "through the rings");
    auto c = InProcCluster::make(2, 1, {{kScratch, 4096}});
    ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
    WorkerConfig wc;
    wc.coroutines = 2;
    wc.max_rpc_bytes = 1024;
    wc.inline_self_calls = inline_self;
    std::atomic<int> checks{0}, other_turns{0};
    std::atomic<uint64_t> inline_calls{0}, messages{0};
    std::atomic<bool> done{false};
    auto run = run_workers(*c, wc, [&](Worker& w) {
      echo_handler(w);
      auto tokens = std::make_shared<std::vector<ReplyToken>>();
      ASSERT_TRUE(
          w.register_handler(2, [tokens](RpcRequest& r) { tokens->push_back(r.defer()); }).is_ok());
      ASSERT_TRUE(w.register_handler(3, [](RpcRequest& r) { r.reply_error("refused"); }).is_ok());
      ASSERT_TRUE(w.register_handler(4, [](RpcRequest& r) {
                     std::vector<uint8_t> big(2048, 1);
                     r.reply(big.data(), static_cast<uint32_t>(big.size()));
                   }).is_ok());
      ASSERT_TRUE(w.register_handler(5, [](RpcRequest&) {}).is_ok());  // empty reply
      if (w.node() != 0) return;
      Worker* wp = &w;
      ASSERT_TRUE(w.spawn([tokens, wp, &done, &other_turns](Co& co) {
                     // Answers deferred requests; counts its turns.
                     auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                     while (!done.load() && std::chrono::steady_clock::now() < until) {
                       for (auto& t : *tokens) wp->reply(t, "late", 4);
                       tokens->clear();
                       ++other_turns;
                       co.yield();
                     }
                   }).is_ok());
      ASSERT_TRUE(
          w.spawn([&, wp](Co& co) {
             const uint64_t msgs_before = wp->stats().messages_out;
             RpcBuffer reply;
             Status s = co.call({0, 0}, kEcho, "self", 4, reply);
             EXPECT_TRUE(s.is_ok()) << s.to_string();
             EXPECT_EQ(std::string(reply.begin(), reply.end()), "self");
             s = co.call({0, 0}, 3, "x", 1, reply);
             EXPECT_EQ(s.code(), Code::kAborted);
             EXPECT_NE(s.message().find("refused"), std::string::npos) << s.to_string();
             s = co.call({0, 0}, 77, "x", 1, reply);
             EXPECT_EQ(s.code(), Code::kNotFound);
             EXPECT_NE(s.message().find("no handler for RPC 77 on node 0"), std::string::npos)
                 << s.to_string();
             s = co.call({0, 0}, 4, "x", 1, reply);
             EXPECT_EQ(s.code(), Code::kOutOfRange) << s.to_string();
             reply.assign(3, 9);
             s = co.call({0, 0}, 5, "x", 1, reply);
             EXPECT_TRUE(s.is_ok()) << s.to_string();
             EXPECT_TRUE(reply.empty());
             if (inline_self) {
               EXPECT_EQ(wp->stats().messages_out, msgs_before);
             }
             s = co.call({0, 0}, 2, "q", 1, reply);  // deferred, answered by the other
             EXPECT_TRUE(s.is_ok()) << s.to_string();
             EXPECT_EQ(std::string(reply.begin(), reply.end()), "late");
             Target ts[2] = {{1, 0}, {0, 0}};
             RpcBuffer rs[2];
             s = co.call(ts, kEcho, "both", 4, rs);
             EXPECT_TRUE(s.is_ok()) << s.to_string();
             for (auto& r : rs) EXPECT_EQ(std::string(r.begin(), r.end()), "both");
             const int turns_before = other_turns.load();
             for (int i = 0; i < 1000; ++i) {
               s = co.call({0, 0}, kEcho, "loop", 4, reply);
               if (!s.is_ok()) break;
             }
             EXPECT_TRUE(s.is_ok()) << s.to_string();
             EXPECT_GT(other_turns.load(), turns_before) << "inline calls never yielded";
             inline_calls = wp->stats().inline_calls;
             messages = wp->stats().messages_out - msgs_before;
             ++checks;
             done = true;
           }).is_ok());
    });
    EXPECT_FALSE(run.timed_out);
    EXPECT_EQ(checks.load(), 1);
    if (inline_self) {
      EXPECT_EQ(inline_calls.load(), 1007u);
      EXPECT_LT(messages.load(), 10u);  // the deferred reply, the call to node 1
    } else {
      EXPECT_EQ(inline_calls.load(), 0u);
      EXPECT_GE(messages.load(), 1007u);
    }
  }
}

// One-sided ops on the worker's own node run at once (no completion) with
// the results of the posted path: FIFO within a batch (a READ before a
// WRITE of the same bytes sees the old value, one after it the new one),
// CAS and FAA return the old word, a READ posted with Co::post is filled
// by wait_posted(), a bad op fails alone; and the coroutines of all nodes
// hammering one node's counter with CAS loops and FAA, locally and
// remotely, lose no update. Both settings, same answers.
TEST(Worker, OpsOnTheOwnNodeRunAtOnceWithTheSameResults) {
  for (const bool direct : {true, false}) {
    SCOPED_TRACE(direct ? "direct" : "posted");
    constexpr uint16_t kNodes = 2, kCos = 3;
    constexpr uint32_t kRounds = 300;
    auto c = InProcCluster::make(kNodes, 1, {{kData, 1 << 16}, {kScratch, 1 << 16}});
    ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
    WorkerConfig wc;
    wc.coroutines = kCos;
    wc.direct_local_ops = direct;
    std::atomic<int> bad{0}, checks{0};
    std::atomic<uint64_t> direct_ops{0};
    auto run = run_workers(*c, wc, [&](Worker& w) {
      Worker* wp = &w;
      for (int i = 0; i < kCos; ++i) {
        ASSERT_TRUE(w.spawn([&, wp](Co& co) {
                       uint8_t* buf = scratch(*c, co, kCos);
                       const NodeId self = co.node();
                       if (co.direct(self) != direct || co.direct((self + 1) % kNodes)) ++bad;
                       if (co.id() == 0) {
                         // FIFO in one batch on the own node.
                         const uint64_t off = 4096 + 64 * self;
                         uint64_t v = 7;
                         auto* old = reinterpret_cast<uint64_t*>(buf + 48);  // registered
                         std::memcpy(buf, &v, 8);
                         if (co.write({self, kData, off}, buf, 8) != OpStatus::kOk) ++bad;
                         v = 9;
                         std::memcpy(buf + 8, &v, 8);
                         OpBatch b;
                         b.read({self, kData, off}, buf + 16, 8);
                         b.write({self, kData, off}, buf + 8, 8);
                         b.read({self, kData, off}, buf + 24, 8);
                         b.cas({self, kData, off}, 9, 11, old);
                         b.read({self, kData, 1u << 20}, buf + 32, 8);  // outside the region
                         co.run(b);
                         uint64_t r1 = 0, r2 = 0;
                         std::memcpy(&r1, buf + 16, 8);
                         std::memcpy(&r2, buf + 24, 8);
                         if (r1 != 7 || r2 != 9 || *old != 9) ++bad;
                         if (b.status(0) != OpStatus::kOk || b.status(3) != OpStatus::kOk ||
                             b.status(4) == OpStatus::kOk) {
                           ++bad;
                         }
                         // A posted READ is there after wait_posted(), with
                         // nothing after it on the channel.
                         OpBatch p;
                         p.read({self, kData, off}, buf + 40, 8);
                         co.post(p);
                         if (co.wait_posted() != OpStatus::kOk) ++bad;
                         std::memcpy(&r1, buf + 40, 8);
                         if (r1 != 11) ++bad;
                         ++checks;
                       }
                       // Everyone: increment node 0's counter, half by CAS loops.
                       for (uint32_t round = 0; round < kRounds; ++round) {
                         auto* old = reinterpret_cast<uint64_t*>(buf + 56);
                         if (round % 2 == 0) {
                           if (co.faa({0, kData, 0}, 1, old) != OpStatus::kOk) ++bad;
                           continue;
                         }
                         uint64_t seen = 0;
                         for (int tries = 0; tries < 100000; ++tries) {
                           if (co.read({0, kData, 0}, buf, 8) != OpStatus::kOk) ++bad;
                           std::memcpy(&seen, buf, 8);
                           if (co.cas({0, kData, 0}, seen, seen + 1, old) != OpStatus::kOk) ++bad;
                           if (*old == seen) break;
                           co.yield();
                         }
                       }
                       if (co.id() == 0) direct_ops += wp->stats().direct_ops;
                     }).is_ok());
      }
    });
    EXPECT_FALSE(run.timed_out);
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(checks.load(), int{kNodes});
    uint64_t total = 0;
    std::memcpy(&total, c->base(0, kData), 8);
    EXPECT_EQ(total, uint64_t{kNodes} * kCos * kRounds);
    if (direct) {
      EXPECT_GT(direct_ops.load(), 0u);
    } else {
      EXPECT_EQ(direct_ops.load(), 0u);
    }
  }
}

TEST(Worker, CallToANodeThatDoesNotServeTimesOut) {
  auto c = InProcCluster::make(2, 1, {{kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  WorkerConfig wc;
  wc.coroutines = 1;
  wc.rpc_timeout_ms = 200;
  std::atomic<int> checks{0};
  auto t0 = std::chrono::steady_clock::now();
  auto run = run_workers(
      *c, wc,
      [&](Worker& w) {
        if (w.node() != 0) return;
        ASSERT_TRUE(w.spawn([&](Co& co) {
                       RpcBuffer reply;
                       Status s = co.call({1, 0}, kEcho, "x", 1, reply);
                       EXPECT_EQ(s.code(), Code::kTimeout);
                       EXPECT_NE(s.message().find("no reply from node 1 thread 0"),
                                 std::string::npos);
                       ++checks;
                     }).is_ok());
      },
      std::chrono::seconds(20), [](NodeId n) { return n == 0; });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(checks.load(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(run.workers[0]->stats().timeouts, 1u);
}

TEST(Worker, PassiveMessagesAreAcknowledgedByLaterTraffic) {
  constexpr uint16_t kNodes = 2, kCos = 4;
  constexpr int kMsgs = 20000;
  auto c = InProcCluster::make(kNodes, 1, {{kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  WorkerConfig wc;
  wc.coroutines = kCos;
  wc.passive_window = 64;
  wc.ack_batch = 16;
  std::atomic<uint64_t> handled{0};
  std::atomic<uint64_t> max_unacked{0};
  auto run = run_workers(*c, wc, [&](Worker& w) {
    ASSERT_TRUE(w.register_handler(3, [&](RpcRequest& r) {
                   EXPECT_FALSE(r.wants_reply());
                   ++handled;
                 }).is_ok());
    Worker* wp = &w;
    for (int i = 0; i < kCos; ++i) {
      ASSERT_TRUE(w.spawn([&, wp](Co& co) {
                     Target peer{static_cast<NodeId>(1 - co.node()), 0};
                     for (int k = 0; k < kMsgs; ++k) {
                       ASSERT_TRUE(co.send_passive(peer, 3, &k, sizeof k).is_ok());
                       uint64_t u = wp->passive_unacked();
                       uint64_t m = max_unacked.load();
                       while (u > m && !max_unacked.compare_exchange_weak(m, u)) {
                       }
                     }
                     EXPECT_TRUE(co.wait_passive_acks().is_ok());
                     EXPECT_EQ(wp->passive_unacked(), 0u);
                   }).is_ok());
    }
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(handled.load(), uint64_t{kNodes} * kCos * kMsgs);
  EXPECT_LE(max_unacked.load(), 64u);  // the window held
  // Most acknowledgements rode on the reverse traffic.
  uint64_t standalone = run.workers[0]->stats().acks_sent + run.workers[1]->stats().acks_sent;
  EXPECT_LT(standalone, handled.load() / 8);
}

TEST(Worker, MalformedMessagesAreDroppedAndServingGoesOn) {
  auto c = InProcCluster::make(2, 1, {{kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  // Garbage straight into node 1's ring, before the workers start.
  Endpoint* raw = c->f(0).endpoint(0);
  uint8_t junk[64];
  std::memset(junk, 0xEE, sizeof junk);
  ASSERT_EQ(raw->send(1, 0, junk, 5), SendResult::kOk);   // too short
  ASSERT_EQ(raw->send(1, 0, junk, 64), SendResult::kOk);  // bad type
  RpcHeader h;
  h.type = static_cast<uint8_t>(RpcType::kRequest);
  h.total = 1000;  // claims more than it carries, at an offset nobody started
  h.offset = 500;
  std::memcpy(junk, &h, sizeof h);
  ASSERT_EQ(raw->send(1, 0, junk, 40), SendResult::kOk);
  raw->flush_sends();
  WorkerConfig wc;
  wc.coroutines = 1;
  std::atomic<int> checks{0};
  auto run = run_workers(*c, wc, [&](Worker& w) {
    echo_handler(w);
    if (w.node() != 0) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   RpcBuffer reply;
                   EXPECT_TRUE(co.call({1, 0}, kEcho, "ok", 2, reply).is_ok());
                   ++checks;
                 }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(checks.load(), 1);
  EXPECT_EQ(run.workers[1]->stats().malformed, 3u);
}

TEST(Worker, BadOpsReportErrorsToTheCoroutine) {
  auto c = InProcCluster::make(2, 1, {{kData, 4096}, {kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  WorkerConfig wc;
  wc.coroutines = 1;
  std::atomic<int> checks{0};
  auto run = run_workers(*c, wc, [&](Worker& w) {
    if (w.node() != 0) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   uint8_t* buf = c->base(0, kScratch);
                   EXPECT_EQ(co.read({1, kData, 4095}, buf, 8), OpStatus::kOutOfBounds);
                   EXPECT_EQ(co.read({5, kData, 0}, buf, 8), OpStatus::kBadNode);
                   OpBatch b;
                   b.read({1, kData, 0}, buf, 8);
                   b.write({1, 9, 0}, buf, 8);
                   b.read({1, kData, 8}, buf + 8, 8);
                   EXPECT_EQ(co.run(b), OpStatus::kBadRegion);
                   EXPECT_EQ(b.status(0), OpStatus::kOk);
                   EXPECT_EQ(b.status(1), OpStatus::kBadRegion);
                   EXPECT_EQ(b.status(2), OpStatus::kOk);
                   ++checks;
                 }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(checks.load(), 1);
}

TEST(Worker, DestroyingAWorkerWithSuspendedCoroutinesUnwindsThem) {
  auto c = InProcCluster::make(2, 1, {{kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok());
  WorkerConfig wc;
  wc.coroutines = 2;
  wc.rpc_timeout_ms = 0;  // wait forever: node 1 never serves
  auto destroyed = std::make_shared<int>(0);
  {
    Worker w(c->f(0).endpoint(0), 0, 2, 1, wc);
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(w.spawn([destroyed](Co& co) {
                     struct Guard {
                       std::shared_ptr<int> d;
                       ~Guard() { ++*d; }
                     } g{destroyed};
                     RpcBuffer reply;
                     (void)co.call({1, 0}, kEcho, "x", 1, reply);
                     ADD_FAILURE() << "the call cannot return: nobody serves node 1";
                   }).is_ok());
    }
    int loops = 0;
    w.run_until([&] { return ++loops > 100; });
    EXPECT_FALSE(w.coroutines_finished());
  }
  EXPECT_EQ(*destroyed, 2);  // both stacks were unwound
}

TEST(Worker, SpawnBeyondTheConfiguredCoroutinesIsRefused) {
  auto c = InProcCluster::make(1, 1, {{kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok());
  WorkerConfig wc;
  wc.coroutines = 1;
  Worker w(c->f(0).endpoint(0), 0, 1, 1, wc);
  EXPECT_TRUE(w.spawn([](Co&) {}).is_ok());
  EXPECT_EQ(w.spawn([](Co&) {}).code(), Code::kResourceExhausted);
  EXPECT_EQ(w.register_handler(1, [](RpcRequest&) {}).code(), Code::kOk);
  EXPECT_EQ(w.register_handler(1, [](RpcRequest&) {}).code(), Code::kAlreadyExists);
  wc.coroutines = 0;
  EXPECT_FALSE(wc.validate().is_ok());
}

// Callers that load their node's memory themselves instead of posting
// local ops (the engine's direct reads, checks and locks) stop with the
// ops: once the worker's membership view no longer counts its own node,
// Co::direct is false for it.
TEST(Worker, DirectIsFalseOnceTheNodeIsNoLongerAMember) {
  constexpr uint16_t kNodes = 2;
  auto c = InProcCluster::make(kNodes, 1, {{kData, 1 << 16}, {kScratch, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  WorkerConfig wc;
  wc.coroutines = 1;
  wc.direct_local_ops = true;
  std::vector<std::unique_ptr<MembershipView>> views;
  for (uint16_t n = 0; n < kNodes; ++n) views.push_back(std::make_unique<MembershipView>(kNodes));
  std::atomic<int> bad{0}, ran{0};
  auto run = run_workers(*c, wc, [&](Worker& w) {
    MembershipView* v = views[w.node()].get();
    w.set_membership(v);
    ASSERT_TRUE(w.spawn([&, v](Co& co) {
                   const NodeId self = co.node();
                   if (!co.direct(self)) ++bad;
                   NodeSet live;
                   live.set((self + 1) % kNodes);  // this node removed
                   if (!v->apply(1, live)) ++bad;
                   if (co.direct(self)) ++bad;
                   ++ran;
                 }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(ran.load(), int{kNodes});
}

}  // namespace
}  // namespace drtmx::r2
