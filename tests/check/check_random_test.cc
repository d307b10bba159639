// Generated histories: serializable by construction, so the checker must
// call them valid under every model; then one read is corrupted and it
// must not.
#include <gtest/gtest.h>

#include "check/synthetic_history.h"
#include "history_builder.h"

namespace drtmx::check::test {
namespace {

SyntheticOptions small(uint64_t seed) {
  SyntheticOptions o;
  o.txns = 4000;
  o.processes = 6;
  o.active_keys = 12;
  o.hot_keys = 3;
  o.appends_per_key = 16;
  o.fail_fraction = 0.05;
  o.info_fraction = 0.03;
  o.seed = seed;
  return o;
}

struct Parsed {
  History h;
  Result<CheckReport> check(const std::string& models) {
    CheckOptions opt;
    opt.models = parse_models(models).value();
    return check_history(h, opt);
  }
};

Parsed parsed(uint64_t seed) {
  auto h = parse_history_text(synthetic_history_text(small(seed)));
  EXPECT_TRUE(h.is_ok()) << h.status().to_string();
  return Parsed{std::move(*h)};
}

std::set<std::string> types_of(const CheckReport& r) {
  std::set<std::string> s;
  for (const auto& [t, n] : r.analysis.anomalies.counts()) s.insert(t);
  return s;
}

// Ok reads by key: (txn, mop).
std::map<int64_t, std::vector<std::pair<uint32_t, uint32_t>>> reads_by_key(const History& h) {
  std::map<int64_t, std::vector<std::pair<uint32_t, uint32_t>>> m;
  for (uint32_t t = 0; t < h.txns.size(); t++) {
    const Txn& tx = h.txns[t];
    for (uint32_t i = tx.mop_begin; i < tx.mop_begin + tx.mop_count; i++) {
      if (h.mops[i].read_known) m[h.mops[i].key].push_back({t, i});
    }
  }
  return m;
}

TEST(CheckRandom, SerialHistoriesAreValidUnderEveryModel) {
  for (uint64_t seed : {1, 2, 3}) {
    Parsed p = parsed(seed);
    EXPECT_EQ(p.h.txns.size(), 4000u);
    for (const char* model : {"strict-serializable", "serializable", "snapshot-isolation"}) {
      auto r = p.check(model);
      ASSERT_TRUE(r.is_ok()) << r.status().to_string();
      EXPECT_EQ(r->verdict, Verdict::kValid)
          << model << " seed " << seed << ": " << report_summary(*r);
      EXPECT_TRUE(types_of(*r).empty());
      EXPECT_GT(r->graph_edges, 4000u);
    }
  }
}

TEST(CheckRandom, SwappedReadIsAnIncompatibleOrder) {
  Parsed p = parsed(4);
  // A read of two or more values that a longer read of its key extends.
  bool done = false;
  for (auto& [key, rs] : reads_by_key(p.h)) {
    uint32_t longest = 0;
    for (auto [t, mi] : rs) longest = std::max(longest, p.h.mops[mi].read_len);
    for (auto [t, mi] : rs) {
      MicroOp& m = p.h.mops[mi];
      if (m.read_len < 2 || m.read_len >= longest) continue;
      std::swap(p.h.reads[m.read_begin], p.h.reads[m.read_begin + 1]);
      done = true;
      break;
    }
    if (done) break;
  }
  ASSERT_TRUE(done) << "no read to swap in the generated history";
  auto r = p.check("serializable");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->verdict, Verdict::kInvalid);
  EXPECT_TRUE(types_of(*r).count("incompatible-order")) << report_summary(*r);
}

TEST(CheckRandom, StaleReadBreaksStrictSerializability) {
  Parsed p = parsed(5);
  // A read whose last value's writer completed before the reader began,
  // and whose key another read covers as far: drop that value.
  bool done = false;
  for (auto& [key, rs] : reads_by_key(p.h)) {
    uint32_t longest_other = 0;
    for (auto [t, mi] : rs) {
      MicroOp& m = p.h.mops[mi];
      const Txn& reader = p.h.txns[t];
      if (m.read_len == 0) continue;
      for (auto [t2, mi2] : rs) {
        if (t2 != t) longest_other = std::max(longest_other, p.h.mops[mi2].read_len);
      }
      if (longest_other < m.read_len) continue;
      int64_t last = p.h.reads[m.read_begin + m.read_len - 1];
      // Its writer, and that the reader wrote nothing to the key.
      bool ok = true;
      int64_t writer_done = -1;
      for (const Txn& w : p.h.txns) {
        for (const MicroOp& a : p.h.mops_of(w)) {
          if (a.kind == MopKind::kAppend && a.key == key && a.value == last) {
            if (w.outcome == Outcome::kOk) writer_done = w.complete_time;
          }
        }
      }
      for (const MicroOp& a : p.h.mops_of(reader))
        ok &= !(a.kind == MopKind::kAppend && a.key == key);
      if (!ok || writer_done < 0 || writer_done >= reader.invoke_time) continue;
      m.read_len--;
      done = true;
      break;
    }
    if (done) break;
  }
  ASSERT_TRUE(done) << "no stale-able read in the generated history";
  auto r = p.check("strict-serializable");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->verdict, Verdict::kInvalid) << report_summary(*r);
  bool realtime = false;
  for (const auto& t : types_of(*r)) realtime |= t.find("-realtime") != std::string::npos;
  EXPECT_TRUE(realtime) << report_summary(*r);
}

TEST(CheckRandom, ValueFromNowhereIsAGarbageRead) {
  Parsed p = parsed(6);
  bool done = false;
  for (auto& [key, rs] : reads_by_key(p.h)) {
    for (auto [t, mi] : rs) {
      MicroOp& m = p.h.mops[mi];
      if (m.read_len == 0) continue;
      p.h.reads[m.read_begin] = -12345;
      done = true;
      break;
    }
    if (done) break;
  }
  ASSERT_TRUE(done);
  auto r = p.check("serializable");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->verdict, Verdict::kInvalid);
  EXPECT_TRUE(types_of(*r).count("garbage-read")) << report_summary(*r);
}

}  // namespace
}  // namespace drtmx::check::test
