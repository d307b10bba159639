#include "store/tables/table_client.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "store/record.h"
#include "store/record_io.h"
#include "store/tables/store_node.h"
#include "store/word_copy.h"

namespace drtmx::store::tables {

// --- NodeCaches --------------------------------------------------------------

Result<std::unique_ptr<NodeCaches>> NodeCaches::create(const Catalog& c,
                                                       const NodeCacheOptions& o) {
  DRTMX_RETURN_IF_ERROR(o.xcache.validate());
  if (o.threads == 0) return invalid_argument("node caches: threads must be > 0");
  std::unique_ptr<NodeCaches> n(new NodeCaches(c, o));
  Result<std::unique_ptr<hash::LocationCache>> loc = hash::LocationCache::create(o.location);
  if (!loc.is_ok()) return loc.status();
  n->location_ = std::move(*loc);
  n->threads_.resize(o.threads);
  return n;
}

NodeCaches::Learned& NodeCaches::xcache(r2::ThreadId t, TableId table, PartitionId p,
                                        r2::NodeId owner) {
  // partition_key() leaves the top 16 bits free: the owner goes there.
  const uint64_t k = partition_key(table, p) | (uint64_t{owner} << 48);
  std::unique_ptr<Learned>& slot = threads_.at(t).caches[k];
  if (!slot) slot = std::make_unique<Learned>(opts_.xcache);
  return *slot;
}

void NodeCaches::reset() {
  location_->clear();
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

size_t NodeCaches::xcache_bytes(r2::ThreadId t) const {
  size_t b = 0;
  for (const auto& [k, l] : threads_.at(t).caches) b += l->cache.memory_bytes();
  return b;
}

// --- stats -------------------------------------------------------------------

void TableClientStats::add(const TableClientStats& o) {
  gets += o.gets;
  reads += o.reads;
  rpcs += o.rpcs;
  local += o.local;
  records_direct += o.records_direct;
  scans += o.scans;
  writes += o.writes;
  record_retries += o.record_retries;
}

// --- TableClient -------------------------------------------------------------

TableClient::TableClient(const Catalog& c, NodeCaches& caches, std::span<uint8_t> scratch,
                         const TableClientOptions& o)
    : catalog_(c),
      caches_(caches),
      scratch_(scratch),
      opts_(o),
      hash_(o.hash.use_cache ? &caches.location() : nullptr,
            scratch.subspan(0, std::min<size_t>(scratch.size(), scratch_layout(c).hash_bytes)),
            o.hash) {
  const ScratchLayout l = scratch_layout(c);
  if (scratch.size() >= l.total()) {
    xscratch_ = scratch.subspan(l.hash_bytes, l.ordered_bytes);
    record_buf_ = scratch.data() + l.hash_bytes + l.ordered_bytes;
  }
}

r2::NodeId TableClient::primary(const TableSpec& t, PartitionId p, r2::NodeId self) const {
  return caches_.placement().primary(t, p, self);
}

Result<const hash::HashRemote*> TableClient::hash_route(r2::Co& co, const TableSpec& t,
                                                        PartitionId p) {
  check_generation();
  if (hash_routes_.size() <= t.id) hash_routes_.resize(t.id + 1);
  std::vector<hash::HashRemote>& routes = hash_routes_[t.id];
  if (routes.empty()) {
    for (PartitionId q = 0; q < catalog_.partitions(t); ++q) {
      const r2::NodeId owner = primary(t, q, co.node());
      Result<PartitionPlan> plan = locate(catalog_, t, q, owner);
      if (!plan.is_ok()) {
        routes.clear();
        return plan.status();
      }
      routes.push_back(hash::HashRemote{service_id(t.id, q), owner, plan->hash});
    }
  }
  return &routes[p];
}

void TableClient::check_generation() {
  const uint64_t g = caches_.generation();
  if (g == routes_generation_) return;
  // The primaries moved and the learned caches were dropped
  // (NodeCaches::reset): every route and ordered client is rebuilt.
  hash_routes_.clear();
  ordered_.clear();
  ordered_index_.clear();
  routes_generation_ = g;
}

Result<TableClient::Ordered*> TableClient::ordered(r2::Co& co, const TableSpec& t, PartitionId p) {
  check_generation();
  if (t.id < ordered_index_.size() && p < ordered_index_[t.id].size() &&
      ordered_index_[t.id][p] != nullptr) {
    return ordered_index_[t.id][p];
  }
  auto it = ordered_.find(partition_key(t.id, p));
  if (it != ordered_.end()) return &it->second;
  if (xscratch_.empty()) {
    return invalid_argument("table client: scratch of " + std::to_string(scratch_.size()) +
                            " bytes is smaller than scratch_per_coroutine() = " +
                            std::to_string(scratch_per_coroutine(catalog_)));
  }
  const r2::NodeId owner = primary(t, p, co.node());
  Result<PartitionPlan> plan = locate(catalog_, t, p, owner);
  if (!plan.is_ok()) return plan.status();
  Ordered o;
  o.table = &t;
  o.partition = p;
  o.learned = &caches_.xcache(co.thread(), t.id, p, owner);
  o.remote = OrderedRemote{owner, service_id(t.id, p), plan->leaves.value_bytes};
  if (caches_.local_store() != nullptr && co.direct(owner)) {
    const LocalPartition* lp = caches_.local_store()->partition(t.id, p);
    if (lp != nullptr && lp->tree != nullptr &&
        lp->tree->value_bytes() == plan->leaves.value_bytes) {
      o.local = lp->tree.get();
    }
  }
  xstore::XRemote xr;
  xr.owner = r2::Target{owner, static_cast<r2::ThreadId>(p % co.worker().threads_per_node())};
  xr.tree = o.remote.service;
  xr.area = plan->leaves;
  o.client = std::make_unique<xstore::XStoreClient>(o.learned->cache, xr, xscratch_, opts_.xstore);
  DRTMX_RETURN_IF_ERROR(o.client->check());
  Ordered* made = &ordered_.emplace(partition_key(t.id, p), std::move(o)).first->second;
  if (ordered_index_.size() <= t.id) ordered_index_.resize(t.id + 1);
  if (ordered_index_[t.id].size() <= p) ordered_index_[t.id].resize(p + 1, nullptr);
  ordered_index_[t.id][p] = made;
  return made;
}

Status TableClient::warm_one(r2::Co& co, Ordered& o) {
  if (o.local != nullptr || o.learned->cache.trained() || o.learned->warming) return Status::ok();
  o.learned->warming = true;
  Status st = o.client->warm(co);
  o.learned->warming = false;
  return st.with_context("warming the learned cache of table '" + o.table->name + "' partition " +
                         std::to_string(o.partition));
}

Status TableClient::warm(r2::Co& co, const TableSpec& t) {
  if (t.kind == TableKind::kHash) {
    for (PartitionId p = 0; p < catalog_.partitions(t); ++p) {
      Result<const hash::HashRemote*> r = hash_route(co, t, p);
      if (!r.is_ok()) return r.status();
      Result<uint64_t> added = hash_.warm(co, **r);
      if (!added.is_ok()) {
        return added.status().with_context("warming the location cache with table '" + t.name +
                                           "' partition " + std::to_string(p));
      }
    }
    return Status::ok();
  }
  for (PartitionId p = 0; p < catalog_.partitions(t); ++p) {
    Result<Ordered*> o = ordered(co, t, p);
    if (!o.is_ok()) return o.status();
    DRTMX_RETURN_IF_ERROR(warm_one(co, **o));
  }
  return Status::ok();
}

Result<bool> TableClient::local_get(const Ordered& o, uint64_t key, void* out) {
  ++stats_.local;
  const xstore::XStatus s = o.local->get(key, out);
  if (s == xstore::XStatus::kNotFound) return false;
  DRTMX_RETURN_IF_ERROR(xstore::to_status(s, key));
  return true;
}

Result<bool> TableClient::index_get(r2::Co& co, Ordered& o, uint64_t key, void* out) {
  if (o.local != nullptr) return local_get(o, key, out);
  if (opts_.path == Path::kOneSided) {
    if (!o.learned->cache.trained() && !o.learned->warming) {
      DRTMX_RETURN_IF_ERROR(warm_one(co, o));
    }
    if (o.learned->cache.trained()) {
      const uint64_t before = o.client->stats().reads;
      Result<bool> r = o.client->get(co, key, out);
      stats_.reads += o.client->stats().reads - before;
      return r;
    }
  }
  ++stats_.rpcs;
  return rpc_.get(co, o.remote, key, out);
}

Result<bool> TableClient::record_get(r2::Co& co, Ordered& o, uint64_t key,
                                     std::span<uint8_t> value_out, RecordRef* ref) {
  const size_t slot = record_slot_size(o.table->value_size);
  for (uint32_t attempt = 0; attempt <= opts_.record_retries; ++attempt) {
    RecordAddr a;
    Result<bool> found = index_get(co, o, key, &a);
    if (!found.is_ok() || !*found) return found;
    const r2::RemoteAddr at{o.remote.node, table_region(o.table->id), a.offset};
    for (uint32_t torn = 0; torn <= opts_.record_retries; ++torn) {
      const uint8_t* here = own_record(co, o, a.offset);
      r2::OpStatus s = r2::OpStatus::kOk;
      bool quiet = false;
      if (here != nullptr) {
        quiet = copy_own(record_buf_, here, slot);
        co.charge(1);
      } else {
        ++stats_.reads;
        s = co.read(at, record_buf_, static_cast<uint32_t>(slot));
      }
      if (s != r2::OpStatus::kOk) {
        std::string m = "table '" + o.table->name +
                        "': record READ failed: " + std::string(r2::op_status_name(s));
        // Fenced: its node was removed (a failover moves the partition).
        return s == r2::OpStatus::kFenced ? aborted(std::move(m)) : unavailable(std::move(m));
      }
      const RecordCheck c = quiet ? verify_quiet(record_buf_, key, a.incarnation)
                                  : verify(record_buf_, o.table->value_size, key, a.incarnation);
      if (c == RecordCheck::kTorn) {
        ++stats_.record_retries;
        continue;
      }
      if (c != RecordCheck::kOk) break;  // deleted or reused since the index lookup
      std::memcpy(value_out.data(), record_buf_ + sizeof(RecordHeader), o.table->value_size);
      if (ref != nullptr) {
        RecordHeader h;
        std::memcpy(&h, record_buf_, sizeof h);
        *ref = RecordRef{at, a.incarnation, h.version};
      }
      return true;
    }
    ++stats_.record_retries;
  }
  return unavailable("table '" + o.table->name + "': record of key " + std::to_string(key) +
                     " kept changing under every retry");
}

Result<bool> TableClient::get(r2::Co& co, const TableSpec& t, uint64_t key,
                              std::span<uint8_t> value_out, RecordRef* ref) {
  if (value_out.size() < t.value_size) {
    return invalid_argument("table '" + t.name + "': value buffer of " +
                            std::to_string(value_out.size()) + " bytes, needs " +
                            std::to_string(t.value_size));
  }
  ++stats_.gets;
  const PartitionId p = catalog_.partition_of(t, key);
  if (t.kind == TableKind::kHash) {
    Result<const hash::HashRemote*> rr = hash_route(co, t, p);
    if (!rr.is_ok()) return rr.status();
    const hash::HashRemote& r = **rr;
    const hash::HashClientStats before = hash_.stats();
    Result<hash::HashGet> g = opts_.path == Path::kOneSided ? hash_.get(co, r, key, value_out)
                                                            : hash_.get_rpc(co, r, key, value_out);
    stats_.reads += hash_.stats().reads - before.reads;
    stats_.rpcs += hash_.stats().rpc_gets - before.rpc_gets;
    if (!g.is_ok()) return g.status();
    if (g->found && ref != nullptr) *ref = RecordRef{g->addr, g->incarnation, g->version};
    return g->found;
  }
  Result<Ordered*> o = ordered(co, t, p);
  if (!o.is_ok()) return o.status();
  if (!t.inline_values) return record_get(co, **o, key, value_out, ref);
  return index_get(co, **o, key, value_out.data());
}

Status TableClient::get_many(r2::Co& co, const TableSpec& t, std::span<const uint64_t> keys,
                             uint8_t* values, uint8_t* found, RecordRef* refs) {
  const size_t vs = t.value_size;
  auto one = [&](size_t i) -> Status {
    Result<bool> r = get(co, t, keys[i], std::span<uint8_t>(values + i * vs, vs),
                         refs != nullptr ? &refs[i] : nullptr);
    if (!r.is_ok()) return r.status();
    found[i] = *r ? 1 : 0;
    return Status::ok();
  };
  if (t.kind != TableKind::kOrdered || t.inline_values || opts_.path != Path::kOneSided ||
      keys.size() < 2) {
    for (size_t i = 0; i < keys.size(); ++i) DRTMX_RETURN_IF_ERROR(one(i));
    return Status::ok();
  }
  many_done_.assign(keys.size(), 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (many_done_[i]) continue;
    // Every key of i's partition (usually all of them), in order.
    const PartitionId p = catalog_.partition_of(t, keys[i]);
    many_at_.clear();
    many_keys_.clear();
    for (size_t j = i; j < keys.size(); ++j) {
      if (many_done_[j] || catalog_.partition_of(t, keys[j]) != p) continue;
      many_done_[j] = 1;
      many_at_.push_back(j);
      many_keys_.push_back(keys[j]);
    }
    Result<Ordered*> r = ordered(co, t, p);
    if (!r.is_ok()) return r.status();
    Ordered& o = **r;
    DRTMX_RETURN_IF_ERROR(warm_one(co, o));
    // Leaf values are RecordAddrs in a record table's plan; anything else
    // (a mismatched plan) takes the checked one-key path.
    if (many_at_.size() < 2 || (o.local == nullptr && !o.learned->cache.trained()) ||
        o.remote.value_bytes != sizeof(RecordAddr)) {
      for (size_t at : many_at_) DRTMX_RETURN_IF_ERROR(one(at));
      continue;
    }
    const size_t n = many_at_.size();
    stats_.gets += n;
    many_addrs_.resize(n * sizeof(RecordAddr));
    many_found_.resize(n);
    if (o.local != nullptr) {
      for (size_t k = 0; k < n; ++k) {
        Result<bool> f = local_get(o, many_keys_[k], many_addrs_.data() + k * sizeof(RecordAddr));
        if (!f.is_ok()) return f.status();
        many_found_[k] = *f ? 1 : 0;
      }
    } else {
      const uint64_t before = o.client->stats().reads;
      DRTMX_RETURN_IF_ERROR(
          o.client->get_many(co, many_keys_, many_addrs_.data(), many_found_.data()));
      stats_.reads += o.client->stats().reads - before;
    }
    for (size_t first = 0; first < n; first += kScanRecordBatch) {
      const size_t count = std::min<size_t>(kScanRecordBatch, n - first);
      RecordAddr where[kScanRecordBatch];
      bool ok[kScanRecordBatch];
      for (size_t k = 0; k < count; ++k) {
        if (many_found_[first + k]) {
          std::memcpy(&where[k], many_addrs_.data() + (first + k) * sizeof(RecordAddr),
                      sizeof(RecordAddr));
        }
      }
      read_records(co, o, many_keys_.data() + first, where, many_found_.data() + first, count, ok);
      // In key order: record_get() reuses slot 0, which key `first` used.
      for (size_t k = 0; k < count; ++k) {
        const size_t at = many_at_[first + k];
        if (!many_found_[first + k]) {
          found[at] = 0;
          continue;
        }
        if (ok[k]) {
          take_record(o, k, where[k], values + at * vs, refs != nullptr ? &refs[at] : nullptr);
          found[at] = 1;
          continue;
        }
        // Torn, deleted or moved since the index read: look it up again.
        ++stats_.record_retries;
        Result<bool> g = record_get(co, o, keys[at], std::span<uint8_t>(values + at * vs, vs),
                                    refs != nullptr ? &refs[at] : nullptr);
        if (!g.is_ok()) return g.status();
        found[at] = *g ? 1 : 0;
      }
    }
  }
  return Status::ok();
}

Status TableClient::scan_partition(r2::Co& co, Ordered& o, uint64_t start, size_t n, bool* end) {
  part_keys_.clear();
  part_values_.clear();
  if (o.local != nullptr) {
    ++stats_.local;
    *end = o.local->scan(start, n, part_keys_, part_values_);
    return Status::ok();
  }
  if (opts_.path == Path::kOneSided) {
    if (!o.learned->cache.trained() && !o.learned->warming) {
      DRTMX_RETURN_IF_ERROR(warm_one(co, o));
    }
    if (o.learned->cache.trained()) {
      return o.client->scan(co, start, n, part_keys_, part_values_, end);
    }
  }
  ++stats_.rpcs;
  return rpc_.scan(co, o.remote, start, n, part_keys_, part_values_, end);
}

Status TableClient::scan_records(r2::Co& co, Ordered& o, std::vector<uint64_t>& keys,
                                 std::vector<uint8_t>& values, std::vector<RecordRef>* refs) {
  // Leaf values are record addresses: READ the records kScanRecordBatch at
  // a time (one doorbell), verify each by key and incarnation; a torn or
  // stale copy is looked up again on its own (record_get), a row deleted
  // since the index read is skipped.
  const size_t vs = o.table->value_size;
  const bool addrs = part_values_.size() == part_keys_.size() * sizeof(RecordAddr);
  for (size_t first = 0; first < part_keys_.size(); first += kScanRecordBatch) {
    const size_t count = std::min<size_t>(kScanRecordBatch, part_keys_.size() - first);
    RecordAddr where[kScanRecordBatch];
    bool ok[kScanRecordBatch];
    for (size_t i = 0; addrs && i < count; ++i) {
      std::memcpy(&where[i], part_values_.data() + (first + i) * sizeof(RecordAddr),
                  sizeof(RecordAddr));
    }
    if (addrs) {
      read_records(co, o, part_keys_.data() + first, where, nullptr, count, ok);
    } else {
      std::fill(ok, ok + count, false);  // no addresses: every row by record_get
    }
    // In row order: record_get() reuses slot 0, which row `first` used.
    // Room for the whole batch at once (one zero fill, not one per row),
    // trimmed to the rows kept after it.
    values.resize((keys.size() + count) * vs);
    for (size_t i = 0; i < count; ++i) {
      const uint64_t k = part_keys_[first + i];
      std::span<uint8_t> out(values.data() + keys.size() * vs, vs);
      RecordRef ref;
      if (ok[i]) {
        take_record(o, i, where[i], out.data(), refs != nullptr ? &ref : nullptr);
        keys.push_back(k);
        if (refs != nullptr) refs->push_back(ref);
        continue;
      }
      Result<bool> got = record_get(co, o, k, out, refs != nullptr ? &ref : nullptr);
      if (!got.is_ok()) return got.status();
      if (*got) {
        keys.push_back(k);
        if (refs != nullptr) refs->push_back(ref);
      }
    }
    values.resize(keys.size() * vs);
  }
  return Status::ok();
}

void TableClient::read_records(r2::Co& co, const Ordered& o, const uint64_t* keys,
                               const RecordAddr* where, const uint8_t* want, size_t count,
                               bool* ok) {
  const size_t slot = record_slot_size(o.table->value_size);
  uint32_t op[kScanRecordBatch];
  const uint8_t* here[kScanRecordBatch];
  bool quiet[kScanRecordBatch];
  size_t own = 0;
  record_batch_.clear();
  for (size_t i = 0; i < count; ++i) {
    op[i] = UINT32_MAX;
    here[i] = nullptr;
    if (want != nullptr && !want[i]) continue;
    // This node's own record: its lines prefetched now and copied below,
    // not READ through the fabric.
    here[i] = own_record(co, o, where[i].offset);
    if (here[i] != nullptr) {
      prefetch_lines(here[i], slot);
      ++own;
      continue;
    }
    op[i] = static_cast<uint32_t>(record_batch_.size());
    record_batch_.read({o.remote.node, table_region(o.table->id), where[i].offset},
                       record_buf_ + i * slot, static_cast<uint32_t>(slot));
  }
  stats_.reads += record_batch_.size();
  if (!record_batch_.empty()) (void)co.run(record_batch_);  // a failed READ: ok false
  for (size_t i = 0; i < count; ++i) {
    quiet[i] = here[i] != nullptr && copy_own(record_buf_ + i * slot, here[i], slot);
  }
  // Done without suspending: a batch of local work for the yield streak.
  if (own != 0 && record_batch_.empty()) co.charge(1);
  for (size_t i = 0; i < count; ++i) {
    const bool copied = here[i] != nullptr ||
                        (op[i] != UINT32_MAX && record_batch_.status(op[i]) == r2::OpStatus::kOk);
    const uint8_t* copy = record_buf_ + i * slot;
    ok[i] = copied && (quiet[i] ? verify_quiet(copy, keys[i], where[i].incarnation)
                                : verify(copy, o.table->value_size, keys[i],
                                         where[i].incarnation)) == RecordCheck::kOk;
  }
}

const uint8_t* TableClient::own_record(const r2::Co& co, const Ordered& o, uint64_t offset) const {
  // Not this node's partition, no direct local ops, or no longer a member.
  if (o.local == nullptr || !co.direct(o.remote.node)) return nullptr;
  return caches_.local_store()->slot_at(table_region(o.table->id), offset, o.table->value_size).rec;
}

bool TableClient::copy_own(uint8_t* to, const uint8_t* record, size_t bytes) {
  // What other threads and processes published before is visible to the
  // loads; a copy racing a writer fails verify(), as a torn READ does, or
  // the quiet copy's own check where this node's memory allows it.
  std::atomic_thread_fence(std::memory_order_acquire);
  ++stats_.records_direct;
  if (caches_.local_store()->quiet_copies()) return copy_quiet(to, record, bytes);
  load_words(to, record, bytes);
  return false;
}

void TableClient::take_record(const Ordered& o, size_t i, const RecordAddr& where,
                              uint8_t* value_out, RecordRef* ref) const {
  const uint8_t* copy = record_buf_ + i * record_slot_size(o.table->value_size);
  std::memcpy(value_out, copy + sizeof(RecordHeader), o.table->value_size);
  if (ref == nullptr) return;
  RecordHeader h;
  std::memcpy(&h, copy, sizeof h);
  *ref = RecordRef{
      {o.remote.node, table_region(o.table->id), where.offset}, where.incarnation, h.version};
}

template <typename Take>
Status TableClient::walk_partitions(r2::Co& co, const TableSpec& t, uint64_t start, size_t n,
                                    std::vector<uint64_t>& keys, Take take, PartitionId only) {
  if (t.kind != TableKind::kOrdered) {
    return invalid_argument("table '" + t.name + "' is a hash table; scans need an ordered table");
  }
  ++stats_.scans;
  const uint32_t parts = catalog_.partitions(t);
  if (only != kNoPartition && only >= parts) {
    return invalid_argument("table '" + t.name + "' has no partition " + std::to_string(only));
  }
  PartitionId p = only != kNoPartition ? only : catalog_.partition_of(t, start);
  while (keys.size() < n) {
    Result<Ordered*> o = ordered(co, t, p);
    if (!o.is_ok()) return o.status();
    bool end = false;
    DRTMX_RETURN_IF_ERROR(scan_partition(co, **o, start, n - keys.size(), &end));
    DRTMX_RETURN_IF_ERROR(take(**o));
    if (keys.size() >= n) break;
    if (!end) {
      // Rows deleted between the index read and the record read were
      // skipped: go on in this partition after the last entry seen.
      if (part_keys_.empty() || part_keys_.back() == ~uint64_t{0}) break;
      start = part_keys_.back() + 1;
      continue;
    }
    if (only != kNoPartition || t.scheme != PartitionScheme::kRange || p + 1 >= parts) break;
    ++p;
    start = catalog_.range_start(t, p);
  }
  return Status::ok();
}

Status TableClient::scan(r2::Co& co, const TableSpec& t, uint64_t start, size_t n,
                         std::vector<uint64_t>& keys, std::vector<uint8_t>& values,
                         std::vector<RecordRef>* refs) {
  keys.clear();
  values.clear();
  if (refs != nullptr) refs->clear();
  return walk_partitions(co, t, start, n, keys, [&](Ordered& o) {
    if (!t.inline_values) return scan_records(co, o, keys, values, refs);
    keys.insert(keys.end(), part_keys_.begin(), part_keys_.end());
    values.insert(values.end(), part_values_.begin(), part_values_.end());
    return Status::ok();
  });
}

Status TableClient::scan_keys(r2::Co& co, const TableSpec& t, uint64_t start, size_t n,
                              std::vector<uint64_t>& keys) {
  keys.clear();
  return walk_partitions(co, t, start, n, keys, [&](Ordered&) {
    keys.insert(keys.end(), part_keys_.begin(), part_keys_.end());
    return Status::ok();
  });
}

Status TableClient::scan_in(r2::Co& co, const TableSpec& t, PartitionId p, uint64_t start, size_t n,
                            std::vector<uint64_t>& keys, std::vector<uint8_t>& values,
                            std::vector<RecordRef>* refs) {
  keys.clear();
  values.clear();
  if (refs != nullptr) refs->clear();
  return walk_partitions(
      co, t, start, n, keys,
      [&](Ordered& o) {
        if (!t.inline_values) return scan_records(co, o, keys, values, refs);
        keys.insert(keys.end(), part_keys_.begin(), part_keys_.end());
        values.insert(values.end(), part_values_.begin(), part_values_.end());
        return Status::ok();
      },
      p);
}

Status TableClient::scan_keys_in(r2::Co& co, const TableSpec& t, PartitionId p, uint64_t start,
                                 size_t n, std::vector<uint64_t>& keys) {
  keys.clear();
  return walk_partitions(
      co, t, start, n, keys,
      [&](Ordered&) {
        keys.insert(keys.end(), part_keys_.begin(), part_keys_.end());
        return Status::ok();
      },
      p);
}

Status TableClient::insert(r2::Co& co, const TableSpec& t, uint64_t key,
                           std::span<const uint8_t> value) {
  Status st = write(co, t, key, value, WriteOp::kInsert);
  return st.is_ok() ? st : st.with_context(where(t, key, "insert"));
}

Status TableClient::update(r2::Co& co, const TableSpec& t, uint64_t key,
                           std::span<const uint8_t> value) {
  Status st = write(co, t, key, value, WriteOp::kUpdate);
  return st.is_ok() ? st : st.with_context(where(t, key, "update"));
}

Status TableClient::remove(r2::Co& co, const TableSpec& t, uint64_t key) {
  Status st = write(co, t, key, {}, WriteOp::kRemove);
  return st.is_ok() ? st : st.with_context(where(t, key, "remove"));
}

std::string TableClient::where(const TableSpec& t, uint64_t key, const char* op) const {
  return std::string(op) + " of key " + std::to_string(key) + " in table '" + t.name +
         "' partition " + std::to_string(catalog_.partition_of(t, key));
}

Status TableClient::write(r2::Co& co, const TableSpec& t, uint64_t key,
                          std::span<const uint8_t> value, WriteOp op) {
  ++stats_.writes;
  if (value.size() > t.value_size) {
    return out_of_range("value of " + std::to_string(value.size()) +
                        " bytes exceeds the table's value size " + std::to_string(t.value_size));
  }
  const PartitionId p = catalog_.partition_of(t, key);
  if (t.kind == TableKind::kHash) {
    Result<const hash::HashRemote*> rr = hash_route(co, t, p);
    if (!rr.is_ok()) return rr.status();
    switch (op) {
      case WriteOp::kInsert:
        return hash_.insert(co, **rr, key, value).status();
      case WriteOp::kUpdate:
        return hash_.update(co, **rr, key, value).status();
      case WriteOp::kRemove:
        return hash_.remove(co, **rr, key);
    }
  }
  Result<Ordered*> o = ordered(co, t, p);
  if (!o.is_ok()) return o.status();
  const OrderedRemote& remote = (*o)->remote;
  if (!t.inline_values) {
    static constexpr uint16_t kRpcOf[] = {kRpcRecordInsert, kRpcRecordUpdate, kRpcRecordRemove};
    return rpc_.record_write(co, kRpcOf[static_cast<int>(op)], remote, key, value).status();
  }
  if (op == WriteOp::kInsert) return rpc_.insert(co, remote, key, value, /*upsert=*/false);
  if (op == WriteOp::kRemove) return rpc_.remove(co, remote, key);
  // The XStore UPDATE carries a whole value (with a position hint when warm).
  std::vector<uint8_t> padded(t.value_size, 0);
  if (!value.empty()) std::memcpy(padded.data(), value.data(), value.size());
  Result<bool> r = (*o)->client->update(co, key, padded.data());
  if (!r.is_ok()) return r.status();
  if (!*r) return not_found("key " + std::to_string(key) + " not found");
  return Status::ok();
}

Status TableClient::maintain(r2::Co& co, size_t* refreshed) {
  if (refreshed != nullptr) *refreshed = 0;
  for (auto& [k, o] : ordered_) {
    if (!o.learned->cache.trained() || o.learned->warming) continue;
    size_t n = 0;
    DRTMX_RETURN_IF_ERROR(o.client->apply_splits(co, &n));
    bool expanded = false;
    DRTMX_RETURN_IF_ERROR(o.client->expand_if_needed(co, &expanded));
    if (refreshed != nullptr) *refreshed += n;
  }
  return Status::ok();
}

TableClientStats TableClient::stats() const {
  return stats_;
}

void TableClient::reset_stats() {
  stats_ = {};
  hash_.reset_stats();
  for (auto& [k, o] : ordered_) o.client->reset_stats();
}

xstore::XClientStats TableClient::xstats() const {
  xstore::XClientStats s;
  for (const auto& [k, o] : ordered_) s.add(o.client->stats());
  return s;
}

}  // namespace drtmx::store::tables
