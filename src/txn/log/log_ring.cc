#include "txn/log/log_ring.h"

#include <algorithm>
#include <cstring>

#include "base/hash.h"

namespace drtmx::txn {

namespace {
struct Header {
  uint32_t len;
  uint32_t kind;  // low 8 bits: kind; bits 8..23: the transaction's entries; bit 24: self
  uint64_t seq;
  uint64_t txn;
  uint64_t decided;
  uint64_t seal;
};
static_assert(sizeof(Header) == kLogHeaderBytes);

uint32_t kind_of(uint32_t word) {
  return word & 0xff;
}

size_t image_bytes(uint32_t kind, uint32_t len) {
  return kind == kLogWrap ? kLogMinEntry : log_entry_bytes(len);
}

void build(uint8_t* at, uint32_t kind, uint64_t seq, const LogMark& m, const void* payload,
           uint32_t len) {
  const size_t total = image_bytes(kind, len);
  const uint32_t word = kind | (uint32_t{m.targets} << 8) | (uint32_t{m.self} << 24);
  Header h{len, word, seq, m.txn, m.decided, log_entry_seal(len, word, seq, m, payload)};
  std::memcpy(at, &h, sizeof h);
  if (len > 0) std::memcpy(at + kLogHeaderBytes, payload, len);
  // Padding between payload and trailer is zero, so images are canonical.
  std::memset(at + kLogHeaderBytes + len, 0, total - kLogTrailerBytes - kLogHeaderBytes - len);
  const uint64_t trailer = len;
  std::memcpy(at + total - kLogTrailerBytes, &trailer, 8);
}
}  // namespace

uint64_t log_entry_seal(uint32_t len, uint32_t kind, uint64_t seq, const LogMark& m,
                        const void* payload) {
  const uint64_t head = hash_mix(hash_mix(hash_mix(len, kind), seq), hash_mix(m.txn, m.decided));
  return hash_bytes(head, payload, len);
}

Status LogRingLayout::validate() const {
  if (nodes == 0 || threads == 0) return invalid_argument("log rings need nodes and threads");
  if (ring_bytes < 4096 || (ring_bytes & (ring_bytes - 1)) != 0) {
    return invalid_argument("--log-ring-bytes=" + std::to_string(ring_bytes) +
                            ": must be a power of two of at least 4096");
  }
  return Status::ok();
}

LogWriter::LogWriter(uint64_t ring_offset, uint32_t ring_bytes)
    : base_(ring_offset), bytes_(ring_bytes) {}

size_t LogWriter::max_payload() const {
  // Half the ring, so an entry always fits once the ring has drained.
  return bytes_ / 2 - kLogHeaderBytes - kLogTrailerBytes;
}

Result<int> LogWriter::prepare(const void* payload, uint32_t len, uint8_t* image, Placement out[2],
                               const LogMark& mark) {
  if (len > max_payload()) {
    return out_of_range("log entry of " + std::to_string(len) + " bytes exceeds " +
                        std::to_string(max_payload()) +
                        " (half a log ring); raise --log-ring-bytes or write less per "
                        "transaction");
  }
  const uint64_t need = log_entry_bytes(len);
  const uint64_t pos = tail_ & (bytes_ - 1);
  const uint64_t to_end = bytes_ - pos;
  const uint64_t skip = need > to_end ? to_end : 0;
  // A gap too small for an entry left behind this one is skipped at once,
  // exactly as the reader skips it after reading this entry, so the heads
  // it reports never run ahead of this tail.
  const uint64_t end_pos = (tail_ + skip + need) & (bytes_ - 1);
  const uint64_t gap = end_pos != 0 && bytes_ - end_pos < kLogMinEntry ? bytes_ - end_pos : 0;
  const uint64_t room = bytes_ - (tail_ - head_);
  if (skip + need + gap > room) return 0;  // back-pressure: wait for a reclaim
  int n = 0;
  size_t img = 0;
  if (skip >= kLogMinEntry) {
    build(image, kLogWrap, ++seq_, LogMark{}, nullptr, 0);
    out[n++] = {base_ + pos, static_cast<uint32_t>(kLogMinEntry), seq_};
    img = kLogMinEntry;
  }
  tail_ += skip;  // (a skip below kLogMinEntry cannot happen: see `gap`)
  const uint64_t at = tail_ & (bytes_ - 1);
  build(image + img, kLogData, ++seq_, mark, payload, len);
  out[n++] = {base_ + at, static_cast<uint32_t>(need), seq_};
  ++data_entries_;
  tail_ += need + gap;
  return n;
}

bool LogWriter::fits(uint32_t len) const {
  if (len > max_payload()) return true;  // prepare() reports the error
  const uint64_t need = log_entry_bytes(len);
  const uint64_t pos = tail_ & (bytes_ - 1);
  const uint64_t skip = need > bytes_ - pos ? bytes_ - pos : 0;
  const uint64_t end_pos = (tail_ + skip + need) & (bytes_ - 1);
  const uint64_t gap = end_pos != 0 && bytes_ - end_pos < kLogMinEntry ? bytes_ - end_pos : 0;
  return skip + need + gap <= bytes_ - (tail_ - head_);
}

void LogWriter::on_reclaimed(uint64_t head) {
  // Reports may arrive late or out of order; only move forward, never past
  // what was written.
  if (head > head_ && head <= tail_) head_ = head;
}

LogReader::LogReader(uint8_t* ring, uint32_t ring_bytes, uint32_t reclaim_every,
                     uint64_t start_head, uint64_t start_seq)
    : ring_(ring),
      bytes_(ring_bytes),
      reclaim_every_(reclaim_every ? reclaim_every : 1),
      head_(start_head),
      reported_(start_head),
      next_seq_(start_seq),
      cursor_(start_head),
      cursor_seq_(start_seq) {}

namespace {
// A complete entry (kind known, lengths agree, seal verifies) with a
// sequence number of at least `min_seq` at ring offset `pos`.
bool complete_at(const uint8_t* ring, uint32_t ring_bytes, uint64_t pos, uint64_t min_seq,
                 LogEntry* e, size_t* bytes, bool verified = false) {
  const uint64_t to_end = ring_bytes - pos;
  const uint8_t* at = ring + pos;
  Header h;
  std::memcpy(&h, at, sizeof h);
  const uint32_t kind = kind_of(h.kind);
  if (kind != kLogData && kind != kLogWrap) return false;  // empty or still arriving
  // An earlier entry's image, back after it was zeroed (see the header):
  // the expected entry has not arrived here yet.
  if (h.seq < min_seq) return false;
  *bytes = image_bytes(kind, h.len);
  if (*bytes > to_end) return false;  // a length still arriving (or garbage)
  uint64_t trailer = 0;
  std::memcpy(&trailer, at + *bytes - kLogTrailerBytes, 8);
  if (trailer != h.len) return false;
  const LogMark m{h.txn, h.decided, static_cast<uint16_t>(h.kind >> 8), ((h.kind >> 24) & 1) != 0};
  if (!verified && log_entry_seal(h.len, h.kind, h.seq, m, at + kLogHeaderBytes) != h.seal) {
    return false;
  }
  e->seq = h.seq;
  e->kind = kind;
  e->mark = m;
  e->payload = at + kLogHeaderBytes;
  e->len = h.len;
  return true;
}
}  // namespace

std::vector<LogEntry> scan_ring(const uint8_t* ring, uint32_t ring_bytes, uint64_t from_seq) {
  std::vector<LogEntry> out;
  for (uint64_t pos = 0; pos + kLogMinEntry <= ring_bytes; pos += 8) {
    LogEntry e;
    size_t bytes = 0;
    if (!complete_at(ring, ring_bytes, pos, from_seq, &e, &bytes)) continue;
    if (e.kind == kLogData) out.push_back(e);
    pos += bytes - 8;  // entries do not overlap
  }
  std::sort(out.begin(), out.end(),
            [](const LogEntry& a, const LogEntry& b) { return a.seq < b.seq; });
  out.erase(std::unique(out.begin(), out.end(),
                        [](const LogEntry& a, const LogEntry& b) { return a.seq == b.seq; }),
            out.end());
  return out;
}

bool LogReader::skip_hole() {
  const std::vector<LogEntry> later = scan_ring(ring_, bytes_, next_seq_ + 1);
  if (later.empty()) return false;
  const LogEntry& e = later.front();
  const uint64_t pos = static_cast<uint64_t>(e.payload - kLogHeaderBytes - ring_);
  const uint64_t cur = head_ & (bytes_ - 1);
  head_ += (pos + bytes_ - cur) & (bytes_ - 1);
  next_seq_ = e.seq;
  cursor_ = head_;
  cursor_seq_ = next_seq_;
  return true;
}

LogReader::At LogReader::probe(uint64_t pos_abs, uint64_t seq, LogEntry* e, uint64_t* total) const {
  const uint64_t pos = pos_abs & (bytes_ - 1);
  const uint64_t to_end = bytes_ - pos;
  if (to_end < kLogMinEntry) {
    *total = to_end;  // the writer skipped this gap too
    return At::kGap;
  }
  size_t bytes = 0;
  // scan_decided() verified every entry before scan_pos_ (and a complete
  // entry does not change until it is released): its seal need not be
  // computed again.
  const bool verified = pos_abs < scan_pos_ && pos_abs >= cursor_;
  if (!complete_at(ring_, bytes_, pos, seq, e, &bytes, verified)) return At::kNone;
  if (e->seq != seq) return At::kCorrupt;
  *total = e->kind == kLogWrap ? to_end : bytes;
  return At::kEntry;
}

bool LogReader::next_eager(LogEntry* e, uint64_t* total, Polled* r) {
  for (;;) {
    const At a = probe(head_, next_seq_, e, total);
    if (a == At::kGap) {
      head_ += *total;
      continue;
    }
    if (a == At::kCorrupt) {
      r->corrupt = true;
      r->found_seq = e->seq;
    }
    return a == At::kEntry;
  }
}

void LogReader::consume_eager(const LogEntry& e, uint64_t total) {
  // Zero before the space can be reported free, so a later partial write
  // over it can never look complete with stale bytes.
  std::memset(ring_ + (head_ & (bytes_ - 1)), 0, image_bytes(e.kind, e.len));
  head_ += total;
  ++next_seq_;
}

void LogReader::end_eager(Polled* r) {
  cursor_ = head_;
  cursor_seq_ = next_seq_;
  r->report = head_ - reported_ >= reclaim_every_;
}

bool LogReader::peek(LogEntry* out, bool* corrupt, uint64_t* found_seq) {
  *corrupt = false;
  if (peeked_) {
    // Verified before and not consumed: a complete entry does not change
    // until it is released (an applier waiting for its decision peeks it
    // on every poll; its seal is checked once).
    *out = peeked_entry_;
    return true;
  }
  for (;;) {
    uint64_t total = 0;
    const At a = probe(cursor_, cursor_seq_, out, &total);
    if (a == At::kGap) {
      // A gap belongs to the entry before it: fold it into that one's
      // release (or into the head when nothing is unreleased).
      if (taken_.empty()) {
        if (head_ == cursor_) head_ += total;
      } else {
        taken_.back().next += total;
      }
      cursor_ += total;
      continue;
    }
    if (a == At::kNone) return false;
    if (a == At::kCorrupt) {
      *corrupt = true;
      if (found_seq) *found_seq = out->seq;
      return false;
    }
    if (out->kind == kLogWrap) {
      taken_.push_back({cursor_, kLogMinEntry, cursor_ + total, 0});
      cursor_ += total;
      ++cursor_seq_;
      continue;
    }
    peeked_ = true;
    peeked_entry_ = *out;
    peeked_bytes_ = image_bytes(kLogData, out->len);
    peeked_next_ = cursor_ + total;
    return true;
  }
}

void LogReader::consume(uint64_t tag) {
  if (!peeked_) return;
  taken_.push_back({cursor_, peeked_bytes_, peeked_next_, tag});
  cursor_ = peeked_next_;
  ++cursor_seq_;
  peeked_ = false;
}

uint64_t LogReader::scan_decided(uint32_t max) {
  // Incremental: entries already looked at stay as they were until
  // released, so the scan goes on from where it stopped (from the cursor
  // when the cursor overtook it).
  if (scan_pos_ < cursor_) {
    scan_pos_ = cursor_;
    scan_seq_ = cursor_seq_;
  }
  for (uint32_t i = 0; i < max && scan_pos_ - head_ < bytes_;) {
    LogEntry e;
    uint64_t total = 0;
    const At a = probe(scan_pos_, scan_seq_, &e, &total);
    if (a == At::kGap) {
      scan_pos_ += total;
      continue;
    }
    if (a != At::kEntry) break;
    if (e.mark.decided > scan_best_) scan_best_ = e.mark.decided;
    scan_pos_ += total;
    ++scan_seq_;
    ++i;
  }
  return scan_best_;
}

size_t LogReader::releasable(const std::function<bool(uint64_t)>& done) {
  // An entry once done stays done: the prefix found before is not walked
  // again (releases are batched, so thousands may wait here).
  while (ready_ < taken_.size() && (taken_[ready_].tag == 0 || done(taken_[ready_].tag))) {
    ++ready_;
  }
  return ready_;
}

void LogReader::after_release(size_t n, uint64_t* head, uint64_t* seq) const {
  n = std::min(n, taken_.size());
  *head = n == 0 ? head_ : taken_[n - 1].next;  // gaps are folded into `next`
  *seq = next_seq_ + n;                         // one sequence number per entry
}

bool LogReader::release(size_t n) {
  for (size_t i = 0; i < n && !taken_.empty(); ++i) {
    const Taken t = taken_.front();
    taken_.pop_front();
    if (ready_ > 0) --ready_;
    std::memset(ring_ + (t.pos & (bytes_ - 1)), 0, t.bytes);
    head_ = t.next;
    ++next_seq_;
  }
  return head_ - reported_ >= reclaim_every_;
}

}  // namespace drtmx::txn
