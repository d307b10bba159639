#include "bench_series.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace drtmx::bench {

namespace {

// The median of `v` (the mean of the middle two for an even count); NaN if
// empty.
double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

uint32_t rounds_of(const std::vector<SeriesRow>& rows) {
  uint32_t r = 1;
  for (const SeriesRow& row : rows) r = std::max(r, row.round);
  return r;
}

}  // namespace

double report_number(const std::string& json, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = json.find(k);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + at + k.size(), nullptr);
}

std::vector<SeriesRow> run_series(std::vector<BenchOptions> points,
                                  const std::vector<std::string>& labels,
                                  const std::function<std::string(size_t)>& heading,
                                  const std::function<Status(const BenchOptions&)>& run,
                                  uint32_t rounds) {
  std::vector<SeriesRow> rows;
  const std::string json_prefix = "/tmp/drtmx-bench-" + std::to_string(getpid()) + "-run-";
  for (uint32_t round = 1; round <= rounds; ++round) {
    for (size_t k = 0; k < points.size(); ++k) {
      const size_t i = round % 2 == 1 ? k : points.size() - 1 - k;
      BenchOptions& one = points[i];
      one.json = json_prefix + std::to_string(rows.size()) + ".json";
      std::cout << "== " << heading(i);
      if (rounds > 1) std::cout << " (round " << round << " of " << rounds << ")";
      std::cout << std::endl;
      SeriesRow r{labels[i], round, "", run(one)};
      std::ifstream in(one.json);
      std::ostringstream text;
      text << in.rdbuf();
      r.json = text.str();
      std::remove(one.json.c_str());
      if (r.status.is_ok() && r.json.empty()) r.status = internal_error("the run wrote no report");
      rows.push_back(std::move(r));
      if (run_interrupted()) return rows;
    }
  }
  return rows;
}

std::vector<SeriesSummary> summarize(const std::vector<SeriesRow>& rows) {
  std::vector<SeriesSummary> out;
  if (rows.empty()) return out;
  std::vector<std::string> labels;
  for (const SeriesRow& r : rows) {
    if (std::find(labels.begin(), labels.end(), r.label) == labels.end()) labels.push_back(r.label);
  }
  // The first label's committed/s in each round (NaN where it failed).
  auto tps_in = [&](const std::string& label, uint32_t round) {
    for (const SeriesRow& r : rows) {
      if (r.label == label && r.round == round && r.status.is_ok()) {
        return report_number(r.json, "tps");
      }
    }
    return std::nan("");
  };
  for (const std::string& label : labels) {
    SeriesSummary s;
    s.label = label;
    std::vector<double> tps, p50, p99, aborts, ratios;
    for (const SeriesRow& r : rows) {
      if (r.label != label || !r.status.is_ok()) continue;
      const double t = report_number(r.json, "tps");
      if (std::isnan(t)) continue;
      tps.push_back(t);
      p50.push_back(report_number(r.json, "p50_us"));
      p99.push_back(report_number(r.json, "p99_us"));
      aborts.push_back(report_number(r.json, "abort_rate"));
      const double base = tps_in(labels.front(), r.round);
      if (base > 0) ratios.push_back(t / base);
    }
    s.runs = tps.size();
    if (!tps.empty()) {
      s.tps_min = *std::min_element(tps.begin(), tps.end());
      s.tps_max = *std::max_element(tps.begin(), tps.end());
    }
    s.tps_median = median(tps);
    s.p50_median = median(p50);
    s.p99_median = median(p99);
    s.abort_median = median(aborts);
    s.ratio_median = median(ratios);
    out.push_back(std::move(s));
  }
  return out;
}

void write_summary(JsonWriter& j, const std::vector<SeriesSummary>& summary) {
  // JSON has no NaN: a label without a successful run (or without a round
  // beside the first label's) gets null there.
  auto num = [&](double v, int precision) {
    if (std::isnan(v)) {
      j.raw("null");
    } else {
      j.value(v, precision);
    }
  };
  j.key("summary").begin_array();
  for (const SeriesSummary& s : summary) {
    j.begin_object().key("label").value(s.label).key("runs").value(uint64_t{s.runs});
    j.key("tps_median");
    num(s.tps_median, 1);
    j.key("tps_min");
    num(s.runs ? s.tps_min : std::nan(""), 1);
    j.key("tps_max");
    num(s.runs ? s.tps_max : std::nan(""), 1);
    j.key("p50_us_median");
    num(s.p50_median, 1);
    j.key("p99_us_median");
    num(s.p99_median, 1);
    j.key("abort_rate_median");
    num(s.abort_median, 6);
    j.key("vs_first_median");
    num(s.ratio_median, 4);
    j.end_object();
  }
  j.end_array();
}

Status print_series(const std::string& column, const std::vector<SeriesRow>& rows,
                    const std::function<std::string(const std::string&)>& context) {
  const int width = static_cast<int>(std::max<size_t>(10, column.size() + 1));
  Status first_error;
  for (const SeriesRow& r : rows) {
    if (!r.status.is_ok() && first_error.is_ok()) {
      first_error = r.status.with_context(context(r.label));
    }
  }
  std::ostringstream table;
  const uint32_t rounds = rounds_of(rows);
  if (rounds > 1) {
    // Medians over the rounds; the ratio is taken within each round.
    table << std::left << std::setw(width) << column
          << " committed/s (median, min - max)   p50 us   p99 us   abort %   vs first (median of "
          << rounds << " rounds)\n";
    for (const SeriesSummary& s : summarize(rows)) {
      table << std::left << std::setw(width) << s.label;
      if (s.runs == 0) {
        table << " failed in every round\n";
        continue;
      }
      std::ostringstream range;
      range << std::fixed << std::setprecision(0) << s.tps_median << " (" << s.tps_min << " - "
            << s.tps_max << ")";
      table << " " << std::left << std::setw(33) << range.str() << std::right << std::fixed
            << std::setprecision(1) << std::setw(9) << s.p50_median << std::setw(9) << s.p99_median
            << std::setprecision(2) << std::setw(10) << 100 * s.abort_median;
      if (std::isnan(s.ratio_median)) {
        table << "        -";
      } else {
        table << std::setw(9) << s.ratio_median << "x";
      }
      if (s.runs < rounds) table << "   (" << rounds - s.runs << " failed)";
      table << "\n";
    }
    std::cout << "\n" << table.str();
    return first_error;
  }
  table << std::left << std::setw(width) << column
        << " committed/s   p50 us   p99 us   abort %   vs first\n";
  double base = std::nan("");
  for (const SeriesRow& r : rows) {
    table << std::left << std::setw(width) << r.label;
    if (!r.status.is_ok()) {
      table << " failed: " << r.status.message() << "\n";
      continue;
    }
    const double tps = report_number(r.json, "tps");
    if (std::isnan(base)) base = tps;
    table << std::right << std::fixed << std::setprecision(0) << std::setw(12) << tps
          << std::setprecision(1) << std::setw(9) << report_number(r.json, "p50_us") << std::setw(9)
          << report_number(r.json, "p99_us") << std::setprecision(2) << std::setw(10)
          << 100 * report_number(r.json, "abort_rate") << std::setw(9) << tps / base << "x\n";
  }
  std::cout << "\n" << table.str();
  return first_error;
}

}  // namespace drtmx::bench
