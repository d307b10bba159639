#include "txn/store_locator.h"

#include <algorithm>

#include "store/tables/store_node.h"

namespace drtmx::txn {

StoreLocator::StoreLocator(const store::Catalog& c, store::tables::NodeCaches& caches,
                           std::span<uint8_t> scratch, r2::NodeId self)
    : catalog_(c), caches_(caches), scratch_(scratch), self_(self) {}

uint32_t StoreLocator::value_size(TableId t) const {
  const store::TableSpec* s = spec(t);
  return s == nullptr ? 0 : s->value_size;
}

bool StoreLocator::deletes(TableId t) const {
  const store::TableSpec* s = spec(t);
  return s == nullptr || s->deletes;
}

r2::NodeId StoreLocator::primary(TableId t, Key k) const {
  const store::TableSpec* s = spec(t);
  if (s == nullptr) return self_;
  return caches_.placement().primary(*s, catalog_.partition_of(*s, k), self_);
}

size_t StoreLocator::backups(TableId t, Key k, r2::NodeId* out, size_t max) const {
  const store::TableSpec* s = spec(t);
  if (s == nullptr) return 0;
  const store::PartitionReplicas r =
      caches_.placement().replicas_of(*s, catalog_.partition_of(*s, k), self_);
  const size_t n = std::min<size_t>(r.backup_count, max);
  for (size_t i = 0; i < n; ++i) out[i] = r.backups[i];
  return n;
}

store::tables::TableClient& StoreLocator::client(ReadPath path) {
  std::unique_ptr<store::tables::TableClient>& c = clients_[static_cast<size_t>(path)];
  if (!c) {
    store::tables::TableClientOptions o;
    switch (path) {
      case ReadPath::kRpc:
        o.path = store::tables::Path::kRpc;
        break;
      case ReadPath::kOneSided:
        o.hash.use_cache = false;
        break;
      case ReadPath::kOneSidedCached:
        o.hash.miss_path = store::hash::MissPath::kBucketWalk;
        break;
      case ReadPath::kHybrid:
        o.hash.miss_path = store::hash::MissPath::kRpc;
        break;
    }
    c = std::make_unique<store::tables::TableClient>(catalog_, caches_, scratch_, o);
  }
  return *c;
}

Abort StoreLocator::read(r2::Co& co, ReadPath path, TableId t, Key k, RecordRef* ref,
                         uint8_t* copy) {
  const store::TableSpec* s = spec(t);
  if (s == nullptr || (s->kind == store::TableKind::kOrdered && s->inline_values)) {
    return Abort::kNotSupported;
  }
  value_.resize(s->value_size);
  store::tables::RecordRef where;
  Result<bool> got = client(path).get(co, *s, k, value_, &where);
  if (!got.is_ok()) {
    return got.status().code() == Code::kUnavailable ? Abort::kTornRead : Abort::kNodeFailure;
  }
  if (!*got) return Abort::kRecordMissing;
  ref->addr = where.addr;
  ref->value_size = s->value_size;
  ref->version = where.version;
  build_copy(copy, k, where.incarnation, where.version, value_.data(), s->value_size);
  return Abort::kNone;
}

void StoreLocator::read_many(r2::Co& co, ReadPath path, std::span<const TableKey> keys,
                             RecordRef* refs, uint8_t* const* copies, Abort* results) {
  many_done_.assign(keys.size(), 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (many_done_[i]) continue;
    const store::TableSpec* s = spec(keys[i].table);
    if (s == nullptr || s->kind != store::TableKind::kOrdered || s->inline_values) {
      results[i] = read(co, path, keys[i].table, keys[i].key, &refs[i], copies[i]);
      continue;
    }
    // Every key of this table, in order of appearance.
    many_at_.clear();
    many_keys_.clear();
    for (size_t j = i; j < keys.size(); ++j) {
      if (many_done_[j] || keys[j].table != keys[i].table) continue;
      many_done_[j] = 1;
      many_at_.push_back(j);
      many_keys_.push_back(keys[j].key);
    }
    const size_t n = many_keys_.size(), vs = s->value_size;
    many_values_.resize(n * vs);
    many_found_.resize(n);
    many_refs_.resize(n);
    const Status st = client(path).get_many(co, *s, many_keys_, many_values_.data(),
                                            many_found_.data(), many_refs_.data());
    for (size_t k = 0; k < n; ++k) {
      const size_t at = many_at_[k];
      if (!st.is_ok()) {
        results[at] = st.code() == Code::kUnavailable ? Abort::kTornRead : Abort::kNodeFailure;
        continue;
      }
      if (!many_found_[k]) {
        results[at] = Abort::kRecordMissing;
        continue;
      }
      const store::tables::RecordRef& w = many_refs_[k];
      refs[at].addr = w.addr;
      refs[at].value_size = s->value_size;
      refs[at].version = w.version;
      build_copy(copies[at], many_keys_[k], w.incarnation, w.version, many_values_.data() + k * vs,
                 s->value_size);
      results[at] = Abort::kNone;
    }
  }
}

template <typename Fetch, typename Take>
Abort StoreLocator::walk_chunks(const store::TableSpec& s, Key from, Key to, size_t n,
                                std::vector<Key>* keys, Fetch fetch, Take take) {
  auto failed = [](const Status& st) {
    return st.code() == Code::kUnavailable ? Abort::kTornRead : Abort::kNodeFailure;
  };
  catalog_.scan_partitions(s, from, to, &parts_);
  if (s.scheme == store::PartitionScheme::kRange || parts_.size() <= 1) {
    // Key order is partition order (kRange: one walk from `from` across
    // partitions), or one partition holds the whole range (a walk inside
    // it: its keys are not contiguous in the key space).
    const bool ranged = s.scheme == store::PartitionScheme::kRange;
    const size_t chunk = ranged ? kScanChunk : kMergeChunk;
    ScanChunk& c = one_;
    c.part = ranged || parts_.empty() ? kNoPartition : parts_[0];
    Key cur = from;
    while (keys->size() < n && cur <= to) {
      const size_t want = std::min(n - keys->size(), chunk);
      if (Status st = fetch(c, cur, want); !st.is_ok()) return failed(st);
      for (size_t i = 0; i < c.keys.size() && keys->size() < n; ++i) {
        if (c.keys[i] > to) return Abort::kNone;
        keys->push_back(c.keys[i]);
        take(c, i);
      }
      if (c.keys.size() < want || c.keys.back() == ~Key{0}) break;
      cur = c.keys.back() + 1;
    }
    return Abort::kNone;
  }
  // Several partitions whose keys interleave (kHashMod, kFunction): a
  // cursor per partition, each read a chunk at a time when its rows run
  // out, merged in key order until n rows or the range's end. At most one
  // chunk per partition is read beyond the rows returned.
  if (cursors_.size() < parts_.size()) cursors_.resize(parts_.size());
  for (size_t i = 0; i < parts_.size(); ++i) {
    ScanChunk& c = cursors_[i];
    c.keys.clear();
    c.at = 0;
    c.next = from;
    c.done = false;
    c.part = parts_[i];
  }
  while (keys->size() < n) {
    ScanChunk* best = nullptr;
    for (size_t i = 0; i < parts_.size(); ++i) {
      ScanChunk& c = cursors_[i];
      if (c.at == c.keys.size() && !c.done) {
        const size_t want = std::min(n - keys->size(), kMergeChunk);
        if (Status st = fetch(c, c.next, want); !st.is_ok()) return failed(st);
        c.at = 0;
        if (c.keys.size() < want || c.keys.back() >= to) {
          c.done = true;  // the partition, or the range, ends in these rows
        } else {
          c.next = c.keys.back() + 1;
        }
      }
      if (c.at < c.keys.size() && c.keys[c.at] <= to &&
          (best == nullptr || c.keys[c.at] < best->keys[best->at])) {
        best = &c;
      }
    }
    if (best == nullptr) break;
    keys->push_back(best->keys[best->at]);
    take(*best, best->at);
    ++best->at;
  }
  return Abort::kNone;
}

Abort StoreLocator::scan(r2::Co& co, ReadPath path, TableId t, Key from, Key to, size_t n,
                         std::vector<Key>* keys, std::vector<uint8_t>* values,
                         std::vector<RecordRef>* refs, std::vector<uint32_t>* incarnations) {
  keys->clear();
  values->clear();
  refs->clear();
  incarnations->clear();
  if (!scannable(t)) return Abort::kNotSupported;
  const store::TableSpec* s = spec(t);
  const size_t vs = s->value_size;
  return walk_chunks(
      *s, from, to, n, keys,
      [&](ScanChunk& c, Key cur, size_t want) {
        store::tables::TableClient& tc = client(path);
        return c.part == kNoPartition
                   ? tc.scan(co, *s, cur, want, c.keys, c.values, &c.refs)
                   : tc.scan_in(co, *s, c.part, cur, want, c.keys, c.values, &c.refs);
      },
      [&](const ScanChunk& c, size_t i) {
        values->insert(values->end(), c.values.begin() + i * vs, c.values.begin() + (i + 1) * vs);
        const store::tables::RecordRef& w = c.refs[i];
        refs->push_back(RecordRef{w.addr, s->value_size, w.version});
        incarnations->push_back(w.incarnation);
      });
}

Abort StoreLocator::scan_keys(r2::Co& co, ReadPath path, TableId t, Key from, Key to, size_t n,
                              std::vector<Key>* keys) {
  keys->clear();
  if (!scannable(t)) return Abort::kNotSupported;
  const store::TableSpec* s = spec(t);
  return walk_chunks(
      *s, from, to, n, keys,
      [&](ScanChunk& c, Key cur, size_t want) {
        store::tables::TableClient& tc = client(path);
        return c.part == kNoPartition ? tc.scan_keys(co, *s, cur, want, c.keys)
                                      : tc.scan_keys_in(co, *s, c.part, cur, want, c.keys);
      },
      [](const ScanChunk&, size_t) {});
}

const store::hash::HashTable* StoreLocator::own_hash(const store::TableSpec& s, Key k) const {
  if (!direct_hash_) return nullptr;
  return local_->store->primary_hash(s, catalog_.partition_of(s, k));
}

bool StoreLocator::address_of(ReadPath path, TableId t, Key k, r2::RemoteAddr* addr,
                              uint32_t* incarnation) {
  if (path != ReadPath::kOneSidedCached && path != ReadPath::kHybrid) return false;
  const store::TableSpec* s = spec(t);
  if (s == nullptr || s->kind != store::TableKind::kHash) return false;
  const uint32_t service = store::tables::service_id(t, catalog_.partition_of(*s, k));
  store::hash::CachedLocation loc;
  // An entry on another node than the primary now predates a failover that
  // moved the partition (it raced NodeCaches::reset): a miss. Only a cluster
  // that lost a node can have one (one load otherwise).
  if (!caches_.location().get(service, k, &loc) ||
      (caches_.placement().degraded() &&
       loc.addr.node != caches_.placement().primary(*s, catalog_.partition_of(*s, k), self_))) {
    // A miss on a partition this node is the primary of: its table says
    // where the record is (what the owner RPC would answer), and the cache
    // learns it.
    const store::hash::HashTable* h = own_hash(*s, k);
    uint64_t offset = 0;
    if (h == nullptr || !h->locate(k, &offset, incarnation)) return false;  // read() says why
    *addr = {self_, store::tables::table_region(t), offset};
    caches_.location().put(service, k, {*addr, *incarnation});
    return true;
  }
  *addr = loc.addr;
  *incarnation = loc.incarnation;
  return true;
}

void StoreLocator::remember_address(TableId t, Key k, r2::NodeId primary, uint64_t offset,
                                    uint32_t incarnation) {
  const store::TableSpec* s = spec(t);
  if (s == nullptr || s->kind != store::TableKind::kHash) return;
  caches_.location().put(store::tables::service_id(t, catalog_.partition_of(*s, k)), k,
                         {{primary, store::tables::table_region(t), offset}, incarnation});
}

store::SlotRef StoreLocator::local_slot(const r2::Co& co, const r2::RemoteAddr& addr,
                                        uint32_t value_size) const {
  if (!direct_hash_ || addr.node != self_ || !co.direct(self_)) return {};
  return local_->store->slot_at(addr.region, addr.offset, value_size);
}

bool StoreLocator::quiet_copies() const {
  return direct_hash_ && local_->store->quiet_copies();
}

void StoreLocator::prefetch_address(ReadPath path, TableId t, Key k) {
  if (path != ReadPath::kOneSidedCached && path != ReadPath::kHybrid) return;
  const store::TableSpec* s = spec(t);
  if (s == nullptr || s->kind != store::TableKind::kHash) return;
  caches_.location().prefetch(store::tables::service_id(t, catalog_.partition_of(*s, k)), k);
}

Status StoreLocator::reserve(r2::Co& co, std::span<Reservation> items, uint64_t lock_word) {
  for (Reservation& r : items) r.primary = primary(r.table, r.key);
  return rpc_reserve(co, items, lock_word, local_);
}

Status StoreLocator::remove_held(r2::Co& co, std::span<const HeldRecord> items, uint64_t lock_word,
                                 bool passive) {
  return rpc_remove_held(co, items, lock_word, passive, local_);
}

void StoreLocator::scan_parts(TableId t, Key from, Key to, std::vector<ScanPart>* out) const {
  out->clear();
  const store::TableSpec* s = spec(t);
  if (s == nullptr) return;
  catalog_.scan_partitions(*s, from, to, &merge_parts_);
  for (store::PartitionId p : merge_parts_) {
    out->push_back({p, caches_.placement().primary(*s, p, self_)});
  }
}

}  // namespace drtmx::txn
