#include "txn/policy.h"

namespace drtmx::txn {

namespace {

const char* name(ReadPath p) {
  switch (p) {
    case ReadPath::kRpc:
      return "rpc";
    case ReadPath::kOneSided:
      return "onesided";
    case ReadPath::kOneSidedCached:
      return "cached";
    case ReadPath::kHybrid:
      return "hybrid";
  }
  return "?";
}

Result<ReadPath> read_path(const std::string& key, const std::string& v) {
  if (v == "rpc") return ReadPath::kRpc;
  if (v == "onesided") return ReadPath::kOneSided;
  if (v == "cached") return ReadPath::kOneSidedCached;
  if (v == "hybrid") return ReadPath::kHybrid;
  return invalid_argument("--" + key + "=" + v + ": expected rpc, onesided, cached or hybrid");
}

template <typename T>
Result<T> two_way(const std::string& key, const std::string& v, const char* rpc_name,
                  const char* other_name, T rpc_value, T other_value) {
  if (v == rpc_name) return rpc_value;
  if (v == other_name) return other_value;
  return invalid_argument("--" + key + "=" + v + ": expected " + rpc_name + " or " + other_name);
}

Result<Policy> preset(const std::string& p) {
  Policy x;
  x.preset = p;
  if (p == "drtmh") return x;  // the defaults
  if (p == "drtmx" || p == "drtmx-gts") {
    x.mvcc = p == "drtmx" ? Mvcc::kDst : Mvcc::kGts;
    return x;
  }
  if (p == "farm") {
    x.execute = x.ro_read = ReadPath::kOneSided;
    x.lock = LockPath::kRpc;
    x.commit = CommitPath::kRpc;
    x.passive_ack = false;
    return x;
  }
  if (p == "drtm-r") {
    x.execute = x.ro_read = ReadPath::kOneSidedCached;
    x.passive_ack = false;
    return x;
  }
  if (p == "fasst") {
    x.execute = x.ro_read = ReadPath::kRpc;
    x.lock = LockPath::kRpc;
    x.validate = x.ro_validate = CheckPath::kRpc;
    x.log = LogPath::kRpc;
    x.commit = CommitPath::kRpc;
    x.passive_ack = false;
    return x;
  }
  return invalid_argument("--policy=" + p + ": expected one of " + policy_presets());
}

}  // namespace

std::string policy_presets() {
  return "farm, drtm-r, fasst, drtmh, drtmx, drtmx-gts";
}

std::string Policy::describe() const {
  std::string s = "E=" + std::string(name(execute));
  s += std::string(" V=") + (lock == LockPath::kCas ? "cas" : "rpc") + "+" +
       (validate == CheckPath::kRead ? "read" : "rpc");
  s += std::string(" L=") + (log == LogPath::kWrite ? "write" : "rpc");
  s += std::string(" C=") + (commit == CommitPath::kWrite ? "write" : "rpc") +
       (passive_ack ? "+pa" : "");
  if (mvcc != Mvcc::kOff) {
    s += std::string(" RO=dep-read MVCC=") + (mvcc == Mvcc::kDst ? "dst" : "gts");
    return s;
  }
  s += std::string(" RO=") + name(ro_read) + "+" +
       (ro_validate == CheckPath::kRead ? "read" : "rpc");
  return s;
}

Result<Policy> make_policy(const std::string& p, const std::map<std::string, std::string>& ov,
                           bool atomics_coherent_with_cpu) {
  auto base = preset(p);
  if (!base) return base.status();
  Policy x = base.value();
  for (const auto& [k, v] : ov) {
    if (k == "execute" || k == "ro-read") {
      auto r = read_path(k, v);
      if (!r) return r.status();
      (k == "execute" ? x.execute : x.ro_read) = *r;
    } else if (k == "lock") {
      auto r = two_way(k, v, "rpc", "cas", LockPath::kRpc, LockPath::kCas);
      if (!r) return r.status();
      x.lock = *r;
    } else if (k == "validate" || k == "ro-validate") {
      auto r = two_way(k, v, "rpc", "read", CheckPath::kRpc, CheckPath::kRead);
      if (!r) return r.status();
      (k == "validate" ? x.validate : x.ro_validate) = *r;
    } else if (k == "log") {
      auto r = two_way(k, v, "rpc", "write", LogPath::kRpc, LogPath::kWrite);
      if (!r) return r.status();
      x.log = *r;
    } else if (k == "commit") {
      auto r = two_way(k, v, "rpc", "write", CommitPath::kRpc, CommitPath::kWrite);
      if (!r) return r.status();
      x.commit = *r;
    } else if (k == "passive-ack") {
      auto r = two_way(k, v, "off", "on", false, true);
      if (!r) return r.status();
      x.passive_ack = *r;
    } else if (k == "mvcc") {
      if (v == "off") {
        x.mvcc = Mvcc::kOff;
      } else if (v == "dst") {
        x.mvcc = Mvcc::kDst;
      } else if (v == "gts") {
        x.mvcc = Mvcc::kGts;
      } else {
        return invalid_argument("--mvcc=" + v + ": expected off, dst or gts");
      }
    } else {
      return invalid_argument("unknown phase override --" + k +
                              " (known: execute, lock, validate, log, commit, passive-ack, "
                              "ro-read, ro-validate, mvcc)");
    }
  }
  if (x.mvcc != Mvcc::kOff) {
    // With MVCC, Validate collects and Commit installs timestamps and
    // pushes versions. Table 6-1 does both at the primaries (two-sided):
    // on an RNIC a one-sided CAS is not atomic with the primaries' CPU
    // atomics (the DEP_READ raises of ts). Where the fabric's atomics are
    // coherent with the CPU's (shm), the one-sided forms are safe and are
    // kept (mvcc_onesided.cc): lock, validate and commit then go together.
    bool asked_one = false, asked_rpc = false;
    for (const char* k : {"lock", "validate", "commit"}) {
      auto it = ov.find(k);
      if (it == ov.end()) continue;
      (it->second == "rpc" ? asked_rpc : asked_one) = true;
    }
    const bool one = !asked_rpc && x.lock == LockPath::kCas && x.commit == CommitPath::kWrite &&
                     atomics_coherent_with_cpu;
    if (asked_one && !one) {
      return invalid_argument(
          atomics_coherent_with_cpu
              ? "--lock/--validate/--commit with --mvcc on: MVCC validates and commits either "
                "one-sided (--lock=cas --validate=read --commit=write) or by RPC (all three rpc), "
                "not a mix"
              : "one-sided --lock/--validate/--commit with --mvcc on: this fabric's atomics are "
                "not atomic with the primaries' CPU atomics, so MVCC validates and commits by "
                "RPC; use --lock=rpc --validate=rpc --commit=rpc, or --mvcc=off");
    }
    if (one) {
      x.validate = CheckPath::kRead;
    } else {
      x.lock = LockPath::kRpc;
      x.validate = CheckPath::kRpc;
      x.commit = CommitPath::kRpc;
    }
  }
  if (x.lock == LockPath::kCas && x.commit == CommitPath::kRpc && !atomics_coherent_with_cpu) {
    return invalid_argument(
        "unsafe policy " + x.describe() +
        ": records locked with one-sided CAS (--lock=cas) would be written back and unlocked "
        "by the owner's CPU (--commit=rpc), but this fabric's atomics are not atomic with CPU "
        "stores; use --commit=write, or --lock=rpc");
  }
  if (!ov.empty()) x.preset += "+overrides";
  return x;
}

}  // namespace drtmx::txn
