// One node of a drtmx-bench run: build the catalog, start the TxnNode, load,
// run the workload's transactions on every coroutine (retrying aborts with
// randomized exponential back-off), measure a window, drain, audit; node 0
// gathers every node's results, checks the workload's invariants and
// prints the report (and the JSON file).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "base/histogram.h"
#include "bench.h"
#include "failover_report.h"
#include "journal.h"
#include "json_writer.h"
#include "r2/common/clock.h"
#include "recovery_check.h"
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
  std::vector<uint64_t> sib_waits;         // per type: reads that waited for a sibling, window
  std::vector<uint64_t> sib_wait_ns;       // per type: their wait, window
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

enum TrafficField : size_t {
  kTrCommitted,    // whole run
  kTrOpsPosted,    // one-sided ops through the fabric
  kTrMessagesOut,  // fabric messages sent
  kTrLogEntries,
  kTrLogBytes,
  kTrCpuNs,            // process CPU (user + system) in the measured window
  kTrWindowCommitted,  // commits in that window
  kTrFields
};

uint64_t process_cpu_ns() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& t) {
    return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_usec) * 1000ull;
  };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

// What a node reports to node 0 (text, through the control plane).
struct NodeResult {
  uint64_t window_ns = 0;
  std::vector<uint64_t> committed;                                       // per type
  std::vector<uint64_t> type_aborts, ro_blocked, ro_wait_ns, read_only;  // per type
  std::vector<uint64_t> sib_waits, sib_wait_ns;                          // per type
  // TrafficField: the node's traffic (whole run) and its process CPU
  // (measured window; 0 with --inprocess, where nodes share a process).
  std::vector<uint64_t> traffic;
  VersionTotals versions;
  std::vector<uint64_t> aborts;  // per reason
  std::vector<TableAborts> by_table;
  uint64_t given_up = 0;
  LatencyHistogram hist;
  std::vector<int64_t> node_audit, client_sums;
  std::vector<uint64_t> durability;  // DurabilityField (empty without durability)
  // Commits of each --timeline-ms interval of the measured window, in order
  // (whole intervals only).
  std::vector<uint64_t> timeline;

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
    for (const auto* v : {&type_aborts, &ro_blocked, &ro_wait_ns, &read_only, &vf, &durability,
                          &timeline, &sib_waits, &sib_wait_ns, &traffic}) {
      os << ' ' << v->size();
      for (uint64_t x : *v) os << ' ' << x;
    }
    return os.str();
  }
  static bool decode(const std::string& s, NodeResult* r) {
    std::istringstream is(s);
    size_t n = 0;
    auto vec = [&](auto& v, size_t limit = 1000) {
      if (!(is >> n) || n > limit) return false;
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
           vec(r->read_only) && vec(vf) && VersionTotals::from(vf, &r->versions) &&
           vec(r->durability) && vec(r->timeline, kMaxTimeline) && vec(r->sib_waits) &&
           vec(r->sib_wait_ns) && vec(r->traffic);
  }
  // A day at the finest --timeline-ms.
  static constexpr size_t kMaxTimeline = 86400u * 100;
};

// NodeResult::durability, by position.
enum DurabilityField : size_t {
  kPoolMode,      // r2::Persistence of the engine's pools
  kJournalMode,   // ... of the journal
  kPoolBytes,     // the engine's pool files
  kJournalBytes,  // the journal's ring bytes per coroutine
  kJournalRecords,
  kJournalFolds,
  kRecovered,  // 1: this run restarted from the pools
  kRebuildNs,
  kPartitions,
  kLiveRecords,
  kDeletedSlots,
  kTornSlots,
  kUncommittedSlots,
  kDuplicateSlots,
  kLogEntries,
  kLogCommitted,
  kLogDropped,
  kLogRecords,
  kLogReplayed,
  kLogShipped,          // records other nodes' rings held for this node's primaries
  kLogShippedReplayed,  // ... that repaired a primary copy
  kLogScanNs,
  kLogDecideNs,
  kLogReplayNs,
  kLogResetNs,
  kDurabilityFields
};

// What a run knows about its durability besides the node results.
struct DurableRun {
  bool recovered = false;
  RecoveryCheck check;  // a --recover run's
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

// The durability of a run: the report's lines and its JSON object.
struct DurabilitySummary {
  bool on = false, recovered = false;
  std::vector<std::string> modes;  // per node: "memfs" (journal "memfs")
  uint64_t pool_bytes = 0, journal_records = 0, journal_folds = 0, journal_ring = 0;
  uint64_t rebuild_ns = 0, replay_ns = 0, serve_ns = 0;  // the slowest node's
  uint64_t scan_ns = 0, decide_ns = 0, log_replay_ns = 0, reset_ns = 0;
  uint64_t partitions = 0, live = 0, scanned = 0, torn = 0, uncommitted = 0;
  uint64_t entries = 0, committed = 0, dropped = 0, records = 0, replayed = 0;
  uint64_t shipped = 0, shipped_replayed = 0;

  static DurabilitySummary of(const std::vector<NodeResult>& rs) {
    DurabilitySummary d;
    for (const NodeResult& r : rs) {
      const std::vector<uint64_t>& f = r.durability;
      if (f.size() != kDurabilityFields) continue;
      d.on = true;
      r2::Persistence pm = r2::Persistence::kNone, jm = r2::Persistence::kNone;
      (void)r2::persistence_from_code(static_cast<uint8_t>(f[kPoolMode]), &pm);
      (void)r2::persistence_from_code(static_cast<uint8_t>(f[kJournalMode]), &jm);
      std::string m = r2::persistence_name(pm);
      if (jm != pm) m += " (journal " + std::string(r2::persistence_name(jm)) + ")";
      d.modes.push_back(m);
      d.pool_bytes += f[kPoolBytes];
      d.journal_ring = f[kJournalBytes];
      d.journal_records += f[kJournalRecords];
      d.journal_folds += f[kJournalFolds];
      if (!f[kRecovered]) continue;
      d.recovered = true;
      // The times are the slowest node's (the cluster serves when it
      // does); its decide step includes waiting for the other nodes.
      const uint64_t logs = f[kLogScanNs] + f[kLogDecideNs] + f[kLogReplayNs] + f[kLogResetNs];
      if (f[kRebuildNs] + logs >= d.serve_ns) {
        d.serve_ns = f[kRebuildNs] + logs;
        d.rebuild_ns = f[kRebuildNs];
        d.replay_ns = logs;
        d.scan_ns = f[kLogScanNs];
        d.decide_ns = f[kLogDecideNs];
        d.log_replay_ns = f[kLogReplayNs];
        d.reset_ns = f[kLogResetNs];
      }
      d.partitions += f[kPartitions];
      d.live += f[kLiveRecords];
      d.scanned += f[kLiveRecords] + f[kDeletedSlots] + f[kTornSlots] + f[kUncommittedSlots] +
                   f[kDuplicateSlots];
      d.torn += f[kTornSlots];
      d.uncommitted += f[kUncommittedSlots];
      d.entries += f[kLogEntries];
      d.committed += f[kLogCommitted];
      d.dropped += f[kLogDropped];
      d.records += f[kLogRecords];
      d.replayed += f[kLogReplayed];
      d.shipped += f[kLogShipped];
      d.shipped_replayed += f[kLogShippedReplayed];
    }
    return d;
  }
};

std::string ms(uint64_t ns) {
  return fmt(double(ns) / 1e6, 1);
}

void print_durability(const BenchOptions& o, const DurabilitySummary& d, const DurableRun& run) {
  if (!d.on) return;
  std::cout << "  durability: pmem dir=" << o.pmem_dir
            << (o.locks_apart ? " (lock words in DRAM) —" : " (lock words in the pooled slots) —");
  for (size_t i = 0; i < d.modes.size(); ++i)
    std::cout << (i ? ", node" : " node") << i << " " << d.modes[i];
  std::cout << "; pools " << fmt(double(d.pool_bytes) / 1048576.0, 1) << " MiB; journal "
            << d.journal_records << " records written (" << d.journal_ring / 1024
            << " KiB per coroutine, " << d.journal_folds << " folds)\n";
  if (!d.recovered) return;
  std::cout << "  recovery: serving again after " << ms(d.serve_ns)
            << " ms (the slowest node): rebuild " << ms(d.rebuild_ns) << " ms + log replay "
            << ms(d.replay_ns) << " ms (scan " << ms(d.scan_ns) << ", decide with the others "
            << ms(d.decide_ns) << ", replay " << ms(d.log_replay_ns) << ", reset " << ms(d.reset_ns)
            << " ms); all nodes: " << d.scanned << " record slots scanned, " << d.live
            << " records and " << d.partitions << " partition indexes rebuilt (" << d.torn
            << " torn, " << d.uncommitted << " uncommitted slots), log entries " << d.entries
            << " found, " << d.committed << " committed, " << d.dropped << " dropped, "
            << d.replayed << " of " << d.records << " records replayed (" << d.shipped_replayed
            << " of " << d.shipped << " shipped from backups to primaries)\n";
  std::cout << "  " << run.check.line() << " (" << ms(run.check.check_ns) << " ms)\n";
}

void json_durability(JsonWriter& j, const BenchOptions& o, const DurabilitySummary& d,
                     const DurableRun& run) {
  j.key("durability").begin_object();
  j.key("mode").value(d.on ? "pmem" : "off");
  if (d.on) {
    j.key("dir").value(o.pmem_dir);
    j.key("lock_words").value(o.locks_apart ? "dram" : "slots");
    j.key("nodes").begin_array();
    for (const std::string& m : d.modes) j.value(m);
    j.end_array();
    j.key("pool_bytes").value(d.pool_bytes);
    j.key("journal_records").value(d.journal_records).key("journal_folds").value(d.journal_folds);
    j.key("journal_bytes_per_coroutine").value(d.journal_ring);
    j.key("recovered").value(d.recovered);
  }
  if (d.recovered) {
    j.key("recovery").begin_object();
    j.key("serve_ms").value(double(d.serve_ns) / 1e6, 3);
    j.key("rebuild_ms").value(double(d.rebuild_ns) / 1e6, 3);
    j.key("log_replay_ms").value(double(d.replay_ns) / 1e6, 3);
    j.key("scan_ms").value(double(d.scan_ns) / 1e6, 3);
    j.key("decide_ms").value(double(d.decide_ns) / 1e6, 3);
    j.key("replay_ms").value(double(d.log_replay_ns) / 1e6, 3);
    j.key("reset_ms").value(double(d.reset_ns) / 1e6, 3);
    j.key("slots_scanned").value(d.scanned).key("records_rebuilt").value(d.live);
    j.key("indexes_rebuilt").value(d.partitions).key("torn_slots").value(d.torn);
    j.key("uncommitted_slots").value(d.uncommitted);
    j.key("log_entries").value(d.entries).key("log_entries_committed").value(d.committed);
    j.key("log_entries_dropped").value(d.dropped).key("records_offered").value(d.records);
    j.key("records_replayed").value(d.replayed);
    j.key("records_shipped").value(d.shipped).key("shipped_replayed").value(d.shipped_replayed);
    j.end_object();
    const RecoveryCheck& c = run.check;
    j.key("recovery_check").begin_object();
    j.key("status").value(c.status.is_ok() ? std::string("ok") : c.status.message());
    j.key("acknowledged_verified").value(c.acknowledged);
    j.key("in_flight").value(c.in_flight).key("in_flight_committed").value(c.in_flight_committed);
    j.key("in_flight_not_committed").value(c.in_flight - c.in_flight_committed);
    j.key("key_copies_compared").value(c.writes_checked);
    j.key("absent_unverified").value(c.absent_unverified);
    j.key("truncated_records").value(c.truncated);
    j.key("earlier_commits").value(c.commits_before);
    j.key("check_ms").value(double(c.check_ns) / 1e6, 3);
    j.end_object();
  }
  j.end_object();
}

Status report(const BenchOptions& o, const Workload& wl, const store::Catalog& cat,
              const txn::Policy& policy, uint16_t replicas, const std::vector<NodeResult>& rs,
              const DurableRun& run, const FailoverRun& fo) {
  const std::vector<std::string> types = wl.txn_types();
  std::vector<uint64_t> committed(types.size(), 0), aborts(txn::kAbortKinds, 0);
  std::vector<uint64_t> type_aborts(types.size(), 0), ro_blocked(types.size(), 0),
      ro_wait_ns(types.size(), 0), read_only(types.size(), 0), sib_waits(types.size(), 0),
      sib_wait_ns(types.size(), 0);
  VersionTotals versions;
  std::vector<TableAborts> by_table;
  std::vector<int64_t> node_sums, client_sums;
  LatencyHistogram h;
  double tps = 0;
  uint64_t given_up = 0;
  std::vector<uint64_t> timeline;  // the cluster's commits per interval
  std::vector<uint64_t> traffic(kTrFields, 0);
  bool cpu_known = !rs.empty();
  for (const NodeResult& r : rs) {
    for (size_t i = 0; i < kTrFields && i < r.traffic.size(); ++i) traffic[i] += r.traffic[i];
    cpu_known = cpu_known && r.traffic.size() == kTrFields && r.traffic[kTrCpuNs] != 0;
    if (r.timeline.size() > timeline.size()) timeline.resize(r.timeline.size(), 0);
    for (size_t i = 0; i < r.timeline.size(); ++i) timeline[i] += r.timeline[i];
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
      if (i < r.sib_waits.size()) sib_waits[i] += r.sib_waits[i];
      if (i < r.sib_wait_ns.size()) sib_wait_ns[i] += r.sib_wait_ns[i];
    }
    versions.merge(r.versions);
    for (const TableAborts& t : r.by_table) count_abort(by_table, t.reason, t.table, t.count);
    given_up += r.given_up;
    h.merge(r.hist);
    add_into(node_sums, r.node_audit);
    add_into(client_sums, r.client_sums);
  }
  // A restarted database: what it held at the restart, plus this run.
  if (run.recovered) add_into(client_sums, run.check.client_sums);
  // A failover: the killed node's committed sums (from its journal); the
  // survivors hold the copies left.
  if (fo.active) add_into(client_sums, fo.removed_sums);
  const Status check = (fo.check_workload ? *fo.check_workload : wl).check(node_sums, client_sums);
  const DurabilitySummary dur = DurabilitySummary::of(rs);
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
      << (o.inprocess ? " inprocess" : " processes")
      << (o.local_shortcuts ? "" : " local_shortcuts=off")
      << (o.sibling_wait ? "" : " sibling_wait=off") << " " << wl.describe();
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
  for (size_t i = 0; i < types.size(); ++i) {
    if (sib_waits[i] == 0) continue;
    std::cout << "  " << types[i] << " sibling waits: " << sib_waits[i]
              << " reads waited for another coroutine's lock, total "
              << fmt(double(sib_wait_ns[i]) / 1e6, 1) << " ms, "
              << fmt(committed[i] ? double(sib_wait_ns[i]) / 1e3 / double(committed[i]) : 0, 2)
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
  if (traffic[kTrCommitted] != 0) {
    const double c = double(traffic[kTrCommitted]);
    std::cout << "  per transaction: " << fmt(double(traffic[kTrOpsPosted]) / c, 2)
              << " one-sided ops through the fabric, "
              << fmt(double(traffic[kTrMessagesOut]) / c, 2) << " messages, "
              << fmt(double(traffic[kTrLogEntries]) / c, 2) << " log entries of "
              << fmt(traffic[kTrLogEntries]
                         ? double(traffic[kTrLogBytes]) / double(traffic[kTrLogEntries])
                         : 0,
                     0)
              << " B";
    if (cpu_known && traffic[kTrWindowCommitted] != 0) {
      std::cout << ", "
                << fmt(double(traffic[kTrCpuNs]) / 1e3 / double(traffic[kTrWindowCommitted]), 1)
                << " us CPU (all " << rs.size() << " node processes)";
    }
    std::cout << "\n";
  }
  if (given_up)
    std::cout << "  transactions given up after " << kMaxAttempts << " attempts: " << given_up
              << "\n";
  print_durability(o, dur, run);
  print_failover(fo, timeline);
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
    j.key("traffic").begin_object();
    {
      const double c = traffic[kTrCommitted] ? double(traffic[kTrCommitted]) : 1.0;
      j.key("ops_per_txn").value(double(traffic[kTrOpsPosted]) / c, 3);
      j.key("messages_per_txn").value(double(traffic[kTrMessagesOut]) / c, 3);
      j.key("log_entries_per_txn").value(double(traffic[kTrLogEntries]) / c, 3);
      j.key("log_bytes_per_txn").value(double(traffic[kTrLogBytes]) / c, 1);
      if (cpu_known && traffic[kTrWindowCommitted] != 0) {
        j.key("cpu_us_per_txn")
            .value(double(traffic[kTrCpuNs]) / 1e3 / double(traffic[kTrWindowCommitted]), 2);
      }
    }
    j.end_object();
    j.key("sibling_waits").begin_object();
    for (size_t i = 0; i < types.size(); ++i) {
      j.key(types[i]).begin_object();
      j.key("waits").value(sib_waits[i]);
      j.key("wait_us").value(double(sib_wait_ns[i]) / 1e3, 1);
      j.end_object();
    }
    j.end_object();
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
    json_durability(j, o, dur, run);
    // Committed/s of each interval of the measured window (interval i ends
    // (i + 1) * interval_ms after the window began).
    j.key("timeline").begin_object().key("interval_ms").value(unsigned{o.timeline_ms});
    j.key("tps").begin_array();
    for (uint64_t c : timeline) j.value(double(c) * 1000.0 / double(o.timeline_ms), 0);
    j.end_array().end_object();
    json_failover(j, fo, timeline);
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
    j.key("local_shortcuts").value(o.local_shortcuts);
    j.key("sibling_wait").value(o.sibling_wait);
    j.end_object();
    j.end_object();
    std::string err;
    if (!write_file(o.json, j.str() + "\n", &err)) return io_error(err, errno);
  }
  return check;
}

// --crash-point: this process dies here, as by a power cut (SIGKILL: no
// handler, no destructor, no flush). Says so first (one write, no
// allocation after the string is built).
[[noreturn]] void crash_now(const BenchOptions& o) {
  const std::string m = "drtmx-node " + std::to_string(o.node) + ": crash point " + o.crash_name +
                        " reached (occurrence " + std::to_string(o.crash_hit) +
                        "): killing this process (SIGKILL)\n";
  (void)!::write(2, m.data(), m.size());
  if (o.failover_run()) {
    // A failover test: the survivors' report measures from this moment.
    std::ofstream(o.kill_dir() + "/killed_ns") << r2::now_ns() << "\n";
  }
  ::raise(SIGKILL);
  ::_exit(137);  // not reached
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
  cfg.local_shortcuts = o.local_shortcuts;
  cfg.sibling_wait = o.sibling_wait;
  cfg.policy = *policy;
  cfg.log_ring_bytes = o.log_ring_kb * 1024;
  cfg.caches.xcache.refresh_keys_per_miss = o.xstore_refresh_keys;
  cfg.mvcc.versions_pct = o.versions_pct;
  cfg.arena_bytes = std::max(cfg.arena_bytes, (*wl)->arena_bytes());
  const size_t cos = size_t{o.fabric.threads} * o.coroutines;
  const uint32_t first_index = uint32_t(o.node) * uint32_t(cos);
  // Durability: the engine's pools and this node's acknowledgement journal.
  std::unique_ptr<Journal> journal;
  Journal::Options jo;
  size_t nsums = 0;
  if (o.durable || o.failover_run()) {
    if (o.durable && !o.recover) {
      std::error_code ec;
      std::filesystem::create_directories(o.pmem_dir, ec);
      if (ec) {
        return io_error(
            "--pmem-dir=" + o.pmem_dir + ": cannot create the directory (" + ec.message() + ")",
            ec.value());
      }
    }
    if (o.durable) {
      cfg.durability = {true, o.pmem_dir, o.format, o.recover, o.locks_apart};
      // Every node loads, or every node restarts.
      cfg.control.fingerprint["start"] = o.recover ? "recover" : "load";
    }
    std::vector<int64_t> probe;
    (*wl)->client(first_index, o.seed)->sums(probe);
    nsums = probe.size();
    // --kill-node: volatile tables, but the journal outlives a killed
    // process (a file in memory): the survivors read the killed node's.
    jo.dir = o.durable ? o.pmem_dir : o.kill_dir();
    jo.node = static_cast<uint16_t>(o.node);
    jo.nodes = nodes;
    jo.threads = o.fabric.threads;
    jo.coroutines = o.coroutines;
    jo.replicas = replicas;
    jo.bench = o.bench;
    jo.sums = static_cast<uint32_t>(nsums);
    jo.ring_bytes = journal_ring_bytes(o.journal_kb, static_cast<uint32_t>(cos));
    jo.format = o.durable ? o.format : true;
    jo.recover = o.recover;
    // Before the engine's pools: a restart's journal is validated before
    // anything is touched; a first start's exists before any transaction
    // (and before any node can crash in its load).
    auto j = Journal::open(jo);
    if (!j.is_ok()) return j.status();
    journal = std::move(*j);
  }
  if (!o.crash_name.empty() && o.crash_name != "load" && o.node == o.crash_node) {
    txn::CrashPoint point = txn::CrashPoint::kCount;
    (void)txn::crash_point_from(o.crash_name, &point);
    auto hits = std::make_shared<std::atomic<uint64_t>>(0);
    cfg.crash_hook = [point, hits, &o](txn::CrashPoint p) {
      if (p == point && hits->fetch_add(1) + 1 == o.crash_hit) crash_now(o);
    };
  }
  auto node = txn::TxnNode::start(*cat, cfg);
  if (!node.is_ok()) {
    if (journal && !o.recover) {  // the journal this refused first start created
      const std::string file = journal->file();
      journal.reset();
      std::error_code ec;
      std::filesystem::remove(file, ec);
    }
    return node.status();
  }
  txn::TxnNode& n = **node;
  auto fail = [&](const Status& s) {
    n.runtime().control().report_failure(s.message());
    return s;
  };
  DurableRun durable;
  txn::LogRecovery logs;
  if (o.durable && !o.recover) {
    if (Status st = journal->set_stamp(n.pools()->state().stamp); !st.is_ok()) return fail(st);
  }
  if (o.recover) {
    if (journal->stamp() != n.pools()->state().stamp) {
      return fail(invalid_argument(
          "journal " + journal->file() +
          " belongs to another database than the pools beside "
          "it (stamps " +
          std::to_string(journal->stamp()) + " and " + std::to_string(n.pools()->state().stamp) +
          "); restore the run's own journal, or start over with --format"));
    }
    if (Status st = n.recover(&logs); !st.is_ok()) return fail(st.with_context("recovering"));
    auto chk = check_recovery(*journal, **wl, n.store(), *cat, n.runtime().control(), nsums);
    if (!chk.is_ok()) return fail(chk.status().with_context("recovery check"));
    durable.recovered = true;
    durable.check = std::move(*chk);
    if (!durable.check.status.is_ok()) {
      if (o.node == 0) {
        std::cout << durable.check.line() << std::endl;
        return durable.check.status.with_context("recovery check");
      }
      return aborted("the recovery check failed (node 0 says why)");
    }
    if (o.node == 0) std::cout << durable.check.line() << std::endl;
    if (Status st = journal->settle(durable.check.committed_here); !st.is_ok()) return fail(st);
    if (Status st = (*wl)->recovered(n.store(), *cat); !st.is_ok())
      return fail(st.with_context("rebuilding the workload's state"));
  } else {
    if (Status st = (*wl)->load(n.store(), *cat); !st.is_ok())
      return fail(st.with_context("loading"));
    if (o.crash_name == "load" && o.node == o.crash_node) crash_now(o);
    if (o.durable) {
      if (Status st = n.persist_loaded(); !st.is_ok()) return fail(st.with_context("loading"));
    }
  }
  if (Status st = n.runtime().control().barrier("bench.loaded"); !st.is_ok()) return st;

  const size_t types = (*wl)->txn_types().size();
  std::vector<CoCounters> counters(cos);
  for (auto& c : counters) {
    c.committed.assign(types, 0);
    c.type_aborts.assign(types, 0);
    c.ro_blocked.assign(types, 0);
    c.ro_wait_ns.assign(types, 0);
    c.sib_waits.assign(types, 0);
    c.sib_wait_ns.assign(types, 0);
    c.read_only.assign(types, 0);
  }
  std::vector<std::vector<int64_t>> sums(cos);
  Shared sh;
  Status st = n.run([&](txn::TxnContext& ctx) {
    const size_t me = ctx.index - first_index;
    CoCounters& cc = counters[me];
    auto client = (*wl)->client(ctx.index, o.seed);
    if (journal) {
      WorkloadClient* c = client.get();
      ctx.engine.set_observer(journal->observer(
          static_cast<uint32_t>(me), [c](std::vector<int64_t>& out) { c->pending_sums(out); }));
    }
    while (sh.phase.load(std::memory_order_relaxed) != 2) {
      TxnDraw d = client->next();
      const uint64_t t0 = r2::now_ns();
      bool done = false;
      for (uint32_t attempt = 0; attempt < kMaxAttempts; ++attempt) {
        const uint64_t waits0 = ctx.engine.stats().sibling_waits;
        const uint64_t wait_ns0 = ctx.engine.stats().sibling_wait_ns;
        const txn::Abort r = ctx.engine.run(d.proc, d.kind);
        const bool measuring = sh.phase.load(std::memory_order_relaxed) == 1;
        if (measuring) {
          cc.sib_waits[d.type] += ctx.engine.stats().sibling_waits - waits0;
          cc.sib_wait_ns[d.type] += ctx.engine.stats().sibling_wait_ns - wait_ns0;
        }
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
    ctx.engine.set_observer(nullptr);
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
  auto journal_error = [&]() -> Status {
    const std::string e = journal ? journal->error() : std::string();
    return e.empty() ? Status::ok()
                     : io_error(e + " (acknowledgements are no longer recorded)", EIO);
  };
  sleep_s(o.warmup);
  sh.phase.store(1);
  (void)n.runtime().control().publish("measuring", "");
  const uint64_t t0 = r2::now_ns();
  const uint64_t cpu0 = process_cpu_ns();
  // Samples the commit count every --timeline-ms, on deadlines from t0 (no
  // drift); every whole second also publishes the progress line.
  std::vector<uint64_t> timeline;
  {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const auto tick = std::chrono::milliseconds(o.timeline_ms);
    const auto end = start + std::chrono::microseconds(static_cast<int64_t>(o.seconds * 1e6));
    const uint32_t per_second = 1000 / o.timeline_ms;  // parse_bench: timeline_ms divides 1000
    uint64_t last = 0, last_second = 0;
    for (uint64_t k = 1; start + k * tick <= end; ++k) {
      std::this_thread::sleep_until(start + k * tick);
      if (Status je = journal_error(); !je.is_ok()) {
        sh.phase.store(2);
        (void)n.finish(std::chrono::seconds(10));
        return fail(je);
      }
      const uint64_t now = total();
      timeline.push_back(now - last);
      last = now;
      if (k % per_second == 0) {
        (void)n.runtime().control().publish(
            "progress", std::to_string(k / per_second) + " " + std::to_string(now - last_second));
        last_second = now;
      }
    }
    std::this_thread::sleep_until(end);
  }
  const uint64_t window = r2::now_ns() - t0;
  const uint64_t cpu = process_cpu_ns() - cpu0;
  sh.phase.store(2);
  st = n.finish(std::chrono::seconds(60));
  if (!st.is_ok()) return st;
  if (o.failover_run()) {
    // After a failover nothing may stay locked: not by the removed node
    // (its locks were released), not by a survivor (a lost unlock).
    auto held = n.store().locked_slots([](uint64_t) { return true; });
    if (!held.empty()) {
      std::ostringstream os;
      os << "node " << o.node << ": " << held.size() << " records are still locked after the run:";
      for (size_t i = 0; i < held.size() && i < 4; ++i) {
        os << " key " << held[i].key << " of table " << table_name(*cat, held[i].table)
           << " (locked by node " << ((held[i].lock >> 47) & 0xff) << ")";
      }
      return fail(internal_error(os.str()));
    }
  }
  if (Status je = journal_error(); !je.is_ok()) return fail(je);
  NodeResult mine;
  mine.window_ns = window;
  {
    const txn::TxnNode::Traffic t = n.traffic();
    mine.traffic.assign(kTrFields, 0);
    mine.traffic[kTrCommitted] = t.committed;
    mine.traffic[kTrOpsPosted] = t.ops_posted;
    mine.traffic[kTrMessagesOut] = t.messages_out;
    mine.traffic[kTrLogEntries] = t.log_entries;
    mine.traffic[kTrLogBytes] = t.log_bytes;
    mine.traffic[kTrCpuNs] = o.inprocess ? 0 : cpu;
  }
  mine.timeline = std::move(timeline);
  mine.committed.assign(types, 0);
  mine.aborts.assign(txn::kAbortKinds, 0);
  mine.type_aborts.assign(types, 0);
  mine.ro_blocked.assign(types, 0);
  mine.ro_wait_ns.assign(types, 0);
  mine.sib_waits.assign(types, 0);
  mine.sib_wait_ns.assign(types, 0);
  mine.read_only.assign(types, 0);
  for (auto& c : counters) {
    for (size_t i = 0; i < types; ++i) {
      mine.committed[i] += c.committed[i];
      mine.type_aborts[i] += c.type_aborts[i];
      mine.ro_blocked[i] += c.ro_blocked[i];
      mine.ro_wait_ns[i] += c.ro_wait_ns[i];
      mine.sib_waits[i] += c.sib_waits[i];
      mine.sib_wait_ns[i] += c.sib_wait_ns[i];
      mine.read_only[i] |= c.read_only[i];
    }
    for (int i = 0; i < txn::kAbortKinds; ++i) mine.aborts[i] += c.aborts[i];
    for (const TableAborts& t : c.by_table) count_abort(mine.by_table, t.reason, t.table, t.count);
    mine.given_up += c.given_up;
    for (size_t i = 0; i < types; ++i) mine.traffic[kTrWindowCommitted] += c.committed[i];
    mine.hist.merge(c.hist);
  }
  for (auto& s : sums) add_into(mine.client_sums, s);
  if (const dst::MvccNode* m = n.mvcc()) mine.versions = VersionTotals::of(m->totals());
  auto audit = (*wl)->node_audit(n.store(), *cat);
  if (!audit.is_ok()) return fail(audit.status().with_context("audit"));
  mine.node_audit = *audit;
  if (o.durable) {
    std::vector<uint64_t>& f = mine.durability;
    f.assign(kDurabilityFields, 0);
    f[kPoolMode] = static_cast<uint64_t>(n.pools()->mode());
    f[kJournalMode] = static_cast<uint64_t>(journal->mode());
    f[kPoolBytes] = n.pools()->pool_bytes();
    f[kJournalBytes] = journal->ring_bytes();
    f[kJournalRecords] = journal->records_written();
    f[kJournalFolds] = journal->folds();
    if (o.recover) {
      const store::tables::StoreRecovery& sr = n.store_recovery();
      f[kRecovered] = 1;
      f[kRebuildNs] = n.rebuild_ns();
      f[kPartitions] = sr.partitions;
      f[kLiveRecords] = sr.records;
      f[kDeletedSlots] = sr.slots.deleted;
      f[kTornSlots] = sr.slots.torn;
      f[kUncommittedSlots] = sr.slots.uncommitted;
      f[kDuplicateSlots] = sr.slots.duplicates;
      f[kLogEntries] = logs.entries;
      f[kLogCommitted] = logs.committed;
      f[kLogDropped] = logs.dropped;
      f[kLogRecords] = logs.records;
      f[kLogReplayed] = logs.replayed;
      f[kLogShipped] = logs.shipped;
      f[kLogShippedReplayed] = logs.shipped_replayed;
      f[kLogScanNs] = logs.scan_ns;
      f[kLogDecideNs] = logs.decide_ns;
      f[kLogReplayNs] = logs.replay_ns;
      f[kLogResetNs] = logs.reset_ns;
    }
  }
  auto all = n.runtime().control().exchange("bench.results", mine.encode());
  if (!all.is_ok()) return all.status();
  Status result;
  // The lowest live node reports (node 0 unless it was removed).
  const r2::MembershipView::Snapshot view = n.runtime().control().view().snapshot();
  uint16_t reporter = 0;
  while (reporter + 1 < nodes && !view.live.test(reporter)) ++reporter;
  if (o.node == reporter) {
    std::vector<NodeResult> rs;
    for (size_t i = 0; i < all->size(); ++i) {
      if (!view.live.test(i)) continue;  // removed: no result
      rs.emplace_back();
      if (!NodeResult::decode((*all)[i], &rs.back())) {
        return internal_error("node " + std::to_string(i) + " sent a malformed result");
      }
    }
    FailoverRun fo;
    if (o.failover_run()) {
      fo.active = true;
      fo.killed = o.faults.front().node;
      fo.killed_ns = read_killed_ns(o);
      fo.t0_ns = t0;
      fo.timeline_ms = o.timeline_ms;
      fo.nodes = nodes;
      fo.replicas_before = replicas;
      fo.reports = n.failover_reports();
      std::vector<int64_t> probe;
      (*wl)->client(first_index, o.seed)->sums(probe);
      for (uint16_t d = 0; d < nodes; ++d) {
        if (view.live.test(d)) continue;
        ++fo.live;
        if (Status s = add_removed_node(o, d, probe.size(), &fo); !s.is_ok()) {
          return fail(s);
        }
      }
      fo.live = static_cast<uint16_t>(nodes - fo.live);
      // The replication check counts the copies left: the same for every
      // partition (else it cannot be checked this way).
      if (!fo.reports.empty()) {
        BenchOptions left = o;
        // The partitioned tables of a workload share one partitioning (the
        // first such table's is everyone's).
        uint64_t live = 0;
        for (uint16_t d = 0; d < nodes && d < 64; ++d) live |= uint64_t{view.live.test(d)} << d;
        for (const store::TableSpec& t : cat->tables()) {
          if (t.scheme == store::PartitionScheme::kReplicated) continue;
          for (store::PartitionId p = 0; p < cat->partitions(t); ++p) {
            const store::PartitionReplicas r = cat->replicas_of(t, p, o.node, live);
            left.live_copies.push_back(
                r.primary == store::kNoNode ? 0 : static_cast<uint16_t>(1 + r.backup_count));
          }
          break;
        }
        auto w2 = make_workload(left);
        if (!w2.is_ok()) return fail(w2.status());
        fo.check_workload = std::move(*w2);
      }
    }
    result = report(o, **wl, *cat, *policy, replicas, rs, durable, fo);
  }
  Status left = n.runtime().control().leave();
  return result.is_ok() ? left : result;
}

}  // namespace drtmx::bench
