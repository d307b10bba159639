// The byte blobs the survivors of a failover exchange through the control
// plane (txn/failover.cc, txn/failover_durable.cc): fixed-size values in
// this host's byte order, back to back — every node of a cluster runs the
// same build. A reader past the end stops with ok == false (a malformed
// blob is an error, never a read out of bounds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "txn/log/replication.h"

namespace drtmx::txn::failover {

struct BlobOut {
  std::string s;
  template <typename T>
  void put(T v) {
    s.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void bytes(const uint8_t* p, size_t n) { s.append(reinterpret_cast<const char*>(p), n); }
};

struct BlobIn {
  const std::string& s;
  size_t at = 0;
  bool ok = true;
  template <typename T>
  T get() {
    T v{};
    if (at + sizeof v > s.size()) {
      ok = false;
      return v;
    }
    std::memcpy(&v, s.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  // n bytes in place (null when fewer are left).
  const uint8_t* bytes(size_t n) {
    if (at + n > s.size()) {
      ok = false;
      return nullptr;
    }
    const auto* p = reinterpret_cast<const uint8_t*>(s.data() + at);
    at += n;
    return p;
  }
};

// A logged transaction's records (count, then table, op, key, version each):
// both the volatile histories and the durable reports carry them.
inline void put_records(BlobOut& o, const std::vector<LoggedRecord>& records) {
  o.put<uint32_t>(static_cast<uint32_t>(records.size()));
  for (const LoggedRecord& rec : records) {
    o.put(rec.table);
    o.put(static_cast<uint8_t>(rec.op));
    o.put(rec.key);
    o.put(rec.version);
  }
}
inline void get_records(BlobIn& in, std::vector<LoggedRecord>* records) {
  const uint32_t n = in.get<uint32_t>();
  for (uint32_t k = 0; k < n && in.ok; ++k) {
    LoggedRecord rec;
    rec.table = in.get<uint16_t>();
    rec.op = static_cast<RedoOp>(in.get<uint8_t>());
    rec.key = in.get<uint64_t>();
    rec.version = in.get<uint64_t>();
    records->push_back(rec);
  }
}

}  // namespace drtmx::txn::failover
