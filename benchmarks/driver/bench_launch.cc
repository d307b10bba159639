// drtmx-bench's launcher: a coordinator in this process, the nodes as
// drtmx-node processes (or threads with --inprocess), one run per policy
// preset, and a summary table when several presets were asked for.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "bench.h"
#include "json_writer.h"
#include "process_group.h"
#include "r2/shm/shm_fabric.h"

namespace drtmx::bench {
namespace {

// Progress lines: every node publishes "second commits" once a second; the
// line is printed when all nodes reported that second.
struct Progress {
  std::mutex mu;
  std::map<int, std::pair<int, uint64_t>> seconds;  // second -> (nodes reported, commits)
};

// The number after "key": in a JSON text this program wrote (no general
// parsing needed); NaN when absent.
double json_number(const std::string& text, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = text.find(k);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + at + k.size(), nullptr);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// One run of one preset: the nodes, the coordinator, cleanup.
Status run_once(const BenchOptions& o) {
  const bool shm = o.fabric.backend == "shm";
  if (shm) r2::remove_shm_segments(o.fabric.cluster);
  auto server = start_coordinator(o, "127.0.0.1:0");
  if (!server.is_ok()) return server.status();
  const std::string coord = "127.0.0.1:" + std::to_string((*server)->port());
  const auto limit =
      std::chrono::milliseconds(static_cast<int64_t>((o.seconds + o.warmup) * 1000) + 180000);
  const uint16_t nodes = o.fabric.num_nodes;
  Status result;
  if (!o.inprocess) {
    const std::string self = self_exe();
    const std::string exe = self.substr(0, self.rfind('/') + 1) + "drtmx-node";
    if (access(exe.c_str(), X_OK) != 0) {
      result = not_found(exe +
                         " is missing: drtmx-bench starts its nodes with the drtmx-node that is "
                         "built beside it (rebuild, or use --inprocess)");
    }
    ProcessGroup group;
    for (int n = 0; n < nodes && result.is_ok(); ++n) {
      result = group.spawn("node " + std::to_string(n), exe, o.node_args(n, coord));
    }
    if (result.is_ok()) result = group.wait_all(limit);
  } else {
    std::vector<std::thread> ts;
    std::vector<Status> st(nodes);
    for (uint16_t n = 0; n < nodes; ++n) {
      ts.emplace_back([&, n] {
        BenchOptions mine = o;
        mine.node = n;
        mine.fabric.node = n;
        mine.coordinator = coord;
        st[n] = run_bench_node(mine);
      });
    }
    for (auto& t : ts) t.join();
    for (uint16_t n = 0; n < nodes; ++n) {
      if (!st[n].is_ok() && result.is_ok())
        result = st[n].with_context("node " + std::to_string(n));
    }
  }
  if (result.is_ok()) result = (*server)->wait_done(std::chrono::milliseconds(5000));
  if (shm) r2::remove_shm_segments(o.fabric.cluster);
  return result;
}

}  // namespace

Result<std::unique_ptr<r2::ControlServer>> start_coordinator(const BenchOptions& o,
                                                             const std::string& listen) {
  auto progress = std::make_shared<Progress>();
  r2::ControlServerConfig sc;
  sc.listen = listen;
  sc.cluster = o.fabric.cluster;
  sc.num_nodes = o.fabric.num_nodes;
  sc.join_timeout = std::chrono::milliseconds(o.join_timeout_ms);
  const int nodes = o.fabric.num_nodes;
  sc.on_publish = [progress, nodes](uint16_t, const std::string& topic, const std::string& blob) {
    if (topic != "progress") return;
    std::istringstream is(blob);
    int sec = 0;
    uint64_t n = 0;
    if (!(is >> sec >> n)) return;
    std::lock_guard<std::mutex> g(progress->mu);
    auto& p = progress->seconds[sec];
    p.first += 1;
    p.second += n;
    if (p.first == nodes)
      std::cout << "  [" << sec << " s] " << p.second << " committed/s" << std::endl;
  };
  return r2::ControlServer::start(sc);
}

Status run_local_cluster(const BenchOptions& o) {
  if (o.policies.size() <= 1) return run_once(o);
  // Several presets: each run writes its JSON report to a file of ours.
  struct Row {
    std::string policy, json;
    Status status;
  };
  std::vector<Row> rows;
  for (const std::string& p : o.policies) {
    BenchOptions one = o;
    one.policy = p;
    one.policies = {p};
    one.json = "/tmp/drtmx-bench-" + std::to_string(getpid()) + "-" + p + ".json";
    std::cout << "== --policy=" << p << std::endl;
    Row r{p, "", run_once(one)};
    r.json = read_file(one.json);
    std::remove(one.json.c_str());
    rows.push_back(std::move(r));
  }
  std::ostringstream table;
  table << "policy     committed/s   p50 us   p99 us   abort %   vs " << rows[0].policy << "\n";
  const double base = json_number(rows[0].json, "tps");
  Status first_error;
  for (const Row& r : rows) {
    if (!r.status.is_ok()) {
      table << std::left << std::setw(10) << r.policy << " failed: " << r.status.message() << "\n";
      if (first_error.is_ok()) first_error = r.status.with_context("--policy=" + r.policy);
      continue;
    }
    const double tps = json_number(r.json, "tps");
    table << std::left << std::setw(10) << r.policy << std::right << std::fixed
          << std::setprecision(0) << std::setw(12) << tps << std::setprecision(1) << std::setw(9)
          << json_number(r.json, "p50_us") << std::setw(9) << json_number(r.json, "p99_us")
          << std::setprecision(2) << std::setw(10) << 100 * json_number(r.json, "abort_rate")
          << std::setw(8) << tps / base << "x\n";
  }
  std::cout << "\n" << table.str();
  if (!o.json.empty()) {
    JsonWriter j;
    j.begin_object().key("runs").begin_array();
    for (const Row& r : rows) {
      if (r.status.is_ok() && !r.json.empty()) {
        j.raw(r.json);
      } else {
        j.begin_object().key("policy").value(r.policy).key("error").value(r.status.message());
        j.end_object();
      }
    }
    j.end_array().end_object();
    std::string err;
    if (!write_file(o.json, j.str() + "\n", &err)) return io_error(err, errno);
  }
  return first_error;
}

}  // namespace drtmx::bench
