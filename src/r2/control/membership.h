// Membership of a cluster that survives node failures: the configuration
// number (epoch), the live set, and why nodes left it.
//
// The coordinator (ControlServer, "survive failures" mode) is the only
// authority: it removes a node whose lease expired or whose connection
// closed, raises the epoch by one per removal, and tells every survivor
// (MembershipChange) and the removed node itself (Removed). Epoch 0 is the
// configuration the cluster started with: every node a member.
#pragma once

#include <atomic>
#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

namespace drtmx::r2 {

// The most nodes a cluster may have (FabricConfig::validate checks it).
constexpr uint16_t kMaxNodes = 256;

using NodeSet = std::bitset<kMaxNodes>;

// Nodes 64w .. 64w+63 of `set` as one word (bit b = node 64w + b): how
// live sets are kept in atomics (MembershipView, FenceWord).
inline uint64_t node_word(const NodeSet& set, uint16_t w) {
  uint64_t bits = 0;
  for (uint16_t b = 0; b < 64; ++b) {
    if (set.test(w * 64 + b)) bits |= uint64_t{1} << b;
  }
  return bits;
}

struct Removal {
  uint16_t node = 0;
  std::string reason;  // "lease expired: no renewal for 1234 ms", "disconnected ..."
};

// One configuration change, as the coordinator announced it.
struct MembershipChange {
  uint64_t epoch = 0;            // the new epoch (previous + 1)
  std::vector<uint16_t> live;    // members at `epoch`, ascending
  std::vector<Removal> removed;  // who left the configuration at `epoch`
};

// A node's current view of the membership, readable from any thread
// without locks: worker threads poll epoch() (one acquire load) and look at
// the live set only when it moved.
//
// One writer (the control client's thread) calls apply(); any number of
// readers. Writes are a seqlock: the sequence word is odd while the live
// words change; epoch_ is stored last with release, so a reader that loaded
// epoch() == E with acquire sees the live set of epoch E or a later one
// (never an older one). is_member() is a single relaxed load of one word:
// it may be one change behind a concurrent apply(), never torn.
class MembershipView {
 public:
  // Epoch 0, nodes 0..nodes-1 members.
  explicit MembershipView(uint16_t nodes);

  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  bool is_member(uint16_t node) const {
    return node < kMaxNodes &&
           ((live_[node / 64].load(std::memory_order_relaxed) >> (node % 64)) & 1) != 0;
  }

  struct Snapshot {
    uint64_t epoch = 0;
    NodeSet live;
  };
  // A consistent (epoch, live set) pair; retries while apply() runs.
  Snapshot snapshot() const;

  // Single writer. `epoch` must be above the current one (else ignored:
  // returns false).
  bool apply(uint64_t epoch, const NodeSet& live);

 private:
  std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> live_[kMaxNodes / 64] = {};
};

// "0, 1, 3" (for messages).
std::string node_list(const std::vector<uint16_t>& nodes);

}  // namespace drtmx::r2
