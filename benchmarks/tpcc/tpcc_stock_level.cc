// Stock-Level (clause 2.8, read-only): how many distinct items of the last
// 20 orders of a district (orders D_NEXT_O_ID - 20 .. D_NEXT_O_ID - 1, their
// ORDER-LINE rows by one range scan) have a stock below the threshold.
// Config::stock_level_districts > 1 repeats it for the following districts (the thesis's variant
// scans 20): d + 1, ..., 10 and on into the next warehouse whose primary is on the same node, so
// the transaction stays local as the specification's is.
#include <cstddef>
#include <cstring>
#include <vector>

#include "tpcc/tpcc_schema.h"
#include "tpcc/tpcc_txns.h"

namespace drtmx::bench::tpcc {

using txn::Abort;

namespace {
constexpr txn::Field kStockQuantity{sizeof(StockRow), offsetof(StockRow, s_quantity),
                                    sizeof(StockRow::s_quantity)};
}  // namespace

uint32_t next_local_warehouse(const Config& c, uint32_t w) {
  const uint32_t W = c.warehouses();
  const uint32_t next = w + c.nodes;  // same primary node: partitions p, p + nodes, ...
  return next <= W ? next : (w - 1) % c.nodes + 1;
}

Abort stock_level(txn::Txn& tx, const Config& c, const StockLevelInput& in, StockLevelOutput* out) {
  *out = StockLevelOutput{};
  uint32_t w = in.w, d = in.d;
  txn::Txn::Rows rows;
  std::vector<txn::TableKey> keys;
  std::vector<int16_t> quantities;
  thread_local std::vector<uint64_t> seen;  // item ids met in this district (all 0 between calls)
  for (uint32_t k = 0; k < c.stock_level_districts; ++k) {
    if (k > 0 && ++d > kDistricts) d = 1, w = next_local_warehouse(c, w);
    DistrictNextRow dr;  // D_NEXT_O_ID: its own record (tpcc_schema.h)
    if (Abort r = tx.get(kDistrictNext, district_key(w, d), &dr); r != Abort::kNone) return r;
    const uint32_t hi = dr.d_next_o_id - 1;
    const uint32_t lo = dr.d_next_o_id > 20 ? dr.d_next_o_id - 20 : 1;
    // One range scan over the lines of orders lo .. hi (ORDER-LINE keys
    // sort by order, then line number): leaves come in one doorbell batch
    // and the records in batches, where reading the ORDER rows and then
    // each line by key took a lookup (often an owner RPC, for keys newer
    // than the learned cache) per row — 1.9x slower alone, measured.
    rows.keys.clear();
    rows.values.clear();
    if (hi >= lo) {
      if (Abort r = tx.scan(kOrderLine, order_line_key(w, d, lo, 1),
                            order_line_key(w, d, hi, kMaxOrderLines), 20 * kMaxOrderLines, &rows);
          r != Abort::kNone) {
        return r;
      }
    }
    // The distinct items, in the order first met: a bitmap of item ids
    // (12.5 KB at full scale) instead of sorting ~200 ids per district
    // (std::sort was 2.5 % of a 20-district run's samples); only the bits
    // set are cleared again.
    keys.clear();
    for (size_t i = 0; i < rows.keys.size(); ++i) {
      OrderLineRow l;
      std::memcpy(&l, rows.values.data() + i * sizeof l, sizeof l);
      const uint32_t id = l.ol_i_id;
      if (id / 64 >= seen.size()) seen.resize(id / 64 + 1, 0);
      const uint64_t bit = uint64_t{1} << (id % 64);
      if (seen[id / 64] & bit) continue;
      seen[id / 64] |= bit;
      keys.push_back({kStock, stock_key(w, id)});
    }
    for (const txn::TableKey& key : keys) {
      const auto id = static_cast<uint32_t>(key.key);  // stock_key: the item in the low bits
      seen[id / 64] &= ~(uint64_t{1} << (id % 64));
    }
    // S_QUANTITY is all the clause reads of a STOCK row: one field of
    // each (a snapshot may then load one cache line of the six-line row).
    quantities.resize(keys.size());
    if (Abort r = tx.get_fields(keys, kStockQuantity, quantities.data()); r != Abort::kNone) {
      return r;
    }
    for (const int16_t q : quantities) {
      if (q < in.threshold) ++out->low_stock;
    }
  }
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpcc
