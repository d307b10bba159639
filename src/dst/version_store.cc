#include "dst/version_store.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "base/hash.h"
#include "store/word_copy.h"

namespace drtmx::dst {

// One ring slot: this header, then the value, padded to 64 bytes. Every
// word is accessed as a relaxed 8-byte atomic (store/word_copy.h) except
// `position`, which a local writer stores last (release) and readers check
// before and after copying (acquire). A remote coordinator's WRITE stores
// it with the rest, in no particular order: position_word() is why that is
// safe (version_store.h, "Position words").
struct VersionStore::Slot {
  uint64_t position;       // position_word(link of this version, superseded_at)
  uint64_t superseded_at;  // wts of the version that replaced it (or the delete)
  uint64_t wts;
  uint64_t version;
  uint64_t key;
  uint64_t older;  // position + 1 of the next older version, 0 none
  uint32_t incarnation;
  uint32_t flags;  // kDeletedAfter: the key was deleted at superseded_at
};
namespace {
constexpr uint32_t kDeletedAfter = 1;
constexpr size_t kSlotHeader = sizeof(uint64_t) * 7;

uint64_t load_pos(const uint64_t* w) {
  return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

uint64_t load_relaxed(const uint64_t& w) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(w)).load(std::memory_order_relaxed);
}
}  // namespace

uint64_t VersionStore::position_word(uint64_t link, Timestamp superseded_at) {
  // Every bit of both enters every bit of the word (base/hash.h): a link of
  // one lap beside a timestamp of another matches only by a 2^-64 chance.
  return hash_mix(link, superseded_at);
}

uint64_t VersionStore::slot_bytes(uint32_t value_size) {
  return (kSlotHeader + value_size + 63) & ~uint64_t{63};
}

uint64_t VersionStore::area_bytes(const VersionStoreOptions& o) {
  const uint64_t ring = bytes_for(o.capacity, o.value_size);
  if (o.lanes == 0) return ring;
  return range_word_offset(o) + 64;
}

uint64_t VersionStore::range_word_offset(const VersionStoreOptions& o) {
  return (holder_offset(o, o.record_slots) + 63) & ~uint64_t{63};
}

uint64_t VersionStore::holder_offset(const VersionStoreOptions& o, uint64_t record_slot) {
  return ((chain_head_offset(o, o.record_slots) + 63) & ~uint64_t{63}) + record_slot * 16;
}

uint64_t VersionStore::lane_header_offset(const VersionStoreOptions& o, uint32_t lane) {
  return bytes_for(o.capacity, o.value_size) + uint64_t{lane} * 64;
}

uint64_t VersionStore::lane_slot_offset(const VersionStoreOptions& o, uint32_t lane, uint64_t pos) {
  return lane_header_offset(o, o.lanes) +
         (uint64_t{lane} * o.lane_capacity + pos % o.lane_capacity) * slot_bytes(o.value_size);
}

uint64_t VersionStore::chain_head_offset(const VersionStoreOptions& o, uint64_t record_slot) {
  return lane_header_offset(o, o.lanes) +
         uint64_t{o.lanes} * o.lane_capacity * slot_bytes(o.value_size) + record_slot * 8;
}

VersionStore::Slot VersionStore::slot_header(const uint8_t* rec, Timestamp superseded_at,
                                             uint64_t older, bool deleted) {
  store::RecordHeader h;
  std::memcpy(&h, rec, sizeof h);
  Slot img{};
  img.position = 0;
  img.superseded_at = superseded_at;
  img.wts = h.wts;
  img.version = h.version;
  img.key = h.key;
  img.older = older;
  img.incarnation = h.incarnation;
  img.flags = deleted ? kDeletedAfter : 0;
  return img;
}

void VersionStore::build_lane_slot(uint8_t* out, uint64_t link, const uint8_t* rec,
                                   Timestamp superseded_at, uint64_t older, uint32_t value_size) {
  Slot img = slot_header(rec, superseded_at, older, false);
  img.position = position_word(link, superseded_at);
  std::memcpy(out, &img, kSlotHeader);
  static_assert(kSlotHeader == store::kValueOffset, "a record image is a slot in place");
  if (out == rec) return;  // the value is where the slot keeps it
  const size_t total = slot_bytes(value_size);
  std::memcpy(out + kSlotHeader, rec + store::kValueOffset, value_size);
  std::memset(out + kSlotHeader + value_size, 0, total - kSlotHeader - value_size);
}

VersionStore::VersionStore(std::span<uint8_t> area, const VersionStoreOptions& o)
    : area_(area), o_(o), slot_bytes_(slot_bytes(o.value_size)) {
  if (o.lanes > 0) {
    // Remote coordinators READ and WRITE the chain heads and holders: in
    // the area.
    heads_ = reinterpret_cast<std::atomic<uint64_t>*>(area.data() + chain_head_offset(o, 0));
    holders_ = reinterpret_cast<Holder*>(area.data() + holder_offset(o, 0));
    range_word_ = reinterpret_cast<std::atomic<uint64_t>*>(area.data() + range_word_offset(o));
  } else {
    // A word per slot of the heap's address space: reserved, and a page
    // becomes memory when its first slot's chain starts (the heap's slots
    // are handed out in order).
    heads_owned_ = true;
    const uint64_t n = o.record_slots == 0 ? 1 : o.record_slots;
    owned_bytes_ = n * (sizeof(std::atomic<uint64_t>) + sizeof(Holder));
    void* m = mmap(nullptr, owned_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m != MAP_FAILED) {
      heads_ = static_cast<std::atomic<uint64_t>*>(m);
      holders_ =
          reinterpret_cast<Holder*>(static_cast<uint8_t*>(m) + n * sizeof(std::atomic<uint64_t>));
    }
  }
  st_.capacity = o.capacity;
  st_.bytes = area_bytes(o);
}

VersionStore::~VersionStore() {
  if (heads_owned_ && heads_ != nullptr) munmap(heads_, owned_bytes_);
}

Result<std::unique_ptr<VersionStore>> VersionStore::create(std::span<uint8_t> area,
                                                           const VersionStoreOptions& o) {
  const std::string who = "version store " + o.name + ": ";
  if (o.value_size == 0) return invalid_argument(who + "value_size is 0");
  if (o.capacity == 0) return invalid_argument(who + "capacity is 0; give it room for versions");
  if (o.lanes > 0 && o.lane_capacity == 0) {
    return invalid_argument(who + "lane_capacity is 0 with " + std::to_string(o.lanes) + " lanes");
  }
  if (o.lanes > 0 && o.record_slots == 0) {
    return invalid_argument(who + "lanes need the record slot count (chain heads)");
  }
  if (area.size() < area_bytes(o)) {
    return invalid_argument(who + "area of " + std::to_string(area.size()) +
                            " bytes is below the " + std::to_string(area_bytes(o)) + " it needs");
  }
  if (reinterpret_cast<uintptr_t>(area.data()) % 64 != 0) {
    return invalid_argument(who + "area is not 64-byte aligned");
  }
  std::unique_ptr<VersionStore> s(new VersionStore(area, o));
  if (s->heads_ == nullptr || s->holders_ == nullptr) {
    return exhausted(who + "no memory for the chain heads");
  }
  return s;
}

VersionStore::Slot* VersionStore::at(uint64_t pos) const {
  return reinterpret_cast<Slot*>(area_.data() + (pos % o_.capacity) * slot_bytes_);
}

std::atomic<uint64_t>* VersionStore::lane_word(uint32_t lane, int word) const {
  return reinterpret_cast<std::atomic<uint64_t>*>(area_.data() + lane_header_offset(o_, lane) +
                                                  8 * word);
}

const VersionStore::Slot* VersionStore::slot_of(uint64_t link, bool* reclaimed) const {
  const uint64_t ring = link >> kLinkRingShift;
  const uint64_t pos = (link & ((uint64_t{1} << kLinkRingShift) - 1)) - 1;
  if (ring == 0) {
    *reclaimed = pos < tail_.load(std::memory_order_acquire);
    return at(pos);
  }
  if (ring > o_.lanes) return nullptr;
  const auto lane = static_cast<uint32_t>(ring - 1);
  *reclaimed = pos < lane_word(lane, 0)->load(std::memory_order_acquire);
  return reinterpret_cast<const Slot*>(area_.data() + lane_slot_offset(o_, lane, pos));
}

bool VersionStore::reserve(uint32_t n) {
  std::lock_guard<SpinLock> g(mu_);
  uint64_t used = head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed);
  if (used + reserved_ + n > o_.capacity) {
    gc_locked(last_lwm_);
    used = head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed);
    if (used + reserved_ + n > o_.capacity) {
      ++st_.full;
      return false;
    }
  }
  reserved_ += n;
  st_.peak = std::max(st_.peak, used + reserved_);
  return true;
}

void VersionStore::unreserve(uint32_t n) {
  std::lock_guard<SpinLock> g(mu_);
  reserved_ = reserved_ >= n ? reserved_ - n : 0;
}

uint64_t VersionStore::push_locked(uint64_t older, const uint8_t* rec, Timestamp superseded_at,
                                   bool deleted) {
  const uint64_t pos = head_.load(std::memory_order_relaxed);
  Slot* s = at(pos);
  // Unpublish first: a (buggy) reader of the slot's previous tenant sees a
  // position change instead of a mix.
  __atomic_store_n(&s->position, 0, __ATOMIC_RELEASE);
  const Slot img = slot_header(rec, superseded_at, older, deleted);
  uint8_t* base = reinterpret_cast<uint8_t*>(s);
  store::store_words(base + 8, reinterpret_cast<const uint8_t*>(&img) + 8, kSlotHeader - 8);
  // The value: whole words (the record's value area is padded to 64 bytes).
  const size_t vbytes = (o_.value_size + 7) & ~size_t{7};
  store::store_words(base + kSlotHeader, rec + store::kValueOffset, vbytes);
  __atomic_store_n(&s->position, position_word(pos + 1, superseded_at), __ATOMIC_RELEASE);
  head_.store(pos + 1, std::memory_order_release);
  ++st_.pushed;
  return pos + 1;
}

void VersionStore::prefetch_push(uint64_t slot) const {
  if (slot >= o_.record_slots) return;
  __builtin_prefetch(&heads_[slot], 1);
  // The head may move before the push (another pusher): a wasted hint.
  const auto* s = reinterpret_cast<const uint8_t*>(at(head_.load(std::memory_order_relaxed)));
  for (uint64_t b = 0; b < slot_bytes_; b += 64) __builtin_prefetch(s + b, 1);
}

uint64_t VersionStore::lane_header(uint32_t lane, int word) const {
  if (lane >= o_.lanes || word < 0 || word > 1) return 0;
  return lane_word(lane, word)->load(std::memory_order_acquire);
}

void VersionStore::raise_lane_bound(uint32_t lane, uint64_t bound) {
  if (lane < o_.lanes) lane_word(lane, 1)->store(bound, std::memory_order_release);
}

uint64_t VersionStore::chain_head(uint64_t record_slot) const {
  if (record_slot >= o_.record_slots) return 0;
  return heads_[record_slot].load(std::memory_order_acquire);
}

void VersionStore::push_lane(uint32_t lane, uint64_t pos, const uint8_t* slot_image,
                             uint64_t record_slot) {
  if (lane >= o_.lanes || record_slot >= o_.record_slots) return;
  uint8_t* s = area_.data() + lane_slot_offset(o_, lane, pos);
  // The position word last (the image's, from build_lane_slot): gc() and
  // readers need not rely on it, but a slot is then never seen half-new.
  store::store_words(s + 8, slot_image + 8, slot_bytes_ - 8);
  uint64_t position = 0;
  std::memcpy(&position, slot_image + kPositionOffset, 8);
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(s + kPositionOffset))
      .store(position, std::memory_order_release);
  heads_[record_slot].store(lane_link(lane, pos), std::memory_order_release);
}

bool VersionStore::push(uint64_t slot, const uint8_t* rec, Timestamp superseded_at, bool reserved) {
  if (slot >= o_.record_slots) return false;
  std::lock_guard<SpinLock> g(mu_);
  const uint64_t used =
      head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed);
  if (reserved && reserved_ > 0) {
    --reserved_;
  } else if (used + reserved_ >= o_.capacity) {
    if (gc_locked(last_lwm_) == 0 ||
        head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed) + reserved_ >=
            o_.capacity) {
      ++st_.full;
      return false;
    }
  }
  const uint64_t older = heads_[slot].load(std::memory_order_acquire);
  const uint64_t link = push_locked(older, rec, superseded_at, false);
  heads_[slot].store(link, std::memory_order_release);
  st_.peak = std::max(st_.peak, head_.load(std::memory_order_relaxed) -
                                    tail_.load(std::memory_order_relaxed) + reserved_);
  return true;
}

bool VersionStore::bury(uint64_t slot, uint64_t key, const uint8_t* rec, Timestamp deleted_at) {
  if (slot >= o_.record_slots) return false;
  std::lock_guard<SpinLock> g(mu_);
  if (reserved_ > 0) {
    --reserved_;
  } else if (head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed) >=
                 o_.capacity &&
             (gc_locked(last_lwm_) == 0 ||
              head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed) >=
                  o_.capacity)) {
    ++st_.full;
    return false;
  }
  const uint64_t older = heads_[slot].load(std::memory_order_acquire);
  const uint64_t link = push_locked(older, rec, deleted_at, true);
  heads_[slot].store(0, std::memory_order_release);
  graveyard_[key].push_front(link);
  graves_.push_back({link - 1, key});
  return true;
}

void VersionStore::detach(uint64_t slot) {
  if (slot < o_.record_slots) heads_[slot].store(0, std::memory_order_release);
}

Found VersionStore::walk(uint64_t link, Timestamp ts, uint8_t* value_out, VersionInfo* info) const {
  // Bounded by the ring: a chain never holds more versions than slots.
  const uint64_t bound = o_.capacity + uint64_t{o_.lanes} * o_.lane_capacity;
  for (uint64_t steps = 0; link != 0 && steps <= bound; ++steps) {
    bool reclaimed = false;
    const Slot* s = slot_of(link, &reclaimed);
    if (s == nullptr || reclaimed) return Found::kReclaimed;
    const uint64_t position = load_pos(&s->position);
    Slot h{};
    store::load_words(&h, s, kSlotHeader);
    if (position != position_word(link, h.superseded_at)) return Found::kReclaimed;
    const bool hit = h.wts <= ts;
    if (hit) {
      store::load_words(value_out, reinterpret_cast<const uint8_t*>(s) + kSlotHeader,
                        (o_.value_size + 7) & ~size_t{7});
    }
    // The copy is of this version only if the slot still holds it.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (load_pos(&s->position) != position) return Found::kReclaimed;
    if (hit) {
      info->wts = h.wts;
      info->version = h.version;
      info->incarnation = h.incarnation;
      info->deleted = false;
      return Found::kVersion;
    }
    link = h.older;
  }
  return Found::kNone;
}

Found VersionStore::find(uint64_t slot, Timestamp ts, uint8_t* value_out, VersionInfo* info) const {
  if (slot >= o_.record_slots) return Found::kNone;
  return walk(heads_[slot].load(std::memory_order_acquire), ts, value_out, info);
}

Found VersionStore::find_buried(uint64_t key, Timestamp ts, uint8_t* value_out,
                                VersionInfo* info) const {
  std::lock_guard<SpinLock> g(mu_);
  auto it = graveyard_.find(key);
  if (it == graveyard_.end()) return Found::kNone;
  for (uint64_t link : it->second) {
    const Slot* s = at(link - 1);
    if (link - 1 < tail_.load(std::memory_order_relaxed)) return Found::kReclaimed;
    const uint64_t position = load_pos(&s->position);
    Slot h{};
    store::load_words(&h, s, kSlotHeader);
    if (position != position_word(link, h.superseded_at)) return Found::kReclaimed;
    if (h.superseded_at <= ts) {  // deleted at or before ts
      *info = {h.superseded_at, h.version, h.incarnation, true};
      return Found::kVersion;
    }
    Found f = walk(link, ts, value_out, info);
    if (f != Found::kNone) return f;
    // This incarnation began after ts: an older one may have lived then.
  }
  return Found::kNone;
}

void VersionStore::buried_in(
    uint64_t from, uint64_t to, Timestamp ts,
    const std::function<void(uint64_t, const uint8_t*, const VersionInfo&)>& f) const {
  std::vector<uint64_t> keys;
  {
    std::lock_guard<SpinLock> g(mu_);
    for (auto it = graveyard_.lower_bound(from); it != graveyard_.end() && it->first <= to; ++it) {
      keys.push_back(it->first);
    }
  }
  std::vector<uint8_t> value((o_.value_size + 7) & ~size_t{7});
  for (uint64_t k : keys) {
    VersionInfo info;
    if (find_buried(k, ts, value.data(), &info) == Found::kVersion && !info.deleted) {
      f(k, value.data(), info);
    }
  }
}

uint64_t VersionStore::gc_locked(Timestamp lwm) {
  if (lwm > last_lwm_) last_lwm_ = lwm;
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  const uint64_t head = head_.load(std::memory_order_relaxed);
  const uint64_t from = tail;
  while (tail < head) {
    const Slot* s = at(tail);
    const uint64_t sup = std::atomic_ref<uint64_t>(const_cast<Slot*>(s)->superseded_at)
                             .load(std::memory_order_relaxed);
    if (sup > last_lwm_) break;
    ++tail;
  }
  const uint64_t lanes = gc_lanes_locked();
  if (tail == from) return lanes;
  tail_.store(tail, std::memory_order_release);
  // Graves whose newest version is gone: nobody can read the key's
  // deleted incarnations any more.
  while (!graves_.empty() && graves_.front().first < tail) {
    const auto [pos, key] = graves_.front();
    graves_.pop_front();
    auto it = graveyard_.find(key);
    if (it == graveyard_.end()) continue;
    auto& links = it->second;
    for (auto l = links.begin(); l != links.end(); ++l) {
      if (*l == pos + 1) {
        links.erase(l);
        break;
      }
    }
    if (links.empty()) graveyard_.erase(it);
  }
  st_.reclaimed += tail - from;
  if (lanes == 0) ++st_.gc_runs;
  return tail - from + lanes;
}

uint64_t VersionStore::gc_lanes_locked() {
  uint64_t freed = 0;
  if (o_.lanes == 0) return 0;
  const uint64_t lane_bytes = o_.lane_capacity * slot_bytes_;
  const uint8_t* lanes = area_.data() + lane_slot_offset(o_, 0, 0);
  for (uint32_t lane = 0; lane < o_.lanes; ++lane) {
    std::atomic<uint64_t>* tail_word = lane_word(lane, 0);
    uint64_t tail = tail_word->load(std::memory_order_relaxed);
    const uint64_t from = tail;
    const uint8_t* ring = lanes + lane * lane_bytes;
    uint64_t at = (tail % o_.lane_capacity) * slot_bytes_;  // one divide per lane
    // A slot is freed once written (its position word and superseded_at
    // are one write's pair) and superseded at or below the lwm.
    for (uint64_t n = 0; n < o_.lane_capacity; ++n, ++tail) {
      const auto* s = reinterpret_cast<const Slot*>(ring + at);
      const uint64_t position = load_pos(&s->position);
      const uint64_t sup = load_relaxed(s->superseded_at);
      if (position != position_word(lane_link(lane, tail), sup) || sup > last_lwm_) break;
      at += slot_bytes_;
      if (at == lane_bytes) at = 0;
    }
    if (tail != from) {
      tail_word->store(tail, std::memory_order_release);
      freed += tail - from;
    }
  }
  if (freed > 0) {
    lane_reclaimed_ += freed;
    st_.reclaimed += freed;
    ++st_.gc_runs;
  }
  return freed;
}

uint64_t VersionStore::gc(Timestamp lwm) {
  std::lock_guard<SpinLock> g(mu_);
  return gc_locked(lwm);
}

VersionStoreStats VersionStore::stats() const {
  std::lock_guard<SpinLock> g(mu_);
  VersionStoreStats s = st_;
  s.in_use = head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_relaxed);
  // Lanes: the slots written from the tail on (their position stored),
  // up to the head bound their coordinators publish — exact once no commit
  // is writing (a slot being written ends the count early).
  uint64_t lane_in_use = 0;
  for (uint32_t lane = 0; lane < o_.lanes; ++lane) {
    const uint64_t bound = lane_word(lane, 1)->load(std::memory_order_acquire);
    const uint64_t tail = lane_word(lane, 0)->load(std::memory_order_acquire);
    for (uint64_t pos = tail; pos < bound && pos - tail < o_.lane_capacity; ++pos) {
      const auto* slot =
          reinterpret_cast<const Slot*>(area_.data() + lane_slot_offset(o_, lane, pos));
      const uint64_t position = load_pos(&slot->position);
      if (position != position_word(lane_link(lane, pos), load_relaxed(slot->superseded_at))) break;
      ++lane_in_use;
    }
  }
  s.in_use += lane_in_use;
  s.pushed += lane_reclaimed_ + lane_in_use;
  s.capacity += uint64_t{o_.lanes} * o_.lane_capacity;
  s.peak = std::max(s.peak, s.in_use);
  s.reserved = reserved_;
  s.buried = graveyard_.size();
  return s;
}

}  // namespace drtmx::dst
