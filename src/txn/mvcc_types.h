// Small types the MVCC steps (mvcc_ops.h) and the engine share.
#pragma once

#include <cstdint>

#include "r2/fabric.h"
#include "store/record_io.h"
#include "txn/txn.h"

namespace drtmx::txn {

// DEP_READ blocking (--mvcc=dst read-only transactions, thesis Fig 5-15):
// reads that found their record locked by a writer and waited for it, and
// the time they waited (measured at the records' primaries).
struct ReadWait {
  uint64_t blocked_reads = 0;
  uint64_t wait_ns = 0;
};

// One snapshot read: what the primary answered.
struct SnapshotRow {
  TableKey tk{};
  r2::NodeId primary = 0;
  bool found = false;
  uint64_t version = 0;
  uint8_t* value = nullptr;  // caller's buffer: the table's value size
  // Read in place, only these words of the value are needed (get_fields;
  // snapshot_direct): the rest of *value may be left unwritten.
  store::SlotPart part{};
  // DEP_READ of a hash table's live record: its offset in the table's
  // region at the primary (0: not told) and incarnation.
  uint64_t offset = 0;
  uint32_t incarnation = 0;
};

}  // namespace drtmx::txn
