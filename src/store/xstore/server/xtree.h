// XTree: the XStore owner's concurrent B+tree over 64-bit keys, whose leaves
// live in a registered region in the format of store/xstore/leaf.h so that
// clients can READ them one-sided (thesis-spec §4.3, §4.7).
//
// Shape. Inner nodes are ordinary heap memory (never read remotely); the
// lowest inner level points at leaves by ALN (leaf number). Leaves are an
// array of `leaf_capacity` slots at `leaf_offset` in region `region`,
// handed out by a bump allocator (the "leaf slab") and never freed: a leaf
// emptied by deletes stays in the chain. Leaf 0 is the first (leftmost)
// leaf and covers keys from 0. Leaves form a chain by NXT in key order.
//
// Leaf contents (owner writes, under the leaf's lock; see leaf.h):
//   insert  appends the pair at slot `count`, then reseals;
//   full    -> split: the fanout+1 pairs are sorted, the lower half stays
//             (rewritten in key order at slots [0, m)), the upper half goes
//             to a fresh right sibling from the slab, the old leaf's
//             incarnation is bumped and its NXT points to the sibling; the
//             split key goes into the parent; a SplitEvent is logged;
//             when the new key is above every key of the leaf (appends),
//             the leaf keeps all its pairs untouched and the sibling starts
//             with the new key alone (separator = that key), so ascending
//             inserts fill leaves instead of leaving them half empty;
//             when it comes right after the key the leaf took last (an
//             ascending run below keys of another range), the split falls
//             right above it: the run keeps the left leaf, the keys above
//             go to the sibling;
//   delete  moves the last pair into the hole, count - 1, reseal;
//   update  rewrites the value slot in place (value seal).
// A value slot that no key uses any more (after a delete or a split) gets a
// seal that never verifies, so a client holding an older key image that
// READs it sees "torn" and re-reads the leaf rather than a dead value.
// Unused key words are zero.
//
// Order of the writes, for one-sided readers (each step is made visible
// after the previous one: x86 stores are ordered, and a release fence
// stands between steps for the compiler):
//   1. value slots (each with its own seal), 2. key words, 3. meta, 4. the
//   keys seal. A reader that sees a verifying keys seal saw one complete
//   image; the value slots it names were written before it.
//
// Concurrency on the owner (several worker threads; no HTM): optimistic
// lock coupling. Every inner node and every leaf has a version word
// (bit 0 = locked; a writer's unlock adds 2). Readers remember the version,
// read, and re-check it; on a change they restart from the root. Writers
// lock (CAS) only the nodes they change: a leaf for insert/update/delete,
// plus its parent for a split; inner nodes that are full are split on the
// way down (parent and node locked), so a leaf split always finds room in
// its parent. Nothing is ever freed, so no reclamation scheme is needed.
// An insert first tries the leaf the previous insert went into (finger_):
// under that leaf's lock its range is [low, low of NXT) exactly, so when
// the key is in it and the leaf has room the pair goes there without a
// descent (try_insert_at_finger).
// Leaf locks are owner-side only (ordinary memory); remote readers rely on
// the seals alone. Critical sections are a few hundred ns: a writer that
// finds a lock taken spins with pause, then yields the CPU.
//
// Thread safety: every public member may be called from any number of
// threads concurrently, except the constructor/create and the destructor.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "store/xstore/leaf.h"
#include "store/xstore/server/xstatus.h"

namespace drtmx::store::xstore {

// Where a tree's leaves are: all a client needs to compute a leaf's or a
// value slot's remote address. Plain data; also sent by kRpcDescribe.
struct LeafArea {
  r2::RegionId region = 0;
  uint64_t leaf_offset = 0;    // offset in the region of leaf 0
  uint32_t fanout = 16;        // key slots per leaf, 1 .. kMaxFanout (>= 3)
  uint32_t value_bytes = 8;    // inline value size (8 for secondary indexes)
  uint32_t leaf_capacity = 0;  // number of leaf slots

  size_t leaf_size() const { return leaf_bytes(fanout, value_bytes); }
  // Bytes of the area: leaf_capacity * leaf_size().
  size_t bytes() const { return size_t{leaf_capacity} * leaf_size(); }
  uint64_t leaf_addr(uint32_t aln) const { return leaf_offset + uint64_t{aln} * leaf_size(); }
  // Region offset of value slot i of leaf aln.
  uint64_t value_addr(uint32_t aln, uint32_t i) const {
    return leaf_addr(aln) + value_slot_offset(fanout, value_bytes, i);
  }
};

// One leaf of a training run (thesis-spec §4.5 TRAIN_SUBMODEL): the leaf's
// physical number, the incarnation and count of the image the keys come
// from, its key range, and its keys in ascending order.
struct LeafRun {
  uint32_t aln = 0;
  uint32_t incarnation = 0;
  uint32_t count = 0;      // == keys.size()
  uint64_t low = 0;        // fence: every key of the leaf is >= low
  uint64_t high = 0;       // fence: every key is < high, unless last_leaf
  bool last_leaf = false;  // no right sibling: the leaf covers [low, 2^64)
  std::vector<uint64_t> keys;
};

// A split, as logged for retraining (thesis-spec §4.7): the keys in
// [lo, hi] (inclusive) moved or may have moved; `left` kept the lower half
// (incarnation bumped), `right` is the new sibling. hi = UINT64_MAX when the
// right leaf is the last one.
struct SplitEvent {
  uint64_t seq = 0;  // 1, 2, 3, ... in the order splits were published
  uint64_t lo = 0;
  uint64_t hi = 0;
  uint32_t left = 0;
  uint32_t right = 0;
};

// Separators an inner node can hold (children = separators + 1).
constexpr uint32_t kMaxInnerKeys = 32;

struct XTreeOptions {
  LeafArea area;
  // Separators per inner node before it splits, 2 .. kMaxInnerKeys. Small
  // values make deep trees (tests of concurrent inner splits).
  uint32_t inner_keys = kMaxInnerKeys;
  // Split events kept for splits_since(); older ones are reported as lost.
  uint32_t split_log_capacity = 4096;
  // Backs [offset, offset + bytes) of the region before leaves there are
  // used (store/heap.h, HeapOptions::grow): leaves are backed in extents
  // (an eighth of those backed, at least 64 KiB) as splits need them, so
  // the area is address space and memory follows the leaves in use. Null:
  // the whole area is backed already.
  std::function<Status(uint64_t offset, uint64_t bytes)> grow;

  Status validate(size_t region_bytes) const;
};

struct XTreeStats {
  uint64_t leaves_used = 0;
  uint64_t splits = 0;
  uint64_t inner_nodes = 0;
  uint64_t restarts = 0;  // optimistic reads or lock upgrades that restarted
};

class XTree {
 public:
  // `region_base` is this node's local mapping of options.area.region (of
  // `region_bytes` bytes). Formats leaf 0 (empty); every other leaf is
  // zeroed when it is first allocated. Fails with kInvalidArgument naming
  // the bad option, or with what options.grow returned for leaf 0.
  static Result<std::unique_ptr<XTree>> create(uint8_t* region_base, size_t region_bytes,
                                               const XTreeOptions& options);
  ~XTree();
  XTree(const XTree&) = delete;
  XTree& operator=(const XTree&) = delete;

  const LeafArea& area() const { return opt_.area; }
  uint32_t value_bytes() const { return opt_.area.value_bytes; }

  // --- key/value operations (any thread) -----------------------------------
  // `value` / `out` hold exactly value_bytes() bytes.
  // With aln/incarnation given, they receive the leaf that covered the key
  // (whether present or not) in the image the answer comes from.
  XStatus get(uint64_t key, void* out, uint32_t* aln = nullptr,
              uint32_t* incarnation = nullptr) const;
  // Inserts; with upsert, an existing key's value is overwritten instead of
  // failing with kAlreadyExists. kOutOfLeaves leaves the tree unchanged.
  XStatus insert(uint64_t key, const void* value, bool upsert = false);
  XStatus update(uint64_t key, const void* value);
  // Update with a client's position hint: if leaf `aln` still has
  // `incarnation` and holds the key, the value is written there without a
  // traversal (*hint_used = true); otherwise the normal path runs.
  XStatus update_hinted(uint64_t key, const void* value, uint32_t aln, uint32_t incarnation,
                        bool* hint_used);
  XStatus remove(uint64_t key);

  // Up to `n` pairs with key >= start, ascending, following NXT across
  // leaves. Not atomic across leaves (thesis-spec §4.6): a pair inserted or
  // deleted concurrently may or may not appear; each leaf is a consistent
  // image. `keys` is cleared and filled; `values` gets value_bytes() bytes
  // per key. Returns true when the scan reached the end of the last leaf
  // (the tree held no further key when that leaf was read; always so when
  // fewer than n pairs came back); false when it stopped with n pairs
  // before the end. `until`: pairs with a key above it are left out, and
  // the scan ends (true) at the first leaf that holds one — a bounded
  // range reads no leaf past its end.
  bool scan(uint64_t start, size_t n, std::vector<uint64_t>& keys, std::vector<uint8_t>& values,
            uint64_t until = UINT64_MAX) const;

  // Where a key lives now (for GET replies): the leaf that covers it and
  // that leaf's incarnation.
  void locate(uint64_t key, uint32_t* aln, uint32_t* incarnation) const;

  // --- training data (any thread) ------------------------------------------
  // The leaves that cover [lo, hi], in key order: from the leaf covering lo
  // through the leaf covering hi, at most max_leaves of them. Each leaf is a
  // consistent image; the run as a whole is not a snapshot (a concurrent
  // split shows up as an incarnation mismatch later, see §4.7). When the run
  // was cut by max_leaves, *next_lo (if given) is the low fence of the
  // first leaf not returned (> 0); 0 when the run is complete.
  std::vector<LeafRun> export_range(uint64_t lo, uint64_t hi, size_t max_leaves = SIZE_MAX,
                                    uint64_t* next_lo = nullptr) const;
  std::vector<LeafRun> export_all() const { return export_range(0, UINT64_MAX); }

  // --- retraining hooks ----------------------------------------------------
  // Split events with seq > since, oldest first, at most max. *next is the
  // seq to pass next time; *lost is true when events after `since` were
  // dropped from the bounded log (the consumer should retrain everything).
  std::vector<SplitEvent> splits_since(uint64_t since, size_t max, uint64_t* next,
                                       bool* lost) const;
  // Seq of the newest split published (0 = none).
  uint64_t split_seq() const;

  XTreeStats stats() const;
  // Why the last split found no leaf (XStatus::kOutOfLeaves): the address
  // space is used up, or the host could not back more leaves.
  std::string grow_error() const;
  // Bytes of leaves backed so far.
  uint64_t backed_bytes() const {
    std::lock_guard<std::mutex> g(leaf_mu_);
    return uint64_t{backed_leaves_} * opt_.area.leaf_size();
  }

 private:
  struct Inner;
  struct LeafCtl;
  struct Path;
  // The words of one leaf as read (optimistically or under its lock).
  struct LeafImage {
    LeafMeta meta{};
    uint32_t count = 0;                     // min(meta.count, fanout)
    std::array<uint64_t, kMaxFanout> keys;  // [0, count) filled
  };
  // A leaf image plus the values of the slots whose key is >= a bound.
  struct LeafSnap {
    LeafImage img;
    std::vector<uint32_t> order;  // selected slots
    std::vector<uint8_t> values;  // their values, in `order`
  };
  struct Attempt {
    bool done;
    XStatus status;
  };

  XTree(uint8_t* region_base, const XTreeOptions& options);
  uint8_t* leaf_ptr(uint32_t aln) const { return base_ + opt_.area.leaf_addr(aln); }
  Inner* new_inner();

  // Optimistic descent to the leaf covering key; false = restart.
  bool find_leaf(uint64_t key, Path& p) const;
  LeafImage read_leaf_words(uint32_t aln) const;
  static int find_slot(const LeafImage& img, uint64_t key);
  bool snapshot_leaf(uint32_t aln, uint64_t from, LeafSnap& s) const;

  Attempt try_insert(uint64_t key, const void* value, bool upsert);
  // The insert into the leaf of the last insert (finger_), without a
  // descent: done when that leaf, locked, covers the key and has room.
  Attempt try_insert_at_finger(uint64_t key, const void* value, bool upsert);
  // Caller holds leaf aln's lock: the key goes into it (`img` as read under
  // the lock) when it has room or holds the key; not done when it is full.
  Attempt insert_into_locked_leaf(uint32_t aln, const LeafImage& img, uint64_t key,
                                  const void* value, bool upsert);
  // Caller holds parent (if any) and node; parent has room.
  void split_inner(Inner* parent, Inner* node);
  void insert_separator(Inner* parent, uint64_t sep, uint64_t right_child);
  bool alloc_leaf(uint32_t* aln);
  // Leaf `aln` is backed (growing the backed extent); caller holds leaf_mu_.
  Status back_leaf(uint32_t aln);
  // The control block of an allocated leaf (aln < next_leaf_). Chunk k
  // holds kCtlBase << k blocks, for leaves [kCtlBase * (2^k - 1), ...): a
  // small tree allocates little, and a block never moves.
  LeafCtl& ctl(uint32_t aln) const;
  static constexpr uint32_t kCtlBase = 64;
  // Caller holds the leaf's and the parent's locks.
  XStatus split_leaf(Inner* parent, uint32_t aln, const LeafImage& img, uint64_t key,
                     const void* value);
  // split_leaf's case of a key above all of the leaf's: the leaf stays as
  // it is (new incarnation), `right` (allocated) holds the key alone.
  XStatus split_leaf_append(Inner* parent, uint32_t aln, const LeafImage& img, uint64_t key,
                            const void* value, uint32_t right);

  // Leaf writes (caller holds the leaf's lock or the leaf is unpublished).
  void write_value_slot(uint32_t aln, uint32_t i, uint64_t key, const void* value);
  void kill_value_slot(uint32_t aln, uint32_t i);
  void break_seal(uint32_t aln);
  void reseal(uint32_t aln, const LeafMeta& m);
  void log_split(uint64_t lo, uint64_t hi, uint32_t left, uint32_t right);
  // The last step of both splits: the parent routes [sep, ...) to `right`,
  // the split is counted and logged (img: the old leaf as found).
  void publish_split(Inner* parent, uint32_t aln, const LeafImage& img, uint64_t sep,
                     uint32_t right);

  uint8_t* base_;
  XTreeOptions opt_;
  // Per ALN: version lock, low fence (see ctl()); 26 chunks reach 2^31.
  std::array<std::atomic<LeafCtl*>, 27> ctl_chunks_{};
  // Leaves [0, next_leaf_) are allocated; alloc_leaf (under leaf_mu_)
  // backs, zeroes and gives a control block to a leaf before it stores
  // next_leaf_ (release).
  std::atomic<uint32_t> next_leaf_{1};
  mutable std::mutex leaf_mu_;
  uint32_t backed_leaves_ = 0;  // guarded by leaf_mu_
  std::string grow_error_;      // guarded by leaf_mu_
  std::atomic<Inner*> root_{nullptr};
  // The leaf the last insert went into (a hint, read and written relaxed:
  // try_insert_at_finger checks it under the leaf's lock). Inserts of
  // ascending keys (a New-Order's lines, log replay) mostly land there.
  std::atomic<uint32_t> finger_{0};
  mutable std::atomic<uint64_t> restarts_{0};
  std::atomic<uint64_t> splits_{0};

  mutable std::mutex inner_mu_;  // guards inner_nodes_ (allocation only)
  std::vector<std::unique_ptr<Inner>> inner_nodes_;

  mutable std::mutex log_mu_;    // guards the split log
  std::vector<SplitEvent> log_;  // ring of split_log_capacity
  uint64_t log_seq_ = 0;         // seq of the newest event
};

}  // namespace drtmx::store::xstore
