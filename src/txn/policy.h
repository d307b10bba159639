// The per-phase primitive policy: which primitive each phase of the OCC
// protocol uses (thesis §4.3-4.4, Table 4-3). Chosen at run time: a preset
// reproduces one of the designs the thesis compares, and every phase can be
// overridden on its own.
//
// Presets (E / V lock + check / L / C / RO-R / RO-V):
//   farm    one-sided index walk / RPC lock + READ check / WRITE / RPC / READ / READ
//   drtm-r  location cache + READ / CAS + READ / WRITE / WRITE+unlock / cached READ / READ
//   fasst   RPC everywhere
//   drtmh   hybrid: cache hit -> READ, miss -> RPC that refills the cache /
//           CAS fused with READ / WRITE / WRITE+unlock with passive ACK /
//           hybrid / READ   (the default)
//   drtmx   drtmh with MVCC by DST (thesis Table 6-1): V and C by RPC
//           (timestamps collected and installed at the primaries), PA,
//           read-only transactions by DEP_READ RPC, no RO validation —
//           on a fabric whose atomics are coherent with the CPU's (shm),
//           V and C stay one-sided (CAS+READ / ts raise by CAS + READ /
//           WRITEs of the replaced version, the record and the unlock:
//           mvcc_onesided.cc); --phase=lock=rpc,validate=rpc,commit=rpc
//           gives Table 6-1 there too
//   drtmx-gts  drtmx with the centralized baseline instead of DST
//           (--mvcc=gts): commit timestamps from an oracle on node 0 (FAA),
//           INSTALL after commit (no PA), snapshots at its StableTS
//
// Safety. A one-sided CAS is not atomic with respect to CPU atomics or
// stores on an RNIC (`atomics_coherent_with_cpu() == false`). So a policy
// that locks with one-sided CAS must also release through the fabric
// (commit = write); combining CAS locks with an RPC commit (CPU stores) is
// refused on such a fabric. Under CAS locking, transactions lock even local
// records through the fabric (loopback), as the thesis does.
#pragma once

#include <map>
#include <string>

#include "base/status.h"

namespace drtmx::txn {

enum class ReadPath : uint8_t {
  kRpc,             // an RPC to the primary returns the record
  kOneSided,        // READ the index bucket, then the record (no cache)
  kOneSidedCached,  // location cache -> one READ; miss -> index READs, fill cache
  kHybrid,          // location cache -> one READ; miss -> RPC returning record + address
};
enum class LockPath : uint8_t { kRpc, kCas };      // lock the write set
enum class CheckPath : uint8_t { kRpc, kRead };    // check read-set versions
enum class LogPath : uint8_t { kRpc, kWrite };     // replicate to backups
enum class CommitPath : uint8_t { kRpc, kWrite };  // write back + unlock
// Multi-versioning (thesis chapter 5, Table 6-1): off = single-version OCC
// (read-only transactions validate); dst = decentralized scalar
// timestamps, snapshot read-only transactions that never abort; gts = the
// centralized timestamp-oracle baseline.
enum class Mvcc : uint8_t { kOff, kDst, kGts };

struct Policy {
  std::string preset;
  ReadPath execute = ReadPath::kHybrid;
  LockPath lock = LockPath::kCas;
  CheckPath validate = CheckPath::kRead;
  LogPath log = LogPath::kWrite;
  CommitPath commit = CommitPath::kWrite;
  bool passive_ack = true;  // commit without waiting for completions/replies
  ReadPath ro_read = ReadPath::kHybrid;
  CheckPath ro_validate = CheckPath::kRead;
  // With MVCC on, Validate and Commit are two-sided (lock, validate and
  // commit are rpc) or, on a fabric with CPU-coherent atomics, one-sided
  // (cas, read, write: mvcc_onesided()); read-only transactions read
  // snapshots by DEP_READ RPC (ro_read / ro_validate are unused).
  Mvcc mvcc = Mvcc::kOff;

  // "E=hybrid V=cas+read L=write C=write+pa RO=hybrid+read"
  std::string describe() const;
};

// MVCC with one-sided Validate and Commit (policy.cc says when).
inline bool mvcc_onesided(const Policy& p) {
  return p.mvcc != Mvcc::kOff && p.lock == LockPath::kCas;
}

// The preset names, for help texts: "farm, drtm-r, fasst, drtmh, ...".
std::string policy_presets();

// Builds a policy from a preset and per-phase overrides. Override keys:
// execute, lock, validate, log, commit, passive-ack, ro-read, ro-validate;
// values: rpc | onesided | cached | hybrid (reads), rpc | cas (lock),
// rpc | read (validation), rpc | write (log, commit), on | off; and mvcc =
// off | dst | gts (on: lock, validate and commit stay one-sided when they
// were cas and write and the fabric's atomics are coherent with the CPU's,
// else all three become rpc; an explicit one-sided choice that cannot be
// kept is refused, so is a mix of one-sided and rpc). Refuses an
// unknown preset, key or value, and an unsafe combination for a fabric
// whose atomics are not coherent with the CPU's — naming what to change.
Result<Policy> make_policy(const std::string& preset,
                           const std::map<std::string, std::string>& overrides,
                           bool atomics_coherent_with_cpu);

}  // namespace drtmx::txn
