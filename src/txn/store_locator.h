// StoreLocator: the Locator (locator.h) over the real storage layer — the
// catalog says where a key's primary and backups are, and Execute-phase
// reads go through a store::tables::TableClient with the read path the
// policy chose:
//   kRpc             the primary's owner RPC returns the value and address;
//   kOneSided        READ the bucket chain, then the record (no cache);
//   kOneSidedCached  location cache -> one READ; miss -> bucket READs;
//   kHybrid          location cache -> one READ; miss -> RPC (refills it).
// Ordered tables with records read leaf (learned cache) then record.
// Tables whose values are inline in an ordered index have no records to
// lock: reads of them return kNotSupported.
//
// The verified slot image Execute needs is rebuilt from what the read
// returned (value, version, key, incarnation), so it is a consistent image
// of one committed version whichever path produced it.
//
// Threading: one StoreLocator per coroutine (it owns TableClients and
// their scratch); the NodeCaches are shared by the node.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <vector>

#include "store/catalog.h"
#include "store/tables/table_client.h"
#include "txn/locator.h"

namespace drtmx::txn {

class StoreLocator final : public Locator {
 public:
  // `scratch`: registered, 64-aligned, store::tables::scratch_per_coroutine
  // bytes; `self`: this node.
  StoreLocator(const store::Catalog& c, store::tables::NodeCaches& caches,
               std::span<uint8_t> scratch, r2::NodeId self);

  uint32_t value_size(TableId t) const override;
  r2::NodeId primary(TableId t, Key k) const override;
  size_t backups(TableId t, Key k, r2::NodeId* out, size_t max) const override;
  Abort read(r2::Co& co, ReadPath path, TableId t, Key k, RecordRef* ref, uint8_t* copy) override;

  // The client of one read path (created on first use).
  store::tables::TableClient& client(ReadPath path);

 private:
  const store::TableSpec* spec(TableId t) const { return catalog_.find(t); }

  const store::Catalog& catalog_;
  store::tables::NodeCaches& caches_;
  std::span<uint8_t> scratch_;
  r2::NodeId self_;
  std::array<std::unique_ptr<store::tables::TableClient>, 4> clients_;
  std::vector<uint8_t> value_;
};

}  // namespace drtmx::txn
