// A bank on drtmx: accounts in a hash table, transfers between accounts of
// one branch, and read-only audits that sum a branch. Transfers move money
// but never create it, so every audit must see its branch's opening total —
// whatever runs concurrently, on whichever node.
//
//   bank --bench=bank --nodes=3 --seconds=5       (every drtmx-bench option works)
//
// The program is drtmx-bench with one more workload: program_main() makes
// it the launcher (it starts copies of itself as the nodes) or, with
// --node, one node.
#include <charconv>
#include <random>

#include "bench.h"     // drtmx::bench::program_main
#include "txn/txn.h"   // Txn, Abort
#include "workload.h"  // Workload, WorkloadClient, WorkloadInfo

namespace {

using namespace drtmx;
using txn::Abort;
using txn::Txn;

constexpr txn::TableId kAccounts = 1;
constexpr uint64_t kBranch = 64;  // accounts per branch
constexpr int64_t kOpening = 1000;

struct Config {
  uint64_t per_partition = 6400;  // --accounts
  uint32_t partitions = 1;
  uint16_t replicas = 1;
};

// One coroutine's customers: 90 % transfers, 10 % audits. A procedure may
// run several times (the driver retries aborts): it resets what it reports.
class Client final : public bench::WorkloadClient {
 public:
  Client(const Config& c, uint64_t seed) : c_(c), rng_(seed) {}

  bench::TxnDraw next() override {
    const uint64_t branches = c_.per_partition * c_.partitions / kBranch;
    const uint64_t first = rng_() % branches * kBranch;
    if (rng_() % 10 == 0) {
      audit_ = true;
      // Read-only: under MVCC (--mvcc=dst) a snapshot that never aborts;
      // otherwise OCC, validated at commit.
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
    audit_ = false;
    const uint64_t from = first + rng_() % kBranch;
    const uint64_t to = first + (from - first + 1 + rng_() % (kBranch - 1)) % kBranch;
    const int64_t amount = 1 + static_cast<int64_t>(rng_() % 10);
    return {0, [from, to, amount](Txn& tx) {
              int64_t a = 0, b = 0;
              // get_for_update: both are locked at commit and must be unchanged.
              if (Abort r = tx.get_for_update(kAccounts, from, &a); r != Abort::kNone) return r;
              if (Abort r = tx.get_for_update(kAccounts, to, &b); r != Abort::kNone) return r;
              if (a < amount) return tx.user_abort();  // not retried
              a -= amount;
              b += amount;
              tx.put(kAccounts, from, &a);
              tx.put(kAccounts, to, &b);
              return Abort::kNone;  // commit
            }};
  }
  void committed() override {
    if (!audit_) return;
    ++audits_;
    if (sum_ != kOpening * static_cast<int64_t>(kBranch)) ++bad_audits_;
  }
  void sums(std::vector<int64_t>& out) const override {
    out.push_back(audits_);
    out.push_back(bad_audits_);
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
  std::string describe() const override {
    return "accounts_per_partition=" + std::to_string(c_.per_partition);
  }
  // One hash table, a partition per worker thread (key / per_partition).
  std::vector<store::TableSpec> tables() const override {
    store::TableSpec t;
    t.id = kAccounts;
    t.name = "accounts";
    t.kind = store::TableKind::kHash;
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
      for (uint64_t k = p * c_.per_partition; k < (p + 1) * c_.per_partition; ++k) {
        DRTMX_RETURN_IF_ERROR(node.load(t, k, {reinterpret_cast<const uint8_t*>(&kOpening), 8}));
      }
    }
    return Status::ok();
  }
  std::unique_ptr<bench::WorkloadClient> client(uint32_t index, uint64_t seed) const override {
    return std::make_unique<Client>(c_, seed * 7919 + index);
  }
  // After the run, per node: [money on primaries, money on backups].
  Result<std::vector<int64_t>> node_audit(const store::tables::StoreNode& node,
                                          const store::Catalog& cat) const override {
    const store::TableSpec& t = *cat.find(kAccounts);
    std::vector<int64_t> out(2, 0);
    for (store::PartitionId p : cat.hosted(node.node(), t)) {
      const bool primary = cat.replicas_of(t, p, node.node()).primary == node.node();
      for (uint64_t k = p * c_.per_partition; k < (p + 1) * c_.per_partition; ++k) {
        int64_t balance = 0;
        auto found = node.get_local(t, k, {reinterpret_cast<uint8_t*>(&balance), 8});
        if (!found.is_ok()) return found.status();
        if (!*found) return internal_error("account " + std::to_string(k) + " is missing");
        out[primary ? 0 : 1] += balance;
      }
    }
    return out;
  }
  // On node 0, with every node's audit and every client's sums added up.
  Status check(const std::vector<int64_t>& nodes,
               const std::vector<int64_t>& clients) const override {
    const int64_t opening = kOpening * static_cast<int64_t>(c_.per_partition * c_.partitions);
    if (nodes[0] != opening)
      return internal_error("money: " + std::to_string(nodes[0]) + " instead of " +
                            std::to_string(opening));
    if (nodes[1] != (c_.replicas - 1) * opening)
      return internal_error("backups differ from the primaries");
    if (clients[1] != 0)
      return internal_error(std::to_string(clients[1]) + " of " + std::to_string(clients[0]) +
                            " audits saw a wrong branch total");
    return Status::ok();
  }

 private:
  Config c_;
};

}  // namespace

int main(int argc, char** argv) {
  bench::WorkloadInfo bank;
  bank.name = "bank";
  bank.summary = "transfers within branches of 64 accounts, read-only branch audits";
  bank.options = {{"accounts", "accounts per partition, a multiple of 64 (6400)"}};
  bank.make = [](const bench::WorkloadOptions& o,
                 const bench::WorkloadEnv& env) -> Result<std::unique_ptr<bench::Workload>> {
    Config c;
    if (auto it = o.find("accounts"); it != o.end()) {
      const std::string& v = it->second;
      if (std::from_chars(v.data(), v.data() + v.size(), c.per_partition).ptr !=
          v.data() + v.size())
        c.per_partition = 0;
    }
    if (c.per_partition == 0 || c.per_partition % kBranch != 0)
      return invalid_argument("--accounts must be a positive multiple of 64");
    c.partitions = uint32_t{env.nodes} * env.threads;
    c.replicas = env.replicas;
    return std::unique_ptr<bench::Workload>(new Bank(c));
  };
  return bench::program_main(argc, argv, "bank", {bank});
}
