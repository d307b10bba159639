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
//         word (in the slot or apart, H8), then READ the record. Raise then
//         load the lock, then the record, as read_at: a
//         writer that locks after it collects ts >= the read timestamp and
//         commits above it, so whatever it writes later is not visible at
//         the read timestamp (we check wts).
//   GTS   READ the record (a holder's timestamp is above every stable one).
//
// The row is answered here only if the CAS did raise (or ts was already at
// or above the read timestamp), the record was unlocked (DST), its image
// verified as the key's (seal, key, incarnation: a stale cached address
// fails) and its wts is at or below the read timestamp. A DST row found
// locked, but otherwise such, gets one more round: READ the record's
// holder entry, its word then its timestamp (same channel, in that order,
// as the holder WRITEs them the other way round); when the word is the
// lock word we saw and the timestamp at or above the read timestamp, the
// holder commits above us, and the image READ under its lock — before it
// wrote anything, since the wts is ours to read — is the version to read
// (read_at's holder rule, version_store.h). Any other row — a lock whose
// holder may commit below us, an older version to find, a deleted key —
// goes to the RPC.
#include <algorithm>
#include <cstring>

#include "store/record.h"
#include "txn/engine.h"
#include "txn/mvcc_ops.h"

namespace drtmx::txn {

void Engine::snapshot_onesided(std::vector<SnapshotRow>* rows, std::span<const size_t> todo,
                               std::vector<size_t>* rest) {
  rest->clear();
  const dst::SnapshotMode mode = snapshot_mode();
  // A member, not thread_local: the coroutines of this thread interleave
  // at every co_.run().
  std::vector<OneSidedRow>& got = snap_onesided_;
  got.clear();
  // The location-cache lookups are DRAM misses each: start them all.
  if (todo.size() > 1) {
    for (size_t i : todo) {
      const SnapshotRow& row = (*rows)[i];
      loc_.prefetch_address(ReadPath::kHybrid, row.tk.table, row.tk.key);
    }
  }
  // Rows of cached tables whose address the cache lacks: found first by
  // the one-sided lookup an Execute read makes (which fills the cache),
  // as drtmh reads them, instead of a DEP_READ RPC each.
  std::vector<size_t>& lookup = snap_lookup_;
  lookup.clear();
  auto take = [&](size_t i) {
    const SnapshotRow& row = (*rows)[i];
    OneSidedRow x{i, {}, 0, nullptr, nullptr};
    if (!loc_.address_of(ReadPath::kHybrid, row.tk.table, row.tk.key, &x.addr, &x.incarnation)) {
      return false;
    }
    uint8_t* buf = alloc(40 + store::record_slot_size(loc_.value_size(row.tk.table)));
    if (buf == nullptr) return false;
    x.words = reinterpret_cast<uint64_t*>(buf);
    x.words[3] = 0;  // the holder entry's word: none READ
    x.image = buf + 40;
    got.push_back(x);
    return true;
  };
  for (size_t i : todo) {
    if (take(i)) continue;
    if (loc_.caches_addresses((*rows)[i].tk.table)) {
      lookup.push_back(i);
    } else {
      rest->push_back(i);
    }
  }
  if (!lookup.empty()) {
    std::vector<TableKey>& keys = snap_lookup_keys_;
    std::vector<RecordRef>& refs = snap_lookup_refs_;
    std::vector<uint8_t*>& copies = snap_lookup_copies_;
    std::vector<Abort>& results = snap_lookup_results_;
    keys.clear();
    copies.clear();
    for (size_t i : lookup) {
      keys.push_back((*rows)[i].tk);
      copies.push_back(alloc(store::record_slot_size(loc_.value_size((*rows)[i].tk.table))));
    }
    refs.assign(keys.size(), {});
    results.assign(keys.size(), Abort::kNone);
    const bool room = std::find(copies.begin(), copies.end(), nullptr) == copies.end();
    if (room)
      loc_.read_many(co_, ReadPath::kHybrid, keys, refs.data(), copies.data(), results.data());
    for (size_t j = 0; j < lookup.size(); ++j) {
      if (!room || results[j] != Abort::kNone || !take(lookup[j])) rest->push_back(lookup[j]);
    }
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
    // The lock word after the raise and before the record: its own READ
    // even when it is the slot's first word. One READ of the whole slot
    // gives no order among its words (on shm a memcpy may load the body
    // first): it could pair an old body, read while a writer that locked
    // before our raise held the lock, with the lock word 0 that writer
    // left after committing below our read timestamp. Loaded in this order,
    // a lock seen free means that any such writer had written its version
    // already, and the record READ after it sees that version or a newer.
    if (dst) batch_.read(lock_word_of(x.addr), &x.words[2], 8);
    batch_.read(x.addr, x.image, bytes);
  }
  const bool ran = co_.run(batch_) == r2::OpStatus::kOk;
  // Locked rows whose holder may have published a timestamp above ours:
  // their holder entries (words[3..4]; words[3] stays 0 for the others).
  if (raise && ran) {
    batch_.clear();
    for (const OneSidedRow& x : got) {
      const dst::CopyLayout* l =
          x.words[2] == 0 ? nullptr
                          : mvcc_->copy_at(x.addr.node, (*rows)[x.row].tk.table, x.addr.offset);
      uint64_t slot = 0;
      if (l == nullptr || !l->slot_at(x.addr.offset, &slot) || l->vs.lanes == 0) continue;
      const uint64_t at = dst::VersionStore::holder_offset(l->vs, slot);
      batch_.read(l->version_addr(at), &x.words[3], 8);
      batch_.read(l->version_addr(at + 8), &x.words[4], 8);
    }
    if (!batch_.empty() && co_.run(batch_) != r2::OpStatus::kOk) {
      for (const OneSidedRow& x : got) x.words[3] = 0;  // none trusted
    }
  }
  for (size_t k = 0; k < got.size(); ++k) {
    const OneSidedRow& x = got[k];
    SnapshotRow& row = (*rows)[x.row];
    const uint32_t vs = loc_.value_size(row.tk.table);
    bool ok = ran;
    if (ok && raise) ok = x.words[1] == x.words[0] || x.words[1] >= read_ts_;  // raised
    store::RecordHeader h;
    std::memcpy(&h, x.image, sizeof h);
    if (ok && dst) {
      const uint64_t lock = x.words[2];
      // Unlocked, or held by a writer that commits above the read timestamp.
      ok = lock == 0 || (x.words[3] == lock && x.words[4] >= read_ts_);
    }
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
