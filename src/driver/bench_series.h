// A series of runs (several presets, the points of a sweep): each run
// writes its JSON report to a file of ours, one after another, then one
// table of them. The caller writes the series' own JSON from the rows.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench.h"

namespace drtmx::bench {

struct SeriesRow {
  std::string label;  // the preset, or the swept value
  std::string json;   // the run's JSON report ("" when it failed early)
  Status status;
};

// Runs points[i] with `run` under the heading "== <heading(i)>", labelled
// labels[i]; stops after a run that SIGINT/SIGTERM interrupted (the rows so
// far are returned). A run that succeeded without a report is an error.
std::vector<SeriesRow> run_series(std::vector<BenchOptions> points,
                                  const std::vector<std::string>& labels,
                                  const std::function<std::string(size_t)>& heading,
                                  const std::function<Status(const BenchOptions&)>& run);

// Prints the table — `column` heads the labels; committed/s, p50/p99,
// abort % and the ratio to the first run that succeeded — and returns the
// first failure, with `context(label)` around it (ok when none failed).
Status print_series(const std::string& column, const std::vector<SeriesRow>& rows,
                    const std::function<std::string(const std::string&)>& context);

// The number after "key": in a JSON text drtmx-bench wrote; NaN if absent.
double report_number(const std::string& json, const std::string& key);

}  // namespace drtmx::bench
