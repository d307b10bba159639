// Payment (clause 2.5): a customer pays; the amount goes to the warehouse's
// and district's year-to-date totals and the customer's balance, and a
// HISTORY row records it. The customer is chosen by id (40 %) or by last
// name (60 %, the middle one of the matching customers by first name), and
// belongs to another warehouse 15 % of the time (a distributed transaction).
// Also the by-name selection Order-Status shares (customer_by_name).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "tpcc/tpcc_random.h"
#include "tpcc/tpcc_schema.h"
#include "tpcc/tpcc_txns.h"

namespace drtmx::bench::tpcc {

using txn::Abort;

Abort customer_by_name(txn::Txn& tx, uint32_t w, uint32_t d, uint32_t last, uint32_t* c_id) {
  // A scan reads every row it returns and stops only at its limit, so the
  // range is read in small chunks (a last name has about customers / 1000
  // customers per district).
  constexpr size_t kChunk = 8;
  std::vector<CustomerByNameRow> found;
  txn::Txn::Rows rows;
  uint64_t from = customer_name_key(w, d, last, 0);
  const uint64_t to = customer_name_key(w, d, last, 0xffff);
  for (;;) {
    if (Abort r = tx.scan(kCustomerByName, from, to, kChunk, &rows); r != Abort::kNone) return r;
    const size_t got = rows.keys.size();
    found.resize(found.size() + got);
    std::memcpy(found.data() + found.size() - got, rows.values.data(),
                got * sizeof(CustomerByNameRow));
    if (got < kChunk) break;
    from = rows.keys.back() + 1;
  }
  const size_t n = found.size();
  if (n == 0) return tx.user_abort();
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::memcmp(a.c_first, b.c_first, sizeof a.c_first) < 0;  // NUL-padded: text order
  });
  *c_id = found[(n + 1) / 2 - 1].c_id;  // position ceil(n / 2)
  return Abort::kNone;
}

Abort payment(txn::Txn& tx, const Config& c, const PaymentInput& in, PaymentOutput* out) {
  (void)c;
  *out = PaymentOutput{};
  uint32_t cid = in.c;
  if (in.by_name) {
    if (Abort r = customer_by_name(tx, in.c_w, in.c_d, in.last, &cid); r != Abort::kNone) return r;
  }
  // One batch: the customer (possibly remote) and the static parts of
  // WAREHOUSE and DISTRICT (names for H_DATA; never written, so read early
  // at no risk). W_YTD and D_YTD — records of their own (tpcc_schema.h),
  // which every Payment of the warehouse / district writes — come last, after
  // the customer's update and the HISTORY insert, to keep the time between
  // their read and validation short.
  const uint64_t wk = warehouse_key(in.w), dk = district_key(in.w, in.d),
                 ck = customer_key(in.c_w, in.c_d, cid);
  const txn::TableKey first[] = {{kCustomer, ck}, {kWarehouse, wk}, {kDistrict, dk}};
  if (Abort r = tx.prefetch(first, false); r != Abort::kNone) return r;
  WarehouseRow w;
  DistrictRow d;
  CustomerRow cu;
  if (Abort r = tx.get_for_update(kCustomer, ck, &cu); r != Abort::kNone) return r;
  if (Abort r = tx.get(kWarehouse, wk, &w); r != Abort::kNone) return r;
  if (Abort r = tx.get(kDistrict, dk, &d); r != Abort::kNone) return r;
  cu.c_balance -= in.amount;
  cu.c_ytd_payment += in.amount;
  cu.c_payment_cnt += 1;
  if (std::memcmp(cu.c_credit, "BC", 2) == 0) {
    // Clause 2.5.2.2: the payment's ids and amount go in front of C_DATA,
    // which keeps its first 500 characters.
    std::string entry = std::to_string(cid) + " " + std::to_string(in.c_d) + " " +
                        std::to_string(in.c_w) + " " + std::to_string(in.d) + " " +
                        std::to_string(in.w) + " " + std::to_string(in.amount / 100) + "." +
                        std::to_string(in.amount % 100 / 10) + std::to_string(in.amount % 10) + " ";
    set_text(cu.c_data, sizeof cu.c_data, entry + text(cu.c_data, sizeof cu.c_data));
  }
  if (Abort r = tx.put(kCustomer, ck, &cu); r != Abort::kNone) return r;

  HistoryRow h{};
  h.h_c_id = cid;
  h.h_c_d_id = static_cast<uint8_t>(in.c_d);
  h.h_c_w_id = static_cast<uint16_t>(in.c_w);
  h.h_d_id = static_cast<uint8_t>(in.d);
  h.h_w_id = static_cast<uint16_t>(in.w);
  h.h_date = in.date;
  h.h_amount = in.amount;
  set_text(h.h_data, sizeof h.h_data,
           text(w.w_name, sizeof w.w_name) + "    " + text(d.d_name, sizeof d.d_name));
  if (Abort r = tx.insert(kHistory, history_key(in.w, in.history_slot, in.history_seq), &h);
      r != Abort::kNone)
    return r;

  const txn::TableKey ytd[] = {{kWarehouseYtd, wk}, {kDistrictYtd, dk}};
  if (Abort r = tx.prefetch(ytd, true); r != Abort::kNone) return r;
  WarehouseYtdRow wy;
  DistrictYtdRow dy;
  if (Abort r = tx.get_for_update(kWarehouseYtd, wk, &wy); r != Abort::kNone) return r;
  if (Abort r = tx.get_for_update(kDistrictYtd, dk, &dy); r != Abort::kNone) return r;
  wy.w_ytd += in.amount;
  dy.d_ytd += in.amount;
  if (Abort r = tx.put(kWarehouseYtd, wk, &wy); r != Abort::kNone) return r;
  if (Abort r = tx.put(kDistrictYtd, dk, &dy); r != Abort::kNone) return r;
  out->c_id = cid;
  out->c_balance = cu.c_balance;
  return Abort::kNone;
}

}  // namespace drtmx::bench::tpcc
