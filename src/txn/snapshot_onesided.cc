// Snapshot reads of the version in place by one-sided operations, where
// the fabric's atomics are coherent with the CPU's (mvcc_onesided()); the
// DEP_READ RPC (mvcc_ops.h) remains for everything else. The thesis reads
// snapshots by RPC because walking versions one-sided is inefficient
// (Table 6-1); the newest version needs no walk, and in a short snapshot it
// is nearly always the one read. A row whose address the location cache
// knows is read as read_at() (dst/record_mvcc.h) would read it, from the
// coordinator:
//
//   DST   READ ts; then, same channel (FIFO): CAS ts from the value read to
//         the read timestamp when it is below (the raise), READ the lock
//         word when it lives apart (H8), READ the record (whose first word
//         is the lock word otherwise). Raise then load the lock, as read_at: a
//         writer that locks after it collects ts >= the read timestamp and
//         commits above it, so whatever it writes later is not visible at
//         the read timestamp (we check wts).
//   GTS   READ the record (a holder's timestamp is above every stable one).
//
// The row is answered here only if the CAS did raise (or ts was already at
// or above the read timestamp), the record was unlocked (DST), its image
// verified as the key's (seal, key, incarnation: a stale cached address
// fails) and its wts is at or below the read timestamp. Any other row — a
// lock (the primary knows whether its holder may commit below us), an older
// version to find, a deleted key — goes to the RPC.
#include <cstring>

#include "store/record.h"
#include "txn/engine.h"
#include "txn/mvcc_ops.h"

namespace drtmx::txn {

void Engine::snapshot_onesided(std::vector<SnapshotRow>* rows, std::vector<size_t>* rest) {
  rest->clear();
  const dst::SnapshotMode mode = snapshot_mode();
  // A member, not thread_local: the coroutines of this thread interleave
  // at every co_.run().
  std::vector<OneSidedRow>& got = snap_onesided_;
  got.clear();
  // The location-cache lookups are DRAM misses each: start them all.
  if (rows->size() > 1) {
    for (const SnapshotRow& row : *rows) {
      loc_.prefetch_address(ReadPath::kHybrid, row.tk.table, row.tk.key);
    }
  }
  for (size_t i = 0; i < rows->size(); ++i) {
    const SnapshotRow& row = (*rows)[i];
    OneSidedRow x{i, {}, 0, nullptr, nullptr};
    const uint32_t vs = loc_.value_size(row.tk.table);
    if (loc_.address_of(ReadPath::kHybrid, row.tk.table, row.tk.key, &x.addr, &x.incarnation)) {
      uint8_t* buf = alloc(24 + store::record_slot_size(vs));
      if (buf != nullptr) {
        x.words = reinterpret_cast<uint64_t*>(buf);
        x.image = buf + 24;
        got.push_back(x);
        continue;
      }
    }
    rest->push_back(i);
  }
  if (got.empty()) return;
  const bool dst = mode != dst::SnapshotMode::kGts;
  const bool raise = mode == dst::SnapshotMode::kDst;
  if (raise) {
    batch_.clear();
    for (const OneSidedRow& x : got) batch_.read(ts_word_of(x.addr), &x.words[0], 8);
    if (co_.run(batch_) != r2::OpStatus::kOk) {
      for (const OneSidedRow& x : got) rest->push_back(x.row);
      return;
    }
  }
  batch_.clear();
  for (const OneSidedRow& x : got) {
    const uint32_t bytes =
        static_cast<uint32_t>(store::record_slot_size(loc_.value_size((*rows)[x.row].tk.table)));
    x.words[1] = raise ? x.words[0] : 0;
    if (raise && x.words[0] < read_ts_) {
      batch_.cas(ts_word_of(x.addr), x.words[0], read_ts_, &x.words[1], /*signaled=*/false);
    }
    // The lock word after the raise: apart, its own READ; in the slot, the
    // first word of the record's READ (also after the raise, same channel).
    if (dst && locks_ != nullptr) batch_.read(lock_word_of(x.addr), &x.words[2], 8);
    batch_.read(x.addr, x.image, bytes);
  }
  const bool ran = co_.run(batch_) == r2::OpStatus::kOk;
  for (const OneSidedRow& x : got) {
    SnapshotRow& row = (*rows)[x.row];
    const uint32_t vs = loc_.value_size(row.tk.table);
    bool ok = ran;
    if (ok && raise) ok = x.words[1] == x.words[0] || x.words[1] >= read_ts_;  // raised
    store::RecordHeader h;
    std::memcpy(&h, x.image, sizeof h);
    if (ok && dst) ok = (locks_ != nullptr ? x.words[2] : h.lock) == 0;  // unlocked
    ok = ok && store::verify(x.image, vs, row.tk.key, x.incarnation) == store::RecordCheck::kOk &&
         h.version != 0 && h.wts <= read_ts_;
    if (!ok) {
      rest->push_back(x.row);
      continue;
    }
    std::memcpy(row.value, x.image + store::kValueOffset, vs);
    row.found = true;
    row.version = h.version;
    ++stats_.snapshot_reads_onesided;
  }
}

}  // namespace drtmx::txn
