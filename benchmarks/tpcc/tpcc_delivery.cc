// Delivery (clause 2.7): for each of the ten districts of a warehouse, the
// oldest undelivered order (the first NEW-ORDER row: a scan with limit 1) is
// delivered — its NEW-ORDER row removed, O_CARRIER_ID set, its lines'
// OL_DELIVERY_D set, and the sum of their amounts added to the customer's
// balance. A district without undelivered orders is skipped. One
// transaction for all ten (the specification allows one per district; one
// keeps the work per commit as the specification counts it).
//
// The oldest undelivered order is searched for from in.from[d] (a lower
// bound, DeliveryInput): the scan's range and its validation are
// [from, oldest], and the rows below `from` are gone for good.
#include <array>
#include <vector>

#include "tpcc/tpcc_schema.h"
#include "tpcc/tpcc_txns.h"

namespace drtmx::bench::tpcc {

using txn::Abort;

Abort delivery(txn::Txn& tx, const Config& c, const DeliveryInput& in, DeliveryOutput* out) {
  (void)c;
  *out = DeliveryOutput{};
  // The oldest undelivered order of each district (one scan each), then
  // the ORDERs, their lines and their customers in one batch of reads each
  // (independent across districts) instead of one round trip per row.
  txn::Txn::Rows rows;
  std::array<uint32_t, kDistricts + 1> o_ids{};  // 0: the district has none
  std::vector<txn::TableKey> keys;
  for (uint32_t d = 1; d <= kDistricts; ++d) {
    if (Abort r = tx.scan(kNewOrder, new_order_key(in.w, d, in.from[d]),
                          new_order_key(in.w, d, kMaxOrderId), 1, &rows);
        r != Abort::kNone)
      return r;
    if (rows.keys.empty()) continue;
    o_ids[d] = order_id_of(rows.keys[0]);
    out->o_ids[d] = o_ids[d];
    if (Abort r = tx.remove(kNewOrder, rows.keys[0]); r != Abort::kNone) return r;
    keys.push_back({kOrder, order_key(in.w, d, o_ids[d])});
  }
  if (Abort r = tx.prefetch(keys, true); r != Abort::kNone) return r;
  std::array<uint32_t, kDistricts + 1> c_ids{}, ol_cnts{};
  keys.clear();
  for (uint32_t d = 1; d <= kDistricts; ++d) {
    if (o_ids[d] == 0) continue;
    OrderRow o;
    const uint64_t ok = order_key(in.w, d, o_ids[d]);
    if (Abort r = tx.get_for_update(kOrder, ok, &o); r != Abort::kNone) return r;
    o.o_carrier_id = static_cast<uint8_t>(in.carrier);
    if (Abort r = tx.put(kOrder, ok, &o); r != Abort::kNone) return r;
    c_ids[d] = o.o_c_id;
    ol_cnts[d] = o.o_ol_cnt;
    // Its lines by key (O_OL_CNT of them).
    for (uint32_t ol = 1; ol <= o.o_ol_cnt; ++ol)
      keys.push_back({kOrderLine, order_line_key(in.w, d, o_ids[d], ol)});
  }
  if (Abort r = tx.prefetch(keys, true); r != Abort::kNone) return r;
  std::array<int64_t, kDistricts + 1> sums{};
  keys.clear();
  for (uint32_t d = 1; d <= kDistricts; ++d) {
    if (o_ids[d] == 0) continue;
    for (uint32_t ol = 1; ol <= ol_cnts[d]; ++ol) {
      OrderLineRow l;
      const uint64_t lk = order_line_key(in.w, d, o_ids[d], ol);
      if (Abort r = tx.get_for_update(kOrderLine, lk, &l); r != Abort::kNone) return r;
      l.ol_delivery_d = in.date;
      sums[d] += l.ol_amount;
      if (Abort r = tx.put(kOrderLine, lk, &l); r != Abort::kNone) return r;
    }
    keys.push_back({kCustomer, customer_key(in.w, d, c_ids[d])});
  }
  if (Abort r = tx.prefetch(keys, true); r != Abort::kNone) return r;
  for (uint32_t d = 1; d <= kDistricts; ++d) {
    if (o_ids[d] == 0) continue;
    CustomerRow cu;
    const uint64_t ck = customer_key(in.w, d, c_ids[d]);
    if (Abort r = tx.get_for_update(kCustomer, ck, &cu); r != Abort::kNone) return r;
    cu.c_balance += sums[d];
    cu.c_delivery_cnt += 1;
    if (Abort r = tx.put(kCustomer, ck, &cu); r != Abort::kNone) return r;
    ++out->delivered;
  }
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpcc
