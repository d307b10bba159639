#include "r2/verbs/rc_channel.h"

#include "r2/verbs/wr_id.h"

namespace drtmx::r2::verbs {

uint32_t round_up_pow2(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

RcChannel::RcChannel(NodeId peer, uint32_t depth)
    : peer_(peer),
      sq_(depth),
      slots_(round_up_pow2(sq_.depth())),
      mask_(static_cast<uint32_t>(slots_.size()) - 1),
      chain_(sq_.depth()) {}

PostOutcome RcChannel::post(const WorkRequest& wr, const ChannelTables& t) {
  const bool atomic = wr.verb == Verb::kCas || wr.verb == Verb::kFaa;
  const uint32_t len = atomic ? 8 : wr.len;
  const RegionEntry* region = t.regions->find(wr.remote.node, wr.remote.region);
  if (region == nullptr) return {PostResult::kOk, OpStatus::kBadRegion};
  auto rkey = t.rkeys->find(wr.remote.node, wr.remote.region, t.thread);
  if (!rkey) return {PostResult::kOk, OpStatus::kBadRegion};
  auto lkey = t.lkeys->find(wr.local, len);
  if (!lkey) return {PostResult::kOk, OpStatus::kBadLocalBuffer};
  if (!sq_.has_room() || chain_.full()) return {PostResult::kQueueFull, OpStatus::kOk};

  bool forced = false;
  const bool signaled = sq_.on_post(wr.signaled, &forced);
  const uint32_t seq = next_seq_++;
  Slot& s = slots_[seq & mask_];
  s = Slot{wr.wr_id, seq, wr.verb, true, wr.signaled, signaled, false};

  RcWrParams p;
  p.remote_addr = region->base + wr.remote.offset;
  p.rkey = *rkey;
  p.lkey = *lkey;
  p.signaled = signaled;
  p.ibv_wr_id = encode_wr_id({WrKind::kRc, forced ? kWrFlagForced : uint8_t{0}, peer_, seq});
  p.max_inline = t.max_inline;
  ibv_send_wr* w = chain_.next_wr();
  fill_rc_wr(wr, p, w, chain_.next_sge());
  chain_.commit();
  ++posted_;
  last_remote_addr_ = p.remote_addr;
  last_rkey_ = p.rkey;
  return {};
}

PostResult RcChannel::post_retire_marker() {
  if (retired_ == posted_) return PostResult::kOk;
  if (!sq_.has_room() || chain_.full()) return PostResult::kQueueFull;
  bool forced = false;
  (void)sq_.on_post(/*user_signaled=*/true, &forced);
  const uint32_t seq = next_seq_++;
  Slot& s = slots_[seq & mask_];
  // Not user-signaled: its completion is consumed, never reported.
  s = Slot{0, seq, Verb::kWrite, true, false, true, false};
  WorkRequest marker;
  marker.verb = Verb::kWrite;
  marker.len = 0;
  RcWrParams p;
  p.remote_addr = last_remote_addr_;
  p.rkey = last_rkey_;
  p.signaled = true;
  p.ibv_wr_id = encode_wr_id({WrKind::kRc, kWrFlagForced, peer_, seq});
  ibv_send_wr* w = chain_.next_wr();
  fill_rc_wr(marker, p, w, chain_.next_sge());
  w->num_sge = 0;  // zero bytes: no local buffer
  chain_.commit();
  ++posted_;
  return PostResult::kOk;
}

void RcChannel::on_post_failed(uint32_t first_bad) {
  for (uint32_t i = first_bad; i < chain_.size(); ++i) {
    WrTag tag;
    if (decode_wr_id(chain_.at(i).wr_id, &tag)) unposted_.push_back(tag.seq);
  }
  chain_.clear();
}

int RcChannel::drain_unposted(Completion* out, int max) {
  if (unposted_.empty()) return 0;
  uint32_t signaled_unposted = 0;
  for (uint32_t seq : unposted_) {
    const Slot& s = slots_[seq & mask_];
    if (s.live && s.seq == seq && s.sq_signaled) ++signaled_unposted;
  }
  if (sq_.pending_signals() > signaled_unposted) return 0;  // earlier ones in flight
  int n = 0;
  size_t i = 0;
  for (; i < unposted_.size() && n < max; ++i) {
    if (on_completion(unposted_[i], false, &out[n])) ++n;
  }
  unposted_.erase(unposted_.begin(), unposted_.begin() + static_cast<long>(i));
  return n;
}

void RcChannel::retire_through(uint32_t seq) {
  // FIFO: everything from the tail up to and including `seq` is done.
  while (static_cast<int32_t>(seq - tail_seq_) >= 0) {
    slots_[tail_seq_ & mask_].live = false;
    ++tail_seq_;
  }
  note_retired(seq);
}

void RcChannel::note_retired(uint32_t seq) {
  // posted_ and the seqs advance together: request number n has seq n - 1
  // (mod 2^32); requests up to `seq` are number retired_ + d + 1.
  const uint32_t d = seq - static_cast<uint32_t>(retired_);
  if (static_cast<int32_t>(d) >= 0) retired_ += uint64_t{d} + 1;
}

bool RcChannel::on_completion(uint32_t seq, bool ok, Completion* out) {
  Slot& s = slots_[seq & mask_];
  if (!s.live || s.seq != seq) {
    ++stale_;
    return false;
  }
  bool report = false;
  if (!ok) {
    report = !s.reported;
    s.reported = true;
  } else {
    report = s.user_signaled && !s.reported;
  }
  if (report) {
    out->wr_id = s.user_wr_id;
    out->status = ok ? OpStatus::kOk : OpStatus::kTransportError;
    out->verb = s.verb;
    out->peer = peer_;
  }
  if (s.sq_signaled) {
    sq_.on_signaled_completion();
    retire_through(seq);
  } else if (!ok) {
    note_retired(seq);  // flushed in error: the RNIC is done with it
  }
  return report;
}

}  // namespace drtmx::r2::verbs
