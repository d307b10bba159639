#include "txn/snapshot_serve.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "store/record.h"

namespace drtmx::txn {

bool SnapshotServer::read_key(const store::TableSpec& t, uint64_t key, uint64_t ts,
                              dst::SnapshotMode mode, SnapshotHit* hit, uint8_t* value,
                              bool* locked, std::string* err,
                              const store::tables::RecordAddr* hint) {
  image_.resize(store::record_slot_size(t.value_size) / 8);
  auto* image = reinterpret_cast<uint8_t*>(image_.data());
  if (!read_key_image(t, key, ts, mode, hit, image, locked, err, hint)) return false;
  if (hit->found) std::memcpy(value, image + store::kValueOffset, (t.value_size + 7) & ~7u);
  return true;
}

bool SnapshotServer::read_key_image(const store::TableSpec& t, uint64_t key, uint64_t ts,
                                    dst::SnapshotMode mode, SnapshotHit* hit, uint8_t* image,
                                    bool* locked, std::string* err,
                                    const store::tables::RecordAddr* hint) {
  *hit = SnapshotHit{};
  uint8_t* value = image + store::kValueOffset;
  for (int tries = 0; tries < 8; ++tries) {
    uint32_t inc = 0;
    dst::MvccNode::Record hinted;
    const bool use_hint =
        tries == 0 && hint != nullptr &&
        m_.resolve(store::tables::table_region(t.id), hint->offset, t.value_size, &hinted);
    if (use_hint) inc = hint->incarnation;
    Result<dst::MvccNode::Record> r =
        use_hint ? Result<dst::MvccNode::Record>(hinted) : m_.locate(t, key, &inc);
    if (!r.is_ok()) {
      if (r.status().code() == Code::kUnavailable) {  // torn for every retry: a writer
        *locked = true;
        return true;
      }
      if (r.status().code() != Code::kNotFound) {
        *err = r.status().message();
        return false;
      }
      // Absent from the index: deleted (the graveyard knows until when)
      // or never there. Claim the partition's key set first (an insert
      // after this commits above ts).
      const store::PartitionId part = m_.catalog().partition_of(t, key);
      if (mode == dst::SnapshotMode::kDst) {
        if (auto* rt = m_.range_ts(t.id, part)) {
          store::atomic_max_ts(reinterpret_cast<uint64_t*>(rt), ts);
        }
      }
      dst::VersionInfo info;
      dst::VersionStore* vs = m_.store_of(t.id, part);
      const dst::Found f = vs ? vs->find_buried(key, ts, value, &info) : dst::Found::kNone;
      if (f == dst::Found::kReclaimed) {
        *err = "snapshot read of " + t.name + " key " + std::to_string(key) +
               " below the low-water mark";
        return false;
      }
      if (f == dst::Found::kVersion && !info.deleted) {
        hit->found = true, hit->wts = info.wts, hit->version = info.version;
      }
      return true;
    }
    dst::VersionInfo info;
    const dst::ReadAt a = dst::read_at(r->at(), key, inc, t.value_size, ts, mode, r->vs, r->slot,
                                       image, &info, s_.quiet_copies());
    if (a == dst::ReadAt::kLocked) {
      *locked = true;
      return true;
    }
    if (a == dst::ReadAt::kMoved) continue;  // deleted or reused meanwhile: look again
    if (a == dst::ReadAt::kReclaimed) {
      *err = "snapshot read of " + t.name + " key " + std::to_string(key) +
             " met a reclaimed version (read below the low-water mark)";
      return false;
    }
    if (a == dst::ReadAt::kValue) {
      hit->found = true, hit->wts = info.wts, hit->version = info.version;
      if (t.kind == store::TableKind::kHash) hit->offset = r->offset, hit->incarnation = inc;
    } else {
      // This incarnation began after ts: an older, deleted one may have
      // lived then.
      dst::VersionStore* vs = r->vs;
      if (vs && vs->find_buried(key, ts, value, &info) == dst::Found::kVersion && !info.deleted) {
        hit->found = true, hit->wts = info.wts, hit->version = info.version;
      }
    }
    return true;
  }
  return true;  // moved eight times in a row: not found at ts
}

bool SnapshotServer::scan(uint16_t table, store::PartitionId part, uint64_t from, uint64_t to,
                          uint32_t limit, uint64_t ts, dst::SnapshotMode mode, SnapshotSink* sink,
                          bool* exhausted, uint64_t* blocked, std::string* err) {
  const store::TableSpec* t = m_.catalog().find(table);
  if (t == nullptr || t->kind != store::TableKind::kOrdered || t->inline_values) {
    *err = "snapshot scan: table " + std::to_string(table) + " is not ordered with records";
    return false;
  }
  if (part >= m_.catalog().partitions(*t)) {
    *err = "snapshot scan: " + t->name + " has no partition " + std::to_string(part);
    return false;
  }
  store::tables::LocalPartition* lp = s_.partition(t->id, part);
  if (lp == nullptr || !lp->tree) {
    *err = "snapshot scan: node has no copy of " + t->name + " partition " + std::to_string(part);
    return false;
  }
  // Claim the partition's key set, then scan (dst/mvcc_node.h).
  if (mode == dst::SnapshotMode::kDst && m_.range_ts(t->id, part) != nullptr) {
    store::atomic_max_ts(reinterpret_cast<uint64_t*>(m_.range_ts(t->id, part)), ts);
  }
  image_.resize(store::record_slot_size(t->value_size) / 8);
  auto* image = reinterpret_cast<uint8_t*>(image_.data());
  // Keys in the index, merged with deleted keys that lived at ts.
  std::map<uint64_t, bool> buried;
  if (dst::VersionStore* vs = m_.store_of(t->id, part)) {
    vs->buried_in(from, to, ts,
                  [&](uint64_t k, const uint8_t*, const dst::VersionInfo&) { buried[k] = true; });
  }
  uint64_t rows = 0;
  *exhausted = true;
  uint64_t next = from;
  // The index's keys come in chunks of the limit (and at least 64: a few
  // deleted keys may be merged in), bounded by `to`: one descent of the
  // tree for a range that fits.
  const uint64_t chunk = std::clamp<uint64_t>(uint64_t{limit} + 1, 64, 4096);
  for (;;) {
    keys_.clear();
    vals_.clear();
    const bool end = lp->tree->scan(next, chunk, keys_, vals_, to);
    // Deleted keys that fall before the index's next key join in order
    // (into all_; without any, the index's keys are walked as they came).
    bool merged = false;
    if (!buried.empty()) {
      for (uint64_t k : keys_) buried.erase(k);  // live again: the index has it
      const uint64_t hi = keys_.empty() || end ? to : std::min<uint64_t>(keys_.back(), to);
      for (auto it = buried.begin(); it != buried.end() && it->first <= hi;) {
        if (!merged) all_.assign(keys_.begin(), keys_.end());
        merged = true;
        all_.push_back(it->first);
        it = buried.erase(it);
      }
      if (merged) std::sort(all_.begin(), all_.end());  // the tree's keys come ascending
    }
    bool past = false;
    size_t in_leaf = 0;  // keys_[in_leaf]: the next key the tree gave (with its address)
    for (uint64_t k : merged ? all_ : keys_) {
      if (k > to) {
        past = true;
        break;
      }
      if (rows == limit) {
        *exhausted = false;
        past = true;
        break;
      }
      // The scan's leaf image names the record: no second index lookup
      // (read_key checks the record is still that key's).
      store::tables::RecordAddr at;
      const store::tables::RecordAddr* hint = nullptr;
      while (in_leaf < keys_.size() && keys_[in_leaf] < k) ++in_leaf;
      if (in_leaf < keys_.size() && keys_[in_leaf] == k &&
          vals_.size() == keys_.size() * sizeof at) {
        std::memcpy(&at, vals_.data() + in_leaf * sizeof at, sizeof at);
        hint = &at;
      }
      SnapshotHit hit;
      bool locked = false;
      if (!read_key_image(*t, k, ts, mode, &hit, image, &locked, err, hint)) return false;
      if (locked) {
        ++*blocked;
        continue;
      }
      if (!hit.found) continue;
      sink->row(k, hit, image + store::kValueOffset);
      ++rows;
    }
    if (past || end || keys_.empty()) break;
    if (keys_.back() >= to || keys_.back() == ~uint64_t{0}) break;
    next = keys_.back() + 1;
  }
  return true;
}

}  // namespace drtmx::txn
