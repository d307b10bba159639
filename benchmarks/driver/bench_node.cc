// One node of a drtmx-bench run: build the catalog, start the TxnNode, load,
// run the workload's transactions on every coroutine (retrying aborts with
// randomized exponential back-off), measure a window, drain, audit; node 0
// gathers every node's results, checks the workload's invariants and
// prints the report (and the JSON file).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "base/histogram.h"
#include "bench.h"
#include "json_writer.h"
#include "r2/common/clock.h"
#include "txn/txn_node.h"

namespace drtmx::bench {
namespace {

constexpr uint32_t kMaxAttempts = 10000;  // per transaction, then it counts as given up

// Aborts of one reason on one table (txn::Engine::abort_table()).
struct TableAborts {
  uint64_t reason, table, count;
};

// Adds `n` aborts of `reason` on `table` (a short list: linear search).
void count_abort(std::vector<TableAborts>& v, uint64_t reason, uint64_t table, uint64_t n) {
  for (TableAborts& x : v) {
    if (x.reason == reason && x.table == table) {
      x.count += n;
      return;
    }
  }
  v.push_back({reason, table, n});
}

struct alignas(64) CoCounters {
  std::vector<uint64_t> committed;         // per type, measured window
  std::vector<uint64_t> type_aborts;       // per type: aborted attempts, window
  std::vector<uint64_t> ro_blocked;        // per type: DEP_READ reads that waited, window
  std::vector<uint64_t> ro_wait_ns;        // per type: their wait, window
  std::vector<uint8_t> read_only;          // per type: drawn as read-only
  uint64_t aborts[txn::kAbortKinds] = {};  // measured window
  std::vector<TableAborts> by_table;       // measured window
  uint64_t given_up = 0;
  LatencyHistogram hist;
  std::atomic<uint64_t> total{0};  // all commits in the window (progress)
};

struct Shared {
  std::atomic<int> phase{0};  // 0 warm-up, 1 measuring, 2 stop
};

// The MVCC version stores of a node (all zero without MVCC), and of the
// cluster once merged.
struct VersionTotals {
  uint64_t capacity = 0, in_use = 0, peak = 0, pushed = 0, reclaimed = 0, gc_runs = 0, refused = 0,
           reserved_bytes = 0, in_use_bytes = 0;

  static VersionTotals of(const dst::VersionStoreStats& v) {
    // in-use bytes: each slot is its store's capacity's share of its bytes
    const uint64_t used = v.capacity ? v.bytes / v.capacity * v.in_use : 0;
    return {v.capacity, v.in_use, v.peak, v.pushed, v.reclaimed, v.gc_runs, v.full, v.bytes, used};
  }
  // Sums, but the peak is the largest of any node.
  void merge(const VersionTotals& o) {
    capacity += o.capacity, in_use += o.in_use, peak = std::max(peak, o.peak);
    pushed += o.pushed, reclaimed += o.reclaimed, gc_runs += o.gc_runs, refused += o.refused;
    reserved_bytes += o.reserved_bytes, in_use_bytes += o.in_use_bytes;
  }
  std::vector<uint64_t> fields() const {
    return {capacity, in_use,  peak,           pushed,      reclaimed,
            gc_runs,  refused, reserved_bytes, in_use_bytes};
  }
  static bool from(const std::vector<uint64_t>& f, VersionTotals* v) {
    if (f.empty()) return true;  // a node without MVCC
    if (f.size() != 9) return false;
    *v = {f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]};
    return true;
  }
};

// What a node reports to node 0 (text, through the control plane).
struct NodeResult {
  uint64_t window_ns = 0;
  std::vector<uint64_t> committed;                                       // per type
  std::vector<uint64_t> type_aborts, ro_blocked, ro_wait_ns, read_only;  // per type
  VersionTotals versions;
  std::vector<uint64_t> aborts;  // per reason
  std::vector<TableAborts> by_table;
  uint64_t given_up = 0;
  LatencyHistogram hist;
  std::vector<int64_t> node_audit, client_sums;

  std::string encode() const {
    std::ostringstream os;
    os << window_ns << ' ' << given_up << ' ' << committed.size();
    for (uint64_t c : committed) os << ' ' << c;
    os << ' ' << aborts.size();
    for (uint64_t a : aborts) os << ' ' << a;
    os << ' ' << by_table.size();
    for (const TableAborts& t : by_table) os << ' ' << t.reason << ' ' << t.table << ' ' << t.count;
    os << ' ' << node_audit.size();
    for (int64_t v : node_audit) os << ' ' << v;
    os << ' ' << client_sums.size();
    for (int64_t v : client_sums) os << ' ' << v;
    os << ' ' << hist.encode();
    const std::vector<uint64_t> vf = versions.fields();
    for (const auto* v : {&type_aborts, &ro_blocked, &ro_wait_ns, &read_only, &vf}) {
      os << ' ' << v->size();
      for (uint64_t x : *v) os << ' ' << x;
    }
    return os.str();
  }
  static bool decode(const std::string& s, NodeResult* r) {
    std::istringstream is(s);
    size_t n = 0;
    auto vec = [&](auto& v) {
      if (!(is >> n) || n > 1000) return false;
      v.resize(n);
      for (auto& x : v) {
        if (!(is >> x)) return false;
      }
      return true;
    };
    auto triples = [&](std::vector<TableAborts>& v) {
      if (!(is >> n) || n > 100000) return false;
      v.resize(n);
      for (auto& t : v) {
        if (!(is >> t.reason >> t.table >> t.count)) return false;
      }
      return true;
    };
    std::string h;
    std::vector<uint64_t> vf;
    return (is >> r->window_ns >> r->given_up) && vec(r->committed) && vec(r->aborts) &&
           triples(r->by_table) && vec(r->node_audit) && vec(r->client_sums) && (is >> h) &&
           r->hist.decode(h) && vec(r->type_aborts) && vec(r->ro_blocked) && vec(r->ro_wait_ns) &&
           vec(r->read_only) && vec(vf) && VersionTotals::from(vf, &r->versions);
  }
};

std::string fmt(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

void add_into(std::vector<int64_t>& acc, const std::vector<int64_t>& v) {
  if (acc.size() < v.size()) acc.resize(v.size(), 0);
  for (size_t i = 0; i < v.size(); ++i) acc[i] += v[i];
}

// "warehouse_ytd" for a table id of the catalog, "no table" for
// txn::Engine::kNoTable, else the number.
std::string table_name(const store::Catalog& cat, uint64_t id) {
  if (id == txn::Engine::kNoTable) return "no table";
  const store::TableSpec* t = cat.find(static_cast<store::TableId>(id));
  return t != nullptr ? t->name : "table " + std::to_string(id);
}

// The tables of one abort reason, most aborts first, as shares of that
// reason's aborts: "(district_next 61%, warehouse_ytd 30%, stock 9%)".
std::string blamed_tables(const store::Catalog& cat, const std::vector<TableAborts>& all,
                          int reason, uint64_t total) {
  std::vector<TableAborts> v;
  for (const TableAborts& t : all) {
    if (t.reason == uint64_t(reason)) v.push_back(t);
  }
  if (v.empty() || total == 0) return "";
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  std::string out = "(";
  for (size_t i = 0; i < v.size() && i < 4; ++i) {
    if (i) out += ", ";
    out += table_name(cat, v[i].table) + " " + fmt(100.0 * double(v[i].count) / double(total), 0) +
           "%";
  }
  if (v.size() > 4) out += ", ...";
  return out + ")";
}

Status report(const BenchOptions& o, const Workload& wl, const store::Catalog& cat,
              const txn::Policy& policy, uint16_t replicas, const std::vector<NodeResult>& rs) {
  const std::vector<std::string> types = wl.txn_types();
  std::vector<uint64_t> committed(types.size(), 0), aborts(txn::kAbortKinds, 0);
  std::vector<uint64_t> type_aborts(types.size(), 0), ro_blocked(types.size(), 0),
      ro_wait_ns(types.size(), 0), read_only(types.size(), 0);
  VersionTotals versions;
  std::vector<TableAborts> by_table;
  std::vector<int64_t> node_sums, client_sums;
  LatencyHistogram h;
  double tps = 0;
  uint64_t given_up = 0;
  for (const NodeResult& r : rs) {
    for (size_t i = 0; i < committed.size() && i < r.committed.size(); ++i) {
      committed[i] += r.committed[i];
      if (r.window_ns > 0) tps += double(r.committed[i]) * 1e9 / double(r.window_ns);
    }
    for (size_t i = 0; i < aborts.size() && i < r.aborts.size(); ++i) aborts[i] += r.aborts[i];
    for (size_t i = 0; i < types.size(); ++i) {
      if (i < r.type_aborts.size()) type_aborts[i] += r.type_aborts[i];
      if (i < r.ro_blocked.size()) ro_blocked[i] += r.ro_blocked[i];
      if (i < r.ro_wait_ns.size()) ro_wait_ns[i] += r.ro_wait_ns[i];
      if (i < r.read_only.size()) read_only[i] |= r.read_only[i];
    }
    versions.merge(r.versions);
    for (const TableAborts& t : r.by_table) count_abort(by_table, t.reason, t.table, t.count);
    given_up += r.given_up;
    h.merge(r.hist);
    add_into(node_sums, r.node_audit);
    add_into(client_sums, r.client_sums);
  }
  const Status check = wl.check(node_sums, client_sums);
  uint64_t total_commits = 0, total_aborts = 0;
  for (uint64_t c : committed) total_commits += c;
  for (size_t i = 1; i < aborts.size(); ++i) total_aborts += aborts[i];
  const double abort_rate = total_commits + total_aborts == 0
                                ? 0
                                : double(total_aborts) / double(total_commits + total_aborts);
  const double p50 = double(h.quantile(0.5)) / 1e3, p99 = double(h.quantile(0.99)) / 1e3,
               p999 = double(h.quantile(0.999)) / 1e3;
  std::ostringstream cfg;
  cfg << "bench=" << o.bench << " fabric=" << o.fabric.backend << " nodes=" << o.fabric.num_nodes
      << " threads=" << o.fabric.threads << " coroutines=" << o.coroutines
      << " replicas=" << replicas << " policy=" << policy.preset << " (" << policy.describe()
      << ") seconds=" << o.seconds << " warmup=" << o.warmup
      << (o.inprocess ? " inprocess" : " processes") << " " << wl.describe();
  std::cout << "drtmx-bench " << cfg.str() << "\n"
            << "  committed/s " << fmt(tps, 0) << "   abort rate " << fmt(abort_rate * 100, 2)
            << "%   latency p50 " << fmt(p50, 1) << " us  p99 " << fmt(p99, 1) << " us  p999 "
            << fmt(p999, 1) << " us\n";
  const double window_s = rs.empty() || rs[0].window_ns == 0 ? 1 : double(rs[0].window_ns) / 1e9;
  for (size_t i = 0; i < types.size(); ++i) {
    const uint64_t attempts = committed[i] + type_aborts[i];
    std::cout << "  " << std::left << std::setw(18) << types[i] << std::setw(10)
              << (fmt(double(committed[i]) / window_s, 0) + "/s") << " aborted attempts "
              << type_aborts[i] << " ("
              << fmt(attempts ? 100.0 * double(type_aborts[i]) / double(attempts) : 0, 1) << "%)"
              << (read_only[i] ? "  read-only" : "") << "\n";
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (!read_only[i]) continue;
    std::cout << "  " << types[i] << " lock waits: " << ro_blocked[i] << " reads blocked, total "
              << fmt(double(ro_wait_ns[i]) / 1e6, 1) << " ms, "
              << fmt(committed[i] ? double(ro_wait_ns[i]) / 1e3 / double(committed[i]) : 0, 2)
              << " us per transaction\n";
  }
  if (versions.capacity != 0) {
    std::cout << "  version store: " << versions.in_use << " versions in use ("
              << fmt(double(versions.in_use_bytes) / 1048576.0, 1) << " MiB) of "
              << versions.capacity << " capacity ("
              << fmt(double(versions.reserved_bytes) / 1048576.0, 1)
              << " MiB reserved), peak per node " << versions.peak << ", pushed " << versions.pushed
              << ", reclaimed " << versions.reclaimed << " in " << versions.gc_runs
              << " GC runs, refused " << versions.refused << "\n";
  }
  std::vector<double> rates;
  for (uint64_t c : committed) rates.push_back(double(c) / window_s);
  if (const std::string extra = wl.report(rates); !extra.empty()) std::cout << extra;
  for (int i = 1; i < txn::kAbortKinds; ++i) {
    if (aborts[i] == 0) continue;
    std::cout << "  abort " << std::left << std::setw(18)
              << txn::abort_name(static_cast<txn::Abort>(i))
              << fmt(100.0 * double(aborts[i]) / double(total_commits + total_aborts), 3) << "%  "
              << blamed_tables(cat, by_table, i, aborts[i]) << "\n";
  }
  if (given_up)
    std::cout << "  transactions given up after " << kMaxAttempts << " attempts: " << given_up
              << "\n";
  std::cout << "  check: " << (check.is_ok() ? "ok" : check.message()) << "\n";
  if (!o.json.empty()) {
    JsonWriter j;
    j.begin_object();
    j.key("tps").value(tps).key("abort_rate").value(abort_rate);
    j.key("p50_us").value(p50, 3).key("p99_us").value(p99, 3).key("p999_us").value(p999, 3);
    j.key("per_type").begin_object();
    for (size_t i = 0; i < types.size(); ++i)
      j.key(types[i]).value(double(committed[i]) / window_s);
    j.end_object();
    j.key("per_type_aborts").begin_object();
    for (size_t i = 0; i < types.size(); ++i) j.key(types[i]).value(type_aborts[i]);
    j.end_object();
    j.key("ro_lock_wait").begin_object();
    for (size_t i = 0; i < types.size(); ++i) {
      if (!read_only[i]) continue;
      j.key(types[i]).begin_object();
      j.key("blocked_reads").value(ro_blocked[i]);
      j.key("wait_us").value(double(ro_wait_ns[i]) / 1e3, 1);
      j.key("wait_us_per_txn")
          .value(committed[i] ? double(ro_wait_ns[i]) / 1e3 / double(committed[i]) : 0.0, 3);
      j.end_object();
    }
    j.end_object();
    if (versions.capacity != 0) {
      j.key("version_store").begin_object();
      j.key("capacity").value(versions.capacity).key("in_use").value(versions.in_use);
      j.key("peak_per_node").value(versions.peak).key("pushed").value(versions.pushed);
      j.key("reclaimed").value(versions.reclaimed).key("gc_runs").value(versions.gc_runs);
      j.key("refused").value(versions.refused).key("reserved_bytes").value(versions.reserved_bytes);
      j.key("in_use_bytes").value(versions.in_use_bytes);
      j.end_object();
    }
    j.key("aborts").begin_object();
    for (int i = 1; i < txn::kAbortKinds; ++i) {
      j.key(txn::abort_name(static_cast<txn::Abort>(i))).value(aborts[i]);
    }
    j.end_object();
    j.key("aborts_by_table").begin_object();
    for (int i = 1; i < txn::kAbortKinds; ++i) {
      if (aborts[i] == 0) continue;
      j.key(txn::abort_name(static_cast<txn::Abort>(i))).begin_object();
      for (const TableAborts& t : by_table) {
        if (t.reason == uint64_t(i)) j.key(table_name(cat, t.table)).value(t.count);
      }
      j.end_object();
    }
    j.end_object();
    j.key("check").value(check.is_ok() ? std::string("ok") : check.message());
    j.key("config").begin_object();
    j.key("bench").value(o.bench).key("fabric").value(o.fabric.backend);
    j.key("nodes")
        .value(unsigned{o.fabric.num_nodes})
        .key("threads")
        .value(unsigned{o.fabric.threads});
    j.key("coroutines").value(unsigned{o.coroutines}).key("replicas").value(unsigned{replicas});
    j.key("policy").value(policy.preset).key("phases").value(policy.describe());
    j.key("seconds").value(o.seconds, 3).key("warmup").value(o.warmup, 3);
    j.key("processes").value(!o.inprocess).key("workload").value(wl.describe());
    j.end_object();
    j.end_object();
    std::string err;
    if (!write_file(o.json, j.str() + "\n", &err)) return io_error(err, errno);
  }
  return check;
}

}  // namespace

Status run_bench_node(const BenchOptions& o) {
  auto wl = make_workload(o);
  if (!wl.is_ok()) return wl.status();
  const uint16_t nodes = o.fabric.num_nodes;
  const uint16_t replicas =
      o.replicas != 0 ? o.replicas : static_cast<uint16_t>(std::min<int>(3, nodes));
  auto cat = store::Catalog::create((*wl)->tables(), nodes, replicas);
  if (!cat.is_ok()) return cat.status();
  auto policy = txn::make_policy(o.policy, o.overrides, o.fabric.backend == "shm");
  if (!policy.is_ok()) return policy.status();
  txn::TxnNodeConfig cfg;
  cfg.fabric = o.fabric;
  cfg.fabric.node = static_cast<uint16_t>(o.node);
  cfg.control.coordinator = o.coordinator;
  cfg.control.fingerprint = {{"bench", o.bench},
                             {"policy", o.policy},
                             {"replicas", std::to_string(replicas)},
                             {"coroutines", std::to_string(o.coroutines)}};
  cfg.coroutines = o.coroutines;
  cfg.policy = *policy;
  cfg.log_ring_bytes = o.log_ring_kb * 1024;
  cfg.caches.xcache.refresh_keys_per_miss = o.xstore_refresh_keys;
  cfg.mvcc.versions_pct = o.versions_pct;
  cfg.arena_bytes = std::max(cfg.arena_bytes, (*wl)->arena_bytes());
  auto node = txn::TxnNode::start(*cat, cfg);
  if (!node.is_ok()) return node.status();
  txn::TxnNode& n = **node;
  auto fail = [&](const Status& s) {
    n.runtime().control().report_failure(s.message());
    return s;
  };
  if (Status st = (*wl)->load(n.store(), *cat); !st.is_ok())
    return fail(st.with_context("loading"));
  if (Status st = n.runtime().control().barrier("bench.loaded"); !st.is_ok()) return st;

  const size_t types = (*wl)->txn_types().size();
  const size_t cos = size_t{o.fabric.threads} * o.coroutines;
  std::vector<CoCounters> counters(cos);
  for (auto& c : counters) {
    c.committed.assign(types, 0);
    c.type_aborts.assign(types, 0);
    c.ro_blocked.assign(types, 0);
    c.ro_wait_ns.assign(types, 0);
    c.read_only.assign(types, 0);
  }
  std::vector<std::vector<int64_t>> sums(cos);
  Shared sh;
  const uint32_t first_index = uint32_t(o.node) * uint32_t(cos);
  Status st = n.run([&](txn::TxnContext& ctx) {
    const size_t me = ctx.index - first_index;
    CoCounters& cc = counters[me];
    auto client = (*wl)->client(ctx.index, o.seed);
    while (sh.phase.load(std::memory_order_relaxed) != 2) {
      TxnDraw d = client->next();
      const uint64_t t0 = r2::now_ns();
      bool done = false;
      for (uint32_t attempt = 0; attempt < kMaxAttempts; ++attempt) {
        const txn::Abort r = ctx.engine.run(d.proc, d.kind);
        const bool measuring = sh.phase.load(std::memory_order_relaxed) == 1;
        if (r == txn::Abort::kNone) {
          client->committed();
          if (measuring) {
            ++cc.committed[d.type];
            if (d.kind == txn::Kind::kReadOnly) {
              cc.read_only[d.type] = 1;
              cc.ro_blocked[d.type] += ctx.engine.last_read_wait().blocked_reads;
              cc.ro_wait_ns[d.type] += ctx.engine.last_read_wait().wait_ns;
            }
            cc.hist.record(r2::now_ns() - t0);
            cc.total.store(cc.total.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
          }
          done = true;
          break;
        }
        if (measuring) {
          ++cc.aborts[static_cast<int>(r)];
          ++cc.type_aborts[d.type];
          count_abort(cc.by_table, static_cast<uint64_t>(r), ctx.engine.abort_table(), 1);
        }
        if (r == txn::Abort::kUserAbort || sh.phase.load(std::memory_order_relaxed) == 2) {
          done = true;
          break;
        }
        // Randomized exponential back-off (by the clock).
        ctx.engine.backoff(attempt + 1);
      }
      if (!done) ++cc.given_up;
    }
    client->sums(sums[me]);
  });
  if (!st.is_ok()) return fail(st);
  auto total = [&] {
    uint64_t t = 0;
    for (auto& c : counters) t += c.total.load(std::memory_order_relaxed);
    return t;
  };
  auto sleep_s = [](double s) {
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(s * 1e6)));
  };
  sleep_s(o.warmup);
  sh.phase.store(1);
  const uint64_t t0 = r2::now_ns();
  uint64_t last = 0;
  for (int sec = 1; double(sec) <= o.seconds + 1e-9; ++sec) {
    sleep_s(1.0);
    const uint64_t now = total();
    (void)n.runtime().control().publish("progress",
                                        std::to_string(sec) + " " + std::to_string(now - last));
    last = now;
  }
  if (double(int(o.seconds)) < o.seconds) sleep_s(o.seconds - double(int(o.seconds)));
  const uint64_t window = r2::now_ns() - t0;
  sh.phase.store(2);
  st = n.finish(std::chrono::seconds(60));
  if (!st.is_ok()) return st;
  NodeResult mine;
  mine.window_ns = window;
  mine.committed.assign(types, 0);
  mine.aborts.assign(txn::kAbortKinds, 0);
  mine.type_aborts.assign(types, 0);
  mine.ro_blocked.assign(types, 0);
  mine.ro_wait_ns.assign(types, 0);
  mine.read_only.assign(types, 0);
  for (auto& c : counters) {
    for (size_t i = 0; i < types; ++i) {
      mine.committed[i] += c.committed[i];
      mine.type_aborts[i] += c.type_aborts[i];
      mine.ro_blocked[i] += c.ro_blocked[i];
      mine.ro_wait_ns[i] += c.ro_wait_ns[i];
      mine.read_only[i] |= c.read_only[i];
    }
    for (int i = 0; i < txn::kAbortKinds; ++i) mine.aborts[i] += c.aborts[i];
    for (const TableAborts& t : c.by_table) count_abort(mine.by_table, t.reason, t.table, t.count);
    mine.given_up += c.given_up;
    mine.hist.merge(c.hist);
  }
  for (auto& s : sums) add_into(mine.client_sums, s);
  if (const dst::MvccNode* m = n.mvcc()) mine.versions = VersionTotals::of(m->totals());
  auto audit = (*wl)->node_audit(n.store(), *cat);
  if (!audit.is_ok()) return fail(audit.status().with_context("audit"));
  mine.node_audit = *audit;
  auto all = n.runtime().control().exchange("bench.results", mine.encode());
  if (!all.is_ok()) return all.status();
  Status result;
  if (o.node == 0) {
    std::vector<NodeResult> rs(all->size());
    for (size_t i = 0; i < rs.size(); ++i) {
      if (!NodeResult::decode((*all)[i], &rs[i])) {
        return internal_error("node " + std::to_string(i) + " sent a malformed result");
      }
    }
    result = report(o, **wl, *cat, *policy, replicas, rs);
  }
  Status left = n.runtime().control().leave();
  return result.is_ok() ? left : result;
}

}  // namespace drtmx::bench
