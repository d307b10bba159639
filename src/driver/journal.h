// The acknowledgement journal of one drtmx-node (--durability=pmem): what
// the node's coordinators told their clients, kept in a pool file beside
// the engine's (<pmem-dir>/node<N>.journal.pool), so that a restart can
// check what the recovered database must hold (recovery_check.h).
//
// Per transaction coroutine, a bounded ring of records, written by the
// engine's CommitObserver on the coroutine itself (txn/engine.h):
//   prepared(writes)  a record: the write set (table, op, key, the version
//                     Commit installs) and the workload's pending sums (what
//                     the transaction adds to the client sums if it
//                     commits, WorkloadClient::pending_sums), made
//                     persistent before the Log phase starts (built in a
//                     buffer, stored with non-temporal stores, one fence);
//   logged(true)      the record's state word becomes "acknowledged": a
//                     non-temporal store, durable at the next
//                     fence of the coroutine's thread — the next record
//                     any coroutine of the thread persists, or a fold.
//                     The acknowledgement counts from then: one fence per
//                     transaction instead of two. Until then a crash may
//                     leave the record "prepared", i.e. in flight, which
//                     the restart checks as whole or absent (it is whole);
//   logged(false)     "aborted" (likewise).
// A coroutine runs one transaction at a time, so only its newest record can
// be undecided — in flight at a crash.
//
// Bounded rings: when a record does not fit, the oldest records are folded
// into the coroutine's carried sums (acknowledged ones: their pending sums
// and a count) before their bytes are reused. The carried sums live in a
// double-buffered coroutine header (epoch + checksum; the newer valid copy
// wins), so a fold is one failure-atomic header write: a record is counted
// either in the carried sums or as a record in the ring, never both, never
// neither. Records carry a checksum (the state word excepted), so a record
// torn by a crash ends the ring. The rings keep the last records (a few
// thousand per coroutine by default, --journal-kb) for the version checks;
// the carried sums make the journal's totals exact since the load, across
// any number of crash/recover cycles.
//
// After a restart passed its checks, settle() folds every record (the
// in-flight ones by the outcome the check found) into the carried sums:
// the next run appends to empty rings and the next restart checks only what
// happened since.
//
// Persistence is the pool's (rdpma::PmemPool: flushes + fence on pmem and
// memory file systems, msync on disks) — the same mode as the engine's
// pools in the same directory.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "rdpma/pool.h"
#include "txn/engine.h"

namespace drtmx::bench {

constexpr size_t kMaxJournalSums = 16;

enum class JournalState : uint8_t { kPrepared = 1, kAcknowledged = 2, kAborted = 3 };

struct JournalWrite {
  uint32_t table = 0;
  uint32_t op = 0;  // txn::RedoOp
  uint64_t key = 0;
  uint64_t version = 0;  // what Commit installs (a delete: the deleted version + 1)
};

// One record as found in a journal.
struct JournalRecord {
  uint16_t node = 0;
  uint32_t co = 0;  // coroutine within the node (thread * coroutines + co)
  uint64_t seq = 0;
  JournalState state = JournalState::kPrepared;
  bool truncated = false;  // the write set was longer than a record holds
  uint64_t time_ns = 0;    // CLOCK_REALTIME at prepared()
  std::vector<JournalWrite> writes;
  std::vector<int64_t> sums;
  // "node 1 coroutine 3 transaction #4711"
  std::string name() const;
};

// One node's journal as found at a restart.
struct JournalScan {
  uint16_t node = 0;
  std::vector<int64_t> carried;  // kMaxJournalSums, summed over the coroutines
  uint64_t carried_commits = 0;  // acknowledged commits folded into them
  // The newest time of a record some ring folded away (0: none): a record
  // older than this may have had later transactions whose records are gone.
  uint64_t folded_until_ns = 0;
  std::vector<JournalRecord> records;  // every coroutine's, oldest first per coroutine

  std::string encode() const;
  static bool decode(const std::string& s, JournalScan* out);
};

class Journal {
 public:
  struct Options {
    std::string dir;
    uint16_t node = 0, nodes = 1, threads = 1, coroutines = 1;
    uint16_t replicas = 1;
    std::string bench;        // the workload's name
    uint32_t sums = 0;        // the workload's client sums (<= kMaxJournalSums)
    uint64_t ring_bytes = 0;  // per coroutine (creation; a restart uses the pool's)
    bool format = false;      // replace an existing journal
    bool recover = false;     // open the existing one
  };
  static std::string path(const std::string& dir, uint16_t node);
  // Creates (refusing an existing file unless format) or opens and
  // validates the journal; errors name the file and what to do.
  static Result<std::unique_ptr<Journal>> open(const Options& o);
  ~Journal();

  // The database the journal belongs to (TxnNode's stamp): set once after
  // the first start; a restart compares it.
  uint64_t stamp() const;
  Status set_stamp(uint64_t stamp);

  // The observer of coroutine `co`'s engine; `pending` gives the drawn
  // transaction's pending sums when it is prepared. Valid while the
  // journal lives.
  txn::CommitObserver* observer(uint32_t co, std::function<void(std::vector<int64_t>&)> pending);
  // The first persistence failure of an observer ("" while none).
  std::string error() const;

  // What the journal holds now (a restart, before any transaction).
  Result<JournalScan> scan() const;
  // Folds every record into the carried sums: acknowledged ones, and the
  // in-flight ones `committed` says committed (by (co, seq)); the others
  // count as aborted. Persistent when it returns.
  Status settle(const std::vector<std::pair<uint32_t, uint64_t>>& committed);

  r2::Persistence mode() const { return pool_->persistence_mode(); }
  const std::string& file() const { return pool_->path(); }
  uint64_t ring_bytes() const { return ring_bytes_; }
  uint64_t records_written() const;  // by this process's observers
  uint64_t folds() const;            // ring folds by this process's observers

  class Ring;

 private:
  Journal() = default;
  uint8_t* at(uint64_t off) const { return base_ + off; }
  Status persist(uint64_t off, uint64_t n) const;
  // Written back without waiting; durable at this thread's next persist.
  Status flush(uint64_t off, uint64_t n) const;
  // Non-temporal stores and a fence: durable when it returns.
  Status pwrite(uint64_t off, const void* in, uint64_t n) const;
  // Non-temporal stores without a fence: durable at this thread's next
  // fence (msync pools: when it returns).
  Status store_unfenced(uint64_t off, const void* in, uint64_t n) const;

  std::unique_ptr<rdpma::PmemPool> pool_;
  rdpma::FatPtr data_;
  uint8_t* base_ = nullptr;  // the allocation's first byte
  uint16_t node_ = 0;
  uint32_t cos_ = 0, sums_ = 0;
  uint64_t ring_bytes_ = 0;
  std::vector<std::unique_ptr<Ring>> rings_;
  std::atomic<bool> failed_{false};     // an observer failed: journaling stops
  std::atomic<bool> error_set_{false};  // error_ is written
  std::string error_;
  friend class Ring;
};

// The per-coroutine ring size for `kb` KiB asked (--journal-kb) and `cos`
// coroutines on a node: bounded so that a node's journal stays under 256 MiB.
uint64_t journal_ring_bytes(uint32_t kb, uint32_t cos);

}  // namespace drtmx::bench
