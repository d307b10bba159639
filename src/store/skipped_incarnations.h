// SkippedIncarnations: what a backup copy of a table remembers about the
// incarnations of keys it skipped while applying redo records in version
// order (HashTable / RecordTree ::apply_in_order).
//
// Why skipping is needed. A key may be inserted, deleted and inserted again
// by transactions of different coordinators, whose redo entries reach a
// backup in different rings, in any order. Versions only grow per key (a
// re-insert starts above the table's deleted_high, which the earlier
// incarnation's delete raised), so when the insert of incarnation 1 (version
// u) meets incarnation 2 already applied (version w > u), incarnation 1 was
// wholly replaced on the primary: its insert, updates and delete all carry
// versions in (u, w) or u itself. Waiting for "the earlier record's delete"
// then waited for incarnation 2's delete, which need never come — the
// applier stalled with both records of incarnation 1 deferred.
//
// So the insert is skipped and remembered here as the range (u, w); an
// update or delete of the key that finds no applicable record and whose
// version lies in a remembered range belongs to that skipped incarnation and
// is skipped too. An incarnation's versions are consecutive (every committed
// change writes the version it read + 1), so its changes after the insert
// are exactly u + 1 .. d, d its delete's: the range is forgotten once the
// delete and every version before it were skipped — an update may arrive
// after the delete, from another ring. (A version of an incarnation between
// the skipped one and the newer one is skipped under the range too — it was
// replaced as well — but does not count toward forgetting it; at worst such
// a range stays, and it can never hold a later change's version.) Nothing
// else is ever skipped: a
// change whose incarnation's insert has not arrived yet still waits (its
// insert is either applied or skipped when it comes). A range lives only
// while a reordered incarnation's entries are in flight, so the set is
// small.
//
// Thread-safe (appliers of several worker threads share a table).
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace drtmx::store {

class SkippedIncarnations {
 public:
  // The insert of `key` at `version` found the key at version `have`: when
  // that is a newer incarnation, the insert's was replaced — remembered, and
  // true (drop the insert); false when it must wait for the earlier
  // record's delete.
  bool skip_if_replaced(uint64_t key, uint64_t version, uint64_t have) {
    if (have <= version) return false;
    std::lock_guard<std::mutex> g(mu_);
    ranges_[key].push_back(Range{version, have, 0, {}});
    return true;
  }
  // Whether the update or delete of `key` at `version` belongs to a skipped
  // incarnation (then the caller drops it); the last of its changes forgets
  // the range.
  bool covers(uint64_t key, uint64_t version, bool is_delete) {
    std::lock_guard<std::mutex> g(mu_);
    auto it = ranges_.find(key);
    if (it == ranges_.end()) return false;
    std::vector<Range>& rs = it->second;
    // Any range holding the version proves the change replaced (its
    // incarnation, or one between it and `newer`); the closest one (largest
    // insert version below it) is the most likely owner.
    size_t best = rs.size();
    for (size_t i = 0; i < rs.size(); ++i) {
      if (version <= rs[i].inserted || version >= rs[i].newer) continue;
      if (best == rs.size() || rs[i].inserted > rs[best].inserted) best = i;
    }
    if (best == rs.size()) return false;
    Range& r = rs[best];
    r.seen.push_back(version);
    if (is_delete) r.deleted = version;
    if (r.deleted != 0) {
      // Forgotten only when every version of its own (u + 1 .. d) was
      // seen: a version of a later replaced incarnation counted here (its
      // insert not skipped yet) must not make it forget too early.
      uint64_t own = 0;
      for (uint64_t v : r.seen) own += v > r.inserted && v <= r.deleted;
      if (own == r.deleted - r.inserted) {
        rs[best] = std::move(rs.back());
        rs.pop_back();
        if (rs.empty()) ranges_.erase(it);
      }
    }
    return true;
  }

 private:
  struct Range {
    uint64_t inserted;           // the skipped incarnation's insert version
    uint64_t newer;              // the version of the newer incarnation it met
    uint64_t deleted;            // its delete's version, once seen (0 before)
    std::vector<uint64_t> seen;  // versions skipped under this range
  };
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, std::vector<Range>> ranges_;
};

}  // namespace drtmx::store
