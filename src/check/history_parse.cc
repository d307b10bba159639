#include "check/history_parse.h"

#include <simdjson.h>

#include <unordered_map>

namespace drtmx::check {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kFail:
      return "fail";
    case Outcome::kInfo:
      return "info";
  }
  return "?";
}

namespace {

namespace dom = simdjson::dom;

enum class OpType : uint8_t { kInvoke, kOk, kFail, kInfo };

// Where an operation sits in the file, for error messages.
struct OpPlace {
  uint64_t ordinal = 0;  // 1-based position among the operations
  uint64_t line = 0;     // JSON Lines: its line; 0 in an array
  int64_t index = -1;    // its "index" field once read
};

std::string where(const OpPlace& p) {
  std::string s = "history: op";
  if (p.index >= 0) s += " index " + std::to_string(p.index);
  if (p.line > 0) {
    s += " (line " + std::to_string(p.line) + ")";
  } else {
    s += " (#" + std::to_string(p.ordinal) + " in the array)";
  }
  return s + ": ";
}

Status bad(const OpPlace& p, const std::string& what) {
  return invalid_argument(where(p) + what);
}

Status json_bad(const OpPlace& p, const std::string& what, simdjson::error_code e) {
  return bad(p, what + " (" + simdjson::error_message(e) + ")");
}

// One micro-op as read from an operation's value, before pairing.
struct RawMop {
  int64_t key = 0;
  int64_t value = 0;
  MopKind kind = MopKind::kAppend;
  bool has_list = false;
  uint64_t list_begin = 0;  // into the parser's scratch list
  uint32_t list_len = 0;
};

class Parser {
 public:
  Status op(dom::object obj, const OpPlace& place_in);
  Result<History> finish();

 private:
  Status parse_value(dom::element v, const OpPlace& p, bool* is_null);
  Status pair(OpType type, int64_t process, int64_t time, bool value_null, const OpPlace& p);

  History h_;
  std::unordered_map<int64_t, uint32_t> pending_;  // process -> txn
  std::vector<RawMop> raw_;
  std::vector<int64_t> scratch_;
};

Status Parser::parse_value(dom::element v, const OpPlace& p, bool* is_null) {
  raw_.clear();
  scratch_.clear();
  *is_null = v.is_null();
  if (*is_null) return Status::ok();
  dom::array mops;
  if (auto e = v.get_array().get(mops); e) {
    return json_bad(p, "\"value\" must be a list of micro-ops or null", e);
  }
  for (dom::element mv : mops) {
    size_t i = raw_.size();
    std::string mname = "micro-op " + std::to_string(i) + " ";
    dom::array m;
    if (auto e = mv.get_array().get(m); e) {
      return json_bad(p, mname + "must be a list [f, key, value]", e);
    }
    RawMop r;
    int n = 0;
    for (dom::element pv : m) {
      if (n == 0) {
        std::string_view f;
        if (auto e = pv.get_string().get(f); e) {
          return json_bad(p, mname + "must start with \"append\" or \"r\"", e);
        }
        if (f == "append") {
          r.kind = MopKind::kAppend;
        } else if (f == "r") {
          r.kind = MopKind::kRead;
        } else {
          return bad(p, mname + "has function \"" + std::string(f) + "\"; use \"append\" or \"r\"");
        }
      } else if (n == 1) {
        if (auto e = pv.get_int64().get(r.key); e) {
          return json_bad(p, mname + "key must be an integer", e);
        }
      } else if (n == 2) {
        if (r.kind == MopKind::kAppend) {
          if (auto e = pv.get_int64().get(r.value); e) {
            return json_bad(p, mname + "appended value must be an integer", e);
          }
        } else {
          if (!pv.is_null()) {
            dom::array list;
            if (auto e = pv.get_array().get(list); e) {
              return json_bad(p, mname + "read value must be a list of integers or null", e);
            }
            r.has_list = true;
            r.list_begin = scratch_.size();
            for (dom::element ev : list) {
              int64_t x = 0;
              if (auto e = ev.get_int64().get(x); e) {
                return json_bad(p, mname + "read list elements must be integers", e);
              }
              scratch_.push_back(x);
            }
            r.list_len = static_cast<uint32_t>(scratch_.size() - r.list_begin);
          }
        }
      } else {
        return bad(p, mname + "has more than 3 elements");
      }
      n++;
    }
    if (n != 3) return bad(p, mname + "must have 3 elements [f, key, value]");
    raw_.push_back(r);
  }
  return Status::ok();
}

Status Parser::op(dom::object obj, const OpPlace& place_in) {
  OpPlace p = place_in;
  bool has_index = false, has_process = false, has_time = false, has_type = false,
       has_value = false, value_null = true;
  int64_t process = 0, time = 0;
  OpType type = OpType::kInvoke;
  for (dom::key_value_pair field : obj) {
    std::string_view key = field.key;
    dom::element v = field.value;
    if (key == "index") {
      if (auto e = v.get_int64().get(p.index); e)
        return json_bad(p, "\"index\" must be an integer", e);
      has_index = true;
    } else if (key == "process") {
      if (auto e = v.get_int64().get(process); e) {
        return json_bad(p, "\"process\" must be an integer", e);
      }
      has_process = true;
    } else if (key == "time") {
      if (auto e = v.get_int64().get(time); e) return json_bad(p, "\"time\" must be an integer", e);
      has_time = true;
    } else if (key == "type") {
      std::string_view t;
      if (auto e = v.get_string().get(t); e) return json_bad(p, "\"type\" must be a string", e);
      if (t == "invoke") {
        type = OpType::kInvoke;
      } else if (t == "ok") {
        type = OpType::kOk;
      } else if (t == "fail") {
        type = OpType::kFail;
      } else if (t == "info") {
        type = OpType::kInfo;
      } else {
        return bad(p, "\"type\" is \"" + std::string(t) + "\"; use invoke, ok, fail or info");
      }
      has_type = true;
    } else if (key == "value") {
      DRTMX_RETURN_IF_ERROR(parse_value(v, p, &value_null));
      has_value = true;
    }
    // Other fields (f, error, node, ...) are Jepsen's and not needed.
  }
  if (!has_index) return bad(p, "missing \"index\"");
  if (!has_process) return bad(p, "missing \"process\"");
  if (!has_time) return bad(p, "missing \"time\"");
  if (!has_type) return bad(p, "missing \"type\"");
  if (!has_value) return bad(p, "missing \"value\"");
  return pair(type, process, time, value_null, p);
}

Status Parser::pair(OpType type, int64_t process, int64_t time, bool value_null, const OpPlace& p) {
  h_.op_count++;
  if (type == OpType::kInvoke) {
    if (value_null) return bad(p, "an invoke's \"value\" must be a list of micro-ops");
    auto [it, fresh] = pending_.try_emplace(process, static_cast<uint32_t>(h_.txns.size()));
    if (!fresh) {
      return bad(p, "process " + std::to_string(process) + " invoked again while its op index " +
                        std::to_string(h_.txns[it->second].invoke_index) +
                        " is still outstanding (a process has one op at a time)");
    }
    Txn t;
    t.process = process;
    t.invoke_index = p.index;
    t.invoke_time = time;
    t.mop_begin = static_cast<uint32_t>(h_.mops.size());
    t.mop_count = static_cast<uint32_t>(raw_.size());
    for (const RawMop& r : raw_) {
      MicroOp m;
      m.key = r.key;
      m.value = r.value;
      m.kind = r.kind;
      h_.mops.push_back(m);
    }
    h_.txns.push_back(t);
    return Status::ok();
  }
  auto it = pending_.find(process);
  if (it == pending_.end()) {
    return bad(
        p, "a completion of process " + std::to_string(process) + " without an outstanding invoke");
  }
  Txn& t = h_.txns[it->second];
  pending_.erase(it);
  t.complete_index = p.index;
  t.complete_time = time;
  t.outcome = type == OpType::kOk ? Outcome::kOk
                                  : (type == OpType::kFail ? Outcome::kFail : Outcome::kInfo);
  if (time < t.invoke_time) {
    return bad(p, "completes at time " + std::to_string(time) + ", before its invoke (index " +
                      std::to_string(t.invoke_index) + ") at " + std::to_string(t.invoke_time));
  }
  if (value_null) {
    if (type == OpType::kOk) return bad(p, "an ok completion's \"value\" must list its micro-ops");
    return Status::ok();  // fail/info: the invoke's micro-ops stand
  }
  std::string inv = " (invoke index " + std::to_string(t.invoke_index) + ")";
  if (raw_.size() != t.mop_count) {
    return bad(p, "has " + std::to_string(raw_.size()) + " micro-ops, its invoke" + inv + " " +
                      std::to_string(t.mop_count));
  }
  for (size_t i = 0; i < raw_.size(); i++) {
    const RawMop& r = raw_[i];
    MicroOp& m = h_.mops[t.mop_begin + i];
    if (r.kind != m.kind || r.key != m.key || (r.kind == MopKind::kAppend && r.value != m.value)) {
      return bad(p, "micro-op " + std::to_string(i) + " differs from its invoke's" + inv);
    }
    if (r.kind == MopKind::kRead && type == OpType::kOk) {
      if (!r.has_list) {
        return bad(p, "micro-op " + std::to_string(i) + ": an ok read of key " +
                          std::to_string(r.key) + " must have a list, not null");
      }
      m.read_known = true;
      m.read_begin = h_.reads.size();
      m.read_len = r.list_len;
      h_.reads.insert(h_.reads.end(), scratch_.begin() + static_cast<int64_t>(r.list_begin),
                      scratch_.begin() + static_cast<int64_t>(r.list_begin + r.list_len));
    }
  }
  return Status::ok();
}

Result<History> Parser::finish() {
  // Invokes without a completion stay info (their outcome is unknown).
  return std::move(h_);
}

Result<History> parse_padded(const simdjson::padded_string& buf) {
  // simdjson's DOM API: it picks the CPU's fastest kernels at run time
  // (its On-Demand API compiles in one, the portable fallback, without
  // -march flags).
  dom::parser parser;
  Parser ps;
  std::string_view all(buf.data(), buf.size());
  size_t first = all.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return invalid_argument(
        "history: the file is empty; expected a JSON array of operations or "
        "one operation object per line");
  }
  if (all[first] == '[') {
    OpPlace p;
    dom::element doc;
    if (auto e = parser.parse(buf).get(doc); e) {
      return json_bad(p, "the array of operations is not valid JSON", e);
    }
    dom::array arr;
    if (auto e = doc.get_array().get(arr); e) return json_bad(p, "not a JSON array", e);
    for (dom::element ev : arr) {
      p.ordinal++;
      p.index = -1;
      dom::object obj;
      if (auto e = ev.get_object().get(obj); e) {
        return json_bad(p, "an operation must be a JSON object", e);
      }
      DRTMX_RETURN_IF_ERROR(ps.op(obj, p));
    }
    return ps.finish();
  }
  // JSON Lines: each non-blank line one document. A line's bytes are
  // followed by the rest of the padded buffer, so simdjson's padding holds
  // without a copy.
  OpPlace p;
  size_t pos = 0, line = 0;
  while (pos < all.size()) {
    size_t end = all.find('\n', pos);
    if (end == std::string_view::npos) end = all.size();
    line++;
    std::string_view text = all.substr(pos, end - pos);
    pos = end + 1;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    p.ordinal++;
    p.line = line;
    p.index = -1;
    dom::element doc;
    if (auto e = parser.parse(text.data(), text.size(), false).get(doc); e) {
      return json_bad(p, "not valid JSON", e);
    }
    dom::object obj;
    if (auto e = doc.get_object().get(obj); e) {
      return json_bad(p, "each line must be one JSON object (an operation)", e);
    }
    DRTMX_RETURN_IF_ERROR(ps.op(obj, p));
  }
  return ps.finish();
}

}  // namespace

Result<History> parse_history_file(const std::string& path) {
  simdjson::padded_string buf;
  if (auto e = simdjson::padded_string::load(path).get(buf); e) {
    return invalid_argument("history: cannot read " + path + " (" + simdjson::error_message(e) +
                            ")");
  }
  return parse_padded(buf);
}

Result<History> parse_history_text(std::string_view text) {
  simdjson::padded_string buf(text.data(), text.size());
  return parse_padded(buf);
}

}  // namespace drtmx::check
