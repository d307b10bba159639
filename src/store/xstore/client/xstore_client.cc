#include "store/xstore/client/xstore_client.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/hash.h"

namespace drtmx::store::xstore {

namespace {
// The status of an owner RPC with `what()` as context when it failed —
// built only then: these calls are on the GET and SCAN fallback paths.
template <class What>
Status in_context(Status st, const What& what) {
  return st.is_ok() ? st : st.with_context(what());
}

// Scratch for TT entries: `cap` plain entries, or the sealed chunks `cap`
// consecutive entries can span.
size_t tt_scratch_bytes(uint32_t cap) {
  return std::max<size_t>(size_t{cap} * 8,
                          size_t{cap / XCache::kChunkEntries + 2} * XCache::kChunkBytes);
}
}  // namespace

struct XStoreClient::Walk {
  uint32_t sub = 0;
  uint32_t lln = 0;
  bool end = false;
  bool have_prev = false;
  uint32_t prev_aln = 0;
  uint32_t prev_incarnation = 0;
};

Status XClientOptions::validate() const {
  if (max_lookup_leaves == 0 || scan_batch_leaves <= max_lookup_leaves) {
    return invalid_argument("xstore client: need 0 < max_lookup_leaves < scan_batch_leaves (got " +
                            std::to_string(max_lookup_leaves) + ", " +
                            std::to_string(scan_batch_leaves) + ")");
  }
  if (whole_leaf_max_bytes > max_read_bytes) {
    return invalid_argument("xstore client: whole_leaf_max_bytes " +
                            std::to_string(whole_leaf_max_bytes) + " exceeds max_read_bytes " +
                            std::to_string(max_read_bytes));
  }
  return Status::ok();
}

void XClientStats::add(const XClientStats& o) {
  gets += o.gets;
  gets_found += o.gets_found;
  scans += o.scans;
  reads += o.reads;
  round_trips += o.round_trips;
  rpcs += o.rpcs;
  fallbacks += o.fallbacks;
  invalid_entries += o.invalid_entries;
  mismatches += o.mismatches;
  spec_reads += o.spec_reads;
  spec_hits += o.spec_hits;
  wide += o.wide;
  torn += o.torn;
  refreshes += o.refreshes;
  refresh_failures += o.refresh_failures;
  expansions += o.expansions;
  updates += o.updates;
  hints_used += o.hints_used;
  tt_reads += o.tt_reads;
  tt_seal_failures += o.tt_seal_failures;
  model_fetches += o.model_fetches;
  values_in_leaf += o.values_in_leaf;
}

size_t XStoreClient::scratch_bytes(const LeafArea& area, const XClientOptions& o) {
  const size_t tt = tt_scratch_bytes(std::max(o.scan_batch_leaves, o.max_lookup_leaves));
  return tt + size_t{o.scan_batch_leaves} * area.leaf_size() +
         ((value_slot_bytes(area.value_bytes) + 7) & ~size_t{7});
}

XStoreClient::XStoreClient(XCache& cache, const XRemote& remote, std::span<uint8_t> scratch,
                           const XClientOptions& options)
    : cache_(cache), remote_(remote), opt_(options), scratch_(scratch) {
  const size_t tt = tt_scratch_bytes(std::max(opt_.scan_batch_leaves, opt_.max_lookup_leaves));
  tt_ = reinterpret_cast<uint64_t*>(scratch_.data());
  leaves_ = scratch_.data() + tt;
  value_ = leaves_ + size_t{opt_.scan_batch_leaves} * remote_.area.leaf_size();
}

Status XStoreClient::check() const {
  DRTMX_RETURN_IF_ERROR(opt_.validate());
  if (scratch_.size() < scratch_bytes(remote_.area, opt_)) {
    return invalid_argument(
        "xstore client scratch holds " + std::to_string(scratch_.size()) +
        " bytes, needs scratch_bytes() = " + std::to_string(scratch_bytes(remote_.area, opt_)));
  }
  if (reinterpret_cast<uintptr_t>(scratch_.data()) % 8 != 0) {
    return invalid_argument("xstore client scratch must be 8-byte aligned");
  }
  if (cache_.fanout() != remote_.area.fanout) {
    return invalid_argument("xstore client: cache fanout " + std::to_string(cache_.fanout()) +
                            " differs from the tree's " + std::to_string(remote_.area.fanout) +
                            ": set XCacheOptions::fanout from the LeafArea");
  }
  return Status::ok();
}

Status XStoreClient::fabric_error(r2::OpStatus s, const char* what) const {
  std::string m = std::string("xstore client: one-sided ") + what + " of tree " +
                  std::to_string(remote_.tree) + " on node " + std::to_string(remote_.owner.node) +
                  " failed: " + r2::op_status_name(s);
  // Fenced: the owner was removed from the cluster (a failover moves its
  // partitions): not a torn read to retry at once.
  return s == r2::OpStatus::kFenced ? aborted(std::move(m)) : unavailable(std::move(m));
}

// --- training ---------------------------------------------------------------

Status XStoreClient::fetch_run(r2::Co& co, uint64_t lo, uint64_t hi, std::vector<LeafRun>& run) {
  run.clear();
  return fetch_more(co, lo, hi, run, true);
}

Status XStoreClient::fetch_more(r2::Co& co, uint64_t lo, uint64_t hi, std::vector<LeafRun>& run,
                                bool record_seq) {
  uint64_t cur = lo;
  // Each page returns at least one leaf; 2^32 leaves at most in a tree.
  for (uint64_t page = 0; page < (uint64_t{1} << 32); ++page) {
    XFetchRunReq req;
    req.h.tree = remote_.tree;
    req.lo = cur;
    req.hi = hi;
    req.max_leaves = kMaxRunLeaves;
    ++stats_.rpcs;
    DRTMX_RETURN_IF_ERROR(
        in_context(co.call(remote_.owner, kRpcXFetchRun, &req, sizeof req, reply_), [&] {
          return "xstore FETCH_RUN [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
        }));
    XRunReply head;
    DRTMX_RETURN_IF_ERROR(parse_run_reply(reply_, &head, run));
    // Splits after the first page's seq may be missing from the run.
    if (page == 0 && record_seq) run_split_seq_ = head.split_seq;
    if (head.done) return Status::ok();
    if (head.leaves == 0 || head.next_lo <= cur) {
      return internal_error("xstore FETCH_RUN made no progress at key " + std::to_string(cur));
    }
    cur = head.next_lo;
  }
  return internal_error("xstore FETCH_RUN did not finish");
}

XStoreClient::RefreshReq XStoreClient::refresh_req(uint32_t sub) {
  RefreshReq r;
  if (sub == UINT32_MAX || cache_.models_only() || !cache_.trained() ||
      sub >= cache_.sub_models() || cache_.sub_empty(sub) || !cache_.refresh_due(sub)) {
    return r;
  }
  r.sub = sub;
  r.m = cache_.sub_models();
  r.tail.lo = cache_.sub_lo(sub);
  r.tail.hi = cache_.sub_hi(sub);
  r.tail.max_leaves = kMaxRunLeaves;
  return r;
}

Status XStoreClient::install_run(r2::Co& co, const RefreshReq& rr, std::span<const uint8_t> bytes) {
  std::vector<LeafRun> run;
  XRunReply head;
  DRTMX_RETURN_IF_ERROR(parse_run_reply(bytes, &head, run));
  if (!head.done) {
    if (head.leaves == 0 || head.next_lo <= rr.tail.lo) {
      return internal_error("xstore fallback run made no progress");
    }
    DRTMX_RETURN_IF_ERROR(fetch_more(co, head.next_lo, rr.tail.hi, run, false));
  }
  // Another coroutine may have retrained the whole cache while we waited.
  if (cache_.sub_models() != rr.m || cache_.sub_lo(rr.sub) != rr.tail.lo ||
      cache_.sub_hi(rr.sub) != rr.tail.hi) {
    return Status::ok();
  }
  ++stats_.refreshes;
  return cache_.retrain_sub(rr.sub, run);
}

Status XStoreClient::warm(r2::Co& co, uint32_t sub_models) {
  std::vector<LeafRun> run;
  DRTMX_RETURN_IF_ERROR(fetch_run(co, 0, UINT64_MAX, run));
  DRTMX_RETURN_IF_ERROR(cache_.train(run, sub_models));
  cache_.set_split_seq(run_split_seq_);
  return Status::ok();
}

Status XStoreClient::fetch_models(r2::Co& co, bool* changed) {
  if (changed != nullptr) *changed = false;
  const uint64_t known = cache_.sealed_image() ? cache_.image_generation() : 0;
  std::vector<uint8_t> knots, subs;
  XModelsReply first;
  // Each attempt restarts when the owner republished between two pages.
  for (int attempt = 0; attempt < 8; ++attempt) {
    knots.clear();
    subs.clear();
    uint32_t next = 0;
    bool restart = false;
    do {
      XFetchModelsReq req;
      req.h.tree = remote_.tree;
      req.known_generation = known;
      req.first_sub = next;
      req.max_subs = kMaxModelSubs;
      ++stats_.rpcs;
      DRTMX_RETURN_IF_ERROR(in_context(
          co.call(remote_.owner, kRpcXFetchModels, &req, sizeof req, reply_),
          [&] { return "xstore FETCH_MODELS of tree " + std::to_string(remote_.tree); }));
      XModelsReply head;
      std::span<const uint8_t> kb, sb;
      DRTMX_RETURN_IF_ERROR(parse_models_reply(reply_, &head, &kb, &sb));
      if (head.unchanged) {
        if (next == 0) return Status::ok();  // we hold the owner's generation
        restart = true;  // cannot happen mid-fetch (generations only grow): start over
        break;
      }
      if (head.first_sub != next || (head.count == 0 && next < head.m) ||
          head.first_sub + head.count > head.m) {
        return internal_error("xstore FETCH_MODELS reply for sub-models [" +
                              std::to_string(head.first_sub) + ", +" + std::to_string(head.count) +
                              ") of " + std::to_string(head.m) + ", asked from " +
                              std::to_string(next));
      }
      if (next == 0) {
        first = head;
        knots.assign(kb.begin(), kb.end());
      } else if (head.generation != first.generation) {
        restart = true;  // the owner republished between pages
        break;
      }
      subs.insert(subs.end(), sb.begin(), sb.end());
      next += head.count;
    } while (next < first.m);
    if (restart) continue;
    first.count = first.m;
    DRTMX_RETURN_IF_ERROR(cache_.install_models(
        first, knots, subs, {remote_.owner.node, first.region, first.image_offset}));
    ++stats_.model_fetches;
    if (changed != nullptr) *changed = true;
    return Status::ok();
  }
  return unavailable("xstore FETCH_MODELS: the owner republished during every attempt");
}

Status XStoreClient::apply_splits(r2::Co& co, size_t* refreshed) {
  if (refreshed != nullptr) *refreshed = 0;
  if (!cache_.trained() || cache_.models_only()) return Status::ok();
  std::vector<SplitEvent> events;
  // Bounded: each round consumes at least one event or ends.
  for (int round = 0; round < 1 << 20; ++round) {
    XSplitsReq req;
    req.h.tree = remote_.tree;
    req.since = cache_.split_seq();
    req.max = kMaxRunLeaves;
    ++stats_.rpcs;
    DRTMX_RETURN_IF_ERROR(
        in_context(co.call(remote_.owner, kRpcXSplitsSince, &req, sizeof req, reply_),
                   [&] { return "xstore SPLITS_SINCE " + std::to_string(req.since); }));
    XSplitsReply head;
    events.clear();
    DRTMX_RETURN_IF_ERROR(parse_splits_reply(reply_, &head, events));
    if (head.lost) {
      DRTMX_RETURN_IF_ERROR(warm(co, cache_.sub_models()));
      if (refreshed != nullptr) *refreshed = cache_.sub_models();
      return Status::ok();
    }
    std::vector<uint32_t> subs;
    for (const SplitEvent& e : events) {
      for (uint32_t i = cache_.pick(e.lo); i <= cache_.pick(e.hi); ++i) subs.push_back(i);
    }
    std::sort(subs.begin(), subs.end());
    subs.erase(std::unique(subs.begin(), subs.end()), subs.end());
    for (uint32_t i : subs) {
      DRTMX_RETURN_IF_ERROR(refresh_sub(co, i));
      if (refreshed != nullptr) ++*refreshed;
    }
    cache_.set_split_seq(std::max(cache_.split_seq(), head.next));
    if (head.count < req.max) return Status::ok();
  }
  return internal_error("xstore SPLITS_SINCE did not finish");
}

Result<bool> XStoreClient::update(r2::Co& co, uint64_t key, const void* value, bool* hint_used) {
  const uint32_t v = remote_.area.value_bytes;
  XUpdateReq req;
  req.h.tree = remote_.tree;
  req.key = key;
  if (cache_.trained() && !cache_.models_only()) {
    const Prediction pr = cache_.predict(key);
    const TTEntry e = cache_.tt(pr.sub, pr.best);
    if (e.valid) {
      req.h.flags = kUpdateHasHint;
      req.hint_aln = e.aln;
      req.hint_incarnation = e.incarnation;
    }
  }
  std::vector<uint8_t>& msg = update_msg_;
  msg.clear();
  wire_put(msg, req);
  msg.insert(msg.end(), static_cast<const uint8_t*>(value), static_cast<const uint8_t*>(value) + v);
  ++stats_.rpcs;
  ++stats_.updates;
  DRTMX_RETURN_IF_ERROR(in_context(
      co.call(remote_.owner, kRpcXUpdate, msg.data(), static_cast<uint32_t>(msg.size()), reply_),
      [&] { return "xstore UPDATE of key " + std::to_string(key); }));
  XPosReply head;
  if (!wire_get(std::span<const uint8_t>(reply_), 0, &head)) {
    return internal_error("xstore UPDATE reply shorter than its head");
  }
  if (hint_used != nullptr) *hint_used = head.hint_used != 0;
  if (head.hint_used != 0) ++stats_.hints_used;
  if (head.status == static_cast<uint8_t>(XStatus::kNotFound)) return false;
  if (head.status != static_cast<uint8_t>(XStatus::kOk)) {
    return internal_error("xstore UPDATE reply with unexpected status " +
                          std::to_string(head.status));
  }
  return true;
}

Status XStoreClient::refresh_sub(r2::Co& co, uint32_t sub) {
  if (cache_.models_only() || !cache_.trained() || sub >= cache_.sub_models() ||
      cache_.sub_empty(sub)) {
    return Status::ok();
  }
  const uint64_t lo = cache_.sub_lo(sub), hi = cache_.sub_hi(sub);
  const uint32_t m = cache_.sub_models();
  std::vector<LeafRun> run;
  DRTMX_RETURN_IF_ERROR(fetch_run(co, lo, hi, run));
  // Another coroutine may have retrained the whole cache while we waited.
  if (cache_.sub_models() != m || cache_.sub_lo(sub) != lo || cache_.sub_hi(sub) != hi) {
    return Status::ok();
  }
  ++stats_.refreshes;
  return cache_.retrain_sub(sub, run);
}

Status XStoreClient::expand_if_needed(r2::Co& co, bool* expanded) {
  *expanded = false;
  if (cache_.models_only() || !cache_.needs_expansion()) return Status::ok();
  const uint32_t m = cache_.expansion_size();
  std::vector<LeafRun> run;
  DRTMX_RETURN_IF_ERROR(fetch_run(co, 0, UINT64_MAX, run));
  DRTMX_RETURN_IF_ERROR(cache_.train(run, m));
  cache_.set_split_seq(run_split_seq_);
  ++stats_.expansions;
  *expanded = true;
  return Status::ok();
}

// --- TT access ----------------------------------------------------------------

Status XStoreClient::load_tt(r2::Co& co, uint32_t sub, uint32_t from, uint32_t count, bool* stale) {
  *stale = false;
  entries_.resize(count);
  win_sub_ = sub;
  win_from_ = from;
  win_valid_ = false;
  if (!cache_.models_only()) {
    for (uint32_t i = 0; i < count; ++i) entries_[i] = cache_.tt(sub, from + i);
    win_valid_ = true;
    return Status::ok();
  }
  if (!cache_.sealed_image()) {
    // Plain image. Each 8-byte aligned entry is read atomically (fabric
    // contract).
    const r2::OpStatus s = co.read(cache_.tt_addr(sub, from), tt_, count * 8);
    ++stats_.reads;
    ++stats_.tt_reads;
    ++stats_.round_trips;
    if (s != r2::OpStatus::kOk) return fabric_error(s, "READ of TT entries");
    for (uint32_t i = 0; i < count; ++i) entries_[i] = unpack_tt(tt_[i]);
    win_valid_ = true;
    return Status::ok();
  }
  // Sealed image: READ the chunks holding [from, from + count) and check
  // each against the generation of the models that chose them (captured
  // before the wait: fetch_models may replace the cache meanwhile).
  constexpr uint32_t kC = XCache::kChunkEntries;
  const uint64_t gen = cache_.image_generation();
  const uint32_t c0 = from / kC, c1 = (from + count - 1) / kC;
  const r2::OpStatus s =
      co.read(cache_.tt_chunk_addr(sub, c0), tt_, (c1 - c0 + 1) * XCache::kChunkBytes);
  ++stats_.reads;
  ++stats_.tt_reads;
  ++stats_.round_trips;
  if (s != r2::OpStatus::kOk) return fabric_error(s, "READ of TT image chunks");
  constexpr uint32_t kWords = XCache::kChunkBytes / 8;
  for (uint32_t c = c0; c <= c1; ++c) {
    const uint64_t* w = tt_ + size_t{c - c0} * kWords;
    if (tt_chunk_seal(gen, sub, c, w + 1) != w[0]) {
      ++stats_.tt_seal_failures;
      *stale = true;
      return Status::ok();
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t lln = from + i;
    entries_[i] = unpack_tt(tt_[size_t{lln / kC - c0} * kWords + 1 + lln % kC]);
  }
  win_valid_ = true;
  return Status::ok();
}

Status XStoreClient::tt_at(r2::Co& co, uint32_t sub, uint32_t lln, TTEntry* out, bool* stale) {
  *stale = false;
  if (!cache_.models_only()) {
    *out = cache_.tt(sub, lln);
    return Status::ok();
  }
  if (!win_valid_ || win_sub_ != sub || lln < win_from_ || lln >= win_from_ + entries_.size()) {
    const uint32_t cap = std::max(opt_.scan_batch_leaves, opt_.max_lookup_leaves);
    DRTMX_RETURN_IF_ERROR(
        load_tt(co, sub, lln, std::min(cap, cache_.sub_leaves(sub) - lln), stale));
    if (*stale) return Status::ok();
  }
  *out = entries_[lln - win_from_];
  return Status::ok();
}

// --- leaf READs ---------------------------------------------------------------

uint32_t XStoreClient::post_leaf_reads(uint32_t len) {
  batch_.clear();
  const size_t stride = remote_.area.leaf_size();
  uint32_t reads = 0;
  for (size_t i = 0; i < alns_.size();) {
    // Leaves with consecutive ALNs are consecutive in memory, at the same
    // stride as the copies in leaves_: one READ brings them all when their
    // buffers are consecutive too.
    size_t j = i + 1;
    while (j < alns_.size() && alns_[j].first == alns_[j - 1].first + 1 &&
           alns_[j].second == alns_[j - 1].second + 1 &&
           (j - i) * stride + len <= opt_.max_read_bytes) {
      ++j;
    }
    batch_.read(leaf_addr(alns_[i].first), leaf_buf(alns_[i].second),
                static_cast<uint32_t>((j - i - 1) * stride + len));
    ++reads;
    i = j;
  }
  return reads;
}

// --- GET ----------------------------------------------------------------------

Result<XStoreClient::Look> XStoreClient::read_value(r2::Co& co, uint32_t aln, uint32_t slot,
                                                    uint64_t key, void* value) {
  const uint32_t v = remote_.area.value_bytes;
  const r2::RemoteAddr at{remote_.owner.node, remote_.area.region,
                          remote_.area.value_addr(aln, slot)};
  const r2::OpStatus s = co.read(at, value_, static_cast<uint32_t>(value_slot_bytes(v)));
  ++stats_.reads;
  ++stats_.round_trips;
  if (s != r2::OpStatus::kOk) return fabric_error(s, "READ of a value slot");
  if (load_word64(value_) != key || value_seal(key, value_ + 16, v) != load_word64(value_ + 8)) {
    ++stats_.torn;  // concurrent write, or the pair moved (delete/split)
    return Look::kRetry;
  }
  std::memcpy(value, value_ + 16, v);
  return Look::kFound;
}

bool XStoreClient::value_in_copy(const uint8_t* buf, uint64_t key, void* value) {
  const uint32_t fanout = remote_.area.fanout, v = remote_.area.value_bytes;
  // The key words may be torn: they only say which slot to check.
  const uint32_t cnt = std::min(unpack_meta(load_word64(buf)).count, fanout);
  const uint8_t* keys = buf + 16;
  for (uint32_t t = 0; t < cnt; ++t) {
    if (load_word64(keys + 8 * size_t{t}) != key) continue;
    // The same checks as read_value's: a slot that verifies and names the
    // key holds the key's value as of the copy (the owner breaks a slot's
    // seal before it rewrites or abandons it, xtree.h), whichever of the
    // keys and the slot the READ copied first.
    const uint8_t* s = buf + value_slot_offset(fanout, v, t);
    if (load_word64(s) != key || value_seal(key, s + 16, v) != load_word64(s + 8)) return false;
    std::memcpy(value, s + 16, v);
    ++stats_.values_in_leaf;
    return true;
  }
  return false;
}

Result<XStoreClient::Look> XStoreClient::take_value(r2::Co& co, const uint8_t* buf, bool whole,
                                                    uint32_t aln, uint32_t slot, uint64_t key,
                                                    void* value) {
  if (whole) {
    const uint32_t v = remote_.area.value_bytes;
    const uint8_t* s = buf + value_slot_offset(remote_.area.fanout, v, slot);
    if (load_word64(s) == key && value_seal(key, s + 16, v) == load_word64(s + 8)) {
      std::memcpy(value, s + 16, v);
      ++stats_.values_in_leaf;
      return Look::kFound;
    }
    ++stats_.torn;  // torn or moved in the copy: READ the slot itself
  }
  return read_value(co, aln, slot, key, value);
}

Result<XStoreClient::Look> XStoreClient::try_get(r2::Co& co, uint64_t key, void* value,
                                                 uint32_t* sub) {
  const uint32_t fanout = remote_.area.fanout;
  Prediction pr;
  bool predicted = false;
  if (opt_.prefetch_yield && !co.direct(remote_.owner.node)) {
    // Prefetch, let the other coroutines run while the lines arrive. The
    // cache may be retrained meanwhile (epoch() changes): a prediction made
    // before a yield is used only if the epoch is still the same after it.
    const uint64_t epoch = cache_.epoch();
    const uint32_t first_sub = cache_.pick(key);
    cache_.prefetch_sub(first_sub);
    co.yield();
    if (!cache_.trained()) return Look::kStale;
    if (cache_.epoch() == epoch) {
      pr = cache_.predict_in(first_sub, key);
      if (!cache_.models_only()) {
        cache_.prefetch_tt(pr.sub, pr.first);
        co.yield();
        if (!cache_.trained()) return Look::kStale;
      }
      predicted = cache_.epoch() == epoch;
    }
  }
  if (!predicted) pr = cache_.predict(key);
  *sub = pr.sub;
  const uint32_t n = pr.last - pr.first + 1;
  if (n > opt_.max_lookup_leaves) {
    ++stats_.wide;
    return Look::kWide;
  }
  const uint64_t gen = cache_.generation(pr.sub);
  win_valid_ = false;
  bool image_stale = false;
  DRTMX_RETURN_IF_ERROR(load_tt(co, pr.sub, pr.first, n, &image_stale));
  if (image_stale) return Look::kStale;  // the owner republished: RPC
  for (const TTEntry& e : entries_) {
    if (!e.valid) {
      ++stats_.invalid_entries;
      return Look::kStale;
    }
  }
  // Small leaves are read whole: the value comes with the keys.
  const auto used = static_cast<uint32_t>(leaf_used_bytes(fanout, remote_.area.value_bytes));
  const bool whole = used <= opt_.whole_leaf_max_bytes;
  const auto keys_len = whole ? used : static_cast<uint32_t>(leaf_keys_bytes(fanout));
  // best_leaf_first: round 1 reads only the leaf of the predicted position
  // (usually the key's), round 2 the rest of the range if needed.
  const uint32_t best = pr.best - pr.first;
  const bool two_rounds = opt_.best_leaf_first && n > 1;
  auto fetch = [&](bool best_only, bool skip_best) -> Status {
    alns_.clear();
    for (uint32_t i = 0; i < n; ++i) {
      if ((best_only && i != best) || (skip_best && i == best)) continue;
      alns_.emplace_back(entries_[i].aln, i);
    }
    stats_.reads += post_leaf_reads(keys_len);
    const r2::OpStatus s = co.run(batch_);
    ++stats_.round_trips;
    if (s != r2::OpStatus::kOk) return fabric_error(s, "READ of predicted leaves");
    return Status::ok();
  };
  DRTMX_RETURN_IF_ERROR(fetch(two_rounds, false));

  // Returns the slot of `key` in a verified leaf copy, -1 if absent, -2 torn.
  auto search = [&](const uint8_t* buf) -> int {
    const uint64_t meta = load_word64(buf);
    const auto* keys = reinterpret_cast<const uint64_t*>(buf + 16);
    if (keys_seal(meta, keys, fanout) != load_word64(buf + 8)) return -2;
    const uint32_t cnt = std::min(unpack_meta(meta).count, fanout);
    for (uint32_t t = 0; t < cnt; ++t) {
      if (load_word64(buf + 16 + 8 * size_t{t}) == key) return static_cast<int>(t);
    }
    return -1;
  };

  int mismatched = -1;
  uint32_t mismatches = 0;
  for (uint32_t round = 0; round < (two_rounds ? 2 : 1); ++round) {
    if (round == 1) DRTMX_RETURN_IF_ERROR(fetch(false, true));
    if (whole) {
      // Found-first: a value slot that verifies for the key is the key's
      // value whatever the rest of the copy says, so the keys seal is only
      // needed to trust a miss (absence, incarnation, sibling).
      for (uint32_t i = 0; i < n; ++i) {
        if (two_rounds && (round == 0) != (i == best)) continue;
        if (value_in_copy(leaf_buf(i), key, value)) return Look::kFound;
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      if (two_rounds && (round == 0) != (i == best)) continue;
      const int slot = search(leaf_buf(i));
      if (slot == -2) {
        ++stats_.torn;
        return Look::kRetry;
      }
      if (slot >= 0) {
        return take_value(co, leaf_buf(i), whole, entries_[i].aln, static_cast<uint32_t>(slot), key,
                          value);
      }
      if (unpack_meta(load_word64(leaf_buf(i))).incarnation != entries_[i].incarnation) {
        ++stats_.mismatches;
        cache_.invalidate(pr.sub, pr.first + i, gen);
        mismatched = static_cast<int>(i);
        ++mismatches;
      }
    }
  }
  if (mismatches == 0) return Look::kAbsent;
  // Speculation (§4.7): the split leaf kept its lower half; the upper half
  // went to the new right sibling, which NXT names. One sibling only.
  const uint32_t next = unpack_meta(load_word64(leaf_buf(static_cast<uint32_t>(mismatched)))).next;
  if (mismatches > 1 || next == 0) return Look::kStale;
  uint8_t* sib = leaf_buf(n);  // n < scan_batch_leaves (validated)
  const r2::OpStatus s2 = co.read(leaf_addr(next - 1), sib, keys_len);
  ++stats_.reads;
  ++stats_.round_trips;
  ++stats_.spec_reads;
  if (s2 != r2::OpStatus::kOk) return fabric_error(s2, "speculative READ of a sibling leaf");
  if (whole && value_in_copy(sib, key, value)) {
    ++stats_.spec_hits;
    return Look::kFound;
  }
  const int slot = search(sib);
  if (slot == -2) {
    ++stats_.torn;
    return Look::kRetry;
  }
  if (slot < 0) return Look::kStale;  // cannot prove absence past one split
  ++stats_.spec_hits;
  return take_value(co, sib, whole, next - 1, static_cast<uint32_t>(slot), key, value);
}

Result<bool> XStoreClient::rpc_get(r2::Co& co, uint64_t key, void* value, uint32_t refresh) {
  const RefreshReq rr = refresh_req(refresh);
  XGetReq req;
  req.h.tree = remote_.tree;
  req.key = key;
  msg_.clear();
  if (rr.sub != UINT32_MAX) req.h.flags = kWithRun;
  wire_put(msg_, req);
  if (rr.sub != UINT32_MAX) wire_put(msg_, rr.tail);
  ++stats_.rpcs;
  DRTMX_RETURN_IF_ERROR(in_context(
      co.call(remote_.owner, kRpcXGet, msg_.data(), static_cast<uint32_t>(msg_.size()), reply_),
      [&] { return "xstore GET fallback for key " + std::to_string(key); }));
  XGetReply head;
  if (!wire_get(std::span<const uint8_t>(reply_), 0, &head)) {
    return internal_error("xstore GET reply shorter than its head");
  }
  if (head.status == static_cast<uint8_t>(XStatus::kNotFound)) {
    return finish_rpc_get(co, rr, head, false);
  }
  if (head.status != static_cast<uint8_t>(XStatus::kOk)) {
    return internal_error("xstore GET reply with unexpected status " + std::to_string(head.status));
  }
  const uint32_t v = remote_.area.value_bytes;
  if (reply_.size() < sizeof head + v) {
    return internal_error("xstore GET reply holds " + std::to_string(reply_.size()) +
                          " bytes, expected " + std::to_string(sizeof head + v) +
                          " (value_bytes mismatch?)");
  }
  std::memcpy(value, reply_.data() + sizeof head, v);
  return finish_rpc_get(co, rr, head, true);
}

Result<bool> XStoreClient::finish_rpc_get(r2::Co& co, const RefreshReq& rr, const XGetReply& head,
                                          bool found) {
  if (rr.sub == UINT32_MAX) return found;
  // A failed refresh (e.g. a run cut by a concurrent split) leaves the entry
  // invalid: the next GET there falls back and refreshes again.
  const size_t off = get_reply_run_offset(head, remote_.area.value_bytes);
  if (off > reply_.size() ||
      !install_run(co, rr, std::span<const uint8_t>(reply_).subspan(off)).is_ok()) {
    ++stats_.refresh_failures;
  }
  return found;
}

Result<bool> XStoreClient::get(r2::Co& co, uint64_t key, void* value) {
  ++stats_.gets;
  if (!cache_.trained()) {
    return invalid_argument("xstore client: the cache is not trained: call warm() first");
  }
  uint32_t sub = 0;
  bool refresh = false;
  for (uint32_t a = 0; a <= opt_.torn_retries; ++a) {
    auto r = try_get(co, key, value, &sub);
    if (!r) return r.status();
    if (*r == Look::kFound) {
      ++stats_.gets_found;
      return true;
    }
    if (*r == Look::kAbsent) return false;
    if (*r == Look::kWide) break;  // the model is coarse there; retraining won't help
    if (*r == Look::kStale) {
      refresh = true;
      break;
    }
  }
  ++stats_.fallbacks;
  auto r = rpc_get(co, key, value, refresh ? sub : UINT32_MAX);
  if (r.is_ok() && *r) ++stats_.gets_found;
  return r;
}

// --- SCAN ---------------------------------------------------------------------

void XStoreClient::advance(Walk& w) const {
  if (++w.lln < cache_.sub_leaves(w.sub)) return;
  w.lln = 0;
  do {
    if (++w.sub >= cache_.sub_models()) {
      w.end = true;
      return;
    }
  } while (cache_.sub_empty(w.sub));
}

Result<XStoreClient::Look> XStoreClient::try_scan(r2::Co& co, uint64_t start, size_t n, bool* end,
                                                  uint32_t* stale_sub) {
  const uint32_t fanout = remote_.area.fanout;
  const uint32_t v = remote_.area.value_bytes;
  const uint32_t leaf_len = static_cast<uint32_t>(remote_.area.leaf_size());
  pairs_.clear();
  vals_.clear();
  win_valid_ = false;
  const Prediction pr = cache_.predict(start);
  if (pr.last - pr.first + 1 > opt_.max_lookup_leaves) {
    ++stats_.wide;
    return Look::kWide;
  }
  // The walk's (sub, lln) cursor is only meaningful for this version of
  // the cache; another coroutine may retrain while this one waits.
  const uint64_t epoch = cache_.epoch();
  Walk w;
  w.sub = pr.sub;
  w.lln = pr.first;
  bool first_chunk = true;
  uint32_t last_next = 1;
  while (true) {
    // Plan one batch: walk the TT until the planned leaves' counts cover
    // what is still needed (the predicted start leaves do not count: part
    // of their keys may be below start).
    plan_.clear();
    const uint64_t need = n - pairs_.size();
    uint64_t after = 0;
    while (!w.end && plan_.size() < opt_.scan_batch_leaves && after < need) {
      TTEntry e;
      bool image_stale = false;
      DRTMX_RETURN_IF_ERROR(tt_at(co, w.sub, w.lln, &e, &image_stale));
      if (image_stale) {
        *stale_sub = UINT32_MAX;  // nothing to refresh: the owner republished
        return Look::kStale;
      }
      // A models-only READ waited: the cache may have been replaced.
      if (cache_.epoch() != epoch) return Look::kRetry;
      // A leaf straddling two sub-models is read once — only when both
      // entries name the same image: after a split, the sub-model retrained
      // since names the bumped incarnation and the other the old one, whose
      // upper half moved to a sibling the walk must not skip, so the stale
      // entry is planned and its mismatch sends the scan to the RPC path.
      const bool dup =
          w.have_prev && w.lln == 0 && e.aln == w.prev_aln && e.incarnation == w.prev_incarnation;
      if (!dup) {
        if (!e.valid) {
          ++stats_.invalid_entries;
          *stale_sub = w.sub;
          return Look::kStale;
        }
        plan_.push_back({w.sub, w.lln, cache_.generation(w.sub), e});
        if (!(first_chunk && w.sub == pr.sub && w.lln <= pr.last)) after += e.count;
        w.prev_aln = e.aln;
        w.prev_incarnation = e.incarnation;
        w.have_prev = true;
      }
      advance(w);
    }
    if (plan_.empty()) {
      // The TT ends but the last leaf read has a right sibling: stale.
      *stale_sub = cache_.sub_models() - 1;
      return Look::kStale;
    }
    alns_.clear();
    for (size_t i = 0; i < plan_.size(); ++i) {
      alns_.emplace_back(plan_[i].e.aln, static_cast<uint32_t>(i));
    }
    stats_.reads += post_leaf_reads(leaf_len);
    const r2::OpStatus s = co.run(batch_);
    ++stats_.round_trips;
    if (s != r2::OpStatus::kOk) return fabric_error(s, "READ of scanned leaves");
    if (cache_.epoch() != epoch) return Look::kRetry;
    for (size_t i = 0; i < plan_.size(); ++i) {
      const uint8_t* buf = leaf_buf(static_cast<uint32_t>(i));
      const uint64_t meta = load_word64(buf);
      if (keys_seal(meta, reinterpret_cast<const uint64_t*>(buf + 16), fanout) !=
          load_word64(buf + 8)) {
        ++stats_.torn;
        return Look::kRetry;
      }
      const LeafMeta m = unpack_meta(meta);
      if (m.incarnation != plan_[i].e.incarnation) {
        ++stats_.mismatches;
        cache_.invalidate(plan_[i].sub, plan_[i].lln, plan_[i].generation);
        *stale_sub = plan_[i].sub;
        return Look::kStale;
      }
      const uint32_t cnt = std::min(m.count, fanout);
      for (uint32_t t = 0; t < cnt; ++t) {
        const uint64_t k = load_word64(buf + 16 + 8 * size_t{t});
        if (k < start) continue;
        const uint8_t* slot = buf + value_slot_offset(fanout, v, t);
        if (load_word64(slot) != k || value_seal(k, slot + 16, v) != load_word64(slot + 8)) {
          ++stats_.torn;
          return Look::kRetry;
        }
        pairs_.emplace_back(k, static_cast<uint32_t>(pairs_.size()));
        vals_.insert(vals_.end(), slot + 16, slot + 16 + v);
      }
      last_next = m.next;
    }
    first_chunk = false;
    if (pairs_.size() >= n || last_next == 0) break;
  }
  std::sort(pairs_.begin(), pairs_.end());
  *end = last_next == 0 && pairs_.size() <= n;
  return Look::kFound;
}

Status XStoreClient::rpc_scan(r2::Co& co, uint64_t start, size_t n, std::vector<uint64_t>& keys,
                              std::vector<uint8_t>& values, bool* end, uint32_t refresh) {
  keys.clear();
  values.clear();
  *end = false;
  uint64_t cur = start;
  RefreshReq rr = refresh_req(refresh);
  while (keys.size() < n) {
    XScanReq req;
    req.h.tree = remote_.tree;
    req.start = cur;
    req.n = static_cast<uint32_t>(std::min<size_t>(n - keys.size(), kMaxScanPairs));
    msg_.clear();
    if (rr.sub != UINT32_MAX) req.h.flags = kWithRun;  // first request only
    wire_put(msg_, req);
    if (rr.sub != UINT32_MAX) wire_put(msg_, rr.tail);
    ++stats_.rpcs;
    DRTMX_RETURN_IF_ERROR(in_context(
        co.call(remote_.owner, kRpcXScan, msg_.data(), static_cast<uint32_t>(msg_.size()), reply_),
        [&] { return "xstore SCAN fallback from key " + std::to_string(cur); }));
    XScanReply head;
    DRTMX_RETURN_IF_ERROR(parse_scan_reply(reply_, remote_.area.value_bytes, &head, keys, values));
    if (rr.sub != UINT32_MAX) {
      const size_t off = scan_reply_run_offset(head, remote_.area.value_bytes);
      if (off > reply_.size() ||
          !install_run(co, rr, std::span<const uint8_t>(reply_).subspan(off)).is_ok()) {
        ++stats_.refresh_failures;
      }
      rr.sub = UINT32_MAX;
    }
    if (head.end_of_tree) {
      *end = true;
      break;
    }
    if (head.count == 0) return internal_error("xstore SCAN reply empty but not at the end");
    if (keys.back() == UINT64_MAX) {
      *end = true;
      break;
    }
    cur = keys.back() + 1;
  }
  return Status::ok();
}

Status XStoreClient::get_many(r2::Co& co, std::span<const uint64_t> keys, uint8_t* values,
                              uint8_t* found) {
  const uint32_t v = remote_.area.value_bytes;
  if (!cache_.trained()) {
    return invalid_argument("xstore client: the cache is not trained: call warm() first");
  }
  auto alone = [&](size_t i) -> Status {
    Result<bool> r = get(co, keys[i], values + i * v);
    if (!r.is_ok()) return r.status();
    found[i] = *r ? 1 : 0;
    return Status::ok();
  };
  if (keys.size() < 2 || cache_.models_only()) {
    for (size_t i = 0; i < keys.size(); ++i) DRTMX_RETURN_IF_ERROR(alone(i));
    return Status::ok();
  }
  const uint32_t fanout = remote_.area.fanout;
  const auto used = static_cast<uint32_t>(leaf_used_bytes(fanout, v));
  const bool whole = used <= opt_.whole_leaf_max_bytes;
  const auto keys_len = whole ? used : static_cast<uint32_t>(leaf_keys_bytes(fanout));
  many_alone_.clear();
  stats_.gets += keys.size();
  size_t next = 0;
  while (next < keys.size()) {
    // Plan a batch: keys in order while their distinct leaves fit the
    // buffers. alns_ holds (ALN, buffer) of the distinct leaves.
    many_.clear();
    many_leaves_.clear();
    alns_.clear();
    const uint64_t epoch = cache_.epoch();
    for (; next < keys.size(); ++next) {
      const Prediction pr = cache_.predict(keys[next]);
      const uint32_t n = pr.last - pr.first + 1;
      if (n > opt_.max_lookup_leaves) {
        ++stats_.wide;
        many_alone_.push_back(static_cast<uint32_t>(next));
        continue;
      }
      // Its leaves join the batch (each distinct leaf once), unless an
      // entry is invalid (then it goes alone) or the batch would outgrow
      // the buffers (then the next batch takes it).
      const size_t alns_before = alns_.size(), leaves_before = many_leaves_.size();
      bool usable = true;
      for (uint32_t l = 0; l < n; ++l) {
        const TTEntry e = cache_.tt(pr.sub, pr.first + l);
        if (!e.valid) {
          ++stats_.invalid_entries;
          usable = false;
          break;
        }
        uint32_t buf = UINT32_MAX;
        for (const auto& a : alns_) {
          if (a.first == e.aln) buf = a.second;
        }
        if (buf == UINT32_MAX) {
          buf = static_cast<uint32_t>(alns_.size());
          alns_.emplace_back(e.aln, buf);
        }
        many_leaves_.emplace_back(buf, e.incarnation);
      }
      if (!usable || alns_.size() > opt_.scan_batch_leaves) {
        alns_.resize(alns_before);
        many_leaves_.resize(leaves_before);
        if (usable) break;
        many_alone_.push_back(static_cast<uint32_t>(next));
        continue;
      }
      many_.push_back(
          ManyKey{static_cast<uint32_t>(next), static_cast<uint32_t>(leaves_before), n});
    }
    if (many_.empty()) continue;
    // Buffers in ALN order, so consecutive leaves coalesce into one READ;
    // the planned keys follow their leaves to the new buffers.
    std::vector<uint32_t>& remap = many_remap_;
    remap.assign(alns_.size(), 0);
    std::sort(alns_.begin(), alns_.end());
    for (uint32_t b = 0; b < alns_.size(); ++b) {
      remap[alns_[b].second] = b;
      alns_[b].second = b;
    }
    for (auto& l : many_leaves_) l.first = remap[l.first];
    stats_.reads += post_leaf_reads(keys_len);
    const r2::OpStatus st = co.run(batch_);
    ++stats_.round_trips;
    if (st != r2::OpStatus::kOk) return fabric_error(st, "READ of predicted leaves");
    const bool retrained = cache_.epoch() != epoch;  // entries planned from older models
    for (const ManyKey& mk : many_) {
      const uint64_t key = keys[mk.index];
      uint8_t* out = values + size_t{mk.index} * v;
      bool done = false, absent = !retrained;
      for (uint32_t l = 0; l < mk.count && !done; ++l) {
        const auto [buf, inc] = many_leaves_[mk.first + l];
        const uint8_t* copy = leaf_buf(buf);
        if (whole && value_in_copy(copy, key, out)) {
          done = true;
          break;
        }
        const uint64_t meta = load_word64(copy);
        const auto* kw = reinterpret_cast<const uint64_t*>(copy + 16);
        if (keys_seal(meta, kw, fanout) != load_word64(copy + 8)) {
          ++stats_.torn;
          absent = false;
          continue;
        }
        const uint32_t cnt = std::min(unpack_meta(meta).count, fanout);
        for (uint32_t t = 0; t < cnt; ++t) {
          if (load_word64(copy + 16 + 8 * size_t{t}) == key) absent = false;  // value not in copy
        }
        if (unpack_meta(meta).incarnation != inc) {
          ++stats_.mismatches;
          absent = false;
        }
      }
      if (done) {
        found[mk.index] = 1;
        ++stats_.gets_found;
      } else if (absent) {
        found[mk.index] = 0;  // every covering leaf read, as it was planned
      } else {
        many_alone_.push_back(mk.index);
      }
    }
  }
  // The rest alone (their get() reuses the leaf buffers: after all batches).
  for (uint32_t i : many_alone_) {
    --stats_.gets;  // get() counts it again
    DRTMX_RETURN_IF_ERROR(alone(i));
  }
  return Status::ok();
}

Status XStoreClient::scan(r2::Co& co, uint64_t start, size_t n, std::vector<uint64_t>& keys,
                          std::vector<uint8_t>& values, bool* end_of_tree) {
  ++stats_.scans;
  keys.clear();
  values.clear();
  bool end = false;
  if (end_of_tree != nullptr) *end_of_tree = false;
  if (n == 0) return Status::ok();
  if (!cache_.trained()) {
    return invalid_argument("xstore client: the cache is not trained: call warm() first");
  }
  uint32_t stale_sub = UINT32_MAX;
  for (uint32_t a = 0; a <= opt_.torn_retries; ++a) {
    auto r = try_scan(co, start, n, &end, &stale_sub);
    if (!r) return r.status();
    if (*r == Look::kFound) {
      const size_t take = std::min(n, pairs_.size());
      const uint32_t v = remote_.area.value_bytes;
      keys.reserve(take);
      values.reserve(take * v);
      for (size_t i = 0; i < take; ++i) {
        keys.push_back(pairs_[i].first);
        const uint8_t* p = vals_.data() + size_t{pairs_[i].second} * v;
        values.insert(values.end(), p, p + v);
      }
      if (end_of_tree != nullptr) *end_of_tree = end;
      return Status::ok();
    }
    if (*r == Look::kStale || *r == Look::kWide) break;
  }
  ++stats_.fallbacks;
  DRTMX_RETURN_IF_ERROR(rpc_scan(co, start, n, keys, values, &end, stale_sub));
  if (end_of_tree != nullptr) *end_of_tree = end;
  return Status::ok();
}

}  // namespace drtmx::store::xstore
