// A list-append history in memory: transactions (an invoke paired with its
// completion), their micro-operations, and every read's list, flat.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace drtmx::check {

enum class MopKind : uint8_t { kAppend, kRead };

// One micro-operation: ["append", key, value] or ["r", key, [values...]].
struct MicroOp {
  int64_t key = 0;
  int64_t value = 0;        // the appended value (appends only)
  uint64_t read_begin = 0;  // into History::reads (reads whose list is known)
  uint32_t read_len = 0;
  MopKind kind = MopKind::kAppend;
  bool read_known = false;  // a read of an ok transaction: its list is known
};

// ok: committed; fail: certainly aborted; info: unknown (also an invoke that
// never completed).
enum class Outcome : uint8_t { kOk, kFail, kInfo };

const char* outcome_name(Outcome o);

struct Txn {
  int64_t process = 0;
  int64_t invoke_index = 0;
  int64_t complete_index = -1;  // -1: no completion in the history
  int64_t invoke_time = 0;
  int64_t complete_time = 0;  // meaningful when complete_index >= 0
  uint32_t mop_begin = 0;
  uint32_t mop_count = 0;
  Outcome outcome = Outcome::kInfo;
};

struct History {
  std::vector<Txn> txns;  // in the order of their invokes
  std::vector<MicroOp> mops;
  std::vector<int64_t> reads;
  uint64_t op_count = 0;  // operations (invokes and completions) read

  std::span<const MicroOp> mops_of(const Txn& t) const {
    return {mops.data() + t.mop_begin, t.mop_count};
  }
  std::span<const int64_t> read_of(const MicroOp& m) const {
    return {reads.data() + m.read_begin, m.read_len};
  }
};

}  // namespace drtmx::check
