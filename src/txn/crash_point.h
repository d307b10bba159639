// Crash points: the steps of the commit path (coordinator and appliers)
// at which tests stop a node, to check that recovery loses no
// acknowledged commit and shows nothing partial (TxnNodeConfig::crash_hook).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace drtmx::txn {

// Points on the commit path where tests stop a node (see
// TxnNodeConfig::crash_hook): the commit path's steps, in order.
enum class CrashPoint : uint8_t {
  kValidated,     // write set locked, nothing logged
  kLogPartial,    // the log entry reached its first target only
  kLogged,        // every log entry persistent, not acknowledged
  kAcknowledged,  // acknowledged (CommitObserver::logged), not written back
  kWrittenBack,   // written back (one-sided commit), not unlocked, and on durable
                  // nodes not made persistent (no flushing READ yet)
  kCommitted,     // written back and unlocked everywhere
  kApplied,       // (applier) an entry applied here, not released
  kCount,
};
const char* crash_point_name(CrashPoint p);  // "validated", "log-partial", ...
// The point named `name`; false when there is none.
bool crash_point_from(const std::string& name, CrashPoint* out);
using CrashHook = std::function<void(CrashPoint)>;

// Faults tests inject to prove that the outside checks (drtmx-check on a
// --history) catch a broken engine: each drops one duty of the protocol.
// Never for measuring anything.
enum class TestFault : uint8_t {
  kNone,
  kSkipReadValidation,  // Validate locks the write set but checks no read and no scan
  kSkipLog,             // no Log phase: commits reach no backup (a failover loses them)
};
const char* test_fault_name(TestFault f);  // "none", "skip-read-validation", "skip-log"
bool test_fault_from(const std::string& name, TestFault* out);

}  // namespace drtmx::txn
