// Snapshot reads of rows this node is the primary of, where the worker
// runs local operations directly (Co::direct): the DEP_READ handler's
// per-row step, dst::read_at, on the record in this process's memory —
// what an RPC to this worker would run inline, without building a request,
// a reply and an operation batch per row, and what the one-sided reads do
// (raise ts, then load the lock word, then the record) with plain atomics.
// Same contract as the handler: the newest version at or below the read
// timestamp, an older one from the version store, a lock holder waited for
// unless it commits above the read timestamp.
//
// A row goes to *rest — the one-sided reads or the DEP_READ RPC, which
// defers a locked row until its holder is gone and answers the graveyard —
// when it is not this node's, when the key is not in the index (deleted,
// or never there), when its holder may commit below the read timestamp
// (kLocked), or when its slot moved under us.
//
// The rows are read in three passes so that their cache misses overlap:
// the location-cache entries are prefetched, then the records found are,
// then each is read.
#include "store/record.h"
#include "store/word_copy.h"
#include "txn/engine.h"

namespace drtmx::txn {

void Engine::snapshot_direct(std::vector<SnapshotRow>* rows, std::vector<size_t>* rest) {
  rest->clear();
  std::vector<DirectRow>& mine = snap_direct_;
  mine.clear();
  const r2::NodeId self = co_.node();
  if (!co_.direct(self)) {
    for (size_t i = 0; i < rows->size(); ++i) rest->push_back(i);
    return;
  }
  if (rows->size() > 1) {
    for (const SnapshotRow& row : *rows) {
      if (row.primary == self) loc_.prefetch_address(ReadPath::kHybrid, row.tk.table, row.tk.key);
    }
  }
  const store::Catalog& catalog = mvcc_->catalog();
  const bool quiet = loc_.quiet_copies();
  for (size_t i = 0; i < rows->size(); ++i) {
    const SnapshotRow& row = (*rows)[i];
    if (row.primary != self) {
      rest->push_back(i);
      continue;
    }
    const uint32_t vs = loc_.value_size(row.tk.table);
    DirectRow d{i, {}, 0};
    r2::RemoteAddr addr;
    bool found =
        loc_.address_of(ReadPath::kHybrid, row.tk.table, row.tk.key, &addr, &d.incarnation);
    found = found && addr.node == self && mvcc_->resolve(addr.region, addr.offset, vs, &d.rec);
    if (!found) {
      // Not cached (an ordered table, or a hash row the cache lost): the
      // index here says where it is.
      const store::TableSpec* t = catalog.find(row.tk.table);
      if (t == nullptr) {
        rest->push_back(i);
        continue;
      }
      Result<dst::MvccNode::Record> r = mvcc_->locate(*t, row.tk.key, &d.incarnation);
      if (!r.is_ok()) {
        rest->push_back(i);
        continue;
      }
      d.rec = *r;
    }
    // The ts word is raised (a write); the rest of the slot only loaded —
    // of a row wanted for a part, the header and the part.
    __builtin_prefetch(d.rec.ts, 1);
    if (row.part.whole() || !quiet) {
      store::prefetch_lines(d.rec.rec, store::record_slot_size(vs));
    } else {
      __builtin_prefetch(d.rec.rec);
      const uint32_t first = row.part.from & ~63u;
      store::prefetch_lines(d.rec.rec + first, row.part.to - first);
    }
    mine.push_back(d);
  }
  const dst::SnapshotMode mode = snapshot_mode();
  for (const DirectRow& d : mine) {
    SnapshotRow& row = (*rows)[d.row];
    const uint32_t vs = loc_.value_size(row.tk.table);
    dst::VersionInfo info;
    // Into the row's copy (a whole slot, 64-byte aligned: snapshot_fetch).
    const dst::ReadAt a =
        dst::read_at(d.rec.at(), row.tk.key, d.incarnation, vs, read_ts_, mode, d.rec.vs,
                     d.rec.slot, row.value - store::kValueOffset, &info, quiet, row.part);
    if (a != dst::ReadAt::kValue) {
      rest->push_back(d.row);
      continue;
    }
    row.found = true;
    row.version = info.version;
    ++stats_.snapshot_reads_direct;
  }
  charge_rows(mine.size());
}

}  // namespace drtmx::txn
