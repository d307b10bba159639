// The per-key facts of a history that everything after parsing uses: each
// key's version order (inferred from the longest read of it in an ok
// transaction), who appended each value, which transactions count as
// committed (graph nodes), and the anomalies visible without a graph.
#pragma once

#include <span>
#include <unordered_map>

#include "base/status.h"
#include "check/anomaly.h"
#include "check/append_index.h"
#include "check/history.h"

namespace drtmx::check {

struct KeyOrder {
  int64_t key = 0;
  uint64_t begin = 0;  // into History::reads: the longest ok read of the key
  uint32_t len = 0;
  // Every ok read of the key is a prefix of the order (no
  // incompatible-order): a value outside the order was seen by no read.
  bool reads_agree = true;
};

struct Analysis {
  const History* h = nullptr;
  std::vector<uint32_t> mop_kid;  // per micro-op: its key's id
  std::vector<KeyOrder> keys;     // by key id
  AppendIndex appends;
  // Per micro-op (reads): the read is a prefix of its key's order, so it
  // yields wr/rw edges.
  std::vector<uint8_t> read_in_order;
  // Per transaction: a graph node: ok, or info with an append somebody read.
  std::vector<uint8_t> is_node;
  // The append micro-ops for which unread_committed() holds, in order.
  std::vector<uint32_t> unread_mops;
  uint64_t unread_ok_appends = 0;  // ok appends no read saw
  uint64_t unread_info_appends = 0;
  uint64_t ok_txns = 0, fail_txns = 0, info_txns = 0;
  AnomalySet anomalies;

  // An append that comes after every value of its key's order: a graph
  // node's (committed, so in the key's final list) that no ok read saw, on a
  // key whose reads agree (so no read saw it out of order either).
  bool unread_committed(uint32_t kid, const AppendRef& r) const {
    return r.pos < 0 && keys[kid].reads_agree && is_node[r.txn];
  }
  std::span<const int64_t> order(uint32_t kid) const {
    return {h->reads.data() + keys[kid].begin, keys[kid].len};
  }
};

// Fills an Analysis (the anomalies found without a graph included). An
// error when the history cannot be analysed: the same value appended to a
// key twice (values must be unique per key).
Result<Analysis> analyze_versions(const History& h);

}  // namespace drtmx::check
