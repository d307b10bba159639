// Fencing of the data path by membership (survive-failures mode; see
// r2/README.md "Fencing" for what it does and does not guarantee).
//
// FenceWord: one node's published configuration — its epoch and the set of
// nodes it considers members. The shm backend puts it at the start of each
// node's message segment, so every peer maps it; verbs keeps it in local
// memory (its peers are fenced by the QPs instead). Lock-free atomics on
// plain 64-bit words: valid in memory shared between processes.
//
// Writer: one thread of the owner node (the control client's), through
// publish(). Ordering: the live words are stored (relaxed), then the epoch
// with release; a reader that acquire-loads an epoch sees live words at least
// as new as that epoch's. Configurations only shrink (a removal clears a
// bit), so a reader that sees newer live words than the epoch it loaded is
// only stricter, never wrong.
//
// FenceCheck: one endpoint's cached verdicts, used only by its worker
// thread. allowed(peer) costs the acquire loads of the owner's epoch and
// (shm) the peer's epoch — words that change only at a membership change,
// so they stay in the cache — and recomputes the verdict for that peer
// only when one of them moved.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "r2/control/membership.h"

namespace drtmx::r2 {

struct alignas(64) FenceWord {
  std::atomic<uint64_t> epoch{0};
  std::atomic<uint64_t> live[kMaxNodes / 64] = {};

  // Epoch 0, nodes 0..nodes-1 members. Before any peer can see the word.
  void init(uint16_t nodes);
  // Single writer: `live` replaces the live set, then `epoch` is published.
  // Ignored unless epoch is above the current one.
  void publish(uint64_t epoch, const NodeSet& live);
  bool member(uint16_t node) const {
    return node < kMaxNodes &&
           ((live[node / 64].load(std::memory_order_relaxed) >> (node % 64)) & 1) != 0;
  }
};

// One issuing thread's op window (shm, survive-failures mode): a counter on
// a cache line of its own in the issuer's message segment, which every peer
// maps; odd while the thread is inside enter()..leave() (FenceCheck). A
// survivor that removed the node publishes its FenceWord, then reads the
// removed node's gates: a thread whose gate is even either finished its op
// or will check the new word before its next one (the Dekker handshake in
// FenceCheck::enter and ShmFabric::apply_membership). Only the owner thread
// writes its gate.
struct alignas(64) OpGate {
  std::atomic<uint64_t> seq{0};
};

class FenceCheck {
 public:
  // `self`: this node; `own`: this node's word; `peers[n]`: node n's word
  // as mapped here, or nullptr when the backend does not check the
  // target's view (verbs: the target's QPs refuse instead).
  FenceCheck(uint16_t self, const FenceWord* own, std::vector<const FenceWord*> peers);
  FenceCheck() = default;

  // May this node's endpoint talk to `peer` now? False when this node was
  // removed, when `peer` is not a member in this node's view, or (shm) when
  // `peer`'s own word says this node is not a member.
  bool allowed(uint16_t peer) {
    if (own_ == nullptr) return true;
    const uint64_t own_epoch = own_->epoch.load(std::memory_order_acquire);
    const FenceWord* p = peers_[peer];
    const uint64_t peer_epoch = p != nullptr ? p->epoch.load(std::memory_order_acquire) : 0;
    if (own_epoch == 0 && peer_epoch == 0) return true;  // the first configuration
    Cached& c = cache_[peer];
    if (c.own_epoch != own_epoch || c.peer_epoch != peer_epoch)
      refresh(peer, own_epoch, peer_epoch);
    return c.allowed;
  }
  // Is `node` a member in this node's own view (messages from it are kept)?
  bool member(uint16_t node) const { return own_ == nullptr || own_->member(node); }
  uint64_t own_epoch() const {
    return own_ == nullptr ? 0 : own_->epoch.load(std::memory_order_acquire);
  }

  // Survive-failures mode on shm: the ops of this thread between enter()
  // and leave() are announced in `gate` (see OpGate). Unarmed, both are
  // no-ops.
  void arm(OpGate* gate) { gate_ = gate; }
  // Before the allowed() checks of ops that change a peer's memory. The
  // seq_cst fence orders the gate's store before the epoch loads of
  // allowed(): a survivor that published a new epoch and then (after its
  // own seq_cst fence) read this gate even knows that this thread's next
  // check sees the new epoch.
  void enter() {
    if (gate_ == nullptr) return;
    gate_->seq.store(gate_->seq.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  // After the ops' stores: release, so a survivor that acquires the even
  // value sees everything they wrote.
  void leave() {
    if (gate_ == nullptr) return;
    gate_->seq.store(gate_->seq.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

 private:
  struct Cached {
    uint64_t own_epoch = 0, peer_epoch = 0;
    bool allowed = true;
  };
  void refresh(uint16_t peer, uint64_t own_epoch, uint64_t peer_epoch);

  uint16_t self_ = 0;
  const FenceWord* own_ = nullptr;
  std::vector<const FenceWord*> peers_;
  std::vector<Cached> cache_;
  OpGate* gate_ = nullptr;
};

}  // namespace drtmx::r2
