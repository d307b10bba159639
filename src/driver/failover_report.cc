#include "failover_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "journal.h"

namespace drtmx::bench {
namespace {

// Milliseconds from b to a (either order).
double since_ms(uint64_t a, uint64_t b) {
  return double(int64_t(a - b)) / 1e6;
}

std::string ms(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << v;
  return os.str();
}

// Whether the failover decided record `r`'s transaction committed: its
// writes are among the committed ones the survivors found in their logs
// (one that never logged, or only partly, is not).
bool decided_committed(const JournalRecord& r, const FailoverRun& fo) {
  if (r.writes.empty()) return false;
  for (const txn::FailoverReport& f : fo.reports) {
    bool all = true;
    for (const JournalWrite& w : r.writes) {
      all = all &&
            std::binary_search(f.committed_writes.begin(), f.committed_writes.end(),
                               std::make_tuple(static_cast<uint16_t>(w.table), w.key, w.version));
    }
    if (all) return true;
  }
  return false;
}

// Timeline analysis: intervals before the kill, the first interval at 80 %
// of the pre-failure rate once the survivors serve again. Not merely the
// first after the kill: until the coordinator notices the loss the
// survivors go on at speed for a while (tens of ms), then stall, then
// pause; counting those first intervals said "back to 80 % after 17.7 ms"
// of a TPC-C run that served again only after 100 ms.
struct Recovery {
  double before_tps = 0;  // survivors' committed/s before the kill
  double min_tps = 0;     // the dip: the lowest interval after the kill
  // kill -> end of the first interval >= 80 % of before that holds or
  // follows the serving instant (without a failover report: follows the
  // dip); -1: never.
  double back_ms = -1;
  // Survivors' committed/s from detection to serving (the reconfiguration:
  // only transactions that need a moved partition wait), over the
  // intervals inside it; -1: none lies inside (a finer --timeline-ms).
  double during_tps = -1;
};

Recovery recovery(const FailoverRun& fo, const std::vector<uint64_t>& timeline) {
  Recovery r;
  if (fo.killed_ns <= fo.t0_ns || timeline.empty() || fo.timeline_ms == 0) return r;  // in warmup
  const double tick_ms = fo.timeline_ms;
  const double kill_ms = double(fo.killed_ns - fo.t0_ns) / 1e6;
  const size_t k = static_cast<size_t>(kill_ms / tick_ms);  // the interval with the kill
  uint64_t sum = 0;
  for (size_t i = 0; i < k && i < timeline.size(); ++i) sum += timeline[i];
  if (k == 0) return r;
  r.before_tps = double(sum) / double(k) * 1000.0 / tick_ms;
  r.min_tps = r.before_tps;
  size_t dip = k;
  for (size_t i = k; i < timeline.size(); ++i) {
    const double tps = double(timeline[i]) * 1000.0 / tick_ms;
    if (tps < r.min_tps) dip = i;
    r.min_tps = std::min(r.min_tps, tps);
  }
  if (!fo.reports.empty() && fo.reports.front().seen_ns > fo.t0_ns &&
      fo.reports.front().serving_ns > fo.reports.front().seen_ns) {
    const double seen_ms = double(fo.reports.front().seen_ns - fo.t0_ns) / 1e6;
    const double served_ms = double(fo.reports.front().serving_ns - fo.t0_ns) / 1e6;
    const size_t a = static_cast<size_t>(std::ceil(seen_ms / tick_ms));
    const size_t b = std::min(timeline.size(), static_cast<size_t>(served_ms / tick_ms));
    if (a < b) {
      uint64_t in = 0;
      for (size_t i = a; i < b; ++i) in += timeline[i];
      r.during_tps = double(in) / double(b - a) * 1000.0 / tick_ms;
    }
  }
  size_t from = std::max(k + 1, dip + 1);
  if (!fo.reports.empty() && fo.reports.front().serving_ns > fo.killed_ns) {
    const double serving_ms = double(fo.reports.front().serving_ns - fo.t0_ns) / 1e6;
    from = std::max(k + 1, static_cast<size_t>(serving_ms / tick_ms));
  }
  for (size_t i = from; i < timeline.size(); ++i) {
    if (double(timeline[i]) * 1000.0 / tick_ms >= 0.8 * r.before_tps) {
      r.back_ms = double(i + 1) * tick_ms - kill_ms;
      break;
    }
  }
  return r;
}

}  // namespace

uint64_t read_killed_ns(const BenchOptions& o) {
  std::ifstream in(o.kill_dir() + "/killed_ns");
  uint64_t v = 0;
  if (!(in >> v)) return 0;
  return v;
}

Status add_removed_node(const BenchOptions& o, uint16_t node, size_t sums, FailoverRun* fo) {
  Journal::Options jo;
  // Durable: the journal lives beside the node's pools; volatile: in the
  // failover directory (a file in memory that outlives the process).
  jo.dir = o.durable ? o.pmem_dir : o.kill_dir();
  jo.node = node;
  jo.nodes = o.fabric.num_nodes;
  jo.threads = o.fabric.threads;
  jo.coroutines = o.coroutines;
  jo.replicas = fo->replicas_before;
  jo.bench = o.bench;
  jo.sums = static_cast<uint32_t>(sums);
  jo.recover = true;
  auto j = Journal::open(jo);
  if (!j.is_ok())
    return j.status().with_context("reading the journal of removed node " + std::to_string(node));
  auto scan = (*j)->scan();
  if (!scan.is_ok()) return scan.status();
  if (fo->removed_sums.size() < sums) fo->removed_sums.resize(sums, 0);
  for (size_t i = 0; i < sums && i < scan->carried.size(); ++i)
    fo->removed_sums[i] += scan->carried[i];
  for (const JournalRecord& r : scan->records) {
    bool counts = false;
    if (r.state == JournalState::kAcknowledged) {
      ++fo->acknowledged;
      counts = true;
    } else if (r.state == JournalState::kPrepared) {
      ++fo->in_flight;
      counts = decided_committed(r, *fo);
      fo->in_flight_committed += counts ? 1 : 0;
    }
    if (!counts) continue;
    for (size_t i = 0; i < sums && i < r.sums.size(); ++i) fo->removed_sums[i] += r.sums[i];
  }
  return Status::ok();
}

void print_failover(const FailoverRun& fo, const std::vector<uint64_t>& timeline) {
  if (!fo.active) return;
  const Recovery r = recovery(fo, timeline);
  for (const txn::FailoverReport& f : fo.reports) {
    std::string removed;
    for (uint16_t n : f.removed) removed += (removed.empty() ? "" : ",") + std::to_string(n);
    const double detect = fo.killed_ns ? since_ms(f.seen_ns, fo.killed_ns) : 0;
    const double serving = fo.killed_ns ? since_ms(f.serving_ns, fo.killed_ns) : 0;
    std::cout << "  failover: node " << removed << " failed "
              << ms(since_ms(fo.killed_ns, fo.t0_ns))
              << " ms into the measured run; detected after " << ms(detect)
              << " ms, every partition served by a primary after " << ms(serving)
              << " ms (detection + promotion); epoch " << f.epoch << ", replicas now "
              << f.min_copies << " of " << fo.replicas_before << "\n";
    std::cout << "  failover: its last logged transactions: " << f.committed << " committed, "
              << f.aborted << " aborted, " << f.incomplete
              << " of them with an incomplete log (decided from the backups' logs); "
              << f.locks_released << " locks released, " << f.records_repaired
              << " record copies repaired\n";
  }
  std::cout << "  failover: survivors' rate before " << ms(r.before_tps) << " committed/s, lowest "
            << ms(r.min_tps) << " after, "
            << (r.during_tps < 0 ? std::string("? (no whole --timeline-ms interval)")
                                 : ms(r.during_tps))
            << " while reconfiguring; back to 80 % "
            << (r.back_ms < 0 ? std::string("not within the run")
                              : "after " + ms(r.back_ms) + " ms")
            << "; killed node's journal: " << fo.acknowledged << " acknowledged, " << fo.in_flight
            << " in flight (" << fo.in_flight_committed << " committed)\n";
}

void json_failover(JsonWriter& j, const FailoverRun& fo, const std::vector<uint64_t>& timeline) {
  if (!fo.active) return;
  const Recovery r = recovery(fo, timeline);
  j.key("failover").begin_object();
  j.key("killed_node").value(int64_t{fo.killed});
  j.key("kill_ms").value(since_ms(fo.killed_ns, fo.t0_ns), 1);
  if (!fo.reports.empty()) {
    const txn::FailoverReport& f = fo.reports.front();
    j.key("detect_ms").value(since_ms(f.seen_ns, fo.killed_ns), 2);
    j.key("serving_ms").value(since_ms(f.serving_ns, fo.killed_ns), 2);
    j.key("epoch").value(f.epoch);
    j.key("logged_committed").value(f.committed).key("logged_aborted").value(f.aborted);
    j.key("logged_incomplete").value(f.incomplete);
    j.key("locks_released").value(f.locks_released);
    j.key("records_repaired").value(f.records_repaired);
    j.key("replicas_after").value(uint64_t{f.min_copies});
  }
  j.key("replicas_before").value(uint64_t{fo.replicas_before});
  j.key("before_tps").value(r.before_tps, 0).key("min_tps").value(r.min_tps, 0);
  j.key("reconfiguring_tps").value(r.during_tps, 0);
  j.key("back_to_80pct_ms").value(r.back_ms, 1);
  j.key("journal_acknowledged").value(fo.acknowledged);
  j.key("journal_in_flight").value(fo.in_flight);
  j.key("journal_in_flight_committed").value(fo.in_flight_committed);
  j.end_object();
}

}  // namespace drtmx::bench
