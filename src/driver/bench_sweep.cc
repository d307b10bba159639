// drtmx-bench --sweep=KEY=V1,V2,...: the same experiment once per value of
// one option, a table of the points, one JSON file with all of them.
//
// Each point is the command line itself with --KEY=V in place of whatever
// gave --KEY (so any option a run takes can be swept, workload options
// included), parsed again and run like a run without --sweep. Every point
// is parsed before the first one runs: a bad value fails at once.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "bench.h"
#include "bench_series.h"
#include "history.h"
#include "json_writer.h"

namespace drtmx::bench {
namespace {

// Options a sweep may not vary: they name files, nodes or the launcher's
// own plumbing, or are switches without a value.
constexpr const char* kNotSweepable[] = {"sweep",
                                         "json",
                                         "config",
                                         "node",
                                         "coordinator",
                                         "host-coordinator",
                                         "help",
                                         "cluster",
                                         "pmem-dir",
                                         "crash-at",
                                         "format",
                                         "recover",
                                         "crash-point",
                                         "inprocess",
                                         "local",
                                         "journal-kb",
                                         "hosts",
                                         "remote-exe",
                                         "remote-shell",
                                         "coordinator-host",
                                         "coordinator-bind",
                                         "cluster-key-file"};

// argv[1..] without any --KEY / --sweep (in either the --K=V or the --K V
// form), then --KEY=value.
std::vector<std::string> point_args(int argc, char** argv, const std::string& key,
                                    const std::string& value) {
  std::vector<std::string> out;
  auto names = [](const std::string& a, const std::string& k) {
    return a == "--" + k || a.rfind("--" + k + "=", 0) == 0;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    // A durability=off point: the durable options belong to the pmem points.
    const bool durable_only =
        key == "durability" && value == "off" &&
        (names(a, "pmem-dir") || names(a, "format") || names(a, "lock-words"));
    if (names(a, key) || names(a, "sweep") || durable_only) {
      // "--KEY V": the value is the next argument (unless it is an option;
      // --format takes none).
      const bool separate = a.find('=') == std::string::npos && !names(a, "format");
      if (separate && i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) ++i;
      continue;
    }
    out.push_back(a);
  }
  out.push_back("--" + key + "=" + value);
  return out;
}

Result<BenchOptions> parse_point(int argc, char** argv, const std::string& key,
                                 const std::string& value, const std::vector<WorkloadInfo>& known) {
  std::vector<std::string> args = point_args(argc, argv, key, value);
  std::vector<char*> v;
  v.push_back(argv[0]);
  for (std::string& a : args) v.push_back(a.data());
  auto o = parse_bench(static_cast<int>(v.size()), v.data(), known);
  if (!o.is_ok()) return o.status().with_context("--sweep point " + key + "=" + value);
  return o;
}

}  // namespace

Result<Sweep> parse_sweep(const std::string& spec) {
  const std::string what = "--sweep=" + spec;
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    return invalid_argument(what + ": expected KEY=V1,V2,... (e.g. coroutines=1,2,4,8)");
  Sweep s;
  s.key = spec.substr(0, eq);
  if (s.key.rfind("--", 0) == 0) s.key = s.key.substr(2);
  for (const char* k : kNotSweepable) {
    if (s.key == k) {
      return invalid_argument(what + ": --" + s.key +
                              " cannot be swept (it names files, nodes or the launcher's own "
                              "plumbing, or takes no value)");
    }
  }
  std::istringstream is(spec.substr(eq + 1));
  std::string v;
  while (std::getline(is, v, ',')) {
    if (v.empty()) return invalid_argument(what + ": an empty value in the list");
    s.values.push_back(v);
  }
  if (s.values.empty()) return invalid_argument(what + ": no values");
  if (!spec.empty() && spec.back() == ',')
    return invalid_argument(what + ": an empty value in the list");
  if (s.values.size() > 64) return invalid_argument(what + ": at most 64 values");
  return s;
}

Result<std::vector<BenchOptions>> sweep_points(int argc, char** argv, const BenchOptions& o) {
  auto sw = parse_sweep(o.sweep);
  if (!sw.is_ok()) return sw.status();
  if (sw->key != "policy" && o.policies.size() > 1) {
    std::string list;
    for (const std::string& p : o.policies) list += (list.empty() ? "" : ",") + p;
    return invalid_argument("--sweep=" + o.sweep + " with --policy=" + list +
                            ": a sweep runs one preset per point (sweep policy=... to compare "
                            "presets)");
  }
  std::vector<BenchOptions> points;
  for (const std::string& v : sw->values) {
    auto p = parse_point(argc, argv, sw->key, v, o.known ? *o.known : workloads());
    if (!p.is_ok()) return p.status();
    if (p->policies.size() > 1) {
      return invalid_argument("--sweep point policy=" + v + ": one preset per point");
    }
    p->sweep.clear();
    p->rounds = 1;  // the sweep runs its rounds itself
    p->node_exe = o.node_exe;
    p->fabric.cluster_key = o.fabric.cluster_key;  // read once (standard input)
    points.push_back(std::move(*p));
  }
  return points;
}

Status run_sweep(const BenchOptions& o, std::vector<BenchOptions> points) {
  auto sw = parse_sweep(o.sweep);
  if (!sw.is_ok()) return sw.status();
  if (points.size() != sw->values.size()) return internal_error("sweep: points and values differ");
  // --history: a file per point (h.jsonl -> h.KEY=VALUE.jsonl).
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i].history.empty())
      points[i].history = history_file_for(points[i].history, sw->key + "=" + sw->values[i]);
  }
  const std::vector<SeriesRow> rows = run_series(
      std::move(points), sw->values,
      [&](size_t i) { return "--sweep point --" + sw->key + "=" + sw->values[i]; },
      run_local_cluster, o.rounds);
  if (run_interrupted()) return rows.back().status;
  const Status first_error =
      print_series(sw->key, rows, [](const std::string& v) { return "--sweep point " + v; });
  if (!o.json.empty()) {
    JsonWriter j;
    j.begin_object().key("sweep").begin_object().key("key").value(sw->key);
    j.key("values").begin_array();
    for (const std::string& v : sw->values) j.value(v);
    j.end_array().end_object();
    if (o.rounds > 1) j.key("rounds").value(o.rounds);
    j.key("points").begin_array();
    for (const SeriesRow& r : rows) {
      j.begin_object().key("value").value(r.label);
      if (o.rounds > 1) j.key("round").value(r.round);
      if (r.status.is_ok()) {
        j.key("report").raw(r.json);
      } else {
        j.key("error").value(r.status.message());
      }
      j.end_object();
    }
    j.end_array();
    if (o.rounds > 1) write_summary(j, summarize(rows));
    j.end_object();
    std::string err;
    if (!write_file(o.json, j.str() + "\n", &err)) return io_error(err, errno);
  }
  return first_error;
}

}  // namespace drtmx::bench
