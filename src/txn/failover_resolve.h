// Failover, the deciding part (txn/failover.h, steps 4 and 5): what the
// survivors of a node loss make of the removed coordinators' transactions
// and which state each surviving copy of a record they touched must end in.
// A pure function of what every survivor reported, so every survivor
// computes the same answer from the same exchanged blobs.
//
// Inputs, after every backup applier drained its rings:
//  * histories: per survivor and per removed coordinator ring, the last
//    entries its applier took (transaction number, target set, records);
//  * held: the records a removed node still holds locked on a survivor
//    (primaries only: backups are never locked by transactions);
//  * copies: every survivor's copy (present, version, value, whether it is
//    the partition's primary before the change) of each record concerned
//    (keys_concerned()).
//
// The rules (why they hold: docs/membership.md, "Deciding"):
//  1. A transaction whose entry reached every surviving target is
//     committed (its coordinator may have acknowledged it).
//  2. Any other one never completed its Log phase: nobody was told it
//     committed, and it still holds the locks of all its records at the
//     primaries (it is the newest writer of each). It is aborted when the
//     state before it survives somewhere for every record it wrote (an
//     insert: absent; otherwise version - 1 at some copy); failing that it
//     is committed when its new state survives for every record; failing
//     both it cannot be resolved (an error naming it).
//  3. Each record an undecided transaction (rule 2) wrote ends in exactly
//     the state the decision gives.
//  4. Any other record a removed node holds locked at a surviving primary
//     ends in the state of its surviving backups: they applied every
//     complete transaction, so they hold its latest committed state — the
//     lock holder's new version when it committed but had not written back,
//     the primary's own state when the holder had logged nothing. (An
//     older committed transaction of the same removed node in the history
//     says nothing about the record's state now: later transactions may
//     have changed it since.)
//  5. Nothing else changes.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/status.h"
#include "txn/log/replication.h"

namespace drtmx::txn::failover {

using TxnId = std::tuple<uint16_t, uint16_t, uint64_t>;  // (coordinator node, thread, txn number)
using RecKey = std::pair<uint16_t, uint64_t>;            // (table, key)

// What one survivor's applier kept of one removed coordinator's ring.
struct RingHistory {
  uint16_t survivor = 0;
  uint16_t node = 0, thread = 0;  // the ring's writer
  bool full = false;              // older entries were dropped
  uint64_t oldest = 0;            // the oldest transaction kept (when full)
  std::vector<LoggedTxn> txns;
};

// A record a removed node holds locked on `survivor`.
struct HeldRecord {
  uint16_t survivor = 0;
  uint16_t table = 0;
  uint64_t key = 0;
};

// One survivor's copy of a record.
struct Copy {
  uint16_t survivor = 0;
  bool primary = false;  // the partition's primary before the change
  bool present = false;
  uint64_t version = 0;
  std::string value;
};

// The state every surviving copy of a record must end in.
struct Target {
  bool present = false;
  uint64_t version = 0;
  std::string value;  // present: the bytes to install
  std::string why;    // the transaction or rule that decided it (errors, traces)
};

struct Decision {
  TxnId id;
  bool committed = false;
  bool complete = false;              // rule 1 (else decided by rule 2)
  uint64_t targets = 0;               // bit n: node n was sent an entry
  uint64_t at = 0;                    // bit n: survivor n applied it
  std::vector<LoggedRecord> records;  // one per (table, key)
  std::string name() const;           // "transaction #7 of node 2 thread 0, ..."
};

struct Resolution {
  std::vector<Decision> txns;       // by id
  std::map<RecKey, Target> wanted;  // records whose copies must be (made) equal to this
};

// The records whose copies the survivors must report: those written by
// the transactions in the histories, and those held locked.
std::set<RecKey> keys_concerned(const std::vector<RingHistory>& histories,
                                const std::vector<HeldRecord>& held);

// Decides every transaction in the histories and the target state of the
// records concerned. `live`: bit n = node n survives. Errors: a
// transaction neither of whose states survives, a record whose surviving
// backups disagree (both name the record and the transaction).
Result<Resolution> resolve(const std::vector<RingHistory>& histories,
                           const std::vector<HeldRecord>& held,
                           const std::map<RecKey, std::vector<Copy>>& copies, uint64_t live);

}  // namespace drtmx::txn::failover
