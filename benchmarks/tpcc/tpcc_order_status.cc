// Order-Status (clause 2.6, read-only): a customer's balance, their latest
// order (the first entry of ORDER-BY-CUSTOMER for them: the index key puts
// the newest order first) and its lines (a scan of ORDER-LINE).
#include <cstring>

#include "tpcc/tpcc_schema.h"
#include "tpcc/tpcc_txns.h"

namespace drtmx::bench::tpcc {

using txn::Abort;

Abort order_status(txn::Txn& tx, const Config& c, const OrderStatusInput& in,
                   OrderStatusOutput* out) {
  (void)c;
  *out = OrderStatusOutput{};
  uint32_t cid = in.c;
  if (in.by_name) {
    if (Abort r = customer_by_name(tx, in.w, in.d, in.last, &cid); r != Abort::kNone) return r;
  }
  CustomerRow cu;
  if (Abort r = tx.get(kCustomer, customer_key(in.w, in.d, cid), &cu); r != Abort::kNone) return r;
  txn::Txn::Rows rows;
  if (Abort r = tx.scan(kOrderByCustomer, order_customer_key(in.w, in.d, cid, kMaxOrderId),
                        order_customer_key(in.w, in.d, cid, 0), 1, &rows);
      r != Abort::kNone)
    return r;
  out->c_id = cid;
  out->c_balance = cu.c_balance;
  if (rows.keys.empty()) return Abort::kNone;  // a customer without orders
  OrderByCustomerRow oc;
  std::memcpy(&oc, rows.values.data(), sizeof oc);
  OrderRow o;
  if (Abort r = tx.get(kOrder, order_key(in.w, in.d, oc.o_id), &o); r != Abort::kNone) return r;
  if (Abort r = tx.scan(kOrderLine, order_line_key(in.w, in.d, oc.o_id, 1),
                        order_line_key(in.w, in.d, oc.o_id, kMaxOrderLines), o.o_ol_cnt, &rows);
      r != Abort::kNone)
    return r;
  out->o_id = oc.o_id;
  out->lines = static_cast<uint32_t>(rows.keys.size());
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpcc
