#include "check/append_index.h"

#include <algorithm>
#include <bit>

namespace drtmx::check {

namespace {
uint64_t mix_kv(uint32_t kid, int64_t value) {
  uint64_t x = static_cast<uint64_t>(value) * 0x9E3779B97F4A7C15ull ^ (uint64_t{kid} << 17);
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 32);
}
}  // namespace

AppendIndex::AppendIndex(size_t expected) {
  size_t cap = std::bit_ceil(std::max<size_t>(16, expected * 2));
  slots_.resize(cap);
  mask_ = cap - 1;
}

size_t AppendIndex::slot_of(uint32_t kid, int64_t value) const {
  size_t i = mix_kv(kid, value) & mask_;
  while (slots_[i].kid != 0 && (slots_[i].kid != kid + 1 || slots_[i].value != value)) {
    i = (i + 1) & mask_;
  }
  return i;
}

void AppendIndex::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.size() * 2, Slot{});
  mask_ = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.kid != 0) slots_[slot_of(s.kid - 1, s.value)] = s;
  }
}

AppendRef* AppendIndex::insert(uint32_t kid, int64_t value, const AppendRef& ref, bool* fresh) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  Slot& s = slots_[slot_of(kid, value)];
  if (s.kid != 0) {
    *fresh = false;
    return &s.ref;
  }
  s.kid = kid + 1;
  s.value = value;
  s.ref = ref;
  size_++;
  *fresh = true;
  return &s.ref;
}

AppendRef* AppendIndex::find(uint32_t kid, int64_t value) {
  Slot& s = slots_[slot_of(kid, value)];
  return s.kid == 0 ? nullptr : &s.ref;
}

const AppendRef* AppendIndex::find(uint32_t kid, int64_t value) const {
  const Slot& s = slots_[slot_of(kid, value)];
  return s.kid == 0 ? nullptr : &s.ref;
}

}  // namespace drtmx::check
