#include "store/tables/record_tree.h"

#include <cstring>
#include <string>
#include <thread>

#include "store/record_io.h"

namespace drtmx::store::tables {
namespace {

constexpr int kLockTries = 64;
constexpr int kReadTries = 256;

Status from_xstatus(xstore::XStatus s, uint64_t key, const char* op) {
  switch (s) {
    case xstore::XStatus::kOk:
      return Status::ok();
    case xstore::XStatus::kNotFound:
      return not_found(std::string("record tree ") + op + ": key " + std::to_string(key) +
                       " not found");
    case xstore::XStatus::kAlreadyExists:
      return already_exists(std::string("record tree ") + op + ": key " + std::to_string(key) +
                            " exists");
    case xstore::XStatus::kOutOfLeaves:
      return exhausted(std::string("record tree ") + op +
                       ": out of leaves; raise the table's capacity");
  }
  return internal_error("record tree: unknown tree status");
}

}  // namespace

size_t RecordTree::slot_bytes() const {
  return record_slot_size(value_size_);
}

Result<RecordAddr> RecordTree::insert(uint64_t key, std::span<const uint8_t> value, bool upsert) {
  return insert_version(key, value, 1, upsert);
}

Status RecordTree::adopt(uint64_t key, const RecordAddr& a) {
  return from_xstatus(tree_.insert(key, &a, /*upsert=*/false), key, "adopt");
}

Result<RecordAddr> RecordTree::insert_version(uint64_t key, std::span<const uint8_t> value,
                                              uint64_t version, bool upsert, uint64_t lock_word,
                                              uint64_t wts) {
  if (value.size() > value_size_) {
    return out_of_range("record tree insert: value of " + std::to_string(value.size()) +
                        " bytes exceeds the table's value size " + std::to_string(value_size_));
  }
  Result<SlotGrant> grant = heap_.allocate();
  if (!grant.is_ok()) return grant.status();
  RecordImage img(slot_bytes());
  RecordHeader* h = img.header();
  h->version = version;
  h->key = key;
  h->incarnation = grant->incarnation;
  h->flags = kLive;
  h->wts = wts;
  if (!value.empty()) std::memcpy(img.value(), value.data(), value.size());
  seal(img.data(), value_size_);
  uint8_t* rec = slot(grant->offset);
  // A free slot's lock word is 0; a reservation is locked before it is
  // published (ordered before the leaf write by the fence below).
  if (lock_word != 0) lock_at(grant->offset).store(lock_word, std::memory_order_relaxed);
  img.store_body(rec);
  // The record is complete before the tree publishes its address (the
  // tree's leaf write is a release; clients READ the leaf before the record).
  std::atomic_thread_fence(std::memory_order_release);
  const RecordAddr addr{grant->offset, grant->incarnation, 0};
  const xstore::XStatus s = tree_.insert(key, &addr, /*upsert=*/false);
  if (s == xstore::XStatus::kOk) return addr;
  // Unpublished: nobody can hold its address. Mark it deleted so a later
  // tenant's incarnation is derived from a consistent header.
  h->flags = kDeleted;
  seal(img.data(), value_size_);
  img.store_body(rec);
  if (lock_word != 0) lock_at(grant->offset).store(0, std::memory_order_release);
  heap_.release(grant->offset);
  if (s == xstore::XStatus::kAlreadyExists && lock_word != 0) {
    RecordAddr other;
    if (tree_.get(key, &other) == xstore::XStatus::kOk) {
      std::atomic_thread_fence(std::memory_order_acquire);
      RecordHeader oh{};
      load_words(&oh, slot(other.offset), sizeof oh);
      if (oh.version == 0 && oh.key == key && oh.incarnation == other.incarnation) {
        return unavailable("record tree: key " + std::to_string(key) +
                           " is reserved by another transaction's insert");
      }
    }
  }
  if (s == xstore::XStatus::kAlreadyExists && upsert) return update(key, value);
  return from_xstatus(s, key, "insert");
}

Result<bool> RecordTree::lock_record(uint64_t key, const RecordAddr& a) {
  uint8_t* rec = slot(a.offset);
  // Another owner thread holds it only for a few stores: wait (bounded).
  // A transaction may hold it for a round trip or more: give up soon.
  int txn_tries = 0;
  for (uint64_t spin = 0; spin < (uint64_t{1} << 24); ++spin) {
    uint64_t expected = 0;
    if (lock_at(a.offset).compare_exchange_strong(expected, kOwnerLockWord,
                                                  std::memory_order_acquire)) {
      RecordHeader h{};
      load_words(&h, rec, sizeof h);
      if (h.key == key && h.incarnation == a.incarnation && h.flags == kLive) return true;
      lock_at(a.offset).store(0, std::memory_order_release);
      return false;
    }
    if (expected != kOwnerLockWord && ++txn_tries >= kLockTries) break;
    if ((spin & 1023) == 1023) std::this_thread::yield();
  }
  return unavailable("record tree: record of key " + std::to_string(key) +
                     " is locked by a transaction; retry");
}

void RecordTree::unlock_record(const RecordAddr& a) {
  lock_at(a.offset).store(0, std::memory_order_release);
}

Result<bool> RecordTree::install(uint64_t key, uint64_t version, std::span<const uint8_t> value) {
  if (value.size() > value_size_) {
    return out_of_range("record tree install: value of " + std::to_string(value.size()) +
                        " bytes exceeds the table's value size " + std::to_string(value_size_));
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    RecordAddr a;
    if (tree_.get(key, &a) != xstore::XStatus::kOk) {
      Result<RecordAddr> ins = insert_version(key, value, version, /*upsert=*/false);
      if (ins.is_ok()) return true;
      if (ins.status().code() != Code::kAlreadyExists) return ins.status();
      continue;  // another applier inserted it meanwhile: compare versions
    }
    Result<bool> locked = lock_record(key, a);
    if (!locked.is_ok()) return locked.status();
    if (!*locked) continue;  // removed meanwhile
    RecordHeader h{};
    load_words(&h, slot(a.offset), sizeof h);
    const bool newer = version > h.version;
    if (newer) rewrite(a, kLive, value, version);
    unlock_record(a);
    return newer;
  }
  return unavailable("record tree install: key " + std::to_string(key) +
                     " kept appearing and disappearing; retry");
}

void RecordTree::rewrite(const RecordAddr& a, uint32_t flags, std::span<const uint8_t> value,
                         uint64_t version, const uint64_t* wts) {
  uint8_t* rec = slot(a.offset);
  RecordImage img(slot_bytes());
  img.load(rec);  // we hold the lock: no other writer
  RecordHeader* h = img.header();
  h->version = version != 0 ? version : h->version + 1;
  h->flags = flags;
  if (wts != nullptr) h->wts = *wts;
  if (!value.empty()) {
    std::memset(img.value(), 0, value_size_);
    std::memcpy(img.value(), value.data(), value.size());
  }
  seal(img.data(), value_size_);
  img.store_body(rec);
}

Result<RecordAddr> RecordTree::reserve(uint64_t key, uint64_t lock_word, uint64_t* base) {
  if (lock_word == 0 || lock_word == kOwnerLockWord) {
    return invalid_argument("record tree reserve: lock word " + std::to_string(lock_word) +
                            " is not a transaction's");
  }
  Result<RecordAddr> r = insert_version(key, {}, 0, /*upsert=*/false, lock_word);
  // After the publication: an earlier record of the key raised deleted_high
  // before its entry left the tree, and the tree's insert found it gone.
  if (r.is_ok()) *base = deleted_high_.load(std::memory_order_acquire);
  return r;
}

void RecordTree::raise_deleted_high(uint64_t v) {
  uint64_t cur = deleted_high_.load(std::memory_order_relaxed);
  while (cur < v && !deleted_high_.compare_exchange_weak(cur, v, std::memory_order_acq_rel)) {
  }
}

Result<bool> RecordTree::apply_in_order(uint64_t key, Change c, uint64_t version,
                                        std::span<const uint8_t> value, const ApplyMvcc* mvcc,
                                        uint64_t* wrote) {
  if (value.size() > value_size_) {
    return out_of_range("record tree apply: value of " + std::to_string(value.size()) +
                        " bytes exceeds the table's value size " + std::to_string(value_size_));
  }
  if (version == 0) return invalid_argument("record tree apply: version 0 is never committed");
  RecordAddr a;
  if (c == Change::kInsert) {
    // Usually the key is not there: insert at once (one traversal). The
    // tree refuses a present key; insert_version then marks the slot it
    // wrote deleted and frees it, never having published it. Only then
    // look at what holds the key.
    Result<RecordAddr> ins =
        insert_version(key, value, version, /*upsert=*/false, 0, mvcc ? mvcc->wts : 0);
    if (ins.is_ok()) {
      if (wrote != nullptr) *wrote = ins->offset;
      return true;
    }
    if (ins.status().code() != Code::kAlreadyExists) return ins.status();
    if (tree_.get(key, &a) != xstore::XStatus::kOk) return false;  // removed meanwhile: retry
    RecordHeader fh;
    load_words(&fh, slot(a.offset), sizeof fh);
    // A newer incarnation replaced this one, or the earlier record's
    // delete has not arrived (skipped_incarnations.h).
    return skipped_.skip_if_replaced(key, version, fh.version);
  }
  const bool found = tree_.get(key, &a) == xstore::XStatus::kOk;
  // Its insert has not arrived — or was skipped as replaced.
  if (!found) return skipped_.covers(key, version, c == Change::kDelete);
  if (mvcc != nullptr && mvcc->will_keep) mvcc->will_keep(a.offset);
  Result<bool> locked = lock_record(key, a);
  if (!locked.is_ok()) return locked.status();
  if (!*locked) return false;  // removed meanwhile by another applier
  RecordHeader h{};
  load_words(&h, slot(a.offset), sizeof h);
  if (h.version + 1 != version) {
    unlock_record(a);
    // A newer incarnation holds the key: a change of a skipped one, or of
    // one whose insert is still to come (then wait).
    if (h.version >= version) return skipped_.covers(key, version, c == Change::kDelete);
    return false;  // an earlier change of the key has not arrived
  }
  if (mvcc != nullptr && mvcc->keep_old) {
    RecordImage old(slot_bytes());
    old.load(slot(a.offset));
    if (!mvcc->keep_old(a.offset, static_cast<const uint8_t*>(old.data()), c == Change::kDelete)) {
      unlock_record(a);
      return false;  // no room for the old version yet: retry later
    }
  }
  if (wrote != nullptr) *wrote = a.offset;
  if (c == Change::kUpdate) {
    rewrite(a, kLive, value, version, mvcc ? &mvcc->wts : nullptr);
    unlock_record(a);
    return true;
  }
  raise_deleted_high(version);
  rewrite(a, kDeleted, {}, version);
  const xstore::XStatus s = tree_.remove(key);
  unlock_record(a);
  heap_.release(a.offset);
  DRTMX_RETURN_IF_ERROR(from_xstatus(s, key, "apply delete"));
  return true;
}

Status RecordTree::remove_held(uint64_t key, const RecordAddr& a, uint64_t lock_word) {
  RecordAddr cur;
  uint8_t* rec = slot(a.offset);
  if (a.offset % 64 != 0 || a.offset + slot_bytes() > region_.size() ||
      tree_.get(key, &cur) != xstore::XStatus::kOk || cur.offset != a.offset ||
      cur.incarnation != a.incarnation ||
      lock_at(a.offset).load(std::memory_order_acquire) != lock_word) {
    return not_found("record tree: key " + std::to_string(key) +
                     " is not the record the caller holds; nothing removed");
  }
  // The caller's lock keeps every other writer (owner or transaction) out
  // of the record and of its entry (remove() locks the record first).
  RecordHeader h{};
  load_words(&h, rec, sizeof h);
  const uint64_t v =
      (h.version == 0 ? deleted_high_.load(std::memory_order_acquire) : h.version) + 1;
  raise_deleted_high(v);  // before the entry leaves the tree (see reserve)
  rewrite(a, kDeleted, {}, v);
  const xstore::XStatus s = tree_.remove(key);
  unlock_record(a);
  heap_.release(a.offset);
  return from_xstatus(s, key, "remove");
}

Result<RecordAddr> RecordTree::update(uint64_t key, std::span<const uint8_t> value) {
  if (value.size() > value_size_) {
    return out_of_range("record tree update: value of " + std::to_string(value.size()) +
                        " bytes exceeds the table's value size " + std::to_string(value_size_));
  }
  RecordAddr a;
  if (tree_.get(key, &a) != xstore::XStatus::kOk)
    return from_xstatus(xstore::XStatus::kNotFound, key, "update");
  Result<bool> locked = lock_record(key, a);
  if (!locked.is_ok()) return locked.status();
  if (!*locked) return from_xstatus(xstore::XStatus::kNotFound, key, "update");
  rewrite(a, kLive, value);
  unlock_record(a);
  return a;
}

Status RecordTree::remove(uint64_t key) {
  RecordAddr a;
  if (tree_.get(key, &a) != xstore::XStatus::kOk)
    return from_xstatus(xstore::XStatus::kNotFound, key, "remove");
  Result<bool> locked = lock_record(key, a);
  if (!locked.is_ok()) return locked.status();
  if (!*locked) return from_xstatus(xstore::XStatus::kNotFound, key, "remove");
  RecordHeader h{};
  load_words(&h, slot(a.offset), sizeof h);
  raise_deleted_high(h.version + 1);
  rewrite(a, kDeleted, {});
  const xstore::XStatus s = tree_.remove(key);
  unlock_record(a);
  // Only the holder of the record lock that saw it live removes the entry,
  // so the entry was ours: the slot can go back.
  heap_.release(a.offset);
  return from_xstatus(s, key, "remove");
}

Result<bool> RecordTree::get(uint64_t key, std::span<uint8_t> value_out, RecordAddr* where) const {
  if (value_out.size() < value_size_) {
    return invalid_argument("record tree get: value buffer of " + std::to_string(value_out.size()) +
                            " bytes is smaller than the value size " + std::to_string(value_size_));
  }
  RecordImage img(slot_bytes());
  for (int restart = 0; restart < 4; ++restart) {
    RecordAddr a;
    if (tree_.get(key, &a) != xstore::XStatus::kOk) return false;
    std::atomic_thread_fence(std::memory_order_acquire);
    for (int i = 0; i < kReadTries; ++i) {
      img.load(slot(a.offset));
      const RecordCheck c = verify(img.data(), value_size_, key, a.incarnation);
      if (c == RecordCheck::kTorn) continue;
      if (c != RecordCheck::kOk) break;  // deleted / reused since the lookup: look up again
      std::memcpy(value_out.data(), img.value(), value_size_);
      if (where != nullptr) *where = a;
      return true;
    }
  }
  return unavailable("record tree get: record of key " + std::to_string(key) +
                     " stayed torn or moving for every retry");
}

}  // namespace drtmx::store::tables
