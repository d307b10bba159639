// What an index (hash table, ordered table with records in the heap) needs
// from the record heap: fixed-size record slots in its record region. Kept
// as a narrow interface so the indexes do not depend on RecordHeap (tests
// use trivial allocators).
#pragma once

#include <cstdint>

#include "base/status.h"

namespace drtmx::store {

// A slot handed to a new record: its offset in the record region (64-byte
// aligned, record_slot_size(value_size) bytes) and the incarnation the new
// tenant must write into its header. The allocator guarantees that a reused
// slot gets an incarnation different from its previous tenant's (that is
// how a cached address of the old tenant is recognised as stale), and never
// 0 (0 marks "no record" in index entries).
struct SlotGrant {
  uint64_t offset = 0;
  uint32_t incarnation = 0;
};

// Thread safety: called by any owner thread concurrently (inserts and
// deletes of different chains run in parallel); implementations synchronise.
class RecordSlots {
 public:
  virtual ~RecordSlots() = default;
  // A free slot, or kResourceExhausted naming the table/heap that is full.
  virtual Result<SlotGrant> allocate() = 0;
  // Returns a slot whose record was deleted and unlinked from every index.
  virtual void release(uint64_t offset) = 0;
};

}  // namespace drtmx::store
