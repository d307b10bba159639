// The stored-procedure API: what users touch most.
//
// A transaction is a C++ callable over a Txn handle. Reads that go remote
// suspend only the calling coroutine; writes are buffered until commit.
//
//   Abort transfer(Txn& tx, Key from, Key to, int64_t amount) {
//     Account a, b;
//     if (Abort r = tx.get_for_update(kAccounts, from, &a); r != Abort::kNone) return r;
//     if (Abort r = tx.get_for_update(kAccounts, to, &b); r != Abort::kNone) return r;
//     if (a.balance < amount) return tx.user_abort();
//     a.balance -= amount;
//     b.balance += amount;
//     tx.put(kAccounts, from, &a);
//     tx.put(kAccounts, to, &b);
//     return Abort::kNone;  // commit
//   }
//
// The engine then validates (locks the write set, checks the read set's
// versions), replicates the redo log to every backup, and writes back at
// the primaries — with the primitives its Policy picks per phase. The
// outcome is Abort::kNone when committed, or the typed reason it aborted;
// retrying (with back-off) is the caller's policy.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace drtmx::txn {

using TableId = uint16_t;
using Key = uint64_t;

struct TableKey {
  TableId table;
  Key key;
};

enum class Abort : uint8_t {
  kNone = 0,          // committed (or, from a Txn call: go on)
  kLockHeld,          // a record to write was locked by another transaction
  kVersionChanged,    // a record read changed before commit
  kRecordMissing,     // the key does not exist
  kDuplicateInsert,   // insert of a key that exists
  kLogFull,           // a backup's log ring stayed full
  kNodeFailure,       // a node did not answer or an op failed on the fabric
  kUserAbort,         // the procedure decided to abort
  kTornRead,          // a record kept changing under repeated reads
  kNotSupported,      // an operation this table or build does not offer
  kVersionStoreFull,  // MVCC: no room for the old version of a record to write
  kOutOfMemory,       // an insert found no memory for its table to grow into (the
                      // host, its memory cgroup or /dev/shm is full)
};
constexpr int kAbortKinds = 12;
const char* abort_name(Abort a);

// One field of a table's rows: `size` bytes at `offset` in a value of
// `row_size` bytes (the table's value size, which get_fields checks), e.g.
// Field{sizeof(StockRow), offsetof(StockRow, s_quantity), sizeof(int16_t)}.
struct Field {
  uint32_t row_size = 0;
  uint32_t offset = 0;
  uint32_t size = 0;
};

class Txn {
 public:
  virtual ~Txn() = default;
  // Copies the record's value (the table's value size) to `out`.
  virtual Abort get(TableId t, Key k, void* out) = 0;
  // As get(), and the record will be written: it is locked at validation.
  virtual Abort get_for_update(TableId t, Key k, void* out) = 0;
  // Buffers a new value for a record read in this transaction.
  virtual Abort put(TableId t, Key k, const void* value) = 0;
  // Reads all of `keys` at once (outstanding requests: one round trip for
  // independent reads instead of one each); later get()s of them are served
  // from the transaction. `for_update` marks them all to be written.
  virtual Abort prefetch(std::span<const TableKey> keys, bool for_update) = 0;
  // Speculative outstanding reads (thesis §5.5): starts reading `keys` and
  // returns at once, so the procedure keeps computing while the READs are
  // in flight; the first later call that needs the store (a get() of one of
  // them or of any key, put, insert, remove, scan, or commit) waits for
  // them. A key whose record address this node does not know yet (not in
  // the location cache, ordered tables) is read at that point instead. An
  // error of one of these reads is returned by the get() of its key (and
  // ignored if none asks); keys read are in the read set like any read.
  // `for_update` marks them all to be written. The default reads at once.
  virtual Abort read_ahead(std::span<const TableKey> keys, bool for_update) {
    return prefetch(keys, for_update);
  }
  // One field of many rows (a column): the field `f` of the row of each of
  // `keys` into out + i * f.size. Returns and reads what prefetch(keys,
  // false) and then a get() of each key would (the rows are the
  // transaction's reads, validated at commit where get()'s are), copying
  // only the field out. A snapshot (read-only under MVCC) of rows in this
  // node's memory may load no more of a row than the field and the
  // record's header, where it can prove that copy whole (quiet copies,
  // store/record_io.h): a cache line of a wide row instead of all of them.
  // kNotSupported when the field is not inside the row or f.row_size is
  // not the table's value size; kRecordMissing for an absent key.
  virtual Abort get_fields(std::span<const TableKey> keys, Field f, void* out);

  // Creates a record with `value`. The key must not exist: the insert is
  // locked and checked at validation, and the transaction aborts with
  // kDuplicateInsert when the key is present then (or was already read in
  // this transaction). Later get()s of the key in this transaction see it.
  virtual Abort insert(TableId t, Key k, const void* value) = 0;
  // Deletes a record (read first if this transaction has not read it):
  // locked at validation, removed at commit. kRecordMissing when absent;
  // kNotSupported in a table declared without deletes (TableSpec::deletes).
  virtual Abort remove(TableId t, Key k) = 0;
  // Rows of an ordered table with from <= key <= to, ascending, at most
  // `limit` of them: keys into out->keys, values back to back (the table's
  // value size each) into out->values. The scanned range is validated at
  // commit: a concurrent insert into or delete from it, or a change of a
  // returned row, aborts the transaction (kVersionChanged) — no phantoms.
  struct Rows {
    std::vector<Key> keys;
    std::vector<uint8_t> values;
  };
  virtual Abort scan(TableId t, Key from, Key to, size_t limit, Rows* out) = 0;
  // The procedure gives up: returns kUserAbort for it to return.
  Abort user_abort() { return Abort::kUserAbort; }
};

}  // namespace drtmx::txn
