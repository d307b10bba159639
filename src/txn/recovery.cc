#include "txn/recovery.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <vector>

#include "r2/common/clock.h"
#include "store/record.h"
#include "store/tables/plan.h"

namespace drtmx::txn {
namespace {

// An entry found in ring `ring` (coordinator node * threads + thread).
struct Found {
  uint32_t ring;
  LogEntry entry;
};

// The decisions blob every node contributes: its watermark per ring, then
// the transactions of the entries it holds above it. Text, one item a line.
std::string encode(const std::vector<uint64_t>& decided, const std::vector<Found>& found) {
  std::ostringstream os;
  for (size_t i = 0; i < decided.size(); ++i) os << "D " << i << ' ' << decided[i] << '\n';
  for (const Found& f : found) {
    if (f.entry.mark.txn > decided[f.ring]) {
      os << "T " << f.ring << ' ' << f.entry.mark.txn << ' ' << f.entry.mark.targets << '\n';
    }
  }
  return os.str();
}

struct FoundDecisions {
  std::vector<uint64_t> decided;                           // per ring: the highest anywhere
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> seen;  // (ring, txn) -> entries found
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> targets;

  bool committed(uint32_t ring, const LogMark& m) const {
    if (m.txn == 0) return false;  // not an entry of a durable log
    if (m.txn <= decided[ring]) return true;
    auto it = seen.find({ring, m.txn});
    return it != seen.end() && it->second >= m.targets;
  }
};

Status decode_into(const std::string& blob, size_t node, FoundDecisions* d) {
  std::istringstream is(blob);
  std::string tag;
  while (is >> tag) {
    uint64_t ring = 0, a = 0, b = 0;
    const bool ok = tag == "D"   ? static_cast<bool>(is >> ring >> a)
                    : tag == "T" ? static_cast<bool>(is >> ring >> a >> b)
                                 : false;
    if (!ok || ring >= d->decided.size() || b > 0xffff) {
      return internal_error("recovery: node " + std::to_string(node) +
                            " sent malformed log decisions (item '" + tag + "')");
    }
    if (tag == "D") {
      d->decided[ring] = std::max(d->decided[ring], a);
    } else {
      ++d->seen[{static_cast<uint32_t>(ring), a}];
      d->targets[{static_cast<uint32_t>(ring), a}] = static_cast<uint32_t>(b);
    }
  }
  return Status::ok();
}

// Step 4a: the committed entries found here that hold records for backup
// copies, for their primaries: a primary that received no entry of a
// transaction (log.cc) may have lost the write-back, or never had it.
// Blob: per entry, its payload length (u32) and its payload.
std::string shipped_blob(const std::vector<const LogEntry*>& committed) {
  std::string blob;
  for (const LogEntry* e : committed) {
    const uint32_t len = e->len;
    blob.append(reinterpret_cast<const char*>(&len), sizeof len);
    blob.append(reinterpret_cast<const char*>(e->payload), len);
  }
  return blob;
}

// The records of `blob` (node `from`) whose partition's primary is this
// node, appended to `out`.
Status take_shipped(const store::Catalog& catalog, store::NodeId16 self, const std::string& blob,
                    size_t from, std::vector<RedoRecord>* out, std::vector<RedoRecord>* decoded) {
  size_t off = 0;
  while (off < blob.size()) {
    uint32_t len = 0;
    if (blob.size() - off < sizeof len) break;
    std::memcpy(&len, blob.data() + off, sizeof len);
    off += sizeof len;
    if (len > blob.size() - off ||
        !decode_redo(reinterpret_cast<const uint8_t*>(blob.data() + off), len, decoded)) {
      return internal_error("recovery: node " + std::to_string(from) +
                            " shipped a committed log entry that does not decode");
    }
    off += len;
    for (const RedoRecord& r : *decoded) {
      const store::TableSpec* spec = catalog.find(r.table);
      if (r.at_primary != 0 || spec == nullptr) continue;  // checked at replay
      if (catalog.replicas_of(*spec, catalog.partition_of(*spec, r.key), self).primary == self) {
        out->push_back(r);
      }
    }
  }
  if (off != blob.size()) {
    return internal_error("recovery: node " + std::to_string(from) +
                          " shipped a truncated list of log entries");
  }
  return Status::ok();
}

store::tables::Change change_of(RedoOp op) {
  using C = store::tables::Change;
  return op == RedoOp::kInsert ? C::kInsert : op == RedoOp::kDelete ? C::kDelete : C::kUpdate;
}

}  // namespace

bool deleted_at_its_slot(const RedoRecord& r, const uint8_t* slot, size_t value_size) {
  if (r.at_primary == 0 || r.op == RedoOp::kDelete) return false;
  const store::RecordCheck c = store::verify(slot, value_size);
  if (c != store::RecordCheck::kOk && c != store::RecordCheck::kDeleted) return false;
  store::RecordHeader h{};
  std::memcpy(&h, slot, sizeof h);
  if (h.key != r.key || h.incarnation != r.incarnation) return true;
  return c == store::RecordCheck::kDeleted;
}

Status recover_logs(const store::Catalog& catalog, store::tables::StoreNode& store,
                    r2::Fabric& fabric, uint8_t* log_base, const LogRingLayout& layout,
                    r2::ControlClient& control, const PersistOps& persist, LogRecovery* out) {
  *out = LogRecovery{};
  const uint32_t rings = static_cast<uint32_t>(layout.rings());
  auto header = [&](uint32_t i) {
    return reinterpret_cast<RingHeader*>(log_base + layout.rings() * layout.ring_bytes +
                                         uint64_t{i} * sizeof(RingHeader));
  };
  // 2. What the rings hold.
  uint64_t t = r2::now_ns();
  std::vector<Found> found;
  std::vector<uint64_t> decided(rings, 0);
  for (uint32_t i = 0; i < rings; ++i) {
    const RingHeader* h = header(i);
    decided[i] = h->decided;
    const uint64_t from = h->next_seq == 0 ? 1 : h->next_seq;
    for (const LogEntry& e :
         scan_ring(log_base + uint64_t{i} * layout.ring_bytes, layout.ring_bytes, from)) {
      decided[i] = std::max(decided[i], e.mark.decided);
      found.push_back({i, e});
    }
  }
  out->entries = found.size();
  out->scan_ns = r2::now_ns() - t;

  // 3. Decisions, cluster-wide.
  t = r2::now_ns();
  auto all = control.exchange("txn.recovery.decisions", encode(decided, found));
  if (!all.is_ok()) return all.status().with_context("recovery: exchanging log decisions");
  FoundDecisions d;
  d.decided.assign(rings, 0);
  for (size_t n = 0; n < all->size(); ++n) DRTMX_RETURN_IF_ERROR(decode_into((*all)[n], n, &d));
  out->decide_ns = r2::now_ns() - t;

  // 4. Replay what committed, in version order per key: the records found
  // here, and those other nodes found for copies this node is primary of.
  t = r2::now_ns();
  std::vector<RedoRecord> records, decoded;
  std::vector<const LogEntry*> for_primaries;
  for (const Found& f : found) {
    if (!d.committed(f.ring, f.entry.mark)) {
      ++out->dropped;
      continue;
    }
    ++out->committed;
    if (!decode_redo(f.entry.payload, f.entry.len, &decoded)) {
      return internal_error("recovery: a committed log entry (ring " + std::to_string(f.ring) +
                            ", entry " + std::to_string(f.entry.seq) +
                            ") does not decode; the pool is damaged");
    }
    records.insert(records.end(), decoded.begin(), decoded.end());
    const bool backup_records = std::any_of(decoded.begin(), decoded.end(),
                                            [](const RedoRecord& r) { return r.at_primary == 0; });
    if (backup_records) for_primaries.push_back(&f.entry);
  }
  auto shipped = control.exchange("txn.recovery.shipped", shipped_blob(for_primaries));
  if (!shipped.is_ok()) {
    return shipped.status().with_context("recovery: shipping committed records to primaries");
  }
  const size_t local = records.size();
  for (size_t n = 0; n < shipped->size(); ++n) {
    if (n == store.node()) continue;
    DRTMX_RETURN_IF_ERROR(
        take_shipped(catalog, store.node(), (*shipped)[n], n, &records, &decoded));
  }
  out->shipped = records.size() - local;
  // Sorted by position: the records found here come first (index < local).
  std::vector<uint32_t> order(records.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const RedoRecord& a = records[x];
    const RedoRecord& b = records[y];
    return a.table != b.table ? a.table < b.table
           : a.key != b.key   ? a.key < b.key
                              : a.version < b.version;
  });
  // A primary's record names the slot its write-back went to. Looked at
  // before anything is replayed (a replay may reuse a slot): when that slot
  // whole holds another key or incarnation, or this incarnation deleted,
  // the record's incarnation was deleted after it (the slot is freed only
  // then), so an insert or update of it must not be installed again — the
  // delete's entry may be released while this one outlived it.
  std::vector<uint8_t> gone(records.size(), 0);
  for (size_t i = 0; i < records.size(); ++i) {
    const RedoRecord& r = records[i];
    const store::TableSpec* spec = r.at_primary != 0 ? catalog.find(r.table) : nullptr;
    const r2::Region* reg = spec ? fabric.region(store::tables::table_region(spec->id)) : nullptr;
    const uint64_t off = r.at_primary - 1;
    const size_t bytes = spec ? store::record_slot_size(spec->value_size) : 0;
    if (reg == nullptr || off > reg->size || bytes > reg->size - off) continue;
    gone[i] = deleted_at_its_slot(r, reg->base + off, spec->value_size);
  }
  for (uint32_t i : order) {
    const RedoRecord& r = records[i];
    const store::TableSpec* spec = catalog.find(r.table);
    if (spec == nullptr) {
      return internal_error("recovery: a committed log record names table " +
                            std::to_string(r.table) + ", which this configuration does not have");
    }
    ++out->records;
    if (gone[i]) continue;
    Result<uint64_t> off = store.replay(*spec, r.key, change_of(r.op), r.version, r.value);
    if (!off.is_ok()) return off.status().with_context("recovery: replaying '" + spec->name + "'");
    if (*off == 0) continue;
    ++out->replayed;
    if (i >= local) ++out->shipped_replayed;
    const r2::Region* reg = fabric.region(store::tables::table_region(spec->id));
    persist.flush(reg->base + *off, store::record_slot_size(spec->value_size));
  }
  persist.drain();
  out->replay_ns = r2::now_ns() - t;
  DRTMX_RETURN_IF_ERROR(control.barrier("txn.recovery.replayed"));

  // 5. Empty rings for the new run.
  t = r2::now_ns();
  std::memset(log_base, 0, layout.region_bytes());
  persist.persist(log_base, layout.region_bytes());
  out->reset_ns = r2::now_ns() - t;
  return control.barrier("txn.recovery.reset");
}

}  // namespace drtmx::txn
