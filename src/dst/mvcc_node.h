// MvccNode: the MVCC state of one node — a VersionStore per partition copy
// (primary or backup) of every table with records, carved from one
// registered region; the range timestamps that stand for a partition's key
// set in snapshot scans and absent-key reads; the node's SnapshotFloor and
// the latest floors of its peers, whose minimum is the cluster-wide
// low-water mark that GC uses; per worker a LocalClock.
//
// Range timestamps. A snapshot that scans a partition's keys, or finds a
// key absent, claims the key set: it raises the partition's range_ts to
// its read timestamp (never lowers it). A transaction that inserts into
// the partition reads range_ts after its reservation is published (store
// then load; the snapshot raises then scans: store then load) and commits
// above it — so an insert a snapshot could not have seen gets a later
// timestamp, or the snapshot meets the reservation and waits for it. A
// read-write transaction that scanned a range raises it to its commit
// timestamp before its phantom check, for the same reason. Per partition,
// not per range: coarse (unrelated inserts may commit a little later in
// timestamp order), but one word and no index changes. With one-sided
// MVCC the word is in the copy's version store area (registered memory),
// and a coordinator claims a range with CAS (txn/mvcc_onesided.cc) instead
// of an RPC; the owner's raises are CPU atomics on the same word.
//
// Low-water mark. Each node computes its floor (floor.h) and sends it to
// every other node; lwm() is the minimum of its own and the latest floor
// heard from each peer, 0 until every peer has been heard from (nothing is
// collected before). Floors only grow, so late or reordered messages are
// harmless. No central server.
//
// Threading: resolve/locate/range_ts/clock from any worker; set_peer_floor
// and publish from whichever thread the caller chooses (TxnNode: worker 0's
// poller); gc from any thread (each store has its own mutex).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/divider.h"
#include "base/status.h"
#include "dst/floor.h"
#include "dst/oracle.h"
#include "dst/timestamp.h"
#include "dst/version_store.h"
#include "r2/fabric.h"
#include "store/catalog.h"
#include "store/tables/store_node.h"

namespace drtmx::dst {

struct MvccConfig {
  // Each partition copy's version store holds this share of its table's
  // record capacity (in versions), and at least min_versions (each lane too,
  // below; --min-versions).
  double versions_pct = 2;
  uint64_t min_versions = 4096;
  // This node's clocks run this many microseconds ahead (negative: behind)
  // — simulated clock skew, to study freshness; correctness never depends
  // on it.
  int64_t clock_skew_us = 0;
  // UNSAFE, for tests only: snapshot reads skip the ts raise of DEP_READ.
  // Shows the read-only anomaly DST exists to prevent (tests/txn).
  bool unsafe_skip_read_raise = false;
  uint16_t workers = 1;     // worker threads of the node (every node the same)
  uint16_t coroutines = 1;  // transaction coroutines per worker
  // One-sided Validate/Commit (txn/mvcc_onesided.cc): every version store
  // gets a lane per coordinator thread of the cluster (version_store.h),
  // each of max(min_versions, versions / lanes) versions: a coordinator
  // pushes as fast as a whole node's commits into its own lane (TPC-C's
  // New-Orders: ~10 STOCK versions each). Under the low-water mark's lag
  // behind 20-district Stock-Levels STOCK's lanes fill at times with the
  // default 4096 (1 % of pushes refused over 60 s, docs/design-notes.md);
  // --min-versions raises the floor.
  bool lanes = false;
};

// Where a partition copy's records and version store are on its node —
// computed from the catalog alone, so a coordinator addresses another
// node's copies without asking it (MvccNode::copy_at).
struct CopyLayout {
  uint32_t id = 0;  // dense over every copy of the cluster (LaneCursor index)
  store::NodeId16 node = 0;
  store::TableId table = 0;
  store::PartitionId partition = 0;
  uint64_t area_offset = 0, area_end = 0;  // the copy's area in its table region
  uint64_t heap_offset = 0, slot_bytes = 0, slots = 0;
  uint64_t vs_offset = 0;  // the version store's area in kVersionRegion
  VersionStoreOptions vs;
  // Where `offset` of the copy's version-store area is (kVersionRegion).
  r2::RemoteAddr version_addr(uint64_t offset) const;
  // Whether `offset` (in the table region) is the start of a record slot
  // of this copy's heap, and which one.
  bool slot_at(uint64_t offset, uint64_t* slot) const {
    if (offset < heap_offset || offset >= area_end) return false;
    return slot_div.exact(offset - heap_offset, slot) && *slot < slots;
  }
  Divider slot_div;  // slot_bytes (slot_at, on every one-sided MVCC lock)
};

// A coordinator thread's view of its lane in one copy's version store
// (version_store.h, "Lanes"); only that thread touches it.
struct LaneCursor {
  // The head word of the lane header is a bound, not the head: the
  // coordinator raises it to head + reserved + kBoundSlack in a lock batch
  // when head + reserved passes it, so one WRITE covers many commits and
  // every slot position written is below the bound in the header.
  static constexpr uint64_t kBoundSlack = 64;
  bool synced = false;      // head and tail READ from the lane header once
  uint64_t head = 0;        // next position to write
  uint64_t tail = 0;        // the lane's tail as last READ (<= the real one)
  uint64_t reserved = 0;    // promised to this thread's locked writers
  uint64_t published = 0;   // the bound last written to the lane header
  uint64_t range_seen = 0;  // the copy's range timestamp as last seen (a CAS's guess)
  // Slots taken or promised, as far as this thread knows (never fewer).
  uint64_t used() const { return reserved + head - tail; }
};

class MvccNode {
 public:
  static constexpr r2::RegionId kVersionRegion = 1003;

  // Versions one copy of `t` keeps under `cfg`.
  static uint64_t versions_for(const store::TableSpec& t, const MvccConfig& cfg);
  // Bytes of kVersionRegion on `node` (0: it hosts no table with records).
  static uint64_t region_bytes(const store::Catalog& c, store::NodeId16 node,
                               const MvccConfig& cfg);
  // `fabric` registered kVersionRegion (region_bytes) and the table regions
  // `store` was built in; both outlive this object.
  static Result<std::unique_ptr<MvccNode>> create(const store::Catalog& c,
                                                  store::tables::StoreNode& store,
                                                  r2::Fabric& fabric, const MvccConfig& cfg);
  // Unhooks the store's heap growth (create() set it to back chain heads):
  // after the store's GrowAhead ran what was posted, no extent backed later
  // reaches this object.
  ~MvccNode();
  MvccNode(const MvccNode&) = delete;
  MvccNode& operator=(const MvccNode&) = delete;

  // A record of a hosted partition copy: its slot, and its lock and tuple
  // timestamp words (in the slot, or apart on durable nodes: store/record.h).
  struct Record {
    uint8_t* rec = nullptr;
    uint64_t* lock = nullptr;
    uint64_t* ts = nullptr;
    VersionStore* vs = nullptr;
    uint64_t slot = 0;    // index in its heap: the version chain's
    uint64_t offset = 0;  // of the slot in the table's region
    store::TableId table = 0;
    store::PartitionId partition = 0;
    store::SlotRef at() const { return {rec, lock, ts}; }
  };
  // The record slot at (region, offset) — an address a request names —
  // when it is a whole record slot of a hosted copy's heap.
  bool resolve(r2::RegionId region, uint64_t offset, uint32_t value_size, Record* out) const;
  // The live record of `key` in this node's copy of its partition, found
  // through the index: kNotFound when absent (or the node hosts no copy).
  Result<Record> locate(const store::TableSpec& t, uint64_t key, uint32_t* incarnation) const;
  // The version store of (table, partition) here, or nullptr.
  VersionStore* store_of(store::TableId t, store::PartitionId p) const;
  // The copy on `node` whose area holds `offset` of table `t`'s region,
  // or nullptr.
  const CopyLayout* copy_at(store::NodeId16 node, store::TableId t, uint64_t offset) const;
  // The copy of (t, p) on `node`, or nullptr.
  const CopyLayout* copy_of(store::NodeId16 node, store::TableId t, store::PartitionId p) const;
  // This node's worker `worker`: its lane (of every version store) and its
  // cursor in copy `copy_id`'s lane.
  uint32_t lane_of(uint16_t worker) const {
    return static_cast<uint32_t>(store_.node()) * cfg_.workers + worker;
  }
  LaneCursor& cursor(uint16_t worker, uint32_t copy_id) { return cursors_[worker][copy_id]; }
  // The options of table t's version stores under cfg (copies of
  // `record_slots` record slots).
  static VersionStoreOptions store_options(const store::Catalog& c, const store::TableSpec& t,
                                           uint64_t record_slots, const MvccConfig& cfg);
  // The range timestamp of (table, partition) here, or nullptr.
  std::atomic<Timestamp>* range_ts(store::TableId t, store::PartitionId p) const;

  LocalClock& clock(uint16_t worker) { return clocks_[worker]; }
  SnapshotFloor& floor() { return floor_; }
  // Computes this node's floor at `now` (floor.h) and returns it.
  Timestamp publish(Timestamp now);
  void set_peer_floor(store::NodeId16 node, Timestamp floor);
  Timestamp lwm() const;
  // Failover: nodes removed from the cluster (bit n = node n) no longer
  // hold the low-water mark back — their snapshots ended with them, and a
  // removed node that comes back is fenced before it can read here.
  // Without this the mark stops at a removed node's last floor, garbage
  // collection with it, and version stores fill up for good.
  void drop_peers(uint64_t nodes) { departed_.fetch_or(nodes, std::memory_order_acq_rel); }
  // Counts MVCC commits, unlocks and removes on this node (any worker):
  // deferred snapshot reads are re-run when it moved (mvcc_ops.cc).
  void note_unlocks() { unlocks_.fetch_add(1, std::memory_order_release); }
  uint64_t unlocks() const { return unlocks_.load(std::memory_order_acquire); }
  // Failover (txn/failover.h): while the node reconfigures, a snapshot read
  // does not wait for a lock — the holder may be a removed coordinator,
  // whose locks go only after every transaction ended. It fails instead
  // (its transaction aborts with kNodeFailure and runs again afterwards).
  void set_reconfiguring(bool on) { reconfiguring_.store(on, std::memory_order_release); }
  bool reconfiguring() const { return reconfiguring_.load(std::memory_order_acquire); }
  // GTS: the newest StableTS this node has seen (from its snapshots'
  // fetches and node 0's floor messages) — the `now` of its floor: every
  // snapshot here reads at a StableTS fetched later, so never below it.
  void observe_stable(Timestamp s) { atomic_raise(seen_stable_, s); }
  Timestamp seen_stable() const { return seen_stable_.load(std::memory_order_acquire); }
  // GTS, node 0: hosts the oracle in `region` (GtsOracle::kRegionBytes of
  // GtsOracle::kRegion). oracle() is null elsewhere.
  void host_oracle(uint8_t* region) { oracle_ = std::make_unique<GtsOracle>(region); }
  GtsOracle* oracle_mut() { return oracle_.get(); }
  GtsOracle* oracle() const { return oracle_.get(); }
  // GC of every store with lwm(); versions freed.
  uint64_t gc();
  // Sums over every store of this node.
  VersionStoreStats totals() const;
  const store::Catalog& catalog() const { return catalog_; }
  store::tables::StoreNode& store() const { return store_; }
  const MvccConfig& config() const { return cfg_; }

 private:
  struct Copy {
    const store::TableSpec* table = nullptr;
    const CopyLayout* layout = nullptr;  // in layouts_[self]
    store::SlotWords words;              // the store's (LocalPartition::words)
    std::unique_ptr<VersionStore> vs;
    // The store's range word (lanes: coordinators raise it one-sided), or
    // owned_range.
    std::atomic<Timestamp>* range_ts = nullptr;
    std::unique_ptr<std::atomic<Timestamp>> owned_range;
  };
  MvccNode(const store::Catalog& c, store::tables::StoreNode& s, const MvccConfig& cfg)
      : catalog_(c),
        store_(s),
        cfg_(cfg),
        floor_(cfg.workers, cfg.coroutines),
        clocks_(cfg.workers),
        peers_(c.nodes()) {}
  const Copy* find(store::TableId t, store::PartitionId p) const;
  static void atomic_raise(std::atomic<Timestamp>& a, Timestamp v) {
    Timestamp cur = a.load(std::memory_order_relaxed);
    while (v > cur && !a.compare_exchange_weak(cur, v)) {
    }
  }

  const store::Catalog& catalog_;
  store::tables::StoreNode& store_;
  MvccConfig cfg_;
  std::vector<std::vector<Copy>> copies_;  // by table id: hosted copies, ascending
  // Every node's copies: [node][table id] -> copies, ascending partitions.
  std::vector<std::vector<std::vector<CopyLayout>>> layouts_;
  std::vector<std::vector<LaneCursor>> cursors_;  // [worker][CopyLayout::id]
  std::vector<uint8_t*> table_base_;              // by table id: the table region's base
  SnapshotFloor floor_;
  std::vector<LocalClock> clocks_;
  std::atomic<Timestamp> own_floor_{0};
  std::vector<std::atomic<Timestamp>> peers_;  // 0: not heard from yet
  std::atomic<uint64_t> departed_{0};          // drop_peers()
  std::atomic<bool> reconfiguring_{false};
  std::atomic<Timestamp> seen_stable_{0};
  alignas(64) std::atomic<uint64_t> unlocks_{0};
  std::unique_ptr<GtsOracle> oracle_;
};

}  // namespace drtmx::dst
