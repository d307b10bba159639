// One node of a drtmx-bench run: build the catalog, start the TxnNode, load,
// run the workload's transactions on every coroutine (retrying aborts with
// randomized exponential back-off), measure a window, drain, audit; node 0
// gathers every node's results, checks the workload's invariants and
// prints the report (and the JSON file).
#include <signal.h>
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
#include "bench_report.h"
#include "failover_report.h"
#include "history.h"
#include "journal.h"
#include "json_writer.h"
#include "memory_report.h"
#include "r2/common/clock.h"
#include "recovery_check.h"
#include "txn/txn_node.h"

namespace drtmx::bench {
namespace {

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

Result<txn::TxnNodeConfig> engine_config(const BenchOptions& o, const Workload& wl, uint16_t node) {
  auto policy = txn::make_policy(o.policy, o.overrides, o.fabric.backend == "shm");
  if (!policy.is_ok()) return policy.status();
  txn::TxnNodeConfig cfg;
  cfg.fabric = o.fabric;
  cfg.fabric.node = node;
  cfg.coroutines = o.coroutines;
  cfg.local_shortcuts = o.local_shortcuts;
  cfg.sibling_wait = o.sibling_wait;
  cfg.policy = *policy;
  cfg.log_ring_bytes = o.log_ring_kb * 1024;
  cfg.caches.xcache.refresh_keys_per_miss = o.xstore_refresh_keys;
  cfg.mvcc.versions_pct = o.versions_pct;
  cfg.mvcc.min_versions = o.min_versions;
  cfg.arena_bytes = std::max(cfg.arena_bytes, wl.arena_bytes());
  cfg.test_fault = o.test_fault;
  return cfg;
}

Status run_bench_node(const BenchOptions& o) {
  auto wl = make_workload(o);
  if (!wl.is_ok()) return wl.status();
  const uint16_t nodes = o.fabric.num_nodes;
  const uint16_t replicas =
      o.replicas != 0 ? o.replicas : static_cast<uint16_t>(std::min<int>(3, nodes));
  auto cat = store::Catalog::create((*wl)->tables(), nodes, replicas);
  if (!cat.is_ok()) return cat.status();
  auto engine = engine_config(o, **wl, static_cast<uint16_t>(o.node));
  if (!engine.is_ok()) return engine.status();
  txn::TxnNodeConfig cfg = std::move(*engine);
  cfg.control.coordinator = o.coordinator;
  if (!o.node_program.empty()) {
    cfg.control.on_lost = r2::exit_when_orphaned(o.node_program, cfg.fabric);
  }
  cfg.control.fingerprint = {{"bench", o.bench},
                             {"policy", o.policy},
                             {"replicas", std::to_string(replicas)},
                             {"coroutines", std::to_string(o.coroutines)}};
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
  // Histories: a client's process number is unique across the restarts of
  // a durable database (history.h); each coroutine writes its own part.
  const uint64_t process_base =
      o.durable ? n.pools()->state().recoveries * uint64_t{o.fabric.num_nodes} * cos : 0;
  std::vector<std::unique_ptr<HistoryPart>> parts(cos);
  std::vector<Status> history_errors(cos);
  if (!o.history.empty()) {
    const std::string dir = history_parts_dir(o.history);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    for (size_t i = 0; i < cos; ++i) {
      const uint64_t process = process_base + first_index + i;
      auto part = HistoryPart::create(dir + "/n" + std::to_string(o.node) + "-p" +
                                      std::to_string(process) + ".jsonl");
      if (!part.is_ok()) return fail(part.status());
      parts[i] = std::move(*part);
    }
  }
  Shared sh;
  Status st = n.run([&](txn::TxnContext& ctx) {
    const size_t me = ctx.index - first_index;
    CoCounters& cc = counters[me];
    auto client = (*wl)->client(ctx.index, o.seed);
    const uint64_t process = process_base + ctx.index;
    client->set_process(process);
    txn::CommitObserver* observer = nullptr;
    if (journal) {
      WorkloadClient* c = client.get();
      observer = journal->observer(static_cast<uint32_t>(me),
                                   [c](std::vector<int64_t>& out) { c->pending_sums(out); });
    }
    std::unique_ptr<HistoryRecorder> history;
    std::string value;
    if (parts[me]) {
      history = std::make_unique<HistoryRecorder>(std::move(parts[me]), process, observer);
      observer = history.get();
    }
    ctx.engine.set_observer(observer);
    while (sh.phase.load(std::memory_order_relaxed) != 2) {
      TxnDraw d = client->next();
      const uint64_t t0 = r2::now_ns();
      bool done = false;
      for (uint32_t attempt = 0; attempt < kMaxAttempts; ++attempt) {
        const uint64_t waits0 = ctx.engine.stats().sibling_waits;
        const uint64_t wait_ns0 = ctx.engine.stats().sibling_wait_ns;
        // History errors stick in the part; close() below returns the first.
        if (history) {
          value.clear();
          (void)client->history_value(false, value);
          (void)history->invoke(value);
        }
        const txn::Abort r = ctx.engine.run(d.proc, d.kind);
        if (history) {
          // A failed or unknown attempt's value is its invoke's (reads null).
          if (r == txn::Abort::kNone) {
            value.clear();
            (void)client->history_value(true, value);
          }
          (void)history->complete(r, value);
        }
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
        // It needed a partition whose primary was removed, and this node is
        // still reconfiguring: the client drops it (counted among the "node
        // failure" aborts) and draws the next one, as an application does
        // with a request that failed, instead of waiting — otherwise within a
        // few ms every client waits on a moved partition and the partitions
        // that did not move stop committing too.
        if (r == txn::Abort::kNodeFailure && ctx.engine.settling()) {
          done = true;
          break;
        }
        // Randomized exponential back-off (by the clock).
        ctx.engine.backoff(attempt + 1);
        client->retrying();
      }
      if (!done) ++cc.given_up;
    }
    client->sums(sums[me]);
    ctx.engine.set_observer(nullptr);
    if (history) history_errors[me] = history->close();
  });
  if (!st.is_ok()) return fail(st);
  auto total = [&] {
    uint64_t t = 0;
    for (auto& c : counters) t += c.total.load(std::memory_order_relaxed);
    return t;
  };
  auto journal_error = [&]() -> Status {
    const std::string e = journal ? journal->error() : std::string();
    return e.empty() ? Status::ok()
                     : io_error(e + " (acknowledgements are no longer recorded)", EIO);
  };
  // A node whose cluster failed, or that was removed from it, stops at once
  // instead of running out its --seconds (a node process whose coordinator
  // is gone has already ended: exit_when_orphaned).
  auto stop_unhealthy = [&]() -> Status {
    Status h = n.runtime().health();
    if (h.is_ok()) return h;
    sh.phase.store(2);
    (void)n.finish(std::chrono::seconds(10));
    return h;
  };
  {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::microseconds(static_cast<int64_t>(o.warmup * 1e6));
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_until(std::min(
          until, std::chrono::steady_clock::now() + std::chrono::milliseconds(o.timeline_ms)));
      if (Status h = stop_unhealthy(); !h.is_ok()) return h;
    }
  }
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
      if (Status h = stop_unhealthy(); !h.is_ok()) return h;
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
  for (const Status& hs : history_errors) {
    if (!hs.is_ok()) return fail(hs);
  }
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
  if (const dst::MvccNode* m = n.mvcc()) {
    mine.versions = VersionTotals::of(m->totals());
    const txn::TxnStats st = n.stats();
    mine.versions.snapshot_reads = st.snapshot_reads;
    mine.versions.snapshot_reads_onesided = st.snapshot_reads_onesided;
    mine.versions.snapshot_reads_direct = st.snapshot_reads_direct;
    mine.versions.snapshot_field_reads = st.snapshot_field_reads;
  }
  mine.memory = memory_fields(node_memory(n));
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
    result = report(o, **wl, *cat, cfg.policy, replicas, rs, durable, fo,
                    r2::describe_transports(n.runtime().fabric().info()));
  }
  Status left = n.runtime().control().leave();
  return result.is_ok() ? left : result;
}

}  // namespace drtmx::bench
