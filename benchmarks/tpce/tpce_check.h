// TPC-E consistency checks, on every partition copy a node hosts
// (primaries and backups alike) after a run (logs drained) or right after
// loading. TPC-E states its integrity rules with the transactions (clause
// 3.3) rather than as a list; these are the ones that tie the tables
// together. Per load unit copy (check_unit), from the local store only:
//   C1 trade status transitions: each trade's TRADE_HISTORY statuses are one
//      of the legal paths (PNDG -> SBMT -> CMPT, SBMT -> CMPT, PNDG or SBMT
//      -> CNCL via Trade-Cleanup, or still PNDG / SBMT), and T_ST_ID is
//      the last of them
//   C2 settlement and cash: a trade has a SETTLEMENT row exactly when it
//      is completed, and a CASH_TRANSACTION exactly when it is a completed
//      cash trade, with CT_AMT = SE_AMT
//   C3 balances: CA_BAL = the account's balance before any trade + the sum
//      of its CT_AMT
//   C4 brokers: B_NUM_TRADES = the completed trades of the broker's
//      accounts, B_COMM_TOTAL = the sum of their T_COMM
//   C5 holdings: HS_QTY = sum(H_QTY) of the account's holdings of the
//      security, never 0; holdings non-zero and of HS_QTY's sign
//   C6 holding history: per holding, the HOLDING_HISTORY changes add up to
//      its H_QTY (0 once closed)
//   C7 indexes: TRADE_BY_ACCOUNT and TRADE_BY_SECURITY hold one entry per
//      trade, for its account / security; TRADE_REQUEST_BY_SECTOR one per
//      pending trade; the rows every other table needs exist
// Across nodes (check_sums on node 0):
//   C8 pending limit orders: the TRADE_REQUEST rows (in the securities'
//      partitions) are exactly the pending trades, with their fields
//   C9 the trades added and completed and canceled in the run equal the
//      Trade-Orders, Trade-Results and Trade-Cleanup cancellations that
//      committed
//   C10 replication: every backup copy of every partition equals its
//      primary (digests per table), every node's replicated tables the same
#pragma once

#include <cstdint>
#include <vector>

#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "tpce/tpce_config.h"

namespace drtmx::bench::tpce {

// What one unit copy contributes to the cluster sums.
struct UnitSums {
  int64_t pending = 0, pending_hash = 0;    // pending trades of the unit (C8)
  int64_t requests = 0, requests_hash = 0;  // TRADE_REQUEST rows of this security partition, by
                                            // the unit of their trade: [unit]
  std::vector<int64_t> requests_by_unit, requests_hash_by_unit;
  int64_t added = 0, completed = 0, canceled = 0;  // during the run (C9)
  std::vector<int64_t> table_digest;               // by table id
};

// Checks unit u's copy on `node`; an error names the condition, the unit,
// the row and whether the copy is the primary or a backup.
Result<UnitSums> check_unit(const store::tables::StoreNode& node, const store::Catalog& cat,
                            const Config& c, uint32_t u);

// node_audit(): the conditions on every copy this node hosts, then the sums
// check_sums needs.
Result<std::vector<int64_t>> audit_node(const store::tables::StoreNode& node,
                                        const store::Catalog& cat, const Config& c);
// check() on node 0: C8, C9 (against the clients' ClientSum), C10.
Status check_sums(const Config& c, const std::vector<int64_t>& node_sums,
                  const std::vector<int64_t>& client_sums);

}  // namespace drtmx::bench::tpce
