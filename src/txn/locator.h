// Locator: what the transaction engine needs from the storage layer —
// where a key's primary and backups are, how to read a record in Execute
// with a given read path, and how a backup installs a redo record. The
// store implements it per worker (its location cache and index clients are
// per worker); the engine never sees an index.
#pragma once

#include <cstddef>
#include <cstdint>

#include "r2/sched/co.h"
#include "txn/policy.h"
#include "txn/record_ops.h"
#include "txn/txn.h"

namespace drtmx::txn {

class Locator {
 public:
  virtual ~Locator() = default;
  virtual uint32_t value_size(TableId t) const = 0;
  virtual r2::NodeId primary(TableId t, Key k) const = 0;
  // Writes up to `max` backup nodes of k's partition to `out`; returns the count.
  virtual size_t backups(TableId t, Key k, r2::NodeId* out, size_t max) const = 0;
  // Execute-phase read through `path`: on success `ref` holds the record's
  // address, value size and version, and `copy` (registered, at least
  // store::record_slot_size(value_size) bytes) a verified image of it.
  // Returns kNone, kRecordMissing, kTornRead or kNodeFailure.
  virtual Abort read(r2::Co& co, ReadPath path, TableId t, Key k, RecordRef* ref,
                     uint8_t* copy) = 0;
  // Several reads at once; results[i] for keys[i]. The default reads one by
  // one; a store overrides it to issue them together (one doorbell per
  // peer, parallel RPCs).
  virtual void read_many(r2::Co& co, ReadPath path, std::span<const TableKey> keys, RecordRef* refs,
                         uint8_t* const* copies, Abort* results) {
    for (size_t i = 0; i < keys.size(); ++i) {
      results[i] = read(co, path, keys[i].table, keys[i].key, &refs[i], copies[i]);
    }
  }
};

}  // namespace drtmx::txn
