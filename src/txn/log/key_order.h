#pragma once

// Durable logs: the order in which a node releases log entries that change
// the same key. Recovery replays the committed entries it finds, so a copy
// must never release the entry of a key's delete while an entry holding an
// earlier insert or update of that key is still in one of its rings: the
// older record would be replayed where the key is absent and bring a
// deleted key back. Entries of different coordinators sit in different
// rings, released by different appliers (worker threads), hence one table
// per node shared by its appliers.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace drtmx::txn {

class UnreleasedChanges {
 public:
  // Only tables that can have deletes need the order (store::TableSpec::
  // deletes): the changes of other tables are not recorded (tracks() is
  // false). Default: every table. Set before any applier runs.
  void track_only(std::vector<bool> tables) { tracked_ = std::move(tables); }
  bool tracks(uint16_t table) const {
    return tracked_.empty() || (table < tracked_.size() && tracked_[table]);
  }
  // An insert or update of (table, key) at `version` sits in an entry that
  // was taken from a ring here and is not released yet.
  void add(uint16_t table, uint64_t key, uint64_t version) {
    Shard& s = shard(table, key);
    std::lock_guard<std::mutex> g(s.mu);
    s.versions[id(table, key)].push_back(version);
  }
  // Its entry was released.
  void remove(uint16_t table, uint64_t key, uint64_t version) {
    Shard& s = shard(table, key);
    std::lock_guard<std::mutex> g(s.mu);
    auto it = s.versions.find(id(table, key));
    if (it == s.versions.end()) return;
    auto& v = it->second;
    auto at = std::find(v.begin(), v.end(), version);
    if (at != v.end()) v.erase(at);
    if (v.empty()) s.versions.erase(it);
  }
  // Whether an unreleased change of (table, key) older than `version` is
  // here: then the entry of the key's delete at `version` must stay.
  bool older_than(uint16_t table, uint64_t key, uint64_t version) const {
    const Shard& s = shard(table, key);
    std::lock_guard<std::mutex> g(s.mu);
    auto it = s.versions.find(id(table, key));
    if (it == s.versions.end()) return false;
    return std::any_of(it->second.begin(), it->second.end(),
                       [&](uint64_t v) { return v < version; });
  }
  // Rings whose release waits for another ring's: every applier releases
  // without waiting for a full batch meanwhile (a ring that goes quiet
  // would otherwise keep its entries, and the waiting ring its own).
  void set_waiting(bool before, bool now) {
    if (before != now) waiting_.fetch_add(now ? 1 : -1, std::memory_order_relaxed);
  }
  bool someone_waits() const { return waiting_.load(std::memory_order_relaxed) > 0; }

 private:
  using Id = std::pair<uint16_t, uint64_t>;
  struct IdHash {
    size_t operator()(const Id& i) const {
      return static_cast<size_t>((i.second ^ (uint64_t{i.first} << 52)) * 0x9e3779b97f4a7c15ULL);
    }
  };
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<Id, std::vector<uint64_t>, IdHash> versions;
  };
  static Id id(uint16_t table, uint64_t key) { return {table, key}; }
  Shard& shard(uint16_t table, uint64_t key) { return shards_[IdHash{}({table, key}) >> 58]; }
  const Shard& shard(uint16_t table, uint64_t key) const {
    return shards_[IdHash{}({table, key}) >> 58];
  }
  std::array<Shard, 64> shards_;
  std::vector<bool> tracked_;  // by table id; empty: all
  std::atomic<int32_t> waiting_{0};
};

}  // namespace drtmx::txn
