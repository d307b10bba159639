// The dependency graph over a history's transactions (ids = History::txns
// indices; only Analysis::is_node transactions have edges), compressed
// sparse rows with a type bitmask per edge (EdgeBits; parallel edges merged).
#pragma once

#include <cstdint>
#include <vector>

#include "check/analysis.h"

namespace drtmx::check {

struct Graph {
  uint32_t n = 0;
  std::vector<uint64_t> begin;  // n + 1 offsets into dst/type
  std::vector<uint32_t> dst;
  std::vector<uint8_t> type;
  uint64_t edges() const { return dst.size(); }
};

struct GraphOptions {
  bool process = false;   // per-process order edges
  bool realtime = false;  // real-time order edges
};

// ww, wr and rw from the version orders (reads that are prefixes of their
// key's order only); ww and rw to appends of committed transactions that no
// read saw (after every value read; bounded per key, see graph.cc); plus
// process and real-time edges when asked.
// Real-time edges use the frontier technique: a transaction gets edges from
// the transactions completed before its invoke that no other completed
// transaction follows in real time, about one per concurrent process, not
// from every earlier transaction.
Graph build_graph(const Analysis& a, GraphOptions opt);

}  // namespace drtmx::check
