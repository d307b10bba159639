#include "memory_report.h"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "base/resident.h"
#include "r2/common/growable.h"
#include "store/tables/plan.h"

namespace drtmx::bench {
namespace {

constexpr size_t kHead = 4;   // tables_backed, tables_reserved, other_regions, anon_rss
constexpr size_t kTable = 7;  // store::tables::TableMemory, field by field

std::string gib(uint64_t b) {
  return r2::human_bytes(b);
}

std::vector<store::tables::TableMemory> sum_tables(const std::vector<NodeMemory>& nodes) {
  std::vector<store::tables::TableMemory> out;
  for (const NodeMemory& n : nodes) {
    for (const store::tables::TableMemory& t : n.tables) {
      auto it = std::find_if(out.begin(), out.end(), [&](const store::tables::TableMemory& x) {
        return x.table == t.table;
      });
      if (it == out.end()) {
        out.push_back(t);
        continue;
      }
      it->copies += t.copies, it->rows += t.rows, it->row_bytes += t.row_bytes;
      it->index_bytes += t.index_bytes, it->backed += t.backed, it->reserved += t.reserved;
    }
  }
  std::sort(out.begin(), out.end(),
            [](const store::tables::TableMemory& a, const store::tables::TableMemory& b) {
              return a.backed > b.backed;
            });
  return out;
}

std::string name_of(const store::Catalog& cat, uint64_t id) {
  const store::TableSpec* t = cat.find(static_cast<store::TableId>(id));
  return t != nullptr ? t->name : std::to_string(id);
}

}  // namespace

uint64_t anon_rss_bytes() {
  return kib_field(read_small_file("/proc/self/status"), "RssAnon");
}

NodeMemory node_memory(txn::TxnNode& n) {
  NodeMemory m;
  r2::Fabric& f = n.runtime().fabric();
  m.tables = n.store().memory();
  for (const store::tables::TableMemory& t : m.tables) {
    m.tables_backed += t.backed;
    m.tables_reserved += t.reserved;
  }
  for (const auto& [id, bytes] : txn::TxnNode::regions(n.catalog(), n.config())) {
    (void)bytes;
    m.other_regions += f.committed_bytes(id);
  }
  for (const auto& [id, bytes] : txn::TxnNode::growable_regions(n.catalog(), n.config())) {
    (void)bytes;
    if (store::tables::is_table_region(id) || id >= store::tables::kLockRegionBase) continue;
    m.other_regions += f.committed_bytes(id);
  }
  m.anon_rss = anon_rss_bytes();
  return m;
}

std::vector<uint64_t> memory_fields(const NodeMemory& m) {
  std::vector<uint64_t> f = {m.tables_backed, m.tables_reserved, m.other_regions, m.anon_rss};
  for (const store::tables::TableMemory& t : m.tables) {
    f.insert(f.end(),
             {t.table, t.copies, t.rows, t.row_bytes, t.index_bytes, t.backed, t.reserved});
  }
  return f;
}

bool memory_from_fields(const std::vector<uint64_t>& f, NodeMemory* m) {
  *m = NodeMemory{};
  if (f.empty()) return true;
  if (f.size() < kHead || (f.size() - kHead) % kTable != 0) return false;
  m->tables_backed = f[0], m->tables_reserved = f[1], m->other_regions = f[2], m->anon_rss = f[3];
  for (size_t i = kHead; i < f.size(); i += kTable) {
    m->tables.push_back({static_cast<store::TableId>(f[i]), static_cast<uint32_t>(f[i + 1]),
                         f[i + 2], f[i + 3], f[i + 4], f[i + 5], f[i + 6]});
  }
  return true;
}

namespace {
// Backed bytes (or rows' and index bytes) of the partitioned tables over
// the copies of the most partitioned one.
uint64_t per_copy(const store::Catalog& cat, const std::vector<NodeMemory>& nodes, bool data) {
  uint64_t copies = 0, bytes = 0;
  for (const store::tables::TableMemory& t : sum_tables(nodes)) {
    const store::TableSpec* s = cat.find(static_cast<store::TableId>(t.table));
    if (s == nullptr || s->scheme == store::PartitionScheme::kReplicated) continue;
    copies = std::max<uint64_t>(copies, t.copies);
    bytes += data ? t.row_bytes + t.index_bytes : t.backed;
  }
  return copies == 0 ? 0 : bytes / copies;
}
}  // namespace

uint64_t bytes_per_partition_copy(const store::Catalog& cat, const std::vector<NodeMemory>& nodes) {
  return per_copy(cat, nodes, false);
}

void print_memory(const store::Catalog& cat, const std::vector<NodeMemory>& nodes,
                  const std::string& per_copy_label) {
  if (nodes.empty()) return;
  std::cout << "  memory:";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeMemory& n = nodes[i];
    std::cout << (i == 0 ? " " : "; ") << "node" << i << " tables " << gib(n.tables_backed)
              << " (of " << gib(n.tables_reserved) << " address space), other regions "
              << gib(n.other_regions) << ", heap " << gib(n.anon_rss);
  }
  std::cout << "\n";
  const std::vector<store::tables::TableMemory> ts = sum_tables(nodes);
  std::cout << "  memory by table (all copies):";
  for (size_t i = 0; i < ts.size() && i < 5; ++i) {
    const store::tables::TableMemory& t = ts[i];
    std::cout << (i == 0 ? " " : "; ") << name_of(cat, t.table) << " " << t.rows << " rows "
              << gib(t.row_bytes) << " + index " << gib(t.index_bytes) << " in " << gib(t.backed);
  }
  if (ts.size() > 5) std::cout << "; " << ts.size() - 5 << " more";
  std::cout << "\n";
  const uint64_t backed = per_copy(cat, nodes, false), data = per_copy(cat, nodes, true);
  if (!per_copy_label.empty() && backed != 0 && data != 0) {
    std::cout << "  memory per " << per_copy_label << " copy: " << gib(backed) << " for "
              << gib(data) << " of rows and index (" << std::fixed << std::setprecision(2)
              << double(backed) / double(data) << std::defaultfloat << "x)\n";
  }
}

void json_memory(JsonWriter& j, const store::Catalog& cat, const std::vector<NodeMemory>& nodes) {
  j.key("memory").begin_object();
  j.key("nodes").begin_array();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeMemory& n = nodes[i];
    j.begin_object()
        .key("node")
        .value(uint64_t{i})
        .key("tables_backed")
        .value(n.tables_backed)
        .key("tables_reserved")
        .value(n.tables_reserved)
        .key("other_regions")
        .value(n.other_regions)
        .key("anon_rss")
        .value(n.anon_rss)
        .end_object();
  }
  j.end_array();
  j.key("tables").begin_array();
  for (const store::tables::TableMemory& t : sum_tables(nodes)) {
    j.begin_object()
        .key("name")
        .value(name_of(cat, t.table))
        .key("copies")
        .value(t.copies)
        .key("rows")
        .value(t.rows)
        .key("row_bytes")
        .value(t.row_bytes)
        .key("index_bytes")
        .value(t.index_bytes)
        .key("backed")
        .value(t.backed)
        .key("reserved")
        .value(t.reserved)
        .end_object();
  }
  j.end_array();
  j.key("bytes_per_partition_copy").value(per_copy(cat, nodes, false));
  j.key("data_bytes_per_partition_copy").value(per_copy(cat, nodes, true));
  j.end_object();
}

}  // namespace drtmx::bench
