// get_fields(): one field of many rows (txn.h).
//
// Txn's default is the contract spelled out: prefetch the rows, get() each
// and copy the field out. The engine keeps it for every transaction that
// validates its reads (read-write, and read-only without MVCC): those rows
// must be in the read set with their versions, as get() leaves them.
//
// A snapshot has nothing to validate, and reading a row again at the same
// read timestamp gives the same version (the floor keeps it from GC), so
// rows of this node that the transaction has not read are read in place by
// DEP_READ's step (snapshot_direct) into a scratch image and not kept:
// with quiet copies (store/record_io.h) that loads the record's header and
// the words of the field — for TPC-C's Stock-Level, one cache line of a
// six-line STOCK row. Rows it cannot read that way (another node's, locked
// by a holder that may commit below the read timestamp, absent) and rows
// the transaction holds already go through snapshot_fetch and the
// transaction's copies, as get() would serve them.
#include <cstring>
#include <vector>

#include "store/record.h"
#include "txn/engine.h"

namespace drtmx::txn {

namespace {

bool field_fits(const Field& f) {
  return f.size != 0 && f.offset <= f.row_size && f.size <= f.row_size - f.offset;
}

}  // namespace

Abort Txn::get_fields(std::span<const TableKey> keys, Field f, void* out) {
  if (!field_fits(f)) return Abort::kNotSupported;
  if (Abort r = prefetch(keys, false); r != Abort::kNone) return r;
  uint8_t small[1024];
  std::vector<uint8_t> large;
  uint8_t* row = small;
  if (f.row_size > sizeof small) {
    large.resize(f.row_size);
    row = large.data();
  }
  auto* o = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (Abort r = get(keys[i].table, keys[i].key, row); r != Abort::kNone) return r;
    std::memcpy(o + i * f.size, row + f.offset, f.size);
  }
  return Abort::kNone;
}

Abort Engine::get_fields(std::span<const TableKey> keys, Field f, void* out) {
  if (!field_fits(f)) return Abort::kNotSupported;
  TableId checked = kNoTable;
  for (const TableKey& tk : keys) {
    if (tk.table == checked) continue;
    if (loc_.value_size(tk.table) != f.row_size) return blame(Abort::kNotSupported, tk.table);
    checked = tk.table;
  }
  if (!snapshot()) return Txn::get_fields(keys, f, out);
  return snapshot_fields(keys, f, static_cast<uint8_t*>(out));
}

Abort Engine::snapshot_fields(std::span<const TableKey> keys, Field f, uint8_t* out) {
  const size_t n = keys.size();
  field_done_.assign(n, 0);
  field_rows_.clear();
  field_at_.clear();
  const r2::NodeId self = co_.node();
  const size_t slot = store::record_slot_size(f.row_size);
  const store::SlotPart part = store::slot_part(f.offset, f.size, slot);
  if (co_.direct(self)) {
    for (size_t i = 0; i < n; ++i) {
      const TableKey& tk = keys[i];
      if (find(tk.table, tk.key) != nullptr) continue;  // served from the transaction
      SnapshotRow row;
      row.tk = tk;
      row.primary = loc_.primary(tk.table, tk.key);
      if (row.primary != self) continue;
      row.part = part;
      field_rows_.push_back(row);
      field_at_.push_back(i);
    }
  }
  if (!field_rows_.empty()) {
    // One slot image per row (only its header and field words are loaded
    // when the copy is quiet); set after the rows are known so the vector
    // does not move under them.
    const size_t words = slot / 8;
    if (field_images_.size() < field_rows_.size() * words) {
      field_images_.resize(field_rows_.size() * words);
    }
    for (size_t j = 0; j < field_rows_.size(); ++j) {
      field_rows_[j].value =
          reinterpret_cast<uint8_t*>(field_images_.data() + j * words) + store::kValueOffset;
    }
    // The rows it leaves (snap_todo_, snapshot_fetch's scratch) are the
    // ones not found below.
    snapshot_direct(&field_rows_, &snap_todo_);
    for (size_t j = 0; j < field_rows_.size(); ++j) {
      const SnapshotRow& row = field_rows_[j];
      if (!row.found) continue;  // left for snapshot_fetch (which counts it)
      std::memcpy(out + field_at_[j] * f.size, row.value + f.offset, f.size);
      field_done_[field_at_[j]] = 1;
      ++stats_.snapshot_reads;
      ++stats_.snapshot_field_reads;
    }
  }
  field_fetch_.clear();
  for (size_t i = 0; i < n; ++i) {
    if (!field_done_[i]) field_fetch_.push_back(keys[i]);
  }
  if (field_fetch_.empty()) return Abort::kNone;
  if (Abort r = snapshot_fetch(field_fetch_, nullptr); r != Abort::kNone) return r;
  for (size_t i = 0; i < n; ++i) {
    if (field_done_[i]) continue;
    const Access* a = find(keys[i].table, keys[i].key);
    if (a == nullptr) return blame(Abort::kRecordMissing, keys[i].table);  // not expected
    std::memcpy(out + i * f.size, a->copy + store::kValueOffset + f.offset, f.size);
  }
  return Abort::kNone;
}

}  // namespace drtmx::txn
