#include "txn/failover.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "r2/common/clock.h"
#include "store/record.h"
#include "txn/failover_blob.h"
#include "txn/failover_resolve.h"

namespace drtmx::txn {

// --- the gate ----------------------------------------------------------------

FailoverGate::FailoverGate(const r2::MembershipView* view, size_t slots)
    : view_(view), slots_(new Slot[slots == 0 ? 1 : slots]), n_(slots) {}

bool FailoverGate::enter(r2::Co& co, size_t slot, uint64_t* began) {
  Slot& s = slots_[slot];
  for (;;) {
    // Dekker with close() and with old_epoch_done(): the slot is marked
    // inside (with the epoch) before the gate's state is read and before
    // the transaction's own epoch checks; the reconfigurer moves the
    // epoch or closes before reading the slots.
    const uint64_t e = epoch();
    s.word.store(kInside | (e << 2), std::memory_order_seq_cst);
    const uint32_t g = state_.load(std::memory_order_seq_cst);
    if (g == kOpen) {
      *began = e;
      return true;
    }
    s.word.store(kOutside, std::memory_order_release);
    if (g == kFailed) return false;
    // Paused: what this coroutine sent with passive ACK must be handled
    // (acknowledged) before the survivors compare their copies.
    (void)co.wait_passive_acks();
    s.word.store(kParked, std::memory_order_seq_cst);
    while (state_.load(std::memory_order_acquire) == kClosed) co.yield_idle();
  }
}

void FailoverGate::await_settled(r2::Co& co, uint64_t epoch, uint64_t timeout_ns) const {
  const uint64_t until = r2::now_ns() + timeout_ns;
  while (settled_.load(std::memory_order_acquire) < epoch && !failed() && r2::now_ns() < until) {
    co.yield_idle();
  }
}

bool FailoverGate::quiet() const {
  for (size_t i = 0; i < n_; ++i) {
    const uint64_t s = slots_[i].word.load(std::memory_order_seq_cst);
    if (s != kParked && s != kFinished) return false;
  }
  return true;
}

bool FailoverGate::old_epoch_done(uint64_t epoch) const {
  for (size_t i = 0; i < n_; ++i) {
    const uint64_t s = slots_[i].word.load(std::memory_order_seq_cst);
    if ((s & 3) == kInside && (s >> 2) < epoch) return false;
  }
  return true;
}

// --- blobs -------------------------------------------------------------------
namespace {

using Out = failover::BlobOut;
using In = failover::BlobIn;

bool removed_lock(uint64_t lock, uint64_t live) {
  if (lock == store::kOwnerLockWord) return false;
  const uint64_t node = (lock >> 47) & 0xff;
  return node >= 64 || ((live >> node) & 1) == 0;
}

// What a survivor knows about the removed nodes.
struct Reported {
  struct Ring {
    uint16_t node = 0, thread = 0;
    bool full = false;  // its history dropped older entries
    uint64_t oldest = 0;
    std::vector<LoggedTxn> txns;
  };
  std::vector<Ring> rings;
  std::vector<store::tables::StoreNode::HeldSlot> held;
};

std::string encode_reported(const Reported& r) {
  Out o;
  o.put<uint32_t>(static_cast<uint32_t>(r.rings.size()));
  for (const Reported::Ring& g : r.rings) {
    o.put(g.node);
    o.put(g.thread);
    o.put<uint8_t>(g.full);
    o.put(g.oldest);
    o.put<uint32_t>(static_cast<uint32_t>(g.txns.size()));
    for (const LoggedTxn& t : g.txns) {
      o.put(t.txn);
      o.put(t.targets);
      failover::put_records(o, t.records);
    }
  }
  o.put<uint32_t>(static_cast<uint32_t>(r.held.size()));
  for (const auto& h : r.held) {
    o.put(h.table);
    o.put(h.key);
    o.put(h.version);
    o.put(h.offset);
    o.put(h.lock);
  }
  return o.s;
}

bool decode_reported(const std::string& s, Reported* r) {
  if (s.empty()) return true;  // a removed node's blob
  In in{s};
  const uint32_t rings = in.get<uint32_t>();
  for (uint32_t i = 0; i < rings && in.ok; ++i) {
    Reported::Ring g;
    g.node = in.get<uint16_t>();
    g.thread = in.get<uint16_t>();
    g.full = in.get<uint8_t>() != 0;
    g.oldest = in.get<uint64_t>();
    const uint32_t n = in.get<uint32_t>();
    for (uint32_t j = 0; j < n && in.ok; ++j) {
      LoggedTxn t;
      t.txn = in.get<uint64_t>();
      t.targets = in.get<uint64_t>();
      failover::get_records(in, &t.records);
      g.txns.push_back(std::move(t));
    }
    r->rings.push_back(std::move(g));
  }
  const uint32_t held = in.get<uint32_t>();
  for (uint32_t i = 0; i < held && in.ok; ++i) {
    store::tables::StoreNode::HeldSlot h;
    h.table = in.get<uint32_t>();
    h.key = in.get<uint64_t>();
    h.version = in.get<uint64_t>();
    h.offset = in.get<uint64_t>();
    h.lock = in.get<uint64_t>();
    r->held.push_back(h);
  }
  return in.ok && in.at == s.size();
}

std::string where(const store::TableSpec* t, uint64_t key) {
  return "record " + std::to_string(key) + " of table '" + (t ? t->name : std::string("?")) + "'";
}

}  // namespace

// --- the reconfigurer --------------------------------------------------------

Failover::Failover(Parts p) : p_(std::move(p)) {
  live_ = p_.nodes >= 64 ? ~uint64_t{0} : (uint64_t{1} << p_.nodes) - 1;
}

Failover::~Failover() {
  stop();
}

void Failover::start() {
  thread_ = std::thread([this] { loop(); });
}

void Failover::notify() {
  {
    std::lock_guard<std::mutex> g(mu_);
    ++signals_;
  }
  cv_.notify_all();
}

void Failover::stop() {
  {
    std::lock_guard<std::mutex> g(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status Failover::status() const {
  std::lock_guard<std::mutex> g(mu_);
  return status_;
}

std::vector<FailoverReport> Failover::reports() const {
  std::lock_guard<std::mutex> g(mu_);
  return reports_;
}

void Failover::loop() {
  uint64_t seen_signals = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> g(mu_);
      // The view may move between a notify and here: wake on either, and
      // look at the view every 100 ms anyway (a missed notify costs that).
      cv_.wait_for(g, std::chrono::milliseconds(100), [&] {
        return stop_ || signals_ != seen_signals || p_.control->view().epoch() != handled_epoch_;
      });
      if (stop_) return;
      seen_signals = signals_;
    }
    const r2::MembershipView::Snapshot v = p_.control->view().snapshot();
    if (v.epoch == handled_epoch_) continue;
    if (!v.live.test(p_.self)) {
      // This node was removed (it was stopped or cut off past its lease):
      // it must not run another transaction.
      std::lock_guard<std::mutex> g(mu_);
      Status h = p_.control->health();
      status_ = h.is_ok()
                    ? aborted("node " + std::to_string(p_.self) +
                              " was removed from the cluster at epoch " + std::to_string(v.epoch))
                    : h;
      p_.gate->fail();
      handled_epoch_ = v.epoch;
      return;
    }
    busy_.store(true, std::memory_order_release);
    FailoverReport rep;
    rep.epoch = v.epoch;
    rep.seen_ns = r2::now_ns();
    Status s = reconfigure(v, &rep);
    if (!s.is_ok() && s.code() == Code::kAborted && p_.control->view().epoch() != v.epoch &&
        p_.control->health().is_ok()) {
      // Interrupted by a further change: start over under the newer epoch.
      busy_.store(false, std::memory_order_release);
      continue;
    }
    {
      std::lock_guard<std::mutex> g(mu_);
      if (s.is_ok()) {
        reports_.push_back(rep);
        handled_epoch_ = v.epoch;
      } else {
        status_ = s.with_context("node " + std::to_string(p_.self) +
                                 " could not continue after the membership change to epoch " +
                                 std::to_string(v.epoch));
        p_.gate->fail();
        handled_epoch_ = v.epoch;
      }
    }
    busy_.store(false, std::memory_order_release);
    if (!s.is_ok()) return;
  }
}

Status Failover::check_copies(uint64_t live, uint16_t* min_copies) const {
  std::string lost;
  size_t lost_count = 0;
  uint16_t fewest = store::kMaxReplicas;
  for (const store::TableSpec& t : p_.catalog->tables()) {
    if (t.scheme == store::PartitionScheme::kReplicated) continue;
    for (store::PartitionId q = 0; q < p_.catalog->partitions(t); ++q) {
      const store::PartitionReplicas r = p_.catalog->replicas_of(t, q, p_.self, live);
      const uint16_t copies = r.primary == store::kNoNode ? 0 : uint16_t(1 + r.backup_count);
      fewest = std::min(fewest, copies);
      if (copies >= 2) continue;
      if (++lost_count <= 8) {
        lost += (lost.empty() ? "" : ", ") + t.name + "/p" + std::to_string(q) + " (" +
                std::to_string(copies) + (copies == 1 ? " copy)" : " copies)");
      }
    }
  }
  *min_copies = fewest;
  if (lost_count == 0) return Status::ok();
  return unavailable(std::to_string(lost_count) +
                     " partitions would be left with fewer than 2 live copies: " + lost +
                     (lost_count > 8 ? ", ..." : "") +
                     "; the cluster cannot continue (raise --replicas, or run more nodes)");
}

Status Failover::wait_appliers(const std::function<bool(const BackupApplier&, uint64_t)>& done,
                               std::chrono::steady_clock::time_point until,
                               const std::string& what) const {
  const auto& apps = *p_.appliers;
  std::vector<uint64_t> p0(apps.size(), 0);
  for (size_t i = 0; i < apps.size(); ++i) p0[i] = apps[i] ? apps[i]->polls() : 0;
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < apps.size() && all; ++i) all = !apps[i] || done(*apps[i], p0[i]);
    if (all) return Status::ok();
    if (std::chrono::steady_clock::now() > until) {
      std::string why;
      for (size_t i = 0; i < apps.size(); ++i) {
        if (apps[i] && !done(*apps[i], p0[i])) {
          why += "; " + apps[i]->stuck() + ", gated rings mask " + std::to_string(apps[i]->gated());
        }
      }
      return timeout_error("backup appliers did not " + what + " within " +
                           std::to_string(p_.pause_timeout_ms) + " ms" + why);
    }
    std::this_thread::yield();
  }
}

Status Failover::durable_drain_and_decide(uint64_t gone, const std::string& tag,
                                          std::chrono::steady_clock::time_point until,
                                          std::vector<failover::DurableDecision>* decisions) {
  const auto& apps = *p_.appliers;
  DRTMX_RETURN_IF_ERROR(wait_appliers(
      [gone](const BackupApplier& a, uint64_t p0) { return a.settled_since(p0, gone); }, until,
      "apply the live coordinators' entries"));
  const failover::DurableReport mine = failover::durable_report(p_.durable_parts, gone, apps);
  auto all = p_.control->exchange(tag + "durable", failover::encode_durable(mine));
  if (!all.is_ok()) return all.status();
  std::vector<failover::DurableReport> reports(all->size());
  for (size_t n = 0; n < all->size(); ++n) {
    if (!failover::decode_durable((*all)[n], &reports[n])) {
      return internal_error("node " + std::to_string(n) +
                            " sent a malformed durable failover report");
    }
  }
  *decisions = failover::durable_decide(reports);
  failover::publish_decisions(*decisions, apps, gone);
  return wait_appliers(
      [gone](const BackupApplier& a, uint64_t p0) {
        for (uint16_t n = 0; n < 64; ++n) {
          if (((gone >> n) & 1) != 0 && !a.stopped(n)) return false;
        }
        return a.settled_since(p0, gone);
      },
      until, "take the removed writers' decided entries");
}

Status Failover::reconfigure(const r2::MembershipView::Snapshot& v, FailoverReport* rep) {
  uint64_t live = 0;
  for (uint16_t n = 0; n < p_.nodes && n < 64; ++n) {
    if (v.live.test(n)) live |= uint64_t{1} << n;
  }
  const uint64_t gone = live_ & ~live;
  for (uint16_t n = 0; n < p_.nodes && n < 64; ++n) {
    if ((gone >> n) & 1) rep->removed.push_back(n);
  }
  const std::string tag = "reconf." + std::to_string(v.epoch) + ".";
  // 1. Refusals.
  if (p_.nodes > 64) return invalid_argument("failover supports clusters of at most 64 nodes");
  if (p_.durable && rep->removed.size() > 1) {
    // An entry's mark tells whether its coordinator's own node was among
    // its targets, not which other nodes were: with two removed at once an
    // acknowledged transaction could look incomplete.
    return unavailable("durable failover removes one node at a time; " +
                       std::to_string(rep->removed.size()) +
                       " were removed at once (restart the cluster from its pools with "
                       "--recover)");
  }
  if (p_.gts && ((gone & 1) != 0)) {
    return unavailable(
        "node 0, which hosts the GTS timestamp oracle (--policy=drtmx-gts), was "
        "removed; the oracle is not replicated");
  }
  DRTMX_RETURN_IF_ERROR(check_copies(live, &rep->min_copies));

  // 2. Pause — or, with volatile logs and no GTS oracle, not: transactions
  //    go on, and only those that touch a partition whose primary was
  //    removed fail (kNodeFailure) and wait for step 6 (FailoverGate).
  //    Durable appliers are gated on decisions (a pause lets them settle),
  //    and settling the GTS oracle's issued timestamps needs every
  //    coordinator stopped.
  const bool pause = p_.durable || p_.gts;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(p_.pause_timeout_ms);
  if (pause) p_.gate->close();
  if (p_.mvcc != nullptr) {
    p_.mvcc->set_reconfiguring(true);
    // Garbage collection goes on without the removed nodes' floors: a
    // backup that waits for room in a version store (its applier defers
    // the record) must get it before the drain below can end.
    p_.mvcc->drop_peers(gone);
  }
  // Log entries go to the live copies only from here on; primaries stay
  // where they were until step 6 (store/placement.h).
  if (!pause) p_.caches->placement().drop_backups(live);
  while (pause ? !p_.gate->quiet() : !p_.gate->old_epoch_done(v.epoch)) {
    if (std::chrono::steady_clock::now() > until) {
      return timeout_error(std::string(pause ? "transactions did not pause"
                                             : "transactions begun before the change did not end") +
                           " within " + std::to_string(p_.pause_timeout_ms) + " ms");
    }
    std::this_thread::yield();
  }
  // Every survivor: no transaction of an older epoch is running, so every
  // entry they logged is complete in the rings.
  DRTMX_RETURN_IF_ERROR(p_.control->barrier(tag + "quiet"));
  rep->quiet_ns = r2::now_ns();

  // 3. Drain: every applier applied what its rings held at this point
  //    (entries of removed writers beyond a hole included). With the pause:
  //    polled a few times in a row with nothing to do; without it, a drain
  //    mark (live coordinators keep logging). Durable logs:
  //    failover_durable.h.
  const auto& apps = *p_.appliers;
  std::vector<failover::DurableDecision> durable;
  if (p_.durable) DRTMX_RETURN_IF_ERROR(durable_drain_and_decide(gone, tag, until, &durable));
  std::vector<uint64_t> p0(apps.size(), 0);
  for (size_t i = 0; i < apps.size() && !p_.durable; ++i) {
    if (!apps[i]) continue;
    apps[i]->skip_holes(gone);
    p0[i] = pause ? apps[i]->polls() : apps[i]->request_mark();
  }
  auto drained = [&](size_t i) {
    return !apps[i] || (pause ? apps[i]->drained_since(p0[i]) : apps[i]->marked(p0[i]));
  };
  for (; !p_.durable;) {
    bool all = true;
    for (size_t i = 0; i < apps.size(); ++i) all = all && drained(i);
    if (all) break;
    if (std::chrono::steady_clock::now() > until) {
      std::string why;
      for (size_t i = 0; i < apps.size(); ++i) {
        if (!drained(i)) why += "; " + apps[i]->stuck();
      }
      return timeout_error("backup appliers did not drain their log rings within " +
                           std::to_string(p_.pause_timeout_ms) + " ms" + why);
    }
    std::this_thread::yield();
  }

  // 4. What this node knows of the removed coordinators' transactions.
  Reported mine;
  for (uint16_t d : rep->removed) {
    for (size_t t = 0; t < apps.size(); ++t) {
      if (!apps[t]) continue;
      Reported::Ring g;
      g.node = d;
      g.thread = static_cast<uint16_t>(t);
      g.txns = apps[t]->history(d);
      g.full = apps[t]->history_full(d);
      g.oldest = g.txns.empty() ? 0 : g.txns.front().txn;
      mine.rings.push_back(std::move(g));
    }
  }
  mine.held = p_.store->locked_slots([gone](uint64_t lock) { return removed_lock(lock, ~gone); });
  auto all = p_.control->exchange(tag + "inflight", encode_reported(mine));
  if (!all.is_ok()) return all.status();
  std::vector<failover::RingHistory> histories;
  std::vector<failover::HeldRecord> held;
  for (size_t n = 0; n < all->size(); ++n) {
    Reported r;
    if (!decode_reported((*all)[n], &r)) {
      return internal_error("node " + std::to_string(n) + " sent a malformed failover report");
    }
    for (Reported::Ring& g : r.rings) {
      histories.push_back(
          {static_cast<uint16_t>(n), g.node, g.thread, g.full, g.oldest, std::move(g.txns)});
    }
    for (const auto& h : r.held) {
      held.push_back({static_cast<uint16_t>(n), static_cast<uint16_t>(h.table), h.key});
    }
  }

  // 5. Every survivor's copies of the records concerned (its locks of
  //    removed nodes cleared first: installs refuse a locked record), the
  //    decisions (the same on every survivor: the same blobs), the repair.
  // With the pause the removed nodes' locks go first (installs refuse a
  // locked record). Without it they stay until every survivor has repaired
  // its copies (below): a transaction running meanwhile meets them locked
  // and neither reads a record about to change nor writes one.
  if (pause) {
    for (const auto& h : mine.held) {
      p_.store->clear_lock(h.table, h.offset, h.lock);
      ++rep->locks_released;
    }
  }
  std::map<failover::RecKey, const store::tables::StoreNode::HeldSlot*> held_here;
  if (!pause) {
    for (const auto& h : mine.held) held_here[{static_cast<uint16_t>(h.table), h.key}] = &h;
  }
  auto hosted = [&](const store::TableSpec* spec, uint64_t key) {
    return spec != nullptr &&
           p_.catalog->hosts(p_.self, *spec, p_.catalog->partition_of(*spec, key));
  };
  const std::set<failover::RecKey> keys = failover::keys_concerned(histories, held);
  Out copies;
  std::vector<uint8_t> value;
  for (const failover::RecKey& k : keys) {
    const store::TableSpec* spec = p_.catalog->find(k.first);
    if (!hosted(spec, k.second)) continue;
    value.assign(spec->value_size, 0);
    uint64_t version = 0;
    Result<bool> got = p_.store->get_local(*spec, k.second, value, &version);
    if (!got.is_ok()) return got.status().with_context(where(spec, k.second));
    // Primary under the placement before this change (it moves in step 6).
    const bool primary = p_.store->is_primary(*spec, p_.catalog->partition_of(*spec, k.second));
    copies.put(k.first);
    copies.put(k.second);
    copies.put<uint8_t>(static_cast<uint8_t>((*got ? 1 : 0) | (primary ? 2 : 0)));
    copies.put(version);
    copies.put<uint32_t>(spec->value_size);
    copies.bytes(value.data(), value.size());
  }
  auto all_copies = p_.control->exchange(tag + "copies", copies.s);
  if (!all_copies.is_ok()) return all_copies.status();
  std::map<failover::RecKey, std::vector<failover::Copy>> have;
  for (size_t n = 0; n < all_copies->size(); ++n) {
    const std::string& blob = (*all_copies)[n];
    In in{blob};
    while (in.ok && in.at < blob.size()) {
      failover::Copy c;
      c.survivor = static_cast<uint16_t>(n);
      const uint16_t table = in.get<uint16_t>();
      const uint64_t key = in.get<uint64_t>();
      const uint8_t flags = in.get<uint8_t>();
      c.present = (flags & 1) != 0;
      c.primary = (flags & 2) != 0;
      c.version = in.get<uint64_t>();
      const uint32_t bytes = in.get<uint32_t>();
      const uint8_t* p = in.bytes(bytes);
      if (!in.ok) return internal_error("a survivor sent a malformed copy report");
      if (c.present) c.value.assign(reinterpret_cast<const char*>(p), bytes);
      have[{table, key}].push_back(std::move(c));
    }
  }
  Result<failover::Resolution> res = failover::resolve(histories, held, have, live);
  if (!res.is_ok()) return res.status();
  for (const failover::DurableDecision& d : durable) {
    (d.committed ? rep->committed : rep->aborted) += 1;
    if (!d.complete) ++rep->incomplete;
    if (!d.committed) continue;
    for (const LoggedRecord& r : d.records)
      rep->committed_writes.emplace_back(r.table, r.key, r.version);
  }
  for (const failover::Decision& d : res->txns) {
    (d.committed ? rep->committed : rep->aborted) += 1;
    if (!d.complete) ++rep->incomplete;
    if (!d.committed) continue;
    for (const LoggedRecord& r : d.records)
      rep->committed_writes.emplace_back(r.table, r.key, r.version);
  }
  std::sort(rep->committed_writes.begin(), rep->committed_writes.end());
  rep->committed_writes.erase(
      std::unique(rep->committed_writes.begin(), rep->committed_writes.end()),
      rep->committed_writes.end());
  // Held records that end absent: removed under their lock once every
  // survivor repaired (below).
  std::vector<const store::tables::StoreNode::HeldSlot*> to_remove;
  for (const auto& [k, w] : res->wanted) {
    const store::TableSpec* spec = p_.catalog->find(k.first);
    if (!hosted(spec, k.second)) continue;
    if (auto h = held_here.find(k); h != held_here.end()) {
      // A primary copy locked by a removed node, transactions running: it
      // changes under that lock.
      if (!w.present) {
        to_remove.push_back(h->second);
      } else if (h->second->version != w.version) {
        if (w.value.size() != spec->value_size) {
          return internal_error("cannot repair " + where(spec, k.second) +
                                ": the copy of version " + std::to_string(w.version) + " has " +
                                std::to_string(w.value.size()) + " bytes (" + w.why + ")");
        }
        DRTMX_RETURN_IF_ERROR(
            p_.store
                ->write_held(spec->id, h->second->offset, h->second->lock, w.version,
                             {reinterpret_cast<const uint8_t*>(w.value.data()), w.value.size()})
                .with_context(where(spec, k.second)));
        ++rep->records_repaired;
      }
      continue;
    }
    value.assign(spec->value_size, 0);
    uint64_t version = 0;
    Result<bool> got = p_.store->get_local(*spec, k.second, value, &version);
    if (!got.is_ok()) return got.status().with_context(where(spec, k.second));
    const bool present = *got;
    if (present == w.present && (!present || version == w.version)) continue;
    if (w.present && w.value.size() != spec->value_size) {
      return internal_error("cannot repair " + where(spec, k.second) + ": the copy of version " +
                            std::to_string(w.version) + " has " + std::to_string(w.value.size()) +
                            " bytes, not " + std::to_string(spec->value_size) + " (" + w.why + ")");
    }
    if (p_.durable) {
      std::span<const uint8_t> val(reinterpret_cast<const uint8_t*>(w.value.data()),
                                   w.value.size());
      Result<bool> changed =
          failover::durable_install(p_.durable_parts, *spec, k.second, w.present, w.version, val);
      if (!changed.is_ok()) return changed.status().with_context(where(spec, k.second));
      if (*changed) ++rep->records_repaired;
      continue;
    }
    if (present) DRTMX_RETURN_IF_ERROR(p_.store->install(*spec, k.second, 0, {}, true).status());
    if (w.present) {
      std::span<const uint8_t> val(reinterpret_cast<const uint8_t*>(w.value.data()),
                                   w.value.size());
      DRTMX_RETURN_IF_ERROR(p_.store->install(*spec, k.second, w.version, val, false).status());
    }
    ++rep->records_repaired;
  }
  // GTS: the removed coordinators' timestamps will never be installed.
  if (p_.gts && p_.mvcc != nullptr) {
    if (dst::GtsOracle* o = p_.mvcc->oracle_mut()) o->settle_issued();
  }

  if (!pause) {
    // Every survivor's copies are repaired: the removed nodes' locks go
    // (the records that end absent with them: deleted under the lock).
    DRTMX_RETURN_IF_ERROR(p_.control->barrier(tag + "repaired"));
    for (const auto* h : to_remove) {
      const store::TableSpec* spec = p_.catalog->find(static_cast<TableId>(h->table));
      store::tables::RecordAddr a;
      a.offset = h->offset;
      a.incarnation = h->incarnation;
      DRTMX_RETURN_IF_ERROR(p_.store->remove_held(*spec, h->key, a, h->lock)
                                .with_context("removing " + where(spec, h->key)));
      ++rep->records_repaired;
    }
    for (const auto& h : mine.held) {
      p_.store->clear_lock(h.table, h.offset, h.lock);
      ++rep->locks_released;
    }
  }

  if (p_.durable) {
    // Every applier applied and released what it took of the removed
    // writers' rings (their deferred records were waiting for the repair
    // above), and nothing waits any more.
    DRTMX_RETURN_IF_ERROR(wait_appliers(
        [gone](const BackupApplier& a, uint64_t p0) {
          for (uint16_t n = 0; n < 64; ++n) {
            if (((gone >> n) & 1) != 0 && !a.resolved(n)) return false;
          }
          return a.drained_since(p0);
        },
        until, "release the removed writers' entries"));
    Result<uint64_t> replayed = failover::finish_removed(p_.durable_parts, gone, durable, apps);
    if (!replayed.is_ok()) return replayed.status();
    rep->records_repaired += *replayed;
    if (p_.durable_parts.save_membership) {
      DRTMX_RETURN_IF_ERROR(p_.durable_parts.save_membership(v.epoch, live));
    }
  }

  // 6. Promote: the moved partitions' new primaries serve.
  for (const auto& a : apps) {
    if (a) a->retire(gone);
  }
  p_.caches->placement().set_live(live);
  p_.caches->reset();
  live_ = live;
  DRTMX_RETURN_IF_ERROR(p_.control->barrier(tag + "done"));
  rep->serving_ns = r2::now_ns();
  if (p_.mvcc != nullptr) p_.mvcc->set_reconfiguring(false);
  p_.gate->settled(v.epoch);
  if (pause) p_.gate->open();
  return Status::ok();
}

}  // namespace drtmx::txn
