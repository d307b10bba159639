#include "txn/mvcc_ops.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>

#include "dst/record_mvcc.h"
#include "r2/common/clock.h"
#include "store/record.h"
#include "txn/snapshot_serve.h"

namespace drtmx::txn {
namespace {

// --- wire ---------------------------------------------------------------------

struct MvccHeader {
  uint64_t word;  // lock word (lock, unlock, remove) or 0
  uint64_t ts;    // commit timestamp (check, commit, remove) or read ts
  uint32_t count;
  uint32_t flags;  // commit: images follow; snapshot: its dst::SnapshotMode
};
struct MvccItem {  // a record by address (record_ops.h's)
  uint16_t region;
  uint16_t pad;
  uint32_t value_size;
  uint64_t offset;
  uint64_t version;
};
struct KeyItem {  // a record by key (snapshot get, remove), a partition (claim)
  uint16_t table;
  uint16_t pad;
  uint32_t incarnation;
  uint64_t key;     // claim: the partition's id
  uint64_t offset;  // remove: the held record's offset
};
struct LockReply {
  uint64_t flags;
  uint64_t ts;
};
struct RowHeader {  // snapshot reply, per row
  uint32_t found;
  uint32_t value_size;
  uint64_t key;
  uint64_t wts;
  uint64_t version;
  // Get of a hash table's live record: where it is (its offset in the
  // table's region, 0 otherwise), so the reader's location cache learns it.
  uint64_t offset;
  uint32_t incarnation;
  uint32_t unused;
};
struct ScanRequest {
  uint64_t ts;
  uint64_t from, to;
  uint16_t table;
  uint16_t flags;
  uint32_t limit;
  uint32_t partition;
  uint32_t pad;
};
struct WaitTrailer {
  uint64_t blocked_reads;
  uint64_t wait_ns;
  uint64_t rows;  // scan: rows; get: items
  uint64_t exhausted;
};
static_assert(sizeof(MvccHeader) == 24 && sizeof(MvccItem) == 24 && sizeof(KeyItem) == 24);
static_assert(sizeof(RowHeader) == 48 && sizeof(ScanRequest) == 40);

constexpr uint32_t kImages = 1;
// A snapshot request's mode travels in its flags (a value the primary
// does not know is refused).
uint32_t mode_flags(dst::SnapshotMode m) {
  return 16 + static_cast<uint32_t>(m);
}
bool flags_mode(uint32_t flags, dst::SnapshotMode* m) {
  if (flags < 16 || flags > 16 + static_cast<uint32_t>(dst::SnapshotMode::kDstSkipRaiseUnsafe)) {
    return false;
  }
  *m = static_cast<dst::SnapshotMode>(flags - 16);
  return true;
}
constexpr uint64_t kMvccLocked = 1, kMvccValid = 2, kMvccNoRoom = 4;

size_t padded(size_t n) {
  return (n + 7) & ~size_t{7};
}

template <typename T>
void put(std::vector<uint8_t>* out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof v);
}

// A malformed request: an error reply when the caller waits for one (a
// one-way message is dropped).
void fail(r2::RpcRequest& req, const std::string& why) {
  if (req.wants_reply()) req.reply_error(why);
}

// A header and `count` KeyItems; false with *err when they do not fit.
bool parse_keys(std::span<const uint8_t> p, const char* what, MvccHeader* h,
                std::vector<KeyItem>* items, std::string* err) {
  if (p.size() < sizeof *h) {
    *err = std::string(what) + ": request of " + std::to_string(p.size()) + " bytes is truncated";
    return false;
  }
  std::memcpy(h, p.data(), sizeof *h);
  if ((p.size() - sizeof *h) / sizeof(KeyItem) < h->count) {
    *err = std::string(what) + ": " + std::to_string(h->count) + " items do not fit in " +
           std::to_string(p.size()) + " bytes";
    return false;
  }
  items->resize(h->count);
  if (h->count) std::memcpy(items->data(), p.data() + sizeof *h, h->count * sizeof(KeyItem));
  return true;
}

// --- server -------------------------------------------------------------------

constexpr const char* kGiveUp =
    "a snapshot read met a lock while its node reconfigures after a node loss; retry";

// A deferred snapshot request: answered by the poller once its records
// are unlocked (the handler re-runs it; reads already done give the same
// answer again, since every later writer commits above the read ts).
struct Pending {
  r2::ReplyToken token;
  uint16_t rpc;
  std::vector<uint8_t> payload;
  uint64_t since_ns;
  uint64_t blocked_reads;
};

class Service {
 public:
  Service(r2::Worker& w, dst::MvccNode& m, store::tables::StoreNode& s)
      : w_(w), m_(m), s_(s), server_(m, s) {}

  void lock(r2::RpcRequest& req);
  void check(r2::RpcRequest& req);
  void commit(r2::RpcRequest& req);
  void unlock(r2::RpcRequest& req);
  void remove(r2::RpcRequest& req);
  void claim(r2::RpcRequest& req);
  void floor(r2::RpcRequest& req);
  void gts_install(r2::RpcRequest& req);
  // Snapshot requests: answered now, or deferred.
  void snapshot(r2::RpcRequest& req, uint16_t rpc) {
    // Handlers and pollers never yield: one reply buffer serves them all
    // (a scan's reply is kilobytes; growing a fresh one each time cost
    // several allocations per snapshot read).
    std::vector<uint8_t>& reply = reply_;
    reply.clear();
    uint64_t blocked = 0;
    std::string err;
    if (!run_snapshot(rpc, req.payload(), &reply, &blocked, &err)) {
      req.reply_error(err);
    } else if (blocked == 0) {
      finish(&reply, 0, 0);
      req.reply(reply.data(), static_cast<uint32_t>(reply.size()));
    } else if (m_.reconfiguring()) {
      req.reply_error(kGiveUp);
    } else if (req.wants_reply()) {
      pending_.push_back({req.defer(), rpc,
                          std::vector<uint8_t>(req.payload().begin(), req.payload().end()),
                          r2::now_ns(), blocked});
    }
  }
  // The poller: retries deferred requests.
  // Deferred requests are re-run when an MVCC commit, unlock or remove on
  // this node may have freed their records, and otherwise every
  // kRetryNs (locks the node's MVCC handlers do not release: insert
  // reservations, other nodes' deletes). Re-running them on every loop
  // iteration spun the worker that must handle the very commits they wait
  // for (SmallBank with hot audits: 5x slower than GTS).
  static constexpr uint64_t kRetryNs = 50'000;
  bool poll() {
    if (pending_.empty()) return false;
    const uint64_t unlocks = m_.unlocks();
    if (unlocks == seen_unlocks_ && !m_.reconfiguring()) {
      const uint64_t now = r2::now_ns();
      if (now < next_retry_ns_) return false;
      next_retry_ns_ = now + kRetryNs;
    }
    seen_unlocks_ = unlocks;
    bool did = false;
    for (size_t i = 0; i < pending_.size();) {
      Pending& p = pending_[i];
      std::vector<uint8_t>& reply = reply_;
      reply.clear();
      uint64_t blocked = 0;
      std::string err;
      if (!run_snapshot(p.rpc, p.payload, &reply, &blocked, &err)) {
        w_.reply_error(p.token, err);
      } else if (blocked == 0) {
        finish(&reply, p.blocked_reads, r2::now_ns() - p.since_ns);
        w_.reply(p.token, reply.data(), static_cast<uint32_t>(reply.size()));
      } else if (m_.reconfiguring()) {
        w_.reply_error(p.token, kGiveUp);
      } else {
        ++i;
        continue;
      }
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
      did = true;
    }
    return did;
  }

 private:
  // Fills `reply` (rows, then a WaitTrailer with the row count filled);
  // *blocked = records found locked. False with *err on a malformed request.
  bool run_snapshot(uint16_t rpc, std::span<const uint8_t> p, std::vector<uint8_t>* reply,
                    uint64_t* blocked, std::string* err);
  bool snapshot_get(std::span<const uint8_t> p, std::vector<uint8_t>* reply, uint64_t* blocked,
                    std::string* err);
  bool snapshot_scan(std::span<const uint8_t> p, std::vector<uint8_t>* reply, uint64_t* blocked,
                     std::string* err);
  static void finish(std::vector<uint8_t>* reply, uint64_t blocked, uint64_t ns) {
    WaitTrailer t;
    std::memcpy(&t, reply->data() + reply->size() - sizeof t, sizeof t);
    t.blocked_reads = blocked;
    t.wait_ns = ns;
    std::memcpy(reply->data() + reply->size() - sizeof t, &t, sizeof t);
  }
  // Walks a request's address items: f(i, item, record, image).
  template <typename F>
  bool walk(r2::RpcRequest& req, MvccHeader* h, F f);

  r2::Worker& w_;
  dst::MvccNode& m_;
  store::tables::StoreNode& s_;
  SnapshotServer server_;
  std::vector<Pending> pending_;
  uint64_t seen_unlocks_ = 0, next_retry_ns_ = 0;
  // The handlers' reply buffer (see snapshot()).
  std::vector<uint8_t> reply_;
};

template <typename F>
bool Service::walk(r2::RpcRequest& req, MvccHeader* h, F f) {
  auto p = req.payload();
  if (p.size() < sizeof(MvccHeader)) {
    fail(req, "mvcc request of " + std::to_string(p.size()) + " bytes is truncated");
    return false;
  }
  std::memcpy(h, p.data(), sizeof *h);
  const uint8_t* q = p.data() + sizeof *h;
  const uint8_t* end = p.data() + p.size();
  for (uint32_t i = 0; i < h->count; ++i) {
    MvccItem it;
    if (end - q < static_cast<ptrdiff_t>(sizeof it)) {
      fail(req, "mvcc request truncated at item " + std::to_string(i));
      return false;
    }
    std::memcpy(&it, q, sizeof it);
    q += sizeof it;
    const uint8_t* image = nullptr;
    if (h->flags & kImages) {
      const size_t n = store::record_slot_size(it.value_size);
      if (it.value_size > store::kMaxValueSize || static_cast<size_t>(end - q) < n) {
        fail(req, "mvcc commit truncated in the image of item " + std::to_string(i));
        return false;
      }
      image = q;
      q += n;
    }
    dst::MvccNode::Record r;
    if (!m_.resolve(it.region, it.offset, it.value_size, &r)) {
      fail(req, "mvcc: record at region " + std::to_string(it.region) + " offset " +
                    std::to_string(it.offset) + " is not a record slot of this node");
      return false;
    }
    f(i, it, r, image);
  }
  return true;
}

void Service::lock(r2::RpcRequest& req) {
  MvccHeader h;
  std::vector<LockReply> out;
  if (!walk(req, &h,
            [&](uint32_t, const MvccItem& it, const dst::MvccNode::Record& r, const uint8_t*) {
              const dst::LockCollect l = dst::lock_and_collect(r.at(), h.word, it.version, r.vs,
                                                               r.slot, m_.clock(w_.thread()).now());
              out.push_back({(l.locked ? kMvccLocked : 0) | (l.valid ? kMvccValid : 0) |
                                 (l.no_room ? kMvccNoRoom : 0),
                             l.ts});
            })) {
    return;
  }
  req.reply(out.data(), static_cast<uint32_t>(out.size() * sizeof(LockReply)));
}

void Service::check(r2::RpcRequest& req) {
  MvccHeader h;
  std::vector<LockReply> out;
  if (!walk(req, &h,
            [&](uint32_t, const MvccItem& it, const dst::MvccNode::Record& r, const uint8_t*) {
              uint64_t wts = 0;
              const dst::Check c = dst::raise_and_check(r.at(), h.ts, it.version, &wts);
              out.push_back({static_cast<uint64_t>(c), wts});
            })) {
    return;
  }
  req.reply(out.data(), static_cast<uint32_t>(out.size() * sizeof(LockReply)));
}

void Service::commit(r2::RpcRequest& req) {
  MvccHeader h;
  walk(req, &h,
       [&](uint32_t, const MvccItem& it, const dst::MvccNode::Record& r, const uint8_t* image) {
         if (image != nullptr) dst::install(r.at(), image, it.value_size, h.ts, r.vs, r.slot);
       });
  m_.note_unlocks();
  if (req.wants_reply()) req.reply(nullptr, 0);
}

void Service::unlock(r2::RpcRequest& req) {
  MvccHeader h;
  walk(req, &h, [&](uint32_t, const MvccItem&, const dst::MvccNode::Record& r, const uint8_t*) {
    dst::release(r.at(), h.word, r.vs, r.slot);
  });
  m_.note_unlocks();
  if (req.wants_reply()) req.reply(nullptr, 0);
}

void Service::remove(r2::RpcRequest& req) {
  MvccHeader h;
  std::vector<KeyItem> items;
  std::string err;
  if (!parse_keys(req.payload(), "mvcc remove", &h, &items, &err)) return fail(req, err);
  for (const KeyItem& it : items) {
    const store::TableSpec* t = m_.catalog().find(it.table);
    dst::MvccNode::Record r;
    if (t == nullptr ||
        !m_.resolve(store::tables::table_region(it.table), it.offset, t->value_size, &r)) {
      return fail(req, "mvcc remove: no record of table " + std::to_string(it.table) +
                           " at offset " + std::to_string(it.offset));
    }
    // We hold its lock: the record is stable. Its versions go to the
    // graveyard (snapshots older than the delete still read it), then the
    // index forgets it.
    if (__atomic_load_n(r.lock, __ATOMIC_ACQUIRE) == h.word && r.vs != nullptr) {
      std::vector<uint64_t> img(store::record_slot_size(t->value_size) / 8);
      store::load_words(img.data(), r.rec, img.size() * 8);
      (void)r.vs->bury(r.slot, it.key, reinterpret_cast<const uint8_t*>(img.data()), h.ts);
      r.vs->unhold(r.slot);  // the slot's next tenant starts unheld
    }
    (void)s_.remove_held(*t, it.key, {it.offset, it.incarnation, 0}, h.word);
  }
  m_.note_unlocks();
  if (req.wants_reply()) req.reply(nullptr, 0);
}

void Service::claim(r2::RpcRequest& req) {
  MvccHeader h;
  std::vector<KeyItem> items;
  std::string err;
  if (!parse_keys(req.payload(), "mvcc claim", &h, &items, &err)) return fail(req, err);
  for (const KeyItem& it : items) {
    const store::TableSpec* t = m_.catalog().find(it.table);
    if (t == nullptr) return fail(req, "mvcc claim: unknown table " + std::to_string(it.table));
    if (it.key >= m_.catalog().partitions(*t)) {
      return fail(req, "mvcc claim: " + t->name + " has no partition " + std::to_string(it.key));
    }
    if (auto* rt = m_.range_ts(it.table, static_cast<store::PartitionId>(it.key))) {
      store::atomic_max_ts(reinterpret_cast<uint64_t*>(rt), h.ts);
    }
  }
  req.reply(nullptr, 0);
}

void Service::floor(r2::RpcRequest& req) {
  auto p = req.payload();
  uint64_t v[3];                     // node, its floor, the newest GTS StableTS it has seen
  if (p.size() != sizeof v) return;  // one-way: dropped, like fail() does
  std::memcpy(v, p.data(), sizeof v);
  m_.set_peer_floor(static_cast<store::NodeId16>(v[0]), v[1]);
  m_.observe_stable(v[2]);
}

void Service::gts_install(r2::RpcRequest& req) {
  auto p = req.payload();
  dst::GtsOracle* o = m_.oracle();
  // One-way: a message that is not a list of outstanding timestamps (or
  // reaches a node without the oracle) is dropped, like fail() does.
  if (o == nullptr || p.size() % 8 != 0) return;
  for (size_t i = 0; i < p.size(); i += 8) {
    uint64_t ts;
    std::memcpy(&ts, p.data() + i, 8);
    (void)o->install(ts);
  }
}

bool Service::run_snapshot(uint16_t rpc, std::span<const uint8_t> p, std::vector<uint8_t>* reply,
                           uint64_t* blocked, std::string* err) {
  return rpc == kRpcSnapshotGet ? snapshot_get(p, reply, blocked, err)
                                : snapshot_scan(p, reply, blocked, err);
}

bool Service::snapshot_get(std::span<const uint8_t> p, std::vector<uint8_t>* reply,
                           uint64_t* blocked, std::string* err) {
  MvccHeader h;
  std::vector<KeyItem> items;
  if (!parse_keys(p, "snapshot get", &h, &items, err)) return false;
  dst::SnapshotMode mode;
  if (!flags_mode(h.flags, &mode)) {
    *err = "snapshot get: unknown mode flags " + std::to_string(h.flags);
    return false;
  }
  for (const KeyItem& it : items) {
    const store::TableSpec* t = m_.catalog().find(it.table);
    if (t == nullptr) {
      *err = "snapshot get: unknown table " + std::to_string(it.table);
      return false;
    }
    const size_t at = reply->size();
    put(reply, RowHeader{0, t->value_size, it.key, 0, 0, 0, 0, 0});
    reply->resize(at + sizeof(RowHeader) + padded(t->value_size), 0);
    uint8_t* value = reply->data() + at + sizeof(RowHeader);
    SnapshotHit hit;
    bool locked = false;
    if (!server_.read_key(*t, it.key, h.ts, mode, &hit, value, &locked, err)) return false;
    if (locked) ++*blocked;
    if (locked || !hit.found) {
      std::memset(value, 0, padded(t->value_size));
      continue;
    }
    const RowHeader row{1,           t->value_size, it.key,          hit.wts,
                        hit.version, hit.offset,    hit.incarnation, 0};
    std::memcpy(reply->data() + at, &row, sizeof row);
  }
  put(reply, WaitTrailer{0, 0, h.count, 0});
  return true;
}

bool Service::snapshot_scan(std::span<const uint8_t> p, std::vector<uint8_t>* reply,
                            uint64_t* blocked, std::string* err) {
  ScanRequest r;
  if (p.size() != sizeof r) {
    *err = "snapshot scan: request of " + std::to_string(p.size()) + " bytes";
    return false;
  }
  std::memcpy(&r, p.data(), sizeof r);
  dst::SnapshotMode mode;
  if (!flags_mode(r.flags, &mode)) {
    *err = "snapshot scan: unknown mode flags " + std::to_string(r.flags);
    return false;
  }
  // Rows: a RowHeader each, then the value padded to 8 bytes.
  struct ToReply : SnapshotSink {
    std::vector<uint8_t>* reply;
    uint32_t value_size;
    uint64_t rows = 0;
    void row(uint64_t key, const SnapshotHit& hit, const uint8_t* value) override {
      put(reply, RowHeader{1, value_size, key, hit.wts, hit.version, 0, 0, 0});
      const size_t at = reply->size();
      reply->resize(at + padded(value_size), 0);
      std::memcpy(reply->data() + at, value, value_size);
      ++rows;
    }
  } sink;
  const store::TableSpec* t = m_.catalog().find(r.table);
  sink.reply = reply;
  sink.value_size = t != nullptr ? t->value_size : 0;
  bool exhausted = true;
  if (!server_.scan(r.table, r.partition, r.from, r.to, r.limit, r.ts, mode, &sink, &exhausted,
                    blocked, err)) {
    return false;
  }
  put(reply, WaitTrailer{0, 0, sink.rows, exhausted ? 1u : 0u});
  return true;
}

// --- client -------------------------------------------------------------------

// Groups items by node (order kept inside a group).
template <typename Node>
std::map<r2::NodeId, std::vector<size_t>> group(size_t n, Node node_of) {
  std::map<r2::NodeId, std::vector<size_t>> g;
  for (size_t i = 0; i < n; ++i) g[node_of(i)].push_back(i);
  return g;
}

void add_item(std::vector<uint8_t>* out, const RecordRef& r, const uint8_t* image) {
  put(out, MvccItem{r.addr.region, 0, r.value_size, r.addr.offset, r.version});
  if (image != nullptr) {
    const size_t n = store::record_slot_size(r.value_size);
    out->insert(out->end(), image, image + n);
  }
}

// One request per primary, in parallel; replies by group.
Status call_groups(
    r2::Co& co, uint16_t rpc, std::map<r2::NodeId, std::vector<size_t>>& groups,
    const std::function<void(const std::vector<size_t>&, std::vector<uint8_t>*)>& build,
    std::vector<r2::RpcBuffer>* replies) {
  std::vector<r2::Target> targets;
  std::vector<std::vector<uint8_t>> reqs;
  for (auto& [node, idx] : groups) {
    reqs.emplace_back();
    build(idx, &reqs.back());
    targets.push_back({node, co.thread()});
  }
  std::vector<std::span<const uint8_t>> bodies(reqs.begin(), reqs.end());
  replies->assign(targets.size(), {});
  return co.call(targets, rpc, bodies, *replies);
}

// Passive: one message per primary, no wait. Otherwise every primary in
// parallel, waiting for all replies (GTS commits: INSTALL follows them).
Status one_way_groups(
    r2::Co& co, uint16_t rpc, std::map<r2::NodeId, std::vector<size_t>>& groups,
    const std::function<void(const std::vector<size_t>&, std::vector<uint8_t>*)>& build,
    bool passive) {
  if (!passive) {
    std::vector<r2::RpcBuffer> replies;
    return call_groups(co, rpc, groups, build, &replies);
  }
  std::vector<uint8_t> req;
  Status first;
  for (auto& [node, idx] : groups) {
    req.clear();
    build(idx, &req);
    // Every primary gets its list even after one failed (a removed node).
    Status s =
        co.send_passive({node, co.thread()}, rpc, req.data(), static_cast<uint32_t>(req.size()));
    if (first.is_ok()) first = std::move(s);
  }
  return first;
}

}  // namespace

Status register_mvcc_handlers(r2::Worker& w, dst::MvccNode& mvcc, store::tables::StoreNode& store) {
  auto svc = std::make_shared<Service>(w, mvcc, store);
  DRTMX_RETURN_IF_ERROR(
      w.register_handler(kRpcMvccLock, [svc](r2::RpcRequest& r) { svc->lock(r); }));
  DRTMX_RETURN_IF_ERROR(
      w.register_handler(kRpcMvccCheck, [svc](r2::RpcRequest& r) { svc->check(r); }));
  DRTMX_RETURN_IF_ERROR(
      w.register_handler(kRpcMvccCommit, [svc](r2::RpcRequest& r) { svc->commit(r); }));
  DRTMX_RETURN_IF_ERROR(
      w.register_handler(kRpcMvccUnlock, [svc](r2::RpcRequest& r) { svc->unlock(r); }));
  DRTMX_RETURN_IF_ERROR(
      w.register_handler(kRpcMvccRemove, [svc](r2::RpcRequest& r) { svc->remove(r); }));
  DRTMX_RETURN_IF_ERROR(w.register_handler(
      kRpcSnapshotGet, [svc](r2::RpcRequest& r) { svc->snapshot(r, kRpcSnapshotGet); }));
  DRTMX_RETURN_IF_ERROR(w.register_handler(
      kRpcSnapshotScan, [svc](r2::RpcRequest& r) { svc->snapshot(r, kRpcSnapshotScan); }));
  DRTMX_RETURN_IF_ERROR(
      w.register_handler(kRpcRangeClaim, [svc](r2::RpcRequest& r) { svc->claim(r); }));
  DRTMX_RETURN_IF_ERROR(w.register_handler(kRpcFloor, [svc](r2::RpcRequest& r) { svc->floor(r); }));
  DRTMX_RETURN_IF_ERROR(
      w.register_handler(kRpcGtsInstall, [svc](r2::RpcRequest& r) { svc->gts_install(r); }));
  w.add_poller([svc] { return svc->poll(); });
  return Status::ok();
}

Status rpc_mvcc_lock(r2::Co& co, std::span<const RecordRef> refs, uint64_t lock_word,
                     std::vector<MvccLockResult>* out) {
  out->assign(refs.size(), {});
  auto groups = group(refs.size(), [&](size_t i) { return refs[i].addr.node; });
  std::vector<r2::RpcBuffer> replies;
  DRTMX_RETURN_IF_ERROR(call_groups(
      co, kRpcMvccLock, groups,
      [&](const std::vector<size_t>& idx, std::vector<uint8_t>* req) {
        put(req, MvccHeader{lock_word, 0, static_cast<uint32_t>(idx.size()), 0});
        for (size_t i : idx) add_item(req, refs[i], nullptr);
      },
      &replies));
  size_t g = 0;
  for (auto& [node, idx] : groups) {
    if (replies[g].size() != idx.size() * sizeof(LockReply)) {
      return internal_error("mvcc lock reply of " + std::to_string(replies[g].size()) + " bytes");
    }
    for (size_t k = 0; k < idx.size(); ++k) {
      LockReply r;
      std::memcpy(&r, replies[g].data() + k * sizeof r, sizeof r);
      (*out)[idx[k]] = {(r.flags & kMvccLocked) != 0, (r.flags & kMvccValid) != 0,
                        (r.flags & kMvccNoRoom) != 0, r.ts};
    }
    ++g;
  }
  return Status::ok();
}

Status rpc_mvcc_check(r2::Co& co, std::span<const RecordRef> refs, uint64_t commit_ts,
                      std::vector<MvccCheckResult>* out) {
  out->assign(refs.size(), {});
  auto groups = group(refs.size(), [&](size_t i) { return refs[i].addr.node; });
  std::vector<r2::RpcBuffer> replies;
  DRTMX_RETURN_IF_ERROR(call_groups(
      co, kRpcMvccCheck, groups,
      [&](const std::vector<size_t>& idx, std::vector<uint8_t>* req) {
        put(req, MvccHeader{0, commit_ts, static_cast<uint32_t>(idx.size()), 0});
        for (size_t i : idx) add_item(req, refs[i], nullptr);
      },
      &replies));
  size_t g = 0;
  for (auto& [node, idx] : groups) {
    if (replies[g].size() != idx.size() * sizeof(LockReply)) {
      return internal_error("mvcc check reply size");
    }
    for (size_t k = 0; k < idx.size(); ++k) {
      LockReply r;
      std::memcpy(&r, replies[g].data() + k * sizeof r, sizeof r);
      (*out)[idx[k]] = {static_cast<dst::Check>(r.flags), r.ts};
    }
    ++g;
  }
  return Status::ok();
}

Status rpc_mvcc_commit(r2::Co& co, std::span<const RecordRef> refs,
                       std::span<const uint8_t* const> images, uint64_t commit_ts, bool passive) {
  auto groups = group(refs.size(), [&](size_t i) { return refs[i].addr.node; });
  return one_way_groups(
      co, kRpcMvccCommit, groups,
      [&](const std::vector<size_t>& idx, std::vector<uint8_t>* req) {
        put(req, MvccHeader{0, commit_ts, static_cast<uint32_t>(idx.size()), kImages});
        for (size_t i : idx) add_item(req, refs[i], images[i]);
      },
      passive);
}

Status rpc_mvcc_unlock(r2::Co& co, std::span<const RecordRef> refs, uint64_t lock_word,
                       bool passive) {
  auto groups = group(refs.size(), [&](size_t i) { return refs[i].addr.node; });
  return one_way_groups(
      co, kRpcMvccUnlock, groups,
      [&](const std::vector<size_t>& idx, std::vector<uint8_t>* req) {
        put(req, MvccHeader{lock_word, 0, static_cast<uint32_t>(idx.size()), 0});
        for (size_t i : idx) add_item(req, refs[i], nullptr);
      },
      passive);
}

Status rpc_mvcc_remove(r2::Co& co, std::span<const HeldRecord> items, uint64_t lock_word,
                       uint64_t commit_ts, bool passive) {
  auto groups = group(items.size(), [&](size_t i) { return items[i].addr.node; });
  return one_way_groups(
      co, kRpcMvccRemove, groups,
      [&](const std::vector<size_t>& idx, std::vector<uint8_t>* req) {
        put(req, MvccHeader{lock_word, commit_ts, static_cast<uint32_t>(idx.size()), 0});
        for (size_t i : idx) {
          put(req,
              KeyItem{items[i].table, 0, items[i].incarnation, items[i].key, items[i].addr.offset});
        }
      },
      passive);
}

namespace {
// Parses a snapshot reply's trailer.
bool trailer(const r2::RpcBuffer& b, WaitTrailer* t) {
  if (b.size() < sizeof *t) return false;
  std::memcpy(t, b.data() + b.size() - sizeof *t, sizeof *t);
  return true;
}
}  // namespace

Status rpc_snapshot_get(r2::Co& co, std::span<SnapshotRow> rows, uint64_t ts,
                        dst::SnapshotMode mode, ReadWait* wait) {
  auto groups = group(rows.size(), [&](size_t i) { return rows[i].primary; });
  std::vector<r2::RpcBuffer> replies;
  DRTMX_RETURN_IF_ERROR(call_groups(
      co, kRpcSnapshotGet, groups,
      [&](const std::vector<size_t>& idx, std::vector<uint8_t>* req) {
        put(req, MvccHeader{0, ts, static_cast<uint32_t>(idx.size()), mode_flags(mode)});
        for (size_t i : idx) put(req, KeyItem{rows[i].tk.table, 0, 0, rows[i].tk.key, 0});
      },
      &replies));
  size_t g = 0;
  for (auto& [node, idx] : groups) {
    const r2::RpcBuffer& b = replies[g++];
    WaitTrailer t;
    if (!trailer(b, &t) || t.rows != idx.size()) return internal_error("snapshot get: bad reply");
    wait->blocked_reads += t.blocked_reads;
    wait->wait_ns += t.wait_ns;
    size_t off = 0;
    for (size_t i : idx) {
      RowHeader h;
      if (off + sizeof h > b.size() - sizeof t) return internal_error("snapshot get: short reply");
      std::memcpy(&h, b.data() + off, sizeof h);
      off += sizeof h;
      if (off + padded(h.value_size) > b.size() - sizeof t || h.key != rows[i].tk.key) {
        return internal_error("snapshot get: reply does not match the request");
      }
      rows[i].found = h.found != 0;
      rows[i].version = h.version;
      rows[i].offset = h.offset;
      rows[i].incarnation = h.incarnation;
      if (rows[i].found && rows[i].value != nullptr) {
        std::memcpy(rows[i].value, b.data() + off, h.value_size);
      }
      off += padded(h.value_size);
    }
  }
  return Status::ok();
}

Status rpc_snapshot_scan(r2::Co& co, r2::NodeId primary, TableId table, store::PartitionId part,
                         Key from, Key to, uint32_t limit, uint32_t value_size, uint64_t ts,
                         dst::SnapshotMode mode, std::vector<Key>* keys,
                         std::vector<uint8_t>* values, bool* exhausted, ReadWait* wait) {
  ScanRequest r{ts, from, to, table, static_cast<uint16_t>(mode_flags(mode)), limit, part, 0};
  r2::RpcBuffer b;
  DRTMX_RETURN_IF_ERROR(co.call({primary, co.thread()}, kRpcSnapshotScan, &r, sizeof r, b));
  WaitTrailer t;
  if (!trailer(b, &t)) return internal_error("snapshot scan: bad reply");
  wait->blocked_reads += t.blocked_reads;
  wait->wait_ns += t.wait_ns;
  *exhausted = t.exhausted != 0;
  size_t off = 0;
  for (uint64_t i = 0; i < t.rows; ++i) {
    RowHeader h;
    if (off + sizeof h > b.size() - sizeof t) return internal_error("snapshot scan: short reply");
    std::memcpy(&h, b.data() + off, sizeof h);
    off += sizeof h;
    if (h.value_size != value_size || off + padded(value_size) > b.size() - sizeof t) {
      return internal_error("snapshot scan: row of another size");
    }
    keys->push_back(h.key);
    values->insert(values->end(), b.data() + off, b.data() + off + value_size);
    off += padded(value_size);
  }
  return Status::ok();
}

Status rpc_range_claim(r2::Co& co, std::span<const PartitionClaim> ranges, uint64_t ts) {
  auto groups = group(ranges.size(), [&](size_t i) { return ranges[i].primary; });
  std::vector<r2::RpcBuffer> replies;
  return call_groups(
      co, kRpcRangeClaim, groups,
      [&](const std::vector<size_t>& idx, std::vector<uint8_t>* req) {
        put(req, MvccHeader{0, ts, static_cast<uint32_t>(idx.size()), 0});
        for (size_t i : idx) put(req, KeyItem{ranges[i].table, 0, 0, ranges[i].part, 0});
      },
      &replies);
}

Result<uint64_t> gts_next(r2::Co& co, uint64_t* scratch) {
  const r2::OpStatus s = co.faa(dst::GtsOracle::counter(), 1, scratch);
  if (s != r2::OpStatus::kOk) {
    return unavailable(std::string("GTS: FAA on the oracle's GlobalTS failed: ") +
                       r2::op_status_name(s));
  }
  return *scratch + 1;  // the counter holds the last timestamp issued
}

Result<uint64_t> gts_stable(r2::Co& co, uint64_t* scratch) {
  const r2::OpStatus s = co.read(dst::GtsOracle::stable_word(), scratch, 8);
  if (s != r2::OpStatus::kOk) {
    return unavailable(std::string("GTS: READ of the oracle's StableTS failed: ") +
                       r2::op_status_name(s));
  }
  return *scratch;
}

Status gts_install(r2::Co& co, uint64_t ts) {
  // Spread over node 0's workers (every node runs as many as this one).
  return co.send_passive({dst::GtsOracle::kNode, co.thread()}, kRpcGtsInstall, &ts, sizeof ts);
}

}  // namespace drtmx::txn
