// TPC-C tables (clause 1.3): row structs with the specification's columns
// and sizes, the table specs, and the 64-bit key encodings.
//
// Representation: identifiers are integers; money is int64 cents
// (numeric(n,2)); rates (w_tax, d_tax, c_discount, numeric(4,4)) are int32
// in 1/10000; dates are int64 (0 = null: O_CARRIER_ID and OL_DELIVERY_D are
// null when 0); text columns are char[N] of the specified size, NUL padded
// (not terminated when full).
//
// Keys: the warehouse id is in bits 48..63 of every key except ITEM's, and
// the partition of a key is its warehouse - 1 (kFunction, partition_of_key).
// Ordered keys sort as their scans need:
//   ORDER / NEW-ORDER     w | d << 40 | o_id               (oldest first)
//   ORDER-LINE            w | d << 40 | o_id << 4 | ol_number
//   CUSTOMER-BY-NAME      w | d << 40 | last-name number << 16 | c_id
//   ORDER-BY-CUSTOMER     w | d << 40 | c_id << 24 | (kMaxOrderId - o_id)
//                         (a customer's newest order first)
//   HISTORY               w | client slot << 28 | sequence (slot 0 = loader)
//
// The tables grow as rows arrive (their specs' capacities are the loaded
// row counts, a sizing hint); only these encodings bound them:
//   orders per district   kMaxOrderId = 2^24 - 1 (ORDER-BY-CUSTOMER's 24
//                         bits; ORDER, NEW-ORDER and ORDER-LINE allow more)
//   HISTORY rows          kHistoryRowsPerClient = 2^28 per client slot
//                         (sequence 0 .. 2^28 - 1), slots 1 .. 2^20 - 2
//
// Vertical partitioning (TPC-C v5.11 clause 1.4.5: "Vertical partitioning of
// tables is allowed. Groups of attributes (columns) of one table may be
// assigned to files, disks, or areas different from those storing the other
// attributes of that table", to be disclosed; clause 1.4.9: each attribute
// stays a single attribute; clause 1.5.2: a row must exist in all the
// partitions). The hot columns of WAREHOUSE and DISTRICT are records of their
// own, keyed like their row, so the transactions that write one do not
// invalidate the readers of the others:
//   WAREHOUSE = kWarehouse (W_ID, W_NAME, address, W_TAX; never written after
//               the load) + kWarehouseYtd (W_YTD; Payment writes it)
//   DISTRICT  = kDistrict (D_ID, D_W_ID, D_NAME, address, D_TAX; never
//               written) + kDistrictNext (D_NEXT_O_ID; New-Order writes it,
//               Stock-Level reads it) + kDistrictYtd (D_YTD; Payment writes it)
// Every column keeps its type and size; the loader writes all parts of a row
// and the consistency check requires all of them (a missing part fails it).
// Not met: clause 1.6's transparency (the procedures name the parts; the
// engine has no view that presents them as one table).
#pragma once

#include <cstdint>
#include <vector>

#include "store/catalog.h"
#include "tpcc/tpcc_config.h"
#include "txn/txn.h"

namespace drtmx::bench::tpcc {

// Table ids.
constexpr txn::TableId kWarehouse = 1, kDistrict = 2, kCustomer = 3, kHistory = 4, kNewOrder = 5,
                       kOrder = 6, kOrderLine = 7, kItem = 8, kStock = 9, kCustomerByName = 10,
                       kOrderByCustomer = 11, kWarehouseYtd = 12, kDistrictNext = 13,
                       kDistrictYtd = 14;

// The highest order id a district may reach: order ids fit the 24 bits of
// the ORDER-BY-CUSTOMER key (New-Order reports the district full beyond it).
constexpr uint32_t kMaxOrderIdBits = 24;
constexpr uint32_t kMaxOrderId = (1u << kMaxOrderIdBits) - 1;

struct Address {
  char street_1[20];
  char street_2[20];
  char city[20];
  char state[2];
  char zip[9];
};

// WAREHOUSE, vertically partitioned (see the header comment).
struct WarehouseRow {
  uint16_t w_id;
  char w_name[10];
  Address w_address;
  int32_t w_tax;  // 1/10000
};
struct WarehouseYtdRow {
  int64_t w_ytd;  // cents
};

// DISTRICT, vertically partitioned (see the header comment).
struct DistrictRow {
  uint8_t d_id;
  uint16_t d_w_id;
  char d_name[10];
  Address d_address;
  int32_t d_tax;
};
struct DistrictNextRow {
  uint32_t d_next_o_id;
};
struct DistrictYtdRow {
  int64_t d_ytd;  // cents
};

struct CustomerRow {
  uint32_t c_id;
  uint8_t c_d_id;
  uint16_t c_w_id;
  char c_first[16];
  char c_middle[2];
  char c_last[16];
  Address c_address;
  char c_phone[16];
  int64_t c_since;
  char c_credit[2];       // "GC" or "BC"
  int64_t c_credit_lim;   // cents
  int32_t c_discount;     // 1/10000
  int64_t c_balance;      // cents
  int64_t c_ytd_payment;  // cents
  uint32_t c_payment_cnt;
  uint32_t c_delivery_cnt;
  char c_data[500];
};

struct HistoryRow {
  uint32_t h_c_id;
  uint8_t h_c_d_id;
  uint16_t h_c_w_id;
  uint8_t h_d_id;
  uint16_t h_w_id;
  int64_t h_date;
  int64_t h_amount;  // cents
  char h_data[24];
};

struct NewOrderRow {
  uint32_t no_o_id;
  uint8_t no_d_id;
  uint16_t no_w_id;
};

struct OrderRow {
  uint32_t o_id;
  uint8_t o_d_id;
  uint16_t o_w_id;
  uint32_t o_c_id;
  int64_t o_entry_d;
  uint8_t o_carrier_id;  // 0 = null
  uint8_t o_ol_cnt;
  uint8_t o_all_local;
};

struct OrderLineRow {
  uint32_t ol_o_id;
  uint8_t ol_d_id;
  uint16_t ol_w_id;
  uint8_t ol_number;
  uint32_t ol_i_id;
  uint16_t ol_supply_w_id;
  int64_t ol_delivery_d;  // 0 = null
  uint8_t ol_quantity;
  int64_t ol_amount;  // cents
  char ol_dist_info[24];
};

struct ItemRow {
  uint32_t i_id;
  uint32_t i_im_id;
  char i_name[24];
  int64_t i_price;  // cents
  char i_data[50];
};

struct StockRow {
  uint32_t s_i_id;
  uint16_t s_w_id;
  int16_t s_quantity;
  char s_dist[kDistricts][24];
  uint32_t s_ytd;
  uint16_t s_order_cnt;
  uint16_t s_remote_cnt;
  char s_data[50];
};

// Secondary indexes (ordered tables of their own, written by the
// transactions that write the rows they index).
struct CustomerByNameRow {
  uint32_t c_id;
  char c_first[16];  // the index sorts customers of one last name by this
};
struct OrderByCustomerRow {
  uint32_t o_id;
};

// Key encodings (see the header comment).
constexpr uint64_t wh(uint32_t w) {
  return uint64_t{w} << 48;
}
constexpr uint64_t warehouse_key(uint32_t w) {
  return wh(w);
}
constexpr uint64_t district_key(uint32_t w, uint32_t d) {
  return wh(w) | d;
}
constexpr uint64_t customer_key(uint32_t w, uint32_t d, uint32_t c) {
  return wh(w) | uint64_t{d} << 32 | c;
}
constexpr uint64_t stock_key(uint32_t w, uint32_t i) {
  return wh(w) | i;
}
constexpr uint64_t item_key(uint32_t i) {
  return i;
}
constexpr uint64_t order_key(uint32_t w, uint32_t d, uint32_t o) {
  return wh(w) | uint64_t{d} << 40 | o;
}
constexpr uint64_t new_order_key(uint32_t w, uint32_t d, uint32_t o) {
  return order_key(w, d, o);
}
constexpr uint64_t order_line_key(uint32_t w, uint32_t d, uint32_t o, uint32_t ol) {
  return wh(w) | uint64_t{d} << 40 | uint64_t{o} << 4 | ol;
}
constexpr uint64_t customer_name_key(uint32_t w, uint32_t d, uint32_t last, uint32_t c) {
  return wh(w) | uint64_t{d} << 40 | uint64_t{last} << 16 | c;
}
constexpr uint64_t order_customer_key(uint32_t w, uint32_t d, uint32_t c, uint32_t o) {
  return wh(w) | uint64_t{d} << 40 | uint64_t{c} << 24 | (kMaxOrderId - o);
}
constexpr uint64_t history_key(uint32_t w, uint32_t slot, uint32_t seq) {
  return wh(w) | uint64_t{slot} << 28 | seq;
}
constexpr uint32_t warehouse_of(uint64_t key) {
  return static_cast<uint32_t>(key >> 48);
}
constexpr uint32_t partition_of_key(uint64_t key) {
  return warehouse_of(key) - 1;
}
constexpr uint32_t order_line_o_id(uint64_t key) {
  return static_cast<uint32_t>((key >> 4) & 0xfffffffffull);
}
constexpr uint32_t order_id_of(uint64_t key) {
  return static_cast<uint32_t>(key & 0xffffffffu);
}
constexpr uint32_t district_of_ordered(uint64_t key) {
  return (key >> 40) & 0xff;
}

constexpr uint32_t kHistorySeqBits = 28;
constexpr uint32_t kMaxHistorySlot = (1u << 20) - 1;
// HISTORY rows one client (slot) may add: its sequence numbers.
constexpr uint32_t kHistoryRowsPerClient = 1u << kHistorySeqBits;

// The limits above keep every key's fields apart.
static_assert(district_of_ordered(order_line_key(65535, kDistricts, kMaxOrderId, 15)) ==
              kDistricts);
static_assert(order_line_o_id(order_line_key(1, 1, kMaxOrderId, 15)) == kMaxOrderId);
static_assert(order_id_of(order_key(1, 1, kMaxOrderId)) == kMaxOrderId);
static_assert(district_of_ordered(order_customer_key(65535, kDistricts, 65535, 1)) == kDistricts);
static_assert(warehouse_of(history_key(65535, kMaxHistorySlot, kHistoryRowsPerClient - 1)) ==
              65535);

// The nine tables and two indexes for `c`; each capacity is the table's
// loaded rows per warehouse (the tables grow during the run).
std::vector<store::TableSpec> table_specs(const Config& c);

}  // namespace drtmx::bench::tpcc
