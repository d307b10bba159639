// The Log phase: replicate the redo records to every backup.
#include <algorithm>

#include "store/record.h"
#include "txn/engine.h"

namespace drtmx::txn {

Abort Engine::log() {
  if (rep_ == nullptr) return Abort::kNone;
  // Each backup receives the records of the partitions it backs up — never
  // records it is the primary of (it must not apply over a locked primary).
  struct Group {
    r2::NodeId node;
    std::vector<RedoRecord> recs;
  };
  std::vector<Group> groups;
  for (const Access& a : set_) {
    if (!a.write) continue;
    RedoRecord r;
    r.table = a.table;
    r.op = a.insert ? RedoOp::kInsert : a.remove ? RedoOp::kDelete : RedoOp::kUpdate;
    r.key = a.key;
    r.version = a.ref.version + 1;  // an insert: 1 (reserved at version 0)
    if (!a.remove) {
      // Read for update but never put: the old value with the new version,
      // exactly what Commit writes back.
      const uint8_t* v = a.new_value ? a.new_value : a.copy + sizeof(store::RecordHeader);
      r.value = {v, a.ref.value_size};
    }
    r2::NodeId mine[8];
    const size_t n = loc_.backups(a.table, a.key, mine, 8);
    for (size_t i = 0; i < n; ++i) {
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const Group& g) { return g.node == mine[i]; });
      if (it == groups.end()) it = groups.insert(groups.end(), Group{mine[i], {}});
      it->recs.push_back(r);
    }
  }
  if (groups.empty()) return Abort::kNone;
  if (log_.images == nullptr) return Abort::kNotSupported;  // arena too small for log images
  std::vector<BackupEntry> entries;
  for (const Group& g : groups) entries.push_back({g.node, g.recs});
  Status s = rep_->log(co_, entries, log_);
  if (s.is_ok()) return Abort::kNone;
  // Full for the whole back-pressure wait, or an entry larger than a ring
  // could ever hold: both are the log's capacity.
  return s.code() == Code::kResourceExhausted || s.code() == Code::kOutOfRange
             ? Abort::kLogFull
             : Abort::kNodeFailure;
}

}  // namespace drtmx::txn
