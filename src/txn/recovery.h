// Restart recovery of a durable cluster (--durability=pmem --recover):
// what happens between the pools being mapped again and the first new
// transaction. Every node of the cluster runs it (it meets the others at
// the control plane); see src/txn/README.md, "Durability", for the protocol it relies
// on.
//
//   1. Records: StoreNode::recover rebuilt every hosted copy from its
//      slots (whole, sealed records only; locks released; indexes new).
//   2. Logs: each ring of this node's log region is scanned for complete
//      entries (from the head its RingHeader persisted; torn or partial
//      ones are never taken), and for each coordinator thread the highest
//      decision watermark seen — in headers and in entries — is noted.
//   3. Decisions: the nodes exchange their watermarks and the transactions
//      their entries belong to. A transaction is committed iff some node
//      saw a watermark at or above it (its coordinator knew every entry
//      persistent) or all of its entries were found (their count is in
//      each). Anything else never completed its log: it was never
//      acknowledged, and none of its entries was applied anywhere (appliers
//      are gated by the coordinators' watermarks), so it is dropped whole.
//   4. Replay: the records of the committed entries found here, and the
//      records of committed entries other nodes found for partitions this
//      node is the primary of (shipped through the control plane: a
//      primary receives no entry for a record with backups written back by
//      one-sided WRITE, and its write-back may not have been persistent),
//      are installed into this node's copies in version order per key,
//      each only where the copy is older (idempotent: a crash during
//      recovery just means recovering again), then made persistent.
//   5. After every node replayed (a barrier), the rings and their headers
//      are zeroed and persisted; after every node did that (a barrier), the
//      coordinators start at sequence 1 again.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "r2/control/control.h"
#include "r2/fabric.h"
#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "txn/log/replication.h"

namespace drtmx::txn {

struct LogRecovery {
  uint64_t entries = 0;           // complete entries found in this node's rings
  uint64_t committed = 0;         // of those, entries of committed transactions
  uint64_t dropped = 0;           // entries of transactions that never completed their log
  uint64_t records = 0;           // records of committed entries offered to the copies
  uint64_t replayed = 0;          // ... that changed a copy (the rest were already there)
  uint64_t shipped = 0;           // records other nodes found for this node's primary copies (in
                                  // `records`)
  uint64_t shipped_replayed = 0;  // ... that changed a copy (in `replayed`)
  uint64_t scan_ns = 0;           // step 2
  uint64_t decide_ns = 0;         // step 3 (the exchange)
  uint64_t replay_ns = 0;         // step 4, persist included
  uint64_t reset_ns = 0;          // step 5
};

// Steps 2-5 for this node. `log_base`: its log region (layout); `fabric`
// gives the table regions (to persist replayed slots). Collective.
// A committed insert or update logged for the primary copy here names the
// slot its write-back went to (`slot`: that slot as the pool holds it).
// True when the slot, whole (its seal verifies), holds another key or
// incarnation, or this incarnation deleted: the slot is freed only when its
// record is deleted, so a later delete removed the record and it must not be
// replayed (the delete's entry may be released while this one outlived it in
// another ring). An empty or torn slot, or the incarnation live at any
// version, says nothing: false.
bool deleted_at_its_slot(const RedoRecord& r, const uint8_t* slot, size_t value_size);

Status recover_logs(const store::Catalog& catalog, store::tables::StoreNode& store,
                    r2::Fabric& fabric, uint8_t* log_base, const LogRingLayout& layout,
                    r2::ControlClient& control, const PersistOps& persist, LogRecovery* out);

}  // namespace drtmx::txn
