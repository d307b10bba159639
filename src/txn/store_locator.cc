#include "txn/store_locator.h"

#include <algorithm>

namespace drtmx::txn {

StoreLocator::StoreLocator(const store::Catalog& c, store::tables::NodeCaches& caches,
                           std::span<uint8_t> scratch, r2::NodeId self)
    : catalog_(c), caches_(caches), scratch_(scratch), self_(self) {}

uint32_t StoreLocator::value_size(TableId t) const {
  const store::TableSpec* s = spec(t);
  return s == nullptr ? 0 : s->value_size;
}

r2::NodeId StoreLocator::primary(TableId t, Key k) const {
  const store::TableSpec* s = spec(t);
  if (s == nullptr) return self_;
  return catalog_.replicas_of(*s, catalog_.partition_of(*s, k), self_).primary;
}

size_t StoreLocator::backups(TableId t, Key k, r2::NodeId* out, size_t max) const {
  const store::TableSpec* s = spec(t);
  if (s == nullptr) return 0;
  const store::PartitionReplicas r = catalog_.replicas_of(*s, catalog_.partition_of(*s, k), self_);
  const size_t n = std::min<size_t>(r.backup_count, max);
  for (size_t i = 0; i < n; ++i) out[i] = r.backups[i];
  return n;
}

store::tables::TableClient& StoreLocator::client(ReadPath path) {
  std::unique_ptr<store::tables::TableClient>& c = clients_[static_cast<size_t>(path)];
  if (!c) {
    store::tables::TableClientOptions o;
    switch (path) {
      case ReadPath::kRpc:
        o.path = store::tables::Path::kRpc;
        break;
      case ReadPath::kOneSided:
        o.hash.use_cache = false;
        break;
      case ReadPath::kOneSidedCached:
        o.hash.miss_path = store::hash::MissPath::kBucketWalk;
        break;
      case ReadPath::kHybrid:
        o.hash.miss_path = store::hash::MissPath::kRpc;
        break;
    }
    c = std::make_unique<store::tables::TableClient>(catalog_, caches_, scratch_, o);
  }
  return *c;
}

Abort StoreLocator::read(r2::Co& co, ReadPath path, TableId t, Key k, RecordRef* ref,
                         uint8_t* copy) {
  const store::TableSpec* s = spec(t);
  if (s == nullptr || (s->kind == store::TableKind::kOrdered && s->inline_values)) {
    return Abort::kNotSupported;
  }
  value_.resize(s->value_size);
  store::tables::RecordRef where;
  Result<bool> got = client(path).get(co, *s, k, value_, &where);
  if (!got.is_ok()) {
    return got.status().code() == Code::kUnavailable ? Abort::kTornRead : Abort::kNodeFailure;
  }
  if (!*got) return Abort::kRecordMissing;
  ref->addr = where.addr;
  ref->value_size = s->value_size;
  ref->version = where.version;
  build_image(copy, k, where.incarnation, where.version, value_.data(), s->value_size);
  return Abort::kNone;
}

}  // namespace drtmx::txn
