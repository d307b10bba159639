// Decisions: which of a coordinator thread's transactions are known
// committed, as one watermark (durable logs; src/txn/README.md, "Durability").
//
// Every transaction that writes log entries takes the next transaction
// number (1, 2, ...) just before its entries are built; it completes when
// every entry is persistent at its target — or, when some primary received
// no entry of it (log.cc), when its write-back there is persistent too
// (Replicator::settle). The watermark `decided()` is the
// largest n such that transactions 1..n have all completed: each of them is
// committed, whatever becomes of the rings afterwards. Entries carry the
// watermark of the moment they were built, and messages carry later ones,
// so readers learn it without a round trip of their own.
//
// Coroutines of one worker complete out of order; at most `window`
// transactions may be open at once (a worker has far fewer coroutines).
// A transaction that never completes (its log failed: a node failed) holds
// the watermark back for good: recovery decides it from the rings.
//
// Threading: one worker thread.
#pragma once

#include <cstdint>
#include <vector>

namespace drtmx::txn {

class Decisions {
 public:
  explicit Decisions(uint32_t window = 8192) : done_(window, 0) {}

  // The next transaction number (the caller builds its entries with it).
  uint64_t begin() { return ++issued_; }
  // Transaction `txn` has every entry persistent.
  void complete(uint64_t txn) {
    if (txn <= decided_ || txn > issued_) return;
    done_[txn % done_.size()] = 1;
    while (decided_ < issued_ && done_[(decided_ + 1) % done_.size()] != 0) {
      done_[(decided_ + 1) % done_.size()] = 0;
      ++decided_;
    }
  }
  uint64_t decided() const { return decided_; }
  uint64_t issued() const { return issued_; }
  // Transactions begun and not completed.
  uint64_t open() const { return issued_ - decided_; }
  uint32_t window() const { return static_cast<uint32_t>(done_.size()); }

 private:
  std::vector<uint8_t> done_;
  uint64_t issued_ = 0;
  uint64_t decided_ = 0;
};

}  // namespace drtmx::txn
