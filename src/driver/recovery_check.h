// The checks of a restart (--recover), after TxnNode::recover() and
// before any new transaction: what the acknowledgement journals of every
// node (journal.h) say the recovered database must hold.
//
//   (a) every acknowledged record is there: each key it wrote holds, on
//       every copy, at least the version it installed (a deleted key:
//       absent, or back at a higher version). A key it inserted or updated
//       that is absent must have been deleted later by a committed
//       transaction of some journal — unless the record is older than what
//       the rings folded away (its later delete may be among the folded
//       records: counted, not verified);
//   (b) nothing is partial: each transaction prepared but neither
//       acknowledged nor aborted at the crash (at most one per coroutine)
//       shows all of its writes, on every copy, or none of them (its keys
//       were locked: nothing else wrote them since);
//   (c) the workload's own check holds on every copy (node_audit on every
//       node, check() with the client sums = the carried sums of every
//       journal + the pending sums of the acknowledged records + those of
//       the in-flight transactions (b) found committed).
// Every node checks the copies it hosts; the journals and the findings
// travel through the control plane (collective: every node calls it).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "journal.h"
#include "r2/control/control.h"
#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "workload.h"

namespace drtmx::bench {

struct RecoveryCheck {
  Status status;                // the first failure (names the key or transaction)
  uint64_t acknowledged = 0;    // acknowledged records verified
  uint64_t commits_before = 0;  // acknowledged commits folded earlier (in the sums only)
  uint64_t in_flight = 0;       // prepared, undecided at the crash
  uint64_t in_flight_committed = 0;
  uint64_t writes_checked = 0;     // key copies compared (all nodes)
  uint64_t absent_unverified = 0;  // (a): absent keys of records older than the folded ones
  uint64_t truncated = 0;          // records whose write set was cut to fit
  uint64_t check_ns = 0;
  std::vector<int64_t> client_sums;  // what the database holds, for the next check
  // This node's in-flight records found committed: (coroutine, seq).
  std::vector<std::pair<uint32_t, uint64_t>> committed_here;

  // "recovery check: ok — 12345 acknowledged commits verified (8 in
  // flight: 5 committed, 3 not), no partial transaction ..."
  std::string line() const;
};

// Collective. `sums`: the number of client sums of the workload. A failed
// check is in the result's status (every node gets the same); an error of
// the exchange itself is returned.
Result<RecoveryCheck> check_recovery(const Journal& journal, const Workload& wl,
                                     const store::tables::StoreNode& store,
                                     const store::Catalog& cat, r2::ControlClient& control,
                                     size_t sums);

// exchange() for blobs of any size: in rounds that stay far below the
// control plane's frame limit.
Result<std::vector<std::string>> exchange_large(r2::ControlClient& control, const std::string& name,
                                                const std::string& blob);

}  // namespace drtmx::bench
