#include "txn/index_ops.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "store/tables/plan.h"
#include "store/tables/store_node.h"

namespace drtmx::txn {
namespace {

struct IndexHeader {
  uint64_t lock_word;
  uint32_t count;
  uint32_t pad;
};
struct IndexItem {
  uint16_t table;
  uint16_t pad;
  uint32_t incarnation;
  uint64_t key;
  uint64_t offset;
};
struct ReserveReply {
  uint8_t code;
  uint8_t pad[3];
  uint32_t incarnation;
  uint64_t offset;
  uint64_t base;  // the version the record commits above
  uint64_t ts;    // MVCC: the partition's range timestamp after the reservation
};
static_assert(sizeof(IndexHeader) == 16 && sizeof(IndexItem) == 24 && sizeof(ReserveReply) == 32);

enum Code : uint8_t {
  kOk = 0,
  kExists = 1,    // a committed record has the key
  kReserved = 2,  // another transaction reserved it, or the record is locked
  kNoSpace = 3,   // out of record slots / leaves
  kNotHere = 4,   // this node is not the primary, or not the held record
  kBadTable = 5,  // unknown table, or one without records
  kFailed = 6,    // anything else
};

Code code_of(const Status& s) {
  switch (s.code()) {
    case drtmx::Code::kOk:
      return kOk;
    case drtmx::Code::kAlreadyExists:
      return kExists;
    case drtmx::Code::kUnavailable:
      return kReserved;
    case drtmx::Code::kResourceExhausted:
      return kNoSpace;
    case drtmx::Code::kNotFound:
      return kNotHere;
    case drtmx::Code::kInvalidArgument:
      return kBadTable;
    default:
      return kFailed;
  }
}

Abort abort_of(uint8_t c) {
  switch (c) {
    case kOk:
      return Abort::kNone;
    case kExists:
      return Abort::kDuplicateInsert;
    case kReserved:
      return Abort::kLockHeld;
    case kNoSpace:
      return Abort::kOutOfMemory;
    case kBadTable:
      return Abort::kNotSupported;
    default:
      return Abort::kNodeFailure;
  }
}

// Parses a request; false (after an error reply, when one is wanted) if
// its length is not exactly a header and `count` items.
bool parse(r2::RpcRequest& req, IndexHeader* h, std::vector<IndexItem>* items) {
  const auto p = req.payload();
  if (p.size() < sizeof(IndexHeader)) {
    if (req.wants_reply()) {
      req.reply_error("index request of " + std::to_string(p.size()) + " bytes is truncated");
    }
    return false;
  }
  std::memcpy(h, p.data(), sizeof *h);
  if ((p.size() - sizeof(IndexHeader)) / sizeof(IndexItem) != h->count ||
      (p.size() - sizeof(IndexHeader)) % sizeof(IndexItem) != 0) {
    if (req.wants_reply()) {
      req.reply_error("index request of " + std::to_string(p.size()) + " bytes does not hold " +
                      std::to_string(h->count) + " items");
    }
    return false;
  }
  items->resize(h->count);
  if (h->count != 0)
    std::memcpy(items->data(), p.data() + sizeof(IndexHeader), h->count * sizeof(IndexItem));
  return true;
}

template <typename T>
void append(std::vector<uint8_t>* out, const T& v) {
  const auto* b = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), b, b + sizeof v);
}

// Groups item indices by primary node (order kept within a node).
template <typename GetNode>
std::map<r2::NodeId, std::vector<size_t>> by_node(size_t n, GetNode node_of) {
  std::map<r2::NodeId, std::vector<size_t>> g;
  for (size_t i = 0; i < n; ++i) g[node_of(i)].push_back(i);
  return g;
}

// The owner's work for one reserve item (the handler's, and the direct
// path's for keys of the caller's own node).
ReserveReply reserve_one(store::tables::StoreNode& sn, const RangeTs& range_ts, TableId table,
                         Key key, uint64_t lock_word) {
  ReserveReply out{};
  const store::TableSpec* t = sn.catalog().find(table);
  if (t == nullptr) {
    out.code = kBadTable;
    return out;
  }
  uint64_t base = 0;
  Result<store::tables::RecordAddr> r = sn.reserve(*t, key, lock_word, &base);
  out.code = code_of(r.status());
  if (r.is_ok()) {
    out.base = base;
    out.offset = r->offset;
    out.incarnation = r->incarnation;
    // Published, then read (dst/mvcc_node.h: range timestamps).
    if (range_ts) out.ts = range_ts(*t, key);
  }
  return out;
}

uint8_t remove_one(store::tables::StoreNode& sn, TableId table, Key key, uint32_t incarnation,
                   uint64_t offset, uint64_t lock_word) {
  const store::TableSpec* t = sn.catalog().find(table);
  if (t == nullptr) return kBadTable;
  const store::tables::RecordAddr a{offset, incarnation, 0};
  return code_of(sn.remove_held(*t, key, a, lock_word));
}

// A reply (from the wire or the direct path) into its reservation.
void take_reply(const ReserveReply& rr, r2::NodeId primary, Reservation& r) {
  r.result = abort_of(rr.code);
  if (r.result == Abort::kNone) {
    r.addr = {primary, store::tables::table_region(r.table), rr.offset};
    r.incarnation = rr.incarnation;
    r.base_version = rr.base;
    r.range_ts = rr.ts;
  }
}

Status not_removed(uint8_t code) {
  return internal_error("a primary did not remove a record this transaction held (code " +
                        std::to_string(code) + ")");
}

// Whether the caller serves this primary's items itself (LocalIndex).
bool served_here(r2::Co& co, const LocalIndex* local, r2::NodeId primary) {
  return local != nullptr && local->store != nullptr && co.direct(primary);
}

}  // namespace

Status register_index_handlers(r2::Worker& w, store::tables::StoreNode& sn, RangeTs range_ts) {
  DRTMX_RETURN_IF_ERROR(w.register_handler(kRpcReserve, [&sn, range_ts](r2::RpcRequest& req) {
    IndexHeader h;
    std::vector<IndexItem> items;
    if (!parse(req, &h, &items)) return;
    std::vector<ReserveReply> out(items.size(), ReserveReply{});
    for (size_t i = 0; i < items.size(); ++i) {
      out[i] = reserve_one(sn, range_ts, items[i].table, items[i].key, h.lock_word);
    }
    req.reply(out.data(), static_cast<uint32_t>(out.size() * sizeof(ReserveReply)));
  }));
  return w.register_handler(kRpcRemoveHeld, [&sn](r2::RpcRequest& req) {
    IndexHeader h;
    std::vector<IndexItem> items;
    if (!parse(req, &h, &items)) return;
    std::vector<uint8_t> out(items.size(), kBadTable);
    for (size_t i = 0; i < items.size(); ++i) {
      out[i] = remove_one(sn, items[i].table, items[i].key, items[i].incarnation, items[i].offset,
                          h.lock_word);
    }
    if (req.wants_reply()) req.reply(out.data(), static_cast<uint32_t>(out.size()));
  });
}

Status rpc_reserve(r2::Co& co, std::span<Reservation> items, uint64_t lock_word,
                   const LocalIndex* local) {
  bool remote = false;
  for (Reservation& r : items) {
    r.result = Abort::kNodeFailure;
    if (served_here(co, local, r.primary)) {
      take_reply(reserve_one(*local->store, local->range_ts, r.table, r.key, lock_word), r.primary,
                 r);
    } else {
      remote = true;
    }
  }
  if (!remote) return Status::ok();
  auto groups = by_node(items.size(), [&](size_t i) { return items[i].primary; });
  std::vector<r2::Target> targets;
  std::vector<std::vector<uint8_t>> reqs;
  std::vector<std::vector<size_t>> index;
  for (auto& [node, idx] : groups) {
    if (served_here(co, local, node)) continue;
    reqs.emplace_back();
    append(&reqs.back(), IndexHeader{lock_word, static_cast<uint32_t>(idx.size()), 0});
    for (size_t i : idx) {
      append(&reqs.back(), IndexItem{items[i].table, 0, 0, items[i].key, 0});
    }
    targets.push_back({node, co.thread()});
    index.push_back(idx);
  }
  if (targets.empty()) return Status::ok();
  std::vector<std::span<const uint8_t>> bodies(reqs.begin(), reqs.end());
  std::vector<r2::RpcBuffer> replies(targets.size());
  // A failed call (a target removed from the cluster, or silent) still
  // takes the replies that came: those primaries reserved, and the caller
  // must hold and release what they reserved — else the keys stay locked
  // under a lock word nobody will use again.
  const Status called = co.call(targets, kRpcReserve, bodies, replies);
  for (size_t g = 0; g < targets.size(); ++g) {
    if (replies[g].size() != index[g].size() * sizeof(ReserveReply)) {
      if (!called.is_ok()) continue;  // no reply from this one
      return internal_error("reserve reply of " + std::to_string(replies[g].size()) +
                            " bytes for " + std::to_string(index[g].size()) + " keys");
    }
    for (size_t k = 0; k < index[g].size(); ++k) {
      ReserveReply rr;
      std::memcpy(&rr, replies[g].data() + k * sizeof rr, sizeof rr);
      take_reply(rr, targets[g].node, items[index[g][k]]);
    }
  }
  return called;
}

Status rpc_remove_held(r2::Co& co, std::span<const HeldRecord> items, uint64_t lock_word,
                       bool passive, const LocalIndex* local) {
  // The other primaries get their lists even after one of these failed
  // (as after a failed reply).
  bool remote = false;
  Status here;
  for (const HeldRecord& h : items) {
    if (!served_here(co, local, h.addr.node)) {
      remote = true;
      continue;
    }
    const uint8_t c =
        remove_one(*local->store, h.table, h.key, h.incarnation, h.addr.offset, lock_word);
    if (c != kOk && !passive && here.is_ok()) here = not_removed(c);
  }
  if (!remote) return here;
  auto groups = by_node(items.size(), [&](size_t i) { return items[i].addr.node; });
  std::vector<r2::Target> targets;
  std::vector<std::vector<uint8_t>> reqs;
  std::vector<size_t> counts;
  for (auto& [node, idx] : groups) {
    if (served_here(co, local, node)) continue;
    reqs.emplace_back();
    append(&reqs.back(), IndexHeader{lock_word, static_cast<uint32_t>(idx.size()), 0});
    for (size_t i : idx) {
      const HeldRecord& h = items[i];
      append(&reqs.back(), IndexItem{h.table, 0, h.incarnation, h.key, h.addr.offset});
    }
    targets.push_back({node, co.thread()});
    counts.push_back(idx.size());
  }
  if (passive) {
    // Every primary gets its list even after one failed (a removed node).
    Status first;
    for (size_t g = 0; g < targets.size(); ++g) {
      Status s = co.send_passive(targets[g], kRpcRemoveHeld, reqs[g].data(),
                                 static_cast<uint32_t>(reqs[g].size()));
      if (first.is_ok()) first = std::move(s);
    }
    return first;
  }
  std::vector<std::span<const uint8_t>> bodies(reqs.begin(), reqs.end());
  std::vector<r2::RpcBuffer> replies(targets.size());
  DRTMX_RETURN_IF_ERROR(co.call(targets, kRpcRemoveHeld, bodies, replies));
  DRTMX_RETURN_IF_ERROR(here);
  for (size_t g = 0; g < targets.size(); ++g) {
    if (replies[g].size() != counts[g]) {
      return internal_error("remove reply of " + std::to_string(replies[g].size()) + " bytes for " +
                            std::to_string(counts[g]) + " records");
    }
    for (uint8_t c : replies[g]) {
      if (c != kOk) return not_removed(c);
    }
  }
  return Status::ok();
}

}  // namespace drtmx::txn
