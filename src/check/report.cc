// The checker's result as JSON (Jepsen's checker shape) and as a paragraph.
#include "check/checker.h"
#include "check/explain.h"

namespace drtmx::check {

namespace {

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static const char* hex = "0123456789abcdef";
      o += "\\u00";
      o += hex[(c >> 4) & 0xf];
      o += hex[c & 0xf];
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string list_json(std::span<const int64_t> l) {
  std::string s = "[";
  for (size_t i = 0; i < l.size(); i++) s += (i ? "," : "") + std::to_string(l[i]);
  return s + "]";
}

// A transaction as Jepsen prints an operation: its completion (or invoke).
std::string txn_json(const History& h, uint32_t t) {
  const Txn& tx = h.txns[t];
  bool done = tx.complete_index >= 0;
  std::string s =
      "{\"index\":" + std::to_string(txn_index(h, t)) +
      ",\"invoke-index\":" + std::to_string(tx.invoke_index) +
      ",\"process\":" + std::to_string(tx.process) + ",\"type\":\"" + outcome_name(tx.outcome) +
      "\",\"time\":" + std::to_string(done ? tx.complete_time : tx.invoke_time) + ",\"value\":[";
  for (uint32_t i = 0; i < tx.mop_count; i++) {
    const MicroOp& m = h.mops[tx.mop_begin + i];
    s += i ? "," : "";
    if (m.kind == MopKind::kAppend) {
      s += "[\"append\"," + std::to_string(m.key) + "," + std::to_string(m.value) + "]";
    } else {
      s += "[\"r\"," + std::to_string(m.key) + "," +
           (m.read_known ? list_json(h.read_of(m)) : std::string("null")) + "]";
    }
  }
  return s + "]}";
}

std::string anomaly_json(const Analysis& a, const Anomaly& an) {
  const History& h = *a.h;
  bool cycle = !an.steps.empty();
  std::string s = cycle ? "{\"cycle\":[" : "{\"txns\":[";
  for (size_t i = 0; i < an.txns.size(); i++) s += (i ? "," : "") + txn_json(h, an.txns[i]);
  s += "]";
  if (cycle) {
    s += ",\"steps\":[";
    for (size_t i = 0; i < an.steps.size(); i++) {
      const Step& st = an.steps[i];
      StepEvidence ev = step_evidence(a, st);
      s += (i ? "," : "") + std::string("{\"type\":\"") + edge_name(st.type) +
           "\",\"from\":" + std::to_string(txn_index(h, st.from)) +
           ",\"to\":" + std::to_string(txn_index(h, st.to));
      if (ev.found) {
        s += ",\"key\":" + std::to_string(ev.key) + ",\"value\":" + std::to_string(ev.value);
        if (ev.unread) s += ",\"unread\":true";
      }
      s += "}";
    }
    s += "]";
  }
  if (an.has_key) s += ",\"key\":" + std::to_string(an.key);
  if (an.has_value) s += ",\"value\":" + std::to_string(an.value);
  return s + ",\"explanation\":" + quote(an.explanation) + "}";
}

std::string names_json(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); i++) s += (i ? "," : "") + quote(v[i]);
  return s + "]";
}

}  // namespace

std::string report_json(const CheckReport& r) {
  const Analysis& a = r.analysis;
  const auto& counts = a.anomalies.counts();
  std::string s = "{\"valid?\":";
  s += r.verdict == Verdict::kValid     ? "true"
       : r.verdict == Verdict::kInvalid ? "false"
                                        : "\"unknown\"";
  s += ",\"consistency-models\":" + names_json(r.models);
  std::vector<std::string> types;
  for (const auto& [t, n] : counts) types.push_back(t);
  s += ",\"anomaly-types\":" + names_json(types);
  s += ",\"forbidden-anomaly-types\":" + names_json(r.forbidden_found);
  s += ",\"not\":" + names_json(r.not_models);
  s += ",\"anomalies\":{";
  bool first = true;
  for (const auto& [t, list] : a.anomalies.kept()) {
    s += (first ? "" : ",") + quote(t) + ":[";
    first = false;
    for (size_t i = 0; i < list.size(); i++) s += (i ? "," : "") + anomaly_json(a, list[i]);
    s += "]";
  }
  s += "},\"anomaly-counts\":{";
  first = true;
  for (const auto& [t, n] : counts) {
    s += (first ? "" : ",") + quote(t) + ":" + std::to_string(n);
    first = false;
  }
  const History& h = *a.h;
  s += "},\"stats\":{\"ops\":" + std::to_string(h.op_count) +
       ",\"txns\":" + std::to_string(h.txns.size()) + ",\"ok\":" + std::to_string(a.ok_txns) +
       ",\"fail\":" + std::to_string(a.fail_txns) + ",\"info\":" + std::to_string(a.info_txns) +
       ",\"keys\":" + std::to_string(a.keys.size()) +
       ",\"graph-edges\":" + std::to_string(r.graph_edges) +
       ",\"cyclic-components\":" + std::to_string(r.cycles.components) +
       ",\"cycle-search-budget-exhausted\":" + (r.cycles.budget_exhausted ? "true" : "false") +
       ",\"unread-ok-appends\":" + std::to_string(a.unread_ok_appends) +
       ",\"unread-info-appends\":" + std::to_string(a.unread_info_appends) + "}}";
  return s;
}

std::string report_summary(const CheckReport& r) {
  const Analysis& a = r.analysis;
  std::string models;
  for (const auto& m : r.models) models += (models.empty() ? "" : ", ") + m;
  std::string s = "drtmx-check: " + std::to_string(a.h->txns.size()) + " transactions (" +
                  std::to_string(a.ok_txns) + " ok, " + std::to_string(a.fail_txns) + " fail, " +
                  std::to_string(a.info_txns) + " info) on " + std::to_string(a.keys.size()) +
                  " keys: ";
  if (r.verdict == Verdict::kValid) {
    s += "valid under " + models + ".";
  } else if (r.verdict == Verdict::kUnknown) {
    s += "unknown (no ok transaction to judge).";
  } else {
    s += "NOT " + models + ": ";
    for (size_t i = 0; i < r.forbidden_found.size(); i++) {
      const std::string& t = r.forbidden_found[i];
      s += (i ? ", " : "") + t + " x" + std::to_string(a.anomalies.counts().at(t));
    }
    s += ".";
    for (const std::string& t : r.forbidden_found) {
      s += "\n  " + t + ": " + a.anomalies.kept().at(t).front().explanation;
    }
  }
  std::vector<std::string> allowed;
  for (const auto& [t, n] : a.anomalies.counts()) {
    bool forbidden = false;
    for (const auto& f : r.forbidden_found) forbidden |= f == t;
    if (!forbidden) allowed.push_back(t + " x" + std::to_string(n));
  }
  if (!allowed.empty()) {
    s += "\n  Also found (allowed by " + models + "):";
    for (const auto& x : allowed) s += " " + x;
  }
  if (a.unread_ok_appends > 0) {
    s += "\n  " + std::to_string(a.unread_ok_appends) +
         " appends of ok transactions were never read (each is ordered after every value read "
         "of its key).";
  }
  return s;
}

}  // namespace drtmx::check
