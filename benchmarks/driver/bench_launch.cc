// drtmx-bench's launcher: a coordinator in this process, the nodes as
// drtmx-node processes (or threads with --inprocess), one run per policy
// preset, and a summary table when several presets were asked for.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "bench.h"
#include "json_writer.h"
#include "local_cluster.h"
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

std::string fmt_seconds(double s) {
  std::ostringstream os;
  os << std::setprecision(3) << s;
  return os.str();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// The line a run that crashed on purpose ends with.
std::string crash_line(const BenchOptions& o, const std::string& what) {
  return "drtmx-bench: " + what + " — no clean shutdown; the pools in " + o.pmem_dir +
         " hold what survived. Restart with --recover (same --pmem-dir, nodes, threads, "
         "coroutines, replicas and workload scale; the cluster name may differ).";
}

// One run of one preset: the nodes, the coordinator, cleanup.
Status run_once(const BenchOptions& o) {
  const bool shm = o.fabric.backend == "shm";
  if (shm) r2::remove_shm_segments(o.fabric.cluster);
  if (o.durable && !o.recover) {
    std::error_code ec;
    std::filesystem::create_directories(o.pmem_dir, ec);
    if (ec) {
      return io_error("--pmem-dir=" + o.pmem_dir + ": cannot create the directory (" +
                          ec.message() + "); give a writable directory",
                      ec.value());
    }
  } else if (o.recover && !std::filesystem::is_directory(o.pmem_dir)) {
    return not_found("--pmem-dir=" + o.pmem_dir +
                     " is not a directory: nothing to recover (start without --recover to "
                     "create a database there)");
  }
  // --crash-at: when the nodes began measuring (the first "measuring"
  // publication), by the steady clock.
  auto measuring = std::make_shared<std::atomic<int64_t>>(0);
  auto server = start_coordinator(
      o, "127.0.0.1:0", [measuring](uint16_t, const std::string& topic, const std::string&) {
        int64_t zero = 0;
        if (topic == "measuring") {
          measuring->compare_exchange_strong(
              zero, std::chrono::steady_clock::now().time_since_epoch().count());
        }
      });
  if (!server.is_ok()) return server.status();
  const std::string coord = "127.0.0.1:" + std::to_string((*server)->port());
  const auto limit =
      std::chrono::milliseconds(static_cast<int64_t>((o.seconds + o.warmup) * 1000) + 180000);
  const uint16_t nodes = o.fabric.num_nodes;
  Status result;
  bool crashed = false;  // we SIGKILLed the nodes (--crash-at)
  std::string crash_what;
  if (!o.inprocess) {
    const std::string self = self_exe();
    const std::string exe = self.substr(0, self.rfind('/') + 1) + "drtmx-node";
    if (access(exe.c_str(), X_OK) != 0) {
      result = not_found(exe +
                         " is missing: drtmx-bench starts its nodes with the drtmx-node that is "
                         "built beside it (rebuild, or use --inprocess)");
    }
    ProcessGroup group;
    // A crash is a crash: the others go down at once, not by SIGTERM.
    if (o.crash_requested()) group.set_stop_signal(SIGKILL);
    for (int n = 0; n < nodes && result.is_ok(); ++n) {
      result = group.spawn("node " + std::to_string(n), exe, o.node_args(n, coord));
    }
    std::function<void()> poll;
    if (o.crash_at > 0) {
      poll = [&] {
        const int64_t t = measuring->load();
        if (crashed || t == 0) return;
        const auto since = std::chrono::steady_clock::now().time_since_epoch() -
                           std::chrono::steady_clock::duration(t);
        if (since < std::chrono::duration<double>(o.crash_at)) return;
        group.signal_all(SIGKILL);
        crashed = true;
      };
    }
    if (result.is_ok()) result = group.wait_all(limit, poll);
    if (crashed) {
      crash_what = "SIGKILLed all " + std::to_string(nodes) + " node processes " +
                   fmt_seconds(o.crash_at) + " s into the measured run (--crash-at)";
      result = Status::ok();
    } else if (!o.crash_name.empty()) {
      // The crash node's SIGKILL must be the first failure (not the stop
      // signal that another node's failure brought).
      const std::vector<ProcessGroup::Ended> ended = group.ended();
      const bool hit = !result.is_ok() && o.crash_node < static_cast<int>(ended.size()) &&
                       ended[o.crash_node].signal == SIGKILL &&
                       result.message() == "node " + std::to_string(o.crash_node) +
                                               " was killed by signal " + std::to_string(SIGKILL);
      if (hit) {
        crash_what = "node " + std::to_string(o.crash_node) + " killed itself at crash point " +
                     o.crash_name + " (occurrence " + std::to_string(o.crash_hit) +
                     ") and the others were SIGKILLed";
        result = Status::ok();
        crashed = true;
      } else if (result.is_ok()) {
        result = not_found("--crash-point=" + o.crash_name + ":" + std::to_string(o.crash_node) +
                           ":" + std::to_string(o.crash_hit) +
                           " was never reached: the run ended normally (lower HIT, or run "
                           "longer)");
      }
    } else if (o.crash_at > 0 && result.is_ok()) {
      result = internal_error(
          "--crash-at: the run ended before the crash (no node reported "
          "its measured run)");
    }
  } else {
    result =
        run_node_threads(nodes, [&](uint16_t n) { return run_bench_node(as_node(o, n, coord)); });
  }
  if (result.is_ok() && !crashed) result = (*server)->wait_done(std::chrono::milliseconds(5000));
  if (o.fabric.survive_failures)
    std::cout << lease_summary(**server, o.fabric.lease_ms) << std::endl;
  if (shm) r2::remove_shm_segments(o.fabric.cluster);
  if (crashed) std::cout << crash_line(o, crash_what) << std::endl;
  return result;
}

}  // namespace

Result<std::unique_ptr<r2::ControlServer>> start_coordinator(
    const BenchOptions& o, const std::string& listen,
    std::function<void(uint16_t node, const std::string& topic, const std::string& blob)> also) {
  auto progress = std::make_shared<Progress>();
  r2::ControlServerConfig sc =
      coordinator_config(o.fabric, listen, std::chrono::milliseconds(o.join_timeout_ms));
  const int nodes = o.fabric.num_nodes;
  sc.on_publish = [progress, nodes, also](uint16_t node, const std::string& topic,
                                          const std::string& blob) {
    if (also) also(node, topic, blob);
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
