#include "check/synthetic_history.h"

#include <cerrno>
#include <functional>
#include <random>
#include <vector>

namespace drtmx::check {

namespace {

struct PendingMop {
  bool append;
  int64_t key;
  int64_t value;
};

struct Process {
  int64_t id;
  bool busy = false;
  std::vector<PendingMop> mops;
};

void put_value(std::string& s, const std::vector<PendingMop>& mops,
               const std::vector<std::vector<int64_t>>* lists) {
  s += '[';
  for (size_t i = 0; i < mops.size(); i++) {
    const PendingMop& m = mops[i];
    if (i) s += ',';
    if (m.append) {
      s += "[\"append\",";
      s += std::to_string(m.key);
      s += ',';
      s += std::to_string(m.value);
      s += ']';
    } else {
      s += "[\"r\",";
      s += std::to_string(m.key);
      s += ',';
      if (lists == nullptr) {
        s += "null]";
        continue;
      }
      s += '[';
      const auto& l = (*lists)[i];
      for (size_t j = 0; j < l.size(); j++) {
        if (j) s += ',';
        s += std::to_string(l[j]);
      }
      s += "]]";
    }
  }
  s += ']';
}

void generate(const SyntheticOptions& opt, const std::function<void(std::string&)>& flush) {
  std::mt19937_64 rng(opt.seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<int64_t> slot_key(opt.active_keys);
  std::vector<std::vector<int64_t>> state;  // by key: the committed list
  std::vector<uint32_t> appends;            // by key: appends taken (incl. pending)
  for (uint32_t i = 0; i < opt.active_keys; i++) {
    slot_key[i] = static_cast<int64_t>(state.size());
    state.emplace_back();
    appends.push_back(0);
  }
  std::vector<Process> procs(opt.processes);
  for (uint32_t p = 0; p < opt.processes; p++) procs[p].id = p;
  int64_t next_process = opt.processes;
  int64_t time = 0, index = 0, value = 1;
  uint64_t invoked = 0;
  uint32_t busy = 0;
  std::string out;
  std::vector<std::vector<int64_t>> reads;
  auto line = [&](const Process& p, const char* type, bool with_reads) {
    out += "{\"index\":";
    out += std::to_string(index++);
    out += ",\"process\":";
    out += std::to_string(p.id);
    out += ",\"time\":";
    out += std::to_string(time);
    out += ",\"type\":\"";
    out += type;
    out += "\",\"value\":";
    put_value(out, p.mops, with_reads ? &reads : nullptr);
    out += "}\n";
    if (out.size() > (1 << 20)) flush(out);
  };
  auto pick_slot = [&]() -> uint32_t {
    if (opt.hot_keys > 0 && unit(rng) < opt.hot_fraction) return rng() % opt.hot_keys;
    return rng() % opt.active_keys;
  };
  while (invoked < opt.txns || busy > 0) {
    time += 1 + static_cast<int64_t>(rng() % 100);
    Process& p = procs[rng() % procs.size()];
    if (!p.busy) {
      if (invoked == opt.txns) continue;
      p.mops.clear();
      uint32_t n = 1 + static_cast<uint32_t>(rng() % opt.max_ops);
      for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = pick_slot();
        int64_t k = slot_key[slot];
        if (unit(rng) < opt.append_fraction) {
          p.mops.push_back({true, k, value++});
          if (++appends[k] >= opt.appends_per_key) {
            // Retire the key: new transactions use a fresh one.
            slot_key[slot] = static_cast<int64_t>(state.size());
            state.emplace_back();
            appends.push_back(0);
          }
        } else {
          p.mops.push_back({false, k, 0});
        }
      }
      p.busy = true;
      busy++;
      invoked++;
      line(p, "invoke", false);
      continue;
    }
    double r = unit(rng);
    p.busy = false;
    busy--;
    if (r < opt.fail_fraction) {
      line(p, "fail", false);
      continue;
    }
    bool info = r < opt.fail_fraction + opt.info_fraction;
    bool apply = !info || (rng() & 1);
    reads.assign(p.mops.size(), {});
    if (apply) {
      for (size_t i = 0; i < p.mops.size(); i++) {
        const PendingMop& m = p.mops[i];
        if (m.append) {
          state[m.key].push_back(m.value);
        } else {
          reads[i] = state[m.key];
        }
      }
    }
    if (info) {
      line(p, "info", false);
      p.id = next_process++;  // as Jepsen does: a crashed process comes back as a new one
    } else {
      line(p, "ok", true);
    }
  }
  flush(out);
}

}  // namespace

Status write_synthetic_history(const SyntheticOptions& opt, std::FILE* f) {
  bool ok = true;
  generate(opt, [&](std::string& s) {
    ok &= std::fwrite(s.data(), 1, s.size(), f) == s.size();
    s.clear();
  });
  if (!ok) return io_error("writing the synthetic history", errno);
  return Status::ok();
}

std::string synthetic_history_text(const SyntheticOptions& opt) {
  std::string all;
  generate(opt, [&](std::string& s) {
    all += s;
    s.clear();
  });
  return all;
}

}  // namespace drtmx::check
