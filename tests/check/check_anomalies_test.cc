// One hand-written history per anomaly type drtmx-check names, and valid
// ones: each must give exactly the anomaly types expected.
#include <gtest/gtest.h>

#include "history_builder.h"

namespace drtmx::check::test {
namespace {

using Types = std::set<std::string>;

std::unique_ptr<Checked> run(const std::vector<TxnSpec>& txns,
                             const std::string& models = "serializable") {
  auto c = check_text(history_text(txns), models);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  if (!c.is_ok()) return nullptr;
  return std::move(*c);
}

void expect_invalid(const std::vector<TxnSpec>& txns, const Types& want,
                    const std::string& models = "serializable") {
  auto c = run(txns, models);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->types, want) << report_json(c->report);
  EXPECT_EQ(c->report.verdict, Verdict::kInvalid);
  EXPECT_EQ(exit_status(c->report), 1);
  // Every kept anomaly explains itself.
  for (const auto& [t, list] : c->report.analysis.anomalies.kept()) {
    for (const auto& a : list) EXPECT_FALSE(a.explanation.empty()) << t;
  }
}

TEST(CheckAnomalies, G0WriteCycle) {
  expect_invalid({{0, 0, 10, "ok", R"([["append",1,1],["append",2,2]])"},
                  {1, 1, 11, "ok", R"([["append",1,3],["append",2,4]])"},
                  {2, 20, 30, "ok", R"([["r",1,[1,3]],["r",2,[4,2]]])"}},
                 {"G0"});
}

TEST(CheckAnomalies, G1aAbortedRead) {
  expect_invalid({{0, 0, 10, "fail", R"([["append",1,1]])"}, {1, 20, 30, "ok", R"([["r",1,[1]]])"}},
                 {"G1a"});
}

TEST(CheckAnomalies, G1bIntermediateRead) {
  // The writer's second append, which nobody read, comes after [1]: the
  // reader precedes the writer (rw) and follows it (wr), a G-single as when
  // a later read shows [1 2].
  expect_invalid({{0, 0, 10, "ok", R"([["append",1,1],["append",1,2]])"},
                  {1, 5, 30, "ok", R"([["r",1,[1]]])"}},
                 {"G1b", "G-single"});
}

TEST(CheckAnomalies, G1cCircularInformationFlow) {
  auto c = run({{0, 0, 10, "ok", R"([["append",1,1],["r",2,[2]]])"},
                {1, 1, 11, "ok", R"([["append",2,2],["r",1,[1]]])"}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->types, Types{"G1c"});
  const auto& cyc = c->report.analysis.anomalies.kept().at("G1c").front();
  ASSERT_EQ(cyc.steps.size(), 2u);
  EXPECT_EQ(cyc.steps[0].type, kWR);
  EXPECT_EQ(cyc.steps[1].type, kWR);
  // The explanation names both reads.
  EXPECT_NE(cyc.explanation.find("read key 2 = [2]"), std::string::npos) << cyc.explanation;
  EXPECT_NE(cyc.explanation.find("read key 1 = [1]"), std::string::npos) << cyc.explanation;
}

TEST(CheckAnomalies, GSingleReadSkew) {
  auto c = run({{0, 0, 10, "ok", R"([["r",1,[]],["r",2,[9]]])"},
                {1, 1, 5, "ok", R"([["append",1,5],["append",2,9]])"},
                {2, 20, 30, "ok", R"([["r",1,[5]]])"}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->types, Types{"G-single"}) << report_json(c->report);
  const auto& cyc = c->report.analysis.anomalies.kept().at("G-single").front();
  int rw = 0;
  for (const auto& s : cyc.steps) rw += s.type == kRW;
  EXPECT_EQ(rw, 1);
  EXPECT_NE(cyc.explanation.find("without T"), std::string::npos) << cyc.explanation;
  // Snapshot isolation forbids it too; read committed does not.
  EXPECT_EQ(exit_status(c->report), 1);
  auto rc = run({{0, 0, 10, "ok", R"([["r",1,[]],["r",2,[9]]])"},
                 {1, 1, 5, "ok", R"([["append",1,5],["append",2,9]])"},
                 {2, 20, 30, "ok", R"([["r",1,[5]]])"}},
                "read-committed");
  ASSERT_NE(rc, nullptr);
  EXPECT_EQ(rc->report.verdict, Verdict::kValid);
}

TEST(CheckAnomalies, G2ItemWriteSkew) {
  auto c = run({{0, 0, 10, "ok", R"([["r",1,[]],["append",2,10]])"},
                {1, 1, 11, "ok", R"([["r",2,[]],["append",1,20]])"},
                {2, 20, 30, "ok", R"([["r",1,[20]],["r",2,[10]]])"}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->types, Types{"G2-item"});
  // Snapshot isolation allows a write skew.
  auto si = run({{0, 0, 10, "ok", R"([["r",1,[]],["append",2,10]])"},
                 {1, 1, 11, "ok", R"([["r",2,[]],["append",1,20]])"},
                 {2, 20, 30, "ok", R"([["r",1,[20]],["r",2,[10]]])"}},
                "snapshot-isolation");
  ASSERT_NE(si, nullptr);
  EXPECT_EQ(si->report.verdict, Verdict::kValid);
  EXPECT_EQ(si->report.not_models,
            (std::vector<std::string>{"serializable", "strong-session-serializable",
                                      "strict-serializable"}));
}

TEST(CheckAnomalies, LostUpdate) {
  expect_invalid({{0, 0, 10, "ok", R"([["r",1,[]],["append",1,1]])"},
                  {1, 1, 11, "ok", R"([["r",1,[]],["append",1,2]])"},
                  {2, 20, 30, "ok", R"([["r",1,[1,2]]])"}},
                 {"lost-update", "G-single"});
}

// A stale read: T2 starts after T1 committed, yet misses its append.
std::vector<TxnSpec> stale_read() {
  return {{0, 0, 10, "ok", R"([["append",1,1]])"},
          {1, 20, 30, "ok", R"([["r",1,[]]])"},
          {2, 5, 40, "ok", R"([["r",1,[1]]])"}};
}

TEST(CheckAnomalies, GSingleRealtimeIsOnlyForStrictSerializable) {
  auto ser = run(stale_read(), "serializable");
  ASSERT_NE(ser, nullptr);
  EXPECT_TRUE(ser->types.empty()) << report_json(ser->report);
  EXPECT_EQ(ser->report.verdict, Verdict::kValid);
  expect_invalid(stale_read(), {"G-single-realtime"}, "strict-serializable");
  auto c = run(stale_read(), "strict-serializable");
  ASSERT_NE(c, nullptr);
  const auto& cyc = c->report.analysis.anomalies.kept().at("G-single-realtime").front();
  EXPECT_NE(cyc.explanation.find("(realtime)"), std::string::npos) << cyc.explanation;
}

TEST(CheckAnomalies, GSingleProcess) {
  // The stale read again, its two transactions on one process: under
  // strong session serializability the process order closes the cycle
  // (the real-time order is not checked there).
  std::vector<TxnSpec> h = {{0, 0, 10, "ok", R"([["append",1,1]])"},
                            {0, 20, 30, "ok", R"([["r",1,[]]])"},
                            {2, 5, 40, "ok", R"([["r",1,[1]]])"}};
  expect_invalid(h, {"G-single-process"}, "strong-session-serializable");
  auto c = run(h, "serializable");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->types.empty());
}

TEST(CheckAnomalies, G2ItemRealtime) {
  // T1 misses T2's append to key 1 (rw), T2 misses T3's append to key 2
  // (rw), and T3 completed before T1 began (realtime): a cycle with two rw
  // edges that needs real time. T2 overlaps T3, so no single-rw cycle.
  std::vector<TxnSpec> h = {{3, 0, 5, "ok", R"([["append",2,1]])"},
                            {1, 10, 20, "ok", R"([["r",1,[]]])"},
                            {2, 1, 30, "ok", R"([["r",2,[]],["append",1,1]])"},
                            {4, 40, 50, "ok", R"([["r",1,[1]],["r",2,[1]]])"}};
  expect_invalid(h, {"G2-item-realtime"}, "strict-serializable");
  auto c = run(h, "serializable");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->types.empty()) << report_json(c->report);
}

TEST(CheckAnomalies, IncompatibleOrder) {
  expect_invalid({{0, 0, 10, "ok", R"([["append",1,1]])"},
                  {1, 1, 11, "ok", R"([["append",1,2]])"},
                  {2, 20, 30, "ok", R"([["r",1,[1,2]]])"},
                  {3, 20, 31, "ok", R"([["r",1,[2,1]]])"}},
                 {"incompatible-order"});
}

TEST(CheckAnomalies, DuplicateElements) {
  expect_invalid({{0, 0, 10, "ok", R"([["append",1,1]])"}, {1, 20, 30, "ok", R"([["r",1,[1,1]]])"}},
                 {"duplicate-elements"});
}

TEST(CheckAnomalies, InternalInconsistencyMissesOwnAppend) {
  expect_invalid({{0, 0, 10, "ok", R"([["append",1,1],["r",1,[]]])"}}, {"internal"});
}

TEST(CheckAnomalies, InternalInconsistencyBetweenTwoReads) {
  expect_invalid({{0, 0, 10, "ok", R"([["append",1,1]])"},
                  {1, 20, 30, "ok", R"([["r",1,[1]],["append",1,2],["r",1,[1]]])"}},
                 {"internal"});
}

TEST(CheckAnomalies, FutureRead) {
  expect_invalid({{0, 0, 10, "ok", R"([["r",1,[1]],["append",1,1]])"}}, {"future-read"});
}

TEST(CheckAnomalies, GarbageRead) {
  expect_invalid(
      {{0, 0, 10, "ok", R"([["append",1,1]])"}, {1, 20, 30, "ok", R"([["r",1,[1,99]]])"}},
      {"garbage-read"});
}

TEST(CheckAnomalies, DirtyUpdate) {
  expect_invalid({{0, 0, 10, "fail", R"([["append",1,1]])"},
                  {1, 20, 30, "ok", R"([["append",1,2]])"},
                  {2, 40, 50, "ok", R"([["r",1,[1,2]]])"}},
                 {"G1a", "dirty-update"});
}

// Concurrent transactions, an info one whose append was read (it counts as
// committed), a failed one nobody read, an invoke that never completed.
std::vector<TxnSpec> valid_mixed() {
  return {{0, 0, 10, "ok", R"([["append",1,1]])"},
          {1, 5, 15, "ok", R"([["r",1,[]]])"},
          {2, 12, 20, "info", R"([["append",1,2],["append",2,1]])"},
          {3, 1, 3, "fail", R"([["append",2,5]])"},
          {0, 30, 40, "ok", R"([["r",1,[1,2]],["r",2,[1]]])"},
          {4, 35, -1, "", R"([["append",3,7]])"},
          {1, 41, 50, "ok", R"([["append",2,2],["r",2,[1,2]]])"},
          {5, 42, 60, "ok", R"([["r",3,[]],["r",2,[1,2]]])"}};
}

TEST(CheckValid, MixedOutcomesAndConcurrency) {
  for (const char* model :
       {"serializable", "strict-serializable", "strong-session-serializable", "read-committed"}) {
    auto c = run(valid_mixed(), model);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(c->types.empty()) << model << ": " << report_json(c->report);
    EXPECT_EQ(c->report.verdict, Verdict::kValid) << model;
    EXPECT_EQ(exit_status(c->report), 0);
    EXPECT_TRUE(c->report.not_models.empty());
  }
  auto c = run(valid_mixed());
  const Analysis& a = c->report.analysis;
  EXPECT_EQ(a.ok_txns, 5u);
  EXPECT_EQ(a.fail_txns, 1u);
  EXPECT_EQ(a.info_txns, 2u);  // the info completion and the invoke left open
  EXPECT_EQ(a.unread_info_appends, 1u);
  // Nodes: 5 ok + the info txn whose appends were read.
  int nodes = 0;
  for (uint8_t n : a.is_node) nodes += n;
  EXPECT_EQ(nodes, 6);
  std::string json = report_json(c->report);
  EXPECT_EQ(json.rfind("{\"valid?\":true,", 0), 0u) << json;
}

TEST(CheckValid, ReadsOfOwnAppendsAndRepeatedReads) {
  auto c = run(
      {{0, 0, 10, "ok", R"([["r",1,[]],["append",1,1],["r",1,[1]],["append",1,2],["r",1,[1,2]]])"},
       {1, 20, 30, "ok", R"([["append",1,3],["r",1,[1,2,3]],["r",1,[1,2,3]]])"}},
      "strict-serializable");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->types.empty()) << report_json(c->report);
}

TEST(CheckValid, NothingCommittedIsUnknown) {
  auto c = run({{0, 0, 10, "fail", R"([["append",1,1]])"}, {1, 1, -1, "", R"([["r",1,null]])"}});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->report.verdict, Verdict::kUnknown);
  EXPECT_EQ(exit_status(c->report), 2);
}

}  // namespace
}  // namespace drtmx::check::test
