// A single-producer single-consumer message ring in shared memory: one per
// (sender thread, receiver thread), living in the receiver's segment.
//
// Layout: a 128-byte control block (tail on its own cache line, written by
// the sender; head on the next, written by the receiver), then `capacity`
// bytes of records. A record is a 16-byte header {len, kind, visible_at_ns}
// and the payload, padded to 16 bytes; positions are monotonically growing
// 64-bit byte counts (index = pos & (capacity - 1)). A record never wraps:
// when it does not fit before the end, the sender writes a wrap record and
// starts again at index 0.
//
// Memory ordering: the sender writes records, then publishes the new tail
// with a release store (flush = the doorbell); the receiver loads the tail
// with acquire, so every record below it is visible. The receiver reads
// records in place and publishes its head (release) only when it is done
// with them; the sender loads the head (acquire) before reusing space, so a
// record is never overwritten while the receiver may still read it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace drtmx::r2::shm {

struct RingControl {
  alignas(64) std::atomic<uint64_t> tail;
  alignas(64) std::atomic<uint64_t> head;
};
static_assert(sizeof(RingControl) == 128);

struct RecordHeader {
  uint32_t len;
  uint32_t kind;  // kMessage or kWrap
  uint64_t visible_at_ns;
};
static_assert(sizeof(RecordHeader) == 16);

constexpr uint32_t kMessage = 1;
constexpr uint32_t kWrap = 2;

inline size_t ring_stride(uint32_t capacity) {
  return sizeof(RingControl) + capacity;
}
inline uint64_t record_bytes(uint32_t len) {
  return (sizeof(RecordHeader) + len + 15u) & ~15ull;
}

// Sender side of one ring. Lives in the sender's private memory.
class RingWriter {
 public:
  RingWriter() = default;
  RingWriter(uint8_t* ring, uint32_t capacity)
      : ctl_(reinterpret_cast<RingControl*>(ring)),
        data_(ring + sizeof(RingControl)),
        cap_(capacity) {}

  // Appends one record; false when the ring has no room (nothing written).
  bool append(const void* msg, uint32_t len, uint64_t visible_at_ns);
  // Publishes every appended record. Returns false when there was nothing.
  bool publish();
  bool dirty() const { return tail_ != published_; }

 private:
  bool reserve(uint64_t bytes);
  RingControl* ctl_ = nullptr;
  uint8_t* data_ = nullptr;
  uint32_t cap_ = 0;
  uint64_t tail_ = 0;        // next write position (private)
  uint64_t published_ = 0;   // last tail stored to ctl_->tail
  uint64_t head_cache_ = 0;  // last head seen
};

// Receiver side of one ring. Lives in the receiver's private memory.
class RingReader {
 public:
  RingReader() = default;
  RingReader(uint8_t* ring, uint32_t capacity)
      : ctl_(reinterpret_cast<RingControl*>(ring)),
        data_(ring + sizeof(RingControl)),
        cap_(capacity) {}

  // Next visible record at or after the read cursor, or nullptr. With
  // `now_ns` != 0, a record whose visible_at_ns is later is not returned.
  // The returned payload stays valid until release().
  const uint8_t* next(uint32_t* len, uint64_t now_ns);
  // Lets the sender reuse everything returned so far.
  void release();
  // A record with a bad kind or length was found; the ring is abandoned.
  bool corrupted() const { return corrupted_; }

 private:
  RingControl* ctl_ = nullptr;
  uint8_t* data_ = nullptr;
  uint32_t cap_ = 0;
  uint64_t read_ = 0;        // next record to look at
  uint64_t tail_cache_ = 0;  // last tail seen
  uint64_t released_ = 0;    // last head stored
  bool corrupted_ = false;
};

}  // namespace drtmx::r2::shm
