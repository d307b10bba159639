// failover::resolve (txn/failover_resolve.h): the decisions and repairs the
// survivors of a coordinator's loss agree on, from crafted histories,
// held locks and copies. Three nodes: 2 was removed, 0 and 1 survive.
#include "txn/failover_resolve.h"

#include <gtest/gtest.h>

namespace drtmx::txn::failover {
namespace {

constexpr uint64_t kLive = 0b011;  // nodes 0 and 1
constexpr uint16_t kT = 2;         // a table
constexpr uint64_t kK = 2066;      // a key

LoggedTxn txn(uint64_t number, uint64_t targets, std::vector<LoggedRecord> recs) {
  LoggedTxn t;
  t.txn = number;
  t.targets = targets;
  t.records = std::move(recs);
  return t;
}

LoggedRecord upd(uint64_t key, uint64_t version) {
  return {kT, RedoOp::kUpdate, key, version};
}

Copy copy(uint16_t node, bool primary, uint64_t version, const std::string& value) {
  return {node, primary, true, version, value};
}
Copy absent(uint16_t node, bool primary) {
  return {node, primary, false, 0, {}};
}

// The history of node 2's thread-0 ring as `survivor` kept it.
RingHistory ring(uint16_t survivor, std::vector<LoggedTxn> txns, bool full = false) {
  RingHistory g;
  g.survivor = survivor;
  g.node = 2;
  g.thread = 0;
  g.full = full;
  g.oldest = txns.empty() ? 0 : txns.front().txn;
  g.txns = std::move(txns);
  return g;
}

const Decision* find(const Resolution& r, uint64_t number) {
  for (const Decision& d : r.txns) {
    if (std::get<2>(d.id) == number) return &d;
  }
  return nullptr;
}

// The removed coordinator committed #292 (k: v4) long ago and #301 (k: v5)
// just now: its log reached both survivors, but it died before writing
// back — the primary (node 1) still holds v4, locked. The record must end
// at v5 everywhere, not at the older committed transaction's v4 (which
// would undo #301 on the backup that applied it).
TEST(FailoverResolve, HeldRecordEndsAtItsBackupsNewestCommittedVersion) {
  const std::vector<RingHistory> h = {
      ring(0, {txn(292, 0b111, {upd(kK, 4)}), txn(301, 0b111, {upd(kK, 5)})}),
      ring(1, {txn(292, 0b111, {upd(kK, 4)}), txn(301, 0b111, {upd(kK, 5)})})};
  const std::vector<HeldRecord> held = {{1, kT, kK}};
  std::map<RecKey, std::vector<Copy>> copies;
  copies[{kT, kK}] = {copy(0, false, 5, "five"), copy(1, true, 4, "four")};
  auto r = resolve(h, held, copies, kLive);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_NE(find(*r, 292), nullptr);
  EXPECT_TRUE(find(*r, 292)->committed);
  EXPECT_TRUE(find(*r, 301)->committed);
  ASSERT_EQ(r->wanted.count({kT, kK}), 1u);
  const Target& t = r->wanted.at({kT, kK});
  EXPECT_TRUE(t.present);
  EXPECT_EQ(t.version, 5u);
  EXPECT_EQ(t.value, "five");
}

// An older committed transaction of the removed node wrote k (v2); the
// survivors changed it since (v3), and a later transaction of the removed
// node locked it without logging anything. Nothing changes: the copies
// agree at v3 (the old rule asked for v2, which no copy held).
TEST(FailoverResolve, AnOlderCommittedTransactionDoesNotRollBackLaterChanges) {
  const std::vector<RingHistory> h = {ring(0, {txn(288, 0b101, {upd(kK, 2)})}), ring(1, {})};
  const std::vector<HeldRecord> held = {{1, kT, kK}};
  std::map<RecKey, std::vector<Copy>> copies;
  copies[{kT, kK}] = {copy(0, false, 3, "three"), copy(1, true, 3, "three")};
  auto r = resolve(h, held, copies, kLive);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(find(*r, 288)->committed);
  EXPECT_EQ(r->wanted.count({kT, kK}), 0u);
}

// The log reached node 0 only (targets 0 and 1): aborted, since the state
// before it survives at the primary; the backup that applied it goes back.
TEST(FailoverResolve, AnIncompleteLogIsAbortedWhereTheOldStateSurvives) {
  const std::vector<RingHistory> h = {ring(0, {txn(7, 0b011, {upd(kK, 9), upd(kK + 1, 3)})}),
                                      ring(1, {})};
  const std::vector<HeldRecord> held = {{1, kT, kK}, {1, kT, kK + 1}};
  std::map<RecKey, std::vector<Copy>> copies;
  copies[{kT, kK}] = {copy(0, false, 9, "new"), copy(1, true, 8, "old")};
  copies[{kT, kK + 1}] = {copy(0, false, 3, "new1"), copy(1, true, 2, "old1")};
  auto r = resolve(h, held, copies, kLive);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Decision* d = find(*r, 7);
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->committed);
  EXPECT_FALSE(d->complete);
  EXPECT_EQ(r->wanted.at({kT, kK}).version, 8u);
  EXPECT_EQ(r->wanted.at({kT, kK}).value, "old");
  EXPECT_EQ(r->wanted.at({kT, kK + 1}).value, "old1");
}

// An incomplete log whose old state is gone everywhere (the removed node
// was the primary and every surviving backup applied the record) while its
// new state survives for every record: committed.
TEST(FailoverResolve, AnIncompleteLogIsCommittedWhereOnlyTheNewStateSurvives) {
  // Targets 0, 1 and a fourth node 3 that survives but never got it.
  const uint64_t live = 0b1011;
  std::vector<RingHistory> h = {ring(0, {txn(5, 0b1011, {upd(kK, 4)})}),
                                ring(1, {txn(5, 0b1011, {upd(kK, 4)})}), ring(3, {})};
  std::map<RecKey, std::vector<Copy>> copies;
  copies[{kT, kK}] = {copy(0, false, 4, "new"), copy(1, false, 4, "new")};
  auto r = resolve(h, {}, copies, live);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(find(*r, 5)->committed);
  EXPECT_FALSE(find(*r, 5)->complete);
  EXPECT_EQ(r->wanted.at({kT, kK}).version, 4u);
}

TEST(FailoverResolve, NeitherStateSurvivingIsAnErrorNamingTheTransactionAndRecord) {
  const uint64_t live = 0b1011;
  // Record kK: every copy applied v4 (its old state, v3, is gone); record
  // kK+1: the copies hold v5, neither its old state (v6) nor its new (v7).
  std::vector<RingHistory> h = {ring(0, {txn(5, 0b1011, {upd(kK, 4), upd(kK + 1, 7)})}),
                                ring(1, {}), ring(3, {})};
  std::map<RecKey, std::vector<Copy>> copies;
  copies[{kT, kK}] = {copy(0, false, 4, "new"), copy(1, false, 4, "new")};
  copies[{kT, kK + 1}] = {copy(0, false, 5, "x"), copy(1, false, 5, "x")};
  auto r = resolve(h, {}, copies, live);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("transaction #5 of node 2 thread 0"), std::string::npos)
      << r.status().to_string();
  EXPECT_NE(r.status().message().find("record 2067"), std::string::npos) << r.status().to_string();
}

TEST(FailoverResolve, AnIncompleteInsertIsAbortedToAbsent) {
  const std::vector<RingHistory> h = {
      ring(0, {txn(3, 0b011, {LoggedRecord{kT, RedoOp::kInsert, kK, 1}})}), ring(1, {})};
  const std::vector<HeldRecord> held = {{1, kT, kK}};  // the reservation
  std::map<RecKey, std::vector<Copy>> copies;
  copies[{kT, kK}] = {copy(0, false, 1, "ins"), copy(1, true, 0, std::string(3, '\0'))};
  auto r = resolve(h, held, copies, kLive);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FALSE(find(*r, 3)->committed);
  EXPECT_FALSE(r->wanted.at({kT, kK}).present);
}

// A survivor whose history dropped older entries had every transaction
// older than the oldest it kept: such a transaction is complete.
TEST(FailoverResolve, ATransactionOlderThanAFullHistoryReachedThatSurvivor) {
  const std::vector<RingHistory> h = {
      ring(0, {txn(10, 0b011, {upd(kK, 2)}), txn(40, 0b011, {upd(kK + 5, 2)})}),
      ring(1, {txn(40, 0b011, {upd(kK + 5, 2)})}, true)};
  std::map<RecKey, std::vector<Copy>> copies;
  copies[{kT, kK}] = {copy(0, false, 2, "a"), copy(1, true, 2, "a")};
  copies[{kT, kK + 5}] = {copy(0, false, 2, "b"), copy(1, true, 2, "b")};
  auto r = resolve(h, {}, copies, kLive);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(find(*r, 10)->complete);
  EXPECT_TRUE(find(*r, 10)->committed);
  EXPECT_TRUE(r->wanted.empty());
}

// A reservation (version 0) held by a transaction that logged nothing,
// while an older committed insert of the same key was deleted since: the
// backups say absent, so the reservation goes.
TEST(FailoverResolve, AHeldReservationOfAnUnloggedTransactionIsRemoved) {
  const std::vector<RingHistory> h = {
      ring(0, {txn(3, 0b011, {LoggedRecord{kT, RedoOp::kInsert, kK, 1}})}),
      ring(1, {txn(3, 0b011, {LoggedRecord{kT, RedoOp::kInsert, kK, 1}})})};
  const std::vector<HeldRecord> held = {{1, kT, kK}};
  std::map<RecKey, std::vector<Copy>> copies;
  copies[{kT, kK}] = {absent(0, false), copy(1, true, 0, std::string(3, '\0'))};
  auto r = resolve(h, held, copies, kLive);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->wanted.count({kT, kK}), 1u);
  EXPECT_FALSE(r->wanted.at({kT, kK}).present);
}

TEST(FailoverResolve, BackupsThatDisagreeOnAHeldRecordAreAnError) {
  const uint64_t live = 0b1011;
  const std::vector<HeldRecord> held = {{1, kT, kK}};
  std::map<RecKey, std::vector<Copy>> copies;
  copies[{kT, kK}] = {copy(0, false, 4, "x"), copy(3, false, 5, "y"), copy(1, true, 4, "x")};
  auto r = resolve({}, held, copies, live);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("backups disagree"), std::string::npos);
}

}  // namespace
}  // namespace drtmx::txn::failover
