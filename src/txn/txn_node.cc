#include "txn/txn_node.h"

#include <unistd.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "base/hash.h"
#include "r2/common/clock.h"
#include "txn/mvcc_ops.h"

namespace drtmx::txn {
namespace {

constexpr r2::RegionId kLogRegion = 1001;
constexpr r2::RegionId kArenaRegion = 1002;

dst::MvccConfig mvcc_config(const TxnNodeConfig& cfg) {
  dst::MvccConfig m = cfg.mvcc;
  m.workers = cfg.fabric.threads;
  m.coroutines = cfg.coroutines;
  m.lanes = mvcc_onesided(cfg.policy);
  return m;
}

store::tables::ScratchPlan scratch_plan(const store::Catalog& c, const TxnNodeConfig& cfg) {
  return {cfg.fabric.threads, cfg.coroutines, store::tables::scratch_per_coroutine(c)};
}

// Durable regions: every table's and the log's. Not the tables' lock
// regions: lock words and tuple timestamps stay in DRAM (H8).
bool durable_region(r2::RegionId id) {
  return id == kLogRegion || store::tables::is_table_region(id);
}

// H8: durable nodes keep record lock words and tuple timestamps apart
// from the (pooled) slots, in DRAM — unless told not to (measurements).
bool locks_apart(const TxnNodeConfig& cfg) {
  return cfg.durability.enabled && cfg.durability.locks_apart;
}

// What decides the contents of a node's pools: the tables, their
// placement and the regions' sizes.
uint64_t layout_fingerprint(const store::Catalog& c,
                            const std::vector<std::pair<r2::RegionId, size_t>>& durable) {
  uint64_t h = hash_mix(c.nodes(), c.replicas());
  for (const store::TableSpec& t : c.tables()) {
    h = hash_mix(h, hash_bytes(t.id, t.name.data(), t.name.size()));
    h = hash_mix(h, hash_mix(static_cast<uint64_t>(t.kind), t.value_size));
    h = hash_mix(h, hash_mix(t.capacity, hash_mix(static_cast<uint64_t>(t.scheme), t.partitions)));
    for (uint64_t b : t.range_bounds) h = hash_mix(h, b);
    h = hash_mix(h, hash_mix(t.inline_values, t.index_of));
  }
  for (const auto& [id, bytes] : durable) h = hash_mix(h, hash_mix(id, bytes));
  return h;
}

// MVCC: the range timestamp of key's partition on this node (read after a
// reservation is published); empty without MVCC.
RangeTs range_ts_of(dst::MvccNode* m) {
  if (m == nullptr) return {};
  return [m](const store::TableSpec& t, uint64_t key) -> uint64_t {
    auto* rt = m->range_ts(t.id, m->catalog().partition_of(t, key));
    return rt ? rt->load() : 0;
  };
}

}  // namespace

ReplicationConfig TxnNode::replication() const {
  ReplicationConfig rc;
  rc.layout = {cfg_.fabric.num_nodes, cfg_.fabric.threads, cfg_.log_ring_bytes};
  rc.log_region = kLogRegion;
  rc.durable = durable_;
  rc.persist = persist_;
  if (durable_) rc.unreleased = unreleased_;
  return rc;
}

size_t TxnNode::per_coroutine_arena() const {
  return (cfg_.arena_bytes + Replicator::image_bytes(replication()) + 63) & ~size_t{63};
}

std::vector<std::pair<r2::RegionId, size_t>> TxnNode::regions(const store::Catalog& catalog,
                                                              const TxnNodeConfig& cfg) {
  TxnNode probe(catalog, cfg);
  auto out = store::tables::regions_of(scratch_plan(catalog, cfg));
  out.emplace_back(kLogRegion, probe.replication().layout.region_bytes());
  out.emplace_back(kArenaRegion,
                   size_t{cfg.fabric.threads} * cfg.coroutines * probe.per_coroutine_arena());
  if (cfg.policy.mvcc == Mvcc::kGts && cfg.fabric.node == dst::GtsOracle::kNode) {
    out.emplace_back(dst::GtsOracle::kRegion, dst::GtsOracle::kRegionBytes);
  }
  return out;
}

std::vector<std::pair<r2::RegionId, size_t>> TxnNode::growable_regions(
    const store::Catalog& catalog, const TxnNodeConfig& cfg) {
  auto out = store::tables::growable_regions_of(catalog, cfg.fabric.node,
                                                /*lock_regions=*/locks_apart(cfg));
  if (cfg.policy.mvcc != Mvcc::kOff) {
    const uint64_t v = dst::MvccNode::region_bytes(catalog, cfg.fabric.node, mvcc_config(cfg));
    if (v != 0) out.emplace_back(dst::MvccNode::kVersionRegion, v);
  }
  return out;
}

Result<std::unique_ptr<TxnNode>> TxnNode::start(const store::Catalog& catalog,
                                                const TxnNodeConfig& cfg) {
  if (cfg.coroutines == 0) return invalid_argument("txn node: coroutines must be > 0");
  if (catalog.nodes() != cfg.fabric.num_nodes) {
    return invalid_argument("txn node: the catalog places partitions on " +
                            std::to_string(catalog.nodes()) + " nodes but the cluster has " +
                            std::to_string(cfg.fabric.num_nodes));
  }
  std::unique_ptr<TxnNode> n(new TxnNode(catalog, cfg));
  DRTMX_RETURN_IF_ERROR(n->replication().layout.validate());
  r2::NodeRuntimeConfig rc;
  rc.fabric = cfg.fabric;
  rc.control = cfg.control;
  rc.worker.coroutines = cfg.coroutines;
  rc.worker.rpc_timeout_ms = cfg.rpc_timeout_ms;
  rc.worker.direct_local_ops = cfg.local_shortcuts;
  rc.worker.inline_self_calls = cfg.local_shortcuts;
  rc.regions = regions(catalog, cfg);
  rc.growable_regions = growable_regions(catalog, cfg);
  rc.control.fingerprint["durability"] = cfg.durability.enabled ? "pmem" : "off";
  if (cfg.fabric.survive_failures) {
    // The reconfigurer looks at the view when the control client learns a
    // change (after the runtime fenced the fabric).
    std::shared_ptr<FailoverHook> hook = n->hook_;
    auto user = rc.control.on_change;
    rc.control.on_change = [hook, user](const r2::MembershipChange& c) {
      {
        std::lock_guard<std::mutex> g(hook->mu);
        if (hook->failover != nullptr) hook->failover->notify();
      }
      if (user) user(c);
    };
  }
  if (cfg.durability.enabled) {
    // Every node computes where its peers' lock words are (LockPlan).
    rc.control.fingerprint["lock-words"] = cfg.durability.locks_apart ? "dram" : "slots";
  }
  if (cfg.durability.enabled) {
    std::vector<std::pair<r2::RegionId, size_t>> durable, rest, rest_growable;
    std::vector<r2::RegionId> sparse;  // the durable ones that grow: sparse pools
    for (const auto& r : rc.regions) (durable_region(r.first) ? durable : rest).push_back(r);
    for (const auto& r : rc.growable_regions) {
      if (durable_region(r.first)) {
        durable.push_back(r);
        sparse.push_back(r.first);
      } else {
        rest_growable.push_back(r);
      }
    }
    auto pools = NodePools::open(cfg.durability, cfg.fabric.node, durable,
                                 layout_fingerprint(catalog, durable), sparse);
    if (!pools.is_ok()) return pools.status();
    n->pools_ = std::move(*pools);
    rc.regions = rest;
    rc.growable_regions = rest_growable;
    rc.file_regions = n->pools_->file_regions();
    n->durable_ = true;
    n->persist_ = n->pools_->persist_ops();
    // Only tables with deletes need their changes' release ordered.
    std::vector<bool> deleting;
    for (const store::TableSpec& t : catalog.tables()) {
      if (t.id >= deleting.size()) deleting.resize(t.id + 1u, false);
      deleting[t.id] = t.deletes;
    }
    n->unreleased_->track_only(std::move(deleting));
  }
  auto rt = r2::NodeRuntime::start(rc);
  if (!rt.is_ok()) return rt.status();
  n->rt_ = std::move(rt.value());
  if (n->pools_) DRTMX_RETURN_IF_ERROR(n->agree_on_database());
  const uint64_t t0 = r2::now_ns();
  // Durable nodes keep record lock words (and tuple timestamps) apart from
  // the persistent slots, in the volatile lock regions (H8).
  const bool apart = locks_apart(cfg);
  if (apart) {
    n->locks_ = std::make_unique<store::tables::LockPlan>(store::tables::LockPlan::of(catalog));
  }
  auto sn = cfg.durability.recover
                ? store::tables::StoreNode::recover(catalog, n->rt_->fabric(), &n->store_recovery_,
                                                    apart, n->backed_end())
                : store::tables::StoreNode::create(catalog, n->rt_->fabric(), apart);
  if (!sn.is_ok()) return sn.status();
  n->store_ = std::move(sn.value());
  n->rebuild_ns_ = r2::now_ns() - t0;
  store::tables::NodeCacheOptions co = cfg.caches;
  co.threads = cfg.fabric.threads;
  auto caches = store::tables::NodeCaches::create(catalog, co);
  if (!caches.is_ok()) return caches.status();
  n->caches_ = std::move(caches.value());
  if (cfg.policy.mvcc != Mvcc::kOff) {
    auto m = dst::MvccNode::create(catalog, *n->store_, n->rt_->fabric(), mvcc_config(cfg));
    if (!m.is_ok()) return m.status();
    n->mvcc_ = std::move(m.value());
    if (cfg.policy.mvcc == Mvcc::kGts && cfg.fabric.node == dst::GtsOracle::kNode) {
      const r2::Region* o = n->rt_->fabric().region(dst::GtsOracle::kRegion);
      if (o == nullptr || o->size < dst::GtsOracle::kRegionBytes) {
        return internal_error("txn node: the GTS oracle region is not registered");
      }
      n->mvcc_->host_oracle(o->base);
    }
  }
  // The local shortcuts of reads and index changes (table_client.h,
  // index_ops.h: LocalIndex) reach this node's own copies directly.
  n->caches_->set_local_store(n->store_.get());
  n->local_index_ = LocalIndex{n->store_.get(), range_ts_of(n->mvcc_.get())};
  const size_t workers = cfg.fabric.threads;
  if (cfg.fabric.survive_failures) {
    n->store_->set_placement(&n->caches_->placement());
    n->gate_ = std::make_unique<FailoverGate>(&n->rt_->control().view(), workers * cfg.coroutines);
  }
  n->reps_.resize(workers);
  n->apps_.resize(workers);
  n->holds_.resize(workers);
  n->locs_.resize(workers * cfg.coroutines);
  n->engines_.resize(workers * cfg.coroutines);
  return n;
}

// Every node's pools must belong to one database: a first start gives all
// of them node 0's stamp; a restart compares them (and refuses a database
// whose load never completed).
Status TxnNode::agree_on_database() {
  NodeState st = pools_->state();
  const bool recover = cfg_.durability.recover;
  if (!recover) {
    st.stamp = hash_mix(r2::now_ns(), static_cast<uint64_t>(getpid()));
    st.loaded = 0;
    st.epoch = 0;
    st.live = 0;
  }
  auto all = rt_->control().exchange(
      "txnnode.database", std::to_string(st.stamp) + " " + std::to_string(st.loaded) + " " +
                              std::to_string(st.epoch) + " " + std::to_string(st.live));
  if (!all.is_ok()) return all.status().with_context("agreeing on the database");
  uint64_t stamp0 = 0;
  for (size_t i = 0; i < all->size(); ++i) {
    std::istringstream is((*all)[i]);
    uint64_t stamp = 0, loaded = 0, epoch = 0, live = 0;
    if (!(is >> stamp >> loaded >> epoch >> live)) {
      return internal_error("node " + std::to_string(i) + " sent a malformed database stamp");
    }
    if (i == 0) stamp0 = stamp;
    if (!recover) continue;
    if (stamp != stamp0) {
      return invalid_argument("the pools of node " + std::to_string(i) +
                              " belong to another "
                              "database than node 0's (" +
                              pools_->dir() +
                              "); recover every node from the same run's pools, or start over "
                              "with --format");
    }
    if (live != 0) {
      // A durable failover removed nodes from this database: the survivors'
      // pools hold what the removed nodes' do not (the removed coordinators'
      // decided transactions, the writes made since), and the removed nodes'
      // pools are stale.
      std::string removed;
      for (uint16_t d = 0; d < all->size() && d < 64; ++d) {
        if (((live >> d) & 1) == 0) removed += (removed.empty() ? "" : ", ") + std::to_string(d);
      }
      return not_supported("the pools of node " + std::to_string(i) + " in " + pools_->dir() +
                           " record a failover at epoch " + std::to_string(epoch) +
                           " that removed node(s) " + removed +
                           "; --recover restarts every node of the original membership, and "
                           "restarting without the removed nodes is not implemented yet");
    }
    if (loaded != 1) {
      return invalid_argument("the pools of node " + std::to_string(i) + " in " + pools_->dir() +
                              " hold a database whose initial load never completed (a crash "
                              "while loading?); start over with --format");
    }
  }
  if (!recover) {
    st.stamp = stamp0;
    DRTMX_RETURN_IF_ERROR(pools_->save(st));
  }
  return Status::ok();
}

store::tables::StoreNode::BackedEnd TxnNode::backed_end() const {
  const NodePools* pools = pools_.get();
  // A pool's data ranges, read once per region (a walk of the file's
  // extents) for all the copies in it.
  using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;
  auto cache = std::make_shared<std::map<r2::RegionId, std::optional<Ranges>>>();
  return [pools, cache](r2::RegionId region, uint64_t begin, uint64_t end) -> uint64_t {
    const rdpma::PmemPool* pool = pools != nullptr ? pools->pool(region) : nullptr;
    if (pool == nullptr) return end;
    auto [it, fresh] = cache->try_emplace(region);
    if (fresh) {
      auto ranges = pool->data_ranges();
      if (ranges.is_ok()) it->second = std::move(*ranges);
    }
    if (!it->second) return end;  // unreadable: scan it all, slower, never wrong
    uint64_t last = begin;
    for (const auto& [off, bytes] : *it->second) {
      if (off < end && off + bytes > begin) last = std::max(last, std::min(end, off + bytes));
    }
    return last;
  };
}

Status TxnNode::persist_loaded() {
  if (!pools_) return Status::ok();
  for (const store::TableSpec& t : catalog_.tables()) {
    const r2::Region* reg = rt_->fabric().region(store::tables::table_region(t.id));
    for (store::PartitionId p : catalog_.hosted(cfg_.fabric.node, t)) {
      const store::tables::LocalPartition* part = store_->partition(t.id, p);
      if (part == nullptr || !part->heap || reg == nullptr) continue;
      const store::HeapStats hs = part->heap->stats();
      const uint64_t used = (hs.capacity - hs.never_used) * part->heap->slot_bytes();
      persist_.flush(reg->base + part->heap->options().range_offset, used);
    }
  }
  persist_.drain();
  NodeState st = pools_->state();
  st.loaded = 1;
  DRTMX_RETURN_IF_ERROR(pools_->save(st));
  return rt_->control().barrier("txnnode.loaded");
}

Status TxnNode::recover(LogRecovery* out) {
  if (!pools_ || !cfg_.durability.recover) {
    return invalid_argument("txn node: recover() needs durability with recover set");
  }
  const r2::Region* log = rt_->fabric().region(kLogRegion);
  if (log == nullptr) return internal_error("txn node: the log region is not registered");
  DRTMX_RETURN_IF_ERROR(recover_logs(catalog_, *store_, rt_->fabric(), log->base,
                                     replication().layout, rt_->control(), persist_, out));
  // MVCC: the recovered records carry the commit timestamps of the run that
  // crashed; timestamps of the new run must be above them (the version
  // stores are empty: a snapshot reads the newest version at or below its
  // timestamp, so it must be able to see every recovered one).
  auto all = rt_->control().exchange("txnnode.recovered_wts",
                                     std::to_string(store_recovery_.slots.max_wts));
  if (!all.is_ok()) return all.status();
  uint64_t wts = 0;
  for (const std::string& s : *all)
    wts = std::max<uint64_t>(wts, std::strtoull(s.c_str(), nullptr, 10));
  if (mvcc_) {
    for (uint16_t w = 0; w < cfg_.fabric.threads; ++w) mvcc_->clock(w).observe(wts);
    if (dst::GtsOracle* o = mvcc_->oracle_mut()) o->start_at(wts);
  }
  NodeState st = pools_->state();
  ++st.recoveries;
  DRTMX_RETURN_IF_ERROR(pools_->save(st));
  // GTS: node 0's oracle starts above the recovered timestamps before any
  // node runs: a node that ran first could otherwise read StableTS 0 (a
  // snapshot below every recovered version: "record missing") or take a
  // commit timestamp below them.
  return rt_->control().barrier("txnnode.recovered");
}

TxnNode::~TxnNode() {
  if (failover_) {
    {
      std::lock_guard<std::mutex> g(hook_->mu);
      hook_->failover = nullptr;
    }
    failover_->stop();
  }
  if (rt_ && launched_.load()) rt_->stop();
}

Status TxnNode::wait_failover(std::chrono::steady_clock::time_point until) {
  for (;;) {
    Status s = failover_->status();
    if (!s.is_ok()) return s;
    if (!failover_->busy() && failover_->handled_epoch() == rt_->control().view().epoch()) {
      return Status::ok();
    }
    if (std::chrono::steady_clock::now() > until) {
      return timeout_error("txn node " + std::to_string(cfg_.fabric.node) +
                           ": the reconfiguration after a node failure did not end in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::vector<FailoverReport> TxnNode::failover_reports() const {
  return failover_ ? failover_->reports() : std::vector<FailoverReport>{};
}

Status TxnNode::run(const std::function<void(TxnContext&)>& body) {
  if (launched_.exchange(true)) return invalid_argument("txn node: run() called twice");
  const r2::Region* scratch = rt_->fabric().region(store::tables::kScratchRegion);
  const r2::Region* arena = rt_->fabric().region(kArenaRegion);
  const r2::Region* log = rt_->fabric().region(kLogRegion);
  if (scratch == nullptr || arena == nullptr || log == nullptr) {
    return internal_error("txn node: a region of TxnNode::regions() is not registered");
  }
  body_ = body;
  if (gate_) {
    Failover::Parts fp;
    fp.catalog = &catalog_;
    fp.store = store_.get();
    fp.caches = caches_.get();
    fp.control = &rt_->control();
    fp.appliers = &apps_;
    fp.gate = gate_.get();
    fp.self = cfg_.fabric.node;
    fp.nodes = cfg_.fabric.num_nodes;
    fp.durable = durable_;
    if (durable_) {
      failover::DurableParts& dp = fp.durable_parts;
      dp.catalog = &catalog_;
      dp.store = store_.get();
      dp.fabric = &rt_->fabric();
      dp.log_base = log->base;
      dp.layout = replication().layout;
      dp.persist = persist_;
      dp.self = cfg_.fabric.node;
      NodePools* pools = pools_.get();
      dp.save_membership = [pools](uint64_t epoch, uint64_t live) {
        NodeState st = pools->state();
        st.epoch = epoch;
        st.live = live;
        return pools->save(st);
      };
    }
    fp.gts = cfg_.policy.mvcc == Mvcc::kGts;
    fp.mvcc = mvcc_.get();
    failover_ = std::make_unique<Failover>(fp);
    {
      std::lock_guard<std::mutex> g(hook_->mu);
      hook_->failover = failover_.get();
    }
    failover_->start();
  }
  // Worker setups run on the worker threads after launch() returns: they
  // use members only.
  rt_->launch([this, scratch, arena, log](r2::Worker& w) {
    Status s = setup_worker(w, scratch, arena, log);
    if (!s.is_ok()) {
      std::lock_guard<std::mutex> g(mu_);
      if (setup_error_.is_ok()) setup_error_ = s;
    }
  });
  return Status::ok();
}

Status TxnNode::setup_worker(r2::Worker& w, const r2::Region* scratch, const r2::Region* arena,
                             const r2::Region* log) {
  const r2::ThreadId t = w.thread();
  const ReplicationConfig rc = replication();
  DRTMX_RETURN_IF_ERROR(store_->register_handlers(w));
  LocalRegions lr;
  lr.lookup = [this](r2::RegionId id) -> std::pair<uint8_t*, size_t> {
    const r2::Region* r = rt_->fabric().region(id);
    return r ? std::make_pair(r->base, r->size) : std::make_pair(nullptr, size_t{0});
  };
  if (locks_) {
    lr.lock_word = [this](r2::RegionId region, uint64_t offset, uint32_t value_size) {
      return store_->slot_at(region, offset, value_size).lock;
    };
  }
  if (durable_) {
    lr.flush = persist_.flush;
    lr.drain = persist_.drain;
  }
  DRTMX_RETURN_IF_ERROR(register_record_handlers(w, lr));
  if (mvcc_) {
    DRTMX_RETURN_IF_ERROR(register_mvcc_handlers(w, *mvcc_, *store_));
    if (t == 0) {
      // The node's snapshot floor: computed, sent to every other node and
      // used for GC every floor_every_us (dst/mvcc_node.h).
      const uint64_t every_ns = uint64_t{cfg_.floor_every_us} * 1000;
      auto next = std::make_shared<uint64_t>(0);
      const r2::NodeId self = cfg_.fabric.node;
      const uint16_t nodes = cfg_.fabric.num_nodes;
      auto calls = std::make_shared<uint32_t>(0);
      w.add_poller([this, &w, next, calls, every_ns, self, nodes] {
        // The loop calls this every iteration (millions per second): read
        // the clock only every 64th (a clock read per iteration cost 6% of
        // a SmallBank run's cycles).
        if ((++*calls & 63) != 0) return false;
        const uint64_t now = r2::now_ns();
        if (now < *next) return false;
        *next = now + every_ns;
        // DST: no snapshot begins below the physical clock. GTS: none
        // below the newest StableTS seen here (node 0 reads its own, and
        // its floor messages carry it to the others).
        if (const dst::GtsOracle* o = mvcc_->oracle()) mvcc_->observe_stable(o->stable());
        const bool gts = cfg_.policy.mvcc == Mvcc::kGts;
        const uint64_t f = mvcc_->publish(gts ? mvcc_->seen_stable() : dst::physical_now());
        const uint64_t msg[3] = {self, f, mvcc_->seen_stable()};
        for (uint16_t n = 0; n < nodes; ++n) {
          if (n != self) (void)w.post_oneway({n, 0}, kRpcFloor, msg, sizeof msg);
        }
        mvcc_->gc();
        return false;  // periodic upkeep is not work: the loop may idle
      });
    }
  }
  DRTMX_RETURN_IF_ERROR(register_index_handlers(w, *store_, local_index_.range_ts));
  reps_[t] = std::make_unique<Replicator>(w, rc);
  DRTMX_RETURN_IF_ERROR(reps_[t]->attach());
  if (cfg_.crash_hook) reps_[t]->set_crash_hook(cfg_.crash_hook);
  // Each key's changes are applied in version order (StoreNode::
  // apply_in_order); one that arrives before an earlier change of its key
  // waits in the applier (BackupApplier::TryInstall).
  auto copy = std::make_shared<std::vector<uint64_t>>();  // this worker's slot copies
  apps_[t] = std::make_unique<BackupApplier>(
      w, rc, log->base, BackupApplier::TryInstall([this, copy](const RedoRecord& r) {
        const store::TableSpec* spec = catalog_.find(r.table);
        if (r.at_primary != 0) return confirm_at_primary(spec, r, *copy);
        using Change = store::tables::StoreNode::Change;
        const Change c = r.op == RedoOp::kInsert   ? Change::kInsert
                         : r.op == RedoOp::kDelete ? Change::kDelete
                                                   : Change::kUpdate;
        // MVCC: backups keep the replaced versions too (a promoted backup
        // serves snapshots), superseded at the record's commit timestamp.
        store::ApplyMvcc keep;
        // One pointer captured: std::function keeps it without allocating
        // (once per applied record).
        struct Ctx {
          dst::MvccNode* mvcc;
          const store::TableSpec* spec;
          const RedoRecord* r;
          uint64_t offset = ~uint64_t{0};  // of `rec`, resolved by will_keep
          bool versioned = false;
          dst::MvccNode::Record rec;
          bool resolve(uint64_t at) {
            if (at != offset) {
              offset = at;
              versioned = mvcc->resolve(store::tables::table_region(spec->id), at, spec->value_size,
                                        &rec) &&
                          rec.vs != nullptr;
            }
            return versioned;
          }
        } ctx{mvcc_.get(), spec, &r, ~uint64_t{0}, false, {}};
        if (mvcc_ && spec != nullptr) {
          keep.wts = r.ts;
          keep.will_keep = [x = &ctx](uint64_t offset) {
            if (x->resolve(offset)) x->rec.vs->prefetch_push(x->rec.slot);
          };
          keep.keep_old = [x = &ctx](uint64_t offset, const uint8_t* old, bool deleted) {
            if (!x->resolve(offset)) return true;  // not a versioned record: nothing to keep
            dst::VersionStore* vs = x->rec.vs;
            return deleted ? vs->bury(x->rec.slot, x->r->key, old, x->r->ts)
                           : vs->push(x->rec.slot, old, x->r->ts, /*reserved=*/false);
          };
        }
        uint64_t wrote = 0;
        Result<bool> res = spec == nullptr
                               ? Result<bool>(internal_error("log record of unknown table " +
                                                             std::to_string(r.table)))
                               : store_->apply_in_order(*spec, r.key, c, r.version, r.value,
                                                        mvcc_ ? &keep : nullptr, &wrote);
        if (!res.is_ok()) {
          note_install_error(res.status().to_string());
          return true;  // dropped (counted): finish() reports it
        }
        // Durable: flushed now, fenced before the entry is released.
        if (*res && durable_ && wrote != 0) {
          const r2::Region* reg = rt_->fabric().region(store::tables::table_region(spec->id));
          persist_.flush(reg->base + wrote, store::record_slot_size(spec->value_size));
        }
        return *res;
      }));
  if (cfg_.crash_hook) apps_[t]->set_crash_hook(cfg_.crash_hook);
  // Failover: the last entries of every ring decide a removed
  // coordinator's transactions (a coroutine has one in flight at most).
  if (gate_ && !durable_) apps_[t]->keep_history(4 * size_t{cfg_.coroutines} + 16);
  apps_[t]->set_prefetch([this](const RedoRecord& r) {
    if (r.at_primary != 0) {
      // Confirmed at its slot: bring the slot, not an index bucket.
      const store::TableSpec* spec = catalog_.find(r.table);
      const r2::Region* reg =
          spec ? rt_->fabric().region(store::tables::table_region(spec->id)) : nullptr;
      if (reg != nullptr && r.at_primary - 1 < reg->size) {
        __builtin_prefetch(reg->base + r.at_primary - 1);
      }
      return;
    }
    if (const store::TableSpec* spec = catalog_.find(r.table)) store_->prefetch(*spec, r.key);
  });
  // Each record is installed one loop turn after it is taken, its bucket
  // and then its slot prefetched in between; MVCC: and the version-store
  // lines the install's push will write.
  apps_[t]->set_staged_prefetch([this](const RedoRecord& r) {
    if (r.at_primary != 0) return;  // its slot was prefetched directly
    const store::TableSpec* spec = catalog_.find(r.table);
    uint64_t at = 0;
    if (spec == nullptr || !store_->prefetch_record(*spec, r.key, &at) || !mvcc_) return;
    dst::MvccNode::Record rec;
    if (r.op == RedoOp::kUpdate &&
        mvcc_->resolve(store::tables::table_region(spec->id), at, spec->value_size, &rec) &&
        rec.vs != nullptr) {
      rec.vs->prefetch_push(rec.slot);
    }
  });
  const store::tables::ScratchPlan sp = scratch_plan(catalog_, cfg_);
  const size_t per_co = per_coroutine_arena();
  const uint16_t threads = cfg_.fabric.threads, cos = cfg_.coroutines;
  const r2::NodeId self = cfg_.fabric.node;
  if (cfg_.sibling_wait && cos > 1) holds_[t] = std::make_unique<LocalHolds>(32 * size_t{cos}, cos);
  for (uint16_t c = 0; c < cos; ++c) {
    const size_t i = size_t{t} * cos + c;
    DRTMX_RETURN_IF_ERROR(w.spawn([=, this](r2::Co& co) {
      std::span<uint8_t> sc(scratch->base + sp.offset(t, c), sp.per_coroutine);
      locs_[i] = std::make_unique<StoreLocator>(catalog_, *caches_, sc, self);
      locs_[i]->set_local_index(&local_index_, co.direct(self));
      engines_[i] = std::make_unique<Engine>(co, *locs_[i], reps_[t].get(), cfg_.policy,
                                             arena->base + i * per_co, per_co, mvcc_.get());
      if (cfg_.crash_hook) engines_[i]->set_crash_hook(cfg_.crash_hook);
      engines_[i]->set_test_fault(cfg_.test_fault);
      engines_[i]->set_lock_plan(locks_.get());
      engines_[i]->set_local_holds(holds_[t].get());
      if (gate_) engines_[i]->set_gate(gate_.get(), i);
      TxnContext ctx{co, *engines_[i], *locs_[i],
                     static_cast<uint32_t>((uint32_t{self} * threads + t) * cos + c)};
      body_(ctx);
      // Passive RPCs this worker sent (a commit or unlock by RPC with
      // passive ACK, a delete's remove) may still be on their way when the
      // body returns. They are applied at their primaries only when the
      // receiver polls, so wait until each is acknowledged (acknowledged =
      // handled): after finish() the primaries hold every committed write.
      (void)co.wait_passive_acks();
      if (gate_) gate_->finished(i);
    }));
  }
  return Status::ok();
}

std::string TxnNode::appliers_state() const {
  std::string why;
  for (const auto& ap : apps_) {
    if (!ap) continue;
    why += "; " + ap->stuck();
    uint16_t table = 0;
    uint64_t key = 0, version = 0;
    const store::TableSpec* spec = nullptr;
    if (ap->oldest_deferred(&table, &key, &version) && (spec = catalog_.find(table))) {
      std::vector<uint8_t> v(spec->value_size);
      uint64_t have = 0;
      Result<bool> got = store_->get_local(*spec, key, v, &have);
      why += " (this copy of that record: " +
             (!got.is_ok() ? got.status().to_string()
              : *got       ? "version " + std::to_string(have)
                           : std::string("absent")) +
             ")";
    }
  }
  return why;
}

void TxnNode::note_install_error(const std::string& why) {
  if (install_errors_.fetch_add(1) == 0) {
    std::lock_guard<std::mutex> g(mu_);
    first_install_error_ = why;
  }
}

Status TxnNode::finish(std::chrono::milliseconds limit) {
  Status st;
  if (!rt_->wait_coroutines(limit)) {
    st = timeout_error("txn node " + std::to_string(cfg_.fabric.node) +
                       ": transaction coroutines did not finish within " +
                       std::to_string(limit.count()) + " ms");
  }
  // Entries this node wrote, per (backup node, thread).
  const uint16_t nodes = cfg_.fabric.num_nodes, threads = cfg_.fabric.threads;
  std::ostringstream os;
  for (uint16_t b = 0; b < nodes; ++b) {
    for (uint16_t t = 0; t < threads; ++t) {
      const auto& ws = reps_[t] ? reps_[t]->writers() : std::vector<LogWriter>{};
      os << (b < ws.size() ? ws[b].entries() : 0) << ' ';
    }
  }
  uint64_t expected = 0;
  // Per writer node still a member: the entries it wrote to this node.
  std::vector<uint64_t> expect_from(nodes, 0);
  // Survive-failures mode: the collectives are named by the epoch, after
  // any reconfiguration in progress; one interrupted by a further change
  // is run again under the next epoch.
  std::string suffix;
  const auto fo_until = std::chrono::steady_clock::now() + cfg_.drain_timeout;
  for (int attempt = 0; st.is_ok(); ++attempt) {
    if (failover_) {
      st = wait_failover(fo_until);
      if (!st.is_ok()) break;
      suffix = "." + std::to_string(rt_->control().view().epoch());
    }
    auto all = rt_->control().exchange("txnnode.sent" + suffix, os.str());
    if (!all.is_ok() && failover_ && all.status().code() == Code::kAborted && attempt < 8 &&
        rt_->health().is_ok()) {
      continue;
    }
    if (!all.is_ok()) {
      st = all.status();
    } else {
      for (size_t from = 0; from < all->size() && from < nodes; ++from) {
        const std::string& blob = (*all)[from];
        if (blob.empty()) continue;  // a removed node's
        std::istringstream is(blob);
        for (uint16_t b = 0; b < nodes; ++b) {
          for (uint16_t t = 0; t < threads; ++t) {
            uint64_t v = 0;
            is >> v;
            if (b != cfg_.fabric.node) continue;
            expected += v;
            expect_from[from] += v;
          }
        }
      }
    }
    break;
  }
  if (st.is_ok()) {
    // The appliers run on the workers; applied() is an atomic counter
    // published after each install.
    const auto until = std::chrono::steady_clock::now() + cfg_.drain_timeout;
    auto applied = [&] {
      uint64_t a = 0;
      for (auto& ap : apps_) a += ap ? ap->applied() : 0;
      return a;
    };
    auto taken_from = [&](uint16_t from) {
      uint64_t a = 0;
      for (auto& ap : apps_) a += ap ? ap->taken_from(from) : 0;
      return a;
    };
    // The first live writer some of whose entries are still in the rings
    // (nodes: none). A count alone would not do after a failover: what
    // was applied of the removed writers' entries is not expected.
    auto behind = [&]() -> uint16_t {
      for (uint16_t from = 0; from < nodes; ++from) {
        if (taken_from(from) < expect_from[from]) return from;
      }
      return nodes;
    };
    // After a failover the counts exclude removed coordinators' entries
    // (applied() includes them): every live coordinator finished logging
    // before the exchange, so appliers with nothing left to do are drained.
    std::vector<uint64_t> p0;
    for (auto& ap : apps_) p0.push_back(ap ? ap->polls() : 0);
    auto drained = [&] {
      if (!failover_) return true;
      for (size_t i = 0; i < apps_.size(); ++i) {
        if (apps_[i] && !apps_[i]->drained_since(p0[i])) return false;
      }
      return true;
    };
    auto done = [&] {
      return behind() == nodes && (failover_ ? drained() : applied() >= expected);
    };
    while (!done() && corrupt_reason().empty() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const std::string corrupt = corrupt_reason();
    if (!corrupt.empty()) {
      st = internal_error("txn node " + std::to_string(cfg_.fabric.node) +
                          ": a log ring held a corrupt entry (" + corrupt +
                          "); its applier stopped");
    } else if (const uint16_t from = behind(); from != nodes) {
      st = timeout_error("txn node " + std::to_string(cfg_.fabric.node) + ": its appliers took " +
                         std::to_string(taken_from(from)) + " of the " +
                         std::to_string(expect_from[from]) + " log entries node " +
                         std::to_string(from) + " wrote to it within the drain timeout" +
                         appliers_state());
    } else if (!done()) {
      st = timeout_error("txn node " + std::to_string(cfg_.fabric.node) + ": backups applied " +
                         std::to_string(applied()) + " of " + std::to_string(expected) +
                         " log entries within the drain timeout" + appliers_state());
    }
  }
  if (st.is_ok()) st = rt_->control().barrier("txnnode.drained" + suffix);
  if (failover_) {
    {
      std::lock_guard<std::mutex> g(hook_->mu);
      hook_->failover = nullptr;
    }
    failover_->stop();
    if (st.is_ok()) st = failover_->status();
  }
  rt_->stop();
  launched_ = false;
  if (st.is_ok()) st = rt_->failure();
  {
    std::lock_guard<std::mutex> g(mu_);
    if (st.is_ok()) st = setup_error_;
  }
  if (install_errors_.load() != 0) {
    // First: a dropped record can be what a drain timeout waits for.
    std::string first;
    {
      std::lock_guard<std::mutex> g(mu_);
      first = first_install_error_;
    }
    Status e = internal_error("txn node " + std::to_string(cfg_.fabric.node) + ": " +
                              std::to_string(install_errors_.load()) +
                              " log records could not be installed into backup copies (the "
                              "first: " +
                              first + ")");
    st = st.is_ok() ? e : e.with_context(st.message());
  }
  if (st.is_ok() && !corrupt_reason().empty()) {
    st = internal_error("txn node " + std::to_string(cfg_.fabric.node) +
                        ": a log ring held a corrupt entry (" + corrupt_reason() + ")");
  }
  if (!st.is_ok()) rt_->control().report_failure(st.message());
  return st;
}

// Durable logs: a record of a transaction whose primary copy is here. The
// coordinator writes it back itself (one-sided or by RPC); the entry may
// be released only once that write-back is persistent. Taken (true) when
// the slot holds the record at the logged version or later — whole: its
// seal verifies — or no longer holds that record at all (deleted and the
// slot reused): then its lines are flushed.
bool TxnNode::confirm_at_primary(const store::TableSpec* spec, const RedoRecord& r,
                                 std::vector<uint64_t>& copy) {
  const r2::Region* reg =
      spec ? rt_->fabric().region(store::tables::table_region(spec->id)) : nullptr;
  const uint64_t off = r.at_primary - 1;
  const size_t bytes = spec ? store::record_slot_size(spec->value_size) : 0;
  if (reg == nullptr || off % 64 != 0 || off > reg->size || bytes > reg->size - off) {
    note_install_error("a log record for a primary's slot at offset " +
                       std::to_string(r.at_primary - 1) + " outside its table's region");
    return true;  // malformed (counted): finish() reports it
  }
  const uint8_t* rec = reg->base + off;
  copy.resize(bytes / 8);
  store::load_words(copy.data(), rec, bytes);
  const auto* h = reinterpret_cast<const store::RecordHeader*>(copy.data());
  if (h->incarnation == r.incarnation) {
    if (h->version < r.version) return false;  // the write-back has not landed
    const store::RecordCheck c = store::verify(copy.data(), spec->value_size);
    if (c != store::RecordCheck::kOk && c != store::RecordCheck::kDeleted) {
      return false;  // landing right now (or a later one is): look again
    }
  }
  persist_.flush(rec, bytes);
  return true;
}

std::string TxnNode::corrupt_reason() const {
  for (const auto& ap : apps_) {
    if (ap && ap->corrupt()) return ap->corrupt_reason();
  }
  return {};
}

TxnNode::Traffic TxnNode::traffic() const {
  Traffic t;
  t.committed = stats().committed;
  for (uint16_t w = 0; w < cfg_.fabric.threads; ++w) {
    const r2::WorkerStats& s = rt_->worker(w).stats();
    t.ops_posted += s.ops_posted;
    t.messages_out += s.messages_out;
    if (w < reps_.size() && reps_[w]) {
      t.log_entries += reps_[w]->entries();
      t.log_bytes += reps_[w]->log_bytes();
    }
  }
  return t;
}

TxnStats TxnNode::stats() const {
  TxnStats s;
  for (const auto& e : engines_) {
    if (!e) continue;
    s.committed += e->stats().committed;
    s.reads_ahead += e->stats().reads_ahead;
    s.reads_ahead_direct += e->stats().reads_ahead_direct;
    s.snapshot_reads += e->stats().snapshot_reads;
    s.snapshot_reads_onesided += e->stats().snapshot_reads_onesided;
    s.snapshot_reads_direct += e->stats().snapshot_reads_direct;
    s.snapshot_field_reads += e->stats().snapshot_field_reads;
    s.mvcc_steps_direct += e->stats().mvcc_steps_direct;
    s.writes_direct += e->stats().writes_direct;
    s.sibling_waits += e->stats().sibling_waits;
    s.sibling_wait_ns += e->stats().sibling_wait_ns;
    for (int i = 0; i < kAbortKinds; ++i) s.aborts[i] += e->stats().aborts[i];
  }
  return s;
}

}  // namespace drtmx::txn
