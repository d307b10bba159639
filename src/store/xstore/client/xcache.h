// XCache: the client's learned cache of one remote XTree (thesis-spec §4.4,
// §4.5): XModel (a top model and M linear sub-models with error bounds) plus
// the translation table (TT) from each sub-model's logical leaf numbers
// (LLN) to physical leaves (ALN) with the incarnation and count expected.
//
// Training (Fig 3-7, with two changes, both documented here):
//   1. The top model is an LR over the CDF (key, rank * M / keys) — or a
//      monotone spline through it (XCacheOptions::top_model). Sub-model
//      i is responsible for the key interval I_i = [lo_i, hi_i] of every
//      64-bit key k with pick(k) == i (an interval because pick is monotone;
//      found exactly by binary search on pick). Empty intervals are possible
//      (a steep top model skips indices); such sub-models are never used.
//   2. Sub-model i is trained over every leaf whose key range [low, high)
//      meets I_i — from the leaf covering lo_i through the leaf covering hi_i
//      (a leaf straddling two intervals is in both). Logical leaf n owns the
//      positions [n*N, (n+1)*N) (N = fanout). Training points of leaf n with
//      c keys (only keys inside I_i count), where pos(s) = n*N + (N-1)*s/(c+1):
//        - its clipped low fence  max(low, lo_i)      at pos(#keys < it),
//        - its t-th key (ascending)                   at pos(t + 1),
//        - its clipped high fence min(high - 1, hi_i) at pos(#keys <= it + 1).
//      The fence points are the boundary-key augmentation of §4.6
//      ("Non-existent keys"), done for every leaf rather than only at
//      sub-model edges — except the two outer ones (low fence of the first
//      leaf, high fence of the last), which can be arbitrarily far from any
//      key (0, 2^64-1, a gap between key clusters) and would tilt the line.
//      Let key_min / key_max be the smallest / largest fitted point. For a
//      key k in I_i (present or not) covered by leaf n:
//        * k < key_min: key_min is a point of the first leaf (its first key,
//          or its high fence) and k >= lo_i, so leaf 0 covers k: LLN [0, 0];
//        * k > key_max: symmetrically the last leaf: LLN [L-1, L-1];
//        * otherwise leaf n has fitted points a <= k <= b with positions in
//          [n*N, n*N + N-1] (its fences, or key_min/key_max for the outer
//          leaves), so by monotonicity and the error bounds
//            predict(k) - min_err <= predict(b) - min_err <= pos(b) < (n+1)*N
//            predict(k) + max_err >= predict(a) + max_err >= pos(a) >= n*N
//          and the LLN range [floor((p-min_err)/N), floor((p+max_err)/N)]
//          contains n.
//      This makes GET's "absent" and SCAN's start point exact.
//      Spreading a leaf's c keys over its N positions (instead of packing
//      them at n*N, n*N+1, ..., as Fig 3-7 does) keeps part-full leaves from
//      making a saw-tooth CDF, which would widen the error bounds.
//
// TT entry (64 bits, as the thesis): valid:1 | ALN:31 | INCA:24 | CNT:8.
//
// Memory (XCacheOptions): in full mode the TT lives here and training fails
// when it would exceed tt_budget_bytes. In models-only mode this cache holds
// only the models and, per sub-model, where its TT entries start in a TT
// image in the owner's registered memory; a lookup then READs the few TT
// entries it needs (one extra READ, thesis §4.4). Two image layouts:
//   * plain (write_tt_image() + models_only_copy()): entries back to back,
//     no check. Only for an image that is never rewritten while clients use
//     it (tests that play the owner).
//   * sealed (write_sealed_image() + install_models()): what the owner's
//     TtPublisher (server/tt_publisher.h) publishes and rewrites in place
//     after splits; XStoreClient::fetch_models() installs its models. Every
//     64-byte chunk of entries carries a seal over the image generation, the
//     chunk's place and its entries, so a client whose models are older
//     than the image (or that READ a chunk being rewritten) sees the seal
//     fail and takes the RPC path: a torn or newer image is never used.
// A models-only cache cannot retrain itself: its stale entries (incarnation
// mismatch) are answered by the RPC fallback until newer models are
// installed (fetch_models again, or a new copy).
//
// Threading: an XCache is used by one worker thread (shared by its
// coroutines) and is not synchronised. Coroutines switch only when they wait
// for the fabric, so a member call is never interleaved with another; but a
// coroutine that waits between reading TT entries and using them must
// re-check generation(sub) before writing back (invalidate() takes it).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "store/xstore/client/model.h"
#include "store/xstore/server/xtree.h"  // LeafRun (plain data)

namespace drtmx::store::xstore {

struct XModelsReply;  // store/xstore/server/xstore_rpc.h

struct TTEntry {
  bool valid = false;
  uint32_t aln = 0;          // 31 bits
  uint32_t incarnation = 0;  // 24 bits
  uint32_t count = 0;        // 8 bits
};
inline uint64_t pack_tt(const TTEntry& e) {
  return (uint64_t{e.valid} << 63) | (uint64_t{e.aln & 0x7FFFFFFF} << 32) |
         (uint64_t{e.incarnation & 0xFFFFFF} << 8) | (e.count & 0xFF);
}
inline TTEntry unpack_tt(uint64_t w) {
  return {(w >> 63) != 0, static_cast<uint32_t>(w >> 32) & 0x7FFFFFFF,
          static_cast<uint32_t>(w >> 8) & 0xFFFFFF, static_cast<uint32_t>(w) & 0xFF};
}

enum class TopKind : uint8_t {
  kLinear,  // LR over the CDF (thesis Fig 3-7)
  kSpline,  // monotone piecewise-linear CDF through spline_knots knots
};

struct XCacheOptions {
  uint32_t fanout = 16;  // N: must equal the tree's LeafArea::fanout
  TopKind top_model = TopKind::kLinear;
  uint32_t spline_knots = 1024;  // kSpline: knots at evenly spaced ranks (16 B each)
  // Model expansion: needs_expansion() when the average keys per sub-model
  // exceeds this (thesis eval: 200).
  uint32_t expand_keys_per_model = 200;
  // Full training picks M = ceil(keys / train_keys_per_model) (>= 1), so a
  // fresh model starts at half the expansion threshold by default.
  uint32_t train_keys_per_model = 100;
  uint32_t max_sub_models = 1u << 24;
  // Full mode: bytes the TT may take (8 per entry); training fails beyond.
  uint64_t tt_budget_bytes = UINT64_MAX;
  // A fallback RPC piggybacks a refresh of its sub-model (an export and a
  // retrain of the whole interval: work in proportion to the keys there).
  // With `refresh_keys_per_miss` = R > 0 it does so only once the fallbacks
  // met by the sub-model since it was last trained, times R, reach the keys
  // it was trained on — so refreshing costs at most about R keys of
  // training per fallback. 0: every fallback refreshes. Under appends at
  // the end of a range (TPC-C's orders) the last sub-model is stale again
  // after every insert and gathers every appended key; refreshing it on
  // each miss cost more than the misses it saved. The fallback's answer is
  // correct either way, and maintain() still retrains after splits.
  uint32_t refresh_keys_per_miss = 0;

  Status validate() const;
};

// The predicted leaves of a key: LLNs [first, last] of sub-model `sub`.
struct Prediction {
  uint32_t sub = 0;
  uint32_t first = 0;
  uint32_t last = 0;
  uint32_t best = 0;  // the LLN of the predicted position, in [first, last]
};

class XCache {
 public:
  // Options must validate(); an invalid set is clamped to defaults where
  // needed and train() reports the problem.
  explicit XCache(const XCacheOptions& options);

  // Full training (Fig 3-7) from a complete run: the leaves of the whole
  // tree in key order (first low == 0, last has last_leaf, fences
  // contiguous). sub_models = 0 picks M from the key count. Replaces
  // everything; fails (cache unchanged) on a malformed run or budget.
  Status train(std::span<const LeafRun> run, uint32_t sub_models = 0);
  // Retrains sub-model `sub` (model, errors, TT) from fresh leaves covering
  // [sub_lo(sub), sub_hi(sub)] — e.g. a FETCH_RUN(sub_lo, sub_hi) reply.
  // The top model and other sub-models are untouched. Bumps generation().
  Status retrain_sub(uint32_t sub, std::span<const LeafRun> run);

  bool trained() const { return !subs_.empty(); }
  bool models_only() const { return models_only_; }
  uint32_t fanout() const { return opt_.fanout; }
  const XCacheOptions& options() const { return opt_; }
  uint32_t sub_models() const { return top_.m; }

  // Model expansion (§4.7): average keys per sub-model above the threshold.
  bool needs_expansion() const;
  // M for an expansion: max(2M, keys / train_keys_per_model).
  uint32_t expansion_size() const;

  uint32_t pick(uint64_t key) const { return top_.pick(key); }
  // Requires trained(). The sub-model of the key and its LLN range.
  Prediction predict(uint64_t key) const { return predict_in(pick(key), key); }
  // The same for sub == pick(key) (a caller that picked it already).
  Prediction predict_in(uint32_t sub, uint64_t key) const;
  // Cache-line prefetches for a lookup that yields between its dependent
  // loads (XClientOptions::prefetch_yield): sub-model `sub` (and its TT
  // row header), then TT entries [first, first + n) of `sub`. No-ops on
  // an untrained cache or an index out of range.
  void prefetch_sub(uint32_t sub) const;
  void prefetch_model(uint64_t key) const {
    if (trained()) prefetch_sub(pick(key));
  }
  void prefetch_tt(uint32_t sub, uint32_t first) const;

  uint64_t sub_lo(uint32_t sub) const { return subs_[sub].lo; }
  uint64_t sub_hi(uint32_t sub) const { return subs_[sub].hi; }
  bool sub_empty(uint32_t sub) const { return subs_[sub].leaves == 0; }
  // Counts a fallback met by sub-model `sub` and says whether it should
  // refresh the sub-model (see XCacheOptions::refresh_keys_per_miss).
  bool refresh_due(uint32_t sub) {
    Sub& s = subs_[sub];
    ++s.misses;
    return opt_.refresh_keys_per_miss == 0 ||
           uint64_t{s.misses} * opt_.refresh_keys_per_miss >= s.keys;
  }
  uint32_t sub_leaves(uint32_t sub) const { return subs_[sub].leaves; }
  uint64_t sub_keys(uint32_t sub) const { return subs_[sub].keys; }
  const SubModel& sub_model(uint32_t sub) const { return subs_[sub].model; }
  // Changes with every retrain of the sub-model (and every train()); never
  // repeats within one cache, so (sub, generation) names one TT version.
  uint64_t generation(uint32_t sub) const { return subs_[sub].generation; }
  // Changes with every train(), retrain_sub() and install_models(): a
  // coroutine that walked the TT (or predicted) before waiting must
  // restart (predict again) if it changed meanwhile.
  uint64_t epoch() const { return epoch_; }
  uint64_t total_keys() const { return total_keys_; }
  // The owner's split-log position (XTree::split_seq) the cache reflects:
  // set by whoever trains it from a run (XStoreClient::warm), advanced by
  // XStoreClient::apply_splits.
  uint64_t split_seq() const { return split_seq_; }
  void set_split_seq(uint64_t seq) { split_seq_ = seq; }

  // Full mode only: TT entry `lln` of `sub` (lln < sub_leaves(sub)).
  TTEntry tt(uint32_t sub, uint32_t lln) const { return unpack_tt(tts_[sub][lln]); }
  // Clears the valid bit of an entry, if the sub-model is still at
  // `generation` (a retrain in between made the entry a different one).
  void invalidate(uint32_t sub, uint32_t lln, uint64_t generation);

  // --- models-only mode ------------------------------------------------------
  // Bytes of the TT image: all sub-models' entries back to back, sub-model 0
  // first, 8 bytes each.
  size_t tt_image_bytes() const;
  // Writes the image (full mode) to dst (tt_image_bytes() bytes, 8-aligned).
  Status write_tt_image(uint8_t* dst, size_t capacity) const;
  // A models-only cache whose TT image is at `image` (remote).
  XCache models_only_copy(r2::RemoteAddr image) const;
  // Plain models-only: remote address of TT entry `lln` of `sub`.
  r2::RemoteAddr tt_addr(uint32_t sub, uint32_t lln) const {
    r2::RemoteAddr a = tt_image_;
    a.offset += (subs_[sub].tt_index + lln) * 8;
    return a;
  }

  // --- published models-only (owner: TtPublisher; client: fetch_models) ----
  // Sealed TT image layout (all words 8-byte, host order):
  //   +0   header, 64 B: word 0 = generation of the complete image (0 while
  //        it is rewritten), word 1 = kSealedImageMagic, word 2 = chunks;
  //   +64  chunks of kChunkBytes: word 0 = seal, words 1..kChunkEntries =
  //        TT entries (unused words 0). TT entry `lln` of sub-model `sub` is
  //        word 1 + lln % kChunkEntries of chunk first_chunk(sub) + lln /
  //        kChunkEntries; seal = tt_chunk_seal(generation, sub,
  //        lln / kChunkEntries, the kChunkEntries entry words).
  // Readers: a chunk is used only if its seal verifies under the generation
  // of the models the reader holds (image_generation()). The generation
  // never repeats for one image area (TtPublisher), so a verifying chunk is
  // exactly the chunk these models were trained with — not a chunk of a
  // newer layout, nor a mix of two writes (a seal breaks on any mix, as a
  // leaf's keys seal). What the entries say may still be stale (splits since
  // training): the leaf incarnation check catches that, as in full mode.
  static constexpr uint32_t kChunkEntries = 7;
  static constexpr uint32_t kChunkBytes = 64;
  static constexpr uint64_t kSealedImageMagic = 0x5854544D41474531ull;  // "XTTMAGE1"
  // Bytes of the sealed image (header + chunks) of this (full) cache.
  size_t sealed_image_bytes() const;
  // Full mode: writes the sealed image for `generation` (!= 0) to dst, the
  // owner's local mapping of the area (8-aligned), with 8-byte atomic
  // stores: header word 0 cleared, chunks, then word 0 = generation.
  // Concurrent readers of the old image see their seals fail.
  Status write_sealed_image(uint8_t* dst, size_t capacity, uint64_t generation) const;
  // Full mode: the model part of a FETCH_MODELS reply: fills head's model
  // fields (fanout, m, total_keys, top model, knots, count, first_sub) and
  // appends the knots and the records of sub-models [first, first + count),
  // count = min(max, m - first). The caller fills the image fields.
  void encode_models(uint32_t first, uint32_t max, XModelsReply* head,
                     std::vector<uint8_t>& out) const;
  // Replaces this cache by the models-only cache the owner published:
  // `head` with first_sub 0 and count == m, the knot and sub-model records
  // of all pages, the sealed image at `image` (the owner's node, region,
  // offset). Fails (cache unchanged) on a fanout other than options().fanout
  // or malformed records. Bumps epoch(), so SCANs in flight restart.
  Status install_models(const XModelsReply& head, std::span<const uint8_t> knots,
                        std::span<const uint8_t> subs, r2::RemoteAddr image);
  // Sealed models-only: the generation the models belong to (0 otherwise).
  uint64_t image_generation() const { return image_generation_; }
  bool sealed_image() const { return models_only_ && image_generation_ != 0; }
  // Sealed models-only: remote address of chunk `chunk` of sub-model `sub`.
  r2::RemoteAddr tt_chunk_addr(uint32_t sub, uint32_t chunk) const {
    r2::RemoteAddr a = tt_image_;
    a.offset += kChunkBytes * (1 + subs_[sub].tt_index + chunk);
    return a;
  }

  // Client memory this cache takes (models, per-sub-model state, TT).
  size_t memory_bytes() const;

 private:
  // Per sub-model state; its TT is tts_[i] (full mode only).
  struct Sub {
    SubModel model;
    uint64_t lo = 0, hi = 0;  // the key interval I_i (inclusive)
    uint64_t generation = 0;
    uint64_t tt_index = 0;  // models-only: first entry (plain) or chunk (sealed) in the image
    uint32_t leaves = 0;    // TT length; 0 = empty interval, never used
    uint32_t keys = 0;      // keys inside [lo, hi] at training
    uint32_t misses = 0;    // fallbacks since training (refresh_due)
  };

  // Smallest key k with pick(k) >= i under `top`; false when none.
  static bool first_key_of(const TopModel& top, uint32_t i, uint64_t* k);
  // Trains `s` and its TT `tt` over `leaves` (those covering [s.lo, s.hi],
  // in key order).
  void train_sub(Sub& s, std::vector<uint64_t>& tt, std::span<const LeafRun> leaves);
  // Checks that `run` is well formed and covers [lo, hi].
  Status check_run(std::span<const LeafRun> run, uint64_t lo, uint64_t hi) const;

  XCacheOptions opt_;
  TopModel top_;
  std::vector<Sub> subs_;
  std::vector<std::vector<uint64_t>> tts_;  // full mode: TT of each sub-model
  uint64_t total_keys_ = 0;
  uint64_t epoch_ = 0;
  uint64_t split_seq_ = 0;
  bool models_only_ = false;
  r2::RemoteAddr tt_image_;
  uint64_t image_generation_ = 0;                    // sealed models-only image
  std::vector<std::pair<uint64_t, double>> points_;  // training scratch
};

// Seal of one chunk of a sealed TT image (see XCache::write_sealed_image):
// over the generation, the chunk's place (sub-model, chunk within it) and
// its kChunkEntries entry words. Never 0, so a zeroed chunk never verifies.
uint64_t tt_chunk_seal(uint64_t generation, uint32_t sub, uint32_t chunk, const uint64_t* entries);

}  // namespace drtmx::store::xstore
