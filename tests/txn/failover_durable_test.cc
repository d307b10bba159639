// Durable failover's deciding part (txn/failover_durable.h): the rule on the
// survivors' rings (a watermark at or above the transaction, or every entry
// found but the coordinator's own), the reports' encoding, and the `self`
// mark an entry carries through a ring. The whole failover runs in
// tests/driver/durable_failover_test.cc.
#include "txn/failover_durable.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "txn/log/log_ring.h"

namespace drtmx::txn::failover {
namespace {

FoundEntry entry(uint16_t node, uint16_t thread, uint64_t txn, uint16_t targets, bool self,
                 uint64_t decided = 0, std::vector<LoggedRecord> records = {}) {
  FoundEntry e;
  e.node = node;
  e.thread = thread;
  e.mark.txn = txn;
  e.mark.targets = targets;
  e.mark.self = self;
  e.mark.decided = decided;
  e.records = std::move(records);
  return e;
}

const DurableDecision* find(const std::vector<DurableDecision>& d, uint16_t node, uint16_t thread,
                            uint64_t txn) {
  for (const DurableDecision& x : d) {
    if (x.node == node && x.thread == thread && x.txn == txn) return &x;
  }
  return nullptr;
}

TEST(DurableDecide, EveryEntryFoundCommitsMissingOneDrops) {
  // Node 2 died. Its thread 0 logged txn 5 to nodes 0 and 1 (both found),
  // txn 6 to 0, 1 and itself (its own entry gone with it), txn 7 to 0 and
  // 1 (only node 0's arrived), txn 8 to 0, 1 and itself (only node 1's).
  DurableReport a, b;
  a.watermarks.emplace_back(2, 0, 4);
  b.watermarks.emplace_back(2, 0, 4);
  a.entries.push_back(entry(2, 0, 5, 2, false));
  b.entries.push_back(entry(2, 0, 5, 2, false));
  a.entries.push_back(entry(2, 0, 6, 3, true));
  b.entries.push_back(entry(2, 0, 6, 3, true));
  a.entries.push_back(entry(2, 0, 7, 2, false));
  b.entries.push_back(entry(2, 0, 8, 3, true));
  const std::vector<DurableDecision> d = durable_decide({a, b, DurableReport{}});
  ASSERT_EQ(d.size(), 4u);
  EXPECT_TRUE(find(d, 2, 0, 5)->committed);
  EXPECT_TRUE(find(d, 2, 0, 6)->committed);
  EXPECT_FALSE(find(d, 2, 0, 7)->committed);
  EXPECT_FALSE(find(d, 2, 0, 8)->committed);
}

TEST(DurableDecide, AWatermarkAnySurvivorKnowsCommits) {
  // Txn 9 was released at node 1 (not found there any more) under the
  // watermark 9 it persisted; node 0 still holds its entry.
  DurableReport a, b;
  a.watermarks.emplace_back(1, 3, 7);
  b.watermarks.emplace_back(1, 3, 9);
  a.entries.push_back(entry(1, 3, 9, 2, false));
  a.entries.push_back(entry(1, 3, 10, 2, false));
  // A later entry carries a watermark too (decided when it was built).
  a.entries.push_back(entry(1, 3, 12, 3, false, /*decided=*/11));
  a.entries.push_back(entry(1, 3, 11, 3, false));
  const std::vector<DurableDecision> d = durable_decide({a, b});
  EXPECT_TRUE(find(d, 1, 3, 9)->committed);
  EXPECT_TRUE(find(d, 1, 3, 10)->committed);
  EXPECT_TRUE(find(d, 1, 3, 11)->committed);
  EXPECT_FALSE(find(d, 1, 3, 12)->committed);
}

TEST(DurableDecide, RingsAreDecidedApartAndRecordsOncePerKey) {
  DurableReport a, b;
  a.watermarks.emplace_back(0, 0, 100);
  a.watermarks.emplace_back(0, 1, 0);
  b.watermarks.emplace_back(0, 1, 0);
  // The same number on two threads' rings: two transactions.
  a.entries.push_back(entry(0, 0, 3, 2, false, 0, {{1, RedoOp::kUpdate, 42, 7}}));
  a.entries.push_back(entry(0, 1, 3, 2, false, 0, {{1, RedoOp::kUpdate, 43, 2}}));
  b.entries.push_back(entry(0, 1, 3, 2, false, 0, {{1, RedoOp::kUpdate, 43, 2}}));
  const std::vector<DurableDecision> d = durable_decide({a, b});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(find(d, 0, 0, 3)->committed);  // by the watermark
  const DurableDecision* t1 = find(d, 0, 1, 3);
  ASSERT_NE(t1, nullptr);
  EXPECT_TRUE(t1->committed);  // every entry found
  ASSERT_EQ(t1->records.size(), 1u);
  EXPECT_EQ(t1->records[0].key, 43u);
  EXPECT_EQ(t1->records[0].version, 2u);
}

TEST(DurableReportBlob, RoundTripsAndRefusesTruncation) {
  DurableReport r;
  r.watermarks.emplace_back(2, 1, 77);
  r.entries.push_back(
      entry(2, 1, 78, 3, true, 76, {{4, RedoOp::kInsert, 9, 1}, {5, RedoOp::kDelete, 10, 12}}));
  const std::string blob = encode_durable(r);
  DurableReport back;
  ASSERT_TRUE(decode_durable(blob, &back));
  ASSERT_EQ(back.watermarks.size(), 1u);
  EXPECT_EQ(std::get<2>(back.watermarks[0]), 77u);
  ASSERT_EQ(back.entries.size(), 1u);
  const FoundEntry& e = back.entries[0];
  EXPECT_EQ(e.node, 2);
  EXPECT_EQ(e.thread, 1);
  EXPECT_EQ(e.mark.txn, 78u);
  EXPECT_EQ(e.mark.decided, 76u);
  EXPECT_EQ(e.mark.targets, 3);
  EXPECT_TRUE(e.mark.self);
  ASSERT_EQ(e.records.size(), 2u);
  EXPECT_EQ(e.records[1].op, RedoOp::kDelete);
  EXPECT_EQ(e.records[1].version, 12u);
  DurableReport cut;
  EXPECT_FALSE(decode_durable(blob.substr(0, blob.size() - 3), &cut));
  DurableReport empty;
  EXPECT_TRUE(decode_durable("", &empty));  // a removed node's blob
  EXPECT_TRUE(empty.entries.empty());
}

TEST(LogMarkSelf, TravelsInTheEntryUnderItsSeal) {
  constexpr uint32_t kRing = 4096;
  std::vector<uint8_t> ring(kRing, 0), image(kRing, 0);
  LogWriter w(0, kRing);
  const uint8_t payload[24] = {1, 2, 3};
  for (int i = 0; i < 2; ++i) {
    LogMark m;
    m.txn = 10 + i;
    m.decided = 9;
    m.targets = 3;
    m.self = i == 1;
    LogWriter::Placement pl[2];
    auto n = w.prepare(payload, sizeof payload, image.data(), pl, m);
    ASSERT_TRUE(n.is_ok());
    ASSERT_EQ(*n, 1);
    std::memcpy(ring.data() + pl[0].offset, image.data(), pl[0].bytes);
  }
  std::vector<LogEntry> found = scan_ring(ring.data(), kRing, 1);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_FALSE(found[0].mark.self);
  EXPECT_TRUE(found[1].mark.self);
  EXPECT_EQ(found[1].mark.targets, 3);
  // The bit is sealed: flipping it makes the entry incomplete.
  uint32_t kind;
  std::memcpy(&kind, ring.data() + 4, sizeof kind);
  kind ^= 1u << 24;
  std::memcpy(ring.data() + 4, &kind, sizeof kind);
  found = scan_ring(ring.data(), kRing, 1);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].mark.txn, 11u);
}

}  // namespace
}  // namespace drtmx::txn::failover
