// The primary's side of a snapshot read (DEP_READ, thesis §5.2): one key,
// or a key range of an ordered table's partition, at a read timestamp, on
// this node's copies. The DEP_READ RPC handlers (mvcc_ops.cc) run these for
// requests from other nodes; a coordinator on the primary itself runs them
// in place (snapshot.cc), without a request or a reply.
//
// Neither waits: a row whose lock holder may commit at or below the read
// timestamp (dst::read_at's kLocked) is counted in *blocked and left out;
// the handler defers the request and runs it again later, the in-place
// caller drops what it got and asks the handler.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dst/mvcc_node.h"
#include "dst/record_mvcc.h"
#include "store/tables/store_node.h"

namespace drtmx::txn {

// What a snapshot read found of one key.
struct SnapshotHit {
  bool found = false;  // a value at the read timestamp (else absent then)
  uint64_t wts = 0, version = 0;
  // A hash table's live record: where it is (offset 0 otherwise), so a
  // reader's location cache can learn it.
  uint64_t offset = 0;
  uint32_t incarnation = 0;
};

// Receives a range's rows in key order.
class SnapshotSink {
 public:
  virtual ~SnapshotSink() = default;
  // `value`: the table's value size of bytes (8-byte padded in memory).
  virtual void row(uint64_t key, const SnapshotHit& hit, const uint8_t* value) = 0;
};

class SnapshotServer {
 public:
  SnapshotServer(dst::MvccNode& m, store::tables::StoreNode& s) : m_(m), s_(s) {}

  // One key at `ts` into *hit and `value` (the value size rounded up to 8
  // bytes); *locked when a writer holds it. `hint` (optional): where an
  // index scan said the record was, tried before looking the key up.
  // False with *err on an internal error (a read below the low-water mark).
  bool read_key(const store::TableSpec& t, uint64_t key, uint64_t ts, dst::SnapshotMode mode,
                SnapshotHit* hit, uint8_t* value, bool* locked, std::string* err,
                const store::tables::RecordAddr* hint = nullptr);

  // The rows of `table` with from <= key <= to in partition `part` (at
  // most `limit`) at `ts`, in order, to `sink`: the keys in the index
  // merged with deleted keys that lived at ts. Claims the partition's key
  // set first (DST). *exhausted: the range's end or the partition's was
  // reached (not the limit). Locked rows: *blocked counts them, the sink
  // does not get them. False with *err on a bad table or partition.
  bool scan(uint16_t table, store::PartitionId part, uint64_t from, uint64_t to, uint32_t limit,
            uint64_t ts, dst::SnapshotMode mode, SnapshotSink* sink, bool* exhausted,
            uint64_t* blocked, std::string* err);

 private:
  // read_key into `image` (record_slot_size of the table's value size,
  // 8-aligned): when found, the value read is at image + kValueOffset (the
  // header is the version in place's, or garbage when the value came from
  // the version store or the graveyard). A scan hands that value to its
  // sink without another copy.
  bool read_key_image(const store::TableSpec& t, uint64_t key, uint64_t ts, dst::SnapshotMode mode,
                      SnapshotHit* hit, uint8_t* image, bool* locked, std::string* err,
                      const store::tables::RecordAddr* hint);

  dst::MvccNode& m_;
  store::tables::StoreNode& s_;
  // Scratch (a server never yields inside a call): a record image, a
  // scan's keys, leaf values and merged keys.
  std::vector<uint64_t> image_;
  std::vector<uint64_t> keys_, all_;
  std::vector<uint8_t> vals_;
};

}  // namespace drtmx::txn
