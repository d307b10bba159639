#include "txn/log/log_ring.h"

#include <cstring>

#include "base/hash.h"

namespace drtmx::txn {

namespace {
constexpr size_t kMinEntry = kLogHeaderBytes + kLogTrailerBytes;  // a wrap entry

struct Header {
  uint32_t len;
  uint32_t kind;
  uint64_t seq;
  uint64_t seal;
};
static_assert(sizeof(Header) == kLogHeaderBytes);

size_t image_bytes(uint32_t kind, uint32_t len) {
  return kind == kLogWrap ? kMinEntry : log_entry_bytes(len);
}

void build(uint8_t* at, uint32_t kind, uint64_t seq, const void* payload, uint32_t len) {
  const size_t total = image_bytes(kind, len);
  Header h{len, kind, seq, log_entry_seal(len, kind, seq, payload)};
  std::memcpy(at, &h, sizeof h);
  if (len > 0) std::memcpy(at + kLogHeaderBytes, payload, len);
  // Padding between payload and trailer is zero, so images are canonical.
  std::memset(at + kLogHeaderBytes + len, 0, total - kLogTrailerBytes - kLogHeaderBytes - len);
  const uint64_t trailer = len;
  std::memcpy(at + total - kLogTrailerBytes, &trailer, 8);
}
}  // namespace

uint64_t log_entry_seal(uint32_t len, uint32_t kind, uint64_t seq, const void* payload) {
  return hash_bytes(hash_mix(hash_mix(len, kind), seq), payload, len);
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

Result<int> LogWriter::prepare(const void* payload, uint32_t len, uint8_t* image,
                               Placement out[2]) {
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
  const uint64_t gap = end_pos != 0 && bytes_ - end_pos < kMinEntry ? bytes_ - end_pos : 0;
  const uint64_t room = bytes_ - (tail_ - head_);
  if (skip + need + gap > room) return 0;  // back-pressure: wait for a reclaim
  int n = 0;
  size_t img = 0;
  if (skip >= kMinEntry) {
    build(image, kLogWrap, ++seq_, nullptr, 0);
    out[n++] = {base_ + pos, static_cast<uint32_t>(kMinEntry), seq_};
    img = kMinEntry;
  }
  tail_ += skip;  // (a skip below kMinEntry cannot happen: see `gap`)
  const uint64_t at = tail_ & (bytes_ - 1);
  build(image + img, kLogData, ++seq_, payload, len);
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
  const uint64_t gap = end_pos != 0 && bytes_ - end_pos < kMinEntry ? bytes_ - end_pos : 0;
  return skip + need + gap <= bytes_ - (tail_ - head_);
}

void LogWriter::on_reclaimed(uint64_t head) {
  // Reports may arrive late or out of order; only move forward, never past
  // what was written.
  if (head > head_ && head <= tail_) head_ = head;
}

LogReader::LogReader(uint8_t* ring, uint32_t ring_bytes, uint32_t reclaim_every)
    : ring_(ring), bytes_(ring_bytes), reclaim_every_(reclaim_every ? reclaim_every : 1) {}

LogReader::Polled LogReader::poll(const Apply& apply, uint32_t max) {
  Polled r;
  while (r.applied < max) {
    const uint64_t pos = head_ & (bytes_ - 1);
    const uint64_t to_end = bytes_ - pos;
    if (to_end < kMinEntry) {
      head_ += to_end;  // the writer skipped this gap too
      continue;
    }
    uint8_t* at = ring_ + pos;
    Header h;
    std::memcpy(&h, at, sizeof h);
    if (h.kind != kLogData && h.kind != kLogWrap) break;  // empty or still arriving
    // An earlier entry's image, back after it was zeroed (see the header):
    // the expected entry has not arrived here yet.
    if (h.seq < next_seq_) break;
    const size_t total = image_bytes(h.kind, h.len);
    if (total > to_end) break;  // a length still arriving (or garbage): not complete
    uint64_t trailer = 0;
    std::memcpy(&trailer, at + total - kLogTrailerBytes, 8);
    if (trailer != h.len) break;
    if (log_entry_seal(h.len, h.kind, h.seq, at + kLogHeaderBytes) != h.seal) break;
    if (h.seq != next_seq_) {
      r.corrupt = true;
      r.found_seq = h.seq;
      break;
    }
    if (h.kind == kLogData) {
      apply(h.seq, at + kLogHeaderBytes, h.len);
      ++r.applied;
    }
    // Zero before the space can be reported free, so a later partial write
    // over it can never look complete with stale bytes.
    std::memset(at, 0, total);
    head_ += h.kind == kLogWrap ? to_end : total;
    ++next_seq_;
  }
  r.report = head_ - reported_ >= reclaim_every_;
  return r;
}

}  // namespace drtmx::txn
