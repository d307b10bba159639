#include "bench_series.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace drtmx::bench {

double report_number(const std::string& json, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = json.find(k);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(json.c_str() + at + k.size(), nullptr);
}

std::vector<SeriesRow> run_series(std::vector<BenchOptions> points,
                                  const std::vector<std::string>& labels,
                                  const std::function<std::string(size_t)>& heading,
                                  const std::function<Status(const BenchOptions&)>& run) {
  std::vector<SeriesRow> rows;
  for (size_t i = 0; i < points.size(); ++i) {
    BenchOptions& one = points[i];
    one.json =
        "/tmp/drtmx-bench-" + std::to_string(getpid()) + "-run-" + std::to_string(i) + ".json";
    std::cout << "== " << heading(i) << std::endl;
    SeriesRow r{labels[i], "", run(one)};
    std::ifstream in(one.json);
    std::ostringstream text;
    text << in.rdbuf();
    r.json = text.str();
    std::remove(one.json.c_str());
    if (r.status.is_ok() && r.json.empty()) r.status = internal_error("the run wrote no report");
    rows.push_back(std::move(r));
    if (run_interrupted()) break;
  }
  return rows;
}

Status print_series(const std::string& column, const std::vector<SeriesRow>& rows,
                    const std::function<std::string(const std::string&)>& context) {
  const int width = static_cast<int>(std::max<size_t>(10, column.size() + 1));
  std::ostringstream table;
  table << std::left << std::setw(width) << column
        << " committed/s   p50 us   p99 us   abort %   vs first\n";
  double base = std::nan("");
  Status first_error;
  for (const SeriesRow& r : rows) {
    table << std::left << std::setw(width) << r.label;
    if (!r.status.is_ok()) {
      table << " failed: " << r.status.message() << "\n";
      if (first_error.is_ok()) first_error = r.status.with_context(context(r.label));
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
