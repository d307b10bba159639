// A series of runs (several presets, the points of a sweep, or one run
// repeated): each run writes its JSON report to a file of ours, one after
// another, then one table of them. The caller writes the series' own JSON
// from the rows (and, with rounds, from summarize()).
//
// Rounds (--rounds=N): the whole series runs N times, odd rounds in the
// given order and even rounds reversed (A B, B A, A B, ...). On a shared
// machine whose speed drifts within minutes, each point then runs as often
// early as late, and the table compares medians, and each point's ratio to
// the first point taken within a round (the neighbouring runs), not across
// the whole series.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench.h"
#include "json_writer.h"

namespace drtmx::bench {

struct SeriesRow {
  std::string label;   // the preset, or the swept value
  uint32_t round = 1;  // 1 .. rounds
  std::string json;    // the run's JSON report ("" when it failed early)
  Status status;
};

// Runs every points[i] `rounds` times (see above) with `run`, each under the
// heading "== <heading(i)>" (plus " (round r of N)" when rounds > 1),
// labelled labels[i]; rows in the order run. Stops after a run that
// SIGINT/SIGTERM interrupted (the rows so far are returned). A run that
// succeeded without a report is an error.
std::vector<SeriesRow> run_series(std::vector<BenchOptions> points,
                                  const std::vector<std::string>& labels,
                                  const std::function<std::string(size_t)>& heading,
                                  const std::function<Status(const BenchOptions&)>& run,
                                  uint32_t rounds = 1);

// One label's runs over the rounds (successful runs only).
struct SeriesSummary {
  std::string label;
  size_t runs = 0;  // that succeeded
  double tps_median = 0, tps_min = 0, tps_max = 0;
  double p50_median = 0, p99_median = 0, abort_median = 0;  // us, us, fraction
  // Median over the rounds of tps / the first label's tps in the same
  // round (rounds where either failed are left out); NaN if none.
  double ratio_median = 0;
};

// Per label, in the order the labels first appear in `rows`.
std::vector<SeriesSummary> summarize(const std::vector<SeriesRow>& rows);

// "summary": [{"label", "runs", "tps_median", "tps_min", "tps_max",
// "p50_us_median", "p99_us_median", "abort_rate_median",
// "vs_first_median"}] as the next key of an open JSON object.
void write_summary(JsonWriter& j, const std::vector<SeriesSummary>& s);

// Prints the table — `column` heads the labels; committed/s, p50/p99,
// abort % and the ratio to the first run that succeeded; with rounds, the
// medians, the range of committed/s and the median ratio per round — and
// returns the first failure, with `context(label)` around it (ok when none
// failed).
Status print_series(const std::string& column, const std::vector<SeriesRow>& rows,
                    const std::function<std::string(const std::string&)>& context);

// The number after "key": in a JSON text drtmx-bench wrote; NaN if absent.
double report_number(const std::string& json, const std::string& key);

}  // namespace drtmx::bench
