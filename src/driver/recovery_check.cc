// The checks of a restart (recovery_check.h).
#include "recovery_check.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <unordered_map>

#include "base/hash.h"
#include "r2/common/clock.h"
#include "txn/log/replication.h"

namespace drtmx::bench {
namespace {

constexpr size_t kMaxMessages = 5;  // failures named per node

bool is_delete(const JournalWrite& w) {
  return w.op == static_cast<uint32_t>(txn::RedoOp::kDelete);
}

const char* op_name(const JournalWrite& w) {
  switch (static_cast<txn::RedoOp>(w.op)) {
    case txn::RedoOp::kInsert:
      return "insert";
    case txn::RedoOp::kDelete:
      return "delete";
    default:
      return "update";
  }
}

// This node's copies of the keys journal records wrote.
class Copies {
 public:
  Copies(const store::tables::StoreNode& store, const store::Catalog& cat)
      : store_(store), cat_(cat) {
    size_t v = 8;
    for (const store::TableSpec& t : cat.tables()) v = std::max<size_t>(v, t.value_size);
    value_.resize(v);
  }

  // Calls visit(w, found, version) for every write w of `r` whose key this
  // node hosts, with this node's copy of the key (found: present, at
  // `version`), in the record's order; returns how many copies it compared.
  // An error reading a copy ends the walk.
  template <typename Visit>
  Result<uint64_t> compare(const JournalRecord& r, Visit visit) {
    uint64_t compared = 0;
    for (const JournalWrite& w : r.writes) {
      bool found = false;
      uint64_t version = 0;
      auto hosted = read(w, &found, &version);
      if (!hosted.is_ok()) return hosted.status();
      if (!*hosted) continue;
      ++compared;
      visit(w, found, version);
    }
    return compared;
  }

  std::string describe(const JournalWrite& w, bool found, uint64_t version) const {
    const store::TableSpec* t = cat_.find(static_cast<store::TableId>(w.table));
    std::string s = std::string("its ") + op_name(w) + " of " + (t ? t->name : "table ?") +
                    " key " + std::to_string(w.key) + " (version " + std::to_string(w.version) +
                    "): node " + std::to_string(store_.node()) + "'s copy ";
    return s + (found ? "is at version " + std::to_string(version) : std::string("is absent"));
  }

 private:
  // Reads this node's copy of w's key: false when it hosts none.
  Result<bool> read(const JournalWrite& w, bool* found, uint64_t* version) {
    const store::TableSpec* t = cat_.find(static_cast<store::TableId>(w.table));
    if (t == nullptr) {
      return internal_error("a journal record names table " + std::to_string(w.table) +
                            ", which this workload does not have");
    }
    if (!cat_.hosts(store_.node(), *t, cat_.partition_of(*t, w.key))) return false;
    *version = 0;
    auto r = store_.get_local(*t, w.key, {value_.data(), t->value_size}, version);
    if (!r.is_ok()) return r.status();
    *found = *r;
    return true;
  }

  const store::tables::StoreNode& store_;
  const store::Catalog& cat_;
  std::vector<uint8_t> value_;
};

// Did the copy take w (a key the transaction held locked until its end)?
bool applied(const JournalWrite& w, bool found, uint64_t version) {
  if (is_delete(w)) return !found || version >= w.version;
  return found && version >= w.version;
}

uint64_t key_of(uint32_t table, uint64_t key) {
  return hash_mix(key, table);
}

}  // namespace

Result<std::vector<std::string>> exchange_large(r2::ControlClient& control, const std::string& name,
                                                const std::string& blob) {
  auto sizes = control.exchange(name + ".size", std::to_string(blob.size()));
  if (!sizes.is_ok()) return sizes.status();
  const size_t n = sizes->size();
  std::vector<size_t> size(n, 0);
  size_t most = 0;
  for (size_t i = 0; i < n; ++i) {
    size[i] = std::strtoull((*sizes)[i].c_str(), nullptr, 10);
    most = std::max(most, size[i]);
  }
  const size_t chunk = (32u << 20) / std::max<size_t>(n, 1);
  std::vector<std::string> out(n);
  for (size_t r = 0, at = 0; at < most || r == 0; ++r, at += chunk) {
    const std::string piece = at < blob.size() ? blob.substr(at, chunk) : std::string();
    auto got = control.exchange(name + "." + std::to_string(r), piece);
    if (!got.is_ok()) return got.status();
    for (size_t i = 0; i < n && i < got->size(); ++i) out[i] += (*got)[i];
  }
  for (size_t i = 0; i < n; ++i) {
    if (out[i].size() != size[i]) {
      return internal_error(name + ": node " + std::to_string(i) + " sent " +
                            std::to_string(out[i].size()) + " of " + std::to_string(size[i]) +
                            " bytes");
    }
  }
  return out;
}

std::string RecoveryCheck::line() const {
  std::ostringstream os;
  os << "recovery check: ";
  if (!status.is_ok()) {
    os << "FAILED — " << status.message();
    return os.str();
  }
  const uint64_t not_committed = in_flight - in_flight_committed;
  os << "ok — " << acknowledged << " acknowledged commits verified (" << in_flight
     << " in flight: " << in_flight_committed << " committed, " << not_committed
     << " not), no partial transaction; " << writes_checked << " key copies compared";
  if (absent_unverified)
    os << " (" << absent_unverified << " keys absent, deleted by older transactions)";
  if (commits_before) os << "; " << commits_before << " earlier commits in the carried sums";
  os << "; the workload's check holds with the journals' sums";
  return os.str();
}

Result<RecoveryCheck> check_recovery(const Journal& journal, const Workload& wl,
                                     const store::tables::StoreNode& store,
                                     const store::Catalog& cat, r2::ControlClient& control,
                                     size_t sums) {
  const uint64_t t0 = r2::now_ns();
  RecoveryCheck out;
  auto mine = journal.scan();
  if (!mine.is_ok()) return mine.status();
  auto blobs = exchange_large(control, "bench.journal", mine->encode());
  if (!blobs.is_ok()) return blobs.status();
  std::vector<JournalScan> scans(blobs->size());
  for (size_t i = 0; i < scans.size(); ++i) {
    if (!JournalScan::decode((*blobs)[i], &scans[i])) {
      return internal_error("node " + std::to_string(i) + " sent a malformed journal");
    }
  }
  Copies copies(store, cat);
  const uint16_t me = store.node();

  // (b) the in-flight transactions: this node's copies of their keys.
  std::vector<const JournalRecord*> flight;
  uint64_t folded_until = 0;
  for (const JournalScan& s : scans) {
    folded_until = std::max(folded_until, s.folded_until_ns);
    out.commits_before += s.carried_commits;
    for (const JournalRecord& r : s.records) {
      if (r.state == JournalState::kPrepared) flight.push_back(&r);
      if (r.state == JournalState::kAcknowledged) ++out.acknowledged;
      out.truncated += r.truncated;
    }
  }
  std::ostringstream tally;
  std::vector<std::string> examples;
  uint64_t compared = 0;
  for (size_t i = 0; i < flight.size(); ++i) {
    uint64_t yes = 0, no = 0;
    std::string yes_ex, no_ex;
    auto n = copies.compare(*flight[i], [&](const JournalWrite& w, bool found, uint64_t version) {
      if (applied(w, found, version)) {
        ++yes;
        if (yes_ex.empty()) yes_ex = copies.describe(w, found, version);
      } else {
        ++no;
        if (no_ex.empty()) no_ex = copies.describe(w, found, version);
      }
    });
    if (!n.is_ok()) return n.status();
    compared += *n;
    tally << yes << ' ' << no << ' ';
    if (!yes_ex.empty()) examples.push_back(std::to_string(i) + " y " + yes_ex);
    if (!no_ex.empty()) examples.push_back(std::to_string(i) + " n " + no_ex);
  }
  tally << compared << '\n';
  for (const std::string& e : examples) tally << e << '\n';
  auto tallies = control.exchange("bench.inflight", tally.str());
  if (!tallies.is_ok()) return tallies.status();
  std::vector<uint64_t> yes(flight.size(), 0), no(flight.size(), 0);
  std::vector<std::string> yes_ex(flight.size()), no_ex(flight.size());
  for (size_t n = 0; n < tallies->size(); ++n) {
    std::istringstream is((*tallies)[n]);
    for (size_t i = 0; i < flight.size(); ++i) {
      uint64_t y = 0, x = 0;
      if (!(is >> y >> x))
        return internal_error("node " + std::to_string(n) + " sent a malformed tally");
      yes[i] += y, no[i] += x;
    }
    uint64_t c = 0;
    is >> c;
    out.writes_checked += c;
    std::string line;
    std::getline(is, line);
    while (std::getline(is, line)) {
      std::istringstream ls(line);
      size_t i = 0;
      std::string kind;
      if (!(ls >> i >> kind) || i >= flight.size()) continue;
      std::string rest;
      std::getline(ls, rest);
      if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
      std::string& slot = kind == "y" ? yes_ex[i] : no_ex[i];
      if (slot.empty()) slot = rest;
    }
  }
  std::vector<bool> committed(flight.size(), false);
  for (size_t i = 0; i < flight.size() && out.status.is_ok(); ++i) {
    if (yes[i] > 0 && no[i] > 0) {
      out.status =
          internal_error(flight[i]->name() + ", in flight at the crash, is partial: " + yes_ex[i] +
                         ", but " + no_ex[i]);
    }
    committed[i] = yes[i] > 0 && no[i] == 0;
    out.in_flight_committed += committed[i];
    if (committed[i] && flight[i]->node == me)
      out.committed_here.emplace_back(flight[i]->co, flight[i]->seq);
  }
  out.in_flight = flight.size();

  // (a) the acknowledged records, with the deletes every committed record made.
  std::unordered_map<uint64_t, uint64_t> deleted;  // (table, key) -> highest delete version
  auto note_deletes = [&](const JournalRecord& r) {
    for (const JournalWrite& w : r.writes) {
      if (!is_delete(w)) continue;
      uint64_t& v = deleted[key_of(w.table, w.key)];
      v = std::max(v, w.version);
    }
  };
  for (const JournalScan& s : scans) {
    for (const JournalRecord& r : s.records) {
      if (r.state == JournalState::kAcknowledged) note_deletes(r);
    }
  }
  for (size_t i = 0; i < flight.size(); ++i) {
    if (committed[i]) note_deletes(*flight[i]);
  }
  uint64_t lost = 0, unverified = 0;
  compared = 0;
  std::vector<std::string> messages;
  for (const JournalScan& s : scans) {
    for (const JournalRecord& r : s.records) {
      if (r.state != JournalState::kAcknowledged) continue;
      auto n = copies.compare(r, [&](const JournalWrite& w, bool found, uint64_t version) {
        if (applied(w, found, version)) return;
        if (!found && !is_delete(w)) {
          auto d = deleted.find(key_of(w.table, w.key));
          if (d != deleted.end() && d->second > w.version) return;  // deleted later
          if (r.time_ns <= folded_until) {
            ++unverified;
            return;
          }
        }
        ++lost;
        if (messages.size() < kMaxMessages) {
          messages.push_back("an acknowledged commit is lost: " + r.name() + ": " +
                             copies.describe(w, found, version));
        }
      });
      if (!n.is_ok()) return n.status();
      compared += *n;
    }
  }
  // (c) the workload's check on every copy.
  auto audit = wl.node_audit(store, cat);
  std::ostringstream rep;
  rep << lost << ' ' << unverified << ' ' << compared << ' ';
  if (!audit.is_ok()) {
    rep << "0\n"
        << "audit " << audit.status().message() << '\n';
  } else {
    rep << audit->size();
    for (int64_t v : *audit) rep << ' ' << v;
    rep << '\n';
  }
  for (const std::string& m : messages) rep << "lost " << m << '\n';
  auto reps = control.exchange("bench.recovered", rep.str());
  if (!reps.is_ok()) return reps.status();
  std::vector<int64_t> node_sums;
  std::string audit_error, lost_message;
  uint64_t lost_total = 0;
  for (size_t n = 0; n < reps->size(); ++n) {
    std::istringstream is((*reps)[n]);
    uint64_t l = 0, u = 0, c = 0;
    size_t k = 0;
    if (!(is >> l >> u >> c >> k) || k > (1u << 24))
      return internal_error("node " + std::to_string(n) + " sent a malformed recovery report");
    lost_total += l, out.absent_unverified += u, out.writes_checked += c;
    if (node_sums.size() < k) node_sums.resize(k, 0);
    for (size_t i = 0; i < k; ++i) {
      int64_t v = 0;
      if (!(is >> v))
        return internal_error("node " + std::to_string(n) + " sent a malformed audit");
      node_sums[i] += v;
    }
    std::string line;
    std::getline(is, line);
    while (std::getline(is, line)) {
      if (line.rfind("audit ", 0) == 0 && audit_error.empty())
        audit_error = "node " + std::to_string(n) + ": " + line.substr(6);
      if (line.rfind("lost ", 0) == 0 && lost_message.empty()) lost_message = line.substr(5);
    }
  }
  if (out.status.is_ok() && lost_total > 0) {
    out.status =
        internal_error(lost_message + (lost_total > 1 ? " (and " + std::to_string(lost_total - 1) +
                                                            " more key copies)"
                                                      : std::string()));
  }
  // The client sums the database holds.
  out.client_sums.assign(sums, 0);
  auto add = [&](const std::vector<int64_t>& v) {
    for (size_t i = 0; i < sums && i < v.size(); ++i) out.client_sums[i] += v[i];
  };
  for (const JournalScan& s : scans) {
    add(s.carried);
    for (const JournalRecord& r : s.records) {
      if (r.state == JournalState::kAcknowledged) add(r.sums);
    }
  }
  for (size_t i = 0; i < flight.size(); ++i) {
    if (committed[i]) add(flight[i]->sums);
  }
  if (out.status.is_ok() && !audit_error.empty()) {
    out.status =
        internal_error("the recovered database fails the workload's audit: " + audit_error);
  }
  if (out.status.is_ok()) {
    Status c = wl.check(node_sums, out.client_sums);
    if (!c.is_ok()) {
      out.status = Status(c.code(),
                          "the recovered database fails the workload's check with the "
                          "journals' sums: " +
                              c.message());
    }
  }
  out.check_ns = r2::now_ns() - t0;
  return out;
}

}  // namespace drtmx::bench
