#include "txn/failover_resolve.h"

#include <algorithm>

namespace drtmx::txn::failover {

namespace {

std::string record_name(const RecKey& k) {
  return "record " + std::to_string(k.second) + " of table " + std::to_string(k.first);
}

// A copy of `k` holding (present, version), or nullptr.
const Copy* copy_holding(const std::map<RecKey, std::vector<Copy>>& copies, const RecKey& k,
                         bool present, uint64_t version) {
  auto it = copies.find(k);
  if (it == copies.end()) return nullptr;
  for (const Copy& c : it->second) {
    if (c.present == present && (!present || c.version == version)) return &c;
  }
  return nullptr;
}

// The state before (`before`) or after a record of an undecided
// transaction, if some surviving copy holds it (an absent state always
// "survives": it needs no bytes).
bool state_of(const std::map<RecKey, std::vector<Copy>>& copies, const LoggedRecord& r, bool before,
              Target* out) {
  const RecKey k{r.table, r.key};
  const bool present = before ? r.op != RedoOp::kInsert : r.op != RedoOp::kDelete;
  if (!present) {
    *out = Target{false, 0, {}, {}};
    return true;
  }
  const uint64_t version = before ? r.version - 1 : r.version;
  const Copy* c = copy_holding(copies, k, true, version);
  if (c == nullptr) return false;
  *out = Target{true, version, c->value, {}};
  return true;
}

}  // namespace

std::string Decision::name() const {
  std::string n = "transaction #" + std::to_string(std::get<2>(id)) + " of node " +
                  std::to_string(std::get<0>(id)) + " thread " + std::to_string(std::get<1>(id)) +
                  ", decided " + (committed ? "committed" : "aborted") +
                  (complete ? "" : " (its log was incomplete)") + ": targets";
  for (uint16_t x = 0; x < 64; ++x) {
    if ((targets >> x) & 1) n += " " + std::to_string(x);
  }
  n += ", applied at";
  for (uint16_t x = 0; x < 64; ++x) {
    if ((at >> x) & 1) n += " " + std::to_string(x);
  }
  return n;
}

std::set<RecKey> keys_concerned(const std::vector<RingHistory>& histories,
                                const std::vector<HeldRecord>& held) {
  std::set<RecKey> keys;
  for (const RingHistory& g : histories) {
    for (const LoggedTxn& t : g.txns) {
      for (const LoggedRecord& r : t.records) keys.insert({r.table, r.key});
    }
  }
  for (const HeldRecord& h : held) keys.insert({h.table, h.key});
  return keys;
}

Result<Resolution> resolve(const std::vector<RingHistory>& histories,
                           const std::vector<HeldRecord>& held,
                           const std::map<RecKey, std::vector<Copy>>& copies, uint64_t live) {
  // Every transaction, with the survivors that applied it and the union of
  // the records its entries carried (each backup gets those of the
  // partitions it holds).
  std::map<TxnId, Decision> txns;
  // (survivor, node, thread) -> (history dropped entries, oldest kept)
  std::map<std::tuple<uint16_t, uint16_t, uint16_t>, std::pair<bool, uint64_t>> horizon;
  for (const RingHistory& g : histories) {
    horizon[{g.survivor, g.node, g.thread}] = {g.full, g.oldest};
    for (const LoggedTxn& t : g.txns) {
      Decision& d = txns[{g.node, g.thread, t.txn}];
      d.id = {g.node, g.thread, t.txn};
      d.targets = t.targets;
      if (g.survivor < 64) d.at |= uint64_t{1} << g.survivor;
      for (const LoggedRecord& r : t.records) {
        const bool known = std::any_of(d.records.begin(), d.records.end(), [&](const auto& x) {
          return x.table == r.table && x.key == r.key;
        });
        if (!known) d.records.push_back(r);
      }
    }
  }

  Resolution out;
  std::set<RecKey> decided_keys;
  for (auto& [id, d] : txns) {
    // Rule 1: every surviving target has it (or had it: a history that
    // dropped older entries had this one if it is older than what it kept).
    d.complete = true;
    for (uint16_t n = 0; n < 64; ++n) {
      if (((d.targets & live) >> n & 1) == 0 || ((d.at >> n) & 1) != 0) continue;
      const auto h = horizon.find({n, std::get<0>(id), std::get<1>(id)});
      if (h != horizon.end() && h->second.first && std::get<2>(id) < h->second.second) continue;
      d.complete = false;
    }
    if (d.complete) {
      d.committed = true;
      continue;
    }
    // Rule 2: the state before it where it survives everywhere, else the
    // state after it.
    std::vector<Target> before(d.records.size()), after(d.records.size());
    bool have_before = true, have_after = true;
    for (size_t i = 0; i < d.records.size(); ++i) {
      have_before = have_before && state_of(copies, d.records[i], true, &before[i]);
      have_after = have_after && state_of(copies, d.records[i], false, &after[i]);
    }
    if (!have_before && !have_after) {
      std::string lost;
      for (const LoggedRecord& r : d.records) {
        Target t;
        if (!state_of(copies, r, true, &t) && !state_of(copies, r, false, &t)) {
          lost = record_name({r.table, r.key}) + " (version " + std::to_string(r.version) + ")";
          break;
        }
      }
      return internal_error("cannot resolve " + d.name() +
                            ": no surviving copy holds either the state before it or the state "
                            "after it of " +
                            (lost.empty() ? std::string("all its records") : lost));
    }
    d.committed = !have_before;
    const std::vector<Target>& ends = d.committed ? after : before;
    // Rule 3.
    for (size_t i = 0; i < d.records.size(); ++i) {
      const RecKey k{d.records[i].table, d.records[i].key};
      Target t = ends[i];
      t.why = d.name();
      out.wanted[k] = std::move(t);
      decided_keys.insert(k);
    }
  }

  // Rule 4: held records end as their surviving backups hold them.
  for (const HeldRecord& h : held) {
    const RecKey k{h.table, h.key};
    if (decided_keys.count(k) != 0 || out.wanted.count(k) != 0) continue;
    auto it = copies.find(k);
    if (it == copies.end()) continue;
    const Copy* backup = nullptr;
    const Copy* primary = nullptr;
    for (const Copy& c : it->second) {
      if (c.primary) {
        primary = &c;
        continue;
      }
      if (backup == nullptr) {
        backup = &c;
      } else if (backup->present != c.present || (c.present && backup->version != c.version)) {
        return internal_error(
            "cannot repair " + record_name(k) +
            ", held locked by a removed node: its surviving "
            "backups disagree (node " +
            std::to_string(backup->survivor) + ": " +
            (backup->present ? "version " + std::to_string(backup->version) : "absent") +
            ", node " + std::to_string(c.survivor) + ": " +
            (c.present ? "version " + std::to_string(c.version) : "absent") + ")");
      }
    }
    if (backup == nullptr) continue;  // no surviving backup: the primary stays as it is
    if (primary != nullptr && primary->present == backup->present &&
        (!backup->present || primary->version == backup->version)) {
      continue;  // the primary already holds it
    }
    Target t{backup->present, backup->present ? backup->version : 0,
             backup->present ? backup->value : std::string(),
             "held locked by a removed node; the state of its backup on node " +
                 std::to_string(backup->survivor)};
    out.wanted[k] = std::move(t);
  }

  out.txns.reserve(txns.size());
  for (auto& [id, d] : txns) out.txns.push_back(std::move(d));
  return out;
}

}  // namespace drtmx::txn::failover
