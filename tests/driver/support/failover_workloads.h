// The scaled-down workloads the failover tests kill a node under (volatile
// and durable alike): 3 nodes, 3 copies, 4 coroutines, runs of 3 s, small
// enough to finish in seconds beside other tests, with TPC-E's mix even so
// every transaction type runs through the failover.
#pragma once

#include <string>

namespace drtmx::bench::testing {

inline const std::string kFailoverSmallBank =
    "--bench=smallbank --nodes=3 --coroutines=4 --replicas=3 --accounts=2000 --hot-pct=10 "
    "--seconds=3 --warmup=0.5 ";
inline const std::string kFailoverTpcc =
    "--bench=tpcc --nodes=3 --coroutines=4 --replicas=3 --items=2000 --customers=60 "
    "--seconds=3 --warmup=0.5 ";
inline const std::string kFailoverTpce =
    "--bench=tpce --nodes=3 --coroutines=4 --replicas=3 --initial-trade-days=0.02 "
    "--market-days=20 --dm-interval-ms=100 --tc-interval-ms=100 "
    "--mix=10,10,10,10,10,10,10,10,10,10 --seconds=3 --warmup=0.5 ";

}  // namespace drtmx::bench::testing
