// Co::park_until / unpark, Co::set_urgent and Co::set_leading (shm fabric):
// parked coroutines wake on unpark or at their deadline, never earlier; an
// urgent coroutine made runnable runs before those queued, and one whose
// remote ops completed at the doorbell does not suspend, while its worker
// still serves messages and runs its pollers; a leading coroutine's
// periodic yields let only the loop in.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "r2/common/clock.h"
#include "r2/support/worker_cluster.h"

namespace drtmx::r2 {
namespace {

using testing::InProcCluster;
using testing::run_workers;

constexpr RegionId kData = 1;
// Charged work that reaches the worker's inline streak (64) at once.
constexpr uint32_t kStreak = 64;

TEST(WorkerPark, UnparkWakesAndTheDeadlineEndsAWaitNobodyEnds) {
  auto c = InProcCluster::make(1, 1, {{kData, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  WorkerConfig wc;
  wc.coroutines = 3;
  bool flag = false;
  bool woken = false, seen_flag = false, expired = true;
  uint64_t expired_after = 0;
  auto run = run_workers(*c, wc, [&](Worker& w) {
    // 0: waits for the flag, parked until unparked.
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   const uint64_t deadline = now_ns() + 5'000'000'000ull;  // not reached
                   while (!flag) woken = co.park_until(deadline);
                   seen_flag = flag;
                 }).is_ok());
    // 1: sets the flag after a few turns, then wakes 0.
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   for (int i = 0; i < 10; ++i) co.yield();
                   flag = true;
                   co.unpark(0);
                   co.unpark(2);  // not parked yet: no effect, its park still waits
                 }).is_ok());
    // 2: parks with nobody to wake it (an unpark that came before the park
    // does not count): returns false, and not before its deadline.
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   for (int i = 0; i < 20; ++i) co.yield();
                   const uint64_t start = now_ns();
                   expired = co.park_until(start + 3'000'000);
                   expired_after = now_ns() - start;
                 }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  for (auto& w : run.workers) EXPECT_TRUE(w->failure().is_ok());
  EXPECT_TRUE(woken) << "park_until returned false for an unparked coroutine";
  EXPECT_TRUE(seen_flag);
  EXPECT_FALSE(expired) << "park_until returned true though nobody unparked it";
  EXPECT_GE(expired_after, 3'000'000u) << "woke before its deadline";
  EXPECT_LT(expired_after, 2'000'000'000u) << "the deadline was not enforced";
}

TEST(WorkerPark, AnUrgentCoroutineRunsBeforeTheQueuedOnes) {
  for (const bool urgent : {false, true}) {
    auto c = InProcCluster::make(1, 1, {{kData, 1 << 16}});
    ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
    WorkerConfig wc;
    wc.coroutines = 4;
    std::vector<int> order;
    auto run = run_workers(*c, wc, [&](Worker& w) {
      // Queued 0, 1, 2, 3. 0 parks; 1 unparks it (2 and 3 are still
      // queued) and ends: an urgent 0 runs next, a plain one after 2 and 3.
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     co.set_urgent(urgent);
                     (void)co.park_until(now_ns() + 5'000'000'000ull);
                     order.push_back(0);
                     co.set_urgent(false);
                   }).is_ok());
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     order.push_back(1);
                     co.unpark(0);
                   }).is_ok());
      for (int k = 2; k < 4; ++k) {
        ASSERT_TRUE(w.spawn([&, k](Co&) { order.push_back(k); }).is_ok());
      }
    });
    EXPECT_FALSE(run.timed_out);
    for (auto& w : run.workers) EXPECT_TRUE(w->failure().is_ok());
    const std::vector<int> want =
        urgent ? std::vector<int>{1, 0, 2, 3} : std::vector<int>{1, 2, 3, 0};
    EXPECT_EQ(order, want) << (urgent ? "urgent" : "plain");
  }
}

// Co::charge: work done in place of local operations counts toward the
// worker's yield streak. A coroutine that charges a long run of it lets the
// others in part-way (not urgent), and runs it through while urgent.
TEST(WorkerPark, ChargedWorkYieldsToTheOthersUnlessUrgent) {
  for (const bool urgent : {false, true}) {
    auto c = InProcCluster::make(1, 1, {{kData, 1 << 16}});
    ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
    WorkerConfig wc;
    wc.coroutines = 2;
    int other_ran_at = -1;  // how many charges 0 had made when 1 first ran
    int charges = 0;
    auto run = run_workers(*c, wc, [&](Worker& w) {
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     co.set_urgent(urgent);
                     for (charges = 0; charges < 100; ++charges) co.charge(8);
                     co.set_urgent(false);
                   }).is_ok());
      ASSERT_TRUE(w.spawn([&](Co&) { other_ran_at = charges; }).is_ok());
    });
    EXPECT_FALSE(run.timed_out);
    for (auto& wk : run.workers) EXPECT_TRUE(wk->failure().is_ok());
    if (urgent) {
      EXPECT_EQ(other_ran_at, 100) << "an urgent coroutine yielded on charged work";
    } else {
      EXPECT_GT(other_ran_at, 0);
      EXPECT_LT(other_ran_at, 100) << "800 charged operations without a yield";
    }
  }
}

// An urgent coroutine (a transaction holding locks) whose one-sided ops on
// another node are complete when it would suspend (shm executes them at the
// doorbell) runs on without a turn of the others; a plain one suspends at
// its first op. With a fabric delay the ops are not complete yet, and the
// urgent one suspends too.
TEST(WorkerPark, AnUrgentCoroutineDoesNotSuspendForOpsAlreadyComplete) {
  if (testing::test_fabric() != "shm") {
    GTEST_SKIP() << "needs ops complete at the doorbell (shm executes them there)";
  }
  for (const uint64_t delay : {uint64_t{0}, uint64_t{200'000}}) {
    for (const bool urgent : {false, true}) {
      auto c = InProcCluster::make(2, 1, {{kData, 1 << 16}},
                                   [&](FabricConfig& f) { f.delay_ns = delay; });
      ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
      WorkerConfig wc;
      wc.coroutines = 2;
      int other_ran_at = -1;  // how many ops 0 had completed when 1 first ran
      int done = 0;
      OpStatus first_error = OpStatus::kOk;
      auto run = run_workers(*c, wc, [&](Worker& w) {
        if (w.node() != 0) return;  // node 1 only serves its memory
        ASSERT_TRUE(w.spawn([&](Co& co) {
                       co.set_urgent(urgent);
                       // The local buffer: registered memory of node 0.
                       auto* v = reinterpret_cast<uint64_t*>(c->base(0, kData));
                       for (done = 0; done < 5; ++done) {
                         *v = static_cast<uint64_t>(done);
                         const RemoteAddr at{1, kData, 64};
                         OpStatus s = co.write(at, v, sizeof *v);
                         if (s == OpStatus::kOk) s = co.read(at, v, sizeof *v);
                         if (s != OpStatus::kOk && first_error == OpStatus::kOk) first_error = s;
                       }
                       co.set_urgent(false);
                     }).is_ok());
        ASSERT_TRUE(w.spawn([&](Co&) { other_ran_at = done; }).is_ok());
      });
      EXPECT_FALSE(run.timed_out);
      for (auto& wk : run.workers) EXPECT_TRUE(wk->failure().is_ok());
      EXPECT_EQ(first_error, OpStatus::kOk);
      const std::string what =
          std::string(urgent ? "urgent" : "plain") + ", delay " + std::to_string(delay) + " ns";
      if (urgent && delay == 0) {
        EXPECT_EQ(other_ran_at, 5) << what << ": suspended for ops complete at the doorbell";
      } else {
        EXPECT_EQ(other_ran_at, 0) << what << ": ran its ops without a turn of the others";
      }
    }
  }
}

// Node 0's coroutine, urgent, WRITEs to node 1 (complete at the doorbell
// on shm) until done() or a 10 s deadline, with *in_run set meanwhile.
template <class Done>
void urgent_writes_until(Co& co, InProcCluster& c, bool* in_run, Done done) {
  co.set_urgent(true);
  *in_run = true;
  auto* v = reinterpret_cast<uint64_t*>(c.base(0, kData));
  const uint64_t deadline = now_ns() + 10'000'000'000ull;
  while (!done() && now_ns() < deadline) {
    if (co.write({1, kData, 64}, v, sizeof *v) != OpStatus::kOk) break;
  }
  *in_run = false;
  co.set_urgent(false);
}

// While an urgent coroutine runs through ops without suspending, its worker
// still serves the requests other nodes send it (the loop would have while
// it was suspended): node 1 calls node 0 and gets its reply before node 0's
// coroutine ends its run of ops, and no other coroutine of node 0 ran
// in between.
TEST(WorkerPark, AnUrgentCoroutineRunningThroughOpsStillServesRequests) {
  if (testing::test_fabric() != "shm") {
    GTEST_SKIP() << "needs ops complete at the doorbell (shm executes them there)";
  }
  constexpr uint16_t kServed = 9;
  auto c = InProcCluster::make(2, 1, {{kData, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  WorkerConfig wc;
  wc.coroutines = 2;
  std::atomic<bool> served{false}, replied{false}, started{false};
  bool served_in_run = false, other_ran_in_run = false, in_run = false;
  auto run = run_workers(*c, wc, [&](Worker& w) {
    if (w.node() == 1) {
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     // Calls once node 0's run of ops began (bounded): a
                     // request served before it would prove nothing.
                     const uint64_t deadline = now_ns() + 10'000'000'000ull;
                     while (!started && now_ns() < deadline) co.yield();
                     RpcBuffer reply;
                     const Status s = co.call({0, 0}, kServed, "x", 1, reply);
                     EXPECT_TRUE(s.is_ok()) << s.to_string();
                     replied = true;
                   }).is_ok());
      return;
    }
    ASSERT_TRUE(w.register_handler(kServed, [&](RpcRequest& r) {
                   served = true;
                   served_in_run = in_run;
                   r.reply("y", 1);
                 }).is_ok());
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   started = true;  // no suspension before the run sets in_run
                   urgent_writes_until(co, *c, &in_run, [&] { return replied.load(); });
                 }).is_ok());
    ASSERT_TRUE(w.spawn([&](Co&) { other_ran_in_run = in_run; }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  for (auto& wk : run.workers) EXPECT_TRUE(wk->failure().is_ok());
  EXPECT_TRUE(served) << "the request was never served";
  EXPECT_TRUE(served_in_run) << "served only after the urgent run of ops ended";
  EXPECT_TRUE(replied.load());
  EXPECT_FALSE(other_ran_in_run) << "the urgent coroutine suspended for ops already complete";
}

// The same for the worker's pollers (a node's version-store GC, snapshot
// floor and backup appliers are pollers): while an urgent coroutine runs
// through ops without suspending, the pollers still run, as the loop would
// have run them while it was suspended. Without that, a long run of a lock
// holder's ops starved the version store's GC (docs/design-notes.md).
TEST(WorkerPark, AnUrgentCoroutineRunningThroughOpsStillRunsThePollers) {
  if (testing::test_fabric() != "shm") {
    GTEST_SKIP() << "needs ops complete at the doorbell (shm executes them there)";
  }
  auto c = InProcCluster::make(2, 1, {{kData, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  WorkerConfig wc;
  wc.coroutines = 2;
  int polls_in_run = 0;
  bool other_ran_in_run = false, in_run = false;
  auto run = run_workers(*c, wc, [&](Worker& w) {
    if (w.node() != 0) return;  // node 1 only serves its memory
    w.add_poller([&] {
      if (in_run) ++polls_in_run;
      return false;
    });
    ASSERT_TRUE(w.spawn([&](Co& co) {
                   urgent_writes_until(co, *c, &in_run, [&] { return polls_in_run >= 3; });
                 }).is_ok());
    ASSERT_TRUE(w.spawn([&](Co&) { other_ran_in_run = in_run; }).is_ok());
  });
  EXPECT_FALSE(run.timed_out);
  for (auto& wk : run.workers) EXPECT_TRUE(wk->failure().is_ok());
  EXPECT_GE(polls_in_run, 3) << "the pollers did not run during the urgent run of ops";
  EXPECT_FALSE(other_ran_in_run) << "the urgent coroutine suspended for ops already complete";
}

// A leading coroutine's periodic yields (charged work) let the loop poll
// (the pollers run between them) but resume it before the coroutines
// queued, which run only once it stopped leading; a plain coroutine lets
// them in at its first such yield. An explicit yield() lets them in either
// way (spin-waits rely on it).
TEST(WorkerPark, ALeadingCoroutineYieldsOnlyToTheLoop) {
  for (const bool leading : {false, true}) {
    auto c = InProcCluster::make(1, 1, {{kData, 1 << 16}});
    ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
    WorkerConfig wc;
    wc.coroutines = 3;
    int done = 0, polls_in_run = 0;
    int other_ran_at[2] = {-1, -1};  // how many yields 0 had done when 1, 2 first ran
    int yielded_at = -1;             // other_ran_at[0] after the leader's yield()
    bool in_run = false;
    auto run = run_workers(*c, wc, [&](Worker& w) {
      w.add_poller([&] {
        if (in_run) ++polls_in_run;
        return false;
      });
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     co.set_leading(leading);
                     in_run = true;
                     for (done = 0; done < 5; ++done) co.charge(kStreak);
                     if (leading) {
                       co.yield();
                       yielded_at = other_ran_at[0];
                     }
                     in_run = false;
                     co.set_leading(false);
                   }).is_ok());
      for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(w.spawn([&, i](Co&) { other_ran_at[i] = done; }).is_ok());
      }
    });
    EXPECT_FALSE(run.timed_out);
    for (auto& wk : run.workers) EXPECT_TRUE(wk->failure().is_ok());
    const std::string what = leading ? "leading" : "plain";
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(other_ran_at[i], leading ? 5 : 0) << what << ": coroutine " << i + 1;
    }
    if (leading) {
      EXPECT_GE(polls_in_run, 5) << "the loop did not poll between its yields";
      EXPECT_EQ(yielded_at, 5) << "yield() of a leader did not let the others in";
    }
  }
}

}  // namespace
}  // namespace drtmx::r2
