#include "store/hash/hash_table.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "store/extent.h"
#include "store/record_io.h"
#include "store/word_copy.h"

namespace drtmx::store::hash {
namespace {

// Bounded retries of the owner's optimistic reads before get() gives up
// with kUnavailable. Only a writer stalled mid-write keeps a copy torn, and
// on a machine with more busy threads than cores that is a writer the OS
// preempted: after kLocalSpins spins each retry gives the core away
// (read_pause), so the writer gets to finish — spinning alone gave up
// within microseconds while the writer waited for a time slice.
constexpr int kLocalSpins = 64;
constexpr int kLocalReadTries = kLocalSpins + 1024;
constexpr int kLocalRestarts = 16;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Between the tries of an optimistic read.
inline void read_pause(int tries) {
  if (tries < kLocalSpins) {
    cpu_relax();
  } else {
    std::this_thread::yield();
  }
}

Bucket load_bucket(const uint8_t* p) {
  Bucket b;
  load_words(&b, p, kBucketBytes);
  return b;
}

// Rewrites a bucket with `b` (latch word untouched): stamp + 1, seal, store.
void store_bucket(uint8_t* p, Bucket b) {
  b.stamp += 1;
  b.seal = bucket_seal(b);
  store_words(p + 8, reinterpret_cast<const uint8_t*>(&b) + 8, kBucketBytes - 8);
}

}  // namespace

Result<std::unique_ptr<HashTable>> HashTable::create(std::span<uint8_t> bucket_region,
                                                     std::span<uint8_t> record_region,
                                                     const HashLayout& layout, RecordSlots& slots,
                                                     const SlotWords& words, Grow grow) {
  DRTMX_RETURN_IF_ERROR(layout.validate());
  if (layout.bucket_offset + layout.area_bytes() > bucket_region.size()) {
    return out_of_range("hash table: bucket area [" + std::to_string(layout.bucket_offset) + ", " +
                        std::to_string(layout.bucket_offset + layout.area_bytes()) +
                        ") does not fit the bucket region of " +
                        std::to_string(bucket_region.size()) +
                        " bytes; make the region larger or the table smaller");
  }
  if (reinterpret_cast<uintptr_t>(bucket_region.data()) % 64 != 0 ||
      reinterpret_cast<uintptr_t>(record_region.data()) % 64 != 0) {
    return invalid_argument("hash table: region bases must be 64-byte aligned");
  }
  if (layout.record_base >= record_region.size()) {
    return invalid_argument("hash table: record_base " + std::to_string(layout.record_base) +
                            " is outside the record region of " +
                            std::to_string(record_region.size()) + " bytes");
  }
  if (record_region.size() < layout.slot_bytes()) {
    return invalid_argument("hash table: record region smaller than one record slot");
  }
  uint8_t* area = bucket_region.data() + layout.bucket_offset;
  const uint64_t formatted = grow ? layout.buckets : uint64_t{layout.buckets} + layout.overflow;
  if (grow) DRTMX_RETURN_IF_ERROR(grow(layout.bucket_offset, formatted * kBucketBytes));
  Bucket empty{};
  empty.seal = bucket_seal(empty);
  for (uint64_t i = 0; i < formatted; ++i) {
    store_words(area + i * kBucketBytes, &empty, kBucketBytes);
  }
  std::atomic_thread_fence(std::memory_order_release);
  std::unique_ptr<HashTable> t(
      new HashTable(area, record_region, layout, slots, words, std::move(grow)));
  if (!t->grow_) t->backed_overflow_.store(layout.overflow, std::memory_order_relaxed);
  return t;
}

Status HashTable::back_overflow(uint32_t idx) {
  if (idx < backed_overflow_.load(std::memory_order_acquire)) return Status::ok();
  std::lock_guard<std::mutex> g(grow_mu_);
  const uint32_t backed = backed_overflow_.load(std::memory_order_relaxed);
  if (idx < backed) return Status::ok();
  // Heads included in what is backed.
  const uint64_t step =
      next_extent_bytes((uint64_t{layout_.buckets} + backed) * kBucketBytes) / kBucketBytes;
  const uint64_t want = std::max<uint64_t>(uint64_t{idx} + 1, backed + step);
  const uint32_t end = static_cast<uint32_t>(std::min<uint64_t>(want, layout_.overflow));
  DRTMX_RETURN_IF_ERROR(
      grow_(layout_.bucket_addr(layout_.buckets + backed), uint64_t{end - backed} * kBucketBytes));
  backed_overflow_.store(end, std::memory_order_release);
  return Status::ok();
}

void HashTable::lock_chain(uint32_t head) const {
  std::atomic_ref<uint64_t> latch(*reinterpret_cast<uint64_t*>(bucket_ptr(head)));
  for (uint32_t spins = 0;; ++spins) {
    uint64_t expected = 0;
    if (latch.load(std::memory_order_relaxed) == 0 &&
        latch.compare_exchange_weak(expected, 1, std::memory_order_acquire)) {
      return;
    }
    // Holders never wait while holding it; only a preempted holder makes us
    // wait longer than a few hundred cycles, so give the core away then.
    if (spins < 64) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

void HashTable::unlock_chain(uint32_t head) const {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(bucket_ptr(head)))
      .store(0, std::memory_order_release);
}

bool HashTable::find_locked(uint32_t head, uint64_t key, SlotPos* pos) const {
  uint32_t b = head;
  for (uint64_t steps = 0; steps <= layout_.overflow; ++steps) {
    Bucket img = load_bucket(bucket_ptr(b));
    for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
      if (img.slots[s].ref != 0 && img.slots[s].key == key) {
        *pos = {b, s, img.slots[s].ref};
        return true;
      }
    }
    if (img.next == 0) return false;
    b = layout_.buckets + img.next - 1;
  }
  return false;
}

bool HashTable::prefetch_record(uint64_t key, uint64_t* offset) const {
  const Bucket img = load_bucket(bucket_ptr(bucket_index(key, layout_.buckets)));
  for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
    if (img.slots[s].ref == 0 || img.slots[s].key != key) continue;
    const uint64_t off = layout_.offset_of(img.slots[s].ref);
    if (off + layout_.slot_bytes() > records_.size()) return false;  // torn: no hint
    __builtin_prefetch(record_ptr(off), 1);
    if (words_.apart() && words_.holds(off)) __builtin_prefetch(words_.lock(nullptr, off), 1);
    *offset = off;
    return true;
  }
  return false;
}

Status HashTable::check_value(std::span<const uint8_t> value) const {
  if (value.size() > layout_.value_size) {
    return out_of_range("hash table: value of " + std::to_string(value.size()) +
                        " bytes exceeds the table's value size of " +
                        std::to_string(layout_.value_size) + " bytes");
  }
  return Status::ok();
}

Result<RecordLoc> HashTable::insert(uint64_t key, std::span<const uint8_t> value) {
  return insert_version(key, value, 1);
}

Result<RecordLoc> HashTable::insert_version(uint64_t key, std::span<const uint8_t> value,
                                            uint64_t version, uint64_t lock_word, uint64_t wts,
                                            const SlotGrant* adopted) {
  DRTMX_RETURN_IF_ERROR(check_value(value));
  const uint32_t head = bucket_index(key, layout_.buckets);
  lock_chain(head);
  // One pass: is the key there, where is the first free slot, which bucket ends the chain.
  bool have_free = false;
  SlotPos free_pos;
  uint32_t last = head;
  uint32_t b = head;
  for (uint64_t steps = 0; steps <= layout_.overflow; ++steps) {
    Bucket img = load_bucket(bucket_ptr(b));
    for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
      if (img.slots[s].ref == 0) {
        if (!have_free) {
          have_free = true;
          free_pos = {b, s, 0};
        }
      } else if (img.slots[s].key == key) {
        // A reservation by another transaction is not (yet) a record.
        const bool reserved =
            lock_word != 0 &&
            std::atomic_ref<uint64_t>(
                *reinterpret_cast<uint64_t*>(record_ptr(layout_.offset_of(img.slots[s].ref)) +
                                             offsetof(RecordHeader, version)))
                    .load(std::memory_order_acquire) == 0;
        unlock_chain(head);
        if (reserved) {
          return unavailable("hash table: key " + std::to_string(key) +
                             " is reserved by another transaction's insert");
        }
        return already_exists("hash table: key " + std::to_string(key) +
                              " already exists; use update");
      }
    }
    last = b;
    if (img.next == 0) break;
    b = layout_.buckets + img.next - 1;
  }

  Result<SlotGrant> grant = adopted ? Result<SlotGrant>(*adopted) : slots_.allocate();
  if (!grant) {
    unlock_chain(head);
    return grant.status();
  }
  // What this insert must undo on failure: the slot it allocated.
  auto give_back = [&] {
    if (!adopted) slots_.release(grant->offset);
  };
  if (grant->offset % 64 != 0 || grant->offset + layout_.slot_bytes() > records_.size() ||
      grant->offset < layout_.record_base ||
      grant->offset - layout_.record_base >= kMaxRecordOffset) {
    give_back();
    unlock_chain(head);
    return internal_error("hash table: the record allocator returned offset " +
                          std::to_string(grant->offset) +
                          ", not a 64-byte aligned slot inside the record region");
  }
  uint32_t new_overflow = 0;  // overflow index + 1 of a bucket to link, 0 = none
  if (!have_free) {
    uint32_t idx = next_overflow_.fetch_add(1, std::memory_order_relaxed);
    if (idx >= layout_.overflow) {
      give_back();
      unlock_chain(head);
      return exhausted("hash table: out of overflow buckets (" + std::to_string(layout_.overflow) +
                       " used); create the table with a larger capacity");
    }
    if (Status st = back_overflow(idx); !st.is_ok()) {
      give_back();
      unlock_chain(head);
      return st.with_context("hash table: a new overflow bucket");
    }
    new_overflow = idx + 1;
    free_pos = {layout_.buckets + idx, 0, 0};
  }

  // 1. The record, complete, before anything points at it (an adopted
  //    slot already holds it).
  if (!adopted) {
    const size_t slot_bytes = layout_.slot_bytes();
    uint8_t* rec = record_ptr(grant->offset);
    RecordImage img(slot_bytes);
    RecordHeader* h = img.header();
    h->lock = 0;
    h->version = version;
    h->key = key;
    h->incarnation = grant->incarnation;
    h->flags = kLive;
    h->wts = wts;
    if (!value.empty()) std::memcpy(img.value(), value.data(), value.size());
    store::seal(img.data(), layout_.value_size);
    // A reservation is locked before it is published (relaxed: the release
    // fence below orders it before the bucket slot).
    lock_at(grant->offset).store(lock_word, std::memory_order_relaxed);
    img.store_body(rec);
  }
  // Readers that see the slot below (an acquire on their side, or a fabric
  // READ issued after they copied the bucket) see the whole record.
  std::atomic_thread_fence(std::memory_order_release);

  // 2. Publish: the slot, then (new overflow bucket) the link to it.
  // A new overflow bucket starts empty whatever its memory holds (a
  // recovered pool's old buckets): nothing links to it yet.
  Bucket target = new_overflow != 0 ? Bucket{} : load_bucket(bucket_ptr(free_pos.bucket));
  target.slots[free_pos.slot] = {key, layout_.ref_of(grant->offset, grant->incarnation)};
  store_bucket(bucket_ptr(free_pos.bucket), target);
  if (new_overflow != 0) {
    std::atomic_thread_fence(std::memory_order_release);
    Bucket tail = load_bucket(bucket_ptr(last));
    tail.next = new_overflow;
    store_bucket(bucket_ptr(last), tail);
  }
  keys_.fetch_add(1, std::memory_order_relaxed);
  unlock_chain(head);
  return RecordLoc{grant->offset, grant->incarnation, version};
}

Status HashTable::adopt(uint64_t key, uint64_t offset, uint32_t incarnation, uint64_t version) {
  const SlotGrant g{offset, incarnation};
  return insert_version(key, {}, version, 0, 0, &g).status();
}

void HashTable::raise_deleted_high_to(uint64_t v) {
  raise_deleted_high(v);
}

Result<RecordLoc> HashTable::reserve(uint64_t key, uint64_t lock_word) {
  if (lock_word == 0 || lock_word == kOwnerLockWord) {
    return invalid_argument("hash table reserve: lock word " + std::to_string(lock_word) +
                            " is not a transaction's");
  }
  Result<RecordLoc> r = insert_version(key, {}, 0, lock_word);
  if (!r.is_ok()) return r;
  // Read after the publication: a delete of an earlier record of this key
  // raised deleted_high before it unlinked the key under the chain latch,
  // and our insert found the key absent under that latch afterwards.
  r->version = deleted_high_.load(std::memory_order_acquire);
  return r;
}

Status HashTable::remove_held(uint64_t key, uint64_t offset, uint32_t incarnation,
                              uint64_t lock_word) {
  const uint32_t head = bucket_index(key, layout_.buckets);
  lock_chain(head);
  SlotPos pos;
  if (!find_locked(head, key, &pos) || layout_.offset_of(pos.ref) != offset ||
      ref_incarnation(pos.ref) != incarnation ||
      lock_at(offset).load(std::memory_order_acquire) != lock_word) {
    unlock_chain(head);
    return not_found("hash table: key " + std::to_string(key) +
                     " is not the record the caller holds; nothing removed");
  }
  // The caller's lock keeps every other writer out of the record; the chain
  // latch keeps owner writers out of the chain.
  unlink_locked(head, pos, 0);
  return Status::ok();
}

void HashTable::store_live(RecordImage& img, uint8_t* rec, uint64_t version,
                           std::span<const uint8_t> value) const {
  RecordHeader* h = img.header();
  h->version = version;
  h->flags = kLive;
  std::memset(img.value(), 0, layout_.value_size);
  if (!value.empty()) std::memcpy(img.value(), value.data(), value.size());
  store::seal(img.data(), layout_.value_size);
  img.store_body(rec);
}

void HashTable::unlink_locked(uint32_t head, const SlotPos& pos, uint64_t version) {
  const uint64_t offset = layout_.offset_of(pos.ref);
  uint8_t* rec = record_ptr(offset);
  // 1. Mark the record deleted (readers holding its address learn it); by
  //    default one version up, a reservation (version 0) above every
  //    deleted version.
  RecordImage img(layout_.slot_bytes());
  img.load(rec);
  RecordHeader* h = img.header();
  if (version == 0) {
    version = (h->version == 0 ? deleted_high_.load(std::memory_order_acquire) : h->version) + 1;
  }
  h->version = version;
  h->flags = kDeleted;
  raise_deleted_high(h->version);
  store::seal(img.data(), layout_.value_size);
  img.store_body(rec);
  std::atomic_thread_fence(std::memory_order_release);
  // 2. Unlink it from the bucket.
  Bucket b = load_bucket(bucket_ptr(pos.bucket));
  b.slots[pos.slot] = {0, 0};
  store_bucket(bucket_ptr(pos.bucket), b);
  lock_at(offset).store(0, std::memory_order_release);
  keys_.fetch_sub(1, std::memory_order_relaxed);
  unlock_chain(head);
  // 3. Only now may the slot get a new tenant.
  slots_.release(offset);
}

void HashTable::raise_deleted_high(uint64_t v) {
  uint64_t cur = deleted_high_.load(std::memory_order_relaxed);
  while (cur < v && !deleted_high_.compare_exchange_weak(cur, v, std::memory_order_acq_rel)) {
  }
}

Result<bool> HashTable::apply_in_order(uint64_t key, Change c, uint64_t version,
                                       std::span<const uint8_t> value, const ApplyMvcc* mvcc,
                                       uint64_t* wrote) {
  DRTMX_RETURN_IF_ERROR(check_value(value));
  if (version == 0) return invalid_argument("hash table apply: version 0 is never committed");
  const uint32_t head = bucket_index(key, layout_.buckets);
  lock_chain(head);
  SlotPos pos;
  const bool found = find_locked(head, key, &pos);
  if (c == Change::kInsert) {
    if (found) {
      RecordHeader fh;
      load_words(&fh, record_ptr(layout_.offset_of(pos.ref)), sizeof fh);
      unlock_chain(head);
      // A newer incarnation replaced this one, or the earlier record's
      // delete has not arrived (skipped_incarnations.h).
      return skipped_.skip_if_replaced(key, version, fh.version);
    }
    unlock_chain(head);
    Result<RecordLoc> ins = insert_version(key, value, version, 0, mvcc ? mvcc->wts : 0);
    if (ins.is_ok()) {
      if (wrote != nullptr) *wrote = ins->offset;
      return true;
    }
    if (ins.status().code() == Code::kAlreadyExists) return false;  // raced: retry later
    return ins.status();
  }
  if (!found) {
    unlock_chain(head);
    // Its insert has not arrived — or was skipped as replaced.
    return skipped_.covers(key, version, c == Change::kDelete);
  }
  // Every owner writer of this chain holds the chain latch, and backups
  // are never locked by transactions: the record lock is free here.
  const uint64_t off = layout_.offset_of(pos.ref);
  uint8_t* rec = record_ptr(off);
  if (mvcc != nullptr && mvcc->will_keep) mvcc->will_keep(off);
  uint64_t free_word = 0;
  if (!lock_at(off).compare_exchange_strong(free_word, kOwnerLockWord, std::memory_order_acquire)) {
    unlock_chain(head);
    return unavailable("hash table apply: record of key " + std::to_string(key) +
                       " is locked; backups are not locked by transactions");
  }
  RecordImage img(layout_.slot_bytes());
  img.load(rec);
  RecordHeader* h = img.header();
  if (h->version + 1 != version) {
    lock_at(off).store(0, std::memory_order_release);
    unlock_chain(head);
    // A newer incarnation holds the key: a change of a skipped one, or of
    // one whose insert is still to come (then wait).
    if (h->version >= version) return skipped_.covers(key, version, c == Change::kDelete);
    return false;  // an earlier change of the key has not arrived
  }
  if (mvcc != nullptr && mvcc->keep_old &&
      !mvcc->keep_old(off, static_cast<const uint8_t*>(img.data()), c == Change::kDelete)) {
    lock_at(off).store(0, std::memory_order_release);
    unlock_chain(head);
    return false;  // no room for the old version yet: retry later
  }
  h->version = version;
  if (mvcc != nullptr) h->wts = mvcc->wts;
  if (wrote != nullptr) *wrote = off;
  if (c == Change::kUpdate) {
    store_live(img, rec, version, value);
    lock_at(off).store(0, std::memory_order_release);
    unlock_chain(head);
    return true;
  }
  unlink_locked(head, pos, version);
  return true;
}

Result<RecordLoc> HashTable::update(uint64_t key, std::span<const uint8_t> value) {
  DRTMX_RETURN_IF_ERROR(check_value(value));
  const uint32_t head = bucket_index(key, layout_.buckets);
  lock_chain(head);
  SlotPos pos;
  if (!find_locked(head, key, &pos)) {
    unlock_chain(head);
    return not_found("hash table: key " + std::to_string(key) + " not found; use insert");
  }
  const uint64_t off = layout_.offset_of(pos.ref);
  uint8_t* rec = record_ptr(off);
  uint64_t free_word = 0;
  if (!lock_at(off).compare_exchange_strong(free_word, kOwnerLockWord, std::memory_order_acquire)) {
    unlock_chain(head);
    return unavailable("hash table: record of key " + std::to_string(key) +
                       " is locked by a transaction; retry the update");
  }
  const size_t slot_bytes = layout_.slot_bytes();
  RecordImage img(slot_bytes);
  img.load_header(rec);  // we hold the lock: no other writer
  RecordHeader* h = img.header();
  h->version += 1;
  h->flags = kLive;
  if (!value.empty()) std::memcpy(img.value(), value.data(), value.size());
  store::seal(img.data(), layout_.value_size);
  img.store_body(rec);
  const RecordLoc loc{off, h->incarnation, h->version};
  lock_at(off).store(0, std::memory_order_release);
  unlock_chain(head);
  return loc;
}

Result<bool> HashTable::install(uint64_t key, uint64_t version, std::span<const uint8_t> value) {
  DRTMX_RETURN_IF_ERROR(check_value(value));
  if (version == 0) return invalid_argument("hash table install: version 0 is never committed");
  const uint32_t head = bucket_index(key, layout_.buckets);
  for (int attempt = 0; attempt < 4; ++attempt) {
    lock_chain(head);
    SlotPos pos;
    if (!find_locked(head, key, &pos)) {
      unlock_chain(head);
      Result<RecordLoc> ins = insert_version(key, value, version);
      if (ins.is_ok()) return true;
      if (ins.status().code() != Code::kAlreadyExists) return ins.status();
      continue;  // another applier inserted it meanwhile: compare versions
    }
    const uint64_t off = layout_.offset_of(pos.ref);
    uint8_t* rec = record_ptr(off);
    uint64_t free_word = 0;
    if (!lock_at(off).compare_exchange_strong(free_word, kOwnerLockWord,
                                              std::memory_order_acquire)) {
      unlock_chain(head);
      return unavailable("hash table install: record of key " + std::to_string(key) +
                         " is locked; backups are not locked by transactions");
    }
    RecordImage img(layout_.slot_bytes());
    img.load(rec);
    RecordHeader* h = img.header();
    const bool newer = version > h->version;
    if (newer) store_live(img, rec, version, value);
    lock_at(off).store(0, std::memory_order_release);
    unlock_chain(head);
    return newer;
  }
  return unavailable("hash table install: key " + std::to_string(key) +
                     " kept appearing and disappearing; retry");
}

Status HashTable::remove(uint64_t key) {
  const uint32_t head = bucket_index(key, layout_.buckets);
  lock_chain(head);
  SlotPos pos;
  if (!find_locked(head, key, &pos)) {
    unlock_chain(head);
    return not_found("hash table: key " + std::to_string(key) + " not found; nothing to delete");
  }
  const uint64_t off = layout_.offset_of(pos.ref);
  uint64_t free_word = 0;
  if (!lock_at(off).compare_exchange_strong(free_word, kOwnerLockWord, std::memory_order_acquire)) {
    unlock_chain(head);
    return unavailable("hash table: record of key " + std::to_string(key) +
                       " is locked by a transaction; retry the delete");
  }
  unlink_locked(head, pos, 0);
  return Status::ok();
}

HashTable::Locate HashTable::find_ref(uint64_t key, uint64_t* ref) const {
  // Bucket by bucket along the chain, each copy verified by its seal.
  uint32_t b = bucket_index(key, layout_.buckets);
  for (uint64_t steps = 0; steps <= layout_.overflow; ++steps) {
    Bucket copy;
    int tries = 0;
    for (; tries < kLocalReadTries; ++tries) {
      copy = load_bucket(bucket_ptr(b));
      if (bucket_verifies(copy)) break;
      read_pause(tries);
    }
    if (tries == kLocalReadTries) return Locate::kTorn;
    for (uint32_t s = 0; s < kSlotsPerBucket; ++s) {
      if (copy.slots[s].ref != 0 && copy.slots[s].key == key) {
        *ref = copy.slots[s].ref;
        return Locate::kFound;
      }
    }
    if (copy.next == 0) break;
    b = layout_.buckets + copy.next - 1;
  }
  return Locate::kAbsent;
}

bool HashTable::locate(uint64_t key, uint64_t* offset, uint32_t* incarnation) const {
  uint64_t ref = 0;
  if (find_ref(key, &ref) != Locate::kFound) return false;
  *offset = layout_.offset_of(ref);
  *incarnation = ref_incarnation(ref);
  return true;
}

Result<RecordLoc> HashTable::get(uint64_t key, std::span<uint8_t> value_out) const {
  if (value_out.size() < layout_.value_size) {
    return invalid_argument("hash table get: value buffer of " + std::to_string(value_out.size()) +
                            " bytes is smaller than the value size " +
                            std::to_string(layout_.value_size));
  }
  const size_t slot_bytes = layout_.slot_bytes();
  RecordImage img(slot_bytes);
  for (int restart = 0; restart < kLocalRestarts; ++restart) {
    uint64_t ref = 0;
    const Locate where = find_ref(key, &ref);
    if (where == Locate::kTorn) break;
    if (where == Locate::kAbsent) {
      return not_found("hash table: key " + std::to_string(key) + " not found");
    }
    // Pairs with the writer's release fence between record and bucket.
    const uint8_t* rec = record_ptr(layout_.offset_of(ref));
    for (int tries = 0; tries < kLocalReadTries; ++tries) {
      img.load(rec);
      RecordCheck c = verify(img.data(), layout_.value_size, key, ref_incarnation(ref));
      if (c == RecordCheck::kOk) {
        std::memcpy(value_out.data(), img.value(), layout_.value_size);
        return RecordLoc{layout_.offset_of(ref), ref_incarnation(ref), img.header()->version};
      }
      if (c != RecordCheck::kTorn) break;  // deleted or reused since the bucket copy: restart
      read_pause(tries);
    }
  }
  return unavailable("hash table get: key " + std::to_string(key) +
                     " stayed torn or moving for every bounded retry; retry later");
}

}  // namespace drtmx::store::hash
