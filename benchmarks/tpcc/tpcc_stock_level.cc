// Stock-Level (clause 2.8, read-only): how many distinct items of the last
// 20 orders of a district (orders D_NEXT_O_ID - 20 .. D_NEXT_O_ID - 1, their
// ORDER-LINE rows read by key) have a stock below the threshold. Config::stock_level_districts > 1
// repeats it for the following districts (the thesis's variant scans 20): d + 1, ..., 10 and on
// into the next warehouse whose primary is on the same node, so the transaction stays local as the
// specification's is.
#include <algorithm>
#include <cstring>
#include <vector>

#include "tpcc/tpcc_schema.h"
#include "tpcc/tpcc_txns.h"

namespace drtmx::bench::tpcc {

using txn::Abort;

uint32_t next_local_warehouse(const Config& c, uint32_t w) {
  const uint32_t W = c.warehouses();
  const uint32_t next = w + c.nodes;  // same primary node: partitions p, p + nodes, ...
  return next <= W ? next : (w - 1) % c.nodes + 1;
}

Abort stock_level(txn::Txn& tx, const Config& c, const StockLevelInput& in, StockLevelOutput* out) {
  *out = StockLevelOutput{};
  uint32_t w = in.w, d = in.d;
  txn::Txn::Rows rows;
  std::vector<uint32_t> items;
  std::vector<txn::TableKey> keys;
  for (uint32_t k = 0; k < c.stock_level_districts; ++k) {
    if (k > 0 && ++d > kDistricts) d = 1, w = next_local_warehouse(c, w);
    DistrictNextRow dr;  // D_NEXT_O_ID: its own record (tpcc_schema.h)
    if (Abort r = tx.get(kDistrictNext, district_key(w, d), &dr); r != Abort::kNone) return r;
    const uint32_t hi = dr.d_next_o_id - 1;
    const uint32_t lo = dr.d_next_o_id > 20 ? dr.d_next_o_id - 20 : 1;
    // The orders first (one batch of reads): their line counts name the
    // lines, which are then read by key in one batch — cheaper than a scan
    // of the range, which reads row by row and is re-scanned at validation.
    keys.clear();
    for (uint32_t o = lo; o <= hi; ++o) keys.push_back({kOrder, order_key(w, d, o)});
    if (Abort r = tx.prefetch(keys, false); r != Abort::kNone) return r;
    std::vector<txn::TableKey> line_keys;
    for (const txn::TableKey& key : keys) {
      OrderRow o;
      if (Abort r = tx.get(kOrder, key.key, &o); r != Abort::kNone) return r;
      for (uint32_t ol = 1; ol <= o.o_ol_cnt; ++ol)
        line_keys.push_back({kOrderLine, order_line_key(w, d, o.o_id, ol)});
    }
    if (Abort r = tx.prefetch(line_keys, false); r != Abort::kNone) return r;
    items.clear();
    for (const txn::TableKey& key : line_keys) {
      OrderLineRow l;
      if (Abort r = tx.get(kOrderLine, key.key, &l); r != Abort::kNone) return r;
      items.push_back(l.ol_i_id);
    }
    std::sort(items.begin(), items.end());
    items.erase(std::unique(items.begin(), items.end()), items.end());
    keys.clear();
    for (uint32_t i : items) keys.push_back({kStock, stock_key(w, i)});
    if (Abort r = tx.prefetch(keys, false); r != Abort::kNone) return r;
    for (const txn::TableKey& key : keys) {
      StockRow s;
      if (Abort r = tx.get(kStock, key.key, &s); r != Abort::kNone) return r;
      if (s.s_quantity < in.threshold) ++out->low_stock;
    }
  }
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpcc
