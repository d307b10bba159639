// TPC-C consistency conditions (tpcc_check.h).
#include "tpcc/tpcc_check.h"

#include <cstring>
#include <string>

#include "base/hash.h"
#include "tpcc/tpcc_client.h"
#include "tpcc/tpcc_schema.h"

namespace drtmx::bench::tpcc {
namespace {

using store::TableSpec;
using store::tables::StoreNode;

constexpr int kSumsPerWarehouse = 6;

int64_t digest_of(uint64_t table, uint64_t key, const void* row, size_t n) {
  uint64_t h = hash_mix(key, table);
  const auto* b = static_cast<const uint8_t*>(row);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, b + i, std::min<size_t>(8, n - i));
    h = hash_mix(word, h);
  }
  return static_cast<int64_t>(h & 0x7fffffffu);
}

class Checker {
 public:
  Checker(const StoreNode& node, const store::Catalog& cat, const Config& c, uint32_t w)
      : node_(node), cat_(cat), c_(c), w_(w), p_(w - 1) {
    const auto& wt = *cat.find(kWarehouse);
    backup_ = !node.is_primary(wt, p_);
  }

  Result<WarehouseSums> run() {
    sums_.history_by_customer_warehouse.assign(c_.warehouses(), 0);
    // Every part of the vertically partitioned WAREHOUSE and DISTRICT rows
    // (tpcc_schema.h) must exist (get() fails on a missing one).
    WarehouseRow wr;
    DRTMX_RETURN_IF_ERROR(get(kWarehouse, warehouse_key(w_), &wr, 0));
    WarehouseYtdRow wy;
    DRTMX_RETURN_IF_ERROR(get(kWarehouseYtd, warehouse_key(w_), &wy, 0));
    std::vector<District> districts(kDistricts + 1);
    int64_t d_ytd_sum = 0;
    for (uint32_t d = 1; d <= kDistricts; ++d) {
      District& dd = districts[d];
      DRTMX_RETURN_IF_ERROR(get(kDistrict, district_key(w_, d), &dd.row, d));
      DRTMX_RETURN_IF_ERROR(get(kDistrictNext, district_key(w_, d), &dd.next, d));
      DRTMX_RETURN_IF_ERROR(get(kDistrictYtd, district_key(w_, d), &dd.ytd, d));
      if (wr.w_id != w_ || dd.row.d_w_id != w_ || dd.row.d_id != d)
        return violated(0, "WAREHOUSE and DISTRICT rows carry their ids", d, "bad W_ID or D_ID");
      d_ytd_sum += dd.ytd.d_ytd;
      sums_.orders_added += int64_t{dd.next.d_next_o_id} - 1 - c_.customers;
    }
    const int64_t w_ytd = wy.w_ytd;
    if (w_ytd != d_ytd_sum) {
      return violated(
          1, "W_YTD = sum(D_YTD)", 0,
          "W_YTD " + std::to_string(w_ytd) + " vs sum(D_YTD) " + std::to_string(d_ytd_sum));
    }
    // HISTORY (8, 9) and the cross-warehouse sums of condition 10.
    std::vector<int64_t> h_by_district(kDistricts + 1, 0);
    int64_t h_total = 0;
    DRTMX_RETURN_IF_ERROR(scan<HistoryRow>(
        kHistory, wh(w_), wh(w_ + 1) - 1, 0, [&](uint64_t, const HistoryRow& h) -> Status {
          if (h.h_w_id != w_ || h.h_d_id < 1 || h.h_d_id > kDistricts || h.h_c_w_id < 1 ||
              h.h_c_w_id > c_.warehouses()) {
            return violated(8, "HISTORY row of this warehouse", 0, "a row with bad ids");
          }
          h_by_district[h.h_d_id] += h.h_amount;
          h_total += h.h_amount;
          sums_.history_by_customer_warehouse[h.h_c_w_id - 1] += h.h_amount;
          return Status();
        }));
    if (w_ytd != h_total) {
      return violated(
          8, "W_YTD = sum(H_AMOUNT)", 0,
          "W_YTD " + std::to_string(w_ytd) + " vs sum(H_AMOUNT) " + std::to_string(h_total));
    }
    for (uint32_t d = 1; d <= kDistricts; ++d) {
      if (districts[d].ytd.d_ytd != h_by_district[d]) {
        return violated(9, "D_YTD = sum(H_AMOUNT)", d,
                        "D_YTD " + std::to_string(districts[d].ytd.d_ytd) + " vs sum(H_AMOUNT) " +
                            std::to_string(h_by_district[d]));
      }
      DRTMX_RETURN_IF_ERROR(district(d, districts[d].next.d_next_o_id));
    }
    // STOCK rows (digest only).
    for (uint32_t i = 1; i <= c_.items; ++i) {
      StockRow s;
      DRTMX_RETURN_IF_ERROR(get(kStock, stock_key(w_, i), &s, 0));
    }
    return sums_;
  }

 private:
  // The three parts of a DISTRICT row.
  struct District {
    DistrictRow row;
    DistrictNextRow next;
    DistrictYtdRow ytd;
  };

  Status district(uint32_t d, uint32_t d_next_o_id) {
    // Orders 1 .. D_NEXT_O_ID - 1 may exist (condition 2 below); the order
    // keys allow no more than kMaxOrderId, so neither may D_NEXT_O_ID - 1.
    if (d_next_o_id < 1 || d_next_o_id - 1 > kMaxOrderId)
      return violated(2, "D_NEXT_O_ID - 1 = max(O_ID)", d,
                      "D_NEXT_O_ID = " + std::to_string(d_next_o_id) + ", outside 1.." +
                          std::to_string(kMaxOrderId + 1));
    const uint32_t max_o = d_next_o_id - 1;
    // ORDER
    struct O {
      bool present = false;
      uint8_t carrier = 0, ol_cnt = 0, lines = 0;
      uint32_t c_id = 0;
      bool indexed = false;
    };
    std::vector<O> orders(max_o + 2);
    uint64_t order_rows = 0, ol_cnt_sum = 0;
    uint32_t max_order = 0;
    DRTMX_RETURN_IF_ERROR(scan<OrderRow>(
        kOrder, order_key(w_, d, 0), order_key(w_, d, kMaxOrderId), d,
        [&](uint64_t k, const OrderRow& o) -> Status {
          const uint32_t id = order_id_of(k);
          if (id > max_o)
            return violated(2, "D_NEXT_O_ID - 1 = max(O_ID)", d,
                            "order " + std::to_string(id) +
                                " above D_NEXT_O_ID - 1 = " + std::to_string(max_o));
          if (id == 0 || o.o_id != id || o.o_c_id < 1 || o.o_c_id > c_.customers)
            return violated(2, "ORDER row", d, "order " + std::to_string(id) + " has bad ids");
          orders[id] = {true, o.o_carrier_id, o.o_ol_cnt, 0, o.o_c_id, false};
          ++order_rows;
          ol_cnt_sum += o.o_ol_cnt;
          max_order = std::max(max_order, id);
          return Status();
        }));
    // NEW-ORDER
    uint64_t no_rows = 0;
    uint32_t no_min = ~0u, no_max = 0;
    DRTMX_RETURN_IF_ERROR(scan<NewOrderRow>(
        kNewOrder, new_order_key(w_, d, 0), new_order_key(w_, d, kMaxOrderId), d,
        [&](uint64_t k, const NewOrderRow&) -> Status {
          const uint32_t id = order_id_of(k);
          if (id > max_o || !orders[id].present)
            return violated(5, "a NEW-ORDER row has its ORDER", d,
                            "new-order " + std::to_string(id) + " has no ORDER row");
          if (orders[id].carrier != 0)
            return violated(5, "O_CARRIER_ID null exactly when in NEW-ORDER", d,
                            "order " + std::to_string(id) + " is in NEW-ORDER with a carrier");
          orders[id].carrier = 0xff;  // mark: has a NEW-ORDER row
          ++no_rows;
          no_min = std::min(no_min, id);
          no_max = std::max(no_max, id);
          return Status();
        }));
    if (d_next_o_id - 1 != max_order || (no_rows > 0 && no_max != max_order)) {
      return violated(2, "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)", d,
                      "D_NEXT_O_ID - 1 = " + std::to_string(d_next_o_id - 1) +
                          ", max(O_ID) = " + std::to_string(max_order) + ", max(NO_O_ID) = " +
                          (no_rows ? std::to_string(no_max) : std::string("none")));
    }
    if (no_rows > 0 && no_max - no_min + 1 != no_rows) {
      return violated(3, "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER", d,
                      std::to_string(no_max) + " - " + std::to_string(no_min) + " + 1 vs " +
                          std::to_string(no_rows) + " rows");
    }
    for (uint32_t id = 1; id <= max_order; ++id) {
      if (orders[id].present && orders[id].carrier == 0)
        return violated(5, "O_CARRIER_ID null exactly when in NEW-ORDER", d,
                        "order " + std::to_string(id) + " has no carrier and no NEW-ORDER row");
    }
    // ORDER-LINE (4, 6, 7) and the delivered amounts per customer (12).
    std::vector<int64_t> delivered(c_.customers + 1, 0);
    uint64_t line_rows = 0;
    DRTMX_RETURN_IF_ERROR(scan<OrderLineRow>(
        kOrderLine, order_line_key(w_, d, 0, 0), order_line_key(w_, d, kMaxOrderId, 15), d,
        [&](uint64_t k, const OrderLineRow& l) -> Status {
          const uint32_t id = order_line_o_id(k);
          if (id > max_o || !orders[id].present)
            return violated(6, "O_OL_CNT = the order's ORDER-LINE rows", d,
                            "a line of order " + std::to_string(id) + ", which does not exist");
          O& o = orders[id];
          ++o.lines;
          ++line_rows;
          const bool undelivered = o.carrier == 0xff;
          if ((l.ol_delivery_d == 0) != undelivered)
            return violated(7, "OL_DELIVERY_D null exactly when O_CARRIER_ID is null", d,
                            "order " + std::to_string(id) + " line " + std::to_string(l.ol_number));
          if (!undelivered) delivered[o.c_id] += l.ol_amount;
          return Status();
        }));
    if (ol_cnt_sum != line_rows) {
      return violated(4, "sum(O_OL_CNT) = rows in ORDER-LINE", d,
                      std::to_string(ol_cnt_sum) + " vs " + std::to_string(line_rows));
    }
    for (uint32_t id = 1; id <= max_order; ++id) {
      if (orders[id].present && orders[id].lines != orders[id].ol_cnt)
        return violated(6, "O_OL_CNT = the order's ORDER-LINE rows", d,
                        "order " + std::to_string(id) + ": O_OL_CNT " +
                            std::to_string(orders[id].ol_cnt) + ", " +
                            std::to_string(orders[id].lines) + " lines");
    }
    // ORDER-BY-CUSTOMER: one entry per order, for its customer.
    uint64_t index_rows = 0;
    DRTMX_RETURN_IF_ERROR(scan<OrderByCustomerRow>(
        kOrderByCustomer, order_customer_key(w_, d, 0, kMaxOrderId),
        order_customer_key(w_, d, 0xffff, 0), d,
        [&](uint64_t k, const OrderByCustomerRow& e) -> Status {
          const uint32_t cid = (k >> 24) & 0xffff;
          const uint32_t id = kMaxOrderId - static_cast<uint32_t>(k & kMaxOrderId);
          if (e.o_id != id || id > max_o || !orders[id].present || orders[id].c_id != cid ||
              orders[id].indexed)
            return violated(
                0, "ORDER-BY-CUSTOMER matches ORDER", d,
                "entry for customer " + std::to_string(cid) + " order " + std::to_string(id));
          orders[id].indexed = true;
          ++index_rows;
          return Status();
        }));
    if (index_rows != order_rows)
      return violated(
          0, "ORDER-BY-CUSTOMER matches ORDER", d,
          std::to_string(index_rows) + " entries for " + std::to_string(order_rows) + " orders");
    // CUSTOMER (11, 12) and CUSTOMER-BY-NAME.
    uint64_t delivery_cnt = 0;
    for (uint32_t cid = 1; cid <= c_.customers; ++cid) {
      CustomerRow cu;
      DRTMX_RETURN_IF_ERROR(get(kCustomer, customer_key(w_, d, cid), &cu, d));
      delivery_cnt += cu.c_delivery_cnt;
      sums_.customer_ytd_payment += cu.c_ytd_payment;
      if (cu.c_balance + cu.c_ytd_payment != delivered[cid])
        return violated(12, "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)", d,
                        "customer " + std::to_string(cid) + ": " + std::to_string(cu.c_balance) +
                            " + " + std::to_string(cu.c_ytd_payment) + " vs " +
                            std::to_string(delivered[cid]));
    }
    const uint64_t loaded_delivered = c_.customers - c_.initial_new_orders();
    if (order_rows - no_rows != loaded_delivered + delivery_cnt) {
      return violated(11, "rows in ORDER - rows in NEW-ORDER = delivered orders", d,
                      std::to_string(order_rows) + " - " + std::to_string(no_rows) + " vs " +
                          std::to_string(loaded_delivered) + " loaded delivered + " +
                          std::to_string(delivery_cnt) + " C_DELIVERY_CNT");
    }
    uint64_t names = 0;
    DRTMX_RETURN_IF_ERROR(scan<CustomerByNameRow>(
        kCustomerByName, customer_name_key(w_, d, 0, 0), customer_name_key(w_, d, 0xffffff, 0xffff),
        d, [&](uint64_t, const CustomerByNameRow&) -> Status {
          ++names;
          return Status();
        }));
    if (names != c_.customers)
      return violated(0, "CUSTOMER-BY-NAME has one entry per customer", d,
                      std::to_string(names) + " entries");
    return Status();
  }

  template <typename Row>
  Status get(txn::TableId t, uint64_t key, Row* row, uint32_t d) {
    const TableSpec& spec = *cat_.find(t);
    auto r = node_.get_local(spec, key, {reinterpret_cast<uint8_t*>(row), sizeof(Row)});
    if (!r.is_ok()) return r.status();
    if (!*r)
      return violated(0, "the row exists", d,
                      "key " + std::to_string(key) + " missing from " + spec.name);
    const int64_t dg = digest_of(t, key, row, sizeof(Row));
    sums_.digest += dg;
    sums_.table_digest[t] += dg;
    return Status();
  }

  // Visits the rows of ordered table t with lo <= key <= hi in this copy.
  template <typename Row, typename Fn>
  Status scan(txn::TableId t, uint64_t lo, uint64_t hi, uint32_t d, Fn fn) {
    const TableSpec& spec = *cat_.find(t);
    const store::tables::LocalPartition* lp = node_.partition(t, p_);
    if (lp == nullptr || lp->tree == nullptr)
      return internal_error("tpcc check: no local copy of " + spec.name + " for warehouse " +
                            std::to_string(w_));
    std::vector<uint64_t> keys;
    std::vector<uint8_t> values;
    uint64_t start = lo;
    for (;;) {
      const bool end = lp->tree->scan(start, 4096, keys, values);
      for (uint64_t k : keys) {
        if (k > hi) return Status();
        Row row;
        auto r = node_.get_local(spec, k, {reinterpret_cast<uint8_t*>(&row), sizeof row});
        if (!r.is_ok()) return r.status();
        if (!*r) continue;  // removed between the index scan and the read (not after a drain)
        const int64_t dg = digest_of(t, k, &row, sizeof row);
        sums_.digest += dg;
        sums_.table_digest[t] += dg;
        DRTMX_RETURN_IF_ERROR(fn(k, row));
      }
      if (end || keys.empty() || keys.back() >= hi) return Status();
      start = keys.back() + 1;
    }
  }

  Status violated(int condition, const std::string& what, uint32_t d, const std::string& detail) {
    std::string where = "warehouse " + std::to_string(w_);
    if (d) where += " district " + std::to_string(d);
    where += backup_ ? " (a backup copy, node " : " (the primary, node ";
    where += std::to_string(node_.node()) + ")";
    const std::string cond = condition ? "consistency condition 3.3.2." + std::to_string(condition)
                                       : std::string("consistency of the indexes");
    return internal_error(cond + " (" + what + ") violated at " + where + ": " + detail);
  }

  const StoreNode& node_;
  const store::Catalog& cat_;
  const Config& c_;
  const uint32_t w_;
  const store::PartitionId p_;
  bool backup_ = false;
  WarehouseSums sums_;
};

}  // namespace

Result<WarehouseSums> check_warehouse(const StoreNode& node, const store::Catalog& cat,
                                      const Config& c, uint32_t w) {
  return Checker(node, cat, c, w).run();
}

Result<std::vector<int64_t>> audit_node(const StoreNode& node, const store::Catalog& cat,
                                        const Config& c) {
  const uint32_t W = c.warehouses();
  std::vector<int64_t> out(size_t{W} * (kSumsPerWarehouse + 2 * kTableIds), 0);
  const TableSpec& wt = *cat.find(kWarehouse);
  for (store::PartitionId p : cat.hosted(node.node(), wt)) {
    auto s = check_warehouse(node, cat, c, p + 1);
    if (!s.is_ok()) return s.status();
    const bool primary = node.is_primary(wt, p);
    int64_t* mine = &out[size_t{p} * kSumsPerWarehouse];
    int64_t* tables = &out[size_t{W} * kSumsPerWarehouse + size_t{p} * 2 * kTableIds];
    for (size_t t = 0; t < kTableIds; ++t) tables[2 * t + (primary ? 0 : 1)] += s->table_digest[t];
    if (primary) {
      for (uint32_t v = 0; v < W; ++v)
        out[size_t{v} * kSumsPerWarehouse] += s->history_by_customer_warehouse[v];
      mine[1] += s->customer_ytd_payment;
      mine[2] += s->digest;
      mine[5] += s->orders_added;
    } else {
      mine[3] += s->digest;
      mine[4] += 1;
    }
  }
  return out;
}

Status check_sums(const Config& c, const std::vector<int64_t>& node_sums,
                  const std::vector<int64_t>& client_sums) {
  const uint32_t W = c.warehouses();
  if (node_sums.size() != size_t{W} * (kSumsPerWarehouse + 2 * kTableIds) ||
      client_sums.size() != kClientSums)
    return internal_error("tpcc: audit vectors of unexpected size");
  if (client_sums[kOrdersFull] > 0) {
    return exhausted("tpcc: " + std::to_string(client_sums[kOrdersFull]) +
                     " New-Orders found their district's order ids used up: the order keys "
                     "allow " +
                     std::to_string(kMaxOrderId) + " orders per district (" +
                     std::to_string(kMaxOrderIdBits) + "-bit order ids)");
  }
  if (client_sums[kHistoryFull] > 0) {
    return exhausted("tpcc: " + std::to_string(client_sums[kHistoryFull]) +
                     " Payments found their client's HISTORY sequence numbers used up: the "
                     "HISTORY keys allow " +
                     std::to_string(kHistoryRowsPerClient) + " rows per client (" +
                     std::to_string(kHistorySeqBits) + "-bit sequence numbers)");
  }
  int64_t added = 0;
  for (uint32_t w = 1; w <= W; ++w) added += node_sums[size_t{w - 1} * kSumsPerWarehouse + 5];
  if (added != client_sums[kNewOrdersCommitted]) {
    return internal_error(
        "orders: " + std::to_string(added) + " orders were added to the districts, but " +
        std::to_string(client_sums[kNewOrdersCommitted]) + " New-Orders committed");
  }
  for (uint32_t w = 1; w <= W; ++w) {
    const int64_t* s = &node_sums[size_t{w - 1} * kSumsPerWarehouse];
    if (s[0] != s[1]) {
      return internal_error(
          "consistency condition 3.3.2.10 (C_BALANCE = delivered OL_AMOUNT - sum(H_AMOUNT); "
          "with 3.3.2.12 per customer: sum(C_YTD_PAYMENT) = sum(H_AMOUNT) of the customers) "
          "violated at warehouse " +
          std::to_string(w) + " (primaries): C_YTD_PAYMENT sum " + std::to_string(s[1]) +
          " vs HISTORY amount " + std::to_string(s[0]));
    }
    const int64_t backups = int64_t{w - 1 < c.copies.size() ? c.copies[w - 1] : c.replicas} - 1;
    if (s[4] != backups || s[3] != backups * s[2]) {
      std::string table = "?";
      const int64_t* t = &node_sums[size_t{W} * kSumsPerWarehouse + size_t{w - 1} * 2 * kTableIds];
      for (size_t id = 0; id < kTableIds; ++id) {
        if (t[2 * id + 1] != backups * t[2 * id]) {
          table = std::to_string(id);
          break;
        }
      }
      return internal_error("replication: the " + std::to_string(s[4]) +
                            " backup copies of warehouse " + std::to_string(w) +
                            " differ from its primary (expected " + std::to_string(backups) +
                            " copies of digest " + std::to_string(s[2]) + ", digests sum to " +
                            std::to_string(s[3]) + "; first differing table id " + table + ")");
    }
  }
  return Status();
}

}  // namespace drtmx::bench::tpcc
