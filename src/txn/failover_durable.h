// Failover with durable logs (--durability=pmem; txn/failover.h steps 3, 5
// and 6, the parts that differ from volatile logs). Why it is safe:
// docs/membership.md, "Durable clusters".
//
// Durable appliers are gated (txn/log/replication.h): nothing of an entry
// is applied before its transaction is known committed. When a coordinator
// dies, its entries above the decision watermark the survivors learned sit
// in their rings undecided. The reconfiguration:
//   3. drain: every applier applies what the live coordinators logged,
//      until none of their entries is gated (the survivors' coordinators are
//      paused, so their watermarks are final and reach the appliers within
//      a message). Records may wait (deferred) for a change a removed
//      writer's undecided entry holds.
//   4. decide: every survivor reports the entries its log region holds of
//      the removed writers' rings that were not released (a scan from the
//      ring header's persisted position: taken and gated ones alike; their
//      marks and record keys) and the watermark it knows for each ring. A
//      transaction is committed iff some survivor knows a watermark at or
//      above it, or every entry of it is found, its coordinator's own entry
//      excepted (gone with the coordinator: the entry's `self` mark says it
//      existed) — recovery's rule (txn/recovery.h) on the survivors' rings.
//      An acknowledged transaction had every entry persistent, so it is
//      committed; any other never completed its log: nobody was told it
//      committed, its write-backs never began (they follow the log), and
//      gated appliers applied none of it: it is dropped whole. The appliers
//      get the decisions (BackupApplier::resolve_removed): they apply the
//      committed entries in each key's order, like any other, drop the
//      rest, and release them at once (header persisted). Then the locks
//      the removed nodes hold are cleared and each held record takes the
//      state of its surviving backups (failover_resolve.h rule 4: a primary
//      the write-back never reached), persisted (durable_install).
//   5. finish: once every applier released what it took of those rings,
//      the committed entries an applier could not reach (beyond a hole the
//      dead writer left) are replayed here, and the rings and their headers
//      are zeroed (persisted): a later recovery decides nothing of them
//      again. The new membership (epoch, live set) goes into the node's
//      state pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "txn/log/replication.h"

namespace drtmx::txn::failover {

// What a durable reconfiguration needs of its node.
struct DurableParts {
  const store::Catalog* catalog = nullptr;
  store::tables::StoreNode* store = nullptr;
  r2::Fabric* fabric = nullptr;  // the table regions (to persist written slots)
  uint8_t* log_base = nullptr;   // this node's log region
  LogRingLayout layout;
  PersistOps persist;
  uint16_t self = 0;
  // Writes the membership into the node's state pool (persistent).
  std::function<Status(uint64_t epoch, uint64_t live)> save_membership;
};

// One entry of a removed writer's ring, as a survivor found it.
struct FoundEntry {
  uint16_t node = 0, thread = 0;  // the ring's writer
  LogMark mark;
  std::vector<LoggedRecord> records;
};

// What one survivor found: per removed ring, the watermark it knows, and
// the ring's unreleased entries.
struct DurableReport {
  std::vector<std::tuple<uint16_t, uint16_t, uint64_t>> watermarks;  // (node, thread, decided)
  std::vector<FoundEntry> entries;
};

// This node's report for the writers in `gone` (bit n: node n).
DurableReport durable_report(const DurableParts& p, uint64_t gone,
                             const std::vector<std::unique_ptr<BackupApplier>>& appliers);
std::string encode_durable(const DurableReport& r);
bool decode_durable(const std::string& blob, DurableReport* out);

// The decisions, the same on every survivor (the same blobs), by
// (node, thread, txn).
struct DurableDecision {
  uint16_t node = 0, thread = 0;
  uint64_t txn = 0;
  bool committed = false;
  bool complete = false;  // its log reached every target (= committed)
  std::vector<LoggedRecord> records;
};
std::vector<DurableDecision> durable_decide(const std::vector<DurableReport>& all);

// Hands each applier the decisions of the rings it reads.
void publish_decisions(const std::vector<DurableDecision>& d,
                       const std::vector<std::unique_ptr<BackupApplier>>& appliers, uint64_t gone);

// The repair of one held record (failover_resolve.h rule 4) on a durable
// copy: made equal to `present`/`version`/`value`, persisted. True when it
// changed the copy.
Result<bool> durable_install(const DurableParts& p, const store::TableSpec& spec, uint64_t key,
                             bool present, uint64_t version, std::span<const uint8_t> value);

// Step 5 (after every applier resolved the rings of `gone`): replays the
// committed entries no applier here reached, zeroes those rings and their
// headers (persisted). Returns the records replayed.
Result<uint64_t> finish_removed(const DurableParts& p, uint64_t gone,
                                const std::vector<DurableDecision>& d,
                                const std::vector<std::unique_ptr<BackupApplier>>& appliers);

}  // namespace drtmx::txn::failover
