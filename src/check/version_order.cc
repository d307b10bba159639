// Version orders and the anomalies visible without a dependency graph.
#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "check/analysis.h"
#include "check/explain.h"

namespace drtmx::check {

namespace {

constexpr uint32_t kNone = UINT32_MAX;

// Per key, the first position in its order of each kind of trouble (kNone
// when absent); a read that is a prefix of the order has the trouble iff it
// is longer than that position.
struct KeyTrouble {
  uint32_t dup = kNone;      // the second occurrence of a value
  uint32_t failed = kNone;   // a value a failed transaction appended
  uint32_t garbage = kNone;  // a value nobody appended
};

class VersionAnalyzer {
 public:
  explicit VersionAnalyzer(const History& h) : h_(h) {}
  Result<Analysis> run();

 private:
  Status index_appends();
  void infer_orders();
  void scan_orders();
  void check_read(uint32_t txn, uint32_t mi);
  void check_scattered_read(uint32_t txn, uint32_t mi);
  void check_internal(uint32_t txn);
  void check_lost_updates();
  void mark_nodes();

  const History& h_;
  Analysis a_;
  std::vector<KeyTrouble> trouble_;
};

std::string key_s(int64_t k) {
  return "key " + std::to_string(k);
}

Status VersionAnalyzer::index_appends() {
  std::unordered_map<int64_t, uint32_t> kid_of;
  a_.mop_kid.resize(h_.mops.size());
  size_t n_appends = 0;
  for (size_t i = 0; i < h_.mops.size(); i++) {
    auto [it, fresh] = kid_of.try_emplace(h_.mops[i].key, static_cast<uint32_t>(a_.keys.size()));
    if (fresh) a_.keys.push_back(KeyOrder{h_.mops[i].key, 0, 0});
    a_.mop_kid[i] = it->second;
    n_appends += h_.mops[i].kind == MopKind::kAppend;
  }
  a_.appends = AppendIndex(n_appends);
  std::vector<uint32_t> later;  // key ids this txn appends to later
  for (uint32_t t = 0; t < h_.txns.size(); t++) {
    const Txn& tx = h_.txns[t];
    later.clear();
    for (uint32_t j = tx.mop_count; j-- > 0;) {
      uint32_t mi = tx.mop_begin + j;
      const MicroOp& m = h_.mops[mi];
      if (m.kind != MopKind::kAppend) continue;
      uint32_t kid = a_.mop_kid[mi];
      AppendRef ref;
      ref.txn = t;
      ref.mop = mi;
      ref.final = std::find(later.begin(), later.end(), kid) == later.end();
      later.push_back(kid);
      bool fresh = false;
      AppendRef* got = a_.appends.insert(kid, m.value, ref, &fresh);
      if (!fresh) {
        return invalid_argument(
            "history: value " + std::to_string(m.value) + " is appended to key " +
            std::to_string(m.key) + " by both " + txn_name(h_, got->txn) + " and " +
            txn_name(h_, t) +
            "; values must be unique per key (the checker infers versions from them)");
      }
    }
  }
  return Status::ok();
}

void VersionAnalyzer::infer_orders() {
  std::vector<uint8_t> seen(a_.keys.size(), 0);
  for (const Txn& tx : h_.txns) {
    if (tx.outcome != Outcome::kOk) continue;
    for (uint32_t mi = tx.mop_begin; mi < tx.mop_begin + tx.mop_count; mi++) {
      const MicroOp& m = h_.mops[mi];
      if (m.kind != MopKind::kRead || !m.read_known) continue;
      KeyOrder& k = a_.keys[a_.mop_kid[mi]];
      if (!seen[a_.mop_kid[mi]] || m.read_len > k.len) {
        k.begin = m.read_begin;
        k.len = m.read_len;
        seen[a_.mop_kid[mi]] = 1;
      }
    }
  }
}

void VersionAnalyzer::scan_orders() {
  trouble_.assign(a_.keys.size(), KeyTrouble{});
  std::unordered_set<int64_t> garbage_seen;
  for (uint32_t kid = 0; kid < a_.keys.size(); kid++) {
    auto order = a_.order(kid);
    KeyTrouble& tr = trouble_[kid];
    garbage_seen.clear();
    uint32_t first_failed = kNone;
    bool dirty_reported = false;
    for (uint32_t p = 0; p < order.size(); p++) {
      AppendRef* ref = a_.appends.find(kid, order[p]);
      if (ref == nullptr) {
        if (tr.garbage == kNone) tr.garbage = p;
        if (!garbage_seen.insert(order[p]).second && tr.dup == kNone) tr.dup = p;
        continue;
      }
      if (ref->pos >= 0) {
        if (tr.dup == kNone) tr.dup = p;
        continue;
      }
      ref->pos = p;
      Outcome o = h_.txns[ref->txn].outcome;
      if (o == Outcome::kFail) {
        if (tr.failed == kNone) tr.failed = p;
        if (first_failed == kNone) first_failed = p;
      } else if (first_failed != kNone && !dirty_reported) {
        // A committed (or possibly committed) append built on an aborted one.
        dirty_reported = true;
        Anomaly an;
        an.type = "dirty-update";
        const AppendRef* f = a_.appends.find(kid, order[first_failed]);
        an.txns = {f->txn, ref->txn};
        an.has_key = true;
        an.key = a_.keys[kid].key;
        an.has_value = true;
        an.value = order[p];
        if (a_.anomalies.wants(an.type)) {
          an.explanation = txn_name(h_, f->txn) + " failed, yet its append of " +
                           std::to_string(order[first_failed]) + " to " + key_s(an.key) +
                           " is in the key's version order before " + txn_name(h_, ref->txn) +
                           "'s append of " + std::to_string(order[p]);
        }
        a_.anomalies.add(std::move(an));
      }
    }
  }
}

void VersionAnalyzer::check_scattered_read(uint32_t txn, uint32_t mi) {
  // A read that is not a prefix of its key's order: each element alone.
  const MicroOp& m = h_.mops[mi];
  uint32_t kid = a_.mop_kid[mi];
  auto r = h_.read_of(m);
  std::unordered_set<int64_t> seen;
  bool dup = false, g1a = false, garbage = false;
  for (int64_t v : r) {
    if (!seen.insert(v).second && !dup) {
      dup = true;
      Anomaly an{"duplicate-elements", {txn}, {}, true, m.key, true, v, ""};
      if (a_.anomalies.wants(an.type)) {
        an.explanation = txn_name(h_, txn) + " read " + key_s(m.key) + " = " + list_text(r) +
                         ", which holds " + std::to_string(v) + " twice";
      }
      a_.anomalies.add(std::move(an));
    }
    const AppendRef* ref = a_.appends.find(kid, v);
    if (ref == nullptr && !garbage) {
      garbage = true;
      Anomaly an{"garbage-read", {txn}, {}, true, m.key, true, v, ""};
      if (a_.anomalies.wants(an.type)) {
        an.explanation = txn_name(h_, txn) + " read " + key_s(m.key) + " = " + list_text(r) +
                         ", but no transaction appended " + std::to_string(v) + " to it";
      }
      a_.anomalies.add(std::move(an));
    } else if (ref != nullptr && !g1a && h_.txns[ref->txn].outcome == Outcome::kFail) {
      g1a = true;
      Anomaly an{"G1a", {ref->txn, txn}, {}, true, m.key, true, v, ""};
      if (a_.anomalies.wants(an.type)) {
        an.explanation = txn_name(h_, txn) + " read " + key_s(m.key) + " = " + list_text(r) +
                         ", which holds " + std::to_string(v) + ", appended by " +
                         txn_name(h_, ref->txn) + ", which failed (aborted read)";
      }
      a_.anomalies.add(std::move(an));
    }
  }
}

void VersionAnalyzer::check_read(uint32_t txn, uint32_t mi) {
  const MicroOp& m = h_.mops[mi];
  uint32_t kid = a_.mop_kid[mi];
  auto r = h_.read_of(m);
  auto order = a_.order(kid);
  bool prefix = r.size() <= order.size() &&
                (r.empty() || std::memcmp(r.data(), order.data(), r.size() * sizeof(int64_t)) == 0);
  if (!prefix) {
    a_.keys[kid].reads_agree = false;
    Anomaly an{"incompatible-order", {txn}, {}, true, m.key, false, 0, ""};
    if (a_.anomalies.wants(an.type)) {
      an.explanation = txn_name(h_, txn) + " read " + key_s(m.key) + " = " + list_text(r) +
                       ", which is not a prefix of the key's longest read " + list_text(order);
    }
    a_.anomalies.add(std::move(an));
    check_scattered_read(txn, mi);
    return;
  }
  a_.read_in_order[mi] = 1;
  const KeyTrouble& tr = trouble_[kid];
  uint32_t len = static_cast<uint32_t>(r.size());
  if (tr.dup != kNone && len > tr.dup) {
    Anomaly an{"duplicate-elements", {txn}, {}, true, m.key, true, order[tr.dup], ""};
    if (a_.anomalies.wants(an.type)) {
      an.explanation = txn_name(h_, txn) + " read " + key_s(m.key) + " = " + list_text(r) +
                       ", which holds " + std::to_string(order[tr.dup]) + " twice";
    }
    a_.anomalies.add(std::move(an));
  }
  if (tr.garbage != kNone && len > tr.garbage) {
    Anomaly an{"garbage-read", {txn}, {}, true, m.key, true, order[tr.garbage], ""};
    if (a_.anomalies.wants(an.type)) {
      an.explanation = txn_name(h_, txn) + " read " + key_s(m.key) + " = " + list_text(r) +
                       ", but no transaction appended " + std::to_string(order[tr.garbage]) +
                       " to it";
    }
    a_.anomalies.add(std::move(an));
  }
  if (tr.failed != kNone && len > tr.failed) {
    const AppendRef* w = a_.appends.find(kid, order[tr.failed]);
    Anomaly an{"G1a", {w->txn, txn}, {}, true, m.key, true, order[tr.failed], ""};
    if (a_.anomalies.wants(an.type)) {
      an.explanation = txn_name(h_, txn) + " read " + key_s(m.key) + " = " + list_text(r) +
                       ", which holds " + std::to_string(order[tr.failed]) + ", appended by " +
                       txn_name(h_, w->txn) + ", which failed (aborted read)";
    }
    a_.anomalies.add(std::move(an));
  }
  if (len > 0) {
    const AppendRef* w = a_.appends.find(kid, r.back());
    if (w != nullptr && w->txn != txn && !w->final && h_.txns[w->txn].outcome != Outcome::kFail) {
      Anomaly an{"G1b", {w->txn, txn}, {}, true, m.key, true, r.back(), ""};
      if (a_.anomalies.wants(an.type)) {
        an.explanation = txn_name(h_, txn) + " read " + key_s(m.key) + " = " + list_text(r) +
                         ", ending in " + std::to_string(r.back()) +
                         ", an intermediate append of " + txn_name(h_, w->txn) +
                         ", which appended to the key again later";
      }
      a_.anomalies.add(std::move(an));
    }
  }
}

// Within one ok transaction: a read of k reflects the transaction's own
// earlier appends to k (exactly, after an earlier read of k) and none of its
// later ones.
void VersionAnalyzer::check_internal(uint32_t txn) {
  const Txn& tx = h_.txns[txn];
  std::vector<int64_t> expect;
  for (uint32_t i = 0; i < tx.mop_count; i++) {
    uint32_t mi = tx.mop_begin + i;
    const MicroOp& m = h_.mops[mi];
    if (m.kind != MopKind::kRead || !m.read_known) continue;
    uint32_t kid = a_.mop_kid[mi];
    auto r = h_.read_of(m);
    bool future = false;
    for (uint32_t j = i + 1; j < tx.mop_count && !future; j++) {
      const MicroOp& later = h_.mops[tx.mop_begin + j];
      if (later.kind != MopKind::kAppend || a_.mop_kid[tx.mop_begin + j] != kid) continue;
      if (a_.read_in_order[mi]) {
        const AppendRef* ref = a_.appends.find(kid, later.value);
        future = ref->pos >= 0 && ref->pos < static_cast<int64_t>(r.size());
      } else {
        future = std::find(r.begin(), r.end(), later.value) != r.end();
      }
      if (future) {
        Anomaly an{"future-read", {txn}, {}, true, m.key, true, later.value, ""};
        if (a_.anomalies.wants(an.type)) {
          an.explanation = txn_name(h_, txn) + " read " + key_s(m.key) + " = " + list_text(r) +
                           ", which holds " + std::to_string(later.value) +
                           ", a value the same transaction appends later";
        }
        a_.anomalies.add(std::move(an));
      }
    }
    if (future) continue;
    // What this transaction itself knows of k before this read.
    bool have_read = false;
    expect.clear();
    for (uint32_t j = 0; j < i; j++) {
      uint32_t mj = tx.mop_begin + j;
      if (a_.mop_kid[mj] != kid) continue;
      const MicroOp& p = h_.mops[mj];
      if (p.kind == MopKind::kRead && p.read_known) {
        auto pr = h_.read_of(p);
        expect.assign(pr.begin(), pr.end());
        have_read = true;
      } else if (p.kind == MopKind::kAppend) {
        expect.push_back(p.value);
      }
    }
    bool ok = have_read
                  ? (r.size() == expect.size() && std::equal(r.begin(), r.end(), expect.begin()))
                  : (r.size() >= expect.size() &&
                     std::equal(expect.begin(), expect.end(),
                                r.end() - static_cast<int64_t>(expect.size())));
    if (!ok) {
      Anomaly an{"internal", {txn}, {}, true, m.key, false, 0, ""};
      if (a_.anomalies.wants(an.type)) {
        an.explanation = txn_name(h_, txn) + " read " + key_s(m.key) + " = " + list_text(r) +
                         ", but its own earlier micro-ops imply " +
                         (have_read ? "exactly " : "a list ending in ") + list_text(expect);
      }
      a_.anomalies.add(std::move(an));
    }
  }
}

// Two committed transactions that read the same version of a key and then
// both appended to it: one of the appends was made without seeing the other.
void VersionAnalyzer::check_lost_updates() {
  std::unordered_map<uint64_t, uint32_t> first;  // (key id, read length) -> txn
  std::unordered_set<uint64_t> reported;
  for (uint32_t t = 0; t < h_.txns.size(); t++) {
    const Txn& tx = h_.txns[t];
    if (tx.outcome != Outcome::kOk) continue;
    for (uint32_t i = 0; i < tx.mop_count; i++) {
      uint32_t mi = tx.mop_begin + i;
      const MicroOp& m = h_.mops[mi];
      if (m.kind != MopKind::kRead || !a_.read_in_order[mi]) continue;
      uint32_t kid = a_.mop_kid[mi];
      bool earlier_access = false, later_append = false;
      for (uint32_t j = 0; j < tx.mop_count; j++) {
        if (a_.mop_kid[tx.mop_begin + j] != kid || j == i) continue;
        if (j < i) earlier_access = true;
        if (j > i && h_.mops[tx.mop_begin + j].kind == MopKind::kAppend) later_append = true;
      }
      if (earlier_access || !later_append) continue;
      uint64_t slot = (uint64_t{kid} << 32) | m.read_len;
      auto [it, fresh] = first.try_emplace(slot, t);
      if (fresh || !reported.insert(slot).second) continue;
      Anomaly an{"lost-update", {it->second, t}, {}, true, m.key, false, 0, ""};
      if (a_.anomalies.wants(an.type)) {
        an.explanation = txn_name(h_, it->second) + " and " + txn_name(h_, t) + " both read " +
                         key_s(m.key) + " = " + list_text(h_.read_of(m)) +
                         " and then both appended to it";
      }
      a_.anomalies.add(std::move(an));
    }
  }
}

void VersionAnalyzer::mark_nodes() {
  a_.is_node.assign(h_.txns.size(), 0);
  for (uint32_t t = 0; t < h_.txns.size(); t++) {
    const Txn& tx = h_.txns[t];
    if (tx.outcome == Outcome::kOk) a_.ok_txns++;
    if (tx.outcome == Outcome::kFail) a_.fail_txns++;
    if (tx.outcome == Outcome::kInfo) a_.info_txns++;
    bool observed = false;
    for (uint32_t mi = tx.mop_begin; mi < tx.mop_begin + tx.mop_count; mi++) {
      const MicroOp& m = h_.mops[mi];
      if (m.kind != MopKind::kAppend) continue;
      bool read = a_.appends.find(a_.mop_kid[mi], m.value)->pos >= 0;
      observed |= read;
      if (!read && tx.outcome == Outcome::kOk) a_.unread_ok_appends++;
      if (!read && tx.outcome == Outcome::kInfo) a_.unread_info_appends++;
    }
    a_.is_node[t] = tx.outcome == Outcome::kOk || (tx.outcome == Outcome::kInfo && observed);
    for (uint32_t mi = tx.mop_begin; a_.is_node[t] && mi < tx.mop_begin + tx.mop_count; mi++) {
      const MicroOp& m = h_.mops[mi];
      uint32_t kid = a_.mop_kid[mi];
      if (m.kind == MopKind::kAppend && a_.unread_committed(kid, *a_.appends.find(kid, m.value))) {
        a_.unread_mops.push_back(mi);
      }
    }
  }
}

Result<Analysis> VersionAnalyzer::run() {
  a_.h = &h_;
  DRTMX_RETURN_IF_ERROR(index_appends());
  infer_orders();
  scan_orders();
  a_.read_in_order.assign(h_.mops.size(), 0);
  for (uint32_t t = 0; t < h_.txns.size(); t++) {
    const Txn& tx = h_.txns[t];
    if (tx.outcome != Outcome::kOk) continue;
    for (uint32_t mi = tx.mop_begin; mi < tx.mop_begin + tx.mop_count; mi++) {
      if (h_.mops[mi].kind == MopKind::kRead && h_.mops[mi].read_known) check_read(t, mi);
    }
    check_internal(t);
  }
  check_lost_updates();
  mark_nodes();
  return std::move(a_);
}

}  // namespace

Result<Analysis> analyze_versions(const History& h) {
  return VersionAnalyzer(h).run();
}

}  // namespace drtmx::check
