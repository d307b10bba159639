// SmallBank: options, tables, loader and the end-of-run oracle.
#include "smallbank/smallbank.h"

#include <sstream>

#include "base/hash.h"
#include "driver/workload_options.h"
#include "smallbank/smallbank_client.h"

namespace drtmx::bench::smallbank {
namespace {

// Balances are summed per partition into 64-bit words; a digest term
// per customer keeps 31 bits so sums over any partition size stay exact.
uint64_t digest(uint64_t c, int64_t savings, int64_t checking) {
  return hash_mix(c, hash_mix(static_cast<uint64_t>(savings), static_cast<uint64_t>(checking))) &
         0x7fffffffu;
}

class SmallBank final : public Workload {
 public:
  explicit SmallBank(const Config& c) : c_(c) {}

  std::string name() const override { return "smallbank"; }
  std::vector<std::string> txn_types() const override {
    return {"Amalgamate", "Balance", "DepositChecking", "SendPayment", "TransactSavings",
            "WriteCheck", "Audit"};
  }
  std::vector<store::TableSpec> tables() const override {
    std::vector<store::TableSpec> ts;
    for (auto [id, name] : {std::pair{kSavings, "savings"}, std::pair{kChecking, "checking"}}) {
      store::TableSpec t;
      t.id = id;
      t.name = name;
      t.kind = store::TableKind::kHash;
      t.value_size = sizeof(int64_t);
      t.capacity = c_.accounts;
      t.scheme = store::PartitionScheme::kFunction;
      t.partitions = c_.partitions;
      const uint32_t per = c_.accounts;
      t.partition_fn = [per](uint64_t k) { return static_cast<uint32_t>(k / per); };
      t.deletes = false;  // accounts are never closed
      ts.push_back(std::move(t));
    }
    return ts;
  }
  std::string describe() const override {
    std::ostringstream os;
    os << "accounts_per_partition=" << c_.accounts << " partitions=" << c_.partitions
       << " hot=" << c_.hot_pct << "%/" << c_.hot_access_pct << "% mix=";
    for (size_t i = 0; i < c_.mix.size(); ++i) os << (i ? "," : "") << c_.mix[i];
    if (c_.audit_pct) os << " audit=" << c_.audit_pct << "%x" << c_.audit_group;
    return os.str();
  }

  Status load(store::tables::StoreNode& node, const store::Catalog& cat) const override {
    const store::TableSpec& sav = *cat.find(kSavings);
    const store::TableSpec& chk = *cat.find(kChecking);
    for (store::PartitionId p : cat.hosted(node.node(), sav)) {
      for (uint64_t c = uint64_t{p} * c_.accounts; c < uint64_t{p + 1} * c_.accounts; ++c) {
        const int64_t s = initial_savings(c), k = initial_checking(c);
        DRTMX_RETURN_IF_ERROR(node.load(sav, c, {reinterpret_cast<const uint8_t*>(&s), 8}));
        DRTMX_RETURN_IF_ERROR(node.load(chk, c, {reinterpret_cast<const uint8_t*>(&k), 8}));
      }
    }
    return Status();
  }

  std::unique_ptr<WorkloadClient> client(uint32_t index, uint64_t seed) const override {
    return make_client(c_, index, seed);
  }

  // [0, P): balance sums of the primaries; [P, 2P): of the backup copies;
  // [2P, 3P) and [3P, 4P): the digests of both.
  Result<std::vector<int64_t>> node_audit(const store::tables::StoreNode& node,
                                          const store::Catalog& cat) const override {
    const uint32_t P = c_.partitions;
    std::vector<int64_t> out(4 * P, 0);
    const store::TableSpec& sav = *cat.find(kSavings);
    const store::TableSpec& chk = *cat.find(kChecking);
    for (store::PartitionId p : cat.hosted(node.node(), sav)) {
      const bool primary = node.is_primary(sav, p);
      int64_t sum = 0, dig = 0;
      for (uint64_t c = uint64_t{p} * c_.accounts; c < uint64_t{p + 1} * c_.accounts; ++c) {
        int64_t s = 0, k = 0;
        auto a = node.get_local(sav, c, {reinterpret_cast<uint8_t*>(&s), 8});
        auto b = node.get_local(chk, c, {reinterpret_cast<uint8_t*>(&k), 8});
        if (!a.is_ok()) return a.status();
        if (!b.is_ok()) return b.status();
        if (!*a || !*b) {
          return internal_error("customer " + std::to_string(c) + " is missing from " +
                                (primary ? "the primary" : "a backup") + " of partition " +
                                std::to_string(p) + " on node " + std::to_string(node.node()));
        }
        sum += s + k;
        dig += static_cast<int64_t>(digest(c, s, k));
      }
      out[(primary ? 0 : P) + p] += sum;
      out[(primary ? 2 * P : 3 * P) + p] += dig;
    }
    return out;
  }

  Status check(const std::vector<int64_t>& node_sums,
               const std::vector<int64_t>& client_sums) const override {
    const uint32_t P = c_.partitions;
    if (node_sums.size() != 4 * P || client_sums.size() != 3) {
      return internal_error("smallbank: audit vectors of unexpected size");
    }
    int64_t initial = 0, now = 0;
    for (uint64_t c = 0; c < c_.customers(); ++c)
      initial += initial_savings(c) + initial_checking(c);
    for (uint32_t p = 0; p < P; ++p) now += node_sums[p];
    const int64_t expected = initial + client_sums[0];
    // Both checks are reported: whether the copies agree tells a lost or
    // extra change at one copy from a miscount of the committed deltas.
    std::string wrong;
    if (now != expected) {
      wrong = "money: the balances add up to " + std::to_string(now) + " cents, but the initial " +
              std::to_string(initial) + " plus the committed deltas " +
              std::to_string(client_sums[0]) + " make " + std::to_string(expected);
    }
    for (uint32_t p = 0; p < P; ++p) {
      const int64_t backups = c_.backups(p);
      if (node_sums[P + p] != backups * node_sums[p] ||
          node_sums[3 * P + p] != backups * node_sums[2 * P + p]) {
        wrong += std::string(wrong.empty() ? "" : "; ") + "replication: the backups of partition " +
                 std::to_string(p) + " differ from its primary (balance sums " +
                 std::to_string(node_sums[P + p]) + " over " + std::to_string(backups) +
                 " backups vs primary " + std::to_string(node_sums[p]) + ")";
      }
    }
    if (!wrong.empty()) return internal_error(wrong);
    if (client_sums[2] != 0) {
      return internal_error("audits: " + std::to_string(client_sums[2]) + " of " +
                            std::to_string(client_sums[1]) +
                            " read-only audits saw a total that transfers cannot produce");
    }
    return Status();
  }

 private:
  Config c_;
};

}  // namespace

uint32_t Config::hot_per_partition() const {
  const uint64_t h = uint64_t{accounts} * hot_pct / 100;
  return static_cast<uint32_t>(
      std::max<uint64_t>(1, std::min<uint64_t>(h, ordinary_per_partition())));
}
uint32_t Config::ordinary_per_partition() const {
  return audit_pct ? accounts - audit_group : accounts;
}

int64_t initial_savings(uint64_t c) {
  return 10000 + static_cast<int64_t>(hash_mix(c, 1) % 40000);
}
int64_t initial_checking(uint64_t c) {
  return 10000 + static_cast<int64_t>(hash_mix(c, 2) % 40000);
}

Result<Config> parse(const WorkloadOptions& o, const WorkloadEnv& env) {
  Config c;
  c.partitions = uint32_t{env.nodes} * env.threads;
  c.replicas = env.replicas;
  c.copies = env.copies;
  auto acc = option_number(o, "accounts", 100000, 2, 100000000);
  auto hot = option_number(o, "hot-pct", 4, 0, 100);
  auto hacc = option_number(o, "hot-access-pct", 90, 0, 100);
  auto apct = option_number(o, "audit-pct", 0, 0, 100);
  auto agrp = option_number(o, "audit-group", 4, 2, 1000);
  for (auto* r : {&acc, &hot, &hacc, &apct, &agrp}) {
    if (!r->is_ok()) return r->status();
  }
  c.accounts = *acc;
  c.hot_pct = *hot;
  c.hot_access_pct = *hacc;
  c.audit_pct = *apct;
  c.audit_group = *agrp;
  if (c.audit_pct && c.audit_group + 2 > c.accounts) {
    return invalid_argument("--audit-group=" + std::to_string(c.audit_group) +
                            " leaves fewer than 2 ordinary customers of --accounts=" +
                            std::to_string(c.accounts) + " per partition");
  }
  if (c.hot_pct > 0 && c.hot_access_pct == 0) {
    return invalid_argument("--hot-pct needs --hot-access-pct > 0 (or --hot-pct=0)");
  }
  if (auto it = o.find("mix"); it != o.end()) {
    auto m = percentages(it->second, c.mix.size());
    if (!m) {
      return invalid_argument("--mix=" + it->second +
                              ": expected six percentages adding up to 100 (Amalgamate, Balance, "
                              "DepositChecking, SendPayment, TransactSavings, WriteCheck)");
    }
    std::copy(m->begin(), m->end(), c.mix.begin());
  }
  return c;
}

WorkloadInfo info() {
  WorkloadInfo w;
  w.name = "smallbank";
  w.summary = "H-Store SmallBank: six banking transactions over savings and checking";
  w.options = {
      {"accounts", "customers per partition (default 100000; a partition per worker thread)"},
      {"hot-pct", "percent of each partition's customers that are hot (default 4)"},
      {"hot-access-pct", "percent of draws that pick a hot customer (default 90)"},
      {"mix",
       "percentages of Amalgamate,Balance,DepositChecking,SendPayment,TransactSavings,WriteCheck "
       "(default 15,15,15,25,15,15)"},
      {"audit-pct", "percent of draws that are read-only audits of a transfer-only group (0)"},
      {"audit-group", "customers per partition in the audited group (default 4)"},
  };
  w.make = make_from<Config>(&parse, &make);
  return w;
}

std::unique_ptr<Workload> make(const Config& c) {
  return std::make_unique<SmallBank>(c);
}

}  // namespace drtmx::bench::smallbank
