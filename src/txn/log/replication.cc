#include "txn/log/replication.h"

#include <cstring>

#include "r2/common/clock.h"

namespace drtmx::txn {

namespace {
struct RedoHead {
  uint16_t table;
  uint8_t op;
  uint8_t pad;
  uint32_t value_len;
  uint64_t key;
  uint64_t version;
  uint64_t ts;
};
static_assert(sizeof(RedoHead) == 32);

size_t pad8(size_t n) {
  return (n + 7) & ~size_t{7};
}
}  // namespace

void encode_redo(std::span<const RedoRecord> records, std::vector<uint8_t>* out) {
  out->clear();
  for (const RedoRecord& r : records) {
    RedoHead h{r.table, static_cast<uint8_t>(r.op),
               0,       static_cast<uint32_t>(r.value.size()),
               r.key,   r.version,
               r.ts};
    const size_t at = out->size();
    out->resize(at + sizeof h + pad8(r.value.size()), 0);
    std::memcpy(out->data() + at, &h, sizeof h);
    if (!r.value.empty()) std::memcpy(out->data() + at + sizeof h, r.value.data(), r.value.size());
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
    if (h.op < 1 || h.op > 3 || h.value_len > len - off) return false;
    RedoRecord r;
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

size_t Replicator::image_bytes(const ReplicationConfig& cfg) {
  // One entry image (plus a wrap entry) per backup, written concurrently.
  return size_t{cfg.layout.nodes} * (cfg.layout.ring_bytes / 2 + 64);
}

Replicator::Replicator(r2::Worker& w, const ReplicationConfig& cfg) : w_(w), cfg_(cfg) {
  for (uint16_t n = 0; n < cfg.layout.nodes; ++n) {
    writers_.emplace_back(cfg.layout.ring_offset(w.node(), w.thread()), cfg.layout.ring_bytes);
  }
}

Status Replicator::attach() {
  return w_.register_handler(kRpcLogReclaim, [this](r2::RpcRequest& req) {
    uint64_t head;
    if (req.payload().size() != sizeof head || req.from_node() >= writers_.size()) return;
    std::memcpy(&head, req.payload().data(), sizeof head);
    writers_[req.from_node()].on_reclaimed(head);
  });
}

Status Replicator::log(r2::Co& co, std::span<const r2::NodeId> backups,
                       std::span<const RedoRecord> records, LogBuffers& buf) {
  std::vector<BackupEntry> entries;
  for (r2::NodeId n : backups) entries.push_back({n, records});
  return log(co, entries, buf);
}

Status Replicator::log(r2::Co& co, std::span<const BackupEntry> entries, LogBuffers& buf) {
  if (entries.empty()) return Status::ok();
  const size_t stride = cfg_.layout.ring_bytes / 2 + 64;
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
  r2::OpBatch batch;
  for (size_t e = 0; e < entries.size(); ++e) {
    const r2::NodeId b = entries[e].node;
    const std::vector<uint8_t>& payload = buf.payloads[e];
    uint8_t* image = buf.images + b * stride;
    LogWriter::Placement pl[2];
    auto n = writers_[b].prepare(payload.data(), static_cast<uint32_t>(payload.size()), image, pl);
    if (!n) return n.status();  // cannot happen: sizes were checked above
    if (*n == 0) return internal_error("log(): a ring that had room refused the entry");
    uint32_t off = 0;
    for (int k = 0; k < *n; ++k) {
      batch.write({b, cfg_.log_region, pl[k].offset}, image + off, pl[k].bytes);
      off += pl[k].bytes;
    }
  }
  const r2::OpStatus st = co.run(batch);
  if (st != r2::OpStatus::kOk) {
    return unavailable(std::string("log WRITE failed: ") + r2::op_status_name(st));
  }
  entries_ += entries.size();
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
  for (uint16_t n = 0; n < cfg.layout.nodes; ++n) {
    readers_.emplace_back(log_base + cfg.layout.ring_offset(n, w.thread()), cfg.layout.ring_bytes,
                          every);
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
      for (size_t w = 0; w < waiting_.size(); ++w) {
        if (waiting_[w].first != entry) continue;
        if (--waiting_[w].second == 0) {
          waiting_.erase(waiting_.begin() + static_cast<ptrdiff_t>(w));
          entry_done();
        }
        break;
      }
      progress = any = true;
    }
  }
  return any;
}

void BackupApplier::stop_corrupt(std::string reason) {
  if (corrupt_.load(std::memory_order_relaxed)) return;
  corrupt_reason_ = std::move(reason);
  corrupt_.store(true, std::memory_order_release);
}

bool BackupApplier::poll() {
  if (corrupt_.load(std::memory_order_relaxed)) return false;
  bool work = retry_deferred();
  for (uint16_t n = 0; n < readers_.size(); ++n) {
    LogReader& r = readers_[n];
    auto res = r.poll(
        [&](uint64_t seq, const uint8_t* p, uint32_t len) {
          if (!decode_redo(p, len, &decoded_)) {
            stop_corrupt("the ring written by node " + std::to_string(n) + " thread " +
                         std::to_string(w_.thread()) + ": entry " + std::to_string(seq) + " (" +
                         std::to_string(len) + " bytes) does not decode");
            return;
          }
          const uint64_t entry = next_entry_++;
          uint32_t later = 0;
          if (prefetch_) {
            for (const RedoRecord& rec : decoded_) prefetch_(rec);
          }
          for (const RedoRecord& rec : decoded_) {
            if (install_(rec)) continue;
            // Not yet: keep a copy (the ring slot is zeroed after this).
            Deferred d{rec, {rec.value.begin(), rec.value.end()}, entry};
            deferred_.push_back(std::move(d));
            deferred_.back().rec.value = deferred_.back().value;
            ++later;
          }
          if (later == 0) {
            entry_done();
          } else {
            waiting_.emplace_back(entry, later);
          }
        },
        32);
    if (res.corrupt) {
      stop_corrupt("the ring written by node " + std::to_string(n) + " thread " +
                   std::to_string(w_.thread()) + ": entry " + std::to_string(res.found_seq) +
                   " at byte " + std::to_string(r.head()) + " where entry " +
                   std::to_string(r.next_seq()) + " was expected");
    }
    if (res.applied > 0) work = true;
    if (res.report) {
      const uint64_t head = r.head();
      if (w_.post_oneway({n, w_.thread()}, kRpcLogReclaim, &head, sizeof head).is_ok()) {
        r.reported();
      }
    }
  }
  return work;
}

}  // namespace drtmx::txn
