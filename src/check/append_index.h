// Which transaction appended a value to a key: an open-addressing hash table
// from (key id, value) to the append (a million transactions append about
// two million values; std::unordered_map's node per entry doubled the
// checker's memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace drtmx::check {

struct AppendRef {
  uint32_t txn = 0;
  uint32_t mop = 0;   // index into History::mops
  int64_t pos = -1;   // position in the key's inferred version order; -1: never read
  bool final = true;  // the txn's last append to this key
};

class AppendIndex {
 public:
  explicit AppendIndex(size_t expected = 0);

  // Inserts; when (kid, value) is present returns the existing entry and
  // sets *fresh = false.
  AppendRef* insert(uint32_t kid, int64_t value, const AppendRef& ref, bool* fresh);
  AppendRef* find(uint32_t kid, int64_t value);
  const AppendRef* find(uint32_t kid, int64_t value) const;
  size_t size() const { return size_; }

 private:
  struct Slot {
    int64_t value = 0;
    uint32_t kid = 0;  // key id + 1; 0: empty
    AppendRef ref;
  };
  size_t slot_of(uint32_t kid, int64_t value) const;
  void grow();

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace drtmx::check
