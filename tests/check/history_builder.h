// Hand-written histories for the checker's tests: transactions with their
// times, turned into a JSON Lines history in time order.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "check/checker.h"
#include "check/history_parse.h"

namespace drtmx::check::test {

struct TxnSpec {
  int process;
  long invoke;        // time
  long complete;      // time; < 0: no completion
  std::string type;   // ok, fail, info
  std::string value;  // the micro-ops as the completion reports them
};

// The invoke's value: each read's list replaced by null.
inline std::string invoke_value(const std::string& v) {
  std::string out;
  size_t i = 0;
  while (i < v.size()) {
    if (v.compare(i, 5, "[\"r\",") == 0) {
      size_t comma = v.find(',', i + 5);
      out += v.substr(i, comma + 1 - i) + "null";
      size_t j = comma + 1;
      if (v[j] == '[') {
        j = v.find(']', j) + 1;
      } else {
        j = v.find(']', j);
      }
      i = j;
      continue;
    }
    out += v[i++];
  }
  return out;
}

inline std::string history_text(const std::vector<TxnSpec>& txns) {
  struct Ev {
    long time;
    int order;
    std::string body;
  };
  std::vector<Ev> ev;
  int n = 0;
  for (const auto& t : txns) {
    ev.push_back({t.invoke, n++,
                  "\"process\":" + std::to_string(t.process) +
                      ",\"time\":" + std::to_string(t.invoke) +
                      ",\"type\":\"invoke\",\"value\":" + invoke_value(t.value)});
    if (t.complete >= 0) {
      ev.push_back({t.complete, n++,
                    "\"process\":" + std::to_string(t.process) +
                        ",\"time\":" + std::to_string(t.complete) + ",\"type\":\"" + t.type +
                        "\",\"value\":" + t.value});
    }
  }
  std::stable_sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) { return a.time < b.time; });
  std::string s;
  for (size_t i = 0; i < ev.size(); i++) {
    s += "{\"index\":" + std::to_string(i) + "," + ev[i].body + "}\n";
  }
  return s;
}

struct Checked {
  CheckReport report;
  std::set<std::string> types;
  History history;  // the report points into it
};

// Parses and checks; the caller asserts on the result.
inline Result<std::unique_ptr<Checked>> check_text(const std::string& text,
                                                   const std::string& models = "serializable") {
  auto h = parse_history_text(text);
  if (!h) return h.status();
  auto c = std::make_unique<Checked>();
  c->history = std::move(*h);
  CheckOptions opt;
  opt.models = parse_models(models).value();
  auto r = check_history(c->history, opt);
  if (!r) return r.status();
  c->report = std::move(*r);
  for (const auto& [t, n] : c->report.analysis.anomalies.counts()) c->types.insert(t);
  return c;
}

}  // namespace drtmx::check::test
