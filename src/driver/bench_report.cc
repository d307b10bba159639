// The report of a drtmx-bench run (bench_report.h).
#include "bench_report.h"

#include <sys/resource.h>

#include <iomanip>
#include <iostream>

#include "json_writer.h"
#include "memory_report.h"
#include "r2/shm/segment.h"
#include "txn/engine.h"

namespace drtmx::bench {

uint64_t process_cpu_ns() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto ns = [](const timeval& t) {
    return uint64_t(t.tv_sec) * 1000000000ull + uint64_t(t.tv_usec) * 1000ull;
  };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

namespace {

std::string fmt(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
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
  bool disk = false;
  for (size_t i = 0; i < d.modes.size(); ++i) {
    std::cout << (i ? ", node" : " node") << i << " " << d.modes[i];
    disk = disk || d.modes[i].find("msync") != std::string::npos;
  }
  // (The run's first line said what the directory is; say it again here.)
  if (disk) std::cout << " (msync: a disk, every persist a system call; see the run's first line)";
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

}  // namespace

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

Status report(const BenchOptions& o, const Workload& wl, const store::Catalog& cat,
              const txn::Policy& policy, uint16_t replicas, const std::vector<NodeResult>& rs,
              const DurableRun& run, const FailoverRun& fo, const std::string& transports) {
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
  cfg << "bench=" << o.bench << " fabric=" << o.fabric.backend
      << (transports.empty() ? "" : " transports=" + transports) << " nodes=" << o.fabric.num_nodes
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
    // Only types where it matters: at least one wait per 100 commits.
    if (sib_waits[i] == 0 || sib_waits[i] * 100 < committed[i]) continue;
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
    if (versions.snapshot_reads != 0) {
      const double all = double(versions.snapshot_reads);
      std::cout << "  snapshot reads: " << versions.snapshot_reads << ", "
                << fmt(100.0 * double(versions.snapshot_reads_direct) / all, 1)
                << "% of them in place on this node, "
                << fmt(100.0 * double(versions.snapshot_reads_onesided) / all, 1)
                << "% one-sided (the version in place), the rest by DEP_READ RPC";
      if (versions.snapshot_field_reads != 0) {
        std::cout << "; " << fmt(100.0 * double(versions.snapshot_field_reads) / all, 1)
                  << "% were one field of a row (get_fields)";
      }
      std::cout << "\n";
    }
  }
  std::vector<double> rates;
  for (uint64_t c : committed) rates.push_back(double(c) / window_s);
  if (const std::string extra = wl.report(rates); !extra.empty()) std::cout << extra;
  for (int i = 1; i < txn::kAbortKinds; ++i) {
    if (aborts[i] == 0) continue;
    // The longest name ("version store full") still gets a space.
    std::cout << "  abort " << std::left << std::setw(20)
              << txn::abort_name(static_cast<txn::Abort>(i))
              << fmt(100.0 * double(aborts[i]) / double(total_commits + total_aborts), 3) << "%  "
              << blamed_tables(cat, by_table, i, aborts[i]) << "\n";
  }
  if (const uint64_t oom = aborts[static_cast<int>(txn::Abort::kOutOfMemory)]; oom != 0) {
    std::cout << "  out of memory: " << oom
              << " transactions found no memory for their inserts (primaries take no new row "
                 "while less than 3/16 of the machine's memory is available, backups grow down to "
                 "an eighth); the memory lines below say what each node held: run fewer "
                 "warehouses or rows per node, more nodes, or a shorter run\n";
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
  // One node: its regions are private memory (r2/shm/segment.h), whose
  // page size the kernel's THP mode decides; more: /dev/shm's mount.
  const bool one_node = o.fabric.backend == "shm" && o.fabric.num_nodes == 1;
  const std::string thp = one_node ? r2::shm::thp_mode() : "";
  const std::string shm_huge =
      o.fabric.backend == "shm" && !one_node ? r2::shm::dev_shm_huge_option() : "";
  if (one_node) {
    std::cout << "  shm pages: one node's regions in private memory, "
              << (thp == "always" || thp == "madvise"
                      ? "2 MiB transparent huge pages where they fit"
                      : "4 KiB")
              << " (transparent_hugepage=" << (thp.empty() ? "unknown" : thp) << ")\n";
  } else if (shm_huge == "never" || shm_huge == "advise" || shm_huge == "deny") {
    std::cout << "  shm pages: 4 KiB (/dev/shm is mounted huge=" << shm_huge
              << "); 2 MiB pages run faster: mount -o remount,huge=within_size /dev/shm "
                 "(docs/performance.md)\n";
  } else if (!shm_huge.empty()) {
    std::cout << "  shm pages: 2 MiB where they fit (/dev/shm is mounted huge=" << shm_huge
              << ")\n";
  }
  print_durability(o, dur, run);
  std::vector<NodeMemory> memory;
  for (const NodeResult& r : rs) {
    NodeMemory m;
    if (!r.memory.empty() && memory_from_fields(r.memory, &m)) memory.push_back(std::move(m));
  }
  print_memory(cat, memory, o.bench == "tpcc" ? "warehouse" : o.bench == "tpce" ? "load unit" : "");
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
      j.key("snapshot_reads").value(versions.snapshot_reads);
      j.key("snapshot_reads_onesided").value(versions.snapshot_reads_onesided);
      j.key("snapshot_reads_direct").value(versions.snapshot_reads_direct);
      j.key("snapshot_field_reads").value(versions.snapshot_field_reads);
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
    json_memory(j, cat, memory);
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
    if (!transports.empty()) j.key("transports").value(transports);
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
    if (!shm_huge.empty()) j.key("shm_huge").value(shm_huge);
    if (!thp.empty()) j.key("shm_thp").value(thp);
    j.end_object();
    j.end_object();
    std::string err;
    if (!write_file(o.json, j.str() + "\n", &err)) return io_error(err, errno);
  }
  return check;
}

}  // namespace drtmx::bench
