// Decimal digits of an unsigned integer appended to a string, without a
// stream or a temporary (the history lines of src/driver and the workloads'
// history values build JSON numbers on a transaction's path with it).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

namespace drtmx {

inline void append_decimal(std::string& out, uint64_t v) {
  char digits[20];  // UINT64_MAX has 20
  const auto r = std::to_chars(digits, digits + sizeof digits, v);
  out.append(digits, r.ptr);
}

}  // namespace drtmx
