// What drtmx-bench needs from a benchmark (SmallBank, TPC-C, a user's own):
// its tables, its loader, a per-coroutine source of transactions, and the
// consistency check that ends every run.
//
// The driver builds the catalog from tables() on every node, loads each
// node's partition copies with load(), runs one WorkloadClient per
// transaction coroutine (retrying aborted transactions with back-off and
// calling committed() once per commit), and after the run gathers
// node_audit() from every node, sums the vectors element-wise and hands the
// sums to check() on node 0. A failing check fails the run.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "txn/engine.h"

namespace drtmx::bench {

struct TxnDraw {
  int type = 0;         // index into Workload::txn_types()
  txn::Procedure proc;  // may be re-run on abort: must reset its outputs each attempt
  // kReadOnly: the procedure only reads (get, prefetch, read_ahead, scan);
  // the engine then runs it as a read-only transaction — validated OCC, or
  // a snapshot that never aborts under MVCC (--mvcc=dst).
  txn::Kind kind = txn::Kind::kReadWrite;
};

// One coroutine's transaction source (owns its random state).
class WorkloadClient {
 public:
  virtual ~WorkloadClient() = default;
  virtual TxnDraw next() = 0;
  // The transaction last drawn committed.
  virtual void committed() {}
  // Values summed over every client of the cluster for check() (e.g. the
  // money the committed transactions added); appended to `out`.
  virtual void sums(std::vector<int64_t>& out) const { (void)out; }
  // Durability (--durability=pmem): what the transaction drawn last adds to
  // sums() if it commits, in the same positions (missing ones are 0) —
  // asked when it is prepared (its procedure has run: Validate succeeded),
  // before it may commit. The acknowledgement journal keeps it, so a
  // restart knows the sums of every transaction the database holds, also
  // of those acknowledged or committed just before a crash, before
  // committed() was called. Read-only transactions are never asked.
  virtual void pending_sums(std::vector<int64_t>& out) const { out.clear(); }
  // The attempt of the transaction drawn last aborted, and it is run again.
  // Each attempt is an operation of its own in a history (--history): a
  // workload whose history values must be unique per operation (append's
  // appended elements) renews them here.
  virtual void retrying() {}
  // The client's process number, as histories (--history) name it: unique
  // among the clients of every run of a database (a durable restart's
  // clients get new ones). Called once, before the first next(). A
  // workload whose written values must be unique across runs (append)
  // builds them from it.
  virtual void set_process(uint64_t process) { (void)process; }
  // Histories: appends the `value` of the transaction drawn last — Jepsen's
  // list of micro-ops as JSON, e.g. [["append",3,17],["r",4,[1,2]]] — to
  // `out`: for its invoke (completed == false: reads are null) or after an
  // attempt committed (true: the reads hold what that attempt read).
  // false: the workload does not describe its transactions (its history
  // entries then carry no value, and drtmx-check cannot judge them).
  virtual bool history_value(bool completed, std::string& out) const {
    (void)completed;
    (void)out;
    return false;
  }
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  virtual std::vector<std::string> txn_types() const = 0;
  virtual std::vector<store::TableSpec> tables() const = 0;
  // The settings the report prints ("accounts_per_partition=100000 ...").
  virtual std::string describe() const = 0;
  // Transaction arena bytes one coroutine needs for the largest read and
  // write sets (0: the engine's default, txn::TxnNodeConfig::arena_bytes).
  virtual size_t arena_bytes() const { return 0; }
  // Extra report lines from the committed rates per type (e.g. TPC-C's
  // tpmC); empty: none.
  virtual std::string report(const std::vector<double>& per_type_per_s) const {
    (void)per_type_per_s;
    return "";
  }
  // Loads every partition copy `node` hosts (primaries and backups).
  virtual Status load(store::tables::StoreNode& node, const store::Catalog& c) const = 0;
  // `index`: the coroutine's index in the cluster; `seed`: run seed.
  virtual std::unique_ptr<WorkloadClient> client(uint32_t index, uint64_t seed) const = 0;
  // A restart (--recover): the database was recovered instead of loaded;
  // rebuilds what the workload and its clients keep besides the database
  // (e.g. key sequences, so that a recovered run never inserts a key that
  // exists) from this node's copies. Called on every node after the
  // recovery checks, before client().
  virtual Status recovered(const store::tables::StoreNode& node, const store::Catalog& c) {
    (void)node;
    (void)c;
    return Status::ok();
  }
  // Per node after the run (logs drained): values summed over nodes
  // (e.g. the balances of the accounts whose primary is here).
  virtual Result<std::vector<int64_t>> node_audit(const store::tables::StoreNode& node,
                                                  const store::Catalog& c) const = 0;
  // On node 0: `node_sums` = element-wise sums of node_audit(), `client_sums`
  // = sums of WorkloadClient::sums(). An error names what is inconsistent.
  virtual Status check(const std::vector<int64_t>& node_sums,
                       const std::vector<int64_t>& client_sums) const = 0;
};

// The cluster a workload is built for (its defaults may depend on it, e.g.
// TPC-C's warehouses per node = worker threads).
struct WorkloadEnv {
  uint16_t nodes = 1;
  uint16_t threads = 1;
  uint16_t coroutines = 1;
  uint16_t replicas = 1;
  // After a failover: the live copies of each partition (by partition id of
  // the workload's partitioned tables); empty: `replicas` everywhere. The
  // workloads' replication checks count the backups from it.
  std::vector<uint16_t> copies;
};

// Workload options as given on the command line (--KEY=VALUE), by key.
using WorkloadOptions = std::map<std::string, std::string>;

// One entry of drtmx-bench's workload registry (workloads.cc).
struct WorkloadInfo {
  std::string name;     // --bench=NAME
  std::string summary;  // one line for --help
  // The options it reads: --KEY and a help text. A key may be shared by
  // several workloads (e.g. --mix); each parses and validates its own.
  std::vector<std::pair<std::string, std::string>> options;
  // Its clients describe their transactions as list-append micro-ops
  // (WorkloadClient::history_value), so drtmx-check can judge its
  // histories: --check-history is refused for the others.
  bool checkable_history = false;
  // Builds the workload; an error names the option and the accepted values.
  std::function<Result<std::unique_ptr<Workload>>(const WorkloadOptions&, const WorkloadEnv&)> make;
};

// WorkloadInfo::make for a workload with a typed configuration: parse the
// options, then build the workload from the result (errors pass through).
template <typename Config>
auto make_from(Result<Config> (*parse)(const WorkloadOptions&, const WorkloadEnv&),
               std::unique_ptr<Workload> (*make)(const Config&)) {
  return [parse, make](const WorkloadOptions& o,
                       const WorkloadEnv& env) -> Result<std::unique_ptr<Workload>> {
    auto c = parse(o, env);
    if (!c.is_ok()) return c.status();
    return make(*c);
  };
}

// Every workload drtmx-bench knows.
const std::vector<WorkloadInfo>& workloads();

}  // namespace drtmx::bench
