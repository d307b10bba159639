// TPC-C loader (tpcc_loader.h).
#include "tpcc/tpcc_loader.h"

#include <cstring>
#include <numeric>
#include <vector>

#include "tpcc/tpcc_random.h"
#include "tpcc/tpcc_schema.h"

namespace drtmx::bench::tpcc {
namespace {

template <typename Row>
Status put(store::tables::StoreNode& node, const store::TableSpec& t, uint64_t key, const Row& r,
           uint32_t w) {
  Status s = node.load(t, key, {reinterpret_cast<const uint8_t*>(&r), sizeof(Row)});
  if (!s.is_ok()) {
    return s.with_context("loading table '" + t.name + "' of warehouse " + std::to_string(w));
  }
  return s;
}

void address(Rng& r, Address* a) {
  astring(r, a->street_1, sizeof a->street_1, 10, 20);
  astring(r, a->street_2, sizeof a->street_2, 10, 20);
  astring(r, a->city, sizeof a->city, 10, 20);
  astring(r, a->state, sizeof a->state, 2, 2);
  zip(r, a->zip);
}

uint64_t seed_of(const Config& c, uint32_t w, uint32_t what) {
  return c.seed * 0x9E3779B97F4A7C15ull ^ (uint64_t{w} << 20) ^ what;
}

}  // namespace

Status load_items(store::tables::StoreNode& node, const store::Catalog& cat, const Config& c) {
  const store::TableSpec& t = *cat.find(kItem);
  Rng r(seed_of(c, 0, 1));
  for (uint32_t i = 1; i <= c.items; ++i) {
    ItemRow it{};
    it.i_id = i;
    it.i_im_id = static_cast<uint32_t>(r.uniform(1, 10000));
    astring(r, it.i_name, sizeof it.i_name, 14, 24);
    it.i_price = static_cast<int64_t>(r.uniform(100, 10000));
    data_string(r, it.i_data, sizeof it.i_data, 26, 50);
    DRTMX_RETURN_IF_ERROR(put(node, t, item_key(i), it, 0));
  }
  return Status();
}

Status load_warehouse(store::tables::StoreNode& node, const store::Catalog& cat, const Config& c,
                      uint32_t w) {
  const NURandC C = NURandC::for_load(c.seed);
  const int64_t per_customer_payment = 1000;  // H_AMOUNT 10.00, C_YTD_PAYMENT 10.00
  {
    Rng r(seed_of(c, w, 2));
    WarehouseRow wr{};
    wr.w_id = static_cast<uint16_t>(w);
    astring(r, wr.w_name, sizeof wr.w_name, 6, 10);
    address(r, &wr.w_address);
    wr.w_tax = static_cast<int32_t>(r.uniform(0, 2000));
    DRTMX_RETURN_IF_ERROR(put(node, *cat.find(kWarehouse), warehouse_key(w), wr, w));
    // 300 000.00 at full scale: the sum of the districts' D_YTD (3.3.2.1)
    // and of the HISTORY amounts (3.3.2.8).
    const WarehouseYtdRow ytd{int64_t{kDistricts} * c.customers * per_customer_payment};
    DRTMX_RETURN_IF_ERROR(put(node, *cat.find(kWarehouseYtd), warehouse_key(w), ytd, w));
  }
  {
    Rng r(seed_of(c, w, 3));
    const store::TableSpec& t = *cat.find(kStock);
    for (uint32_t i = 1; i <= c.items; ++i) {
      StockRow s{};
      s.s_i_id = i;
      s.s_w_id = static_cast<uint16_t>(w);
      s.s_quantity = static_cast<int16_t>(r.uniform(10, 100));
      for (auto& dist : s.s_dist) astring(r, dist, sizeof dist, 24, 24);
      data_string(r, s.s_data, sizeof s.s_data, 26, 50);
      DRTMX_RETURN_IF_ERROR(put(node, t, stock_key(w, i), s, w));
    }
  }
  const store::TableSpec& dt = *cat.find(kDistrict);
  const store::TableSpec& dyt = *cat.find(kDistrictYtd);
  const store::TableSpec& dnt = *cat.find(kDistrictNext);
  const store::TableSpec& ct = *cat.find(kCustomer);
  const store::TableSpec& ht = *cat.find(kHistory);
  const store::TableSpec& nt = *cat.find(kCustomerByName);
  const store::TableSpec& ot = *cat.find(kOrder);
  const store::TableSpec& olt = *cat.find(kOrderLine);
  const store::TableSpec& not_ = *cat.find(kNewOrder);
  const store::TableSpec& oct = *cat.find(kOrderByCustomer);
  const uint32_t first_new = c.customers - c.initial_new_orders() + 1;
  for (uint32_t d = 1; d <= kDistricts; ++d) {
    Rng r(seed_of(c, w, 16 + d));
    DistrictRow dr{};
    dr.d_id = static_cast<uint8_t>(d);
    dr.d_w_id = static_cast<uint16_t>(w);
    astring(r, dr.d_name, sizeof dr.d_name, 6, 10);
    address(r, &dr.d_address);
    dr.d_tax = static_cast<int32_t>(r.uniform(0, 2000));
    DRTMX_RETURN_IF_ERROR(put(node, dt, district_key(w, d), dr, w));
    const DistrictYtdRow ytd{int64_t{c.customers} * per_customer_payment};  // 30 000.00
    DRTMX_RETURN_IF_ERROR(put(node, dyt, district_key(w, d), ytd, w));
    const DistrictNextRow next{c.customers + 1};
    DRTMX_RETURN_IF_ERROR(put(node, dnt, district_key(w, d), next, w));

    for (uint32_t cid = 1; cid <= c.customers; ++cid) {
      CustomerRow cr{};
      cr.c_id = cid;
      cr.c_d_id = static_cast<uint8_t>(d);
      cr.c_w_id = static_cast<uint16_t>(w);
      const uint32_t last = load_last_name_number(r, cid, C.c_last);
      set_text(cr.c_last, sizeof cr.c_last, last_name(last));
      std::memcpy(cr.c_middle, "OE", 2);
      astring(r, cr.c_first, sizeof cr.c_first, 8, 16);
      address(r, &cr.c_address);
      nstring(r, cr.c_phone, sizeof cr.c_phone, 16, 16);
      cr.c_since = kLoadTime;
      std::memcpy(cr.c_credit, r.percent(10) ? "BC" : "GC", 2);
      cr.c_credit_lim = 5000000;
      cr.c_discount = static_cast<int32_t>(r.uniform(0, 5000));
      cr.c_balance = -1000;
      cr.c_ytd_payment = per_customer_payment;
      cr.c_payment_cnt = 1;
      cr.c_delivery_cnt = 0;
      astring(r, cr.c_data, sizeof cr.c_data, 300, 500);
      DRTMX_RETURN_IF_ERROR(put(node, ct, customer_key(w, d, cid), cr, w));

      CustomerByNameRow ir{};
      ir.c_id = cid;
      std::memcpy(ir.c_first, cr.c_first, sizeof ir.c_first);
      DRTMX_RETURN_IF_ERROR(put(node, nt, customer_name_key(w, d, last, cid), ir, w));

      HistoryRow hr{};
      hr.h_c_id = cid;
      hr.h_c_d_id = hr.h_d_id = static_cast<uint8_t>(d);
      hr.h_c_w_id = hr.h_w_id = static_cast<uint16_t>(w);
      hr.h_date = kLoadTime;
      hr.h_amount = per_customer_payment;
      astring(r, hr.h_data, sizeof hr.h_data, 12, 24);
      DRTMX_RETURN_IF_ERROR(put(node, ht, history_key(w, 0, (d - 1) * c.customers + cid), hr, w));
    }

    // Orders: customer ids a random permutation of 1..customers.
    std::vector<uint32_t> perm(c.customers);
    std::iota(perm.begin(), perm.end(), 1u);
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[r.uniform(0, i - 1)]);
    for (uint32_t o = 1; o <= c.customers; ++o) {
      const bool delivered = o < first_new;
      OrderRow orow{};
      orow.o_id = o;
      orow.o_d_id = static_cast<uint8_t>(d);
      orow.o_w_id = static_cast<uint16_t>(w);
      orow.o_c_id = perm[o - 1];
      orow.o_entry_d = kLoadTime;
      orow.o_carrier_id = delivered ? static_cast<uint8_t>(r.uniform(1, 10)) : 0;
      orow.o_ol_cnt = static_cast<uint8_t>(r.uniform(kMinOrderLines, kMaxOrderLines));
      orow.o_all_local = 1;
      DRTMX_RETURN_IF_ERROR(put(node, ot, order_key(w, d, o), orow, w));
      OrderByCustomerRow oc{o};
      DRTMX_RETURN_IF_ERROR(put(node, oct, order_customer_key(w, d, orow.o_c_id, o), oc, w));
      for (uint32_t ol = 1; ol <= orow.o_ol_cnt; ++ol) {
        OrderLineRow l{};
        l.ol_o_id = o;
        l.ol_d_id = static_cast<uint8_t>(d);
        l.ol_w_id = static_cast<uint16_t>(w);
        l.ol_number = static_cast<uint8_t>(ol);
        l.ol_i_id = static_cast<uint32_t>(r.uniform(1, c.items));
        l.ol_supply_w_id = static_cast<uint16_t>(w);
        l.ol_delivery_d = delivered ? kLoadTime : 0;
        l.ol_quantity = 5;
        l.ol_amount = delivered ? 0 : static_cast<int64_t>(r.uniform(1, 999999));
        astring(r, l.ol_dist_info, sizeof l.ol_dist_info, 24, 24);
        DRTMX_RETURN_IF_ERROR(put(node, olt, order_line_key(w, d, o, ol), l, w));
      }
      if (!delivered) {
        NewOrderRow n{};  // value-initialized: the same (zero) padding on every copy
        n.no_o_id = o;
        n.no_d_id = static_cast<uint8_t>(d);
        n.no_w_id = static_cast<uint16_t>(w);
        DRTMX_RETURN_IF_ERROR(put(node, not_, new_order_key(w, d, o), n, w));
      }
    }
  }
  return Status();
}

Status load(store::tables::StoreNode& node, const store::Catalog& cat, const Config& c) {
  DRTMX_RETURN_IF_ERROR(load_items(node, cat, c));
  for (store::PartitionId p : cat.hosted(node.node(), *cat.find(kWarehouse))) {
    DRTMX_RETURN_IF_ERROR(load_warehouse(node, cat, c, p + 1));
  }
  return Status();
}

}  // namespace drtmx::bench::tpcc
