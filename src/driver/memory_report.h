// What a node's memory holds (NodeResult::memory) and the report's memory
// lines and JSON object made of every node's (issue 46: memory close to
// the data). Internal to the driver.
//
// Per node: the bytes its tables' areas have backed (heaps, index buckets
// and leaves, lock entries of durable nodes; r2::Fabric::commit), the
// address space those areas span, every other fabric region it registered
// (logs, arenas, scratch, MVCC versions), and the process's own anonymous
// memory (RssAnon: indexes' inner nodes, caches, buffers). Per table, over
// all nodes: rows, their slot bytes, index bytes, backed bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json_writer.h"
#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "txn/txn_node.h"

namespace drtmx::bench {

struct NodeMemory {
  uint64_t tables_backed = 0;                      // the table areas' backed bytes
  uint64_t tables_reserved = 0;                    // their address space
  uint64_t other_regions = 0;                      // every other region's backed bytes
  uint64_t anon_rss = 0;                           // the process's RssAnon (0 when unknown)
  std::vector<store::tables::TableMemory> tables;  // summed over nodes by the report
};

// This node's, now (after the run).
NodeMemory node_memory(txn::TxnNode& n);
// Flat fields for NodeResult (and back; false on a malformed vector).
std::vector<uint64_t> memory_fields(const NodeMemory& m);
bool memory_from_fields(const std::vector<uint64_t>& f, NodeMemory* m);

// The process's RssAnon from /proc/self/status, in bytes (0 when unknown).
uint64_t anon_rss_bytes();

// The report: a line per node and the largest tables; `per_copy_label`
// names what one partition copy is for the workload ("warehouse" for
// TPC-C), empty for none.
void print_memory(const store::Catalog& cat, const std::vector<NodeMemory>& nodes,
                  const std::string& per_copy_label);
void json_memory(JsonWriter& j, const store::Catalog& cat, const std::vector<NodeMemory>& nodes);
// Bytes per partition copy of the partitioned tables (the cluster's backed
// table bytes over the copies of its most partitioned table); 0 when none.
uint64_t bytes_per_partition_copy(const store::Catalog& cat, const std::vector<NodeMemory>& nodes);

}  // namespace drtmx::bench
