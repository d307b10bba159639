#include "store/tables/store_node.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "base/resident.h"
#include "store/record_io.h"
#include "store/tables/ordered_rpc.h"
#include "store/word_copy.h"

namespace drtmx::store::tables {
namespace {

std::string where(const TableSpec& t, PartitionId p) {
  return "table '" + t.name + "' partition " + std::to_string(p);
}

Status from_xstatus(xstore::XStatus s, const TableSpec& t, uint64_t key) {
  switch (s) {
    case xstore::XStatus::kOk:
      return Status::ok();
    case xstore::XStatus::kNotFound:
      return not_found("table '" + t.name + "': key " + std::to_string(key) + " not found");
    case xstore::XStatus::kAlreadyExists:
      return already_exists("table '" + t.name + "': key " + std::to_string(key) + " exists");
    case xstore::XStatus::kOutOfLeaves:
      return exhausted("table '" + t.name + "': no index leaf for key " + std::to_string(key) +
                       " (see the table's memory in the report)");
  }
  return internal_error("unknown xstore status");
}

// StoreNode::quiet_copies(): the regions of every copy `node` hosts.
bool quiet_copies_on(const Catalog& catalog, NodeId16 node, r2::Fabric& fabric, bool locks_apart) {
  if (!kCpuStoresInOrder || !fabric.info().writes_are_cpu_stores || locks_apart) return false;
  for (const TableSpec& t : catalog.tables()) {
    for (PartitionId p : catalog.hosted(node, t)) {
      auto plan = locate(catalog, t, p, node);
      if (!plan.is_ok()) return false;
      const r2::Region* region = fabric.region(plan->region);
      if (region == nullptr || region->persistent()) return false;
    }
  }
  return true;
}

// Whether any table region `node` hosts takes the machine's memory:
// volatile, or a pool on a memory file system.
bool tables_in_memory(const Catalog& catalog, NodeId16 node, r2::Fabric& fabric) {
  for (const TableSpec& t : catalog.tables()) {
    if (catalog.hosted(node, t).empty()) continue;
    const r2::Region* region = fabric.region(table_region(t.id));
    if (region == nullptr) continue;
    if (region->persistence == r2::Persistence::kNone ||
        region->persistence == r2::Persistence::kMemFs) {
      return true;
    }
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<StoreNode>> StoreNode::create(const Catalog& catalog, r2::Fabric& fabric,
                                                     bool locks_apart) {
  std::unique_ptr<StoreNode> n(new StoreNode(catalog, fabric.info().node, locks_apart));
  for (const TableSpec& t : catalog.tables()) {
    for (PartitionId p : catalog.hosted(n->node_, t)) {
      DRTMX_RETURN_IF_ERROR(n->build(t, p, fabric));
    }
  }
  n->quiet_copies_ = quiet_copies_on(catalog, n->node_, fabric, locks_apart);
  n->tables_in_memory_ = tables_in_memory(catalog, n->node_, fabric);
  return n;
}

Result<std::unique_ptr<StoreNode>> StoreNode::recover(const Catalog& catalog, r2::Fabric& fabric,
                                                      StoreRecovery* out, bool locks_apart,
                                                      BackedEnd backed_end) {
  *out = StoreRecovery{};
  std::unique_ptr<StoreNode> n(new StoreNode(catalog, fabric.info().node, locks_apart));
  n->backed_end_ = std::move(backed_end);
  for (const TableSpec& t : catalog.tables()) {
    for (PartitionId p : catalog.hosted(n->node_, t)) {
      DRTMX_RETURN_IF_ERROR(n->build(t, p, fabric, out));
    }
  }
  n->quiet_copies_ = quiet_copies_on(catalog, n->node_, fabric, locks_apart);
  n->tables_in_memory_ = tables_in_memory(catalog, n->node_, fabric);
  return n;
}

Result<uint64_t> StoreNode::replay(const TableSpec& t, uint64_t key, Change c, uint64_t version,
                                   std::span<const uint8_t> value) {
  const PartitionId p = catalog_.partition_of(t, key);
  LocalPartition* part = partition(t.id, p);
  if (part == nullptr) {
    return not_found(where(t, p) + " has no copy on node " + std::to_string(node_) +
                     " to replay a log record into");
  }
  if (!part->hash && !part->records) {
    return invalid_argument("table '" + t.name + "' keeps inline values: nothing to replay");
  }
  std::vector<uint8_t> tmp(t.value_size);
  // Where the key is now, and at which version.
  auto locate_key = [&](bool* found, uint64_t* offset, uint64_t* have) -> Status {
    *found = false;
    if (part->hash) {
      Result<hash::RecordLoc> r = part->hash->get(key, tmp);
      if (r.is_ok()) *found = true, *offset = r->offset, *have = r->version;
      return r.is_ok() || r.status().code() == Code::kNotFound ? Status::ok() : r.status();
    }
    RecordAddr a;
    Result<bool> r = part->records->get(key, tmp, &a);
    if (!r.is_ok()) return r.status();
    if (*r) {
      *found = true;
      *offset = a.offset;
      RecordHeader h{};
      std::memcpy(&h, part->records->record(a.offset), sizeof h);
      *have = h.version;
    }
    return Status::ok();
  };
  bool found = false;
  uint64_t offset = 0, have = 0;
  DRTMX_RETURN_IF_ERROR(locate_key(&found, &offset, &have));
  if (found && have >= version) return uint64_t{0};
  if (c == Change::kDelete) {
    if (part->hash) part->hash->raise_deleted_high_to(version);
    if (part->records) part->records->raise_deleted_high_to(version);
    if (!found) return uint64_t{0};
    DRTMX_RETURN_IF_ERROR(part->hash ? part->hash->remove(key) : part->records->remove(key));
    return offset;
  }
  Result<bool> in = part->hash ? part->hash->install(key, version, value)
                               : part->records->install(key, version, value);
  if (!in.is_ok()) return in.status();
  DRTMX_RETURN_IF_ERROR(locate_key(&found, &offset, &have));
  if (!found)
    return internal_error(where(t, p) + ": key " + std::to_string(key) +
                          " is missing right after its replay");
  return offset;
}

Status StoreNode::build(const TableSpec& t, PartitionId p, r2::Fabric& fabric,
                        StoreRecovery* recovering) {
  Result<PartitionPlan> plan = locate(catalog_, t, p, node_);
  if (!plan.is_ok()) return plan.status();
  const r2::Region* region = fabric.region(plan->region);
  if (region == nullptr || region->size < plan->offset + plan->area_bytes) {
    return invalid_argument(
        where(t, p) + ": region " + std::to_string(plan->region) +
        (region == nullptr ? " is not registered" : " is smaller than its plan") +
        "; register the regions of store::tables::growable_regions_of()");
  }
  std::span<uint8_t> mem(region->base, region->size);
  auto part = std::make_unique<LocalPartition>();
  part->table = &t;
  part->partition = p;
  part->plan = *plan;
  const r2::RegionId rid = plan->region;
  r2::Fabric* fab = &fabric;
  // Backing the table region's parts as they fill (plan.h "Growth").
  auto back = [fab, rid, &t, p](uint64_t offset, uint64_t bytes) -> Status {
    Status st = fab->commit(rid, offset, bytes);
    return st.is_ok() ? st : st.with_context(where(t, p) + " grows");
  };
  HeapRecovery found;
  if (recovering != nullptr && plan->heap.range_bytes == 0) {
    return invalid_argument(
        where(t, p) +
        " keeps inline values: a durable copy cannot be "
        "recovered from it (it has no records); use records for durable tables");
  }
  if (plan->heap.range_bytes > 0) {
    const r2::Region* locks = nullptr;
    if (locks_apart_) {
      // The lock region is fresh volatile memory: every lock is free, every
      // tuple timestamp 0 (no transaction and no snapshot survives).
      locks = fabric.region(lock_region(t.id));
      if (locks == nullptr || locks->size < plan->lock_offset + plan->lock_area_bytes) {
        return invalid_argument(
            where(t, p) + ": lock region " + std::to_string(lock_region(t.id)) +
            (locks == nullptr ? " is not registered" : " is smaller than its plan") +
            "; register the regions of store::tables::growable_regions_of(..., lock_regions = "
            "true)");
      }
      part->words =
          SlotWords(reinterpret_cast<uint64_t*>(locks->base + plan->lock_offset),
                    plan->heap.range_offset, record_slot_size(t.value_size), plan->heap_slots());
    }
    HeapOptions ho = plan->heap;
    ho.ahead = &ahead_;
    const uint64_t first = plan->heap.range_offset;
    const uint64_t slot = record_slot_size(t.value_size);
    const uint64_t lock_at = plan->lock_offset;
    const TableId tid = t.id;
    // The heap's extent, the lock entries of its slots, and what else
    // keeps a word per slot (MVCC chain heads: on_heap_growth).
    ho.grow = [this, back, fab, locks, first, slot, lock_at, tid, p](uint64_t offset,
                                                                     uint64_t bytes) -> Status {
      DRTMX_RETURN_IF_ERROR(back(offset, bytes));
      const uint64_t from = (offset - first) / slot;
      const uint64_t to = (offset + bytes - first + slot - 1) / slot;
      if (locks != nullptr) {
        DRTMX_RETURN_IF_ERROR(fab->commit(lock_region(tid), lock_at + from * kLockEntryBytes,
                                          (to - from) * kLockEntryBytes));
      }
      if (heap_growth_) DRTMX_RETURN_IF_ERROR(heap_growth_(tid, p, from, to));
      return Status::ok();
    };
    if (recovering != nullptr && backed_end_) {
      ho.recover_bytes = backed_end_(rid, first, first + plan->heap.range_bytes) - first;
    }
    Result<std::unique_ptr<RecordHeap>> heap =
        recovering ? RecordHeap::recover(mem, ho, &found) : RecordHeap::create(mem, ho);
    if (!heap.is_ok()) return heap.status();
    part->heap = std::move(*heap);
  }
  const uint32_t id = service_id(t.id, p);
  if (t.kind == TableKind::kHash) {
    Result<std::unique_ptr<hash::HashTable>> h =
        hash::HashTable::create(mem, mem, plan->hash, *part->heap, part->words, back);
    if (!h.is_ok()) return h.status();
    part->hash = std::move(*h);
    DRTMX_RETURN_IF_ERROR(hash_service_.add(id, part->hash.get()));
  } else {
    xstore::XTreeOptions o;
    o.area = plan->leaves;
    o.grow = back;
    Result<std::unique_ptr<xstore::XTree>> tree =
        xstore::XTree::create(region->base, region->size, o);
    if (!tree.is_ok()) return tree.status();
    part->tree = std::move(*tree);
    DRTMX_RETURN_IF_ERROR(xstore_service_.add_tree(id, part->tree.get()));
    if (!t.inline_values) {
      part->records =
          std::make_unique<RecordTree>(*part->tree, *part->heap, mem, t.value_size, part->words);
    }
  }
  if (recovering != nullptr) {
    // The indexes are new: link every record kept in the heap.
    for (const LiveSlot& ls : found.live) {
      Status st = part->hash ? part->hash->adopt(ls.key, ls.offset, ls.incarnation, ls.version)
                             : part->records->adopt(ls.key, {ls.offset, ls.incarnation, 0});
      if (!st.is_ok()) return st.with_context(where(t, p) + ": rebuilding the index");
    }
    if (part->hash) part->hash->raise_deleted_high_to(found.max_version);
    if (part->records) part->records->raise_deleted_high_to(found.max_version);
    HeapRecovery& sum = recovering->slots;
    ++recovering->partitions;
    recovering->records += found.live.size();
    sum.max_version = std::max(sum.max_version, found.max_version);
    sum.max_wts = std::max(sum.max_wts, found.max_wts);
    sum.deleted += found.deleted;
    sum.uncommitted += found.uncommitted;
    sum.torn += found.torn;
    sum.duplicates += found.duplicates;
  }
  if (areas_.size() <= t.id) {
    areas_.resize(t.id + size_t{1});
    area_div_.resize(t.id + size_t{1});
    region_base_.resize(t.id + size_t{1}, nullptr);
  }
  if (part->heap) part->slot_div = Divider(part->heap->slot_bytes());
  area_div_[t.id] = Divider(part->plan.area_bytes);  // the same for every copy of t
  areas_[t.id].push_back(part.get());                // build() runs in ascending partition order
  region_base_[t.id] = region->base;
  parts_.emplace(partition_key(t.id, p), std::move(part));
  return Status::ok();
}

SlotRef StoreNode::slot_at(r2::RegionId region, uint64_t offset, uint32_t value_size) const {
  if (!is_table_region(region)) return {};
  const TableId t = region - kTableRegionBase;
  if (t >= areas_.size() || areas_[t].empty()) return {};
  const LocalPartition* part = areas_[t].front();
  if (!part->heap || part->table->value_size != value_size) return {};
  const uint64_t k = area_div_[t].quotient(offset);
  if (k >= areas_[t].size()) return {};
  part = areas_[t][k];
  // A whole slot of the heap's range: a multiple of the slot size from its
  // start, and the slot ends inside it (slot < heap_slots()).
  const uint64_t rel = offset - part->plan.heap.range_offset;
  uint64_t slot = 0;
  if (!part->words.holds(offset) || offset < part->plan.heap.range_offset ||
      !part->slot_div.exact(rel, &slot) ||
      rel + part->slot_div.divisor() > part->heap->committed_bytes()) {
    return {};
  }
  return part->words.at(region_base_[t] + offset, offset);
}

Status StoreNode::register_handlers(r2::Worker& w) {
  DRTMX_RETURN_IF_ERROR(hash_service_.register_handlers(w));
  DRTMX_RETURN_IF_ERROR(register_record_handlers(*this, w));
  return xstore_service_.register_on(w);
}

LocalPartition* StoreNode::partition(TableId table, PartitionId p) {
  auto it = parts_.find(partition_key(table, p));
  return it == parts_.end() ? nullptr : it->second.get();
}

const LocalPartition* StoreNode::partition(TableId table, PartitionId p) const {
  auto it = parts_.find(partition_key(table, p));
  return it == parts_.end() ? nullptr : it->second.get();
}

Status StoreNode::load(const TableSpec& t, uint64_t key, std::span<const uint8_t> value) {
  const PartitionId p = catalog_.partition_of(t, key);
  LocalPartition* part = partition(t.id, p);
  if (part == nullptr) {
    return not_found(where(t, p) + " has no copy on node " + std::to_string(node_) +
                     "; load it on the nodes catalog.hosted() names");
  }
  if (value.size() > t.value_size) {
    return out_of_range("table '" + t.name + "': value of " + std::to_string(value.size()) +
                        " bytes exceeds its value size " + std::to_string(t.value_size));
  }
  if (part->hash) {
    Result<hash::RecordLoc> r = part->hash->insert(key, value);
    if (r.is_ok()) return Status::ok();
    if (r.status().code() != Code::kAlreadyExists) return r.status();
    return part->hash->update(key, value).status();
  }
  if (part->records) return part->records->insert(key, value, /*upsert=*/true).status();
  std::vector<uint8_t> padded(t.value_size, 0);
  if (!value.empty()) std::memcpy(padded.data(), value.data(), value.size());
  return from_xstatus(part->tree->insert(key, padded.data(), /*upsert=*/true), t, key);
}

Result<bool> StoreNode::install(const TableSpec& t, uint64_t key, uint64_t version,
                                std::span<const uint8_t> value, bool remove) {
  const PartitionId p = catalog_.partition_of(t, key);
  LocalPartition* part = partition(t.id, p);
  if (part == nullptr) {
    return not_found(where(t, p) + " has no copy on node " + std::to_string(node_) +
                     " to install a log record into");
  }
  if (remove) {
    Status st = part->hash      ? part->hash->remove(key)
                : part->records ? part->records->remove(key)
                                : invalid_argument("table '" + t.name + "' has inline values");
    if (st.code() == Code::kNotFound) return false;
    if (!st.is_ok()) return st;
    return true;
  }
  if (part->hash) return part->hash->install(key, version, value);
  if (part->records) return part->records->install(key, version, value);
  return invalid_argument("table '" + t.name +
                          "' keeps inline values (no records): transactions cannot write it");
}

void StoreNode::prefetch(const TableSpec& t, uint64_t key) const {
  const LocalPartition* part = partition(t.id, catalog_.partition_of(t, key));
  if (part != nullptr && part->hash) part->hash->prefetch(key);
}

bool StoreNode::prefetch_record(const TableSpec& t, uint64_t key, uint64_t* offset) const {
  const LocalPartition* part = partition(t.id, catalog_.partition_of(t, key));
  return part != nullptr && part->hash && part->hash->prefetch_record(key, offset);
}

namespace {
// The primary copy of key's partition on this node, or null.
LocalPartition* primary_here(StoreNode& sn, const TableSpec& t, uint64_t key) {
  const PartitionId p = sn.catalog().partition_of(t, key);
  const NodeId16 primary = sn.placement() != nullptr
                               ? sn.placement()->primary(t, p, sn.node())
                               : sn.catalog().replicas_of(t, p, sn.node()).primary;
  if (primary != sn.node()) return nullptr;
  return sn.partition(t.id, p);
}
}  // namespace

bool StoreNode::primary_may_grow() const {
  if (!tables_in_memory_) return true;
  const uint64_t now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch() /
                                             std::chrono::nanoseconds(1));
  const uint64_t last = room_checked_ns_.load(std::memory_order_relaxed);
  if (now - last < 20'000'000 && last != 0) return room_ok_.load(std::memory_order_relaxed);
  room_checked_ns_.store(now, std::memory_order_relaxed);
  const bool ok = has_room_for_keeping(0, 3);
  room_ok_.store(ok, std::memory_order_relaxed);
  return ok;
}

Result<RecordAddr> StoreNode::reserve(const TableSpec& t, uint64_t key, uint64_t lock_word,
                                      uint64_t* base) {
  LocalPartition* part = primary_here(*this, t, key);
  if (part == nullptr) {
    return not_found(where(t, catalog_.partition_of(t, key)) + " has no primary on node " +
                     std::to_string(node_));
  }
  if (!primary_may_grow()) {
    return exhausted("table '" + t.name + "': node " + std::to_string(node_) +
                     " takes no new row while less than 3/16 of the machine's memory is "
                     "available (what is left is for its backups to apply what was committed): "
                     "free memory, or run fewer rows per node or a shorter run");
  }
  if (part->hash) {
    Result<hash::RecordLoc> r = part->hash->reserve(key, lock_word);
    if (!r.is_ok()) return r.status();
    *base = r->version;
    return RecordAddr{r->offset, r->incarnation, 0};
  }
  if (part->records) return part->records->reserve(key, lock_word, base);
  return invalid_argument("table '" + t.name + "' has inline values: transactions cannot insert");
}

Status StoreNode::remove_held(const TableSpec& t, uint64_t key, const RecordAddr& a,
                              uint64_t lock_word) {
  LocalPartition* part = primary_here(*this, t, key);
  if (part == nullptr) {
    return not_found(where(t, catalog_.partition_of(t, key)) + " has no primary on node " +
                     std::to_string(node_));
  }
  if (part->hash) return part->hash->remove_held(key, a.offset, a.incarnation, lock_word);
  if (part->records) return part->records->remove_held(key, a, lock_word);
  return invalid_argument("table '" + t.name + "' has inline values: transactions cannot delete");
}

Result<bool> StoreNode::apply_in_order(const TableSpec& t, uint64_t key, Change c, uint64_t version,
                                       std::span<const uint8_t> value, const ApplyMvcc* mvcc,
                                       uint64_t* wrote) {
  const PartitionId p = catalog_.partition_of(t, key);
  LocalPartition* part = partition(t.id, p);
  if (part == nullptr) {
    return not_found(where(t, p) + " has no copy on node " + std::to_string(node_) +
                     " to apply a log record to");
  }
  if (part->hash) {
    return part->hash->apply_in_order(key, static_cast<hash::HashTable::Change>(c), version, value,
                                      mvcc, wrote);
  }
  if (part->records) {
    return part->records->apply_in_order(key, static_cast<RecordTree::Change>(c), version, value,
                                         mvcc, wrote);
  }
  return invalid_argument("table '" + t.name +
                          "' keeps inline values (no records): transactions cannot write it");
}

Result<bool> StoreNode::get_local(const TableSpec& t, uint64_t key, std::span<uint8_t> value,
                                  uint64_t* version) const {
  const PartitionId p = catalog_.partition_of(t, key);
  const LocalPartition* part = partition(t.id, p);
  if (part == nullptr) return not_found(where(t, p) + " has no copy on this node");
  if (value.size() < t.value_size) {
    return invalid_argument("table '" + t.name + "': value buffer smaller than its value size");
  }
  if (part->hash) {
    Result<hash::RecordLoc> r = part->hash->get(key, value);
    if (r.is_ok()) {
      if (version != nullptr) *version = r->version;
      return true;
    }
    if (r.status().code() == Code::kNotFound) return false;
    return r.status();
  }
  if (part->records) {
    RecordAddr a;
    Result<bool> r = part->records->get(key, value, &a);
    if (r.is_ok() && *r && version != nullptr) {
      RecordHeader h{};
      std::memcpy(&h, part->records->record(a.offset), sizeof h);
      *version = h.version;
    }
    return r;
  }
  if (version != nullptr) *version = 0;
  const xstore::XStatus s = part->tree->get(key, value.data());
  if (s == xstore::XStatus::kNotFound) return false;
  DRTMX_RETURN_IF_ERROR(from_xstatus(s, t, key));
  return true;
}

std::vector<StoreNode::HeldSlot> StoreNode::locked_slots(
    const std::function<bool(uint64_t)>& stale) const {
  std::vector<HeldSlot> out;
  for (const auto& [k, part] : parts_) {
    if (!part->heap || part->table == nullptr) continue;
    const TableId t = part->table->id;
    uint8_t* base = t < region_base_.size() ? region_base_[t] : nullptr;
    if (base == nullptr) continue;
    const HeapStats hs = part->heap->stats();
    const uint64_t slot = part->heap->slot_bytes();
    const uint64_t first = part->heap->options().range_offset;
    for (uint64_t i = 0; i < hs.capacity - hs.never_used; ++i) {
      const uint64_t off = first + i * slot;
      uint8_t* rec = base + off;
      const uint64_t lock =
          std::atomic_ref<uint64_t>(*part->words.lock(rec, off)).load(std::memory_order_acquire);
      if (lock == 0 || !stale(lock)) continue;
      RecordHeader h{};
      load_words(&h, rec, sizeof h);
      out.push_back({t, h.key, h.version, off, lock, h.incarnation});
    }
  }
  return out;
}

LocalPartition* StoreNode::heap_slot(TableId table, uint64_t offset) const {
  for (const auto& [k, part] : parts_) {
    if (!part->heap || part->table == nullptr || part->table->id != table) continue;
    const uint64_t first = part->heap->options().range_offset;
    const uint64_t slot = part->heap->slot_bytes();
    const HeapStats hs = part->heap->stats();
    if (offset >= first && offset < first + hs.committed * slot && (offset - first) % slot == 0) {
      return part.get();
    }
  }
  return nullptr;
}

void StoreNode::clear_lock(TableId table, uint64_t offset, uint64_t lock) {
  LocalPartition* part = heap_slot(table, offset);
  if (part == nullptr) return;
  uint8_t* rec = region_base_[table] + offset;
  uint64_t expected = lock;
  std::atomic_ref<uint64_t>(*part->words.lock(rec, offset))
      .compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
}

Status StoreNode::write_held(TableId table, uint64_t offset, uint64_t lock, uint64_t version,
                             std::span<const uint8_t> value) {
  LocalPartition* part = heap_slot(table, offset);
  if (part == nullptr) {
    return not_found("write_held: no hosted slot of table " + std::to_string(table) +
                     " at offset " + std::to_string(offset));
  }
  const uint32_t vs = part->table->value_size;
  if (value.size() != vs) {
    return invalid_argument("write_held: " + std::to_string(value.size()) +
                            " bytes for a value of " + std::to_string(vs));
  }
  uint8_t* rec = region_base_[table] + offset;
  // The record stays locked by `lock` throughout: no transaction reads it
  // as valid or writes it meanwhile; one-sided readers that copy it see
  // the lock, or a torn copy that the seal rejects.
  if (std::atomic_ref<uint64_t>(*part->words.lock(rec, offset)).load(std::memory_order_acquire) !=
      lock) {
    return aborted("write_held: the record at offset " + std::to_string(offset) + " of table " +
                   std::to_string(table) + " is no longer held by that lock");
  }
  RecordImage img(part->heap->slot_bytes());
  img.load(rec);
  RecordHeader* h = img.header();
  h->version = version;
  h->flags = kLive;
  std::memset(img.value(), 0, vs);
  std::memcpy(img.value(), value.data(), vs);
  seal(img.data(), vs);
  img.store_body(rec);
  return Status::ok();
}

Status StoreNode::set_heap_growth(HeapGrowth fn) {
  ahead_.drain();  // no extent is being backed while the function changes
  heap_growth_ = std::move(fn);
  if (!heap_growth_) return Status::ok();
  for (const auto& [k, part] : parts_) {
    if (!part->heap) continue;
    const uint64_t slots = part->heap->committed_bytes() / part->heap->slot_bytes();
    if (slots == 0) continue;
    DRTMX_RETURN_IF_ERROR(heap_growth_(part->table->id, part->partition, 0, slots));
  }
  return Status::ok();
}

std::vector<TableMemory> StoreNode::memory() const {
  std::vector<TableMemory> out;
  for (const TableSpec& t : catalog_.tables()) {
    if (t.id >= areas_.size() || areas_[t.id].empty()) continue;
    TableMemory m;
    m.table = t.id;
    for (const LocalPartition* part : areas_[t.id]) {
      ++m.copies;
      m.reserved += part->plan.area_bytes;
      if (part->heap) {
        const HeapStats hs = part->heap->stats();
        m.rows += hs.in_use;
        m.row_bytes += hs.in_use * part->heap->slot_bytes();
        m.backed += part->heap->committed_bytes();
        if (locks_apart_) m.backed += hs.committed * kLockEntryBytes;
      }
      if (part->hash) {
        m.index_bytes += part->hash->backed_bytes();
        m.backed += part->hash->backed_bytes();
      } else if (part->tree) {
        const uint64_t leaves = part->tree->stats().leaves_used * part->plan.leaves.leaf_size();
        m.index_bytes += leaves;
        m.backed += part->tree->backed_bytes();
      }
    }
    out.push_back(m);
  }
  return out;
}

}  // namespace drtmx::store::tables
