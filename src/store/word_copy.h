// Word-wise copies between owner-local registered memory and private
// images, with 8-byte atomic accesses (relaxed loads, release stores). The owner's writers and its
// optimistic local readers race by design (readers verify seals); making
// every access an 8-byte atomic keeps that race defined in C++ and each
// word untorn, exactly what a one-sided READ guarantees (8 aligned bytes).
// Owner-side only (hash tables, record trees); both pointers 8-byte aligned, `bytes` a
// multiple of 8.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace drtmx::store {

inline void load_words(void* dst, const void* shared, size_t bytes) {
  auto* d = static_cast<uint64_t*>(dst);
  auto* s = static_cast<uint64_t*>(const_cast<void*>(shared));
  for (size_t i = 0; i < bytes / 8; ++i) {
    d[i] = std::atomic_ref<uint64_t>(s[i]).load(std::memory_order_relaxed);
  }
}

// Starts loading every 64-byte line of [p, p + bytes) (no effect on
// contents): a caller that copies several records prefetches them all
// first, so their cache misses overlap.
inline void prefetch_lines(const void* p, size_t bytes) {
  const auto* b = static_cast<const char*>(p);
  for (size_t at = 0; at < bytes; at += 64) __builtin_prefetch(b + at);
}

// Release stores, in ascending address order: a reader that loads any of
// these words and then fences (acquire) sees every store this thread made
// before it, the words below it included — what a quiet copy's check
// relies on (record_io.h). On x86-64 a release store is the plain store a
// relaxed one is.
inline void store_words(void* shared, const void* src, size_t bytes) {
  auto* d = static_cast<uint64_t*>(shared);
  auto* s = static_cast<const uint64_t*>(src);
  for (size_t i = 0; i < bytes / 8; ++i) {
    std::atomic_ref<uint64_t>(d[i]).store(s[i], std::memory_order_release);
  }
}

}  // namespace drtmx::store
