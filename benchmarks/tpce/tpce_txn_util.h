// Helpers of the TPC-E procedures: early return on an engine abort, rows
// out of a scan, and typed gets.
#pragma once

#include <cstring>
#include <vector>

#include "txn/txn.h"

#define TPCE_TRY(expr)                                                                \
  do {                                                                                \
    if (::drtmx::txn::Abort r_ = (expr); r_ != ::drtmx::txn::Abort::kNone) return r_; \
  } while (0)

namespace drtmx::bench::tpce {

// Row i of a scan's values (`Row` is the table's value type).
template <typename Row>
Row row_at(const txn::Txn::Rows& rows, size_t i) {
  Row r;
  std::memcpy(&r, rows.values.data() + i * sizeof(Row), sizeof(Row));
  return r;
}

// kNone with the row, kRecordMissing with `*found` false; other aborts as they are.
template <typename Row>
txn::Abort get_if(txn::Txn& tx, txn::TableId t, uint64_t k, Row* row, bool* found,
                  bool for_update = false) {
  const txn::Abort r = for_update ? tx.get_for_update(t, k, row) : tx.get(t, k, row);
  *found = r == txn::Abort::kNone;
  return r == txn::Abort::kRecordMissing ? txn::Abort::kNone : r;
}

// Toggles a marker in a text column (Trade-Update, Data-Maintenance
// change names back and forth so that repeated runs stay bounded).
inline void toggle_text(char* col, size_t size) {
  col[size - 1] = col[size - 1] == 'X' ? '\0' : 'X';
}

}  // namespace drtmx::bench::tpce
