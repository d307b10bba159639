// SmallBank (the H-Store definition) as a drtmx-bench workload, written with
// the public stored-procedure API (txn/txn.h) the way a user would.
//
// Tables: SAVINGS and CHECKING, hash tables keyed by customer id, one int64
// balance in cents each. Customers are partitioned in blocks of
// `accounts` (default 100 000) per partition, one partition per worker
// thread of the cluster (nodes x threads partitions); partition p's primary
// is node p % nodes (catalog placement), its backups the next replicas-1.
//
// Transactions (default mix 15/15/15/25/15/15, --mix):
//   Amalgamate(c0, c1)       moves all of c0's savings and checking to c1's checking
//   Balance(c)               reads c's savings and checking (read-only)
//   DepositChecking(c, v)    checking[c] += v                      (v in 1..100)
//   SendPayment(c0, c1, v)   checking[c0] -= v, checking[c1] += v; aborts if short
//   TransactSavings(c, v)    savings[c] += v (v in -100..100); aborts if it would go < 0
//   WriteCheck(c, v)         checking[c] -= v, or v + 1 when savings + checking < v
// Customers are drawn over all partitions (no locality, as in the thesis);
// `hot-pct` percent of each partition's customers are hot and take
// `hot-access-pct` percent of the draws (default 4 % / 90 %).
//
// Oracle (check): the sum of all balances at the primaries equals the
// initial sum plus the sum of the money the committed transactions added;
// every backup copy of every partition has the primary's balance sum and
// digest (so backups hold the same data). A mismatch fails the run.
//
// Audits (--audit-pct, default 0; the tests' serializability check): a
// group of `audit-group` customers per partition is moved only by
// SendPayment between group members; an audit is a read-only transaction
// summing the group's checking balances, which must always equal the
// group's initial sum. A differing audit fails the run.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/workload.h"

namespace drtmx::bench::smallbank {

constexpr txn::TableId kSavings = 1, kChecking = 2;
constexpr int kTypes = 7;  // six SmallBank transactions + the audit
enum Type : int {
  kAmalgamate,
  kBalance,
  kDepositChecking,
  kSendPayment,
  kTransactSavings,
  kWriteCheck,
  kAudit
};

struct Config {
  uint32_t accounts = 100000;  // customers per partition
  uint32_t partitions = 1;     // nodes x threads
  uint32_t hot_pct = 4;
  uint32_t hot_access_pct = 90;
  std::array<uint32_t, 6> mix = {15, 15, 15, 25, 15, 15};  // percent, sums to 100
  uint32_t audit_pct = 0;                                  // percent of draws that are audits
  uint32_t audit_group = 4;      // audited customers per partition (when audit_pct > 0)
  uint16_t replicas = 1;         // copies of each partition (the oracle checks the backups)
  std::vector<uint16_t> copies;  // after a failover: per partition (empty: replicas)
  int64_t backups(uint32_t p) const {
    return int64_t{p < copies.size() ? copies[p] : replicas} - 1;
  }

  uint32_t hot_per_partition() const;
  // Customers that ordinary draws use per partition (the audit group excluded).
  uint32_t ordinary_per_partition() const;
  uint64_t customers() const { return uint64_t{accounts} * partitions; }
};

// Initial balances (cents), a pure function of the customer id so every
// copy loads the same.
int64_t initial_savings(uint64_t c);
int64_t initial_checking(uint64_t c);

// Parses the workload options (--accounts, --hot-pct, --hot-access-pct,
// --mix, --audit-pct, --audit-group); errors name the option.
Result<Config> parse(const WorkloadOptions& o, const WorkloadEnv& env);

// The registry entry (src/driver/workloads.cc).
WorkloadInfo info();

std::unique_ptr<Workload> make(const Config& c);

}  // namespace drtmx::bench::smallbank
