#include "r2/shm/shm_endpoint.h"

#include <libpmem.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "r2/common/clock.h"

namespace drtmx::r2::shm {
namespace {
// How much of a READ's source the doorbell prefetches (the rest streams in
// behind the copy).
constexpr uintptr_t kPrefetchBytes = 2048;
// Dirty page ranges a channel remembers before it msyncs them early (a
// channel that writes many scattered pages and never READs).
constexpr size_t kMaxDirtyRanges = 64;
constexpr uintptr_t kPage = 4096;
}  // namespace

ShmEndpoint::ShmEndpoint(const FabricConfig& cfg, ThreadId thread, const RegionTable* table,
                         uint32_t max_op_bytes)
    : table_(table),
      self_(cfg.node),
      thread_(thread),
      nodes_(cfg.num_nodes),
      threads_(cfg.threads),
      depth_(cfg.send_queue_depth),
      mtu_(cfg.mtu),
      ring_bytes_(cfg.ring_bytes),
      max_op_bytes_(max_op_bytes),
      delay_ns_(cfg.delay_ns) {
  channels_.reserve(nodes_);
  for (uint16_t n = 0; n < nodes_; ++n) channels_.emplace_back(depth_);
  cq_.resize(static_cast<size_t>(nodes_) * depth_);
  pending_per_peer_.assign(nodes_, 0);
  read_from_.assign(nodes_, 1);
}

void ShmEndpoint::attach_rings(const std::vector<uint8_t*>& msg_segments) {
  const size_t stride = ring_stride(ring_bytes_);
  writers_.clear();
  readers_.clear();
  for (NodeId n = 0; n < nodes_; ++n) {
    for (ThreadId t = 0; t < threads_; ++t) {
      // To (n, t): the ring for sender (me) in n's segment, receiver t.
      uint8_t* out = msg_segments[n] + ring_index(nodes_, threads_, t, self_, thread_) * stride;
      writers_.emplace_back(out, ring_bytes_);
      // From (n, t): the ring for sender (n, t) in my segment, receiver me.
      uint8_t* in = msg_segments[self_] + ring_index(nodes_, threads_, thread_, n, t) * stride;
      readers_.emplace_back(in, ring_bytes_);
    }
  }
}

PostResult ShmEndpoint::post(const WorkRequest& wr) {
  OpStatus st = table_->check(wr, max_op_bytes_, &local_hint_);
  if (st != OpStatus::kOk) {
    errors_.push_back({wr.wr_id, st, wr.verb, wr.remote.node});
    return PostResult::kOk;
  }
  Channel& ch = channels_[wr.remote.node];
  if (!ch.sq.has_room()) return PostResult::kQueueFull;
  bool forced = false;
  bool signal = ch.sq.on_post(wr.signaled, &forced);
  ch.queued.push_back({wr, signal, forced});
  ++ch.posted;
  return PostResult::kOk;
}

void ShmEndpoint::after_persistent_write(Channel& ch, Persistence mode, uint8_t* p, uint32_t len) {
  if (mode == Persistence::kMsync) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(p) & ~(kPage - 1);
    const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + len + kPage - 1) & ~(kPage - 1);
    ++pstats_.dirty_writes;
    if (!ch.dirty.empty() && b <= ch.dirty.back().end && e >= ch.dirty.back().begin) {
      DirtyRange& last = ch.dirty.back();  // overlaps or touches: extend
      last.begin = std::min(last.begin, b);
      last.end = std::max(last.end, e);
      return;
    }
    if (ch.dirty.size() == kMaxDirtyRanges && !sync_dirty(ch)) ch.persist_failed = true;
    ch.dirty.push_back({b, e});
    return;
  }
  // kPmem / kMemFs: the issuer's CPU writes the lines back (clwb or
  // clflushopt); the fence comes with the channel's next READ.
  pmem_flush(p, len);
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
  pstats_.flushed_lines += (reinterpret_cast<uintptr_t>(p) + len - first + 63) / 64;
  ++pstats_.flushed_writes;
  ch.unfenced = true;
}

void ShmEndpoint::write_persistent(Channel& ch, uint8_t* p, const uint8_t* from, uint32_t len) {
  // kPmem / kMemFs: the issuer's CPU stores with non-temporal stores (the
  // lines go to memory without being read into the cache, and need no
  // write-back afterwards); libpmem stores the unaligned head and tail with
  // plain stores and flushes their lines. Either way the channel's next
  // READ fences them (sfence), as an RNIC's READ would.
  pmem_memcpy(p, from, len, PMEM_F_MEM_NONTEMPORAL | PMEM_F_MEM_NODRAIN);
  const uintptr_t first = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
  pstats_.flushed_lines += (reinterpret_cast<uintptr_t>(p) + len - first + 63) / 64;
  ++pstats_.flushed_writes;
  ch.unfenced = true;
}

bool ShmEndpoint::sync_dirty(Channel& ch) {
  bool ok = true;
  for (const DirtyRange& d : ch.dirty) {
    ++pstats_.msyncs;
    if (pmem_msync(reinterpret_cast<void*>(d.begin), d.end - d.begin) != 0) {
      ++pstats_.msync_errors;
      ok = false;
    }
  }
  ch.dirty.clear();
  return ok;
}

bool ShmEndpoint::make_durable(Channel& ch) {
  if (ch.unfenced) {
    pmem_drain();
    ++pstats_.fences;
    ch.unfenced = false;
  }
  if (!ch.dirty.empty() && !sync_dirty(ch)) ch.persist_failed = true;
  // Sticky, as an RNIC's queue pair in the error state: the pages that
  // failed may be any coroutine's on this channel, so every later flushing
  // READ on it fails too — never one that only came after the failure and
  // found the channel clean.
  return !ch.persist_failed;
}

void ShmEndpoint::execute(NodeId peer, Channel& ch, const Queued& q) {
  const WorkRequest& wr = q.wr;
  const RegionEntry* r = table_->find(peer, wr.remote.region);
  auto* remote = reinterpret_cast<uint8_t*>(r->base + wr.remote.offset);
  switch (wr.verb) {
    case Verb::kRead:
      std::memcpy(wr.local, remote, wr.len);
      break;
    case Verb::kWrite:
      if (r->persistence == Persistence::kPmem || r->persistence == Persistence::kMemFs) {
        write_persistent(ch, remote, static_cast<const uint8_t*>(wr.local), wr.len);
        break;
      }
      std::memcpy(remote, wr.local, wr.len);
      if (r->persistence != Persistence::kNone) {
        after_persistent_write(ch, r->persistence, remote, wr.len);
      }
      break;
    case Verb::kCas: {
      uint64_t expected = wr.compare;
      __atomic_compare_exchange_n(reinterpret_cast<uint64_t*>(remote), &expected, wr.operand, false,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      *static_cast<uint64_t*>(wr.local) = expected;  // the old value, as an RNIC returns it
      break;
    }
    case Verb::kFaa:
      *static_cast<uint64_t*>(wr.local) =
          __atomic_fetch_add(reinterpret_cast<uint64_t*>(remote), wr.operand, __ATOMIC_SEQ_CST);
      break;
  }
}

bool ShmEndpoint::execute_local(const WorkRequest& wr, OpStatus* st) {
  const NodeId peer = wr.remote.node;
  if (peer >= nodes_) return false;
  Channel& ch = channels_[peer];
  if (!ch.queued.empty()) return false;  // behind the queued ops, in order
  *st = table_->check(wr, max_op_bytes_, &local_hint_);
  if (*st != OpStatus::kOk) return true;
  if (!fence_.allowed(peer)) {
    *st = OpStatus::kFenced;
    return true;
  }
  // What other threads published before is visible to this op.
  std::atomic_thread_fence(std::memory_order_acquire);
  if (wr.verb == Verb::kRead) {
    // READs after READs stay pending together, so their misses overlap: no
    // READ changes what another reads (as at a doorbell, where only a
    // non-READ op copies the channel's pending READs first).
    if ((ch.unfenced || ch.persist_failed || !ch.dirty.empty()) && !make_durable(ch)) {
      *st = OpStatus::kTransportError;
      return true;
    }
    defer_read(peer, wr);
    return true;
  }
  if (pending_per_peer_[peer] != 0) copy_pending(peer);  // FIFO on the channel
  execute(peer, ch, Queued{wr, false, false});
  std::atomic_thread_fence(std::memory_order_release);
  return true;
}

void ShmEndpoint::finish_local() {
  if (pending_per_peer_[self_] != 0) copy_pending(self_);
}

void ShmEndpoint::defer_read(NodeId peer, const WorkRequest& wr) {
  // Asynchronous: prefetch now, copy later (see the header).
  const RegionEntry* r = table_->find(peer, wr.remote.region);
  const auto* from = reinterpret_cast<const uint8_t*>(r->base + wr.remote.offset);
  const uintptr_t first = reinterpret_cast<uintptr_t>(from) & ~uintptr_t{63};
  const uintptr_t end = reinterpret_cast<uintptr_t>(from) + wr.len;
  for (uintptr_t line = first; line < end && line < first + kPrefetchBytes; line += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(line), 0);
  }
  pending_.push_back({peer, from, wr.local, wr.len});
  ++pending_per_peer_[peer];
}

void ShmEndpoint::copy_pending(NodeId peer) {
  // The sources were written by other processes' threads: see everything
  // they published before (their release fences / atomics).
  std::atomic_thread_fence(std::memory_order_acquire);
  size_t keep = 0;
  for (size_t i = 0; i < pending_.size(); ++i) {
    const PendingRead& p = pending_[i];
    if (peer == kAnyPeer || p.peer == peer) {
      std::memcpy(p.to, p.from, p.len);
      --pending_per_peer_[p.peer];
    } else {
      pending_[keep++] = p;
    }
  }
  pending_.resize(keep);
}

void ShmEndpoint::push_cqe(const Cqe& e) {
  cq_[(cq_head_ + cq_count_) % cq_.size()] = e;
  ++cq_count_;
}

void ShmEndpoint::doorbell(NodeId peer) {
  if (peer >= nodes_) return;
  Channel& ch = channels_[peer];
  if (ch.queued.empty()) return;
  // Everything this thread wrote before the doorbell is visible to the
  // executed ops; everything they wrote is visible before the completions.
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t visible = delay_ns_ != 0 ? now_ns() + delay_ns_ : 0;
  // The targets of the WRITEs and atomics, requested for writing before
  // the first runs: their misses overlap, as an RNIC works on a doorbell's
  // ops at once (READs are prefetched as they are deferred). Not for
  // persistent regions, whose WRITEs store non-temporally.
  if (ch.queued.size() > 1) {
    for (const Queued& q : ch.queued) {
      if (q.wr.verb == Verb::kRead) continue;
      const RegionEntry* r = table_->find(peer, q.wr.remote.region);
      if (r == nullptr || r->persistence != Persistence::kNone) continue;
      const uint8_t* at = reinterpret_cast<const uint8_t*>(r->base + q.wr.remote.offset);
      const uintptr_t first = reinterpret_cast<uintptr_t>(at) & ~uintptr_t{63};
      const uintptr_t end = reinterpret_cast<uintptr_t>(at) + q.wr.len;
      for (uintptr_t line = first; line < end && line < first + kPrefetchBytes; line += 64) {
        __builtin_prefetch(reinterpret_cast<const void*>(line), 1);
      }
    }
  }
  // Survive-failures mode: the ops below run inside this thread's op
  // window, which a survivor that removes this node waits out (OpGate).
  fence_.enter();
  for (const Queued& q : ch.queued) {
    ++ch.executed;  // (its buffers are used below, or never)
    // Membership, checked for every op just before it touches the target:
    // a node removed meanwhile (in either view) gets kFenced, nothing done.
    if (!fence_.allowed(peer)) {
      const Completion fenced{q.wr.wr_id, OpStatus::kFenced, q.wr.verb, peer};
      if (q.signal) {
        push_cqe({fenced, visible, false});
      } else {
        errors_.push_back(fenced);
      }
      continue;
    }
    if (q.wr.verb == Verb::kRead) {
      // The flushing READ: the channel's earlier WRITEs into persistent
      // regions become durable before this READ can complete.
      if ((ch.unfenced || ch.persist_failed || !ch.dirty.empty()) && !make_durable(ch)) {
        const Completion failed{q.wr.wr_id, OpStatus::kTransportError, q.wr.verb, peer};
        if (q.signal) {
          push_cqe({failed, visible, false});
        } else {
          errors_.push_back(failed);
        }
        continue;
      }
      if (pending_per_peer_[peer] == 0) ch.clean = ch.executed - 1;
      defer_read(peer, q.wr);
    } else {
      if (pending_per_peer_[peer] != 0) copy_pending(peer);  // FIFO on the channel
      execute(peer, ch, q);
    }
    if (q.signal) push_cqe({{q.wr.wr_id, OpStatus::kOk, q.wr.verb, peer}, visible, q.forced});
  }
  std::atomic_thread_fence(std::memory_order_release);
  fence_.leave();
  ch.queued.clear();
}

int ShmEndpoint::poll(Completion* out, int max) {
  if (!pending_.empty()) copy_pending(kAnyPeer);
  int n = 0;
  while (errors_head_ < errors_.size() && n < max) out[n++] = errors_[errors_head_++];
  if (errors_head_ == errors_.size() && errors_head_ != 0) {
    errors_.clear();
    errors_head_ = 0;
  }
  uint64_t now = 0;
  while (cq_count_ > 0 && n < max) {
    const Cqe& e = cq_[cq_head_];
    if (e.visible_at != 0) {
      if (now < e.visible_at) now = now_ns();
      if (now < e.visible_at) break;
    }
    channels_[e.c.peer].sq.on_signaled_completion();
    if (!e.forced) out[n++] = e.c;
    cq_head_ = (cq_head_ + 1) % cq_.size();
    --cq_count_;
  }
  return n;
}

uint64_t ShmEndpoint::posted(NodeId peer) const {
  return peer < nodes_ ? channels_[peer].posted : 0;
}

uint64_t ShmEndpoint::retired(NodeId peer) const {
  if (peer >= nodes_) return 0;
  const Channel& ch = channels_[peer];
  return pending_per_peer_[peer] == 0 ? ch.executed : ch.clean;
}

void ShmEndpoint::retire_posted(NodeId peer) {
  if (peer < nodes_ && pending_per_peer_[peer] != 0) copy_pending(peer);
}

uint32_t ShmEndpoint::outstanding(NodeId peer) const {
  return peer < nodes_ ? channels_[peer].sq.used() : 0;
}

SendResult ShmEndpoint::send(NodeId node, ThreadId thread, const void* msg, uint32_t len) {
  if (node >= nodes_ || thread >= threads_) return SendResult::kBadPeer;
  if (len > mtu_) return SendResult::kTooLarge;
  if (!fence_.allowed(node)) return SendResult::kFenced;
  const uint32_t w = static_cast<uint32_t>(node) * threads_ + thread;
  RingWriter& rw = writers_[w];
  const bool was_dirty = rw.dirty();
  const uint64_t visible = delay_ns_ != 0 ? now_ns() + delay_ns_ : 0;
  if (!rw.append(msg, len, visible)) return SendResult::kNoSpace;
  if (!was_dirty) dirty_writers_.push_back(w);
  return SendResult::kOk;
}

void ShmEndpoint::flush_sends() {
  for (uint32_t w : dirty_writers_) writers_[w].publish();
  dirty_writers_.clear();
}

int ShmEndpoint::poll_messages(Message* out, int max) {
  for (uint32_t r : touched_readers_) readers_[r].release();
  touched_readers_.clear();
  const uint64_t now = delay_ns_ != 0 ? now_ns() : 0;
  if (const uint64_t e = fence_.own_epoch(); e != msg_epoch_) {
    // A membership change: stop reading the rings of non-members (and all
    // of them if this node was removed). What they hold is dropped unread.
    msg_epoch_ = e;
    for (NodeId n = 0; n < nodes_; ++n) {
      read_from_[n] = fence_.member(self_) && fence_.member(n) ? 1 : 0;
    }
  }
  const uint32_t rings = static_cast<uint32_t>(readers_.size());
  int n = 0;
  for (uint32_t i = 0; i < rings && n < max; ++i) {
    uint32_t r = next_reader_ + i;
    if (r >= rings) r -= rings;
    if (!read_from_[r / threads_]) continue;
    RingReader& rr = readers_[r];
    bool touched = false;
    while (n < max) {
      uint32_t len = 0;
      const uint8_t* p = rr.next(&len, now);
      if (p == nullptr) break;
      out[n++] = {static_cast<NodeId>(r / threads_), static_cast<ThreadId>(r % threads_), len, p};
      touched = true;
    }
    if (touched) touched_readers_.push_back(r);
  }
  if (++next_reader_ >= rings) next_reader_ = 0;
  return n;
}

}  // namespace drtmx::r2::shm
