// Replication log rings: how a coordinator makes its redo log durable-in-
// memory on a backup with one-sided WRITEs, and how the backup applies and
// reclaims it. Thesis §4.3.4; docs/architecture.md (the Log phase).
//
// Every backup node holds one ring per remote coordinator (node, thread) in
// a registered region (the log region). A ring is `ring_bytes` (a power of
// two) of entries; entries never wrap: when one does not fit before the end,
// the writer first writes a wrap entry there and continues at 0.
//
// Entry layout (8-byte aligned, `entry_bytes(payload)` long):
//   +0   len      4 B   payload length
//   +4   kind     4 B   kData or kWrap (low 8 bits); the transaction's
//                       number of log entries (bits 8..23, durable logs);
//                       bit 24: one of them went to the writer's own node
//   +8   seq      8 B   the writer's entry sequence number (1, 2, ...)
//   +16  txn      8 B   durable logs: the writer's transaction number
//                       (1, 2, ... per coordinator thread; 0 otherwise)
//   +24  decided  8 B   durable logs: every transaction of the writer up
//                       to this number had its log complete when the entry
//                       was built (the decision watermark, below)
//   +32  seal     8 B   hash of (len, kind, seq, txn, decided, payload)
//   +40  payload  len B, padded to 8
//   end-8 len2    4 B   the length again, then 4 B padding
// The length sits at both ends (thesis) and the seal covers the rest: on
// shm a WRITE is a memcpy that may place the last bytes first, so matching
// lengths alone would not prove the middle arrived. An entry is complete
// iff len == len2 and the seal verifies.
//
// Protocol.
//  * Writer (coordinator thread, one per backup): knows its tail and the
//    last head the backup reported. `prepare()` builds the entry image in
//    local registered memory and says where it goes, or refuses when the
//    ring lacks room (back-pressure: the caller waits for a reclaim and
//    retries; an entry not yet applied is never overwritten). The caller
//    WRITEs the image (signaled: the completion means the entry is in the
//    backup's memory — the Log phase waits for all backups' completions).
//  * Reader (backup, one per ring, polled by a backup worker): `poll()`
//    hands each complete entry, in ring order, to the applier, then zeroes
//    it (so a stale image can never look complete later) and advances its
//    head. Reclaim is lazy: once `reclaim_every` bytes were freed since the
//    last report, `poll()` says so and the caller messages the new head to
//    the writer, which calls `on_reclaimed(head)`.
//  * A WRITE may store some bytes more than once, and the reader cannot
//    tell when it has returned: on shm it is a memcpy, and glibc's copies
//    of some sizes store the same vector twice (a 64-byte copy with 64-byte
//    vectors: two full stores). A reader that found the first store
//    complete, applied and zeroed the entry can see the second store put
//    the whole image back — and find it, sealed and complete, one lap later
//    at an entry boundary, before the writer's next entry there arrives.
//    Zeroing is therefore only a fast "empty" answer, not the proof of
//    freshness: the sequence number is. An entry older than the next one
//    expected is such a stale image and reads as "not arrived yet" (the
//    writer, one thread per ring, finishes that copy before it writes the
//    next entry, so a stale store never lands on a newer entry). An entry
//    from the future is a protocol bug or a corrupt ring: the reader
//    refuses it instead of applying it.
//
// Durable logs (durability on, see src/txn/README.md, "Durability", for the whole
// protocol). The reader must not change anything — apply an entry, or zero
// it — before the entry's transaction is known committed, and it must
// make that knowledge persistent first: recovery decides each transaction
// from what the rings hold, and a ring that had forgotten an entry would
// otherwise make a committed transaction look incomplete. So a durable
// reader is *gated*: peek() shows the next complete entry, consume() takes
// it (no zeroing), and release() later zeroes the oldest consumed entries
// and moves the head, once their records are persistent. Entries carry the
// writer's decision watermark; scan_decided() learns it from the entries
// ahead of the cursor.
//
// Threading: a LogWriter belongs to one coordinator worker thread, a
// LogReader to one backup worker thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "base/status.h"

namespace drtmx::txn {

constexpr uint32_t kLogData = 1;
constexpr uint32_t kLogWrap = 2;
constexpr size_t kLogHeaderBytes = 40;
constexpr size_t kLogTrailerBytes = 8;
constexpr size_t kLogMinEntry = kLogHeaderBytes + kLogTrailerBytes;  // a wrap entry

constexpr size_t log_entry_bytes(size_t payload) {
  return kLogHeaderBytes + ((payload + 7) & ~size_t{7}) + kLogTrailerBytes;
}

// What a durable log entry says about its transaction (all 0 otherwise).
struct LogMark {
  uint64_t txn = 0;      // the writer's transaction number
  uint64_t decided = 0;  // the writer's decision watermark when built
  uint16_t targets = 0;  // how many log entries the transaction wrote
  // Durable logs: one of them went to the writer's own node (failover: a
  // removed coordinator's own entry is gone with it; txn/failover_durable.h).
  bool self = false;
};

// The reader's persistent record of one ring (durable logs): in the log
// region after the rings (LogRingLayout::header_offset), written only by
// the ring's reader.
struct RingHeader {
  uint64_t decided;   // the writer's decisions known here (persisted, with
                      // head, before any entry up to it is released)
  uint64_t head;      // ring position (monotonic) of the first entry not released
  uint64_t next_seq;  // the sequence number expected at `head`
  uint64_t pad[5];
};
static_assert(sizeof(RingHeader) == 64);

// Where the rings live inside a backup's log region: the rings of every
// coordinator (node, thread), then one RingHeader per ring.
struct LogRingLayout {
  uint16_t nodes = 0;    // coordinator nodes
  uint16_t threads = 0;  // coordinator threads per node
  uint32_t ring_bytes = 0;

  Status validate() const;
  size_t rings() const { return size_t{nodes} * threads; }
  size_t region_bytes() const { return rings() * (ring_bytes + sizeof(RingHeader)); }
  // Offset of the ring for coordinator (node, thread) inside the region.
  uint64_t ring_offset(uint16_t node, uint16_t thread) const {
    return (uint64_t{node} * threads + thread) * ring_bytes;
  }
  uint64_t header_offset(uint16_t node, uint16_t thread) const {
    return rings() * ring_bytes + (uint64_t{node} * threads + thread) * sizeof(RingHeader);
  }
};

class LogWriter {
 public:
  // `ring_offset`: where this writer's ring starts in the backup's log region.
  LogWriter(uint64_t ring_offset, uint32_t ring_bytes);

  // Largest payload one entry can carry.
  size_t max_payload() const;

  struct Placement {
    uint64_t offset;  // in the backup's log region
    uint32_t bytes;   // image length to WRITE
    uint64_t seq;
  };
  // Builds the entry image for `payload` into `image` (registered memory,
  // at least log_entry_bytes(len) + kLogMinEntry long) and returns the
  // WRITEs to issue: one entry, preceded by a wrap entry when the ring
  // wraps (then two placements, the wrap first). Returns 0 placements when
  // the ring lacks room (retry after on_reclaimed), or an error for a
  // payload above max_payload(). `mark`: durable logs.
  Result<int> prepare(const void* payload, uint32_t len, uint8_t* image, Placement out[2],
                      const LogMark& mark = {});

  // True when prepare() of a `len`-byte payload would find room now (it
  // changes nothing; a caller placing entries on several rings checks them
  // all first, so it never reserves space on one ring and then gives up).
  bool fits(uint32_t len) const;

  // The backup reported that everything before ring position `head`
  // (monotonic byte count) has been applied and freed.
  void on_reclaimed(uint64_t head);

  uint64_t tail() const { return tail_; }
  uint64_t head() const { return head_; }
  // Data entries prepared so far (wrap entries, which carry no records and
  // which a reader does not count as applied, excluded).
  uint64_t entries() const { return data_entries_; }

 private:
  uint64_t base_;
  uint32_t bytes_;
  uint64_t tail_ = 0;          // monotonic byte position of the next entry
  uint64_t head_ = 0;          // reclaimed up to here (as last reported)
  uint64_t seq_ = 0;           // data and wrap entries
  uint64_t data_entries_ = 0;  // data entries only
};

// A complete entry as the reader sees it (payload points into the ring).
struct LogEntry {
  uint64_t seq = 0;
  uint32_t kind = 0;
  LogMark mark;
  const uint8_t* payload = nullptr;
  uint32_t len = 0;
};

class LogReader {
 public:
  // `ring`: the ring's memory on this backup (inside the log region).
  // `start`: the ring position and sequence number to read from (a
  // durable ring after a restart: its RingHeader's head and next_seq).
  LogReader(uint8_t* ring, uint32_t ring_bytes, uint32_t reclaim_every, uint64_t start_head = 0,
            uint64_t start_seq = 1);

  struct Polled {
    uint32_t applied = 0;
    bool report = false;     // send head() to the writer now
    bool corrupt = false;    // an entry from the future: stop
    uint64_t found_seq = 0;  // when corrupt: the sequence number found
  };
  // Eager reading (no durability): applies up to `max` complete entries
  // in order, zeroing each at once. `apply(seq, payload, len)` is called
  // for each data entry (a template: the appliers poll every ring on
  // every loop iteration, and a std::function could allocate per call).
  template <class Apply>
  Polled poll(Apply&& apply, uint32_t max) {
    Polled r;
    LogEntry e;
    uint64_t total = 0;
    while (r.applied < max && next_eager(&e, &total, &r)) {
      if (e.kind == kLogData) {
        last_mark_ = e.mark;
        apply(e.seq, e.payload, e.len);
        ++r.applied;
      }
      consume_eager(e, total);
    }
    end_eager(&r);
    return r;
  }

  // --- gated reading (durable logs) -----------------------------------------
  // The next complete data entry at the read cursor (wrap entries and gaps
  // before it are consumed on the way), or false. *corrupt: an entry from
  // the future sits there (then *found_seq is its sequence number).
  bool peek(LogEntry* out, bool* corrupt, uint64_t* found_seq = nullptr);
  // Takes the entry peek() returned: the cursor moves past it; the entry
  // stays in the ring until released. `tag` (not 0) is the caller's name
  // for it in releasable().
  void consume(uint64_t tag);
  // The highest decision watermark of the complete entries seen so far
  // (looking at most `max` more entries beyond the last one seen), or 0.
  uint64_t scan_decided(uint32_t max);
  // Consumed entries not released yet (wrap entries included).
  size_t unreleased() const { return taken_.size(); }
  // The tag given to consume() of the i-th oldest unreleased entry (0: a
  // wrap entry).
  uint64_t tag_at(size_t i) const { return taken_[i].tag; }
  // How many of the oldest consumed entries may be released: the longest
  // prefix whose tags `done` accepts (wrap entries always may).
  size_t releasable(const std::function<bool(uint64_t tag)>& done);
  // Where head() and next_seq() will be once `n` entries are released.
  void after_release(size_t n, uint64_t* head, uint64_t* seq) const;
  // Zeroes the `n` oldest consumed entries and moves head() past them.
  // Returns true when enough was freed since the last report to send one.
  bool release(size_t n);

  uint64_t head() const { return head_; }
  uint64_t next_seq() const { return next_seq_; }
  // Gated reading: the sequence number the cursor expects next.
  uint64_t cursor_seq() const { return cursor_seq_; }
  void reported() { reported_ = head_; }
  // Failover, the writer removed: moves past an entry that will never
  // arrive (its writer died between reserving it and writing it, while a
  // later entry of the same ring was written) to the next complete entry
  // after it, if any; true when it moved. Only for a ring nobody writes.
  bool skip_hole();
  // Eager reading: the mark of the entry poll() is applying (inside apply).
  const LogMark& last_mark() const { return last_mark_; }

 private:
  // What sits at ring position `pos` when `seq` is expected there.
  enum class At : uint8_t { kNone, kEntry, kGap, kCorrupt };
  At probe(uint64_t pos, uint64_t seq, LogEntry* e, uint64_t* total) const;
  // poll()'s steps: the next complete entry at the head, gaps skipped
  // (false at none, or at a corrupt one: then r->corrupt); zeroing it and
  // moving past it; the cursor and the report after the last.
  bool next_eager(LogEntry* e, uint64_t* total, Polled* r);
  void consume_eager(const LogEntry& e, uint64_t total);
  void end_eager(Polled* r);

  uint8_t* ring_;
  uint32_t bytes_;
  uint32_t reclaim_every_;
  uint64_t head_ = 0;  // monotonic byte position of the first entry not released
  uint64_t reported_ = 0;
  uint64_t next_seq_ = 1;  // the sequence number at head_
  LogMark last_mark_;
  // Gated reading: the cursor and the consumed, unreleased entries.
  uint64_t cursor_ = 0;
  uint64_t cursor_seq_ = 1;
  struct Taken {
    uint64_t pos;    // where it starts
    uint64_t bytes;  // image bytes to zero
    uint64_t next;   // the position after it (gaps included)
    uint64_t tag;    // the caller's (0: a wrap entry)
  };
  std::deque<Taken> taken_;
  size_t ready_ = 0;  // releasable(): the front entries known done
  uint64_t peeked_next_ = 0, peeked_bytes_ = 0;
  LogEntry peeked_entry_;
  bool peeked_ = false;
  // scan_decided(): where it stopped, and the best watermark seen.
  uint64_t scan_pos_ = 0, scan_seq_ = 1, scan_best_ = 0;
};

// Recovery: the complete data entries of a ring whose sequence number is
// at least `from_seq`, in sequence order (one per number), found wherever
// they start — an entry cut short by a crash hides where the next one
// begins, and later entries may be complete (coroutines log concurrently),
// so every 8-byte aligned position is tried. `ring` must stay unchanged
// while the payload pointers are used.
std::vector<LogEntry> scan_ring(const uint8_t* ring, uint32_t ring_bytes, uint64_t from_seq);

// Seal of a log entry image (also used by tests to forge torn images).
uint64_t log_entry_seal(uint32_t len, uint32_t kind, uint64_t seq, const LogMark& mark,
                        const void* payload);

}  // namespace drtmx::txn
