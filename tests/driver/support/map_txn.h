// MapTxn: a txn::Txn over an ordered in-memory map, for testing a stored
// procedure's logic (which rows it reads and what it computes) without a
// cluster. Single-threaded and serial: reads see the map, writes go to it at
// once; there is no concurrency control to test here. Every access is
// counted so a test can also check how a procedure reads.
#pragma once

#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "txn/txn.h"

namespace drtmx::bench::testing {

class MapTxn : public txn::Txn {
 public:
  template <class Row>
  void set(txn::TableId t, txn::Key k, const Row& r) {
    std::vector<uint8_t>& v = rows_[{t, k}];
    v.resize(sizeof r);
    std::memcpy(v.data(), &r, sizeof r);
  }

  txn::Abort get(txn::TableId t, txn::Key k, void* out) override {
    ++gets;
    auto it = rows_.find({t, k});
    if (it == rows_.end()) return txn::Abort::kRecordMissing;
    std::memcpy(out, it->second.data(), it->second.size());
    return txn::Abort::kNone;
  }
  txn::Abort get_for_update(txn::TableId t, txn::Key k, void* out) override {
    return get(t, k, out);
  }
  txn::Abort put(txn::TableId t, txn::Key k, const void* value) override {
    auto it = rows_.find({t, k});
    if (it == rows_.end()) return txn::Abort::kRecordMissing;
    std::memcpy(it->second.data(), value, it->second.size());
    return txn::Abort::kNone;
  }
  txn::Abort prefetch(std::span<const txn::TableKey> keys, bool) override {
    for (const txn::TableKey& tk : keys) {
      if (rows_.count({tk.table, tk.key}) == 0) return txn::Abort::kRecordMissing;
    }
    return txn::Abort::kNone;
  }
  txn::Abort insert(txn::TableId, txn::Key, const void*) override {
    return txn::Abort::kNotSupported;  // rows are set by the test (size known there)
  }
  txn::Abort remove(txn::TableId t, txn::Key k) override {
    return rows_.erase({t, k}) == 1 ? txn::Abort::kNone : txn::Abort::kRecordMissing;
  }
  txn::Abort scan(txn::TableId t, txn::Key from, txn::Key to, size_t limit, Rows* out) override {
    ++scans;
    out->keys.clear();
    out->values.clear();
    for (auto it = rows_.lower_bound({t, from}); it != rows_.end() && it->first.first == t &&
                                                 it->first.second <= to && out->keys.size() < limit;
         ++it) {
      out->keys.push_back(it->first.second);
      out->values.insert(out->values.end(), it->second.begin(), it->second.end());
    }
    return txn::Abort::kNone;
  }

  size_t gets = 0, scans = 0;

 private:
  std::map<std::pair<txn::TableId, txn::Key>, std::vector<uint8_t>> rows_;
};

}  // namespace drtmx::bench::testing
