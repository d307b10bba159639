// StoreLocator: the Locator (locator.h) over the real storage layer — the
// catalog says where a key's primary and backups are, and Execute-phase
// reads go through a store::tables::TableClient with the read path the
// policy chose:
//   kRpc             the primary's owner RPC returns the value and address;
//   kOneSided        READ the bucket chain, then the record (no cache);
//   kOneSidedCached  location cache -> one READ; miss -> bucket READs;
//   kHybrid          location cache -> one READ; miss -> RPC (refills it).
// Ordered tables with records read leaf (learned cache) then record.
// Tables whose values are inline in an ordered index have no records to
// lock: reads of them return kNotSupported. Scans, inserts and deletes:
// see Locator (locator.h) and index_ops.h.
//
// The verified slot image Execute needs is rebuilt from what the read
// returned (value, version, key, incarnation), so it is a consistent image
// of one committed version whichever path produced it.
//
// Threading: one StoreLocator per coroutine (it owns TableClients and
// their scratch); the NodeCaches are shared by the node.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <vector>

#include "store/catalog.h"
#include "store/tables/table_client.h"
#include "txn/index_ops.h"
#include "txn/locator.h"

namespace drtmx::store::hash {
class HashTable;
}  // namespace drtmx::store::hash

namespace drtmx::txn {

class StoreLocator final : public Locator {
 public:
  // `scratch`: registered, 64-aligned, store::tables::scratch_per_coroutine
  // bytes; `self`: this node.
  StoreLocator(const store::Catalog& c, store::tables::NodeCaches& caches,
               std::span<uint8_t> scratch, r2::NodeId self);

  uint32_t value_size(TableId t) const override;
  bool deletes(TableId t) const override;
  r2::NodeId primary(TableId t, Key k) const override;
  size_t backups(TableId t, Key k, r2::NodeId* out, size_t max) const override;
  Abort read(r2::Co& co, ReadPath path, TableId t, Key k, RecordRef* ref, uint8_t* copy) override;
  // The keys of each ordered table with records together through
  // TableClient::get_many (the leaves of all of them in one doorbell, then
  // the records in batches); other keys one by one, as read().
  void read_many(r2::Co& co, ReadPath path, std::span<const TableKey> keys, RecordRef* refs,
                 uint8_t* const* copies, Abort* results) override;
  // Through TableClient::scan (XStore learned cache: leaf READs then record
  // READs; or the owner's RPC with ReadPath::kRpc), in chunks of at most
  // kScanChunk rows for range-partitioned tables. Other schemes visit every
  // partition the range may reach (Catalog::scan_partitions): one, read in
  // chunks of up to kMergeChunk rows; several, each read so and merged in
  // key order, so the n smallest keys of the range come back.
  void scan_parts(TableId t, Key from, Key to, std::vector<ScanPart>* out) const override;
  bool scannable(TableId t) const override {
    const store::TableSpec* s = spec(t);
    return s != nullptr && s->kind == store::TableKind::kOrdered && !s->inline_values;
  }
  bool scan_merges(TableId t, Key from, Key to) const override {
    const store::TableSpec* s = spec(t);
    if (s == nullptr || s->scheme == store::PartitionScheme::kRange) return false;
    catalog_.scan_partitions(*s, from, to, &merge_parts_);
    return merge_parts_.size() > 1;
  }
  Abort scan(r2::Co& co, ReadPath path, TableId t, Key from, Key to, size_t n,
             std::vector<Key>* keys, std::vector<uint8_t>* values, std::vector<RecordRef>* refs,
             std::vector<uint32_t>* incarnations) override;
  // The index entries only (TableClient::scan_keys), in the same chunks.
  Abort scan_keys(r2::Co& co, ReadPath path, TableId t, Key from, Key to, size_t n,
                  std::vector<Key>* keys) override;
  // Hash tables on the cached paths (kOneSidedCached, kHybrid): a
  // location-cache hit.
  bool address_of(ReadPath path, TableId t, Key k, r2::RemoteAddr* addr,
                  uint32_t* incarnation) override;
  void prefetch_address(ReadPath path, TableId t, Key k) override;
  // With set_local_index(l, true): StoreNode::slot_at on this node's store.
  store::SlotRef local_slot(const r2::Co& co, const r2::RemoteAddr& addr,
                            uint32_t value_size) const override;
  bool quiet_copies() const override;
  bool caches_addresses(TableId t) const override {
    const store::TableSpec* s = spec(t);
    return s != nullptr && s->kind == store::TableKind::kHash;
  }
  void remember_address(TableId t, Key k, r2::NodeId primary, uint64_t offset,
                        uint32_t incarnation) override;
  // By the owner RPCs of index_ops.h (the primary from the catalog); keys
  // of this node directly when set_local_index() gave its store.
  Status reserve(r2::Co& co, std::span<Reservation> items, uint64_t lock_word) override;
  Status remove_held(r2::Co& co, std::span<const HeldRecord> items, uint64_t lock_word,
                     bool passive) override;
  static constexpr size_t kScanChunk = 32;
  static constexpr size_t kMergeChunk = 512;
  // This node's own index (index_ops.h); must outlive the locator.
  // `direct` (r2::Co::direct of this node): a location-cache miss in
  // address_of() for a hash partition whose primary is this node asks its
  // table (HashTable::locate) and fills the cache, instead of leaving the
  // row to read()'s owner RPC (a cold cache costs no messages).
  void set_local_index(const LocalIndex* l, bool direct = false) {
    local_ = l;
    direct_hash_ = direct && l != nullptr && l->store != nullptr;
  }

  // The client of one read path (created on first use).
  store::tables::TableClient& client(ReadPath path);

 private:
  const store::TableSpec* spec(TableId t) const { return catalog_.find(t); }
  // scan() and scan_keys(): fetch(cur, want) fills chunk_keys_ (and what
  // else the caller reads) chunk by chunk; each key kept is appended to
  // `keys` and take(i) copies the rest of row i.
  // One partition's rows read so far (a cursor of the merge).
  struct ScanChunk {
    std::vector<uint64_t> keys;
    std::vector<uint8_t> values;
    std::vector<store::tables::RecordRef> refs;
    size_t at = 0;                // the next row to take
    Key next = 0;                 // where its next chunk starts
    bool done = false;            // no rows after these
    store::PartitionId part = 0;  // kNoPartition: the start key's, then on (kRange)
  };
  static constexpr store::PartitionId kNoPartition = ~store::PartitionId{0};
  // fetch(chunk, cur, want) fills chunk's keys (and what else the caller
  // reads) with up to `want` rows from `cur` in chunk.part; each key kept
  // is appended to `keys` and take(chunk, i) copies the rest of row i.
  template <typename Fetch, typename Take>
  Abort walk_chunks(const store::TableSpec& s, Key from, Key to, size_t n, std::vector<Key>* keys,
                    Fetch fetch, Take take);

  const store::Catalog& catalog_;
  store::tables::NodeCaches& caches_;
  std::span<uint8_t> scratch_;
  r2::NodeId self_;
  const LocalIndex* local_ = nullptr;
  bool direct_hash_ = false;
  // This node's primary copy of the partition of (t, k), when direct_hash_.
  const store::hash::HashTable* own_hash(const store::TableSpec& s, Key k) const;
  std::array<std::unique_ptr<store::tables::TableClient>, 4> clients_;
  std::vector<uint8_t> value_;
  std::vector<uint8_t> many_done_;  // read_many: keys already handled
  std::vector<size_t> many_at_;     // ... one table's positions in the keys
  std::vector<uint64_t> many_keys_;
  std::vector<uint8_t> many_values_;
  std::vector<uint8_t> many_found_;
  std::vector<store::tables::RecordRef> many_refs_;
  ScanChunk one_;                   // a scan of one partition (or kRange)
  std::vector<ScanChunk> cursors_;  // a merge: one per partition
  std::vector<store::PartitionId> parts_;
  mutable std::vector<store::PartitionId> merge_parts_;  // scan_merges()
};

}  // namespace drtmx::txn
