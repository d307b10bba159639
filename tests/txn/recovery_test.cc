// Restart recovery's rule for a record logged for a primary copy: its slot
// tells whether the record's incarnation was deleted after it (then the
// record is not replayed, whatever its entry outlived).
#include "txn/recovery.h"

#include <gtest/gtest.h>

#include <vector>

#include "store/record.h"

namespace drtmx::txn {
namespace {

constexpr size_t kValue = 40;

// A slot image as a commit or a delete leaves it in the pool.
std::vector<uint8_t> slot(uint64_t key, uint32_t incarnation, uint64_t version, uint32_t flags) {
  std::vector<uint8_t> s(store::record_slot_size(kValue), 0);
  auto* h = reinterpret_cast<store::RecordHeader*>(s.data());
  h->key = key;
  h->incarnation = incarnation;
  h->version = version;
  h->flags = flags;
  std::memset(s.data() + store::kValueOffset, 0x5a, kValue);
  store::seal(s.data(), kValue);
  return s;
}

RedoRecord logged(RedoOp op, uint64_t key, uint32_t incarnation, uint64_t version) {
  RedoRecord r;
  r.op = op;
  r.key = key;
  r.version = version;
  r.at_primary = 64 + 1;
  r.incarnation = incarnation;
  return r;
}

TEST(Recovery, APrimaryRecordWhoseIncarnationWasDeletedIsNotReplayed) {
  // Trade-Order inserts key 9 (incarnation 3, version 5), Market-Feed
  // deletes it (version 6): the slot holds it deleted; the insert's entry
  // outlived the delete's.
  const RedoRecord ins = logged(RedoOp::kInsert, 9, 3, 5);
  EXPECT_TRUE(deleted_at_its_slot(ins, slot(9, 3, 6, store::kDeleted).data(), kValue));
  // ... and the slot was reused since: by another key, or by key 9 again
  // (the insert of a new incarnation).
  EXPECT_TRUE(deleted_at_its_slot(ins, slot(11, 4, 7, store::kLive).data(), kValue));
  EXPECT_TRUE(deleted_at_its_slot(ins, slot(9, 4, 7, store::kLive).data(), kValue));
  // An update of the deleted incarnation: the same.
  const RedoRecord upd = logged(RedoOp::kUpdate, 9, 3, 5);
  EXPECT_TRUE(deleted_at_its_slot(upd, slot(9, 3, 6, store::kDeleted).data(), kValue));
}

TEST(Recovery, APrimaryRecordIsReplayedWhereItsSlotSaysNothingOfADelete) {
  const RedoRecord ins = logged(RedoOp::kInsert, 9, 3, 5);
  // The reservation (version 0: the write-back never landed), an older
  // version (an update not written back), the record itself or later.
  EXPECT_FALSE(deleted_at_its_slot(ins, slot(9, 3, 0, store::kLive).data(), kValue));
  EXPECT_FALSE(deleted_at_its_slot(ins, slot(9, 3, 4, store::kLive).data(), kValue));
  EXPECT_FALSE(deleted_at_its_slot(ins, slot(9, 3, 8, store::kLive).data(), kValue));
  // Torn (a write-back cut by the crash) or empty: nothing known.
  std::vector<uint8_t> torn = slot(9, 3, 5, store::kLive);
  torn[store::kValueOffset] ^= 1;
  EXPECT_FALSE(deleted_at_its_slot(ins, torn.data(), kValue));
  std::vector<uint8_t> empty(store::record_slot_size(kValue), 0);
  EXPECT_FALSE(deleted_at_its_slot(ins, empty.data(), kValue));
  // Records for backups and deletes are not judged by a slot.
  RedoRecord backup = ins;
  backup.at_primary = 0;
  EXPECT_FALSE(deleted_at_its_slot(backup, slot(9, 3, 6, store::kDeleted).data(), kValue));
  EXPECT_FALSE(deleted_at_its_slot(logged(RedoOp::kDelete, 9, 3, 6),
                                   slot(9, 3, 6, store::kDeleted).data(), kValue));
}

}  // namespace
}  // namespace drtmx::txn
