// Appends of committed transactions that no read saw: each comes after
// every value its key's reads show, so every reader of the key precedes its
// writer (rw) and so does the writer of the last value read (ww). A lost
// acknowledged append is a real-time cycle; with data edges of other keys
// such an append closes plain serializability cycles; concurrent unread
// appends stay unordered (no false positive); the edges per key are bounded.
#include <gtest/gtest.h>

#include "check/graph.h"
#include "history_builder.h"

namespace drtmx::check::test {
namespace {

using Types = std::set<std::string>;

std::unique_ptr<Checked> run(const std::vector<TxnSpec>& txns, const std::string& models) {
  auto c = check_text(history_text(txns), models);
  EXPECT_TRUE(c.is_ok()) << c.status().to_string();
  if (!c.is_ok()) return nullptr;
  return std::move(*c);
}

void expect_valid(const std::vector<TxnSpec>& txns, const std::string& models) {
  auto c = run(txns, models);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->types.empty()) << models << ": " << report_json(c->report);
  EXPECT_EQ(c->report.verdict, Verdict::kValid) << models;
}

// The one kept anomaly of `type`, after checking that the types are `want`.
const Anomaly& only(const Checked& c, const Types& want, const std::string& type) {
  EXPECT_EQ(c.types, want) << report_json(c.report);
  EXPECT_EQ(c.report.verdict, Verdict::kInvalid);
  static const Anomaly none;
  auto it = c.report.analysis.anomalies.kept().find(type);
  return it == c.report.analysis.anomalies.kept().end() ? none : it->second.front();
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Edge types from `from` to `to` (0: none), txns by their order of invoke.
uint8_t edge(const Graph& g, uint32_t from, uint32_t to) {
  for (uint64_t e = g.begin[from]; e < g.begin[from + 1]; e++) {
    if (g.dst[e] == to) return g.type[e];
  }
  return 0;
}

// W (process 0) appends 5 to key 1 and is acknowledged at time 10. A, which
// overlaps W, appends 1 to key 1; R begins at 20, after both, and reads key
// 1 as [1]: W's 5 is lost. Without real time R may be serialized before W.
std::vector<TxnSpec> lost_append() {
  return {{0, 0, 10, "ok", R"([["append",1,5]])"},
          {1, 1, 12, "ok", R"([["append",1,1]])"},
          {2, 20, 30, "ok", R"([["r",1,[1]]])"}};
}

TEST(CheckUnread, LostAcknowledgedAppendIsGSingleRealtime) {
  auto c = run(lost_append(), "strict-serializable");
  ASSERT_NE(c, nullptr);
  const Anomaly& cyc = only(*c, {"G-single-realtime"}, "G-single-realtime");
  ASSERT_EQ(cyc.steps.size(), 2u);
  // R -rw-> W (R's read lacks 5), W -realtime-> R.
  EXPECT_EQ(cyc.txns, (std::vector<uint32_t>{2, 0}));
  EXPECT_EQ(cyc.steps[0].type, kRW);
  EXPECT_EQ(cyc.steps[1].type, kRealtime);
  EXPECT_TRUE(contains(cyc.explanation,
                       "T1 read key 1 = [1] without T2's append of 5, which no read saw (T2 "
                       "committed, so 5 comes after every value read), so T1 < T2 (rw)"))
      << cyc.explanation;
  EXPECT_TRUE(contains(report_json(c->report),
                       R"({"type":"rw","from":5,"to":2,"key":1,"value":5,"unread":true})"))
      << report_json(c->report);
  EXPECT_EQ(c->report.analysis.unread_ok_appends, 1u);
  expect_valid(lost_append(), "serializable");
  expect_valid(lost_append(), "strong-session-serializable");
}

TEST(CheckUnread, LostAppendReadAsEmptyIsGSingleRealtime) {
  std::vector<TxnSpec> h = {{0, 0, 10, "ok", R"([["append",1,5]])"},
                            {1, 20, 30, "ok", R"([["r",1,[]]])"}};
  auto c = run(h, "strict-serializable");
  ASSERT_NE(c, nullptr);
  only(*c, {"G-single-realtime"}, "G-single-realtime");
  expect_valid(h, "serializable");
}

// A crash between W's acknowledgement and run 2, whose transactions append
// to the key and read it without W's 5: W completed before A began (real
// time), A's 2 precedes the lost 5 (ww), a write cycle in real time.
TEST(CheckUnread, LostAppendBeforeLaterAppendsIsG0Realtime) {
  std::vector<TxnSpec> h = {{0, 0, 10, "ok", R"([["append",1,5]])"},
                            {1, 20, 30, "ok", R"([["append",1,2]])"},
                            {2, 40, 50, "ok", R"([["r",1,[2]]])"}};
  auto c = run(h, "strict-serializable");
  ASSERT_NE(c, nullptr);
  const Anomaly& cyc = only(*c, {"G0-realtime"}, "G0-realtime");
  EXPECT_TRUE(contains(cyc.explanation,
                       "appended 2 to key 1 and T1 appended 5, which no read saw (T1 committed, "
                       "so 5 comes after every value read), so T2 < T1 (ww)"))
      << cyc.explanation;
  expect_valid(h, "serializable");
}

// T1 saw T2's append to key 2 but not its append to key 1, which nobody
// read: a read skew that only the rw edge to the unread append shows.
TEST(CheckUnread, ReadSkewOnAnUnreadAppendIsGSingle) {
  std::vector<TxnSpec> h = {{0, 0, 10, "ok", R"([["r",1,[]],["r",2,[9]]])"},
                            {1, 1, 5, "ok", R"([["append",1,5],["append",2,9]])"}};
  auto c = run(h, "serializable");
  ASSERT_NE(c, nullptr);
  const Anomaly& cyc = only(*c, {"G-single"}, "G-single");
  EXPECT_TRUE(contains(cyc.explanation, "without T2's append of 5, which no read saw"))
      << cyc.explanation;
  auto rc = run(h, "read-committed");
  ASSERT_NE(rc, nullptr);
  EXPECT_EQ(rc->report.verdict, Verdict::kValid);
}

// Ten readers miss W's unread 5; only the seventh also saw W's append to
// key 2, so only its rw edge closes a cycle: the search from W back to any
// of the ten finds it.
TEST(CheckUnread, OnlyTheReaderThatSawTheWriterClosesTheCycle) {
  std::vector<TxnSpec> h = {{0, 0, 5, "ok", R"([["append",1,5],["append",2,9]])"}};
  for (int i = 1; i <= 10; i++) {
    h.push_back({i, 10 + i, 40, "ok", i == 7 ? R"([["r",1,[]],["r",2,[9]]])" : R"([["r",1,[]]])"});
  }
  auto c = run(h, "serializable");
  ASSERT_NE(c, nullptr);
  const Anomaly& cyc = only(*c, {"G-single"}, "G-single");
  EXPECT_EQ(cyc.txns, (std::vector<uint32_t>{7, 0}));
}

// A write skew whose appends nobody read: each transaction read the key the
// other appended to without it.
TEST(CheckUnread, WriteSkewOnUnreadAppendsIsG2Item) {
  std::vector<TxnSpec> h = {{0, 0, 10, "ok", R"([["r",1,[]],["append",2,10]])"},
                            {1, 1, 11, "ok", R"([["r",2,[]],["append",1,20]])"}};
  auto c = run(h, "serializable");
  ASSERT_NE(c, nullptr);
  only(*c, {"G2-item"}, "G2-item");
  auto si = run(h, "snapshot-isolation");  // allows a write skew
  ASSERT_NE(si, nullptr);
  EXPECT_EQ(si->report.verdict, Verdict::kValid);
}

// T1 read T2's append to key 2, yet T2's unread append to key 1 comes after
// T1's (read) one: a cycle of ww and wr, forbidden even by read committed.
TEST(CheckUnread, UnreadAppendAfterAReadOneIsG1c) {
  std::vector<TxnSpec> h = {{0, 0, 10, "ok", R"([["append",1,1],["r",2,[7]]])"},
                            {1, 1, 5, "ok", R"([["append",1,5],["append",2,7]])"},
                            {2, 20, 30, "ok", R"([["r",1,[1]]])"}};
  auto c = run(h, "read-committed");
  ASSERT_NE(c, nullptr);
  const Anomaly& cyc = only(*c, {"G1c"}, "G1c");
  EXPECT_TRUE(contains(cyc.explanation, "appended 1 to key 1 and T"));
  EXPECT_TRUE(contains(cyc.explanation, " appended 5, which no read saw")) << cyc.explanation;
}

// R2 saw W's 5, but not as a prefix of key 1's order [1]: the reads of the
// key disagree, so W's append is not one that no read saw, and R1 gets no
// edge to it (the history is invalid for the disagreement alone).
TEST(CheckUnread, ValueSeenOnlyByADisagreeingReadIsNotUnread) {
  std::vector<TxnSpec> h = {{0, 0, 10, "ok", R"([["append",1,5]])"},
                            {1, 0, 10, "ok", R"([["append",1,1]])"},
                            {2, 20, 30, "ok", R"([["r",1,[1]]])"},
                            {3, 20, 30, "ok", R"([["r",1,[5]]])"}};
  auto c = run(h, "strict-serializable");
  ASSERT_NE(c, nullptr);
  only(*c, {"incompatible-order"}, "incompatible-order");
  Graph g = build_graph(c->report.analysis, GraphOptions{});
  EXPECT_EQ(edge(g, 2, 0), 0);
  EXPECT_EQ(edge(g, 1, 0), 0);
}

// Two concurrent transactions append to key 1 and nobody reads either
// value, an info transaction whose other append was read does too, and
// readers of key 1 overlap them all: valid under every model; the unread
// appends follow the key's readers and last writer but not each other.
std::vector<TxnSpec> concurrent_unread() {
  return {{0, 0, 5, "ok", R"([["append",1,1]])"},                  // 0: A
          {1, 6, 8, "ok", R"([["r",1,[1]]])"},                     // 1: R1
          {2, 7, 20, "ok", R"([["append",1,5],["append",2,3]])"},  // 2: W1
          {1, 9, 21, "ok", R"([["append",1,6]])"},                 // 3: W2
          {3, 10, 15, "ok", R"([["r",1,[1]]])"},                   // 4: R2
          {4, 11, -1, "", R"([["append",3,8],["append",1,9]])"},   // 5: I (info)
          {5, 22, 30, "ok", R"([["r",2,[3]],["r",3,[8]]])"}};      // 6: R3
}

TEST(CheckUnread, ConcurrentUnreadAppendsStayValid) {
  for (const char* model : {"read-committed", "snapshot-isolation", "serializable",
                            "strong-session-serializable", "strict-serializable"}) {
    expect_valid(concurrent_unread(), model);
  }
  auto c = run(concurrent_unread(), "serializable");
  ASSERT_NE(c, nullptr);
  const Analysis& a = c->report.analysis;
  EXPECT_EQ(a.unread_ok_appends, 2u);
  EXPECT_EQ(a.unread_info_appends, 1u);
  Graph g = build_graph(a, GraphOptions{});
  for (uint32_t w : {2u, 3u, 5u}) {
    EXPECT_EQ(edge(g, 0, w), kWW) << w;  // A wrote the last value read
    EXPECT_EQ(edge(g, 1, w), kRW) << w;  // R1 and R2 read [1] without it
    EXPECT_EQ(edge(g, 4, w), kRW) << w;
    for (uint32_t other : {2u, 3u, 5u}) EXPECT_EQ(edge(g, w, other), 0) << w << "->" << other;
  }
}

// One key, 40 readers of its whole order and 40 unread appenders: 1600
// pairs against a bound of 8 * (40 + 40) rw edges, so each appender gets
// edges from the 16 readers invoked latest. The first appender completed
// before the last readers began: a lost write that the bound keeps.
TEST(CheckUnread, EdgesPerKeyAreBoundedAndKeepTheLatestReaders) {
  std::vector<TxnSpec> h = {{0, 0, 5, "ok", R"([["append",1,1]])"}};  // txn 0
  h.push_back({1, 6, 7, "ok", R"([["append",1,1000]])"});             // txn 1, lost early
  for (int j = 1; j < 40; j++) {  // txns 2..40: concurrent with every reader
    h.push_back({100 + j, 8 + j, 1000, "ok", "[[\"append\",1," + std::to_string(1000 + j) + "]]"});
  }
  for (int i = 0; i < 40; i++) {  // txns 41..80, invoked at 50..89
    h.push_back({200 + i, 50 + i, 500, "ok", R"([["r",1,[1]]])"});
  }
  auto c = run(h, "serializable");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->types.empty()) << report_json(c->report);
  const History& hist = *c->report.analysis.h;
  ASSERT_EQ(hist.txns.size(), 81u);
  Graph g = build_graph(c->report.analysis, GraphOptions{});
  for (uint32_t w = 1; w <= 40; w++) {
    EXPECT_EQ(edge(g, 0, w), kWW) << w;
    int rw = 0;
    for (uint32_t r = 41; r <= 80; r++) {
      bool has = (edge(g, r, w) & kRW) != 0;
      rw += has;
      EXPECT_EQ(has, r >= 65) << "reader " << r << " -> appender " << w;  // the 16 latest
    }
    EXPECT_EQ(rw, 16) << w;
  }
  auto strict = run(h, "strict-serializable");
  ASSERT_NE(strict, nullptr);
  const Anomaly& cyc = only(*strict, {"G-single-realtime"}, "G-single-realtime");
  EXPECT_EQ(cyc.steps.size(), 2u);
}

}  // namespace
}  // namespace drtmx::check::test
