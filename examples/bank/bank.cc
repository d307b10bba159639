// A bank on drtmx: accounts in a hash table, transfers between accounts of
// one branch, and read-only audits that sum a branch. Transfers move money
// but never create it, so every audit must see its branch's opening total,
// whatever runs concurrently on whichever node.
//
//   bank --bench=bank --nodes=3 --seconds=5     (every drtmx-bench option works)
//
// program_main() makes this program drtmx-bench with one more workload: the
// launcher (it starts copies of itself as the nodes) or, with --node, a node.
#include <random>

#include "bench.h"             // program_main
#include "txn/txn.h"           // Txn, Abort
#include "workload.h"          // Workload, WorkloadClient, WorkloadInfo
#include "workload_options.h"  // option_number

namespace {

using namespace drtmx;
using txn::Abort;
using txn::Txn;

constexpr txn::TableId kAccounts = 1;
constexpr uint64_t kBranch = 64;  // accounts per branch
constexpr int64_t kOpening = 1000;

struct Config {
  uint64_t per_partition = 6400;  // --accounts, a multiple of kBranch
  uint32_t partitions = 1;        // one per worker thread of the cluster
  uint16_t replicas = 1;
};

// One coroutine's customers: 90 % transfers, 10 % audits. The driver may
// run a procedure several times (it retries aborts): reset what it reports.
class Client final : public bench::WorkloadClient {
 public:
  Client(const Config& c, uint64_t seed) : c_(c), rng_(seed) {}

  bench::TxnDraw next() override {
    const uint64_t first = rng_() % (c_.per_partition * c_.partitions / kBranch) * kBranch;
    audit_ = rng_() % 10 == 0;
    if (audit_) {  // read-only: a snapshot that never aborts under --mvcc=dst
      return {1,
              [this, first](Txn& tx) {
                sum_ = 0;
                for (uint64_t k = first; k < first + kBranch; ++k) {
                  int64_t balance = 0;
                  if (Abort a = tx.get(kAccounts, k, &balance); a != Abort::kNone) return a;
                  sum_ += balance;
                }
                return Abort::kNone;
              },
              txn::Kind::kReadOnly};
    }
    const uint64_t from = first + rng_() % kBranch;
    const uint64_t to = first + (from - first + 1 + rng_() % (kBranch - 1)) % kBranch;
    const int64_t amount = 1 + static_cast<int64_t>(rng_() % 10);
    return {0, [from, to, amount](Txn& tx) {
              int64_t a = 0, b = 0;  // read for update: locked and checked at commit
              if (Abort r = tx.get_for_update(kAccounts, from, &a); r != Abort::kNone) return r;
              if (Abort r = tx.get_for_update(kAccounts, to, &b); r != Abort::kNone) return r;
              if (a < amount) return tx.user_abort();  // not retried
              a -= amount;
              b += amount;
              tx.put(kAccounts, from, &a);
              return tx.put(kAccounts, to, &b);  // kNone: commit
            }};
  }
  void committed() override {
    if (audit_) ++audits_, bad_audits_ += sum_ != kOpening * int64_t{kBranch};
  }
  void sums(std::vector<int64_t>& out) const override {
    out.insert(out.end(), {audits_, bad_audits_});
  }

 private:
  Config c_;
  std::mt19937_64 rng_;
  bool audit_ = false;
  int64_t sum_ = 0, audits_ = 0, bad_audits_ = 0;
};

class Bank final : public bench::Workload {
 public:
  explicit Bank(const Config& c) : c_(c) {}
  std::string name() const override { return "bank"; }
  std::vector<std::string> txn_types() const override { return {"Transfer", "Audit"}; }
  std::string describe() const override { return "accounts=" + std::to_string(c_.per_partition); }
  std::vector<store::TableSpec> tables() const override {
    store::TableSpec t;  // a hash table, partition = key / per_partition
    t.id = kAccounts;
    t.name = "accounts";
    t.value_size = sizeof(int64_t);
    t.capacity = c_.per_partition;
    t.scheme = store::PartitionScheme::kFunction;
    t.partitions = c_.partitions;
    t.partition_fn = [per = c_.per_partition](uint64_t k) { return uint32_t(k / per); };
    return {t};
  }
  // Every node loads the copies it hosts, primaries and backups alike.
  Status load(store::tables::StoreNode& node, const store::Catalog& cat) const override {
    const store::TableSpec& t = *cat.find(kAccounts);
    for (store::PartitionId p : cat.hosted(node.node(), t)) {
      for (uint64_t k = p * c_.per_partition; k < (p + 1) * c_.per_partition; ++k)
        DRTMX_RETURN_IF_ERROR(node.load(t, k, {reinterpret_cast<const uint8_t*>(&kOpening), 8}));
    }
    return Status::ok();
  }
  std::unique_ptr<bench::WorkloadClient> client(uint32_t index, uint64_t seed) const override {
    return std::make_unique<Client>(c_, seed * 7919 + index);
  }
  // After the run, per node: [money on its primary copies, on its backups].
  Result<std::vector<int64_t>> node_audit(const store::tables::StoreNode& node,
                                          const store::Catalog& cat) const override {
    const store::TableSpec& t = *cat.find(kAccounts);
    std::vector<int64_t> out(2, 0);
    for (store::PartitionId p : cat.hosted(node.node(), t)) {
      const bool primary = cat.replicas_of(t, p, node.node()).primary == node.node();
      for (uint64_t k = p * c_.per_partition; k < (p + 1) * c_.per_partition; ++k) {
        int64_t balance = 0;
        auto found = node.get_local(t, k, {reinterpret_cast<uint8_t*>(&balance), 8});
        if (!found.is_ok() || !*found)
          return internal_error("account " + std::to_string(k) + " lost");
        out[primary ? 0 : 1] += balance;
      }
    }
    return out;
  }
  // On node 0: the nodes' audits and the clients' sums, each added up.
  Status check(const std::vector<int64_t>& nodes,
               const std::vector<int64_t>& clients) const override {
    const int64_t opening = kOpening * static_cast<int64_t>(c_.per_partition * c_.partitions);
    if (nodes[0] != opening) return internal_error("money: " + std::to_string(nodes[0]));
    if (nodes[1] != (c_.replicas - 1) * opening) return internal_error("backups differ");
    if (clients[1] != 0)
      return internal_error(std::to_string(clients[1]) + " audits saw a wrong total");
    return Status::ok();
  }

 private:
  Config c_;
};

}  // namespace

int main(int argc, char** argv) {
  bench::WorkloadInfo bank;
  bank.name = "bank";  // --bench=bank
  bank.summary = "transfers within branches of 64 accounts, read-only branch audits";
  bank.options = {{"accounts", "accounts per partition, a multiple of 64 (6400)"}};
  bank.make = [](const bench::WorkloadOptions& o,
                 const bench::WorkloadEnv& env) -> Result<std::unique_ptr<bench::Workload>> {
    auto accounts = bench::option_number(o, "accounts", 6400, 64, 1u << 24);
    if (!accounts.is_ok()) return accounts.status();
    if (*accounts % kBranch != 0) return invalid_argument("--accounts must be a multiple of 64");
    const Config c{*accounts, uint32_t{env.nodes} * env.threads, env.replicas};
    return std::unique_ptr<bench::Workload>(new Bank(c));
  };
  return bench::program_main(argc, argv, "bank", {bank});
}
