// Locator: what the transaction engine needs from the storage layer —
// where a key's primary and backups are, how to read a record in Execute
// with a given read path, and how a backup installs a redo record. The
// store implements it per worker (its location cache and index clients are
// per worker); the engine never sees an index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "r2/sched/co.h"
#include "store/catalog.h"
#include "store/record_io.h"
#include "txn/index_ops.h"
#include "txn/policy.h"
#include "txn/record_ops.h"
#include "txn/txn.h"

namespace drtmx::txn {

class Locator {
 public:
  virtual ~Locator() = default;
  virtual uint32_t value_size(TableId t) const = 0;
  // Whether transactions may delete from `t` (store::TableSpec::deletes).
  virtual bool deletes(TableId) const { return true; }
  virtual r2::NodeId primary(TableId t, Key k) const = 0;
  // Writes up to `max` backup nodes of k's partition to `out`; returns the count.
  virtual size_t backups(TableId t, Key k, r2::NodeId* out, size_t max) const = 0;
  // Execute-phase read through `path`: on success `ref` holds the record's
  // address, value size and version, and `copy` (registered, at least
  // store::record_slot_size(value_size) bytes) its header (version,
  // identity) and value as verified when read — not sealed again
  // (record_ops.h, build_copy).
  // Returns kNone, kRecordMissing, kTornRead or kNodeFailure.
  virtual Abort read(r2::Co& co, ReadPath path, TableId t, Key k, RecordRef* ref,
                     uint8_t* copy) = 0;
  // Several reads at once; results[i] for keys[i]. The default reads one by
  // one; a store overrides it to issue them together (one doorbell per
  // peer, parallel RPCs).
  virtual void read_many(r2::Co& co, ReadPath path, std::span<const TableKey> keys, RecordRef* refs,
                         uint8_t* const* copies, Abort* results) {
    for (size_t i = 0; i < keys.size(); ++i) {
      results[i] = read(co, path, keys[i].table, keys[i].key, &refs[i], copies[i]);
    }
  }
  // Where k's record is, when the node knows it without a round trip (the
  // location cache on a read path that uses it): then read_ahead() can
  // READ it without waiting. False otherwise (the default).
  virtual bool address_of(ReadPath, TableId, Key, r2::RemoteAddr* /*addr*/,
                          uint32_t* /*incarnation*/) {
    return false;
  }
  // This node's record slot at `addr` (value size `value_size`), when the
  // caller may load it itself instead of going through the fabric: `addr`
  // is on this node, the worker runs local ops directly (r2::Co::direct:
  // asked on every call, so a node removed from the cluster stops)
  // and `addr` is the first byte of a heap slot of one of its copies. The
  // slot and its lock and ts words (store::SlotRef: apart from the slot on
  // durable nodes, hint H8); rec null otherwise (the default). A hint's
  // address can be stale like any: the caller verifies what it copies
  // (key, incarnation, seal), as it verifies a READ.
  virtual store::SlotRef local_slot(const r2::Co& /*co*/, const r2::RemoteAddr& /*addr*/,
                                    uint32_t /*value_size*/) const {
    return {};
  }
  // Whether copies of local_slot()'s records may be checked as quiet
  // copies instead of by their seals (StoreNode::quiet_copies()).
  virtual bool quiet_copies() const { return false; }
  // A hint that address_of(path, t, k) follows soon: starts loading what it
  // will look at (no effect on results). A caller about to ask for many
  // keys issues all hints first, so the lookups' cache misses overlap.
  virtual void prefetch_address(ReadPath, TableId, Key) {}
  // Whether a read of t on the cached paths fills the location cache (then
  // address_of() knows the key afterwards).
  virtual bool caches_addresses(TableId) const { return false; }
  // Where k's record is, as its primary told (a DEP_READ reply): a hint
  // for later address_of() calls (no effect where there is no cache).
  virtual void remember_address(TableId, Key, r2::NodeId /*primary*/, uint64_t /*offset*/,
                                uint32_t /*incarnation*/) {}
  // Rows of an ordered table with records with from <= key <= to,
  // ascending, at most `n`: keys, values (value_size each, back to back),
  // where each record is with the version read, and its incarnation. A row
  // whose version is 0 is another transaction's uncommitted insert
  // (index_ops.h). Every partition the range may reach is scanned:
  // range-partitioned tables continue across partitions; other schemes
  // merge the partitions' rows in key order (scan_merges). Returns kNone,
  // kNotSupported (hash table, inline values, unknown table), kTornRead or
  // kNodeFailure. The default supports no scans.
  // Whether scan() supports table `t` (an ordered table with records).
  virtual bool scannable(TableId /*t*/) const { return false; }
  // Whether a scan of [from, to] of `t` merges several partitions whose
  // keys interleave (not kRange, and the catalog cannot tell that one
  // partition holds the range): scan() merges their rows in key order.
  virtual bool scan_merges(TableId, Key /*from*/, Key /*to*/) const { return false; }
  virtual Abort scan(r2::Co&, ReadPath, TableId, Key /*from*/, Key /*to*/, size_t /*n*/,
                     std::vector<Key>* keys, std::vector<uint8_t>* values,
                     std::vector<RecordRef>* refs, std::vector<uint32_t>* incarnations) {
    keys->clear();
    values->clear();
    refs->clear();
    incarnations->clear();
    return Abort::kNotSupported;
  }
  // The keys of the rows scan() would see, from the index alone (no
  // record is read): Validate's phantom check, which compares key sets and
  // leaves the rows' versions to the read checks. It also lists keys whose
  // record is another transaction's uncommitted insert, or a delete whose
  // index entry is not yet gone (scan() skips those): to the phantom check
  // both are a change of the range. The default runs scan().
  virtual Abort scan_keys(r2::Co& co, ReadPath path, TableId t, Key from, Key to, size_t n,
                          std::vector<Key>* keys) {
    std::vector<uint8_t> values;
    std::vector<RecordRef> refs;
    std::vector<uint32_t> incs;
    return scan(co, path, t, from, to, n, keys, &values, &refs, &incs);
  }
  // The partitions a scan of [from, to] of `t` may reach, with their
  // primaries: in key order for range-partitioned tables (each holds a run
  // of the range), by id otherwise (scan_merges: their keys interleave).
  // Snapshot scans and range claims (MVCC) name partitions by these ids.
  // The default: none (no scans).
  struct ScanPart {
    store::PartitionId part = 0;
    r2::NodeId primary = 0;
  };
  virtual void scan_parts(TableId, Key /*from*/, Key /*to*/, std::vector<ScanPart>* out) const {
    out->clear();
  }
  // Validate of inserts and Commit of deletes: the index steps at the
  // primaries (index_ops.h; the store's owner RPCs). The defaults support
  // neither (every reservation kNotSupported).
  virtual Status reserve(r2::Co&, std::span<Reservation> items, uint64_t /*lock_word*/) {
    for (Reservation& r : items) r.result = Abort::kNotSupported;
    return Status::ok();
  }
  virtual Status remove_held(r2::Co&, std::span<const HeldRecord> /*items*/, uint64_t /*lock_word*/,
                             bool /*passive*/) {
    return invalid_argument("this locator cannot delete records");
  }
};

}  // namespace drtmx::txn
