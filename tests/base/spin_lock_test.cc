// SpinLock: mutual exclusion under contention (more threads than cores, so
// holders are preempted and waiters must yield), try_lock's answers.
#include "base/spin_lock.h"

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

namespace drtmx {
namespace {

TEST(SpinLock, KeepsEveryIncrementOfAPlainCounterUnderContention) {
  SpinLock lock;
  // Not atomic: only the lock keeps the read-modify-writes whole. Two
  // words written in turn: a section entered twice at once would leave
  // them different.
  uint64_t counter = 0, shadow = 0;
  bool torn = false;
  constexpr int kThreads = 6, kRounds = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard<SpinLock> g(lock);
        if (counter != shadow) torn = true;
        const uint64_t c = counter;
        counter = c + 1;
        shadow = c + 1;
      }
    });
  }
  for (std::thread& t : ts) t.join();
  EXPECT_EQ(counter, uint64_t{kThreads} * kRounds);
  EXPECT_FALSE(torn);
}

TEST(SpinLock, TryLockFailsWhileHeldAndSucceedsAfter) {
  SpinLock lock;
  ASSERT_TRUE(lock.try_lock());
  bool other = true;
  std::thread t([&] { other = lock.try_lock(); });
  t.join();
  EXPECT_FALSE(other);
  lock.unlock();
  std::thread u([&] {
    other = lock.try_lock();
    if (other) lock.unlock();
  });
  u.join();
  EXPECT_TRUE(other);
}

}  // namespace
}  // namespace drtmx
