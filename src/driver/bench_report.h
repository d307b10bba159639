// The results each node of a drtmx-bench run sends to node 0 (NodeResult,
// text through the control plane), and the report node 0 prints from them
// and writes as JSON (report()). Internal to the driver.
#pragma once

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "base/histogram.h"
#include "bench.h"
#include "dst/version_store.h"
#include "failover_report.h"
#include "recovery_check.h"
#include "store/catalog.h"
#include "txn/policy.h"
#include "workload.h"

namespace drtmx::bench {

constexpr uint32_t kMaxAttempts = 10000;  // per transaction, then it counts as given up

// Aborts of one reason on one table (txn::Engine::abort_table()).
struct TableAborts {
  uint64_t reason, table, count;
};

// Adds `n` aborts of `reason` on `table` (a short list: linear search).
inline void count_abort(std::vector<TableAborts>& v, uint64_t reason, uint64_t table, uint64_t n) {
  for (TableAborts& x : v) {
    if (x.reason == reason && x.table == table) {
      x.count += n;
      return;
    }
  }
  v.push_back({reason, table, n});
}

// The MVCC version stores of a node (all zero without MVCC), and of the
// cluster once merged.
struct VersionTotals {
  uint64_t capacity = 0, in_use = 0, peak = 0, pushed = 0, reclaimed = 0, gc_runs = 0, refused = 0,
           reserved_bytes = 0, in_use_bytes = 0;
  // Rows read by snapshots, and of them by one-sided ops and in place on
  // their primary (the others by the DEP_READ RPC); of those in place, the
  // ones get_fields() read as header and field only.
  uint64_t snapshot_reads = 0, snapshot_reads_onesided = 0, snapshot_reads_direct = 0,
           snapshot_field_reads = 0;

  static VersionTotals of(const dst::VersionStoreStats& v) {
    // in-use bytes: each slot is its store's capacity's share of its bytes
    const uint64_t used = v.capacity ? v.bytes / v.capacity * v.in_use : 0;
    return {v.capacity, v.in_use, v.peak, v.pushed, v.reclaimed, v.gc_runs,
            v.full,     v.bytes,  used,   0,        0,           0};
  }
  // Sums, but the peak is the largest of any node.
  void merge(const VersionTotals& o) {
    capacity += o.capacity, in_use += o.in_use, peak = std::max(peak, o.peak);
    pushed += o.pushed, reclaimed += o.reclaimed, gc_runs += o.gc_runs, refused += o.refused;
    reserved_bytes += o.reserved_bytes, in_use_bytes += o.in_use_bytes;
    snapshot_reads += o.snapshot_reads, snapshot_reads_onesided += o.snapshot_reads_onesided;
    snapshot_reads_direct += o.snapshot_reads_direct;
    snapshot_field_reads += o.snapshot_field_reads;
  }
  std::vector<uint64_t> fields() const {
    return {capacity,
            in_use,
            peak,
            pushed,
            reclaimed,
            gc_runs,
            refused,
            reserved_bytes,
            in_use_bytes,
            snapshot_reads,
            snapshot_reads_onesided,
            snapshot_reads_direct,
            snapshot_field_reads};
  }
  static bool from(const std::vector<uint64_t>& f, VersionTotals* v) {
    if (f.empty()) return true;  // a node without MVCC
    if (f.size() != 13) return false;
    *v = {f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12]};
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

// This process's CPU time (user + system) so far.
uint64_t process_cpu_ns();

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
  // memory_report.h: memory_fields (empty: not known).
  std::vector<uint64_t> memory;

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
                          &timeline, &sib_waits, &sib_wait_ns, &traffic, &memory}) {
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
           vec(r->sib_wait_ns) && vec(r->traffic) && vec(r->memory, 7 * 4096 + 4);
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

// "warehouse_ytd" for a table id of the catalog, "no table" for
// txn::Engine::kNoTable, else the number.
std::string table_name(const store::Catalog& cat, uint64_t id);
// acc += v, element by element (acc grows to v's size).
void add_into(std::vector<int64_t>& acc, const std::vector<int64_t>& v);

// Node 0: prints the report of the nodes' results (and writes --json).
// Fails with the workload's check when that fails.
Status report(const BenchOptions& o, const Workload& wl, const store::Catalog& cat,
              const txn::Policy& policy, uint16_t replicas, const std::vector<NodeResult>& rs,
              const DurableRun& run, const FailoverRun& fo, const std::string& transports = "");

}  // namespace drtmx::bench
