#include "dst/mvcc_node.h"

#include <algorithm>
#include <cmath>

#include "store/tables/plan.h"

namespace drtmx::dst {

namespace {

bool has_records(const store::TableSpec& t) {
  return t.kind == store::TableKind::kHash || !t.inline_values;
}

}  // namespace

uint64_t MvccNode::versions_for(const store::TableSpec& t, const MvccConfig& cfg) {
  const double share = std::ceil(static_cast<double>(t.capacity) * cfg.versions_pct / 100.0);
  return std::max<uint64_t>(cfg.min_versions, static_cast<uint64_t>(share));
}

VersionStoreOptions MvccNode::store_options(const store::Catalog& c, const store::TableSpec& t,
                                            uint64_t record_slots, const MvccConfig& cfg) {
  VersionStoreOptions o;
  o.value_size = t.value_size;
  o.record_slots = record_slots;
  o.capacity = versions_for(t, cfg);
  if (cfg.lanes) {
    o.lanes = static_cast<uint32_t>(c.nodes()) * cfg.workers;
    o.lane_capacity = std::max<uint64_t>(cfg.min_versions, o.capacity / o.lanes);
  }
  return o;
}

namespace {

// Every copy `node` hosts, in the order its version region holds them.
Result<std::vector<std::vector<CopyLayout>>> layouts_of(const store::Catalog& c,
                                                        store::NodeId16 node, const MvccConfig& cfg,
                                                        uint32_t* next_id) {
  std::vector<std::vector<CopyLayout>> out;
  uint64_t used = 0;
  for (const store::TableSpec& t : c.tables()) {
    if (t.id >= out.size()) out.resize(t.id + 1u);
    if (!has_records(t)) continue;
    for (store::PartitionId p : c.hosted(node, t)) {
      auto plan = store::tables::locate(c, t, p, node);
      if (!plan.is_ok()) return plan.status();
      CopyLayout l;
      l.id = (*next_id)++;
      l.node = node;
      l.table = t.id;
      l.partition = p;
      l.area_offset = plan->offset;
      l.area_end = plan->offset + plan->area_bytes;
      l.heap_offset = plan->heap.range_offset;
      l.slot_bytes = store::record_slot_size(t.value_size);
      l.slots = plan->heap.range_bytes / l.slot_bytes;
      l.slot_div = Divider(l.slot_bytes);
      l.vs = MvccNode::store_options(c, t, l.slots, cfg);
      l.vs.name = t.name + "/p" + std::to_string(p);
      l.vs_offset = used;
      used += (VersionStore::area_bytes(l.vs) + 63) & ~uint64_t{63};
      out[t.id].push_back(std::move(l));
    }
  }
  return out;
}

}  // namespace

uint64_t MvccNode::region_bytes(const store::Catalog& c, store::NodeId16 node,
                                const MvccConfig& cfg) {
  uint32_t ids = 0;
  auto l = layouts_of(c, node, cfg, &ids);
  if (!l.is_ok()) return 0;
  uint64_t bytes = 0;
  for (const auto& v : *l) {
    for (const CopyLayout& x : v) {
      bytes =
          std::max(bytes, x.vs_offset + ((VersionStore::area_bytes(x.vs) + 63) & ~uint64_t{63}));
    }
  }
  return bytes;
}

const CopyLayout* MvccNode::copy_at(store::NodeId16 node, store::TableId t, uint64_t offset) const {
  if (node >= layouts_.size() || t >= layouts_[node].size()) return nullptr;
  for (const CopyLayout& l : layouts_[node][t]) {
    if (offset >= l.area_offset && offset < l.area_end) return &l;
  }
  return nullptr;
}

r2::RemoteAddr CopyLayout::version_addr(uint64_t offset) const {
  return {node, MvccNode::kVersionRegion, vs_offset + offset};
}

const CopyLayout* MvccNode::copy_of(store::NodeId16 node, store::TableId t,
                                    store::PartitionId p) const {
  if (node >= layouts_.size() || t >= layouts_[node].size()) return nullptr;
  for (const CopyLayout& l : layouts_[node][t]) {
    if (l.partition == p) return &l;
  }
  return nullptr;
}

Result<std::unique_ptr<MvccNode>> MvccNode::create(const store::Catalog& c,
                                                   store::tables::StoreNode& store,
                                                   r2::Fabric& fabric, const MvccConfig& cfg) {
  if (cfg.workers == 0 || cfg.coroutines == 0) {
    return invalid_argument("mvcc node: workers and coroutines must be > 0");
  }
  if (!(cfg.versions_pct > 0) || cfg.versions_pct > 1000) {
    return invalid_argument("mvcc: --versions-pct=" + std::to_string(cfg.versions_pct) +
                            ": must be in (0, 1000]");
  }
  if (cfg.min_versions == 0) {
    return invalid_argument("mvcc: --min-versions=0: a version store needs room for a version");
  }
  std::unique_ptr<MvccNode> n(new MvccNode(c, store, cfg));
  const int64_t skew =
      cfg.clock_skew_us >= 0
          ? static_cast<int64_t>(us_to_ts(static_cast<double>(cfg.clock_skew_us)))
          : -static_cast<int64_t>(us_to_ts(static_cast<double>(-cfg.clock_skew_us)));
  for (LocalClock& k : n->clocks_) k.set_skew(skew);
  const store::NodeId16 self = store.node();
  const uint64_t need = region_bytes(c, self, cfg);
  const r2::Region* vr = need == 0 ? nullptr : fabric.region(kVersionRegion);
  if (need != 0 && (vr == nullptr || vr->size < need)) {
    return invalid_argument("mvcc node " + std::to_string(self) + ": version region " +
                            std::to_string(kVersionRegion) + " missing or below " +
                            std::to_string(need) + " bytes (register region_bytes())");
  }
  uint32_t ids = 0;
  for (store::NodeId16 node = 0; node < c.nodes(); ++node) {
    auto l = layouts_of(c, node, cfg, &ids);
    if (!l.is_ok()) return l.status();
    n->layouts_.push_back(std::move(*l));
  }
  n->cursors_.assign(cfg.workers, std::vector<LaneCursor>(ids));
  for (const store::TableSpec& t : c.tables()) {
    if (t.id >= n->copies_.size()) {
      n->copies_.resize(t.id + 1u);
      n->table_base_.resize(t.id + 1u, nullptr);
    }
    if (!has_records(t)) continue;
    const r2::Region* tr = fabric.region(store::tables::table_region(t.id));
    if (tr == nullptr) continue;  // hosts no copy
    n->table_base_[t.id] = tr->base;
    for (const CopyLayout& l : n->layouts_[self][t.id]) {
      Copy cp;
      cp.table = &t;
      cp.layout = &l;
      // Lock and ts words: in the slots, or apart (durable nodes, H8).
      if (const store::tables::LocalPartition* lp = store.partition(t.id, l.partition)) {
        cp.words = lp->words;
      }
      if (l.vs.lanes > 0) {
        // The ring and the lanes now; the chain heads and holders as the
        // copy's heap grows (set_heap_growth below); the range word.
        DRTMX_RETURN_IF_ERROR(
            fabric.commit(kVersionRegion, l.vs_offset, VersionStore::chain_head_offset(l.vs, 0)));
        DRTMX_RETURN_IF_ERROR(
            fabric.commit(kVersionRegion, l.vs_offset + VersionStore::range_word_offset(l.vs), 64));
      } else {
        DRTMX_RETURN_IF_ERROR(
            fabric.commit(kVersionRegion, l.vs_offset, VersionStore::area_bytes(l.vs)));
      }
      auto vs =
          VersionStore::create({vr->base + l.vs_offset, VersionStore::area_bytes(l.vs)}, l.vs);
      if (!vs.is_ok()) return vs.status();
      cp.vs = std::move(vs.value());
      cp.range_ts = cp.vs->range_word();
      if (cp.range_ts == nullptr) {
        cp.owned_range = std::make_unique<std::atomic<Timestamp>>(0);
        cp.range_ts = cp.owned_range.get();
      }
      n->copies_[t.id].push_back(std::move(cp));
    }
  }
  // Chain heads and holders of the slots a heap backs (lanes: in the
  // region, where remote coordinators READ and CAS them).
  MvccNode* self_node = n.get();
  r2::Fabric* fab = &fabric;
  DRTMX_RETURN_IF_ERROR(store.set_heap_growth([self_node, fab](store::TableId t,
                                                               store::PartitionId p, uint64_t from,
                                                               uint64_t to) -> Status {
    const Copy* c = self_node->find(t, p);
    if (c == nullptr || c->layout->vs.lanes == 0) return Status::ok();
    const VersionStoreOptions& o = c->layout->vs;
    const uint64_t at = c->layout->vs_offset;
    DRTMX_RETURN_IF_ERROR(fab->commit(kVersionRegion, at + VersionStore::chain_head_offset(o, from),
                                      (to - from) * 8));
    return fab->commit(kVersionRegion, at + VersionStore::holder_offset(o, from), (to - from) * 16);
  }));
  return n;
}

MvccNode::~MvccNode() {
  (void)store_.set_heap_growth(nullptr);
}

const MvccNode::Copy* MvccNode::find(store::TableId t, store::PartitionId p) const {
  if (t >= copies_.size()) return nullptr;
  for (const Copy& c : copies_[t]) {
    if (c.layout->partition == p) return &c;
  }
  return nullptr;
}

bool MvccNode::resolve(r2::RegionId region, uint64_t offset, uint32_t value_size,
                       Record* out) const {
  if (region < store::tables::kTableRegionBase) return false;
  const size_t t = region - store::tables::kTableRegionBase;
  if (t >= copies_.size()) return false;
  for (const Copy& c : copies_[t]) {
    if (offset < c.layout->area_offset || offset >= c.layout->area_end) continue;
    uint64_t slot = 0;
    if (value_size != c.table->value_size || !c.layout->slot_at(offset, &slot)) return false;
    uint8_t* rec = table_base_[t] + offset;
    const store::SlotRef at = c.words.at(rec, offset);
    *out = {rec, at.lock, at.ts, c.vs.get(), slot, offset, c.table->id, c.layout->partition};
    return true;
  }
  return false;
}

Result<MvccNode::Record> MvccNode::locate(const store::TableSpec& t, uint64_t key,
                                          uint32_t* incarnation) const {
  const store::PartitionId p = catalog_.partition_of(t, key);
  const Copy* c = find(t.id, p);
  store::tables::LocalPartition* lp = store_.partition(t.id, p);
  if (c == nullptr || lp == nullptr) {
    return not_found("mvcc: node " + std::to_string(store_.node()) + " has no copy of " + t.name +
                     " partition " + std::to_string(p));
  }
  uint64_t offset = 0;
  if (lp->hash) {
    thread_local std::vector<uint8_t> tmp;
    tmp.resize(t.value_size);
    auto loc = lp->hash->get(key, tmp);
    if (!loc.is_ok()) return loc.status();
    offset = loc->offset;
    *incarnation = loc->incarnation;
  } else if (lp->tree) {
    store::tables::RecordAddr a;
    if (lp->tree->get(key, &a) != store::xstore::XStatus::kOk) {
      return not_found("key absent");
    }
    offset = a.offset;
    *incarnation = a.incarnation;
  } else {
    return invalid_argument("mvcc: table " + t.name + " keeps no records");
  }
  Record r;
  if (!resolve(store::tables::table_region(t.id), offset, t.value_size, &r)) {
    return internal_error("mvcc: index of " + t.name + " names offset " + std::to_string(offset) +
                          " outside its record heap");
  }
  return r;
}

VersionStore* MvccNode::store_of(store::TableId t, store::PartitionId p) const {
  const Copy* c = find(t, p);
  return c ? c->vs.get() : nullptr;
}

std::atomic<Timestamp>* MvccNode::range_ts(store::TableId t, store::PartitionId p) const {
  const Copy* c = find(t, p);
  return c ? c->range_ts : nullptr;
}

Timestamp MvccNode::publish(Timestamp now) {
  const Timestamp f = floor_.compute(now);
  own_floor_.store(f, std::memory_order_release);
  return f;
}

void MvccNode::set_peer_floor(store::NodeId16 node, Timestamp floor) {
  if (node >= peers_.size()) return;
  atomic_raise(peers_[node], floor);
}

Timestamp MvccNode::lwm() const {
  Timestamp m = own_floor_.load(std::memory_order_acquire);
  const uint64_t departed = departed_.load(std::memory_order_acquire);
  for (size_t n = 0; n < peers_.size(); ++n) {
    if (n == store_.node() || (n < 64 && ((departed >> n) & 1) != 0)) continue;
    const Timestamp f = peers_[n].load(std::memory_order_acquire);
    if (f < m) m = f;  // 0 (not heard from): nothing is collected
  }
  return m;
}

uint64_t MvccNode::gc() {
  const Timestamp l = lwm();
  if (l == 0) return 0;
  uint64_t freed = 0;
  for (auto& v : copies_) {
    for (Copy& c : v) freed += c.vs->gc(l);
  }
  return freed;
}

VersionStoreStats MvccNode::totals() const {
  VersionStoreStats s;
  for (const auto& v : copies_) {
    for (const Copy& c : v) {
      const VersionStoreStats x = c.vs->stats();
      s.capacity += x.capacity;
      s.in_use += x.in_use;
      s.reserved += x.reserved;
      s.peak += x.peak;
      s.pushed += x.pushed;
      s.reclaimed += x.reclaimed;
      s.gc_runs += x.gc_runs;
      s.full += x.full;
      s.buried += x.buried;
      s.bytes += x.bytes;
    }
  }
  return s;
}

}  // namespace drtmx::dst
