#include "txn/crash_point.h"

namespace drtmx::txn {

namespace {
constexpr const char* kNames[] = {"validated",    "log-partial", "logged", "acknowledged",
                                  "written-back", "committed",   "applied"};
static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(CrashPoint::kCount));
}  // namespace

const char* crash_point_name(CrashPoint p) {
  const auto i = static_cast<size_t>(p);
  return i < static_cast<size_t>(CrashPoint::kCount) ? kNames[i] : "unknown";
}

bool crash_point_from(const std::string& name, CrashPoint* out) {
  for (size_t i = 0; i < static_cast<size_t>(CrashPoint::kCount); ++i) {
    if (name == kNames[i]) {
      *out = static_cast<CrashPoint>(i);
      return true;
    }
  }
  return false;
}

const char* test_fault_name(TestFault f) {
  switch (f) {
    case TestFault::kNone:
      return "none";
    case TestFault::kSkipReadValidation:
      return "skip-read-validation";
    case TestFault::kSkipLog:
      return "skip-log";
  }
  return "?";
}

bool test_fault_from(const std::string& name, TestFault* out) {
  for (TestFault f : {TestFault::kNone, TestFault::kSkipReadValidation, TestFault::kSkipLog}) {
    if (name == test_fault_name(f)) {
      *out = f;
      return true;
    }
  }
  return false;
}

}  // namespace drtmx::txn
