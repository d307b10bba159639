#include "check/explain.h"

namespace drtmx::check {

int64_t txn_index(const History& h, uint32_t txn) {
  const Txn& t = h.txns[txn];
  return t.complete_index >= 0 ? t.complete_index : t.invoke_index;
}

std::string txn_name(const History& h, uint32_t txn) {
  return "op index " + std::to_string(txn_index(h, txn)) + " (process " +
         std::to_string(h.txns[txn].process) + ", " + outcome_name(h.txns[txn].outcome) + ")";
}

std::string list_text(std::span<const int64_t> l) {
  std::string s = "[";
  auto put = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; i++) {
      if (s.size() > 1) s += ' ';
      s += std::to_string(l[i]);
    }
  };
  if (l.size() <= 12) {
    put(0, l.size());
    return s + "]";
  }
  put(0, 4);
  s += " ...";
  put(l.size() - 4, l.size());
  return s + "] (" + std::to_string(l.size()) + " values)";
}

StepEvidence step_evidence(const Analysis& a, const Step& s) {
  const History& h = *a.h;
  const Txn& from = h.txns[s.from];
  const Txn& to = h.txns[s.to];
  StepEvidence ev;
  auto writer = [&](uint32_t kid, int64_t v) -> int64_t {
    const AppendRef* r = a.appends.find(kid, v);
    return r == nullptr ? -1 : r->txn;
  };
  // An append of `txn` to key `kid` that comes after the whole order.
  auto unread_append = [&](const Txn& txn, uint32_t kid, int64_t* value) {
    for (uint32_t j = txn.mop_begin; j < txn.mop_begin + txn.mop_count; j++) {
      if (h.mops[j].kind != MopKind::kAppend || a.mop_kid[j] != kid) continue;
      if (a.unread_committed(kid, *a.appends.find(kid, h.mops[j].value))) {
        *value = h.mops[j].value;
        return true;
      }
    }
    return false;
  };
  if (s.type == kWW) {
    // Consecutive in the order first, else an earlier value and an unread one.
    for (int pass = 0; pass < 2 && !ev.found; pass++) {
      for (uint32_t i = from.mop_begin; i < from.mop_begin + from.mop_count && !ev.found; i++) {
        if (h.mops[i].kind != MopKind::kAppend) continue;
        uint32_t kid = a.mop_kid[i];
        const AppendRef* ri = a.appends.find(kid, h.mops[i].value);
        if (ri->pos < 0) continue;
        if (pass == 1) {
          int64_t v = 0;
          if (unread_append(to, kid, &v)) {
            ev = {true, h.mops[i].key, v, UINT32_MAX, h.mops[i].value, true};
          }
          continue;
        }
        for (uint32_t j = to.mop_begin; j < to.mop_begin + to.mop_count; j++) {
          if (h.mops[j].kind != MopKind::kAppend || a.mop_kid[j] != kid) continue;
          const AppendRef* rj = a.appends.find(kid, h.mops[j].value);
          if (rj->pos > ri->pos) {
            ev = {true, h.mops[i].key, h.mops[j].value, UINT32_MAX, h.mops[i].value, false};
            break;
          }
        }
      }
    }
  } else if (s.type == kWR || s.type == kRW) {
    const Txn& reader = s.type == kWR ? to : from;
    uint32_t other = s.type == kWR ? s.from : s.to;
    for (uint32_t i = reader.mop_begin; i < reader.mop_begin + reader.mop_count; i++) {
      if (!a.read_in_order[i]) continue;
      auto order = a.order(a.mop_kid[i]);
      uint32_t len = h.mops[i].read_len;
      uint32_t at = s.type == kWR ? len - 1 : len;
      if ((s.type == kWR && len == 0) || at >= order.size()) continue;
      if (writer(a.mop_kid[i], order[at]) == other) {
        ev = {true, h.mops[i].key, order[at], i, 0, false};
        break;
      }
    }
    // rw to an append no read saw: the reader's read lacks it.
    for (uint32_t i = reader.mop_begin;
         s.type == kRW && !ev.found && i < reader.mop_begin + reader.mop_count; i++) {
      int64_t v = 0;
      if (a.read_in_order[i] && unread_append(to, a.mop_kid[i], &v)) {
        ev = {true, h.mops[i].key, v, i, 0, true};
      }
    }
  }
  return ev;
}

std::string explain_cycle(const Analysis& a, const Anomaly& c) {
  const History& h = *a.h;
  auto name = [&](uint32_t txn) {
    for (size_t i = 0; i < c.txns.size(); i++) {
      if (c.txns[i] == txn) return "T" + std::to_string(i + 1);
    }
    return std::string("T?");
  };
  std::string s = "Let ";
  for (size_t i = 0; i < c.txns.size(); i++) {
    s += (i ? ", " : "") + name(c.txns[i]) + " = " + txn_name(h, c.txns[i]);
  }
  s += ". ";
  // Why an append no read saw comes after every value read: it is in the
  // key's final list, of which every read is a prefix.
  auto after_all = [&](uint32_t txn, int64_t value) {
    return " (" + name(txn) + " committed" +
           (h.txns[txn].outcome == Outcome::kOk ? "" : ", as a read saw another of its appends") +
           ", so " + std::to_string(value) + " comes after every value read)";
  };
  for (const Step& st : c.steps) {
    std::string f = name(st.from), t = name(st.to);
    StepEvidence ev = step_evidence(a, st);
    std::string key = "key " + std::to_string(ev.key);
    switch (st.type) {
      case kWW:
        s += f + " appended " + std::to_string(ev.value_before) + " to " + key + " and " + t +
             " appended " + std::to_string(ev.value) +
             (ev.unread ? ", which no read saw" + after_all(st.to, ev.value) : " after it") +
             ", so " + f + " < " + t + " (ww); ";
        break;
      case kWR:
        s += t + " read " + key + " = " + list_text(h.read_of(h.mops[ev.read_mop])) +
             ", which ends in " + f + "'s append of " + std::to_string(ev.value) + ", so " + f +
             " < " + t + " (wr); ";
        break;
      case kRW:
        s += f + " read " + key + " = " + list_text(h.read_of(h.mops[ev.read_mop])) + " without " +
             t + "'s append of " + std::to_string(ev.value) +
             (ev.unread ? ", which no read saw" + after_all(st.to, ev.value)
                        : ", the next in its order") +
             ", so " + f + " < " + t + " (rw); ";
        break;
      case kProcess:
        s += f + " ran before " + t + " on process " + std::to_string(h.txns[st.from].process) +
             ", so " + f + " < " + t + " (process); ";
        break;
      case kRealtime:
        s += f + " completed (time " + std::to_string(h.txns[st.from].complete_time) + ") before " +
             t + " was invoked (time " + std::to_string(h.txns[st.to].invoke_time) + "), so " + f +
             " < " + t + " (realtime); ";
        break;
    }
  }
  s += "a cycle: ";
  for (const Step& st : c.steps) s += name(st.from) + " < ";
  s += name(c.steps.front().from) + ", so no order of these transactions explains what they saw.";
  return s;
}

}  // namespace drtmx::check
