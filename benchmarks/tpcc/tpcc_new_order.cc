// New-Order (clause 2.4): enter an order of 5..15 lines for a customer of
// the terminal's warehouse, taking each line's quantity from the stock of
// its supplying warehouse (1 % remote by default). 1 % of New-Orders name an
// unused item as their last line and roll back (kUserAbort, no trace).
//
// Reads are issued together (Txn::prefetch, one batch): WAREHOUSE and
// DISTRICT (their static parts: W_TAX, D_TAX — never written, so reading them
// early costs no conflicts), CUSTOMER, the ITEMs (a local replica) and every
// STOCK (remote stocks in parallel; marked for update when read by
// get_for_update). DISTRICT's D_NEXT_O_ID part — the record every New-Order
// of the district writes — last (see below). Writes: the STOCKs,
// D_NEXT_O_ID, and inserts of ORDER, NEW-ORDER, ORDER-BY-CUSTOMER and the
// ORDER-LINEs. W_YTD and D_YTD (Payment's) are records of their own
// (tpcc_schema.h), so Payments do not invalidate New-Orders.
#include <array>
#include <cstring>
#include <vector>

#include "tpcc/tpcc_schema.h"
#include "tpcc/tpcc_txns.h"

namespace drtmx::bench::tpcc {

using txn::Abort;

Abort new_order(txn::Txn& tx, const Config& c, const NewOrderInput& in, NewOrderOutput* out) {
  *out = NewOrderOutput{};
  const uint32_t n = in.ol_cnt;
  // The rollback item (id > c.items) is not prefetched: its get() reports it.
  std::vector<txn::TableKey> reads = {{kWarehouse, warehouse_key(in.w)},
                                      {kDistrict, district_key(in.w, in.d)},
                                      {kCustomer, customer_key(in.w, in.d, in.c)}};
  for (uint32_t i = 0; i < n; ++i) {
    if (in.item[i] > c.items) continue;
    reads.push_back({kItem, item_key(in.item[i])});
    reads.push_back({kStock, stock_key(in.supply_w[i], in.item[i])});
  }
  if (Abort r = tx.prefetch(reads, false); r != Abort::kNone) return r;

  WarehouseRow w;
  if (Abort r = tx.get(kWarehouse, warehouse_key(in.w), &w); r != Abort::kNone) return r;
  DistrictRow d;
  if (Abort r = tx.get(kDistrict, district_key(in.w, in.d), &d); r != Abort::kNone) return r;
  CustomerRow cu;
  if (Abort r = tx.get(kCustomer, customer_key(in.w, in.d, in.c), &cu); r != Abort::kNone) return r;

  // The lines first (items and stocks), so that D_NEXT_O_ID — the record
  // every New-Order of the district writes — is read as late as possible:
  // the shorter the time between its read and validation, the fewer
  // conflicts.
  std::array<OrderLineRow, kMaxOrderLines> lines{};
  int64_t sum = 0;
  bool all_local = true;
  for (uint32_t i = 0; i < n; ++i) {
    ItemRow item;
    if (Abort r = tx.get(kItem, item_key(in.item[i]), &item); r != Abort::kNone) {
      if (r != Abort::kRecordMissing) return r;
      out->rolled_back = true;  // clause 2.4.2.3: "Item number is not valid"
      return tx.user_abort();
    }
    StockRow s;
    const uint64_t sk = stock_key(in.supply_w[i], in.item[i]);
    if (Abort r = tx.get_for_update(kStock, sk, &s); r != Abort::kNone) return r;
    const int32_t q = static_cast<int32_t>(in.quantity[i]);
    s.s_quantity =
        static_cast<int16_t>(s.s_quantity >= q + 10 ? s.s_quantity - q : s.s_quantity - q + 91);
    s.s_ytd += in.quantity[i];
    s.s_order_cnt += 1;
    if (in.supply_w[i] != in.w) s.s_remote_cnt += 1, all_local = false;
    if (Abort r = tx.put(kStock, sk, &s); r != Abort::kNone) return r;

    OrderLineRow& l = lines[i];
    l.ol_d_id = static_cast<uint8_t>(in.d);
    l.ol_w_id = static_cast<uint16_t>(in.w);
    l.ol_number = static_cast<uint8_t>(i + 1);
    l.ol_i_id = in.item[i];
    l.ol_supply_w_id = static_cast<uint16_t>(in.supply_w[i]);
    l.ol_delivery_d = 0;
    l.ol_quantity = static_cast<uint8_t>(in.quantity[i]);
    l.ol_amount = int64_t{q} * item.i_price;
    static_assert(sizeof l.ol_dist_info == sizeof s.s_dist[0]);
    std::memcpy(l.ol_dist_info, s.s_dist[in.d - 1], sizeof l.ol_dist_info);
    sum += l.ol_amount;
  }

  DistrictNextRow next;
  const uint64_t dk = district_key(in.w, in.d);
  if (Abort r = tx.get_for_update(kDistrictNext, dk, &next); r != Abort::kNone) return r;
  const uint32_t o_id = next.d_next_o_id;
  if (o_id > kMaxOrderId) {  // beyond the order keys' encoding (tpcc_schema.h)
    out->full = true;
    return tx.user_abort();
  }
  next.d_next_o_id = o_id + 1;
  if (Abort r = tx.put(kDistrictNext, dk, &next); r != Abort::kNone) return r;

  OrderRow o{};
  o.o_id = o_id;
  o.o_d_id = static_cast<uint8_t>(in.d);
  o.o_w_id = static_cast<uint16_t>(in.w);
  o.o_c_id = in.c;
  o.o_entry_d = in.entry_d;
  o.o_carrier_id = 0;
  o.o_ol_cnt = static_cast<uint8_t>(n);
  o.o_all_local = all_local ? 1 : 0;
  if (Abort r = tx.insert(kOrder, order_key(in.w, in.d, o_id), &o); r != Abort::kNone) return r;
  NewOrderRow no{};  // value-initialized: padding bytes are zero on every copy
  no.no_o_id = o_id;
  no.no_d_id = static_cast<uint8_t>(in.d);
  no.no_w_id = static_cast<uint16_t>(in.w);
  if (Abort r = tx.insert(kNewOrder, new_order_key(in.w, in.d, o_id), &no); r != Abort::kNone)
    return r;
  OrderByCustomerRow oc{};
  oc.o_id = o_id;
  if (Abort r = tx.insert(kOrderByCustomer, order_customer_key(in.w, in.d, in.c, o_id), &oc);
      r != Abort::kNone)
    return r;
  for (uint32_t i = 0; i < n; ++i) {
    lines[i].ol_o_id = o_id;
    if (Abort r = tx.insert(kOrderLine, order_line_key(in.w, in.d, o_id, i + 1), &lines[i]);
        r != Abort::kNone)
      return r;
  }
  // total = sum * (1 - c_discount) * (1 + w_tax + d_tax), rates in 1/10000.
  out->total = sum * (10000 - cu.c_discount) / 10000 * (10000 + w.w_tax + d.d_tax) / 10000;
  out->o_id = o_id;
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpcc
