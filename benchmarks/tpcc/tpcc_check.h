// The TPC-C consistency conditions (clause 3.3.2), checked on every
// partition copy a node hosts — primaries and backups alike — after a run
// (logs drained) or right after loading.
//
// Per warehouse copy (check_warehouse), from the local store only:
//   1  W_YTD = sum(D_YTD)
//   2  D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)
//   3  max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER
//   4  sum(O_OL_CNT) = rows in ORDER-LINE
//   5  O_CARRIER_ID is null exactly when the order has a NEW-ORDER row
//   6  O_OL_CNT = the order's rows in ORDER-LINE
//   7  OL_DELIVERY_D is null exactly when its order's O_CARRIER_ID is
//   8  W_YTD = sum(H_AMOUNT) of the warehouse's HISTORY
//   9  D_YTD = sum(H_AMOUNT) of the district's HISTORY
//   11 rows in ORDER - rows in NEW-ORDER = orders loaded delivered +
//      sum(C_DELIVERY_CNT) (each Delivery moves one order across; at load
//      this is the specification's 2100)
//   12 C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT) of the customer's
//      delivered lines
//   and the indexes: ORDER-BY-CUSTOMER has exactly one entry per ORDER row,
//   for its customer; CUSTOMER-BY-NAME one per customer, for its last name.
// Condition 10 (C_BALANCE = delivered OL_AMOUNT - sum(H_AMOUNT) of the
// customer) needs HISTORY rows of other warehouses (a remote Payment is
// recorded at the paying warehouse): with 12 checked per customer it
// reduces to C_YTD_PAYMENT = sum(H_AMOUNT) of the customer, which is checked
// summed per warehouse across nodes (WarehouseSums, on node 0).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "tpcc/tpcc_config.h"

namespace drtmx::bench::tpcc {

constexpr size_t kTableIds = 15;  // table ids are 1..14 (tpcc_schema.h)

struct WarehouseSums {
  int64_t customer_ytd_payment = 0;                    // sum(C_YTD_PAYMENT) of its customers
  std::vector<int64_t> history_by_customer_warehouse;  // [w - 1]: sum(H_AMOUNT), H_C_W_ID = w
  int64_t digest = 0;  // of every row of the copy (backups must equal the primary)
  std::array<int64_t, kTableIds> table_digest{};  // the same per table id
  int64_t orders_added = 0;  // sum over districts of D_NEXT_O_ID - 1 - the loaded orders
};

// Checks warehouse w's copy on `node`; an error names the condition, the
// warehouse, the district and whether the copy is the primary or a backup.
Result<WarehouseSums> check_warehouse(const store::tables::StoreNode& node,
                                      const store::Catalog& cat, const Config& c, uint32_t w);

// node_audit(): the conditions on every copy this node hosts, then per
// warehouse 6 values summed over nodes: [history amount of its customers
// (primaries), C_YTD_PAYMENT sum (primary), primary digest, backup digests,
// backup copies, orders added (primary)], then per warehouse and table id
// [primary digest, backup digests] (to name the table a backup differs in).
Result<std::vector<int64_t>> audit_node(const store::tables::StoreNode& node,
                                        const store::Catalog& cat, const Config& c);
// check() on node 0: condition 10 per warehouse, backups = primaries, the
// orders added = the New-Orders the clients saw commit (a rolled-back or
// lost one shows), and the clients' full-table counts (ClientSum).
Status check_sums(const Config& c, const std::vector<int64_t>& node_sums,
                  const std::vector<int64_t>& client_sums);

}  // namespace drtmx::bench::tpcc
