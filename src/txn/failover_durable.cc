#include "txn/failover_durable.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "store/record.h"
#include "store/tables/plan.h"
#include "txn/failover_blob.h"

namespace drtmx::txn::failover {
namespace {

using Writer = BlobOut;
using Reader = BlobIn;

RingHeader* header_of(const DurableParts& p, uint16_t node, uint16_t thread) {
  return reinterpret_cast<RingHeader*>(p.log_base + p.layout.header_offset(node, thread));
}

uint8_t* ring_of(const DurableParts& p, uint16_t node, uint16_t thread) {
  return p.log_base + p.layout.ring_offset(node, thread);
}

template <class F>
void each_removed_ring(const DurableParts& p, uint64_t gone, F&& f) {
  for (uint16_t d = 0; d < p.layout.nodes && d < 64; ++d) {
    if (((gone >> d) & 1) == 0) continue;
    for (uint16_t t = 0; t < p.layout.threads; ++t) f(d, t);
  }
}

store::tables::Change change_of(RedoOp op) {
  using C = store::tables::Change;
  return op == RedoOp::kInsert ? C::kInsert : op == RedoOp::kDelete ? C::kDelete : C::kUpdate;
}

// Persists the slot at `off` of `spec`'s table region (flush; the caller drains).
void flush_slot(const DurableParts& p, const store::TableSpec& spec, uint64_t off) {
  const r2::Region* reg = p.fabric->region(store::tables::table_region(spec.id));
  if (reg == nullptr || off == 0) return;
  p.persist.flush(reg->base + off, store::record_slot_size(spec.value_size));
}

}  // namespace

DurableReport durable_report(const DurableParts& p, uint64_t gone,
                             const std::vector<std::unique_ptr<BackupApplier>>& appliers) {
  DurableReport r;
  std::vector<RedoRecord> decoded;
  each_removed_ring(p, gone, [&](uint16_t d, uint16_t t) {
    const RingHeader* h = header_of(p, d, t);
    const uint64_t from = h->next_seq == 0 ? 1 : h->next_seq;
    uint64_t wm = h->decided;
    // The applier may release (zero) entries while they are scanned: it
    // does so only under a watermark that covers them, read below, after.
    for (const LogEntry& e : scan_ring(ring_of(p, d, t), p.layout.ring_bytes, from)) {
      wm = std::max(wm, e.mark.decided);
      FoundEntry f;
      f.node = d;
      f.thread = t;
      f.mark = e.mark;
      if (decode_redo(e.payload, e.len, &decoded)) {
        for (const RedoRecord& rec : decoded)
          f.records.push_back({rec.table, rec.op, rec.key, rec.version});
      }
      r.entries.push_back(std::move(f));
    }
    if (t < appliers.size() && appliers[t]) wm = std::max(wm, appliers[t]->known_decided(d));
    wm = std::max(wm, h->decided);
    r.watermarks.emplace_back(d, t, wm);
  });
  return r;
}

std::string encode_durable(const DurableReport& r) {
  Writer o;
  o.put<uint32_t>(static_cast<uint32_t>(r.watermarks.size()));
  for (const auto& [n, t, wm] : r.watermarks) {
    o.put(n);
    o.put(t);
    o.put(wm);
  }
  o.put<uint32_t>(static_cast<uint32_t>(r.entries.size()));
  for (const FoundEntry& e : r.entries) {
    o.put(e.node);
    o.put(e.thread);
    o.put(e.mark.txn);
    o.put(e.mark.decided);
    o.put(e.mark.targets);
    o.put<uint8_t>(e.mark.self);
    put_records(o, e.records);
  }
  return o.s;
}

bool decode_durable(const std::string& blob, DurableReport* out) {
  if (blob.empty()) return true;  // a removed node's
  Reader in{blob};
  const uint32_t rings = in.get<uint32_t>();
  for (uint32_t i = 0; i < rings && in.ok; ++i) {
    const uint16_t n = in.get<uint16_t>();
    const uint16_t t = in.get<uint16_t>();
    const uint64_t wm = in.get<uint64_t>();
    out->watermarks.emplace_back(n, t, wm);
  }
  const uint32_t entries = in.get<uint32_t>();
  for (uint32_t i = 0; i < entries && in.ok; ++i) {
    FoundEntry e;
    e.node = in.get<uint16_t>();
    e.thread = in.get<uint16_t>();
    e.mark.txn = in.get<uint64_t>();
    e.mark.decided = in.get<uint64_t>();
    e.mark.targets = in.get<uint16_t>();
    e.mark.self = in.get<uint8_t>() != 0;
    get_records(in, &e.records);
    out->entries.push_back(std::move(e));
  }
  return in.ok && in.at == blob.size();
}

std::vector<DurableDecision> durable_decide(const std::vector<DurableReport>& all) {
  using Ring = std::pair<uint16_t, uint16_t>;
  using Id = std::tuple<uint16_t, uint16_t, uint64_t>;
  std::map<Ring, uint64_t> wm;
  struct Seen {
    uint32_t found = 0;
    uint16_t targets = 0;
    bool self = false;
    std::vector<LoggedRecord> records;
  };
  std::map<Id, Seen> seen;
  for (const DurableReport& r : all) {
    for (const auto& [n, t, w] : r.watermarks) {
      uint64_t& x = wm[{n, t}];
      x = std::max(x, w);
    }
    for (const FoundEntry& e : r.entries) {
      uint64_t& x = wm[{e.node, e.thread}];
      x = std::max(x, e.mark.decided);
      Seen& s = seen[{e.node, e.thread, e.mark.txn}];
      ++s.found;
      s.targets = std::max(s.targets, e.mark.targets);
      s.self = s.self || e.mark.self;
      s.records.insert(s.records.end(), e.records.begin(), e.records.end());
    }
  }
  std::vector<DurableDecision> out;
  for (auto& [id, s] : seen) {
    DurableDecision d;
    std::tie(d.node, d.thread, d.txn) = id;
    // Every entry persistent at its target (found, or the coordinator's
    // own), or the coordinator knew so (a watermark at or above it).
    d.committed = s.found + (s.self ? 1u : 0u) >= s.targets || d.txn <= wm[{d.node, d.thread}];
    d.complete = d.committed;
    // One per (table, key): every entry of a transaction carries the same
    // version of a record (a backup's and its primary's).
    std::sort(s.records.begin(), s.records.end(), [](const LoggedRecord& a, const LoggedRecord& b) {
      return a.table != b.table ? a.table < b.table : a.key < b.key;
    });
    s.records.erase(std::unique(s.records.begin(), s.records.end(),
                                [](const LoggedRecord& a, const LoggedRecord& b) {
                                  return a.table == b.table && a.key == b.key;
                                }),
                    s.records.end());
    d.records = std::move(s.records);
    out.push_back(std::move(d));
  }
  return out;
}

void publish_decisions(const std::vector<DurableDecision>& d,
                       const std::vector<std::unique_ptr<BackupApplier>>& appliers, uint64_t gone) {
  for (uint16_t t = 0; t < appliers.size(); ++t) {
    if (!appliers[t]) continue;
    for (uint16_t n = 0; n < 64; ++n) {
      if (((gone >> n) & 1) == 0) continue;
      std::vector<uint64_t> committed;
      for (const DurableDecision& x : d) {
        if (x.node == n && x.thread == t && x.committed) committed.push_back(x.txn);
      }
      appliers[t]->resolve_removed(n, std::move(committed));
    }
  }
}

Result<bool> durable_install(const DurableParts& p, const store::TableSpec& spec, uint64_t key,
                             bool present, uint64_t version, std::span<const uint8_t> value) {
  std::vector<uint8_t> now(spec.value_size, 0);
  uint64_t at = 0;
  Result<bool> got = p.store->get_local(spec, key, now, &at);
  if (!got.is_ok()) return got.status();
  using C = store::tables::Change;
  Result<uint64_t> off = uint64_t{0};
  if (present && (!*got || at < version)) {
    off = p.store->replay(spec, key, *got ? C::kUpdate : C::kInsert, version, value);
  } else if (!present && *got) {
    off = p.store->replay(spec, key, C::kDelete, at + 1, {});
  } else if (present && at == version && std::equal(value.begin(), value.end(), now.begin())) {
    return false;
  } else if (!present) {
    return false;
  } else {
    // The copy is newer than its surviving backups: cannot be (a primary
    // is never ahead of a complete log); replaced as the volatile repair
    // does, then persisted at the slot replay finds for the version.
    DRTMX_RETURN_IF_ERROR(p.store->install(spec, key, 0, {}, true).status());
    off = p.store->replay(spec, key, C::kInsert, version, value);
  }
  if (!off.is_ok()) return off.status();
  if (*off == 0) return false;
  flush_slot(p, spec, *off);
  p.persist.drain();
  return true;
}

Result<uint64_t> finish_removed(const DurableParts& p, uint64_t gone,
                                const std::vector<DurableDecision>& d,
                                const std::vector<std::unique_ptr<BackupApplier>>& appliers) {
  // No applier reads these rings any more (two polls after retiring them).
  std::vector<uint64_t> p0(appliers.size(), 0);
  for (size_t t = 0; t < appliers.size(); ++t) {
    if (!appliers[t]) continue;
    appliers[t]->retire(gone);
    p0[t] = appliers[t]->polls();
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (size_t t = 0; t < appliers.size(); ++t) {
    while (appliers[t] && appliers[t]->polls() < p0[t] + 2) {
      if (std::chrono::steady_clock::now() > until) {
        return timeout_error("failover: the applier of thread " + std::to_string(t) +
                             " did not poll within 10 s");
      }
      std::this_thread::yield();
    }
  }
  auto committed = [&](uint16_t n, uint16_t t, uint64_t txn) {
    for (const DurableDecision& x : d) {
      if (x.node == n && x.thread == t && x.txn == txn) return x.committed;
    }
    return false;
  };
  // Committed entries beyond where an applier stopped (a hole): replayed
  // here, in version order per key, where this node hosts the record.
  std::vector<RedoRecord> records, decoded;
  each_removed_ring(p, gone, [&](uint16_t n, uint16_t t) {
    const uint64_t from = t < appliers.size() && appliers[t] ? appliers[t]->resolved_at(n) : 1;
    for (const LogEntry& e :
         scan_ring(ring_of(p, n, t), p.layout.ring_bytes, from == 0 ? 1 : from)) {
      if (!committed(n, t, e.mark.txn) || !decode_redo(e.payload, e.len, &decoded)) continue;
      records.insert(records.end(), decoded.begin(), decoded.end());
    }
  });
  std::stable_sort(records.begin(), records.end(), [](const RedoRecord& a, const RedoRecord& b) {
    return a.table != b.table ? a.table < b.table
           : a.key != b.key   ? a.key < b.key
                              : a.version < b.version;
  });
  uint64_t replayed = 0;
  for (const RedoRecord& r : records) {
    const store::TableSpec* spec = p.catalog->find(r.table);
    if (spec == nullptr || !p.catalog->hosts(p.self, *spec, p.catalog->partition_of(*spec, r.key)))
      continue;
    Result<uint64_t> off = p.store->replay(*spec, r.key, change_of(r.op), r.version, r.value);
    if (!off.is_ok()) return off.status().with_context("failover: replaying '" + spec->name + "'");
    if (*off == 0) continue;
    flush_slot(p, *spec, *off);
    ++replayed;
  }
  p.persist.drain();
  // The rings and their headers: empty for good (the records they held are
  // persistent in the copies: released by the appliers, or replayed above).
  each_removed_ring(p, gone, [&](uint16_t n, uint16_t t) {
    uint8_t* ring = ring_of(p, n, t);
    std::memset(ring, 0, p.layout.ring_bytes);
    p.persist.flush(ring, p.layout.ring_bytes);
    RingHeader* h = header_of(p, n, t);
    std::memset(static_cast<void*>(h), 0, sizeof *h);
    p.persist.flush(h, sizeof *h);
  });
  p.persist.drain();
  return replayed;
}

}  // namespace drtmx::txn::failover
