// The Execute phase and the transaction driver.
#include <cstring>

#include "store/record.h"
#include "txn/engine.h"

namespace drtmx::txn {

const char* abort_name(Abort a) {
  switch (a) {
    case Abort::kNone:
      return "committed";
    case Abort::kLockHeld:
      return "lock held";
    case Abort::kVersionChanged:
      return "version changed";
    case Abort::kRecordMissing:
      return "record missing";
    case Abort::kDuplicateInsert:
      return "duplicate insert";
    case Abort::kLogFull:
      return "log full";
    case Abort::kNodeFailure:
      return "node failure";
    case Abort::kUserAbort:
      return "user abort";
    case Abort::kTornRead:
      return "torn read";
    case Abort::kNotSupported:
      return "not supported";
  }
  return "?";
}

Engine::Engine(r2::Co& co, Locator& loc, Replicator* replicator, const Policy& policy,
               uint8_t* arena, size_t arena_bytes)
    : co_(co),
      loc_(loc),
      rep_(replicator),
      policy_(policy),
      arena_(arena),
      arena_bytes_(arena_bytes),
      lock_word_(store::lock_word(co.node(), co.thread(), co.id())) {
  rng_ =
      (uint64_t{co.node()} << 32 | uint64_t{co.thread()} << 16 | co.id()) * 0x9E3779B97F4A7C15ull +
      1;
  if (rep_ != nullptr && arena_bytes_ > rep_->image_bytes()) {
    arena_bytes_ -= rep_->image_bytes();
    log_.images = arena_ + arena_bytes_;
  }
}

uint8_t* Engine::alloc(size_t bytes) {
  bytes = (bytes + 63) & ~size_t{63};
  if (used_ + bytes > arena_bytes_) {
    overflow_ = true;
    return nullptr;
  }
  uint8_t* p = arena_ + used_;
  used_ += bytes;
  return p;
}

Engine::Access* Engine::find(TableId t, Key k) {
  for (Access& a : set_) {
    if (a.table == t && a.key == k) return &a;
  }
  return nullptr;
}

Abort Engine::read(TableId t, Key k, void* out, bool for_update) {
  const uint32_t vs = loc_.value_size(t);
  if (Access* a = find(t, k)) {  // read again: serve from the transaction
    a->write |= for_update;
    std::memcpy(out, a->new_value ? a->new_value : a->copy + sizeof(store::RecordHeader), vs);
    return Abort::kNone;
  }
  uint8_t* copy = alloc(store::record_slot_size(vs));
  if (copy == nullptr) return Abort::kNotSupported;
  Access a{};
  a.table = t;
  a.key = k;
  a.copy = copy;
  a.write = for_update;
  Abort r = loc_.read(co_, policy_.execute, t, k, &a.ref, copy);
  if (r != Abort::kNone) return r;
  store::RecordHeader h;
  std::memcpy(&h, copy, sizeof h);
  a.incarnation = h.incarnation;
  set_.push_back(a);
  std::memcpy(out, copy + sizeof h, vs);
  return Abort::kNone;
}

Abort Engine::prefetch(std::span<const TableKey> keys, bool for_update) {
  // Only what the transaction has not read yet; each key once.
  std::vector<TableKey> todo;
  for (const TableKey& tk : keys) {
    if (Access* a = find(tk.table, tk.key)) {
      a->write |= for_update;
      continue;
    }
    bool dup = false;
    for (const TableKey& d : todo) dup |= d.table == tk.table && d.key == tk.key;
    if (!dup) todo.push_back(tk);
  }
  if (todo.empty()) return Abort::kNone;
  std::vector<RecordRef> refs(todo.size());
  std::vector<uint8_t*> copies(todo.size());
  std::vector<Abort> results(todo.size());
  for (size_t i = 0; i < todo.size(); ++i) {
    copies[i] = alloc(store::record_slot_size(loc_.value_size(todo[i].table)));
    if (copies[i] == nullptr) return Abort::kNotSupported;
  }
  loc_.read_many(co_, policy_.execute, todo, refs.data(), copies.data(), results.data());
  for (size_t i = 0; i < todo.size(); ++i) {
    if (results[i] != Abort::kNone) return results[i];
    Access a{};
    a.table = todo[i].table;
    a.key = todo[i].key;
    a.ref = refs[i];
    a.copy = copies[i];
    a.write = for_update;
    store::RecordHeader h;
    std::memcpy(&h, copies[i], sizeof h);
    a.incarnation = h.incarnation;
    set_.push_back(a);
  }
  return Abort::kNone;
}

Abort Engine::get(TableId t, Key k, void* out) {
  return read(t, k, out, false);
}
Abort Engine::get_for_update(TableId t, Key k, void* out) {
  return read(t, k, out, true);
}

Abort Engine::put(TableId t, Key k, const void* value) {
  Access* a = find(t, k);
  if (a == nullptr) {
    // A blind write: read it first so Validate has its address and version.
    std::vector<uint8_t> tmp(loc_.value_size(t));
    if (Abort r = read(t, k, tmp.data(), true); r != Abort::kNone) return r;
    a = find(t, k);
  }
  const uint32_t vs = loc_.value_size(t);
  if (a->new_value == nullptr) {
    a->new_value = alloc(vs);
    if (a->new_value == nullptr) return Abort::kNotSupported;
  }
  std::memcpy(a->new_value, value, vs);
  a->write = true;
  return Abort::kNone;
}

Abort Engine::run_with_retry(const Procedure& proc, const RetryPolicy& p) {
  Abort r = Abort::kNone;
  for (uint32_t attempt = 1; attempt <= p.max_attempts; ++attempt) {
    r = run(proc);
    if (r == Abort::kNone || r == Abort::kUserAbort || r == Abort::kRecordMissing ||
        r == Abort::kNotSupported) {
      return r;  // final: retrying cannot change them
    }
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    const uint32_t k = attempt < p.max_backoff_log2 ? attempt : p.max_backoff_log2;
    const uint64_t spins = 1 + rng_ % (uint64_t{1} << k);
    for (uint64_t s = 0; s < spins; ++s) co_.yield_idle();
  }
  return r;
}

Abort Engine::finish(Abort a) {
  if (a == Abort::kNone) {
    ++stats_.committed;
  } else {
    ++stats_.aborts[static_cast<int>(a)];
  }
  return a;
}

Abort Engine::run(const Procedure& proc) {
  set_.clear();
  used_ = 0;
  overflow_ = false;
  Abort r = proc(*this);
  if (overflow_ && r == Abort::kNone) r = Abort::kNotSupported;  // arena too small
  if (r != Abort::kNone) return finish(r);                       // nothing is locked in Execute
  bool writes = false;
  for (const Access& a : set_) writes |= a.write;
  // A single-key read-only transaction is consistent as read.
  if (!writes && set_.size() <= 1) return finish(Abort::kNone);
  if (Abort v = validate(); v != Abort::kNone) return finish(v);
  if (!writes) return finish(Abort::kNone);
  if (Abort l = log(); l != Abort::kNone) {
    release(policy_.passive_ack);
    return finish(l);
  }
  commit();
  return finish(Abort::kNone);
}

}  // namespace drtmx::txn
