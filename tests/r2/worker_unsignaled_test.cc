// Co::settle_unsignaled and Endpoint::posted/retired/retire_posted: the
// local buffers of unsignaled (passive ACK) ops may be reused only once
// the ops retired. An RNIC reads an unsignaled WRITE's source when it gets
// to it, after the post returned; a buffer poisoned before that reaches
// the target as poison. Two ways to look at it:
//   * LateReader, a decorator that holds every unsignaled WRITE until a
//     later signaled op of its channel or retire_posted() — the RNIC's
//     worst case, deterministic: poison lands without the settle, never
//     with it;
//   * the real fabric of the run (shm, or ucx under DRTMX_TEST_FABRIC):
//     64 KiB WRITEs (above ucx's 16 KiB staging, so from the buffer
//     itself) with the buffer poisoned right after the settle; posted and
//     retired agree afterwards.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "r2/sched/op_batch.h"
#include "r2/support/worker_cluster.h"

namespace drtmx::r2 {
namespace {

using testing::InProcCluster;
using testing::run_workers;

constexpr RegionId kData = 1, kScratch = 2;
constexpr uint8_t kPoison = 0xa5;

// Holds unsignaled WRITEs (numbered as accepted) until the channel's next
// signaled op or retire_posted(); everything else passes through.
class LateReader final : public Endpoint {
 public:
  LateReader(Endpoint* inner, uint16_t nodes) : in_(inner), ch_(nodes) {}

  ThreadId thread() const override { return in_->thread(); }
  PostResult post(const WorkRequest& wr) override {
    Chan& c = ch_[wr.remote.node];
    if (!wr.signaled && wr.verb == Verb::kWrite) {
      c.held.push_back(wr);
      ++c.posted;
      return PostResult::kOk;
    }
    release(wr.remote.node);
    const PostResult r = in_->post(wr);
    if (r == PostResult::kOk) ++c.posted, ++c.forwarded;
    return r;
  }
  void doorbell(NodeId peer) override { in_->doorbell(peer); }
  int poll(Completion* out, int max) override { return in_->poll(out, max); }
  uint32_t outstanding(NodeId peer) const override {
    return in_->outstanding(peer) + static_cast<uint32_t>(ch_[peer].held.size());
  }
  uint32_t send_queue_depth() const override { return in_->send_queue_depth(); }
  uint64_t posted(NodeId peer) const override { return ch_[peer].posted; }
  // (The inner fabric here is shm: what it was given ran at its doorbell.)
  uint64_t retired(NodeId peer) const override { return ch_[peer].forwarded; }
  void retire_posted(NodeId peer) override { release(peer); }
  uint32_t mtu() const override { return in_->mtu(); }
  SendResult send(NodeId n, ThreadId t, const void* m, uint32_t len) override {
    return in_->send(n, t, m, len);
  }
  void flush_sends() override { in_->flush_sends(); }
  int poll_messages(Message* out, int max) override { return in_->poll_messages(out, max); }
  bool is_registered(const void* p, size_t len) const override {
    return in_->is_registered(p, len);
  }

  size_t held() const {
    size_t n = 0;
    for (const Chan& c : ch_) n += c.held.size();
    return n;
  }

 private:
  struct Chan {
    std::deque<WorkRequest> held;
    uint64_t posted = 0, forwarded = 0;
  };
  // The held WRITEs go out now, in order, reading their sources now.
  void release(NodeId peer) {
    Chan& c = ch_[peer];
    if (c.held.empty()) return;
    while (!c.held.empty()) {
      if (in_->post(c.held.front()) != PostResult::kOk) break;
      c.held.pop_front();
      ++c.forwarded;
    }
    in_->doorbell(peer);
  }

  Endpoint* in_;
  std::vector<Chan> ch_;
};

// Node 0's coroutine WRITEs `blocks` blocks of `bytes` from its scratch to
// node 1's data region, unsignaled; then (if `settle`) settles; then
// poisons the scratch and reads every block back (signaled). Returns how
// many blocks node 1 holds poisoned.
struct Outcome {
  size_t poisoned_blocks = 0;
  OpStatus settled = OpStatus::kOk;
  uint64_t posted = 0, retired = 0;
  bool ran = false;
};

// The coroutine's part, on whatever endpoint its worker has: `after_run`
// looks at the endpoint once the WRITEs are posted, before the settle.
void write_settle_poison_on(Co& co, uint8_t* buf, bool settle, uint32_t bytes, uint32_t blocks,
                            Outcome& o, const std::function<void()>& after_run = nullptr) {
  for (uint32_t b = 0; b < blocks; ++b) {
    std::memset(buf + size_t{b} * bytes, static_cast<int>(b + 1), bytes);
  }
  OpBatch batch;
  for (uint32_t b = 0; b < blocks; ++b) {
    batch.write({1, kData, uint64_t{b} * bytes}, buf + size_t{b} * bytes, bytes,
                /*signaled=*/false);
  }
  (void)co.run(batch);  // nothing signaled: returns at once
  if (after_run) after_run();
  if (settle) o.settled = co.settle_unsignaled();
  Endpoint* ep = co.worker().endpoint();
  o.posted = ep->posted(1);
  o.retired = ep->retired(1);
  std::memset(buf, kPoison, size_t{bytes} * blocks);
  // A signaled READ per block: on the channel behind the WRITEs, so it
  // sees what they wrote (and releases what LateReader still held,
  // reading the poison).
  uint8_t* back = buf + size_t{bytes} * blocks;
  for (uint32_t b = 0; b < blocks; ++b) {
    ASSERT_EQ(co.read({1, kData, uint64_t{b} * bytes}, back, bytes), OpStatus::kOk);
    if (back[0] == kPoison || back[bytes - 1] == kPoison) ++o.poisoned_blocks;
  }
  o.ran = true;
}

Outcome write_settle_poison(InProcCluster& c, bool settle, uint32_t bytes, uint32_t blocks) {
  Outcome o;
  WorkerConfig wc;
  wc.coroutines = 1;
  wc.direct_local_ops = false;
  wc.rpc_timeout_ms = 5000;
  auto run = run_workers(c, wc, [&](Worker& w) {
    if (w.node() != 0) return;
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   write_settle_poison_on(co, c.base(0, kScratch), settle, bytes, blocks, o);
                 }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  return o;
}

// The same with node 0's endpoint wrapped in a LateReader.
Outcome with_late_reader(bool settle) {
  constexpr uint32_t kBytes = 4096, kBlocks = 8;
  auto c = InProcCluster::make(2, 1, {{kData, kBytes * kBlocks}, {kScratch, 2 * kBytes * kBlocks}},
                               [](FabricConfig& f) { f.backend = "shm"; });
  EXPECT_TRUE(c->error.is_ok()) << c->error.to_string();
  Outcome o;
  LateReader late(c->f(0).endpoint(0), 2);
  WorkerConfig wc;
  wc.coroutines = 1;
  wc.direct_local_ops = false;
  wc.rpc_timeout_ms = 5000;
  Worker w0(&late, 0, 2, 1, wc);
  Worker w1(c->f(1).endpoint(0), 1, 2, 1, wc);
  std::atomic<bool> done{false};
  EXPECT_TRUE(w0.spawn([&](Co& co) {
                  write_settle_poison_on(co, c->base(0, kScratch), settle, kBytes, kBlocks, o, [&] {
                    EXPECT_EQ(late.held(), kBlocks);  // the RNIC has not read them yet
                  });
                  done = true;
                }).is_ok());
  // Node 1 only answers, on a thread of its own (bounded).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::thread t1([&] {
    w1.run_until([&] { return done.load() || std::chrono::steady_clock::now() > until; });
  });
  w0.run_until([&] { return done.load() || std::chrono::steady_clock::now() > until; });
  t1.join();
  return o;
}

TEST(SettleUnsignaled, ALateReaderCarriesThePoisonUnlessTheCoroutineSettles) {
  const Outcome without = with_late_reader(false);
  ASSERT_TRUE(without.ran);
  EXPECT_EQ(without.poisoned_blocks, 8u) << "the hazard the settle is for did not show";
  EXPECT_EQ(without.retired, 0u);
  const Outcome with = with_late_reader(true);
  ASSERT_TRUE(with.ran);
  EXPECT_EQ(with.settled, OpStatus::kOk);
  EXPECT_EQ(with.poisoned_blocks, 0u);
  EXPECT_EQ(with.posted, 8u);
  EXPECT_EQ(with.retired, 8u);
}

// On the run's fabric (shm; ucx and ucx over TCP in the suite's ucx runs):
// 64 KiB WRITEs — from the buffer itself on ucx, not staged — are retired
// by the settle, and the poison that follows never reaches the target.
TEST(SettleUnsignaled, PoisonAfterTheSettleNeverReachesTheTarget) {
  constexpr uint32_t kBytes = 64 * 1024, kBlocks = 16;
  auto c = InProcCluster::make(
      2, 1, {{kData, size_t{kBytes} * kBlocks}, {kScratch, size_t{kBytes} * (kBlocks + 1)}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  for (int round = 0; round < 5; ++round) {
    const Outcome o = write_settle_poison(*c, true, kBytes, kBlocks);
    ASSERT_TRUE(o.ran);
    EXPECT_EQ(o.settled, OpStatus::kOk) << "round " << round;
    EXPECT_EQ(o.poisoned_blocks, 0u) << "round " << round;
    EXPECT_EQ(o.retired, o.posted) << "round " << round;
    EXPECT_GE(o.posted, uint64_t{kBlocks} * (round + 1)) << "round " << round;
  }
}

}  // namespace
}  // namespace drtmx::r2
