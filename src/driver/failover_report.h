// --kill-node runs (failover): what the survivors' report adds — the
// killed node's acknowledged commits (from its acknowledgement journal,
// which outlives its process), the failover times, and the timeline's
// recovery to 80 % of the pre-failure rate.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench.h"
#include "json_writer.h"
#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "txn/failover.h"
#include "workload.h"

namespace drtmx::bench {

struct FailoverRun {
  bool active = false;     // a --kill-node run
  int killed = -1;         // the node killed
  uint64_t killed_ns = 0;  // r2::now_ns() of the SIGKILL (the launcher's file)
  uint64_t t0_ns = 0;      // the reporting node's measured window began
  uint32_t timeline_ms = 100;
  uint16_t nodes = 0, live = 0;
  uint16_t replicas_before = 0;
  std::vector<txn::FailoverReport> reports;  // the reporting node's
  // The removed nodes' committed client sums (journal: carried + acknowledged
  // + in-flight transactions the survivors' copies show committed).
  std::vector<int64_t> removed_sums;
  uint64_t acknowledged = 0, in_flight = 0, in_flight_committed = 0;
  // The workload as the survivors hold it (its replication check counts the
  // copies left); null: the run's own.
  std::unique_ptr<Workload> check_workload;
};

// Reads the journal of removed node `node` (in o.kill_dir()) and adds what
// its clients committed into `fo`: every journal record acknowledged, and
// each one in flight whose writes the failover decided committed
// (fo->reports must be set).
Status add_removed_node(const BenchOptions& o, uint16_t node, size_t sums, FailoverRun* fo);

// When the launcher killed the node (0 when the file is missing).
uint64_t read_killed_ns(const BenchOptions& o);

// The report's "failover:" lines and its JSON object. `timeline`: the
// survivors' commits per interval of the measured window.
void print_failover(const FailoverRun& fo, const std::vector<uint64_t>& timeline);
void json_failover(JsonWriter& j, const FailoverRun& fo, const std::vector<uint64_t>& timeline);

}  // namespace drtmx::bench
