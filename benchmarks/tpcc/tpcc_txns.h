// The five TPC-C transactions (clause 2.4 - 2.8) as stored procedures over
// the public Txn API. Each takes its input (drawn by the client, tpcc_client.cc)
// and fills an output; a procedure may run several times (aborts are
// retried), so it resets its output on every attempt.
//
// Procedures return Abort::kNone to commit, an engine abort to be retried,
// or kUserAbort when the transaction rolls back on purpose (the New-Order
// with an unused item) or cannot run (a full table, see `full`).
#pragma once

#include <array>
#include <cstdint>

#include "tpcc/tpcc_config.h"
#include "txn/txn.h"

namespace drtmx::bench::tpcc {

struct NewOrderInput {
  uint32_t w = 1, d = 1, c = 1;
  uint32_t ol_cnt = 5;
  std::array<uint32_t, kMaxOrderLines> item{};  // the last may be unused (rollback)
  std::array<uint32_t, kMaxOrderLines> supply_w{};
  std::array<uint32_t, kMaxOrderLines> quantity{};
  int64_t entry_d = 0;
};
struct NewOrderOutput {
  uint32_t o_id = 0;
  int64_t total = 0;         // cents
  bool rolled_back = false;  // an unused item id (clause 2.4.2.3)
  bool full = false;         // the district used up its order ids (kMaxOrderId)
};
txn::Abort new_order(txn::Txn& tx, const Config& c, const NewOrderInput& in, NewOrderOutput* out);

struct PaymentInput {
  uint32_t w = 1, d = 1;      // the terminal's warehouse and district
  uint32_t c_w = 1, c_d = 1;  // the customer's
  bool by_name = false;
  uint32_t c = 1;                              // by id
  uint32_t last = 0;                           // by name: the last-name number (0..999)
  int64_t amount = 100;                        // cents
  uint32_t history_slot = 1, history_seq = 0;  // the HISTORY key (unique per client)
  int64_t date = 0;
};
struct PaymentOutput {
  uint32_t c_id = 0;
  int64_t c_balance = 0;
};
txn::Abort payment(txn::Txn& tx, const Config& c, const PaymentInput& in, PaymentOutput* out);

struct OrderStatusInput {
  uint32_t w = 1, d = 1;
  bool by_name = false;
  uint32_t c = 1, last = 0;
};
struct OrderStatusOutput {
  uint32_t c_id = 0, o_id = 0, lines = 0;
  int64_t c_balance = 0;
};
txn::Abort order_status(txn::Txn& tx, const Config& c, const OrderStatusInput& in,
                        OrderStatusOutput* out);

struct DeliveryInput {
  uint32_t w = 1;
  uint32_t carrier = 1;
  int64_t date = 0;
  // Per district (index 1..10): an order id at or below the district's
  // oldest undelivered order (0: unknown). The search for it starts there
  // instead of at the district's first key: NEW-ORDER's delivered head is
  // removed, and a scan from 0 would walk past every row ever delivered
  // (tpcc_deliveries.h: why a committed Delivery's ids are safe bounds).
  std::array<uint32_t, kDistricts + 1> from{};
};
struct DeliveryOutput {
  uint32_t delivered = 0;                        // districts that had an undelivered order
  std::array<uint32_t, kDistricts + 1> o_ids{};  // per district: the order delivered, or 0
};
txn::Abort delivery(txn::Txn& tx, const Config& c, const DeliveryInput& in, DeliveryOutput* out);

struct StockLevelInput {
  uint32_t w = 1, d = 1;
  int32_t threshold = 10;
};
struct StockLevelOutput {
  uint32_t low_stock = 0;
};
txn::Abort stock_level(txn::Txn& tx, const Config& c, const StockLevelInput& in,
                       StockLevelOutput* out);

// The customer a by-name selection picks: the scan of CUSTOMER-BY-NAME for
// (w, d, last), sorted by C_FIRST, position ceil(n / 2) (clause 2.5.2.2).
// kUserAbort when no customer has that last name.
txn::Abort customer_by_name(txn::Txn& tx, uint32_t w, uint32_t d, uint32_t last, uint32_t* c_id);

// The warehouses Stock-Level visits after (w, d) when it scans more than
// one district: d + 1, ..., 10, then the districts of the next warehouse
// whose primary is on the same node, and so on (wrapping).
uint32_t next_local_warehouse(const Config& c, uint32_t w);

}  // namespace drtmx::bench::tpcc
