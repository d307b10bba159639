// StoreNode: the owner side of the storage layer on one node — every
// partition copy (primary or backup) the catalog places here, built in the
// regions growable_regions_of() planned, and the RPC services that let other nodes
// change them and look them up (docs/architecture.md).
//
// What it builds per hosted partition copy of a table:
//   kHash                 RecordHeap + hash::HashTable, served by HashService
//   kOrdered, inline      xstore::XTree (values in the leaves), XStoreService
//   kOrdered, records     RecordHeap + XTree whose values are RecordAddr
//                         (plan.h), records written with the record.h
//                         protocol (RecordTree below); XStoreService serves
//                         the index, so clients READ leaf then record.
// Service ids (the `table` of hash RPCs, the `tree` of XStore RPCs, the
// table id in the location cache): service_id(table, partition).
//
// Who calls what: create() once after the fabric registered the regions
// (before NodeRuntime::launch); register_handlers() from each worker's
// setup; load() from a loader thread before the run (any thread; the
// structures are concurrent); the accessors from owner-side code (the
// transaction layer's commit and backup appliers).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/divider.h"
#include "base/status.h"
#include "r2/fabric.h"
#include "r2/sched/worker.h"
#include "store/catalog.h"
#include "store/grow_ahead.h"
#include "store/hash/hash_service.h"
#include "store/hash/hash_table.h"
#include "store/heap.h"
#include "store/placement.h"
#include "store/tables/plan.h"
#include "store/tables/record_tree.h"
#include "store/xstore/server/xstore_service.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::tables {

inline uint32_t service_id(TableId table, PartitionId partition) {
  return (table << 20) | partition;
}

// One partition copy on this node.
struct LocalPartition {
  const TableSpec* table = nullptr;
  PartitionId partition = 0;
  PartitionPlan plan;
  std::unique_ptr<RecordHeap> heap;       // hash, ordered-with-records
  std::unique_ptr<hash::HashTable> hash;  // kHash
  std::unique_ptr<xstore::XTree> tree;    // kOrdered
  std::unique_ptr<RecordTree> records;    // kOrdered with records
  // Where its records' lock and ts words are: in the slots, or apart in
  // the copy's lock area (durable nodes, H8: plan.h "Lock regions").
  SlotWords words;
  // Record addresses to slots (slot_at) without a divide instruction:
  // the heap's slot size.
  Divider slot_div;
};

// A committed change of a record (log appliers, recovery replay).
enum class Change : uint8_t { kInsert, kUpdate, kDelete };

// Memory of one table's copies on this node (StoreNode::memory()).
struct TableMemory {
  TableId table = 0;
  uint32_t copies = 0;       // partition copies hosted
  uint64_t rows = 0;         // records in use (0 for inline values: no records)
  uint64_t row_bytes = 0;    // their slots' bytes
  uint64_t index_bytes = 0;  // buckets / leaves in use
  uint64_t backed = 0;       // memory backed (heaps, indexes, lock entries)
  uint64_t reserved = 0;     // address space of the copies' areas
};

// What StoreNode::recover() found in the hosted copies' slots (sums).
struct StoreRecovery {
  uint64_t partitions = 0;
  uint64_t records = 0;  // live records indexed again
  HeapRecovery slots;    // counts summed (live left empty)
};

class StoreNode {
 public:
  using Change = tables::Change;
  // `fabric` must have registered every region of growable_regions_of(
  // catalog, node, locks_apart) (and outlive this object, as must the
  // catalog).
  // `locks_apart` (durable nodes, H8): the records' lock and ts words live
  // in the tables' lock regions, not in the slots. Errors name the table
  // and partition whose region is missing or too small.
  static Result<std::unique_ptr<StoreNode>> create(const Catalog& catalog, r2::Fabric& fabric,
                                                   bool locks_apart = false);
  // As create(), over regions whose record slots survived a restart
  // (durable pools): the heaps are rebuilt from their slots
  // (RecordHeap::recover) and every index (hash buckets, XStore leaves) is
  // built anew from the live records — indexes are never trusted after a
  // crash, the records are (their seals prove them whole). Tables with
  // inline values are refused (they keep no records to rebuild from).
  // `backed_end(region, begin, end)`: the end of the last byte in [begin,
  // end) of this node's `region` that was ever backed (a pool's data
  // ranges: rdpma), so a heap scans what its slots were, not its address
  // space; null: the whole heap range (small test areas).
  using BackedEnd = std::function<uint64_t(r2::RegionId region, uint64_t begin, uint64_t end)>;
  static Result<std::unique_ptr<StoreNode>> recover(const Catalog& catalog, r2::Fabric& fabric,
                                                    StoreRecovery* out, bool locks_apart = false,
                                                    BackedEnd backed_end = {});
  // Something that keeps a word per record slot elsewhere (MVCC chain
  // heads) backs it for slots [from, to) of (table, partition) when a heap
  // grows: called at once for the slots backed so far, then from the
  // growing heap (under its lock; an error fails that insert). Set before
  // transactions run.
  using HeapGrowth =
      std::function<Status(TableId table, PartitionId p, uint64_t from_slot, uint64_t to_slot)>;
  Status set_heap_growth(HeapGrowth fn);
  // Per table with a copy here: rows, backed memory, address space.
  std::vector<TableMemory> memory() const;
  // Restart: installs a committed change found in a log (recovery replay):
  // an update or insert of `key` at `version` unless this copy holds the
  // key at a version >= it (then nothing); a delete of the key if this
  // copy holds it below `version`. Returns the offset of the slot written
  // (0 when nothing changed). Not concurrent with transactions.
  Result<uint64_t> replay(const TableSpec& t, uint64_t key, Change c, uint64_t version,
                          std::span<const uint8_t> value);

  // Registers the hash and XStore handlers on `w` (call for every worker).
  Status register_handlers(r2::Worker& w);

  // Puts `key` into this node's copy of its partition (the loader runs on
  // every node that hosts the partition, with the same data). An existing
  // key is overwritten. kNotFound if this node hosts no copy; other errors
  // as the table's (out of space, oversized value).
  Status load(const TableSpec& t, uint64_t key, std::span<const uint8_t> value);
  // Backup copies: installs a committed redo record (the transaction
  // layer's log applier) — `value` at exactly `version` unless the local
  // copy is already at a version >= it (entries of one record may arrive
  // out of order across coordinators); `remove` deletes the key. True when
  // the copy changed. Hash tables and ordered tables with records only.
  Result<bool> install(const TableSpec& t, uint64_t key, uint64_t version,
                       std::span<const uint8_t> value, bool remove);
  // A hint before install()/get_local() of `key`: prefetches the index
  // memory the call will touch first (hash tables; a no-op otherwise).
  void prefetch(const TableSpec& t, uint64_t key) const;
  // The step after prefetch(), once its bucket had time to arrive: the
  // record slot the key's head bucket points to (hash tables; a no-op
  // otherwise, or when the key is not in its head bucket). Returns the
  // slot's offset in the table's region, or false when it prefetched none.
  bool prefetch_record(const TableSpec& t, uint64_t key, uint64_t* offset) const;
  // Primaries, for transactions (txn/index_ops.h): reserve publishes `key`
  // locked with `lock_word` and not yet committed (HashTable::reserve,
  // RecordTree::reserve) and returns where the record is; remove_held
  // deletes a record the caller holds locked with `lock_word`. kNotFound
  // when this node is not the primary of key's partition (or, for
  // remove_held, the record is not the one held); kInvalidArgument for a
  // table with inline values; others as the tables report them.
  // *base: the version the reserved record commits above (base + 1).
  Result<RecordAddr> reserve(const TableSpec& t, uint64_t key, uint64_t lock_word, uint64_t* base);
  Status remove_held(const TableSpec& t, uint64_t key, const RecordAddr& a, uint64_t lock_word);
  // Backups: applies a committed change of `key` if it is the next one for
  // this copy (HashTable::apply_in_order): true when applied, false when an
  // earlier change of the key has not arrived yet (retry later).
  // `wrote` (optional): the offset in the table's region of the record
  // slot the change wrote (durable copies persist it).
  Result<bool> apply_in_order(const TableSpec& t, uint64_t key, Change c, uint64_t version,
                              std::span<const uint8_t> value, const ApplyMvcc* mvcc = nullptr,
                              uint64_t* wrote = nullptr);
  // Owner-side read of the local copy (tests, audits): true + value when
  // present; `version` (optional): the record's (0 for inline values).
  Result<bool> get_local(const TableSpec& t, uint64_t key, std::span<uint8_t> value,
                         uint64_t* version = nullptr) const;

  // The record slot at (region, offset) — an address a request names —
  // with its lock and ts words, when it is a slot of a hosted copy's heap
  // whose records hold `value_size` bytes; else rec == nullptr.
  SlotRef slot_at(r2::RegionId region, uint64_t offset, uint32_t value_size) const;
  bool locks_apart() const { return locks_apart_; }
  // Whether this node's readers of its own records may take a quiet copy
  // (record_io.h, copy_quiet) instead of verifying the seal: every table
  // region volatile, one-sided WRITEs CPU stores (FabricInfo), a CPU with
  // total store order, lock words in the slots.
  bool quiet_copies() const { return quiet_copies_; }

  // Failover (txn/failover.h), while no transaction runs: the records of
  // the hosted copies whose lock word `stale` accepts (held by a removed
  // node), and clearing such a lock (only if the word still holds `lock`).
  struct HeldSlot {
    TableId table = 0;
    uint64_t key = 0;
    uint64_t version = 0;
    uint64_t offset = 0;  // in the table's region
    uint64_t lock = 0;
    uint32_t incarnation = 0;
  };
  std::vector<HeldSlot> locked_slots(const std::function<bool(uint64_t lock)>& stale) const;
  void clear_lock(TableId table, uint64_t offset, uint64_t lock);
  // Failover with transactions running: sets the record at `offset` (a
  // slot of a hosted copy, locked by `lock`) to `value` at `version`
  // without releasing the lock (clear_lock later). Errors: no such slot,
  // the lock word is not `lock`, a value of the wrong size.
  Status write_held(TableId table, uint64_t offset, uint64_t lock, uint64_t version,
                    std::span<const uint8_t> value);

  // This node's copy of hash table `table`'s partition p when this node is
  // its primary now, else nullptr. For a coordinator's own reads (the
  // local shortcuts): HashTable::locate answers what its location cache
  // would, from the owner's buckets. Scans the few copies of the table this
  // node hosts (no map lookup).
  const hash::HashTable* primary_hash(const TableSpec& t, PartitionId p) const {
    if (t.id >= areas_.size()) return nullptr;
    for (const LocalPartition* c : areas_[t.id]) {
      if (c->partition == p) return c->hash && is_primary(t, p) ? c->hash.get() : nullptr;
    }
    return nullptr;
  }
  // The local copy of (table, partition), or nullptr.
  LocalPartition* partition(TableId table, PartitionId p);
  // The hosted partition whose record heap has a slot at `offset` of
  // `table`'s region (in its committed range), or nullptr.
  LocalPartition* heap_slot(TableId table, uint64_t offset) const;
  const LocalPartition* partition(TableId table, PartitionId p) const;
  const Catalog& catalog() const { return catalog_; }
  // Whether this node holds the primary copy of partition p now (the
  // placement after failures, or the catalog's).
  bool is_primary(const TableSpec& t, PartitionId p) const {
    return (placement_ != nullptr ? placement_->primary(t, p, node_)
                                  : catalog_.replicas_of(t, p, node_).primary) == node_;
  }
  // Where primaries are now (after failures); null: the catalog's placement.
  const Placement* placement() const { return placement_; }
  void set_placement(const Placement* p) { placement_ = p; }
  NodeId16 node() const { return node_; }

 private:
  StoreNode(const Catalog& c, NodeId16 node, bool locks_apart)
      : catalog_(c), node_(node), locks_apart_(locks_apart) {}
  Status build(const TableSpec& t, PartitionId p, r2::Fabric& fabric,
               StoreRecovery* recovering = nullptr);

  const Catalog& catalog_;
  const Placement* placement_ = nullptr;
  NodeId16 node_;
  bool locks_apart_;
  bool quiet_copies_ = false;
  std::unordered_map<uint64_t, std::unique_ptr<LocalPartition>> parts_;  // (table << 32) | p
  // By table id: the hosted copies in area order (slot_at).
  std::vector<std::vector<LocalPartition*>> areas_;
  std::vector<Divider> area_div_;      // by table id: its copies' area size (slot_at)
  std::vector<uint8_t*> region_base_;  // by table id: its table region's base
  // Whether a primary may take a new row now (primary_may_grow).
  bool primary_may_grow() const;

  HeapGrowth heap_growth_;
  BackedEnd backed_end_;
  // Tables in the machine's memory (volatile, or pools on tmpfs): inserts
  // into primaries stop while less than 3/16 of it is available, so that
  // the backups' growth (which stops at 2/16, r2/common/growable.h) always
  // finds room for what the primaries committed. Checked at most every
  // 20 ms (a read of /proc/meminfo).
  bool tables_in_memory_ = false;
  mutable std::atomic<uint64_t> room_checked_ns_{0};
  mutable std::atomic<bool> room_ok_{true};
  hash::HashService hash_service_;
  xstore::XStoreService xstore_service_;
  // Backs the record heaps' next extents off the inserting threads. Last:
  // destroyed (its thread joined) before anything a task touches.
  GrowAhead ahead_;
};

}  // namespace drtmx::store::tables
