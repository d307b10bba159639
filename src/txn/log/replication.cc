#include "txn/log/replication.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "r2/common/clock.h"
#include "rdpma/persist_op.h"

namespace drtmx::txn {

namespace {
struct RedoHead {
  uint16_t table;
  uint8_t op;
  uint8_t flags;
  uint32_t value_len;
  uint64_t key;
  uint64_t version;
  uint64_t ts;
};
static_assert(sizeof(RedoHead) == 32);
constexpr uint8_t kAtPrimary = 1;  // a RedoAtPrimary follows the head
struct RedoAtPrimary {
  uint64_t at;
  uint32_t incarnation;
  uint32_t pad;
};
static_assert(sizeof(RedoAtPrimary) == 16);

size_t pad8(size_t n) {
  return (n + 7) & ~size_t{7};
}
}  // namespace

void encode_redo(std::span<const RedoRecord> records, std::vector<uint8_t>* out) {
  out->clear();
  for (const RedoRecord& r : records) {
    const uint8_t flags = r.at_primary != 0 ? kAtPrimary : 0;
    RedoHead h{r.table, static_cast<uint8_t>(r.op),
               flags,   static_cast<uint32_t>(r.value.size()),
               r.key,   r.version,
               r.ts};
    const size_t extra = flags ? sizeof(RedoAtPrimary) : 0;
    size_t at = out->size();
    out->resize(at + sizeof h + extra + pad8(r.value.size()), 0);
    std::memcpy(out->data() + at, &h, sizeof h);
    at += sizeof h;
    if (flags) {
      const RedoAtPrimary p{r.at_primary, r.incarnation, 0};
      std::memcpy(out->data() + at, &p, sizeof p);
      at += sizeof p;
    }
    if (!r.value.empty()) std::memcpy(out->data() + at, r.value.data(), r.value.size());
  }
}

bool decode_redo(const uint8_t* p, uint32_t len, std::vector<RedoRecord>* out) {
  out->clear();
  size_t off = 0;
  while (off < len) {
    RedoHead h;
    if (len - off < sizeof h) return false;
    std::memcpy(&h, p + off, sizeof h);
    off += sizeof h;
    if (h.op < 1 || h.op > 3 || (h.flags & ~kAtPrimary) != 0) return false;
    RedoRecord r;
    if (h.flags & kAtPrimary) {
      RedoAtPrimary ap;
      if (len - off < sizeof ap) return false;
      std::memcpy(&ap, p + off, sizeof ap);
      off += sizeof ap;
      if (ap.at == 0) return false;
      r.at_primary = ap.at;
      r.incarnation = ap.incarnation;
    }
    if (h.value_len > len - off) return false;
    r.table = h.table;
    r.op = static_cast<RedoOp>(h.op);
    r.key = h.key;
    r.version = h.version;
    r.ts = h.ts;
    r.value = {p + off, h.value_len};
    out->push_back(r);
    off += pad8(h.value_len);
  }
  return off == len || off == pad8(len);
}

namespace {
// Per target: one entry image and a wrap entry, then (durable logs) the
// 8 bytes the flushing READ lands in, on a cache line of their own.
size_t image_stride(const ReplicationConfig& cfg) {
  return cfg.layout.ring_bytes / 2 + 2 * kLogMinEntry + 64;
}
}  // namespace

size_t Replicator::image_bytes(const ReplicationConfig& cfg) {
  // One entry image (plus a wrap entry) per backup, written concurrently.
  return size_t{cfg.layout.nodes} * image_stride(cfg);
}

Replicator::Replicator(r2::Worker& w, const ReplicationConfig& cfg)
    : w_(w),
      cfg_(cfg),
      flush_offset_(cfg.layout.header_offset(w.node(), w.thread()) + offsetof(RingHeader, pad)),
      last_txn_(cfg.layout.nodes, 0),
      told_(cfg.layout.nodes, 0) {
  for (uint16_t n = 0; n < cfg.layout.nodes; ++n) {
    writers_.emplace_back(cfg.layout.ring_offset(w.node(), w.thread()), cfg.layout.ring_bytes);
  }
}

Status Replicator::attach() {
  DRTMX_RETURN_IF_ERROR(w_.register_handler(kRpcLogReclaim, [this](r2::RpcRequest& req) {
    uint64_t head;
    if (req.payload().size() != sizeof head || req.from_node() >= writers_.size()) return;
    std::memcpy(&head, req.payload().data(), sizeof head);
    writers_[req.from_node()].on_reclaimed(head);
  }));
  if (cfg_.durable) w_.add_poller([this] { return send_decided(); });
  return Status::ok();
}

// Tells each target whose latest entries are not known decided there the
// current watermark, once it has waited decided_delay_us for a later entry
// to carry it. The reader needs it to apply and release those entries; a
// ring nobody tells would fill and stop its writer.
bool Replicator::send_decided() {
  const uint64_t d = decisions_.decided();
  bool behind = false;
  for (size_t n = 0; n < told_.size() && !behind; ++n) {
    behind = told_[n] < d && told_[n] < last_txn_[n];
  }
  if (!behind) {
    pending_since_ = 0;
    return false;
  }
  if ((++polls_ & 7) != 0) return false;  // the clock, not on every loop
  const uint64_t now = r2::now_ns();
  if (pending_since_ == 0) pending_since_ = now;
  if (now - pending_since_ < uint64_t{cfg_.decided_delay_us} * 1000) return false;
  for (uint16_t n = 0; n < told_.size(); ++n) {
    if (told_[n] >= d || told_[n] >= last_txn_[n]) continue;
    if (w_.post_oneway({n, w_.thread()}, kRpcLogDecided, &d, sizeof d).is_ok()) told_[n] = d;
  }
  pending_since_ = 0;
  return false;  // upkeep, not work: the loop may idle
}

Status Replicator::log(r2::Co& co, std::span<const r2::NodeId> backups,
                       std::span<const RedoRecord> records, LogBuffers& buf) {
  std::vector<BackupEntry> entries;
  for (r2::NodeId n : backups) entries.push_back({n, records});
  return log(co, entries, buf);
}

namespace {
// A failure that the membership may explain: the target refused the op as
// fenced, or its connection failed (a transport error: on ucx and verbs a
// dead process's endpoint fails before the coordinator removes it; on shm
// its memory stays mapped and the op lands).
bool target_failure(r2::OpStatus s) {
  return s == r2::OpStatus::kFenced || s == r2::OpStatus::kTransportError;
}

// Failover: ops that failed only because their target was removed from the
// cluster. A log entry that reached every target still a member is
// complete: the removed node's copies are gone with it. An op fenced by a
// target this node still counts as a member means the opposite: this node
// was removed (the target knows it first) — never complete then.
bool only_fenced(const r2::OpBatch& b, const std::vector<r2::NodeId>& nodes, const r2::Worker& w) {
  if (!w.is_member(w.node())) return false;
  for (size_t i = 0; i < b.size(); ++i) {
    const r2::OpStatus s = b.status(i);
    if (s == r2::OpStatus::kOk) continue;
    if (!target_failure(s) || i >= nodes.size() || w.is_member(nodes[i])) return false;
  }
  return true;
}

// Every op that failed was refused as fenced or lost with its target's
// connection.
bool all_fenced(const r2::OpBatch& b) {
  for (size_t i = 0; i < b.size(); ++i) {
    const r2::OpStatus s = b.status(i);
    if (s != r2::OpStatus::kOk && !target_failure(s)) return false;
  }
  return true;
}
}  // namespace

Status Replicator::log(r2::Co& co, std::span<const BackupEntry> entries, LogBuffers& buf) {
  buf.txn = 0;
  if (entries.empty()) return Status::ok();
  // Failover: a node removed from the cluster must never commit.
  if (!w_.is_member(w_.node())) {
    return unavailable("log: node " + std::to_string(w_.node()) + " was removed from the cluster");
  }
  const size_t stride = image_stride(cfg_);
  if (buf.payloads.size() < entries.size()) buf.payloads.resize(entries.size());
  // 1. Encode, and wait until every backup's ring has room for its entry.
  //    Nothing is reserved before all fit: an entry prepared on one ring
  //    and then given up (log full on another) would leave a hole that
  //    blocks that ring's reader forever.
  for (size_t e = 0; e < entries.size(); ++e) {
    if (entries[e].node >= writers_.size()) {
      return invalid_argument("log(): backup node " + std::to_string(entries[e].node) +
                              " is outside the cluster");
    }
    encode_redo(entries[e].records, &buf.payloads[e]);
    if (buf.payloads[e].size() > writers_[entries[e].node].max_payload()) {
      return out_of_range("log entry of " + std::to_string(buf.payloads[e].size()) +
                          " bytes exceeds " +
                          std::to_string(writers_[entries[e].node].max_payload()) +
                          " (half a log ring); raise --log-ring-kb or write less per transaction");
    }
  }
  uint64_t deadline = 0;
  for (;;) {
    size_t full = entries.size();
    for (size_t e = 0; e < entries.size() && full == entries.size(); ++e) {
      if (!w_.is_member(entries[e].node)) continue;  // removed: never written
      if (!writers_[entries[e].node].fits(static_cast<uint32_t>(buf.payloads[e].size()))) full = e;
    }
    if (full == entries.size()) break;
    // Back-pressure: wait for that backup to apply and reclaim.
    ++full_waits_;
    const uint64_t now = r2::now_ns();
    if (deadline == 0) deadline = now + uint64_t{cfg_.full_timeout_ms} * 1000000;
    if (now > deadline) {
      return exhausted("log full: the log ring on node " + std::to_string(entries[full].node) +
                       " stayed full for " + std::to_string(cfg_.full_timeout_ms) +
                       " ms (is its applier running? raise --log-ring-bytes)");
    }
    co.yield();
  }
  // 2. Reserve and build every entry (no yield in between: no other
  //    coroutine of this worker can take the room), then WRITE them all.
  //    Durable logs: the transaction's number and the watermark go into
  //    every entry, and each target's WRITEs are followed by a flushing
  //    READ on the same channel — one doorbell, one round trip (H9).
  LogMark mark;
  if (cfg_.durable) {
    if (decisions_.open() >= decisions_.window()) {
      return unavailable("log: " + std::to_string(decisions_.open()) +
                         " transactions of this worker never completed their log (a node "
                         "failed?); no more can be numbered");
    }
    mark.txn = decisions_.begin();
    mark.decided = decisions_.decided();
    mark.targets = static_cast<uint16_t>(entries.size());
    for (const BackupEntry& e : entries) mark.self = mark.self || e.node == w_.node();
  } else {
    // Volatile logs (failover, txn/failover.h): the transaction's number
    // and its targets (bit n = node n) identify what survivors must find
    // to decide a removed coordinator's transaction.
    mark.txn = ++volatile_txn_;
    for (const BackupEntry& e : entries) {
      if (e.node < 64) mark.decided |= uint64_t{1} << e.node;
    }
    mark.targets = static_cast<uint16_t>(entries.size());
  }
  r2::OpBatch batch, first;  // first: tests with a crash hook (kLogPartial)
  // The target of each op of `batch`, per coroutine: other coroutines of
  // this worker log while this one waits for its WRITEs.
  std::vector<r2::NodeId>& op_nodes = buf.op_nodes;
  op_nodes.clear();
  for (size_t e = 0; e < entries.size(); ++e) {
    r2::OpBatch& to = crash_ && e == 0 && entries.size() > 1 ? first : batch;
    const r2::NodeId b = entries[e].node;
    if (!w_.is_member(b)) continue;  // removed (failover): its copies are gone
    const std::vector<uint8_t>& payload = buf.payloads[e];
    uint8_t* image = buf.images + b * stride;
    LogWriter::Placement pl[2];
    auto n =
        writers_[b].prepare(payload.data(), static_cast<uint32_t>(payload.size()), image, pl, mark);
    if (!n) return n.status();  // cannot happen: sizes were checked above
    if (*n == 0) return internal_error("log(): a ring that had room refused the entry");
    uint32_t off = 0;
    for (int k = 0; k < *n; ++k) {
      to.write({b, cfg_.log_region, pl[k].offset}, image + off, pl[k].bytes, !cfg_.durable);
      off += pl[k].bytes;
    }
    if (cfg_.durable) {
      // The flushing READ of H9: the WRITEs above are persistent once it
      // completes. Any address of the target works (the READ flushes the
      // channel); it reads the ring header's spare word, not the entry:
      // the entry's lines were just stored non-temporally, and reading one
      // back would be a memory access on shm, where the issuer's CPU reads.
      rdpma::add_flushing_read(to, {b, cfg_.log_region, flush_offset_},
                               reinterpret_cast<uint64_t*>(image + stride - 64));
      last_txn_[b] = mark.txn;
      told_[b] = std::max(told_[b], mark.decided);
    }
    if (&to == &batch) op_nodes.resize(batch.size(), b);
  }
  if (crash_ && !first.empty()) {
    // Tests: the first target's WRITEs (and READ) alone, then the hook.
    if (co.run(first) == r2::OpStatus::kOk) crash_(CrashPoint::kLogPartial);
  }
  const r2::OpStatus st = co.run(batch);
  // Refused only by removed targets: complete, as long as this node itself
  // is still a member (a removed node must never acknowledge).
  if (st != r2::OpStatus::kOk && !only_fenced(batch, op_nodes, w_)) {
    // The fabric fences a removed node a moment before this worker's view
    // of the membership moves (r2: the view follows the fence), and a dead
    // target's connection fails before the coordinator removes it. An op
    // refused as fenced, or lost with the connection, by a target the view
    // still counts as a member is therefore not an error yet: the entries that did land will be
    // applied, so giving up here would abort a transaction that backups
    // apply. Wait for the view to say whether that target was removed
    // (complete) or this node was (never complete).
    const uint64_t until = r2::now_ns() + uint64_t{cfg_.fence_wait_ms} * 1000000;
    while (all_fenced(batch) && w_.is_member(w_.node()) && !only_fenced(batch, op_nodes, w_) &&
           r2::now_ns() < until) {
      co.yield_idle();
    }
    if (!only_fenced(batch, op_nodes, w_)) {
      std::string ops;
      for (size_t i = 0; i < batch.size(); ++i) {
        if (batch.status(i) == r2::OpStatus::kOk) continue;
        ops += "; op " + std::to_string(i) + " to node " +
               (i < op_nodes.size() ? std::to_string(op_nodes[i]) : std::string("?")) + ": " +
               r2::op_status_name(batch.status(i));
      }
      return unavailable(std::string("log WRITE failed: ") + r2::op_status_name(st) + ops);
    }
  }
  if (cfg_.durable) {
    buf.txn = mark.txn;
    if (!buf.settle_later) decisions_.complete(mark.txn);
  }
  entries_ += entries.size();
  for (size_t e = 0; e < entries.size(); ++e) log_bytes_ += buf.payloads[e].size();
  return Status::ok();
}

BackupApplier::BackupApplier(r2::Worker& w, const ReplicationConfig& cfg, uint8_t* log_base,
                             Install install)
    : BackupApplier(w, cfg, log_base, TryInstall([f = std::move(install)](const RedoRecord& r) {
                      f(r);
                      return true;
                    })) {}

BackupApplier::BackupApplier(r2::Worker& w, const ReplicationConfig& cfg, uint8_t* log_base,
                             TryInstall install)
    : w_(w), cfg_(cfg), install_(std::move(install)) {
  const uint32_t every = cfg.reclaim_every ? cfg.reclaim_every : cfg.layout.ring_bytes / 4;
  release_every_ = every;
  for (uint16_t n = 0; n < cfg.layout.nodes; ++n) {
    uint64_t head = 0, seq = 1;
    if (cfg.durable) {
      auto* h = reinterpret_cast<RingHeader*>(log_base + cfg.layout.header_offset(n, w.thread()));
      headers_.push_back(h);
      known_.push_back(h->decided);
      head = h->head;
      seq = h->next_seq == 0 ? 1 : h->next_seq;
    }
    readers_.emplace_back(log_base + cfg.layout.ring_offset(n, w.thread()), cfg.layout.ring_bytes,
                          every, head, seq);
  }
  taken_from_ = std::make_unique<std::atomic<uint64_t>[]>(readers_.size());
  if (cfg.durable) {
    known_pub_ = std::make_unique<std::atomic<uint64_t>[]>(readers_.size());
    stop_seq_ = std::make_unique<std::atomic<uint64_t>[]>(readers_.size());
    committed_.resize(readers_.size());
    resolving_.assign(readers_.size(), 0);
    for (uint16_t n = 0; n < known_.size(); ++n) learned(n);
    (void)w.register_handler(kRpcLogDecided, [this](r2::RpcRequest& req) {
      uint64_t d;
      if (req.payload().size() != sizeof d || req.from_node() >= known_.size()) return;
      std::memcpy(&d, req.payload().data(), sizeof d);
      if (d <= known_[req.from_node()]) return;
      known_[req.from_node()] = d;
      learned(req.from_node());
    });
  }
  w.add_poller([this] { return poll(); });
}

void BackupApplier::entry_done() {
  applied_.store(applied_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

// Offers the deferred records again, oldest first, until a pass takes none.
bool BackupApplier::retry_deferred() {
  bool any = false;
  for (bool progress = true; progress && !deferred_.empty();) {
    progress = false;
    for (size_t i = 0; i < deferred_.size();) {
      if (!install_(deferred_[i].rec)) {
        ++i;
        continue;
      }
      const uint64_t entry = deferred_[i].entry;
      deferred_.erase(deferred_.begin() + static_cast<ptrdiff_t>(i));
      one_installed(entry);
      progress = any = true;
    }
  }
  return any;
}

void BackupApplier::advance_mark() {
  if (cfg_.durable) return;  // gated appliers: the reconfiguration pauses instead
  if (mark_entry_ == kNoMark) {
    if (mark_rings_ != 0) return;
    mark_entry_ = next_entry_;  // every entry before the request was taken
  }
  for (const auto& [entry, records] : waiting_) {
    if (entry < mark_entry_) return;  // one of them still waits
  }
  mark_done_.store(mark_seen_, std::memory_order_release);
}

void BackupApplier::defer(const RedoRecord& rec, uint64_t entry) {
  // A copy: the ring slot (or staging buffer) the value lies in may be
  // reused before the record is taken.
  deferred_.push_back({rec, {rec.value.begin(), rec.value.end()}, entry});
  deferred_.back().rec.value = deferred_.back().value;
}

void BackupApplier::one_installed(uint64_t entry) {
  for (size_t w = 0; w < waiting_.size(); ++w) {
    if (waiting_[w].first != entry) continue;
    if (--waiting_[w].second == 0) {
      waiting_.erase(waiting_.begin() + static_cast<ptrdiff_t>(w));
      entry_done();
    }
    return;
  }
}

bool BackupApplier::install_staged() {
  if (staged_.empty()) return false;
  // Every slot's prefetch goes out before the first install.
  for (Staged& s : staged_) {
    s.rec.value = {staged_bytes_.data() + s.value_at, s.rec.value.size()};
    second_prefetch_(s.rec);
  }
  for (const Staged& s : staged_) {
    if (install_(s.rec)) {
      one_installed(s.entry);
    } else {
      defer(s.rec, s.entry);
    }
  }
  staged_.clear();
  staged_bytes_.clear();
  return true;
}

void BackupApplier::stop_corrupt(std::string reason) {
  if (corrupt_.load(std::memory_order_relaxed)) return;
  corrupt_reason_ = std::move(reason);
  corrupt_.store(true, std::memory_order_release);
}

// Installs the records in decoded_ (entry `entry`); keeps a copy of each
// one not taken yet, to offer again later.
void BackupApplier::offer(uint64_t entry) {
  uint32_t later = 0;
  if (prefetch_) {
    for (const RedoRecord& rec : decoded_) prefetch_(rec);
  }
  if (second_prefetch_ && !decoded_.empty()) {
    for (const RedoRecord& rec : decoded_) {
      staged_.push_back({rec, staged_bytes_.size(), entry});
      staged_bytes_.insert(staged_bytes_.end(), rec.value.begin(), rec.value.end());
    }
    waiting_.emplace_back(entry, static_cast<uint32_t>(decoded_.size()));
    return;
  }
  for (const RedoRecord& rec : decoded_) {
    if (install_(rec)) continue;
    defer(rec, entry);
    ++later;
  }
  if (later == 0) {
    entry_done();
  } else {
    waiting_.emplace_back(entry, later);
  }
}

// Durable logs: remembers the backup records of entry `entry` (decoded_)
// before any is installed. Primary records need no order: recovery checks
// their slot (recover_logs).
void BackupApplier::note_changes(uint64_t entry) {
  if (!cfg_.unreleased) return;
  std::vector<KeyChange> ch;
  for (const RedoRecord& rec : decoded_) {
    if (rec.at_primary != 0 || !cfg_.unreleased->tracks(rec.table)) continue;
    const bool del = rec.op == RedoOp::kDelete;
    ch.push_back({rec.table, del, rec.key, rec.version});
    if (!del) cfg_.unreleased->add(rec.table, rec.key, rec.version);
  }
  if (!ch.empty()) changes_.emplace(entry, std::move(ch));
}

// An entry whose delete of a key is older than no unreleased change of
// that key here (a delete's earlier changes were applied before it, so
// they are all noted by now).
bool BackupApplier::may_release(uint64_t entry) const {
  if (!cfg_.unreleased) return true;
  auto it = changes_.find(entry);
  if (it == changes_.end()) return true;
  for (const KeyChange& c : it->second) {
    if (c.del && cfg_.unreleased->older_than(c.table, c.key, c.version)) return false;
  }
  return true;
}

// The `n` oldest entries of `r` are about to be released (their head is
// persistent): their changes leave the node's table.
void BackupApplier::released(LogReader& r, size_t n) {
  if (!cfg_.unreleased) return;
  for (size_t i = 0; i < n && i < r.unreleased(); ++i) {
    const uint64_t tag = r.tag_at(i);
    if (tag == 0) continue;
    auto it = changes_.find(tag - 1);
    if (it == changes_.end()) continue;
    for (const KeyChange& c : it->second) {
      if (!c.del) cfg_.unreleased->remove(c.table, c.key, c.version);
    }
    changes_.erase(it);
  }
}

// Durable logs, one ring: learn and persist the watermark, apply the
// entries it covers, release those whose records are all persistent here.
bool BackupApplier::poll_gated(uint16_t n, bool deferred_progress) {
  LogReader& r = readers_[n];
  RingHeader* h = headers_[n];
  const PersistOps& ps = cfg_.persist;
  bool work = false;
  bool exhausted = false;
  for (uint32_t i = 0; i < 32; ++i) {
    LogEntry e;
    bool corrupt = false;
    uint64_t found = 0;
    if (!r.peek(&e, &corrupt, &found)) {
      exhausted = !corrupt;
      if (corrupt) {
        stop_corrupt("the ring written by node " + std::to_string(n) + " thread " +
                     std::to_string(w_.thread()) + ": entry " + std::to_string(found) +
                     " where entry " + std::to_string(r.next_seq() + r.unreleased()) +
                     " was expected");
      }
      break;
    }
    if (e.mark.txn > known_[n]) {
      // Not known committed here yet: learn the watermark from the entries
      // behind it (and the messages). It is the coordinator's, so what it
      // covers is committed; it is made persistent with the next release,
      // before any entry it covers disappears (below).
      const uint64_t seen = r.scan_decided(16);
      if (seen > known_[n]) {
        known_[n] = seen;
        learned(n);
      }
      if (e.mark.txn > known_[n]) {
        if (!resolving_[n]) {
          if (n < 64) gated_now_ |= uint64_t{1} << n;
          break;
        }
        // A removed writer's entry the failover decided.
        if (!std::binary_search(committed_[n].begin(), committed_[n].end(), e.mark.txn)) {
          // Aborted: dropped unapplied (its tag waits for nothing).
          r.consume(next_entry_++ + 1);
          work = true;
          continue;
        }
      }
    }
    if (!decode_redo(e.payload, e.len, &decoded_)) {
      stop_corrupt("the ring written by node " + std::to_string(n) + " thread " +
                   std::to_string(w_.thread()) + ": entry " + std::to_string(e.seq) + " (" +
                   std::to_string(e.len) + " bytes) does not decode");
      return false;
    }
    const uint64_t entry = next_entry_++;
    note_changes(entry);
    took(n);
    offer(entry);
    r.consume(entry + 1);
    if (crash_) crash_(CrashPoint::kApplied);
    work = true;
  }
  const bool resolving = resolving_[n] != 0;
  auto resolved_here = [&] {
    if (!resolving || !exhausted || n >= 64) return;
    stop_seq_[n].store(r.cursor_seq(), std::memory_order_release);
    stopped_.fetch_or(uint64_t{1} << n, std::memory_order_acq_rel);
    if (r.unreleased() == 0) resolved_.fetch_or(uint64_t{1} << n, std::memory_order_acq_rel);
  };
  // What may be released changes only when an entry was taken here or a
  // deferred record was installed (this poll), or while a delete's entry
  // waits for another ring's release (key_order.h).
  if (r.unreleased() == 0 || (!work && !deferred_progress && !resolving &&
                              !(cfg_.unreleased && cfg_.unreleased->someone_waits()))) {
    resolved_here();
    return work;
  }
  bool waits = false;
  const size_t done = r.releasable([this, &waits](uint64_t tag) {
    for (const auto& w : waiting_) {
      if (w.first + 1 == tag) return false;
    }
    if (!may_release(tag - 1)) return waits = true, false;
    return true;
  });
  if (cfg_.unreleased) {
    if (waits_.size() <= n) waits_.resize(readers_.size(), 0);
    cfg_.unreleased->set_waiting(waits_[n] != 0, waits);
    waits_[n] = waits;
  }
  if (done == 0) return work;
  uint64_t head = 0, seq = 0;
  r.after_release(done, &head, &seq);
  // Released in batches of a reclaim report's size (the writer hears of
  // freed space only that often anyway): each release costs a fence and a
  // persisted head. Not while some applier's delete waits for an earlier
  // change's entry to go (the ring holding it may go quiet).
  if (head - r.head() < release_every_ && !resolving &&
      !(cfg_.unreleased && cfg_.unreleased->someone_waits())) {
    return work;
  }
  // What the entries wrote here was flushed as it was written: fence it,
  // then persist the watermark that covers them and the new head before
  // the entries are zeroed (a crash in between finds them again, and
  // applying them twice changes nothing). Until then a crash finds every
  // entry applied here in the ring, and each entry of their transactions
  // at the other targets too, or a persisted watermark that covers them
  // there: recovery decides them committed either way.
  ps.drain();
  static_assert(offsetof(RingHeader, head) == 8 && offsetof(RingHeader, next_seq) == 16);
  h->decided = std::max(h->decided, known_[n]);
  h->head = head;
  h->next_seq = seq;
  ps.persist(&h->decided, 3 * sizeof(uint64_t));
  released(r, done);
  if (r.release(done) && !resolving) {
    if (w_.post_oneway({n, w_.thread()}, kRpcLogReclaim, &head, sizeof head).is_ok()) {
      r.reported();
    }
  }
  resolved_here();
  return work;
}

void BackupApplier::resolve_removed(uint16_t node, std::vector<uint64_t> committed) {
  std::sort(committed.begin(), committed.end());
  std::lock_guard<std::mutex> g(decide_mu_);
  decide_in_.emplace_back(node, std::move(committed));
  decide_pending_.store(true, std::memory_order_release);
}

std::string BackupApplier::stuck() const {
  std::string s = "applier of thread " + std::to_string(w_.thread()) + ": ";
  const uint64_t n = deferred_count_.load(std::memory_order_acquire);
  if (n != 0) {
    s += std::to_string(n) +
         " records not taken by their copy (waiting for an earlier change of "
         "their key, or older than the copy: the oldest is table " +
         std::to_string(stuck_table_.load(std::memory_order_relaxed)) + " key " +
         std::to_string(stuck_key_.load(std::memory_order_relaxed)) + " version " +
         std::to_string(stuck_version_.load(std::memory_order_relaxed)) + "); ";
  }
  if (corrupt()) s += "stopped at a corrupt entry: " + corrupt_reason_ + "; ";
  const uint64_t skip = skip_.load(std::memory_order_acquire);
  if (skip != 0) s += "holes to skip in the rings of nodes mask " + std::to_string(skip) + "; ";
  s += std::to_string(quiet()) + " quiet polls of " + std::to_string(polls());
  return s;
}

void BackupApplier::keep_history(size_t per_ring) {
  std::lock_guard<std::mutex> g(history_mu_);
  history_per_ring_ = per_ring;
  history_.assign(readers_.size(), {});
  for (History& h : history_) h.slots.resize(per_ring);
}

std::vector<LoggedTxn> BackupApplier::history(uint16_t node) const {
  std::lock_guard<std::mutex> g(history_mu_);
  if (node >= history_.size()) return {};
  const History& h = history_[node];
  std::vector<LoggedTxn> out;
  out.reserve(h.count);
  for (size_t i = 0; i < h.count; ++i) out.push_back(h.slots[(h.first + i) % h.slots.size()]);
  return out;
}

bool BackupApplier::history_full(uint16_t node) const {
  std::lock_guard<std::mutex> g(history_mu_);
  return node < history_.size() && history_[node].dropped;
}

void BackupApplier::remember(uint16_t node, const LogMark& m) {
  std::lock_guard<std::mutex> g(history_mu_);
  History& h = history_[node];
  size_t at;
  if (h.count < h.slots.size()) {
    at = (h.first + h.count++) % h.slots.size();
  } else {
    at = h.first;  // overwrite the oldest
    h.first = (h.first + 1) % h.slots.size();
    h.dropped = true;
  }
  LoggedTxn& t = h.slots[at];
  t.txn = m.txn;
  t.targets = m.decided;
  t.records.clear();
  for (const RedoRecord& r : decoded_) t.records.push_back({r.table, r.op, r.key, r.version});
}

bool BackupApplier::poll() {
  if (corrupt_.load(std::memory_order_relaxed)) return false;
  gated_now_ = 0;
  if (decide_pending_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> g(decide_mu_);
    for (auto& [node, txns] : decide_in_) {
      if (node >= readers_.size() || !cfg_.durable) continue;
      committed_[node] = std::move(txns);
      resolving_[node] = 1;
    }
    decide_in_.clear();
    decide_pending_.store(false, std::memory_order_release);
  }
  bool deferred_progress = retry_deferred();
  deferred_progress = install_staged() || deferred_progress;
  bool work = deferred_progress;
  const uint64_t retired = retired_.load(std::memory_order_relaxed);
  if (const uint64_t req = mark_req_.load(std::memory_order_acquire); req != mark_seen_) {
    // A new drain mark: every ring must be seen empty from here on.
    mark_seen_ = req;
    mark_rings_ = readers_.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << readers_.size()) - 1;
    mark_entry_ = kNoMark;
  }
  for (uint16_t n = 0; n < readers_.size(); ++n) {
    if (n < 64 && ((retired >> n) & 1) != 0) {
      mark_rings_ &= ~(uint64_t{1} << n);
      continue;
    }
    if (cfg_.durable) {
      work = poll_gated(n, deferred_progress) || work;
      continue;
    }
    LogReader& r = readers_[n];
    auto res = r.poll(
        [&](uint64_t seq, const uint8_t* p, uint32_t len) {
          if (!decode_redo(p, len, &decoded_)) {
            stop_corrupt("the ring written by node " + std::to_string(n) + " thread " +
                         std::to_string(w_.thread()) + ": entry " + std::to_string(seq) + " (" +
                         std::to_string(len) + " bytes) does not decode");
            return;
          }
          if (history_per_ring_ != 0) remember(n, r.last_mark());
          took(n);
          offer(next_entry_++);
        },
        32);
    if (res.corrupt) {
      stop_corrupt("the ring written by node " + std::to_string(n) + " thread " +
                   std::to_string(w_.thread()) + ": entry " + std::to_string(res.found_seq) +
                   " at byte " + std::to_string(r.head()) + " where entry " +
                   std::to_string(r.next_seq()) + " was expected");
    }
    if (res.applied > 0) work = true;
    // Fewer than asked for: the ring held nothing more in order.
    if (n < 64 && res.applied < 32 && !res.corrupt) mark_rings_ &= ~(uint64_t{1} << n);
    if (n < 64 && res.applied == 0 && !res.corrupt &&
        ((skip_.load(std::memory_order_relaxed) >> n) & 1) != 0) {
      // Failover: nothing more in order from this removed writer; entries
      // beyond a hole are applied too, then the ring is left alone.
      if (r.skip_hole()) {
        work = true;
      } else {
        skip_.fetch_and(~(uint64_t{1} << n), std::memory_order_acq_rel);
      }
    }
    if (res.report) {
      const uint64_t head = r.head();
      if (w_.post_oneway({n, w_.thread()}, kRpcLogReclaim, &head, sizeof head).is_ok()) {
        r.reported();
      }
    }
  }
  if (mark_seen_ != mark_done_.load(std::memory_order_relaxed)) advance_mark();
  const size_t waiting = deferred_.size() + staged_.size();
  if (waiting != 0 || deferred_count_.load(std::memory_order_relaxed) != 0) {
    if (waiting != 0) {
      const RedoRecord& d = deferred_.empty() ? staged_.front().rec : deferred_.front().rec;
      stuck_table_.store(d.table, std::memory_order_relaxed);
      stuck_key_.store(d.key, std::memory_order_relaxed);
      stuck_version_.store(d.version, std::memory_order_relaxed);
    }
    deferred_count_.store(waiting, std::memory_order_release);
  }
  if (cfg_.durable && gated_.load(std::memory_order_relaxed) != gated_now_) {
    gated_.store(gated_now_, std::memory_order_release);
  }
  polls_.store(polls_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  idle_.store(work ? 0 : idle_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  if (work || waiting != 0) {
    quiet_.store(0, std::memory_order_release);
  } else {
    quiet_.store(quiet_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  return work;
}

}  // namespace drtmx::txn
