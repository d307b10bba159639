// drtmx-bench's launcher: a coordinator in this process, the nodes as
// drtmx-node processes (or threads with --inprocess), one run per policy
// preset, and a summary table when several presets were asked for.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "bench.h"
#include "bench_series.h"
#include "history.h"
#include "json_writer.h"
#include "local_cluster.h"
#include "memory_watch.h"
#include "node_options.h"
#include "process_group.h"
#include "r2/common/clock.h"
#include "r2/shm/segment.h"
#include "r2/shm/shm_fabric.h"
#include "rdpma/dir_probe.h"
#include "workload.h"

namespace drtmx::bench {
namespace {

// Progress lines: every node publishes "second commits" once a second; the
// line is printed when all nodes reported that second.
struct Progress {
  std::mutex mu;
  std::map<int, std::pair<std::vector<bool>, uint64_t>> seconds;  // second -> (reported, commits)
  std::vector<bool> live;  // members (survive-failures: removed nodes report no more)
};

// A node on this host is the kernel's OOM victim before its launcher
// (oom_score_adj +500; raising it needs no privilege), so that the
// launcher lives to say which node the kernel killed and what it held —
// under a memory cgroup the launcher, large itself in a sanitizer build,
// was taken instead. Best effort: a node that already ended is no error.
void prefer_node_as_oom_victim(pid_t pid) {
  if (pid <= 0) return;
  std::ofstream f("/proc/" + std::to_string(pid) + "/oom_score_adj");
  if (f) f << 500;
}

std::string fmt_seconds(double s) {
  std::ostringstream os;
  os << std::setprecision(3) << s;
  return os.str();
}

// The line a run that crashed on purpose ends with.
std::string crash_line(const BenchOptions& o, const std::string& what) {
  return "drtmx-bench: " + what + " — no clean shutdown; the pools in " + o.pmem_dir +
         " hold what survived. Restart with --recover (same --pmem-dir, nodes, threads, "
         "coroutines, replicas and workload scale; the cluster name may differ).";
}

// SIGINT/SIGTERM while a run's node processes run: the signal number (the
// handler only stores it; the launcher's wait loop acts on it).
std::atomic<int> g_interrupted{0};

void on_interrupt(int sig) {
  g_interrupted.store(sig, std::memory_order_relaxed);
}

// Installs on_interrupt for SIGINT and SIGTERM while alive; restores the
// previous actions after.
class InterruptScope {
 public:
  InterruptScope() {
    g_interrupted.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~InterruptScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == 0) return "127.0.0.1";
  return name;
}

// A failover test's crash point: when the node killed itself (its file).
// --partition-node: the command that cuts node `node`'s host off the
// network ("down") or joins it again ("up"), bounded in time.
std::string link_command(const BenchOptions& o, const std::string& what, size_t node) {
  return "timeout -k 2 20 " + o.link_shell + " " + what + " " + shell_quote(o.hosts[node].host);
}

uint64_t read_killed_file(const BenchOptions& o) {
  std::ifstream in(o.kill_dir() + "/killed_ns");
  uint64_t v = 0;
  return (in >> v) ? v : 0;
}

// Where the coordinator listens, and the host:port at which the nodes
// reach it (once it listens: coordinator_at).
struct CoordinatorPlace {
  std::string bind;       // an address, or "*"
  std::string advertise;  // the host the nodes connect to
};

Result<CoordinatorPlace> coordinator_place(const BenchOptions& o) {
  if (o.hosts.empty()) {
    // One host: the nodes are local.
    const std::string bind = o.coordinator_bind.empty() ? "127.0.0.1" : o.coordinator_bind;
    return CoordinatorPlace{bind, bind == "*" || bind == "0.0.0.0" ? "127.0.0.1" : bind};
  }
  CoordinatorPlace p;
  if (!o.coordinator_bind.empty()) {
    p.bind = o.coordinator_bind;
  } else if (!o.coordinator_host.empty()) {
    p.bind = o.coordinator_host;
  } else {
    auto a = coordinator_bind_address(o.hosts);
    if (!a) return a.status();
    p.bind = *a;
  }
  const bool every = p.bind == "*" || p.bind == "0.0.0.0";
  p.advertise = !o.coordinator_host.empty() ? o.coordinator_host : every ? this_host() : p.bind;
  return p;
}

// One run of one preset: the nodes, the coordinator, cleanup. A run has a
// cluster key of its own (or --cluster-key-file's; one read from standard
// input is read once, by read_launcher_key).
Status run_cluster(const BenchOptions& given) {
  BenchOptions keyed = given;
  if (keyed.fabric.cluster_key.empty()) {
    DRTMX_RETURN_IF_ERROR(resolve_cluster_key(given.cluster_key_file, -1, keyed.fabric));
  }
  const BenchOptions& o = keyed;
  const bool shm = o.fabric.backend == "shm";
  if (shm) {
    r2::remove_shm_segments(o.fabric.cluster);
    const std::string swept = r2::shm::remove_orphan_segments("drtmxbench").summary();
    if (!swept.empty()) std::cout << "drtmx-bench: " << swept << std::endl;
  }
  const bool remote = !o.hosts.empty();
  // --hosts: each node creates (or recovers from) its --pmem-dir on its own
  // host; this machine holds none of them.
  if (o.durable && !o.recover && !remote) {
    std::error_code ec;
    std::filesystem::create_directories(o.pmem_dir, ec);
    if (ec) {
      return io_error("--pmem-dir=" + o.pmem_dir + ": cannot create the directory (" +
                          ec.message() + "); give a writable directory",
                      ec.value());
    }
  } else if (o.recover && !remote && !std::filesystem::is_directory(o.pmem_dir)) {
    return not_found("--pmem-dir=" + o.pmem_dir +
                     " is not a directory: nothing to recover (start without --recover to "
                     "create a database there)");
  }
  if (o.durable && !remote) {
    // What persisting there means, before anything runs: a disk directory
    // makes every persist an msync.
    auto probe = rdpma::probe_dir(o.pmem_dir);
    if (!probe.is_ok()) return probe.status();
    std::cout << "drtmx-bench: " << probe->line() << std::endl;
  }
  if (!remote && !o.recover) {
    // Know before you run: what loading takes against what this host has.
    auto wl = make_workload(o);
    if (!wl.is_ok()) return wl.status();
    const uint16_t replicas =
        o.replicas != 0 ? o.replicas : static_cast<uint16_t>(std::min<int>(3, o.fabric.num_nodes));
    auto cat = store::Catalog::create((*wl)->tables(), o.fabric.num_nodes, replicas);
    if (!cat.is_ok()) return cat.status();
    std::vector<LoadEstimate> need;
    for (uint16_t n = 0; n < o.fabric.num_nodes; ++n) {
      auto e = estimate_node(o, **wl, *cat, n);
      if (!e.is_ok()) return e.status();
      need.push_back(*e);
    }
    DRTMX_RETURN_IF_ERROR(
        check_fits(need, host_memory(), shm && o.fabric.num_nodes > 1 && !o.durable, o.bench));
  }
  // --crash-at: when the nodes began measuring (the first "measuring"
  // publication), by the steady clock.
  auto measuring = std::make_shared<std::atomic<int64_t>>(0);
  // --kill-node: when the coordinator removed nodes (r2::now_ns), and why.
  struct Removal {
    uint64_t at_ns = 0;
    uint64_t epoch = 0;
    std::string what;
  };
  auto removals = std::make_shared<std::pair<std::mutex, std::vector<Removal>>>();
  if (o.failover_run()) {
    std::error_code ec;
    std::filesystem::remove_all(o.kill_dir(), ec);
    std::filesystem::create_directories(o.kill_dir(), ec);
    if (ec) {
      return io_error(o.kill_dir() + ": cannot create the directory of the failover journals (" +
                          ec.message() + ")",
                      ec.value());
    }
  }
  auto place = coordinator_place(o);
  if (!place.is_ok()) return place.status();
  auto server = start_coordinator(
      o, place->bind + ":0",
      [measuring](uint16_t, const std::string& topic, const std::string&) {
        int64_t zero = 0;
        if (topic == "measuring") {
          measuring->compare_exchange_strong(
              zero, std::chrono::steady_clock::now().time_since_epoch().count());
        }
      },
      [removals](const r2::MembershipChange& c) {
        Removal r;
        r.at_ns = r2::now_ns();
        r.epoch = c.epoch;
        for (const r2::Removal& x : c.removed) {
          r.what += (r.what.empty() ? "" : "; ") + x.reason;
        }
        std::lock_guard<std::mutex> g(removals->first);
        removals->second.push_back(std::move(r));
      });
  if (!server.is_ok()) return server.status();
  const std::string coord = place->advertise + ":" + std::to_string((*server)->port());
  const auto limit =
      std::chrono::milliseconds(static_cast<int64_t>((o.seconds + o.warmup) * 1000) + 180000);
  const uint16_t nodes = o.fabric.num_nodes;
  Status result;
  bool crashed = false;    // we SIGKILLed the nodes (--crash-at)
  uint64_t killed_ns = 0;  // failover: the first fault (r2::now_ns); 1: it found no process
  // Failover: per fault, 0 = pending, 1 = injected (kStop: stopped), 2 = done.
  std::vector<int> fault_state(o.faults.size(), 0);
  std::vector<std::chrono::steady_clock::time_point> stopped_at(o.faults.size());
  std::string crash_what;
  if (!o.inprocess) {
    const std::string self = self_exe();
    const std::string sibling =
        o.node_exe.empty() ? self.substr(0, self.rfind('/') + 1) + "drtmx-node" : o.node_exe;
    const std::string exe = remote && !o.remote_exe.empty() ? o.remote_exe : sibling;
    if (exe == sibling && access(exe.c_str(), X_OK) != 0) {
      result = not_found(exe +
                         " is missing: drtmx-bench starts its nodes with the drtmx-node that is "
                         "built beside it (rebuild, or use --inprocess)");
    }
    InterruptScope interrupts;
    bool interrupted = false;
    ProcessGroup group;
    MemoryWatch watch(o.fabric.cluster, nodes);
    std::vector<pid_t> pids(nodes, -1);
    // A crash is a crash: the others go down at once, not by SIGTERM.
    if (o.crash_requested() && !o.failover_run()) group.set_stop_signal(SIGKILL);
    for (int n = 0; n < nodes && result.is_ok(); ++n) {
      if (remote) {
        // The key on the remote shell's standard input, which it forwards
        // to the node (as ssh does).
        result = group.spawn(
            "node " + std::to_string(n) + " (" + o.hosts[n].host + ")", "/bin/sh",
            {"-c", remote_start(o.remote_shell, o.hosts[n].host, exe, o.node_args(n, coord))},
            key_stdin(o.fabric));
      } else {
        result = group.spawn("node " + std::to_string(n), exe, o.node_args(n, coord),
                             key_stdin(o.fabric));
        if (result.is_ok()) prefer_node_as_oom_victim(group.pid(static_cast<size_t>(n)));
      }
    }
    for (const BenchOptions::Fault& f : o.faults) {
      // A failover test's crash point: that node kills itself; the rest go on.
      if (f.kind == BenchOptions::Fault::kCrashPoint) group.expect_end(static_cast<size_t>(f.node));
    }
    // A stopped node resumes, a cut-off host joins the network again: when
    // the fault's time is up, or the run ended before.
    auto end_fault = [&](size_t i) {
      const BenchOptions::Fault& f = o.faults[i];
      const size_t node = static_cast<size_t>(f.node);
      if (f.kind == BenchOptions::Fault::kPartition) {
        if (std::system(link_command(o, "up", node).c_str()) != 0) {
          std::cout << "drtmx-bench: --link-shell could not join " << o.hosts[node].host
                    << " to the network again: " << link_command(o, "up", node) << std::endl;
        }
      } else if (f.kind == BenchOptions::Fault::kStop && remote) {
        (void)std::system(
            remote_signal(o.remote_shell, o.hosts[node].host, o.fabric.cluster, f.node, "CONT", 20)
                .c_str());
      } else if (f.kind == BenchOptions::Fault::kStop) {
        group.signal_one(node, SIGCONT);
      }
      fault_state[i] = 2;
    };
    std::function<void()> poll = [&] {
      if (!remote) {
        for (uint16_t i = 0; i < nodes; ++i) pids[i] = group.pid(i);
        watch.sample(pids);
      }
      if (!interrupted && g_interrupted.load(std::memory_order_relaxed) != 0) {
        interrupted = true;
        group.kill_all();
        return;
      }
      if (o.failover_run()) {
        const int64_t t = measuring->load();
        if (t == 0) return;
        const auto now = std::chrono::steady_clock::now();
        const auto since = now.time_since_epoch() - std::chrono::steady_clock::duration(t);
        for (size_t i = 0; i < o.faults.size(); ++i) {
          const BenchOptions::Fault& f = o.faults[i];
          const size_t node = static_cast<size_t>(f.node);
          if (f.kind == BenchOptions::Fault::kCrashPoint) continue;  // the node's own
          if (fault_state[i] == 0 && since >= std::chrono::duration<double>(f.at)) {
            // The time first (the survivors' report measures from it).
            if (killed_ns == 0) {
              killed_ns = r2::now_ns();
              std::ofstream(o.kill_dir() + "/killed_ns") << killed_ns << "\n";
            }
            bool ok = false;
            if (f.kind == BenchOptions::Fault::kPartition) {
              // The process runs on; its host leaves the network.
              group.expect_end(node);
              ok = std::system(link_command(o, "down", node).c_str()) == 0;
              stopped_at[i] = now;
            } else if (remote) {
              // The node runs on its host: signalled there, through the
              // remote shell, as ssh would need (the local remote shell
              // may end in any way then).
              group.expect_end(node);
              const bool kill = f.kind == BenchOptions::Fault::kKill;
              ok = std::system(remote_signal(o.remote_shell, o.hosts[node].host, o.fabric.cluster,
                                             f.node, kill ? "KILL" : "STOP", 20)
                                   .c_str()) == 0;
              stopped_at[i] = now;
            } else if (f.kind == BenchOptions::Fault::kKill) {
              ok = group.kill_one(node, SIGKILL);
            } else {
              group.expect_end(node);
              ok = group.signal_one(node, SIGSTOP);
              stopped_at[i] = now;
            }
            fault_state[i] = f.kind == BenchOptions::Fault::kKill ? 2 : 1;
            if (!ok) killed_ns = 1;
          } else if (fault_state[i] == 1 &&
                     now - stopped_at[i] >= std::chrono::duration<double, std::milli>(f.stop_ms)) {
            end_fault(i);
          }
        }
        return;
      }
      if (o.crash_at > 0) {
        const int64_t t = measuring->load();
        if (crashed || t == 0) return;
        const auto since = std::chrono::steady_clock::now().time_since_epoch() -
                           std::chrono::steady_clock::duration(t);
        if (since < std::chrono::duration<double>(o.crash_at)) return;
        if (remote) {
          // Every host at once, through the remote shell.
          std::vector<std::string> kills;
          for (const HostLine& h : o.hosts) {
            kills.push_back(remote_stop(o.remote_shell, h.host, o.fabric.cluster, 20));
          }
          (void)std::system(all_at_once(kills).c_str());
        }
        group.signal_all(SIGKILL);
        crashed = true;
      }
    };
    if (result.is_ok()) result = group.wait_all(limit, poll);
    for (size_t i = 0; i < o.faults.size(); ++i) {
      if (fault_state[i] == 1) end_fault(i);
    }
    if (!remote) result = watch.explain(result);
    if (remote) {
      // Whatever ended the run, nothing of it stays on the hosts.
      for (const HostLine& h : o.hosts) {
        (void)std::system(remote_stop(o.remote_shell, h.host, o.fabric.cluster, 20).c_str());
      }
    }
    if (interrupted) {
      result = aborted("interrupted by signal " + std::to_string(g_interrupted.load()) +
                       ": stopped every node");
    }
    if (crashed) {
      crash_what = "SIGKILLed all " + std::to_string(nodes) + " node processes " +
                   fmt_seconds(o.crash_at) + " s into the measured run (--crash-at)";
      result = Status::ok();
    } else if (!o.crash_name.empty() && o.failover_run()) {
      // A failover test: the node killed itself at the crash point; the
      // others went on.
      const std::vector<ProcessGroup::Ended> ended = group.ended();
      const bool hit =
          o.crash_node < static_cast<int>(ended.size()) && ended[o.crash_node].signal == SIGKILL;
      if (result.is_ok() && !hit) {
        result = not_found("--crash-point=" + o.crash_name + ":" + std::to_string(o.crash_node) +
                           ":" + std::to_string(o.crash_hit) +
                           " was never reached: the run ended normally (lower HIT, or run "
                           "longer)");
      }
      killed_ns = hit ? read_killed_file(o) : 0;
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
    } else if (o.failover_run() && result.is_ok() &&
               o.faults.front().kind != BenchOptions::Fault::kCrashPoint && killed_ns <= 1) {
      result = internal_error("failover: node " + std::to_string(o.faults.front().node) +
                              (killed_ns == 0 ? " was not stopped: the run ended before"
                                              : " had already ended when it was to be stopped"));
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
  if (o.failover_run() && killed_ns > 1) {
    std::lock_guard<std::mutex> g(removals->first);
    for (const Removal& r : removals->second) {
      std::ostringstream ms;
      ms << std::fixed << std::setprecision(1)
         << double(int64_t(r.at_ns) - int64_t(killed_ns)) / 1e6;
      std::cout << "failover: epoch " << r.epoch << " removal by the coordinator " << ms.str()
                << " ms after the first fault (" << r.what << ")" << std::endl;
    }
  }
  if (o.failover_run()) {
    std::error_code ec;
    std::filesystem::remove_all(o.kill_dir(), ec);
  }
  if (shm) r2::remove_shm_segments(o.fabric.cluster);
  if (crashed) std::cout << crash_line(o, crash_what) << std::endl;
  return result;
}

// One run, with --history's merge and check around it.
Status run_once(const BenchOptions& o) {
  return run_with_history(o, [&] { return run_cluster(o); });
}

}  // namespace

Result<std::unique_ptr<r2::ControlServer>> start_coordinator(
    const BenchOptions& o, const std::string& listen,
    std::function<void(uint16_t node, const std::string& topic, const std::string& blob)> also,
    std::function<void(const r2::MembershipChange&)> removed) {
  auto progress = std::make_shared<Progress>();
  r2::ControlServerConfig sc =
      coordinator_config(o.fabric, listen, std::chrono::milliseconds(o.join_timeout_ms));
  const int nodes = o.fabric.num_nodes;
  progress->live.assign(nodes, true);
  // A second's line is printed once every live node reported it.
  auto print_ready = [progress, nodes] {
    for (auto it = progress->seconds.begin(); it != progress->seconds.end();) {
      bool all = true;
      for (int n = 0; n < nodes; ++n) all = all && (!progress->live[n] || it->second.first[n]);
      if (!all) return;
      std::cout << "  [" << it->first << " s] " << it->second.second << " committed/s" << std::endl;
      it = progress->seconds.erase(it);
    }
  };
  sc.on_publish = [progress, nodes, also, print_ready](uint16_t node, const std::string& topic,
                                                       const std::string& blob) {
    if (also) also(node, topic, blob);
    if (topic != "progress" || node >= nodes) return;
    std::istringstream is(blob);
    int sec = 0;
    uint64_t n = 0;
    if (!(is >> sec >> n)) return;
    std::lock_guard<std::mutex> g(progress->mu);
    auto& p = progress->seconds[sec];
    if (p.first.empty()) p.first.assign(nodes, false);
    p.first[node] = true;
    p.second += n;
    print_ready();
  };
  if (o.fabric.survive_failures) {
    sc.on_membership = [progress, nodes, removed, print_ready](const r2::MembershipChange& c) {
      if (removed) removed(c);
      std::lock_guard<std::mutex> g(progress->mu);
      progress->live.assign(nodes, false);
      for (uint16_t n : c.live) {
        if (n < nodes) progress->live[n] = true;
      }
      print_ready();
    };
  }
  return r2::ControlServer::start(sc);
}

bool run_interrupted() {
  return g_interrupted.load(std::memory_order_relaxed) != 0;
}

Status run_local_cluster(const BenchOptions& o) {
  if (o.policies.size() <= 1 && o.rounds <= 1) return run_once(o);
  // Several presets, or rounds: one run each (per round), then one table.
  std::vector<BenchOptions> points;
  for (const std::string& p : o.policies) {
    BenchOptions one = o;
    one.policy = p;
    one.policies = {p};
    one.rounds = 1;
    if (!o.history.empty() && o.policies.size() > 1) one.history = history_file_for(o.history, p);
    points.push_back(std::move(one));
  }
  const std::vector<SeriesRow> rows = run_series(
      std::move(points), o.policies, [&](size_t i) { return "--policy=" + o.policies[i]; },
      run_once, o.rounds);
  if (run_interrupted()) return rows.back().status;
  const Status first_error =
      print_series("policy", rows, [](const std::string& p) { return "--policy=" + p; });
  if (!o.json.empty()) {
    JsonWriter j;
    j.begin_object().key("runs").begin_array();
    for (const SeriesRow& r : rows) {
      if (r.status.is_ok()) {
        j.raw(r.json);
      } else {
        j.begin_object().key("policy").value(r.label).key("error").value(r.status.message());
        if (o.rounds > 1) j.key("round").value(r.round);
        j.end_object();
      }
    }
    j.end_array();
    if (o.rounds > 1) {
      // The runs above are in the order they ran: round 1 in --policy's
      // order, round 2 reversed, ...
      j.key("rounds").value(o.rounds);
      write_summary(j, summarize(rows));
    }
    j.end_object();
    std::string err;
    if (!write_file(o.json, j.str() + "\n", &err)) return io_error(err, errno);
  }
  return first_error;
}

}  // namespace drtmx::bench
