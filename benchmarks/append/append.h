// List-append (Kingsbury and Alvaro, "Elle", VLDB 2021) as a drtmx-bench
// workload: keys hold lists of integers, a transaction appends to some and
// reads others whole, and the values reveal the order of versions, so that
// drtmx-check can judge a history (--history) from what clients saw alone.
//
// Keys. A key is a (slot, epoch) pair: logical key = epoch * keys + slot.
// `keys` slots are active; a slot's list takes at most `max_writes`
// appends, then the slot moves to its next epoch, a new empty list (Elle's
// key retirement: lists stay short, so reads and histories stay small for
// any run length). Clients learn a slot's epoch from the database and
// share it with the other clients of their node (append_client.h).
//
// Tables (both partitioned by slot % partitions, one partition per worker
// thread of the cluster, so most transactions are distributed):
//   heads  hash, slot -> {epoch, length of the epoch's list}; loaded {0, 0}
//   lists  ordered, (logical key << 24 | position) -> the element (int64)
// append k v: get_for_update(heads, slot) and check the epoch, insert(lists,
//             (k, length), v), put(heads, slot, length + 1); a key whose
//             list is full or retired aborts the transaction (kUserAbort: a
//             `fail` in the history) and the node's clients move to the
//             slot's next epoch.
// r k:        scan(lists) over k's whole range: the list in position order,
//             with the transaction's own appends (the engine's scans see them).
// A transaction of reads only is declared read-only (Kind::kReadOnly: a
// snapshot under --mvcc=dst). Values are unique in the run and across the
// restarts of a durable database: (client process << 36) | counter.
//
// Oracle (check): per partition copy, every list's positions are 0..n-1
// with n = max_writes for retired epochs and the head's length for the
// current one; the backups hold the primary's rows (count and digest); the
// rows number the committed appends (exactly, unless a failover left
// outcomes unknown: then at least). Isolation is drtmx-check's job.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/workload.h"

namespace drtmx::bench::append {

constexpr txn::TableId kHeads = 1, kLists = 2;
constexpr int kTypes = 2;
enum Type : int { kAppend, kRead };  // kAppend: appends at least once; kRead: read-only
constexpr int kPositionBits = 24;

struct Head {
  uint64_t epoch = 0;
  uint64_t length = 0;
};

struct Config {
  uint32_t keys = 100;           // active slots
  uint32_t max_ops = 4;          // micro-ops per transaction: 1..max_ops
  uint32_t max_writes = 32;      // appends per key before it retires
  uint32_t read_pct = 50;        // percent of micro-ops that are reads
  double theta = 0;              // Zipfian skew over slots (0: uniform)
  uint32_t partitions = 1;       // nodes x threads
  uint16_t replicas = 1;         // copies of each partition
  std::vector<uint16_t> copies;  // after a failover: per partition (empty: replicas)
  int64_t backups(uint32_t p) const {
    return int64_t{p < copies.size() ? copies[p] : replicas} - 1;
  }
  uint32_t partition_of_slot(uint64_t slot) const {
    return static_cast<uint32_t>(slot % partitions);
  }
};

inline uint64_t logical_key(const Config& c, uint64_t slot, uint64_t epoch) {
  return epoch * c.keys + slot;
}
inline uint64_t row_key(uint64_t logical, uint64_t position) {
  return (logical << kPositionBits) | position;
}

// Parses --append-keys, --append-ops, --append-max-writes,
// --append-read-pct, --append-theta; errors name the option.
Result<Config> parse(const WorkloadOptions& o, const WorkloadEnv& env);

// The registry entry (src/driver/workloads.cc).
WorkloadInfo info();

std::unique_ptr<Workload> make(const Config& c);

}  // namespace drtmx::bench::append
