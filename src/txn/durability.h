// Durability of one node (--durability=pmem, thesis §6.3): its pool files,
// which of its regions live in them, how its own stores become persistent,
// and what it remembers about the database across restarts.
//
// Pools (src/rdpma/pool.h), in the directory --pmem-dir:
//   node<N>.region<R>.pool   one per durable region: every table region
//                            (hash buckets or XStore leaves, and the record
//                            heap) and the log region (rings + headers);
//                            the region is the pool's whole data area.
//   node<N>.state.pool       the node's state: the database stamp (the same
//                            on every node of one database), whether the
//                            initial load completed, how often it recovered,
//                            the membership after its last failover.
// Volatile regions stay in shared memory: client scratch, transaction
// arenas, MVCC version stores, the GTS oracle, and everything rebuilt at a
// restart (indexes, location and learned caches), and — hint H8 — the
// records' lock words and MVCC tuple timestamps: each table with records
// has a volatile lock region beside its pooled table region
// (store/tables/plan.h "Lock regions"), so no atomic ever lands on a pool
// (locks_apart; off only to measure what it saves).
//
// Every node of a cluster must run with the same durability (the
// configuration fingerprint says so); the persistence mode (pmem, memfs,
// msync) depends on each node's directory and is reported per node.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "rdpma/pool.h"
#include "txn/log/replication.h"

namespace drtmx::txn {

struct DurabilityConfig {
  bool enabled = false;  // --durability=pmem
  std::string dir;       // --pmem-dir
  bool format = false;   // --format: replace existing pool files
  bool recover = false;  // --recover: restart from them
  // H8: record lock words and tuple timestamps in DRAM (the tables' lock
  // regions), not in the pooled slots. false (drtmx-bench
  // --lock-words=slots) keeps them in the slots, as a volatile node does:
  // for measuring H8 only. The pools are the same either way (the slots'
  // own words are cleared at a restart), so a database may restart in
  // either mode; every node of a cluster must use the same.
  bool locks_apart = true;
};

// The node's persistent state (in node<N>.state.pool).
struct NodeState {
  uint64_t magic = 0;
  uint64_t stamp = 0;       // the database's (node 0 draws it at the first start)
  uint64_t loaded = 0;      // 1 once the initial load is persistent
  uint64_t recoveries = 0;  // completed restarts
  // Failover (txn/failover_durable.h): the membership epoch this node last
  // reconfigured for and the live set then (bit n: node n); live 0: every
  // node (no failover since the database was created).
  uint64_t epoch = 0;
  uint64_t live = 0;
  uint64_t pad[2] = {};
};
static_assert(sizeof(NodeState) == 64);

class NodePools {
 public:
  // Creates (a first start; existing files are refused unless cfg.format)
  // or opens and validates (cfg.recover) the pools of `node` for the
  // durable `regions` (id, bytes). `layout`: a fingerprint of everything
  // that decides what the pools hold (catalog, cluster shape, sizes): a
  // pool of another configuration is refused, naming the file.
  // `growable`: the ids among `regions` that are growable (their bytes the
  // virtual size): their pools are created sparse (PoolSpec::sparse) and
  // their file regions growable — the fabric's commit() backs them range by
  // range. At --recover the pool's header says whether it is sparse (a
  // pool created whole stays whole: commit() is then a no-op on it).
  static Result<std::unique_ptr<NodePools>> open(
      const DurabilityConfig& cfg, uint16_t node,
      const std::vector<std::pair<r2::RegionId, size_t>>& regions, uint64_t layout,
      const std::vector<r2::RegionId>& growable = {});

  // (id, file region) of every durable region, for the fabric; a sparse
  // pool's is growable (FileRegion::growable).
  std::vector<std::pair<r2::RegionId, r2::FileRegion>> file_regions() const;
  // The pool of durable region `id`, or nullptr (e.g. for data_ranges()
  // at recovery).
  const rdpma::PmemPool* pool(r2::RegionId id) const;
  // How this node's own stores into its pools become persistent.
  r2::Persistence mode() const { return mode_; }
  PersistOps persist_ops() const;

  const NodeState& state() const { return state_; }
  // Writes the state and makes it persistent.
  Status save(const NodeState& s);
  const std::string& dir() const { return dir_; }
  // All pools' file sizes (a sparse pool's is its virtual size; what it
  // holds is the fabric's committed_bytes).
  uint64_t pool_bytes() const;

  static std::string region_path(const std::string& dir, uint16_t node, r2::RegionId region);
  static std::string state_path(const std::string& dir, uint16_t node);

 private:
  NodePools() = default;
  std::string dir_;
  r2::Persistence mode_ = r2::Persistence::kNone;
  std::vector<std::pair<r2::RegionId, std::unique_ptr<rdpma::PmemPool>>> regions_;
  std::unique_ptr<rdpma::PmemPool> state_pool_;
  rdpma::FatPtr state_at_;
  NodeState state_;
};

// The persistence of `mode` as PersistOps: cache-line write-back + fence
// (pmem, memfs), or msync of the flushed pages at drain (msync; the ranges
// are remembered per thread between flush and drain).
PersistOps persist_ops_for(r2::Persistence mode);

}  // namespace drtmx::txn
