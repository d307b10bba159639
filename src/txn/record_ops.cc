#include "txn/record_ops.h"

#include <cstddef>
#include <cstring>
#include <map>

#include "store/record.h"
#include "store/word_copy.h"

namespace drtmx::txn {

using store::RecordHeader;

namespace {

const uint64_t* version_word(const store::SlotRef& s) {
  return reinterpret_cast<const uint64_t*>(s.rec + offsetof(RecordHeader, version));
}

r2::RemoteAddr at(const RecordRef& r, uint64_t plus) {
  return {r.addr.node, r.addr.region, r.addr.offset + plus};
}

// Wire format of the list RPCs.
struct ListHeader {
  uint64_t lock_word;
  uint32_t count;
  uint32_t with_images;  // commit: an image follows each item
};
struct RecordItem {
  uint16_t region;
  uint16_t pad;
  uint32_t value_size;
  uint64_t offset;
  uint64_t version;
};
static_assert(sizeof(ListHeader) == 16 && sizeof(RecordItem) == 24);

constexpr uint8_t kRecordLocked = 1, kRecordValid = 2;

size_t image_bytes(uint32_t value_size) {
  return sizeof(RecordHeader) - 8 + value_size;
}

// Resolves an item to local memory, or nullptr when it is out of range.
uint8_t* resolve(const LocalRegions& lr, const RecordItem& it) {
  auto [base, size] = lr.lookup(it.region);
  const uint64_t slot = store::record_slot_size(it.value_size);
  if (base == nullptr || it.offset % 8 != 0 || it.offset > size || slot > size - it.offset) {
    return nullptr;
  }
  return base + it.offset;
}

uint64_t version_of(const uint8_t* rec) {
  return __atomic_load_n(reinterpret_cast<const uint64_t*>(rec + store::kBodyOffset),
                         __ATOMIC_ACQUIRE);
}

// Parses a list request; false (and an error reply) when malformed.
bool parse(r2::RpcRequest& req, ListHeader* h, const uint8_t** items) {
  auto p = req.payload();
  if (p.size() < sizeof(ListHeader)) {
    req.reply_error("record list request of " + std::to_string(p.size()) + " bytes is truncated");
    return false;
  }
  std::memcpy(h, p.data(), sizeof *h);
  *items = p.data() + sizeof *h;
  // Sizes are checked per item as they are walked (images vary).
  return true;
}

// Walks the items of a request, calling f(index, item, record, its lock
// word, image-or-null). Replies with an error and returns false on a
// malformed or out-of-range item. kApart: lock words apart (H8), found by
// lr.lock_word; else the slot's first word.
template <bool kApart, typename F>
bool walk(r2::RpcRequest& req, const LocalRegions& lr, const ListHeader& h, const uint8_t* items,
          F f) {
  const uint8_t* end = req.payload().data() + req.payload().size();
  const uint8_t* p = items;
  for (uint32_t i = 0; i < h.count; ++i) {
    RecordItem it;
    if (end - p < static_cast<ptrdiff_t>(sizeof it)) {
      req.reply_error("record list request truncated at item " + std::to_string(i));
      return false;
    }
    std::memcpy(&it, p, sizeof it);
    p += sizeof it;
    const uint8_t* image = nullptr;
    if (h.with_images) {
      const size_t n = image_bytes(it.value_size);
      if (static_cast<size_t>(end - p) < n) {
        req.reply_error("record list request truncated in the image of item " + std::to_string(i));
        return false;
      }
      image = p;
      p += (n + 7) & ~size_t{7};
    }
    uint8_t* rec = resolve(lr, it);
    if (rec == nullptr) {
      req.reply_error("record at region " + std::to_string(it.region) + " offset " +
                      std::to_string(it.offset) + " is outside the registered memory");
      return false;
    }
    uint64_t* lock = reinterpret_cast<uint64_t*>(rec);
    if constexpr (kApart) {
      lock = lr.lock_word(it.region, it.offset, it.value_size);
      if (lock == nullptr) {
        req.reply_error("record at region " + std::to_string(it.region) + " offset " +
                        std::to_string(it.offset) + " is not a record slot of this node");
        return false;
      }
    }
    f(i, it, rec, lock, image);
  }
  return true;
}

void build_request(std::vector<uint8_t>* out, uint64_t lock_word, const RecordRef* const* refs,
                   size_t n, const uint8_t* const* images) {
  ListHeader h{lock_word, static_cast<uint32_t>(n), images != nullptr};
  out->assign(reinterpret_cast<const uint8_t*>(&h),
              reinterpret_cast<const uint8_t*>(&h) + sizeof h);
  for (size_t i = 0; i < n; ++i) {
    const RecordRef& r = *refs[i];
    RecordItem it{r.addr.region, 0, r.value_size, r.addr.offset, r.version};
    out->insert(out->end(), reinterpret_cast<const uint8_t*>(&it),
                reinterpret_cast<const uint8_t*>(&it) + sizeof it);
    if (images != nullptr) {
      const size_t bytes = image_bytes(r.value_size);
      const uint8_t* img = images[i] + 8;  // [version .. end]
      out->insert(out->end(), img, img + bytes);
      out->resize(out->size() + (((bytes + 7) & ~size_t{7}) - bytes), 0);
    }
  }
}

// Groups refs by primary, keeping order; calls send(node, indices).
template <typename F>
void by_node(std::span<const RecordRef> refs, F send) {
  std::map<r2::NodeId, std::vector<size_t>> groups;
  for (size_t i = 0; i < refs.size(); ++i) groups[refs[i].addr.node].push_back(i);
  for (auto& [node, idx] : groups) send(node, idx);
}

Status list_call(r2::Co& co, std::span<const RecordRef> refs, uint16_t rpc, uint64_t word,
                 std::vector<ItemResult>* out) {
  out->assign(refs.size(), {});
  std::vector<r2::Target> targets;
  std::vector<std::vector<uint8_t>> reqs;
  std::vector<std::vector<size_t>> index;
  by_node(refs, [&](r2::NodeId node, const std::vector<size_t>& idx) {
    std::vector<const RecordRef*> group;
    for (size_t i : idx) group.push_back(&refs[i]);
    reqs.emplace_back();
    build_request(&reqs.back(), word, group.data(), group.size(), nullptr);
    targets.push_back({node, co.thread()});
    index.push_back(idx);
  });
  // All primaries in parallel: one request body each, one wait for all.
  std::vector<std::span<const uint8_t>> bodies(reqs.begin(), reqs.end());
  std::vector<r2::RpcBuffer> replies(targets.size());
  DRTMX_RETURN_IF_ERROR(co.call(targets, rpc, bodies, replies));
  for (size_t g = 0; g < targets.size(); ++g) {
    if (replies[g].size() != index[g].size()) {
      return internal_error("record list reply has " + std::to_string(replies[g].size()) +
                            " results for " + std::to_string(index[g].size()) + " records");
    }
    for (size_t k = 0; k < index[g].size(); ++k) {
      (*out)[index[g][k]].locked = replies[g][k] & kRecordLocked;
      (*out)[index[g][k]].valid = replies[g][k] & kRecordValid;
    }
  }
  return Status::ok();
}

}  // namespace

void add_lock(r2::OpBatch& b, const RecordRef& r, uint64_t lock_word, uint64_t* old,
              LockState* state) {
  b.cas(at(r, 0), 0, lock_word, old, /*signaled=*/false);
  b.read(at(r, 0), state, sizeof(LockState));
}

void add_check(r2::OpBatch& b, const RecordRef& r, LockState* state) {
  b.read(at(r, 0), state, sizeof(LockState));
}

void add_write_back(r2::OpBatch& b, const RecordRef& r, const uint8_t* image, bool passive) {
  b.write(at(r, 8), image + 8, static_cast<uint32_t>(image_bytes(r.value_size)), !passive);
}

void add_commit(r2::OpBatch& b, const RecordRef& r, const uint8_t* image, const uint64_t* zero,
                bool passive) {
  add_write_back(b, r, image, passive);
  b.write(at(r, 0), zero, 8, !passive);
}

void add_write_back_keep_ts(r2::OpBatch& b, const RecordRef& r, const uint8_t* image,
                            bool passive) {
  b.write(at(r, store::kBodyOffset), image + store::kBodyOffset,
          static_cast<uint32_t>(store::kValueOffset - store::kBodyOffset + r.value_size), !passive);
}

void add_commit_keep_ts(r2::OpBatch& b, const RecordRef& r, const uint8_t* image,
                        const uint64_t* zero, bool passive) {
  add_write_back_keep_ts(b, r, image, passive);
  b.write(at(r, 0), zero, 8, !passive);
}

void add_unlock(r2::OpBatch& b, const RecordRef& r, const uint64_t* zero, bool passive) {
  b.write(at(r, 0), zero, 8, !passive);
}

void add_release(r2::OpBatch& b, const RecordRef& r, uint64_t lock_word, uint64_t* old,
                 bool passive) {
  b.cas(at(r, 0), lock_word, 0, old, !passive);
}

// Lock words apart (H8).

void add_lock(r2::OpBatch& b, const RecordRef& r, const r2::RemoteAddr& lock, uint64_t lock_word,
              uint64_t* old, LockState* state) {
  // The CAS's result says whether we hold the lock; unchanged() then only
  // needs the version, READ after the CAS (same channel, FIFO): from the
  // CAS on, no other writer can change it.
  state->lock = 0;
  b.cas(lock, 0, lock_word, old, /*signaled=*/false);
  b.read(at(r, store::kBodyOffset), &state->version, 8);
}

void lock_here(const store::SlotRef& s, uint64_t lock_word, uint64_t* old, LockState* state) {
  uint64_t seen = 0;
  __atomic_compare_exchange_n(s.lock, &seen, lock_word, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  *old = seen;
  state->lock = 0;
  state->version = __atomic_load_n(version_word(s), __ATOMIC_ACQUIRE);
}

void check_here(const store::SlotRef& s, LockState* state) {
  state->lock = __atomic_load_n(s.lock, __ATOMIC_ACQUIRE);
  state->version = __atomic_load_n(version_word(s), __ATOMIC_ACQUIRE);
}

void commit_here(const store::SlotRef& s, const uint8_t* image, uint32_t value_size, bool keep_ts) {
  const size_t bytes = store::record_slot_size(value_size);
  if (keep_ts) {
    store::store_words(s.rec + store::kBodyOffset, image + store::kBodyOffset,
                       bytes - store::kBodyOffset);
  } else {
    store::store_words(s.rec + 8, image + 8, bytes - 8);
  }
  __atomic_store_n(s.lock, 0, __ATOMIC_RELEASE);
}

void add_check(r2::OpBatch& b, const RecordRef& r, const r2::RemoteAddr& lock, LockState* state) {
  // Lock word FIRST, then the version, same channel, one doorbell (FIFO:
  // the version READ executes after the lock READ). If the lock READ (at
  // t1) sees 0 and the version READ (at t2 > t1) sees the version Execute
  // read, then at t1 the record was unlocked AND at that version (versions
  // only grow, and were that version both before t1 and at t2) — one
  // instant at which the check holds, as a single READ of both words
  // gave. t1 is after our write set was locked, so a writer of this record
  // that locked before our locks were all taken (it serializes before us)
  // held its lock at t1 — seen — or had written its version by then — seen
  // at t2. A writer that locks after t1 serializes after us; if it even
  // commits before t2, we see its version and abort (safe, rare).
  // The other order would be wrong: version at t1, lock at t2 misses a
  // writer that held the lock at t1 and wrote and unlocked between t1 and
  // t2 — it serializes before us, yet we read its predecessor.
  b.read(lock, &state->lock, 8);
  b.read(at(r, store::kBodyOffset), &state->version, 8);
}

void add_commit(r2::OpBatch& b, const RecordRef& r, const r2::RemoteAddr& lock,
                const uint8_t* image, const uint64_t* zero, bool passive) {
  add_write_back(b, r, image, passive);
  b.write(lock, zero, 8, !passive);  // after the data (FIFO)
}

void add_unlock(r2::OpBatch& b, const r2::RemoteAddr& lock, const uint64_t* zero, bool passive) {
  b.write(lock, zero, 8, !passive);
}

void add_release(r2::OpBatch& b, const r2::RemoteAddr& lock, uint64_t lock_word, uint64_t* old,
                 bool passive) {
  b.cas(lock, lock_word, 0, old, !passive);
}

void build_copy(uint8_t* copy, uint64_t key, uint32_t incarnation, uint64_t version,
                const void* value, uint32_t value_size) {
  RecordHeader h{};
  h.version = version;
  h.key = key;
  h.incarnation = incarnation;
  h.flags = store::kLive;
  std::memcpy(copy, &h, sizeof h);
  std::memcpy(copy + sizeof h, value, value_size);
}

void build_image(uint8_t* image, uint64_t key, uint32_t incarnation, uint64_t version,
                 const void* value, uint32_t value_size) {
  build_copy(image, key, incarnation, version, value, value_size);
  store::seal(image, value_size);
}

namespace {

template <bool kApart>
Status register_handlers(r2::Worker& w, LocalRegions lr) {
  DRTMX_RETURN_IF_ERROR(w.register_handler(kRpcLock, [lr](r2::RpcRequest& req) {
    ListHeader h;
    const uint8_t* items;
    if (!parse(req, &h, &items) || h.with_images) return;
    std::vector<uint8_t> res(h.count, 0);
    const bool ok = walk<kApart>(
        req, lr, h, items,
        [&](uint32_t i, const RecordItem& it, uint8_t* rec, uint64_t* lock, const uint8_t*) {
          uint64_t expected = 0;
          const bool got = __atomic_compare_exchange_n(lock, &expected, h.lock_word, false,
                                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
          res[i] =
              (got ? kRecordLocked : 0) | (got && version_of(rec) == it.version ? kRecordValid : 0);
        });
    if (ok) req.reply(res.data(), h.count);
  }));
  DRTMX_RETURN_IF_ERROR(w.register_handler(kRpcCheck, [lr](r2::RpcRequest& req) {
    ListHeader h;
    const uint8_t* items;
    if (!parse(req, &h, &items) || h.with_images) return;
    std::vector<uint8_t> res(h.count, 0);
    const bool walked = walk<kApart>(
        req, lr, h, items,
        [&](uint32_t i, const RecordItem& it, uint8_t* rec, uint64_t* lock, const uint8_t*) {
          // The lock word, then the version (the order add_check explains).
          const uint64_t held = __atomic_load_n(lock, __ATOMIC_ACQUIRE);
          const bool ok = (held == 0 || held == h.lock_word) && version_of(rec) == it.version;
          res[i] = ok ? kRecordValid : 0;
        });
    if (walked) req.reply(res.data(), h.count);
  }));
  DRTMX_RETURN_IF_ERROR(w.register_handler(kRpcCommit, [lr](r2::RpcRequest& req) {
    ListHeader h;
    const uint8_t* items;
    if (!parse(req, &h, &items) || !h.with_images) return;
    walk<kApart>(
        req, lr, h, items,
        [&](uint32_t, const RecordItem& it, uint8_t* rec, uint64_t* lock, const uint8_t* image) {
          // The body [version .. end of value]; the tuple timestamp is not
          // stored (record.h: it changes by atomic max only).
          std::memcpy(rec + store::kBodyOffset, image + (store::kBodyOffset - 8),
                      store::kValueOffset - store::kBodyOffset + it.value_size);
          // The data is in place before the lock is free.
          __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
          if (lr.flush) lr.flush(rec, store::kValueOffset + it.value_size);
        });
    // Durable: persistent before the (empty) reply goes out.
    if (lr.drain) lr.drain();
  }));
  return w.register_handler(kRpcUnlock, [lr](r2::RpcRequest& req) {
    ListHeader h;
    const uint8_t* items;
    if (!parse(req, &h, &items) || h.with_images) return;
    walk<kApart>(req, lr, h, items,
                 [&](uint32_t, const RecordItem&, uint8_t*, uint64_t* lock, const uint8_t*) {
                   uint64_t expected = h.lock_word;  // only our own lock
                   __atomic_compare_exchange_n(lock, &expected, 0, false, __ATOMIC_RELEASE,
                                               __ATOMIC_RELAXED);
                 });
  });
}

}  // namespace

Status register_record_handlers(r2::Worker& w, LocalRegions lr) {
  // Chosen once: the volatile engine's handlers never look a lock word up.
  return lr.lock_word ? register_handlers<true>(w, std::move(lr))
                      : register_handlers<false>(w, std::move(lr));
}

Status rpc_lock(r2::Co& co, std::span<const RecordRef> refs, uint64_t lock_word,
                std::vector<ItemResult>* out) {
  return list_call(co, refs, kRpcLock, lock_word, out);
}

Status rpc_check(r2::Co& co, std::span<const RecordRef> refs, uint64_t my_lock,
                 std::vector<ItemResult>* out) {
  return list_call(co, refs, kRpcCheck, my_lock, out);
}

namespace {
Status one_way_lists(r2::Co& co, std::span<const RecordRef> refs, uint16_t rpc, uint64_t word,
                     const uint8_t* const* images, bool passive) {
  Status st;
  std::vector<uint8_t> req;
  r2::RpcBuffer reply;
  by_node(refs, [&](r2::NodeId node, const std::vector<size_t>& idx) {
    // Every primary gets its list even after one failed (a removed node):
    // the others' commits and unlocks must not be lost with it.
    std::vector<const RecordRef*> group;
    std::vector<const uint8_t*> imgs;
    for (size_t i : idx) {
      group.push_back(&refs[i]);
      if (images != nullptr) imgs.push_back(images[i]);
    }
    build_request(&req, word, group.data(), group.size(), images ? imgs.data() : nullptr);
    const r2::Target t{node, co.thread()};
    Status one = passive ? co.send_passive(t, rpc, req.data(), static_cast<uint32_t>(req.size()))
                         : co.call(t, rpc, req.data(), static_cast<uint32_t>(req.size()), reply);
    if (st.is_ok()) st = std::move(one);
  });
  return st;
}
}  // namespace

Status rpc_commit(r2::Co& co, std::span<const RecordRef> refs,
                  std::span<const uint8_t* const> images, bool passive) {
  if (images.size() != refs.size()) return invalid_argument("rpc_commit: one image per record");
  return one_way_lists(co, refs, kRpcCommit, 0, images.data(), passive);
}

Status rpc_unlock(r2::Co& co, std::span<const RecordRef> refs, uint64_t lock_word, bool passive) {
  return one_way_lists(co, refs, kRpcUnlock, lock_word, nullptr, passive);
}

}  // namespace drtmx::txn
