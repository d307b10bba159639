// XStoreClient: GET and SCAN of one remote XTree through the learned cache
// (thesis-spec §4.6, §4.7), with one-sided READs over r2, falling back to the
// owner's RPCs (store/xstore/server/xstore_rpc.h) when the cache is stale.
//
// GET(key)  (Fig 3-8 + §4.7 speculation):
//   1. predict the sub-model and LLN range; take the TT entries (full mode:
//      local; models-only: one READ of the 8-byte entries — with the owner's
//      sealed image (fetch_models), of the 64-byte chunks holding them, each
//      checked against the models' generation; a chunk that fails means the
//      owner republished since: RPC, as in step 6 but without a refresh);
//   2. one doorbell batch READs [meta, seal, keys] of every predicted leaf;
//      each copy must pass keys_seal (else re-read, bounded);
//   3. search the keys of every leaf image (any image that verifies is a
//      consistent copy of that leaf, so a key found there is really there);
//      found -> READ the value slot, check its seal and its key -> done.
//      Small leaves (whole_leaf_max_bytes, e.g. 8-byte inline values) are
//      READ whole in step 2, so the value slot is already in the copy and
//      checked there; only a slot that fails there is READ again;
//   4. not found and every leaf's incarnation matches its TT entry -> the key
//      is absent (the covering leaf was read: see xcache.h);
//   5. an incarnation mismatch invalidates that TT entry; if exactly one
//      leaf mismatched and it has a right sibling, READ the sibling's keys
//      once (a split moves the upper half right); found -> value READ;
//   6. otherwise, or on an invalid TT entry, or exhausted torn retries: RPC
//      GET to the owner with kWithRun: the reply also carries the training
//      run of the sub-model's key interval, which retrains it (one round
//      trip; more FETCH_RUN pages only if the owner cut the run). A
//      prediction wider than max_lookup_leaves (a coarse model: clustered
//      keys under an LR top model) goes to the RPC without a refresh
//      (retraining on the same data would not help; expansion or the spline
//      top model would).
// Common case: 2 round trips; the first READs the 1-2 predicted leaves (one
// READ when their ALNs are consecutive, see max_read_bytes). With leaves read
// whole: 1 round trip, 1 READ when the predicted ALNs are consecutive. With
// best_leaf_first, step 2 first READs only the leaf of the predicted
// position and the rest of the range in a second round trip if needed.
//
// SCAN(start, n): predict start's leaves, then walk the TT in key order
// (through following sub-models, skipping a leaf shared by two) and READ
// whole leaves (keys and values) in one doorbell batch: the predicted range
// plus enough following leaves that their TT counts cover n. Keys >= start
// are collected, value slots checked, pairs sorted locally; if fewer than n
// and the last leaf read has a right sibling, the next batch continues from
// the cursor. Any invalid entry or incarnation mismatch -> RPC SCAN (cut
// replies continued; the first with kWithRun, refreshing the sub-model); a
// wide start prediction -> RPC SCAN. Common case: 1 round trip. Not atomic
// across leaves (as the owner's scan, §4.6); a scan restarts when the cache
// was retrained by another coroutine while it waited.
//
// Threading: a client belongs to one coroutine at a time (its scratch
// buffer is its own); several clients of one worker share one XCache. All
// calls are made from inside a coroutine of the worker whose endpoint is
// used. Errors: fabric failures, malformed replies and RPC errors come back
// as Status; "absent" is not an error (get returns false).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "r2/sched/co.h"
#include "store/xstore/client/xcache.h"
#include "store/xstore/server/xstore_rpc.h"

namespace drtmx::store::xstore {

// Which tree, where: the node that holds its leaves, the worker thread of
// that node that serves its RPCs, the tree id, and its leaf area (from
// kRpcXDescribe or configuration).
struct XRemote {
  r2::Target owner;
  uint32_t tree = 0;
  LeafArea area;
};

struct XClientOptions {
  uint32_t max_lookup_leaves = 8;   // wider GET predictions go to RPC
  uint32_t scan_batch_leaves = 32;  // leaves one SCAN batch READs (> max_lookup_leaves)
  uint32_t torn_retries = 8;        // re-reads after a seal failure before RPC
  // Leaves with consecutive ALNs are fetched by one READ of at most this
  // many bytes (must not exceed the fabric's max_op_bytes()).
  uint32_t max_read_bytes = 4096;
  // GET reads the leaf of the predicted position first and the rest of the
  // predicted range only when the key is not there: fewer READ requests
  // (about 1 + miss rate instead of the range width) for more round trips
  // (2 + miss rate). For trees whose leaves are not laid out in key order.
  bool best_leaf_first = false;
  // Prefetch the sub-model, then the TT entries, yielding to the other
  // coroutines after each, so their DRAM misses overlap instead of
  // stalling the worker (a large cache misses the CPU cache per lookup).
  // Not for a tree on this node when its ops run at once (r2::Co::direct).
  bool prefetch_yield = true;
  // GET reads each predicted leaf whole — keys and value slots — in its
  // first READ when the used part of a leaf (leaf_used_bytes: meta, seal,
  // keys, value slots) is at most this many bytes, and takes the value
  // from that copy (one READ per GET instead of two). Larger leaves, or 0:
  // keys first, then the value slot. The copied slot is checked exactly
  // as a separately READ one (seal and key, see below).
  uint32_t whole_leaf_max_bytes = 1024;

  Status validate() const;
};

struct XClientStats {
  uint64_t gets = 0;
  uint64_t gets_found = 0;
  uint64_t scans = 0;
  uint64_t reads = 0;             // one-sided READ work requests
  uint64_t round_trips = 0;       // doorbell batches waited for
  uint64_t rpcs = 0;              // RPCs sent (fallbacks, refreshes, training)
  uint64_t fallbacks = 0;         // operations answered by RPC
  uint64_t invalid_entries = 0;   // lookups that met an invalid TT entry
  uint64_t mismatches = 0;        // leaf images with an unexpected incarnation
  uint64_t spec_reads = 0;        // speculative sibling READs
  uint64_t spec_hits = 0;         // ... that found the key
  uint64_t wide = 0;              // predictions wider than max_lookup_leaves
  uint64_t torn = 0;              // leaf or value copies whose seal failed
  uint64_t refreshes = 0;         // sub-models retrained from FETCH_RUN
  uint64_t refresh_failures = 0;  // refreshes that failed (retried on the next fallback)
  uint64_t expansions = 0;        // full retrains with more sub-models
  uint64_t updates = 0;           // UPDATE RPCs
  uint64_t hints_used = 0;        // ... whose position hint the owner used
  uint64_t tt_reads = 0;          // models-only: READs of TT entries (in `reads`)
  uint64_t tt_seal_failures = 0;  // sealed image chunks that failed (image newer than the models)
  uint64_t model_fetches = 0;     // fetch_models() calls that installed new models
  uint64_t values_in_leaf = 0;    // GETs that took the value from a whole-leaf copy

  void add(const XClientStats& o);
};

class XStoreClient {
 public:
  // Bytes of registered scratch memory a client needs.
  static size_t scratch_bytes(const LeafArea& area, const XClientOptions& o = {});

  // `scratch` must lie in memory registered on this node, 8-byte aligned,
  // of at least scratch_bytes(); `cache` must outlive the client. Call
  // check() once before use.
  XStoreClient(XCache& cache, const XRemote& remote, std::span<uint8_t> scratch,
               const XClientOptions& options = {});
  // Validates options, scratch size and alignment, and that the cache's
  // fanout is the tree's.
  Status check() const;

  // Full training from the owner: FETCH_RUN pages over the whole tree, then
  // XCache::train(run, sub_models) (0 = from the key count).
  Status warm(r2::Co& co, uint32_t sub_models = 0);
  // Fills `run` with the leaves covering [lo, hi] (FETCH_RUN, continued
  // while the owner cuts the reply).
  Status fetch_run(r2::Co& co, uint64_t lo, uint64_t hi, std::vector<LeafRun>& run);
  // Retrains one sub-model from fresh leaves (no-op in models-only mode).
  Status refresh_sub(r2::Co& co, uint32_t sub);
  // If the cache needs expansion, retrains it with expansion_size()
  // sub-models from a full fetch; *expanded tells whether it did.
  Status expand_if_needed(r2::Co& co, bool* expanded);

  // Models-only from the owner: FETCH_MODELS (pages of kMaxModelSubs
  // sub-models; restarted if the owner republished in between) and
  // XCache::install_models — the shared cache becomes a models-only cache
  // over the owner's sealed TT image (server/tt_publisher.h). When the
  // cache already holds the owner's current generation, the owner answers
  // "unchanged" in a few bytes and *changed (optional) is false; so a
  // maintenance coroutine may call this periodically, or when
  // stats().tt_seal_failures grows (the owner republished: until the new
  // models are installed, lookups go to the RPC path). Fails with
  // kUnavailable when the owner has not published the tree.
  Status fetch_models(r2::Co& co, bool* changed = nullptr);

  // Pulls the owner's split log (SPLITS_SINCE) from XCache::split_seq() on
  // (set by warm(), advanced here) and refreshes every sub-model whose interval meets a
  // split's key range — the client's half of "retraining after splits"
  // (§4.7), run off the critical path by a maintenance coroutine. A lost log
  // retrains the whole cache. *refreshed (optional): sub-models retrained.
  Status apply_splits(r2::Co& co, size_t* refreshed = nullptr);

  // UPDATE by RPC with a position hint (§4.7): the leaf holding the
  // predicted position and its expected incarnation (full mode only; no
  // hint in models-only mode or when the entry is invalid). True when the
  // key was updated, false when absent; *hint_used (optional) says whether
  // the owner could use the hint.
  Result<bool> update(r2::Co& co, uint64_t key, const void* value, bool* hint_used = nullptr);

  // GET: true and the value (area.value_bytes bytes to `value`) when the
  // key is present, false when absent.
  Result<bool> get(r2::Co& co, uint64_t key, void* value);
  // GET of several keys at once: found[i] and, when found, the value of
  // keys[i] at values + i * area.value_bytes. The leaves predicted for all
  // keys are READ in one doorbell batch (each distinct leaf once, at most
  // scan_batch_leaves per batch, consecutive ALNs coalesced), then each key
  // is searched in its copies as get() does; a key that copy cannot answer
  // (torn, stale entry, wide prediction, value slot outside a keys-only
  // copy) takes get()'s path alone afterwards. Models-only caches: get()
  // per key. Same results as get() per key; k keys in a few leaves cost one
  // round trip instead of k.
  Status get_many(r2::Co& co, std::span<const uint64_t> keys, uint8_t* values, uint8_t* found);
  // SCAN: up to n pairs with key >= start, ascending; keys cleared and
  // filled, values gets area.value_bytes bytes per key. *end_of_tree (if
  // given) is true when the scan ran past the tree's last key.
  Status scan(r2::Co& co, uint64_t start, size_t n, std::vector<uint64_t>& keys,
              std::vector<uint8_t>& values, bool* end_of_tree = nullptr);

  const XClientStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }
  const XRemote& remote() const { return remote_; }

 private:
  // Outcome of one one-sided attempt.
  //   kStale: invalid entry / incarnation mismatch -> RPC, refresh;
  //   kWide:  prediction wider than max_lookup_leaves -> RPC only;
  //   kRetry: a copy failed its seal -> try again (bounded).
  enum class Look : uint8_t { kFound, kAbsent, kStale, kWide, kRetry };
  struct Walk;  // SCAN cursor over the TT

  r2::RemoteAddr leaf_addr(uint32_t aln) const {
    return {remote_.owner.node, remote_.area.region, remote_.area.leaf_addr(aln)};
  }
  uint8_t* leaf_buf(uint32_t i) const { return leaves_ + size_t{i} * remote_.area.leaf_size(); }
  // A leaf a SCAN batch reads, with the TT entry (and its sub-model's
  // generation) it was planned from.
  struct Planned {
    uint32_t sub;
    uint32_t lln;
    uint64_t generation;
    TTEntry e;
  };

  // TT entries [from, from + count) of `sub` into entries_ (models-only:
  // one READ of the TT image); they become the window tt_at() serves.
  // *stale: a sealed image chunk failed its seal (the owner republished);
  // entries_ is then unusable and the caller takes the RPC path.
  Status load_tt(r2::Co& co, uint32_t sub, uint32_t from, uint32_t count, bool* stale);
  // One TT entry, from the cache or (models-only) the window, which is
  // reloaded from `lln` on when it does not hold the entry. *stale as above.
  Status tt_at(r2::Co& co, uint32_t sub, uint32_t lln, TTEntry* out, bool* stale);
  // Posts into batch_ READs of `len` bytes from each leaf in alns_ into its
  // leaf_buf, coalescing consecutive ALNs (with consecutive buffers);
  // returns the READs posted.
  uint32_t post_leaf_reads(uint32_t len);
  // Moves a SCAN cursor to the next LLN in key order (next non-empty
  // sub-model after the last LLN of one).
  void advance(Walk& w) const;
  Status fabric_error(r2::OpStatus s, const char* what) const;
  // READs the value slot `slot` of leaf `aln` and checks it; kFound copies
  // the value out, kRetry when the slot did not verify for `key`.
  Result<Look> read_value(r2::Co& co, uint32_t aln, uint32_t slot, uint64_t key, void* value);
  // Whole-leaf copy `buf` (possibly torn): true and the value out when a
  // key word names `key` and its value slot in the copy verifies for it.
  bool value_in_copy(const uint8_t* buf, uint64_t key, void* value);
  // `key` is in slot `slot` of the verified key image `buf` of leaf `aln`.
  // When `whole` (buf holds the value slots too) and the copied slot
  // verifies for `key`, copies the value out: kFound without a READ.
  // Otherwise read_value (a slot torn in the copy is READ again).
  Result<Look> take_value(r2::Co& co, const uint8_t* buf, bool whole, uint32_t aln, uint32_t slot,
                          uint64_t key, void* value);
  // One one-sided attempt; kStale asks for the RPC path.
  Result<Look> try_get(r2::Co& co, uint64_t key, void* value, uint32_t* sub);
  // What a fallback asks the owner to send along (kWithRun): the run of
  // sub-model `sub`'s interval; sub == UINT32_MAX: no refresh.
  struct RefreshReq {
    uint32_t sub = UINT32_MAX;
    uint32_t m = 0;  // cache size when asked (a full retrain in between voids it)
    XRunTail tail;
  };
  // Not const: counts the fallback against the sub-model (XCache::refresh_due).
  RefreshReq refresh_req(uint32_t sub);
  // Retrains rr.sub from a run reply (fetching the rest if it was cut).
  Status install_run(r2::Co& co, const RefreshReq& rr, std::span<const uint8_t> bytes);
  // FETCH_RUN pages from lo through hi, appended to run.
  Status fetch_more(r2::Co& co, uint64_t lo, uint64_t hi, std::vector<LeafRun>& run,
                    bool record_seq);
  // RPC GET; with refresh != UINT32_MAX the reply also refreshes that
  // sub-model (one round trip: fallback + refresh, thesis §4.6).
  Result<bool> rpc_get(r2::Co& co, uint64_t key, void* value, uint32_t refresh);
  Result<bool> finish_rpc_get(r2::Co& co, const RefreshReq& rr, const XGetReply& head, bool found);
  // One one-sided attempt of a scan: kFound leaves the sorted pairs in
  // pairs_/vals_; kStale names the stale sub-model; kRetry after a torn copy.
  Result<Look> try_scan(r2::Co& co, uint64_t start, size_t n, bool* end, uint32_t* stale_sub);
  Status rpc_scan(r2::Co& co, uint64_t start, size_t n, std::vector<uint64_t>& keys,
                  std::vector<uint8_t>& values, bool* end, uint32_t refresh);

  XCache& cache_;
  XRemote remote_;
  XClientOptions opt_;
  std::span<uint8_t> scratch_;
  uint64_t* tt_ = nullptr;        // TT entries read (models-only)
  uint8_t* leaves_ = nullptr;     // leaf copies
  uint8_t* value_ = nullptr;      // one value slot
  std::vector<TTEntry> entries_;  // TT window: entries [win_from_, ...) of win_sub_
  uint32_t win_sub_ = 0;
  uint32_t win_from_ = 0;
  bool win_valid_ = false;
  std::vector<Planned> plan_;
  std::vector<std::pair<uint32_t, uint32_t>> alns_;  // next batch: (ALN, buffer index)
  r2::OpBatch batch_;
  r2::RpcBuffer reply_;
  std::vector<std::pair<uint64_t, uint32_t>> pairs_;  // scan: key, index into vals_
  std::vector<uint8_t> vals_;
  XClientStats stats_;
  uint64_t run_split_seq_ = 0;  // split_seq of the last fetch_run's first page
  // get_many: per planned key, its leaves' buffer indices (into leaves_)
  // and expected incarnations, flat; the keys left for get().
  struct ManyKey {
    uint32_t index;  // into the caller's keys
    uint32_t first;  // into many_leaves_
    uint32_t count;
  };
  std::vector<ManyKey> many_;
  std::vector<std::pair<uint32_t, uint32_t>> many_leaves_;  // (buffer, incarnation)
  std::vector<uint32_t> many_alone_;
  std::vector<uint32_t> many_remap_;  // planned buffer -> buffer in ALN order
  std::vector<uint8_t> update_msg_;
  std::vector<uint8_t> msg_;  // fallback requests
};

}  // namespace drtmx::store::xstore
