// List-append: options, tables, loader and the end-of-run oracle (append.h).
#include "append/append.h"

#include <charconv>
#include <map>
#include <sstream>

#include "append/append_client.h"
#include "base/hash.h"
#include "driver/workload_options.h"

namespace drtmx::bench::append {
namespace {

int64_t digest(uint64_t key, uint64_t value) {
  return static_cast<int64_t>(hash_mix(key, value) & 0x7fffffffu);
}

class Append final : public Workload {
 public:
  explicit Append(const Config& c) : c_(c), hints_(std::make_shared<EpochHints>(c.keys)) {}

  std::string name() const override { return "append"; }
  std::vector<std::string> txn_types() const override { return {"Append", "Read"}; }
  std::vector<store::TableSpec> tables() const override {
    const uint32_t P = c_.partitions;
    const uint64_t slots = (c_.keys + P - 1) / P;
    store::TableSpec heads;
    heads.id = kHeads;
    heads.name = "heads";
    heads.kind = store::TableKind::kHash;
    heads.value_size = sizeof(Head);
    heads.capacity = slots;
    heads.scheme = store::PartitionScheme::kFunction;
    heads.partitions = P;
    heads.partition_fn = [P](uint64_t slot) { return static_cast<uint32_t>(slot % P); };
    heads.deletes = false;
    store::TableSpec lists;
    lists.id = kLists;
    lists.name = "lists";
    lists.kind = store::TableKind::kOrdered;
    lists.value_size = sizeof(uint64_t);
    // Room for each slot's first full list; the table grows past it.
    lists.capacity = std::max<uint64_t>(1024, slots * c_.max_writes);
    lists.scheme = store::PartitionScheme::kFunction;
    lists.partitions = P;
    const uint64_t keys = c_.keys;
    lists.partition_fn = [P, keys](uint64_t row) {
      return static_cast<uint32_t>(((row >> kPositionBits) % keys) % P);
    };
    lists.partition_prefix_bits = 64 - kPositionBits;  // a key's rows stay in one partition
    lists.deletes = false;
    return {heads, lists};
  }
  std::string describe() const override {
    std::ostringstream os;
    os << "keys=" << c_.keys << " ops=1.." << c_.max_ops << " max_writes=" << c_.max_writes
       << " reads=" << c_.read_pct << "% theta=" << c_.theta << " partitions=" << c_.partitions;
    return os.str();
  }

  Status load(store::tables::StoreNode& node, const store::Catalog& cat) const override {
    const store::TableSpec& heads = *cat.find(kHeads);
    const Head empty;
    for (store::PartitionId p : cat.hosted(node.node(), heads)) {
      for (uint64_t s = p; s < c_.keys; s += c_.partitions) {
        DRTMX_RETURN_IF_ERROR(
            node.load(heads, s, {reinterpret_cast<const uint8_t*>(&empty), sizeof empty}));
      }
    }
    return Status();
  }

  std::unique_ptr<WorkloadClient> client(uint32_t index, uint64_t seed) const override {
    return make_client(c_, index, seed, hints_);
  }

  // [0, P): rows of the primaries; [P, 2P): of the backup copies; [2P, 3P)
  // and [3P, 4P): the digests of both (rows and heads).
  Result<std::vector<int64_t>> node_audit(const store::tables::StoreNode& node,
                                          const store::Catalog& cat) const override {
    const uint32_t P = c_.partitions;
    std::vector<int64_t> out(4 * P, 0);
    const store::TableSpec& heads = *cat.find(kHeads);
    const store::TableSpec& lists = *cat.find(kLists);
    for (store::PartitionId p : cat.hosted(node.node(), heads)) {
      const bool primary = node.is_primary(heads, p);
      const std::string where = std::string(primary ? "the primary" : "a backup") +
                                " of partition " + std::to_string(p) + " on node " +
                                std::to_string(node.node());
      std::map<uint64_t, Head> head_of;  // slot -> head
      int64_t dig = 0, expected_rows = 0;
      for (uint64_t s = p; s < c_.keys; s += c_.partitions) {
        Head h;
        auto r = node.get_local(heads, s, {reinterpret_cast<uint8_t*>(&h), sizeof h});
        if (!r.is_ok()) return r.status();
        if (!*r)
          return internal_error("append: the head of slot " + std::to_string(s) +
                                " is missing from " + where);
        if (h.length > c_.max_writes) {
          return internal_error(
              "append: slot " + std::to_string(s) + " of " + where + " holds a list of " +
              std::to_string(h.length) +
              " elements, above --append-max-writes=" + std::to_string(c_.max_writes));
        }
        head_of[s] = h;
        expected_rows += static_cast<int64_t>(h.epoch * c_.max_writes + h.length);
        dig += digest(s, hash_mix(h.epoch, h.length));
      }
      const store::tables::LocalPartition* lp = node.partition(kLists, p);
      if (lp == nullptr || lp->tree == nullptr)
        return internal_error("append: no local copy of lists partition " + std::to_string(p));
      // Every key's rows in position order: 0, 1, ..., n - 1.
      int64_t rows = 0;
      uint64_t cur = UINT64_MAX, next_pos = 0;
      auto end_list = [&]() -> Status {
        if (cur == UINT64_MAX) return Status();
        const uint64_t slot = cur % c_.keys, epoch = cur / c_.keys;
        const Head& h = head_of[slot];
        const uint64_t want = epoch < h.epoch    ? c_.max_writes
                              : epoch == h.epoch ? h.length
                                                 : UINT64_MAX;
        if (next_pos != want) {
          return internal_error("append: key " + std::to_string(cur) + " (slot " +
                                std::to_string(slot) + ", epoch " + std::to_string(epoch) +
                                ") has " + std::to_string(next_pos) + " elements in " + where +
                                ", but its head (epoch " + std::to_string(h.epoch) + ", length " +
                                std::to_string(h.length) + ") says " +
                                (want == UINT64_MAX ? "none" : std::to_string(want)));
        }
        return Status();
      };
      std::vector<uint64_t> keys;
      std::vector<uint8_t> values;
      uint64_t start = 0;
      for (;;) {
        const bool end = lp->tree->scan(start, 4096, keys, values);
        for (uint64_t k : keys) {
          uint64_t v = 0;
          auto r = node.get_local(lists, k, {reinterpret_cast<uint8_t*>(&v), sizeof v});
          if (!r.is_ok()) return r.status();
          if (!*r) continue;  // reserved by an insert that never committed
          const uint64_t logical = k >> kPositionBits, pos = k & ((1ull << kPositionBits) - 1);
          if (logical != cur) {
            DRTMX_RETURN_IF_ERROR(end_list());
            cur = logical;
            next_pos = 0;
          }
          if (pos != next_pos) {
            return internal_error("append: key " + std::to_string(logical) + " has element " +
                                  std::to_string(pos) + " but not " + std::to_string(next_pos) +
                                  " in " + where);
          }
          ++next_pos;
          ++rows;
          dig += digest(k, v);
        }
        if (end || keys.empty()) break;
        start = keys.back() + 1;
      }
      DRTMX_RETURN_IF_ERROR(end_list());
      if (rows != expected_rows) {
        return internal_error("append: " + where + " holds " + std::to_string(rows) +
                              " list elements, but its heads account for " +
                              std::to_string(expected_rows) +
                              " (a retired or current list is "
                              "missing elements)");
      }
      out[(primary ? 0 : P) + p] += rows;
      out[(primary ? 2 * P : 3 * P) + p] += dig;
    }
    return out;
  }

  Status check(const std::vector<int64_t>& node_sums,
               const std::vector<int64_t>& client_sums) const override {
    const uint32_t P = c_.partitions;
    if (node_sums.size() != 4 * P || client_sums.size() != 2) {
      return internal_error("append: audit vectors of unexpected size");
    }
    std::string wrong;
    int64_t rows = 0;
    for (uint32_t p = 0; p < P; ++p) rows += node_sums[p];
    if (rows != client_sums[0]) {
      wrong = "appends: the lists hold " + std::to_string(rows) + " elements, but " +
              std::to_string(client_sums[0]) + " appends committed";
    }
    for (uint32_t p = 0; p < P; ++p) {
      const int64_t backups = c_.backups(p);
      if (node_sums[P + p] != backups * node_sums[p] ||
          node_sums[3 * P + p] != backups * node_sums[2 * P + p]) {
        wrong += std::string(wrong.empty() ? "" : "; ") + "replication: the backups of partition " +
                 std::to_string(p) + " differ from its primary (" +
                 std::to_string(node_sums[P + p]) + " elements over " + std::to_string(backups) +
                 " backups vs " + std::to_string(node_sums[p]) + " at the primary)";
      }
    }
    if (client_sums[1] != 0) {
      wrong += std::string(wrong.empty() ? "" : "; ") + std::to_string(client_sums[1]) +
               " appends found their key's epoch ahead of the database's head (a committed "
               "append that made a list full was lost)";
    }
    if (!wrong.empty()) return internal_error(wrong);
    return Status();
  }

 private:
  Config c_;
  std::shared_ptr<EpochHints> hints_;  // shared by this node's clients
};

}  // namespace

Result<Config> parse(const WorkloadOptions& o, const WorkloadEnv& env) {
  Config c;
  c.partitions = uint32_t{env.nodes} * env.threads;
  c.replicas = env.replicas;
  c.copies = env.copies;
  auto keys = option_number(o, "append-keys", 100, 1, 1u << 24);
  auto ops = option_number(o, "append-ops", 4, 1, 64);
  auto writes = option_number(o, "append-max-writes", 32, 1, 4096);
  auto reads = option_number(o, "append-read-pct", 50, 0, 100);
  for (auto* r : {&keys, &ops, &writes, &reads}) {
    if (!r->is_ok()) return r->status();
  }
  c.keys = *keys;
  c.max_ops = *ops;
  c.max_writes = *writes;
  c.read_pct = *reads;
  if (auto it = o.find("append-theta"); it != o.end()) {
    const std::string& s = it->second;
    double t = -1;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), t);
    if (ec != std::errc() || p != s.data() + s.size() || !(t >= 0 && t < 1)) {
      return invalid_argument("--append-theta=" + s +
                              ": expected a Zipfian skew in [0, 1) (0: uniform)");
    }
    c.theta = t;
  }
  return c;
}

WorkloadInfo info() {
  WorkloadInfo w;
  w.name = "append";
  w.summary =
      "list-append (Elle): appends to and reads of integer lists, for drtmx-check (--history)";
  w.options = {
      {"append-keys", "active keys (default 100; each retires after --append-max-writes)"},
      {"append-ops", "micro-operations per transaction: 1..N, uniform (default 4)"},
      {"append-max-writes", "appends a key takes before it retires (default 32)"},
      {"append-read-pct", "percent of micro-operations that read a whole list (default 50)"},
      {"append-theta", "Zipfian skew of the keys drawn, in [0, 1) (default 0: uniform)"},
  };
  w.checkable_history = true;
  w.make = make_from<Config>(&parse, &make);
  return w;
}

std::unique_ptr<Workload> make(const Config& c) {
  return std::make_unique<Append>(c);
}

}  // namespace drtmx::bench::append
