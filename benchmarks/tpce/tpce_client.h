// The per-coroutine TPC-E driver: the customer emulator's draws (the ten
// transactions by the mix, inputs by the specification's distributions,
// without think times), the market emulator's side (Trade-Result of
// submitted trades, Market-Feed), the timed Data-Maintenance (one client of
// the cluster, every --dm-interval-ms) and Trade-Cleanup (one client per
// node, every --tc-interval-ms over the node's units).
//
// Home: coroutine `index` lives on node index / (threads x coroutines); its
// customers are those of the load units whose primary is that node (units
// node, node + nodes, ...), so the customer side is local; market data and
// other units' trades are read wherever they are.
//
// A Trade-Result drawn when the node's emulator holds no submitted trade
// runs a Trade-Order instead (which feeds it).
//
// sums(): ClientSum.
#pragma once

#include <memory>

#include "driver/workload.h"
#include "tpce/tpce_config.h"
#include "tpce/tpce_market.h"

namespace drtmx::bench::tpce {

enum ClientSum : int {
  kOrdersCommitted,    // Trade-Orders committed (trades added)
  kResultsCommitted,   // Trade-Results committed (trades completed)
  kCanceledByCleanup,  // trades Trade-Cleanup canceled
  kTradeIdsFull,       // Trade-Orders not run: the client's trade ids were used up
  kRollbacks,          // Trade-Orders rolled back (frame 5)
  kClientSums
};

// The node of coroutine `index`, and its units.
uint32_t client_node(const Config& c, uint32_t index);
// Trades one client may add: the sequence numbers of its slot above the
// initial trades' (kTradeSeqs - initial_trades(); tpce_schema.h).
uint32_t trade_quota(const Config& c);

// `market` is shared by the clients of a node and outlives them. `seq`:
// the sequence number of the client's first trade (0: after a load, the
// first above the loader's; after a restart, one above its slot's highest).
std::unique_ptr<WorkloadClient> make_client(const Config& c, uint32_t index, uint64_t seed,
                                            Market* market, uint32_t seq = 0);

}  // namespace drtmx::bench::tpce
