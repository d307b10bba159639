// Text for people: transaction names, lists, and the explanation of a
// cycle, step by step ("T1 appended 3 to key 4; T2 read key 4 without it
// ([1 2]), so T2 < T1 (rw); ...").
#pragma once

#include <span>
#include <string>

#include "check/analysis.h"

namespace drtmx::check {

// "op index 12 (process 3)": the completion's index, else the invoke's.
std::string txn_name(const History& h, uint32_t txn);
int64_t txn_index(const History& h, uint32_t txn);
// "[1 2 3]"; long lists shortened with their length.
std::string list_text(std::span<const int64_t> l);
// Fills a cycle's explanation from its steps.
std::string explain_cycle(const Analysis& a, const Anomaly& c);

}  // namespace drtmx::check

namespace drtmx::check {

// What shows a cycle's step: the key, the value and (wr, rw) the read.
struct StepEvidence {
  bool found = false;
  int64_t key = 0;
  int64_t value = 0;
  uint32_t read_mop = UINT32_MAX;  // wr: the reader's read; rw: the reader's
  int64_t value_before = 0;        // ww: the earlier append's value
  // ww, rw: `value` is an append no read saw (Analysis::unread_committed),
  // after every value of the key's order rather than next in it.
  bool unread = false;
};
StepEvidence step_evidence(const Analysis& a, const Step& s);

}  // namespace drtmx::check
