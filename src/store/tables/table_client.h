// TableClient: what one coroutine uses to reach any table of the catalog —
// it routes a key to its partition's primary (catalog placement) and runs
// the operation over the fastest path the table kind offers (docs/architecture.md):
//
//   kHash            GET: location cache -> one READ of the record (miss:
//                    bucket walk or RPC, hash_client.h; the cache fills at
//                    misses or ahead, by warm()); writes: owner RPC.
//   kOrdered inline  GET/SCAN: XStore learned cache -> READ leaves (about 2
//                    READs per GET, one batch per SCAN); writes: owner RPC.
//   kOrdered records GET: as inline for the index entry (RecordAddr), then
//                    one READ of the record, verified by its identity;
//                    writes: owner RPC (kRpcRecord*).
// With Path::kRpc every read goes to the owner by RPC instead (store-bench's
// comparison of the two paths).
//
// Scans of a kRange table continue on the next partition when a partition
// runs out of keys; other schemes scan only the start key's partition (key
// order and partition order differ there).
//
// State and threading:
//   * NodeCaches — one per node: the location cache (thread-safe) and, per
//     worker thread, the XStore learned caches of the ordered partitions
//     (XCache is not synchronised: only the thread's own coroutines use it).
//     An XCache is trained by the first coroutine that needs it (warm);
//     until then that thread's lookups of the partition go by RPC.
//   * TableClient — one per coroutine (owns scratch and per-partition
//     XStoreClients; every call runs on that coroutine).
//   * The direct path: on the node that holds a partition's primary, when
//     its worker runs local ops directly (r2::Co::direct, the local
//     shortcuts), GETs and SCANs of an ordered table call the node's own
//     XTree (NodeCaches::set_local_store) instead of going through the
//     learned cache or the RPC: the owner's handler makes the same call,
//     and the tree is safe for any thread (xtree.h). The records such a
//     lookup or scan names are copied by the caller from its own memory
//     (StoreNode::slot_at; prefetched first, then copied, as the fabric's
//     local READ does without its queue and completion) and verified as on
//     every other path.
//   * maintain(): the client half of XStore retraining — pulls each warmed
//     partition's split log and refreshes the touched sub-models
//     (apply_splits), and expands models that outgrew their threshold. Run
//     by one maintenance coroutine per thread, off the critical path.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "r2/sched/co.h"
#include "store/catalog.h"
#include "store/hash/hash_client.h"
#include "store/hash/location_cache.h"
#include "store/placement.h"
#include "store/tables/ordered_rpc.h"
#include "store/tables/plan.h"
#include "store/xstore/client/xcache.h"
#include "store/xstore/client/xstore_client.h"

namespace drtmx::store::tables {

enum class Path : uint8_t { kOneSided, kRpc };

struct TableClientOptions {
  Path path = Path::kOneSided;
  hash::HashClientOptions hash;
  xstore::XClientOptions xstore;
  uint32_t record_retries = 8;  // torn / stale record copies per ordered GET before RPC
};

struct NodeCacheOptions {
  hash::LocationCacheOptions location;  // budget_bytes: the --cache-mb of the hash path
  xstore::XCacheOptions xcache;         // tt_budget_bytes per partition
  uint16_t threads = 1;
};

class StoreNode;

class NodeCaches {
 public:
  static Result<std::unique_ptr<NodeCaches>> create(const Catalog& c, const NodeCacheOptions& o);

  hash::LocationCache& location() { return *location_; }
  // Thread t's learned cache of one partition's copy on node `owner` (its
  // primary); created on first use. A cache is never dropped while the
  // node runs (a coroutine may be training it across yields): a failover
  // that moves a partition's primary makes a new one for the new owner,
  // and the caches of partitions that did not move stay warm.
  struct Learned {
    explicit Learned(const xstore::XCacheOptions& o) : cache(o) {}
    xstore::XCache cache;
    bool warming = false;  // a coroutine of the thread is training it
  };
  Learned& xcache(r2::ThreadId t, TableId table, PartitionId p, r2::NodeId owner);
  // Bytes the learned caches of thread t hold.
  size_t xcache_bytes(r2::ThreadId t) const;

  // Where each partition's primary and backups are now (the catalog's
  // placement among the live nodes).
  Placement& placement() { return placement_; }
  const Placement& placement() const { return placement_; }
  // After the primaries moved (a membership change; transactions may be
  // running): empties the location cache (thread-safe) and raises
  // generation() so that TableClients drop their partition routes and
  // refill them from the new primaries. Learned caches are per owner
  // (xcache) and stay.
  void reset();
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // This node's own partition copies, for the direct path (above). Set
  // once before any TableClient of the node runs (it must outlive them),
  // or never: then every read goes by the learned cache or RPC.
  void set_local_store(const StoreNode* s) { local_store_ = s; }
  const StoreNode* local_store() const { return local_store_; }

 private:
  NodeCaches(const Catalog& c, const NodeCacheOptions& o) : catalog_(c), opts_(o), placement_(c) {}
  struct PerThread {
    std::unordered_map<uint64_t, std::unique_ptr<Learned>> caches;
  };
  const Catalog& catalog_;
  NodeCacheOptions opts_;
  std::unique_ptr<hash::LocationCache> location_;
  std::vector<PerThread> threads_;
  Placement placement_;
  std::atomic<uint64_t> generation_{0};
  const StoreNode* local_store_ = nullptr;
};

// Counters of one TableClient (add them up over coroutines).
struct TableClientStats {
  uint64_t gets = 0;
  uint64_t reads = 0;  // one-sided READ work requests issued by GETs
  uint64_t rpcs = 0;   // GETs and SCANs answered by the owner's RPC
  uint64_t local = 0;  // GETs and SCANs answered by this node's own index (direct path)
  // Records of this node's own partitions copied by the caller (no READ).
  uint64_t records_direct = 0;
  uint64_t scans = 0;
  uint64_t writes = 0;  // insert / update / remove RPCs
  uint64_t record_retries = 0;
  void add(const TableClientStats& o);
  double reads_per_get() const { return gets == 0 ? 0.0 : double(reads) / double(gets); }
};

// Where a GET found its record (hash and record tables; the transaction
// layer locks and validates through it).
struct RecordRef {
  r2::RemoteAddr addr;
  uint32_t incarnation = 0;
  uint64_t version = 0;
};

class TableClient {
 public:
  // `scratch`: registered on this node, 64-aligned, at least
  // scratch_per_coroutine(catalog) bytes.
  TableClient(const Catalog& c, NodeCaches& caches, std::span<uint8_t> scratch,
              const TableClientOptions& o = {});

  // True + the value (t.value_size bytes into value_out) when present.
  // `ref` (optional) receives the record's address and version (hash and
  // record tables).
  Result<bool> get(r2::Co& co, const TableSpec& t, uint64_t key, std::span<uint8_t> value_out,
                   RecordRef* ref = nullptr);
  // get() of several keys of `t` at once: found[i], the value of keys[i]
  // (t.value_size bytes at values + i * t.value_size) and refs[i]
  // (optional) as get() gives them. Ordered tables with records on the
  // one-sided path: the keys of each partition (wherever they are in
  // `keys`) get their index entries by one XStore get_many (one doorbell
  // for the leaves of all of them), then the
  // records in READ batches of kScanRecordBatch (one doorbell each); a
  // record whose copy fails its checks is looked up again alone. Other
  // tables and paths: get() per key.
  Status get_many(r2::Co& co, const TableSpec& t, std::span<const uint64_t> keys, uint8_t* values,
                  uint8_t* found, RecordRef* refs);
  // Up to n pairs with key >= start, ascending (keys / values cleared;
  // t.value_size bytes per key). Ordered tables only. Fewer than n only
  // when the table (kRange) or the start key's partition has no more keys:
  // records deleted between the index read and the record read are
  // skipped and the scan goes on after them. `refs` (optional,
  // tables with records): cleared, then where each returned row's record is
  // and the version read (what a transaction validates).
  Status scan(r2::Co& co, const TableSpec& t, uint64_t start, size_t n, std::vector<uint64_t>& keys,
              std::vector<uint8_t>& values, std::vector<RecordRef>* refs = nullptr);
  // The keys scan() would return, from the index entries alone: no record
  // is read, so keys of uncommitted inserts and of deletes not yet taken
  // out of the index are listed too.
  Status scan_keys(r2::Co& co, const TableSpec& t, uint64_t start, size_t n,
                   std::vector<uint64_t>& keys);
  // scan() and scan_keys() of partition `p` alone (p < partitions): its
  // keys >= start, whatever partition `start` itself maps to. How a scan of
  // a table whose key order is not its partition order (kHashMod,
  // kFunction) visits each partition a range may reach
  // (Catalog::scan_partitions). Fewer than n only when p has no more keys.
  Status scan_in(r2::Co& co, const TableSpec& t, PartitionId p, uint64_t start, size_t n,
                 std::vector<uint64_t>& keys, std::vector<uint8_t>& values,
                 std::vector<RecordRef>* refs = nullptr);
  Status scan_keys_in(r2::Co& co, const TableSpec& t, PartitionId p, uint64_t start, size_t n,
                      std::vector<uint64_t>& keys);
  // Owner-side writes by RPC. kAlreadyExists / kNotFound / kResourceExhausted
  // / kOutOfRange as the table reports them.
  Status insert(r2::Co& co, const TableSpec& t, uint64_t key, std::span<const uint8_t> value);
  Status update(r2::Co& co, const TableSpec& t, uint64_t key, std::span<const uint8_t> value);
  Status remove(r2::Co& co, const TableSpec& t, uint64_t key);

  // Ordered tables: trains this thread's learned caches of every partition
  // of `t` now (instead of lazily at first use). Hash tables: fills the
  // node's location cache with the address of every key of every partition
  // of `t`, as far as it has room (HashClient::warm: one READ per bucket, no
  // entry evicted or replaced), so that each later GET of those keys is one
  // READ of the record; one coroutine of the node is enough. Without a
  // location cache (TableClientOptions::hash.use_cache off): nothing.
  Status warm(r2::Co& co, const TableSpec& t);
  // Retraining after splits and model expansion for this thread's warmed
  // caches (see above). *refreshed: sub-models retrained.
  Status maintain(r2::Co& co, size_t* refreshed = nullptr);

  TableClientStats stats() const;
  void reset_stats();
  // XStore client counters summed over partitions.
  xstore::XClientStats xstats() const;

 private:
  struct Ordered {
    std::unique_ptr<xstore::XStoreClient> client;
    NodeCaches::Learned* learned = nullptr;
    OrderedRemote remote;
    // The primary's tree, when it is on this node and the direct path
    // applies (then `learned` is never warmed).
    const xstore::XTree* local = nullptr;
    const TableSpec* table = nullptr;
    PartitionId partition = 0;
  };
  Result<Ordered*> ordered(r2::Co& co, const TableSpec& t, PartitionId p);
  // Where partition p of hash table t is (computed once per table).
  Result<const hash::HashRemote*> hash_route(r2::Co& co, const TableSpec& t, PartitionId p);
  r2::NodeId primary(const TableSpec& t, PartitionId p, r2::NodeId self) const;
  Status warm_one(r2::Co& co, Ordered& o);
  // Leaf value of `key` in partition `o` (one-sided with fallback, or RPC).
  Result<bool> index_get(r2::Co& co, Ordered& o, uint64_t key, void* out);
  // The same from the node's own tree (o.local set).
  Result<bool> local_get(const Ordered& o, uint64_t key, void* out);
  // The record slot at `offset` of o's partition in this node's memory,
  // when o is this node's own partition on the direct path (o.local set,
  // and r2::Co::direct still true: a removed node stops) and `offset`
  // starts a heap slot of it; else null (READ it).
  const uint8_t* own_record(const r2::Co& co, const Ordered& o, uint64_t offset) const;
  // Copies such a record into `to` (an acquire fence, then word loads);
  // true when the copy is quiet (store/record_io.h: verify_quiet() then,
  // where the node's store allows quiet copies), false: verify() it.
  bool copy_own(uint8_t* to, const uint8_t* record, size_t bytes);
  Result<bool> record_get(r2::Co& co, Ordered& o, uint64_t key, std::span<uint8_t> value_out,
                          RecordRef* ref);
  Status scan_partition(r2::Co& co, Ordered& o, uint64_t start, size_t n, bool* end);
  // scan() and scan_keys(): scan_partition() from `start` partition by
  // partition until `keys` holds n; take(o) moves each partition's result
  // (part_keys_, part_values_) into the caller's vectors. `only`: that
  // partition alone (kNoPartition: start's, then on for kRange).
  static constexpr PartitionId kNoPartition = ~PartitionId{0};
  template <typename Take>
  Status walk_partitions(r2::Co& co, const TableSpec& t, uint64_t start, size_t n,
                         std::vector<uint64_t>& keys, Take take, PartitionId only = kNoPartition);
  // The records of part_keys_ (addresses in part_values_), read in batches;
  // rows deleted since the index read are skipped.
  Status scan_records(r2::Co& co, Ordered& o, std::vector<uint64_t>& keys,
                      std::vector<uint8_t>& values, std::vector<RecordRef>* refs);
  // One doorbell: READs record where[i] into slot i of record_buf_ for each
  // i < count (<= kScanRecordBatch) with want[i] (every i when want is
  // null); ok[i] tells whether that copy is a verified image of keys[i]'s
  // record (false for a failed READ, a torn or stale copy, or !want[i]).
  void read_records(r2::Co& co, const Ordered& o, const uint64_t* keys, const RecordAddr* where,
                    const uint8_t* want, size_t count, bool* ok);
  // The value (and *ref, if given) of the verified copy in slot i.
  void take_record(const Ordered& o, size_t i, const RecordAddr& where, uint8_t* value_out,
                   RecordRef* ref) const;
  enum class WriteOp : uint8_t { kInsert, kUpdate, kRemove };
  Status write(r2::Co& co, const TableSpec& t, uint64_t key, std::span<const uint8_t> value,
               WriteOp op);
  std::string where(const TableSpec& t, uint64_t key, const char* op) const;

  const Catalog& catalog_;
  NodeCaches& caches_;
  std::span<uint8_t> scratch_;
  TableClientOptions opts_;
  hash::HashClient hash_;
  std::unordered_map<uint64_t, Ordered> ordered_;           // nodes never move
  std::vector<std::vector<Ordered*>> ordered_index_;        // [table id][partition] into ordered_
  std::vector<std::vector<hash::HashRemote>> hash_routes_;  // [table id][partition]
  uint64_t routes_generation_ = 0;                          // NodeCaches::generation()
  void check_generation();
  OrderedRpc rpc_;
  TableClientStats stats_;
  std::vector<uint64_t> part_keys_;  // one partition's scan result
  std::vector<uint8_t> part_values_;
  std::vector<uint8_t> leaf_value_;  // one leaf value (RecordAddr)
  std::vector<uint8_t> many_done_;   // get_many: keys handled
  std::vector<size_t> many_at_;      // ... one partition's positions in the keys
  std::vector<uint64_t> many_keys_;  // ... its keys
  std::vector<uint8_t> many_addrs_;  // ... their index entries
  std::vector<uint8_t> many_found_;
  uint8_t* record_buf_ = nullptr;  // scratch for kScanRecordBatch record slots
  r2::OpBatch record_batch_;       // a scan's record READs
  std::span<uint8_t> xscratch_;
};

}  // namespace drtmx::store::tables
