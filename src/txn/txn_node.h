// TxnNode: one node of a transactional cluster, put together — the r2
// runtime with every region the storage layer and the replication log
// need, the node's StoreNode (its partition copies and their services),
// the location and learned caches, per worker a Replicator (log writer)
// and a BackupApplier (installs redo records into this node's backup
// copies), and per coroutine a StoreLocator and an Engine.
//
// What a node program (drtmx-node, drtmx-bench, a user's own) does:
//   auto node = TxnNode::start(catalog, config);     // joins the cluster
//   load its partitions through node->store()         // StoreNode::load
//   node->run([](TxnContext& c) { ...c.engine.run(proc)... });
//   node->finish();   // waits for the coroutines, drains the logs
//                     // cluster-wide, stops; then read node->store()
// Every node must call start/run/finish (they meet at barriers).
//
// Draining: a coordinator counts the log entries it wrote per backup; at
// finish() the nodes exchange those counts and each waits (bounded) until
// its appliers installed every entry sent to it, so primaries and backups
// agree when finish() returns.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "dst/mvcc_node.h"
#include "r2/node_runtime.h"
#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "store/tables/table_client.h"
#include "txn/durability.h"
#include "txn/engine.h"
#include "txn/failover.h"
#include "txn/log/replication.h"
#include "txn/recovery.h"
#include "txn/store_locator.h"

namespace drtmx::txn {

struct TxnNodeConfig {
  r2::FabricConfig fabric;                 // backend, node, num_nodes, threads, cluster
  r2::ControlClientConfig control;         // coordinator address, timeouts
  uint16_t coroutines = 8;                 // transaction coroutines per worker
  Policy policy;                           // from make_policy()
  uint32_t log_ring_bytes = 1u << 20;      // per (coordinator thread, backup)
  size_t arena_bytes = 64 * 1024;          // per coroutine, plus the log images
  store::tables::NodeCacheOptions caches;  // threads filled in
  std::chrono::milliseconds drain_timeout{30000};
  // An RPC without every reply after this long fails: the transaction
  // aborts with kNodeFailure (r2::WorkerConfig::rpc_timeout_ms).
  uint32_t rpc_timeout_ms = 10000;
  // MVCC (policy.mvcc != kOff): version store sizes; workers and
  // coroutines are filled in from the fields above.
  dst::MvccConfig mvcc;
  // How often worker 0 computes the node's snapshot floor, sends it to
  // the other nodes and collects garbage versions.
  uint32_t floor_every_us = 1000;
  // Durability (txn/durability.h): tables and logs in pools. Must be the
  // same on every node (it joins the configuration fingerprint).
  DurabilityConfig durability;
  // Tests: called at every CrashPoint of the commit path, on the worker
  // thread that reaches it (see txn/crash_point.h).
  CrashHook crash_hook;
  // Tests only: a protocol duty every engine skips (crash_point.h).
  TestFault test_fault = TestFault::kNone;
  // Accesses to this node's own memory skip the fabric's machinery: one-
  // sided ops run at once on the local memory and RPCs to the worker's own
  // thread run their handler inline (r2::WorkerConfig direct_local_ops,
  // inline_self_calls). Same checks, same lock/version/seal contract; off
  // only to measure what they save.
  bool local_shortcuts = true;
  // A transaction about to read a record that another coroutine of its
  // worker holds locked waits (yields) until that one's attempt ends,
  // instead of reading a value about to change and aborting at Validate
  // (txn/local_holds.h). Off only to measure what it saves.
  bool sibling_wait = true;
};

// What a transaction coroutine gets.
struct TxnContext {
  r2::Co& co;
  Engine& engine;
  StoreLocator& locator;
  uint32_t index;  // coroutine index in the cluster: (node * threads + thread) * coroutines + co
};

class TxnNode {
 public:
  // The regions this node registers for `catalog` and `cfg` (tables,
  // client scratch, log rings, engine arenas).
  static std::vector<std::pair<r2::RegionId, size_t>> regions(const store::Catalog& catalog,
                                                              const TxnNodeConfig& cfg);
  // The regions it registers growable (tables, lock words, MVCC versions:
  // address space backed as rows arrive; store/tables/plan.h "Growth").
  static std::vector<std::pair<r2::RegionId, size_t>> growable_regions(
      const store::Catalog& catalog, const TxnNodeConfig& cfg);
  // Starts the runtime (joins the cluster) and builds the tables. The
  // catalog must outlive the node.
  static Result<std::unique_ptr<TxnNode>> start(const store::Catalog& catalog,
                                                const TxnNodeConfig& cfg);
  ~TxnNode();

  store::tables::StoreNode& store() { return *store_; }
  r2::NodeRuntime& runtime() { return *rt_; }
  const TxnNodeConfig& config() const { return cfg_; }
  const store::Catalog& catalog() const { return catalog_; }

  // Launches the workers: handlers, replication, and `body` on every
  // transaction coroutine. Returns at once.
  Status run(const std::function<void(TxnContext&)>& body);
  // Waits for the coroutines (bounded by `limit`), drains the logs
  // cluster-wide, stops the workers. The first failure of any of it.
  Status finish(std::chrono::milliseconds limit);
  // Sum of every coroutine's engine stats (after finish()).
  TxnStats stats() const;
  // What this node's workers sent for its transactions, over the whole run
  // (read after finish(): the workers' counters are not atomic).
  struct Traffic {
    uint64_t committed = 0;     // transactions committed here
    uint64_t ops_posted = 0;    // one-sided ops through the fabric (not run at once)
    uint64_t messages_out = 0;  // fabric messages sent (RPC requests, replies, ACKs)
    uint64_t log_entries = 0;   // replication log entries written (one per target)
    uint64_t log_bytes = 0;     // their payload bytes
  };
  Traffic traffic() const;
  // Failover (survive-failures mode): each reconfiguration this node went
  // through (txn/failover.h); empty otherwise.
  std::vector<FailoverReport> failover_reports() const;
  // MVCC: this node's version stores (null without MVCC).
  const dst::MvccNode* mvcc() const { return mvcc_.get(); }

  // --- durability -----------------------------------------------------------
  // The pools (null without durability).
  const NodePools* pools() const { return pools_.get(); }
  // A first start: the initial load is complete; makes every record the
  // loader wrote persistent and records that the database exists.
  // Collective (a barrier), before run().
  Status persist_loaded();
  // Durable nodes: where record lock words live (null: in the slots).
  const store::tables::LockPlan* lock_plan() const { return locks_.get(); }
  // A restart (durability.recover): what start() found in the record
  // slots, then the logs' recovery (txn/recovery.h). Collective, before
  // run(); the tables serve the recovered state when it returns, and every
  // node's clocks (and the GTS oracle) are above the recovered commit
  // timestamps (it ends with a barrier).
  Status recover(LogRecovery* out);
  const store::tables::StoreRecovery& store_recovery() const { return store_recovery_; }
  // How long start() took to rebuild the tables from their slots.
  uint64_t rebuild_ns() const { return rebuild_ns_; }

 private:
  // Recovery: where each durable table region's pool holds data (so heaps
  // scan what was backed, not their address space).
  store::tables::StoreNode::BackedEnd backed_end() const;
  // The first stopped applier's reason ("" while none stopped).
  std::string corrupt_reason() const;
  TxnNode(const store::Catalog& c, const TxnNodeConfig& cfg) : catalog_(c), cfg_(cfg) {}
  ReplicationConfig replication() const;
  Status agree_on_database();
  bool confirm_at_primary(const store::TableSpec* spec, const RedoRecord& r,
                          std::vector<uint64_t>& copy);
  Status setup_worker(r2::Worker& w, const r2::Region* scratch, const r2::Region* arena,
                      const r2::Region* log);
  size_t per_coroutine_arena() const;

  const store::Catalog& catalog_;
  TxnNodeConfig cfg_;
  // Durability (--durability=pmem): logs and records in pools.
  bool durable_ = false;
  PersistOps persist_;
  // Durable logs: the key order of releases, shared by this node's appliers.
  std::shared_ptr<UnreleasedChanges> unreleased_ = std::make_shared<UnreleasedChanges>();
  std::unique_ptr<NodePools> pools_;
  // Durable nodes (H8): where record lock words are (store/tables/plan.h,
  // "Lock regions"); null when they are in the slots (no durability, or
  // DurabilityConfig::locks_apart off).
  std::unique_ptr<store::tables::LockPlan> locks_;
  store::tables::StoreRecovery store_recovery_;
  uint64_t rebuild_ns_ = 0;
  std::unique_ptr<r2::NodeRuntime> rt_;
  std::unique_ptr<store::tables::StoreNode> store_;
  std::unique_ptr<store::tables::NodeCaches> caches_;
  std::unique_ptr<dst::MvccNode> mvcc_;
  LocalIndex local_index_;                            // this node's index changes without the RPC
  std::vector<std::unique_ptr<Replicator>> reps_;     // per worker
  std::vector<std::unique_ptr<LocalHolds>> holds_;    // per worker (sibling_wait)
  std::vector<std::unique_ptr<BackupApplier>> apps_;  // per worker
  std::vector<std::unique_ptr<StoreLocator>> locs_;   // per coroutine
  std::vector<std::unique_ptr<Engine>> engines_;      // per coroutine
  std::atomic<uint64_t> install_errors_{0};
  // The first install error's reason (written once, under mu_).
  std::string first_install_error_;
  void note_install_error(const std::string& why);
  // For drain timeouts: what each applier holds, and this copy's version
  // of the oldest record waiting.
  std::string appliers_state() const;
  // Failover (cfg.fabric.survive_failures): the gate every transaction
  // passes, the reconfigurer, and the hook the control client calls.
  struct FailoverHook {
    std::mutex mu;
    Failover* failover = nullptr;
  };
  std::shared_ptr<FailoverHook> hook_ = std::make_shared<FailoverHook>();
  std::unique_ptr<FailoverGate> gate_;
  std::unique_ptr<Failover> failover_;
  Status wait_failover(std::chrono::steady_clock::time_point until);
  std::atomic<bool> launched_{false};
  std::function<void(TxnContext&)> body_;
  std::mutex mu_;
  Status setup_error_;  // first failure of a worker's setup
};

}  // namespace drtmx::txn
