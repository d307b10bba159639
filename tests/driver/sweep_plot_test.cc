// drtmx-bench --sweep and --timeline-ms, and scripts/plot.py on the JSON of
// a sweep, a several-preset run and a single run: the points run with the
// swept value, every report carries a timeline whose intervals add up to
// the run's commits, and the plots come out as non-empty PNG files. Rounds
// (--rounds) run the series again in alternating order and compare medians
// and per-round ratios. Bad sweeps, rounds, timelines and reports are
// refused with the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_series.h"
#include "support/bench_run.h"

namespace {

namespace fs = std::filesystem;
using drtmx::bench::testing::json_number;
using drtmx::bench::testing::Outcome;
using drtmx::bench::testing::run;
using drtmx::bench::testing::slurp;

// Small accounts tables: these runs check what is run and written, not
// rates, and a node maps its regions' pages at start.
const std::string kQuick = " --bench=smallbank --nodes=3 --accounts=2000 --seconds=1 --warmup=0.2 ";
// Shorter still, where only the order and the shape of the runs count.
const std::string kShort =
    " --bench=smallbank --nodes=3 --accounts=2000 --seconds=0.4 --warmup=0.1 ";

class SweepPlot : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("drtmx_sweep_test_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

// Every timeline's committed/s values, in report order.
std::vector<std::vector<double>> timelines(const std::string& json) {
  std::vector<std::vector<double>> out;
  size_t at = 0;
  while ((at = json.find("\"timeline\"", at)) != std::string::npos) {
    const size_t open = json.find('[', at), close = json.find(']', open);
    if (open == std::string::npos || close == std::string::npos) break;
    std::vector<double> v;
    const char* p = json.c_str() + open + 1;
    const char* end = json.c_str() + close;
    while (p < end) {
      char* next = nullptr;
      const double x = std::strtod(p, &next);
      if (next == p) break;
      v.push_back(x);
      p = next;
      while (p < end && (*p == ',' || *p == ' ')) ++p;
    }
    out.push_back(v);
    at = close;
  }
  return out;
}

// A PNG file of some size.
void expect_png(const std::string& file) {
  ASSERT_TRUE(fs::exists(file)) << file;
  EXPECT_GT(fs::file_size(file), 2000u) << file;
  EXPECT_EQ(slurp(file).substr(1, 3), "PNG") << file;
}

Outcome plot(const std::string& args) {
  return run(DRTMX_PLOT_COMMAND, args, 120);
}

TEST_F(SweepPlot, ASweepRunsEveryPointWithItsTimelineAndPlots) {
  const std::string json = path("sweep.json");
  const Outcome o =
      run(DRTMX_BENCH_PATH, kQuick + "--sweep=coroutines=1,4 --timeline-ms=50 --json=" + json, 180);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("== --sweep point --coroutines=1"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("== --sweep point --coroutines=4"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("coroutines  committed/s"), std::string::npos) << o.output;
  const std::string j = slurp(json);
  EXPECT_NE(j.find("\"sweep\": {\"key\": \"coroutines\", \"values\": [\"1\", \"4\"]}"),
            std::string::npos)
      << j;
  // Each point ran with its value (its own report's config says so).
  const size_t p1 = j.find("\"coroutines\": 1,"), p4 = j.find("\"coroutines\": 4,");
  EXPECT_NE(p1, std::string::npos) << j;
  EXPECT_NE(p4, std::string::npos) << j;
  EXPECT_LT(p1, p4) << j;
  EXPECT_EQ(std::string::npos, j.find("\"error\"")) << j;
  // 1 s at 50 ms: 20 intervals per point, adding up to the point's commits.
  const std::vector<std::vector<double>> tls = timelines(j);
  ASSERT_EQ(tls.size(), 2u) << j;
  size_t from = 0;
  for (const std::vector<double>& tl : tls) {
    EXPECT_EQ(tl.size(), 20u) << j;
    double commits = 0;
    for (double x : tl) commits += x * 0.05;
    const std::string key = "\"report\": {\"tps\": ";  // the point's own rate
    const size_t at = j.find(key, from);
    ASSERT_NE(at, std::string::npos) << j;
    const double tps = std::strtod(j.c_str() + at + key.size(), nullptr);
    from = at + 1;
    EXPECT_GT(tps, 0) << j;
    // The timeline covers the measured window; the report's rate is over it.
    EXPECT_NEAR(commits, tps, 0.05 * tps + 50) << j;
  }
  const Outcome p = plot(json + " --out " + dir_);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  expect_png(path("sweep-sweep.png"));
  expect_png(path("sweep-timeline.png"));
}

TEST_F(SweepPlot, SeveralPresetsAndASingleRunPlot) {
  const std::string many = path("presets.json"), one = path("one.json");
  Outcome o = run(DRTMX_BENCH_PATH, kQuick + "--policy=drtmh,farm --json=" + many, 180);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  o = run(DRTMX_BENCH_PATH, kQuick + "--timeline-ms=1000 --json=" + one, 120);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_EQ(json_number(slurp(one), "interval_ms"), 1000) << slurp(one);
  ASSERT_EQ(timelines(slurp(one)).size(), 1u);
  EXPECT_EQ(timelines(slurp(one))[0].size(), 1u) << slurp(one);
  EXPECT_EQ(timelines(slurp(many)).size(), 2u) << slurp(many);
  const Outcome p = plot(many + " " + one);  // beside the reports
  ASSERT_EQ(p.exit_code, 0) << p.output;
  expect_png(path("presets-policies.png"));
  expect_png(path("presets-timeline.png"));
  expect_png(path("one-timeline.png"));
  EXPECT_FALSE(fs::exists(path("one-policies.png")));
}

// The order of the "== " headings in a run's output.
std::vector<std::string> headings(const std::string& output) {
  const std::string out = "\n" + output;
  std::vector<std::string> h;
  for (size_t at = 0; (at = out.find("\n== ", at)) != std::string::npos; ++at) {
    h.push_back(out.substr(at + 4, out.find('\n', at + 1) - at - 4));
  }
  return h;
}

// A row of a series with this committed/s, p50 and abort rate.
drtmx::bench::SeriesRow row(const std::string& label, uint32_t round, double tps) {
  char json[160];
  std::snprintf(json, sizeof json, "{\"tps\": %.1f, \"abort_rate\": 0.01, \"p50_us\": %.1f}", tps,
                tps / 10);
  return {label, round, json, drtmx::Status::ok()};
}

TEST(SeriesSummary, MediansAndRatiosWithinEachRound) {
  using drtmx::bench::summarize;
  // The machine doubles its speed after round 1 and halves it for round 4:
  // b is 0.8x a in every round, which only ratios within a round show.
  std::vector<drtmx::bench::SeriesRow> rows = {row("a", 1, 100), row("b", 1, 80),  row("b", 2, 160),
                                               row("a", 2, 200), row("a", 3, 200), row("b", 3, 160),
                                               row("b", 4, 40),  row("a", 4, 50)};
  std::vector<drtmx::bench::SeriesSummary> s = summarize(rows);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].label, "a");
  EXPECT_EQ(s[1].label, "b");
  EXPECT_EQ(s[0].runs, 4u);
  EXPECT_DOUBLE_EQ(s[0].tps_median, 150);  // 50 100 200 200
  EXPECT_DOUBLE_EQ(s[0].tps_min, 50);
  EXPECT_DOUBLE_EQ(s[0].tps_max, 200);
  EXPECT_DOUBLE_EQ(s[1].tps_median, 120);  // 40 80 160 160
  EXPECT_DOUBLE_EQ(s[1].p50_median, 12);
  EXPECT_DOUBLE_EQ(s[0].ratio_median, 1.0);
  EXPECT_DOUBLE_EQ(s[1].ratio_median, 0.8);
  // Across rounds (b's round 2 against a's round 1) it would be 1.6 or 0.2.
  // A failed run of the first label leaves that round's ratios out; a
  // failed run is not a sample.
  rows[0].status = drtmx::internal_error("node 1 exited");
  rows[7] = row("a", 4, 20);  // b is 2x a in round 4 now
  s = summarize(rows);
  EXPECT_EQ(s[0].runs, 3u);
  EXPECT_EQ(s[1].runs, 4u);
  EXPECT_DOUBLE_EQ(s[1].ratio_median, 0.8);  // rounds 2, 3, 4: 0.8 0.8 2.0
  EXPECT_DOUBLE_EQ(s[0].tps_median, 200);    // 20 200 200
  // Every run of a label failed: no numbers, and no ratio for anyone.
  for (auto& r : rows) {
    if (r.label == "a") r.status = drtmx::internal_error("no");
  }
  s = summarize(rows);
  EXPECT_EQ(s[0].runs, 0u);
  EXPECT_TRUE(std::isnan(s[0].tps_median));
  EXPECT_TRUE(std::isnan(s[1].ratio_median));
}

TEST_F(SweepPlot, RoundsAlternateTheOrderAndCompareMedians) {
  const std::string json = path("rounds.json");
  const Outcome o =
      run(DRTMX_BENCH_PATH, kShort + "--policy=drtmh,farm --rounds=3 --json=" + json, 300);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const std::vector<std::string> want = {
      "--policy=drtmh (round 1 of 3)", "--policy=farm (round 1 of 3)",
      "--policy=farm (round 2 of 3)",  "--policy=drtmh (round 2 of 3)",
      "--policy=drtmh (round 3 of 3)", "--policy=farm (round 3 of 3)"};
  EXPECT_EQ(headings(o.output), want) << o.output;
  EXPECT_NE(o.output.find("committed/s (median, min - max)"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("vs first (median of 3 rounds)"), std::string::npos) << o.output;
  const std::string j = slurp(json);
  EXPECT_NE(j.find("\"rounds\": 3"), std::string::npos) << j;
  EXPECT_EQ(timelines(j).size(), 6u) << j;  // every run's report
  const size_t sum = j.find("\"summary\": [");
  ASSERT_NE(sum, std::string::npos) << j;
  EXPECT_NE(j.find("\"label\": \"drtmh\", \"runs\": 3", sum), std::string::npos) << j;
  EXPECT_NE(j.find("\"label\": \"farm\", \"runs\": 3", sum), std::string::npos) << j;
  EXPECT_EQ(json_number(j.substr(sum), "vs_first_median"), 1.0) << j;  // drtmh against itself
  const Outcome p = plot(json + " --out " + dir_);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  expect_png(path("rounds-policies.png"));
  expect_png(path("rounds-timeline.png"));

  // A sweep of --durability with rounds: the durable options go to the
  // pmem points only, and each pmem run replaces the pools of the one
  // before (--format).
  // Pools in memory (/tmp may be a disk: msync per persist).
  const std::string pools = "/dev/shm/drtmx_rounds_test_" + std::to_string(getpid()),
                    sj = path("durable.json");
  struct RemoveAtExit {  // also when an assertion ends the test early
    std::string dir;
    ~RemoveAtExit() { fs::remove_all(dir); }
  } remove_pools{pools};
  const Outcome d = run(DRTMX_BENCH_PATH,
                        kShort + "--sweep=durability=off,pmem --pmem-dir=" + pools +
                            " --format --rounds=2 --json=" + sj,
                        300);
  ASSERT_EQ(d.exit_code, 0) << d.output;
  const std::vector<std::string> dwant = {"--sweep point --durability=off (round 1 of 2)",
                                          "--sweep point --durability=pmem (round 1 of 2)",
                                          "--sweep point --durability=pmem (round 2 of 2)",
                                          "--sweep point --durability=off (round 2 of 2)"};
  EXPECT_EQ(headings(d.output), dwant) << d.output;
  const std::string dj = slurp(sj);
  EXPECT_NE(dj.find("\"round\": 2"), std::string::npos) << dj;
  EXPECT_NE(dj.find("\"label\": \"pmem\", \"runs\": 2"), std::string::npos) << dj;
  EXPECT_EQ(std::string::npos, dj.find("\"error\"")) << dj;
  EXPECT_TRUE(fs::exists(pools + "/node0.journal.pool")) << d.output;
  const Outcome q = plot(sj + " --out " + dir_);
  ASSERT_EQ(q.exit_code, 0) << q.output;
  expect_png(path("durable-sweep.png"));
}

TEST_F(SweepPlot, BadSweepsTimelinesAndReportsAreRefusedWithTheReason) {
  const std::pair<std::string, std::string> cases[] = {
      {"--sweep=json=a.json", "--json cannot be swept"},
      {"--sweep=pmem-dir=/tmp", "--pmem-dir cannot be swept"},
      {"--sweep=coroutines", "expected KEY=V1,V2"},
      {"--sweep=coroutines=", "no values"},
      {"--sweep=coroutines=1,,2", "an empty value"},
      {"--sweep=coroutines=2,0", "--sweep point coroutines=0: --coroutines must be 1..256"},
      {"--sweep=nosuch=1", "--sweep point nosuch=1: unrecognised option"},
      {"--sweep=coroutines=1,2 --policy=drtmh,farm", "a sweep runs one preset per point"},
      {"--rounds=0", "--rounds must be 1..100"},
      {"--rounds=2 --durability=pmem --pmem-dir=/tmp/drtmx-rounds-x", "add --format"},
      {"--rounds=2 --durability=pmem --pmem-dir=/tmp/drtmx-rounds-x --format --crash-at=0.5",
       "--rounds=2 repeats runs: not with --crash-at"},
      {"--rounds=2 --kill-node=1@0.5", "repeats runs"},
      {"--pmem-dir=/tmp/drtmx-rounds-x --sweep=coroutines=1,2",
       "--pmem-dir needs --durability=pmem"},
      {"--timeline-ms=7", "--timeline-ms=7 must divide 1000"},
      {"--timeline-ms=5", "must divide 1000 and be at least 10"},
  };
  for (const auto& [args, message] : cases) {
    const Outcome o = run(DRTMX_BENCH_PATH, kQuick + args, 60);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.output;
    EXPECT_NE(o.output.find(message), std::string::npos) << args << "\n" << o.output;
    EXPECT_EQ(o.output.find("committed/s"), std::string::npos) << "it ran: " << args;
  }
  // plot.py: reports it cannot plot are named with the reason.
  std::FILE* f = std::fopen(path("not-a-report.json").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"hello\": 1}\n", f);
  std::fclose(f);
  f = std::fopen(path("broken.json").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"tps\": ", f);
  std::fclose(f);
  const Outcome p = plot(path("not-a-report.json") + " " + path("broken.json") + " " +
                         path("missing.json") + " --out " + dir_);
  EXPECT_EQ(p.exit_code, 1) << p.output;
  EXPECT_NE(p.output.find("not-a-report.json: not a drtmx-bench report"), std::string::npos)
      << p.output;
  EXPECT_NE(p.output.find("broken.json: not JSON"), std::string::npos) << p.output;
  EXPECT_NE(p.output.find("missing.json: cannot read it"), std::string::npos) << p.output;
  // --out names a file: refused; a directory that does not exist yet:
  // created.
  const Outcome q = plot(path("not-a-report.json") + " --out " + path("broken.json"));
  EXPECT_NE(q.exit_code, 0);
  EXPECT_NE(q.output.find("exists and is not a directory"), std::string::npos) << q.output;
  const Outcome r = plot(path("not-a-report.json") + " --out " + path("new/dir"));
  EXPECT_EQ(r.exit_code, 1) << r.output;  // (the report itself is refused)
  EXPECT_TRUE(fs::is_directory(path("new/dir"))) << r.output;
}

// Where sweep points go: counts at even steps, quantities with a unit on
// a linear axis, words at even steps.
TEST_F(SweepPlot, CountsPlotAtEvenStepsQuantitiesOnALinearAxis) {
  const std::string script =
      "import importlib.util as u, sys; "
      "s = u.spec_from_file_location('plot', '" DRTMX_PLOT_PY
      "'); m = u.module_from_spec(s); "
      "s.loader.exec_module(m); "
      "print(m.sweep_positions('coroutines', ['1', '2', '4', '8'])); "
      "print(m.sweep_positions('fabric-delay-ns', ['0', '1000', '5000'])); "
      "print(m.sweep_positions('policy', ['farm', 'drtmh']))";
  const Outcome o = run(DRTMX_PYTHON, "-c \"" + script + "\"", 60);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("([0, 1, 2, 3], True)"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("([0.0, 1000.0, 5000.0], False)"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("([0, 1], True)"), std::string::npos) << o.output;
}

}  // namespace
