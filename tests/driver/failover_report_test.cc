// The failover report's timeline analysis (src/driver/failover_report.h):
// the pre-failure rate, the dip, and when the survivors were back at 80 %
// of it — counted from when they served again, not from the intervals
// that ran on at speed before the loss was noticed.
#include "failover_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/bench_run.h"

namespace drtmx::bench {
namespace {

using testing::json_number;

// A run killed 2000 ms into its window, 10-ms intervals of 100 commits
// before; after the kill two intervals at speed (not yet noticed), five at
// zero, then back.
struct Shape {
  FailoverRun fo;
  std::vector<uint64_t> timeline;
  Shape(bool with_report) {
    fo.active = true;
    fo.killed = 2;
    fo.t0_ns = 1'000'000'000;
    fo.killed_ns = fo.t0_ns + 2'000'000'000;
    fo.timeline_ms = 10;
    fo.replicas_before = 3;
    if (with_report) {
      txn::FailoverReport f;
      f.seen_ns = fo.killed_ns + 60'000'000;
      f.serving_ns = fo.killed_ns + 70'000'000;  // served 70 ms after the kill
      fo.reports.push_back(f);
    }
    timeline.assign(200, 100);
    for (uint64_t v : {100, 100, 0, 0, 0, 0, 0, 50, 90, 100, 100}) timeline.push_back(v);
  }
  std::string json() const {
    JsonWriter j;
    j.begin_object();
    json_failover(j, fo, timeline);
    j.end_object();
    return j.str();
  }
};

TEST(FailoverReport, BackTo80PercentCountsFromTheServingInstant) {
  const std::string j = Shape(true).json();
  EXPECT_EQ(json_number(j, "before_tps"), 10000) << j;
  EXPECT_EQ(json_number(j, "min_tps"), 0) << j;
  // Served at +70 ms (interval 207, at 50 %); 90 % in interval 208: its end
  // is 90 ms after the kill. (The first intervals after the kill, at full
  // speed, do not count.)
  EXPECT_EQ(json_number(j, "back_to_80pct_ms"), 90) << j;
}

TEST(FailoverReport, WithoutAReportItCountsFromTheDip) {
  const std::string j = Shape(false).json();
  EXPECT_EQ(json_number(j, "back_to_80pct_ms"), 90) << j;
}

TEST(FailoverReport, NeverBackIsMinusOne) {
  Shape s(true);
  s.timeline.resize(207);  // the run ended in the dip
  EXPECT_EQ(json_number(s.json(), "back_to_80pct_ms"), -1) << s.json();
}

}  // namespace
}  // namespace drtmx::bench
