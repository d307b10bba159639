#include "store/xstore/client/xcache.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "store/record.h"
#include "store/word_copy.h"
#include "store/xstore/server/xstore_rpc.h"

namespace drtmx::store::xstore {

namespace {
// Slack added to error bounds so that the subtraction/addition in predict()
// cannot round a bound past a training point (positions are < 2^40).
constexpr double kErrSlack = 1e-6;

// The smallest float >= x (error bounds may only grow when narrowed).
float round_up(double x) {
  float f = static_cast<float>(x);
  if (static_cast<double>(f) < x) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

// Index of the last leaf of `run` whose low fence is <= key (run[0].low <= key).
size_t covering(std::span<const LeafRun> run, uint64_t key) {
  auto it = std::upper_bound(run.begin(), run.end(), key,
                             [](uint64_t k, const LeafRun& l) { return k < l.low; });
  return static_cast<size_t>(it - run.begin()) - 1;
}
}  // namespace

Status XCacheOptions::validate() const {
  if (fanout < 3 || fanout > kMaxFanout) {
    return invalid_argument("xcache fanout " + std::to_string(fanout) +
                            " is outside [3, 255]: set it to the tree's LeafArea::fanout");
  }
  if (train_keys_per_model == 0 || expand_keys_per_model == 0) {
    return invalid_argument("xcache train_keys_per_model and expand_keys_per_model must be > 0");
  }
  if (max_sub_models == 0) return invalid_argument("xcache max_sub_models must be > 0");
  return Status::ok();
}

XCache::XCache(const XCacheOptions& options) : opt_(options) {}

bool XCache::first_key_of(const TopModel& top, uint32_t i, uint64_t* k) {
  if (i == 0) {
    *k = 0;
    return true;
  }
  if (top.pick(UINT64_MAX) < i) return false;
  uint64_t lo = 0, hi = UINT64_MAX;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (top.pick(mid) >= i) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  *k = lo;
  return true;
}

Status XCache::check_run(std::span<const LeafRun> run, uint64_t lo, uint64_t hi) const {
  if (run.empty()) return invalid_argument("xcache training run is empty: fetch the leaves first");
  if (run.front().low > lo) {
    return invalid_argument("xcache training run starts at key " + std::to_string(run.front().low) +
                            ", after the range start " + std::to_string(lo) +
                            ": fetch from the leaf covering the start");
  }
  for (size_t j = 0; j < run.size(); ++j) {
    const LeafRun& l = run[j];
    if (l.count != l.keys.size() || l.count > opt_.fanout) {
      return invalid_argument("xcache training run: leaf " + std::to_string(l.aln) + " has count " +
                              std::to_string(l.count) + " but " + std::to_string(l.keys.size()) +
                              " keys (fanout " + std::to_string(opt_.fanout) + ")");
    }
    for (size_t t = 0; t < l.keys.size(); ++t) {
      if (l.keys[t] < l.low || (!l.last_leaf && l.keys[t] >= l.high) ||
          (t > 0 && l.keys[t] <= l.keys[t - 1])) {
        return invalid_argument("xcache training run: leaf " + std::to_string(l.aln) +
                                " keys are not ascending inside its fences [" +
                                std::to_string(l.low) + ", " + std::to_string(l.high) + ")");
      }
    }
    if (j + 1 < run.size()) {
      if (l.last_leaf || l.high != run[j + 1].low) {
        return invalid_argument("xcache training run: leaf " + std::to_string(l.aln) + " ends at " +
                                std::to_string(l.high) + " but the next starts at " +
                                std::to_string(run[j + 1].low) + ": refetch the run");
      }
    }
  }
  const LeafRun& last = run.back();
  if (!last.last_leaf && last.high <= hi) {
    return invalid_argument("xcache training run ends at key " + std::to_string(last.high) +
                            ", before the range end " + std::to_string(hi) +
                            ": fetch through the leaf covering the end");
  }
  return Status::ok();
}

void XCache::train_sub(Sub& s, std::vector<uint64_t>& tt, std::span<const LeafRun> leaves) {
  const uint32_t n = opt_.fanout;
  LinearFitter fit;
  points_.clear();
  tt.clear();
  s.keys = 0;
  s.misses = 0;
  auto add = [&](uint64_t k, double pos) {
    fit.add(k, pos);
    points_.emplace_back(k, pos);
  };
  for (size_t j = 0; j < leaves.size(); ++j) {
    const LeafRun& l = leaves[j];
    const uint64_t lo = std::max(l.low, s.lo);
    const uint64_t hi = l.last_leaf ? s.hi : std::min(l.high - 1, s.hi);
    const auto begin = std::lower_bound(l.keys.begin(), l.keys.end(), lo);
    const auto end = std::upper_bound(l.keys.begin(), l.keys.end(), hi);
    const double base = static_cast<double>(j) * n;
    const double step = static_cast<double>(n - 1) / static_cast<double>(l.keys.size() + 1);
    // The outer fences of the sub-model (low of its first leaf, high of its
    // last) are not fitted: they may lie arbitrarily far from any key (0,
    // 2^64 - 1, a cluster gap) and would tilt the line; keys beyond the
    // fitted points are answered by clamping in predict().
    if (j > 0) add(lo, base + step * static_cast<double>(begin - l.keys.begin()));
    for (auto it = begin; it != end; ++it) {
      add(*it, base + step * static_cast<double>(it - l.keys.begin() + 1));
    }
    if (j + 1 < leaves.size()) add(hi, base + step * static_cast<double>(end - l.keys.begin() + 1));
    s.keys += static_cast<uint32_t>(end - begin);
    tt.push_back(pack_tt({true, l.aln, l.incarnation, l.count}));
  }
  s.model.lr = fit.fit();
  s.model.key_min = points_.empty() ? s.lo : points_.front().first;
  s.model.key_max = points_.empty() ? s.hi : points_.back().first;
  double over = 0, under = 0;
  for (auto& [k, pos] : points_) {
    const double p = s.model.lr.predict(k);
    over = std::max(over, p - pos);
    under = std::max(under, pos - p);
  }
  s.model.min_err = round_up(over + kErrSlack);
  s.model.max_err = round_up(under + kErrSlack);
  s.leaves = static_cast<uint32_t>(leaves.size());
  s.generation = ++epoch_;  // unique across sub-models and trainings
}

Status XCache::train(std::span<const LeafRun> run, uint32_t sub_models) {
  DRTMX_RETURN_IF_ERROR(opt_.validate());
  if (models_only_) {
    return invalid_argument(
        "xcache: a models-only cache cannot train; train a full cache and "
        "take models_only_copy()");
  }
  DRTMX_RETURN_IF_ERROR(check_run(run, 0, UINT64_MAX));
  if (run.front().low != 0 || !run.back().last_leaf) {
    return invalid_argument(
        "xcache full training needs the whole tree: first leaf from key 0 "
        "through the last leaf");
  }
  uint64_t keys = 0;
  for (const LeafRun& l : run) keys += l.count;
  uint64_t m = sub_models;
  if (m == 0)
    m = std::max<uint64_t>(1, (keys + opt_.train_keys_per_model - 1) / opt_.train_keys_per_model);
  if (m > opt_.max_sub_models) {
    return invalid_argument("xcache: " + std::to_string(m) + " sub-models exceed max_sub_models " +
                            std::to_string(opt_.max_sub_models));
  }

  // Top model over the CDF, scaled to [0, M).
  TopModel top;
  top.m = static_cast<uint32_t>(m);
  {
    LinearFitter f;
    const double scale = keys == 0 ? 0 : static_cast<double>(m) / static_cast<double>(keys);
    uint64_t rank = 0;
    for (const LeafRun& l : run) {
      for (uint64_t k : l.keys) f.add(k, static_cast<double>(rank++) * scale);
    }
    top.lr = f.fit();
  }
  if (opt_.top_model == TopKind::kSpline && keys > 1) {
    const uint64_t knots = std::clamp<uint64_t>(opt_.spline_knots, 2, keys);
    const double scale = static_cast<double>(m) / static_cast<double>(keys);
    uint64_t rank = 0, next = 0, i = 0;
    for (const LeafRun& l : run) {
      for (uint64_t k : l.keys) {
        if (rank == next) {
          top.knots.emplace_back(k, static_cast<double>(rank) * scale);
          ++i;
          next = i * (keys - 1) / (knots - 1);
        }
        ++rank;
      }
    }
  }

  std::vector<Sub> subs(m);
  std::vector<std::vector<uint64_t>> tts(m);
  uint64_t tt_entries = 0;
  std::vector<uint64_t> firsts(m + 1);
  std::vector<bool> has(m + 1, false);
  for (uint32_t i = 0; i <= m; ++i) has[i] = i < m && first_key_of(top, i, &firsts[i]);
  for (uint32_t i = 0; i < m; ++i) {
    Sub& s = subs[i];
    if (!has[i] || (i + 1 < m && has[i + 1] && firsts[i + 1] == firsts[i])) continue;  // empty
    s.lo = firsts[i];
    s.hi = (i + 1 < m && has[i + 1]) ? firsts[i + 1] - 1 : UINT64_MAX;
    const size_t a = covering(run, s.lo), b = covering(run, s.hi);
    train_sub(s, tts[i], run.subspan(a, b - a + 1));
    tt_entries += s.leaves;
    if (tt_entries * 8 > opt_.tt_budget_bytes) {
      return exhausted("xcache: the translation table needs more than its budget of " +
                       std::to_string(opt_.tt_budget_bytes) +
                       " bytes: raise tt_budget_bytes or use a models-only cache");
    }
  }
  top_ = top;
  subs_ = std::move(subs);
  tts_ = std::move(tts);
  total_keys_ = 0;
  for (const Sub& s : subs_) total_keys_ += s.keys;
  ++epoch_;  // even if every interval was empty (no train_sub bumped it)
  return Status::ok();
}

Status XCache::retrain_sub(uint32_t sub, std::span<const LeafRun> run) {
  if (!trained() || sub >= subs_.size()) {
    return invalid_argument("xcache retrain_sub: no sub-model " + std::to_string(sub));
  }
  if (models_only_) {
    return invalid_argument("xcache retrain_sub: a models-only cache cannot retrain");
  }
  Sub& s = subs_[sub];
  if (s.leaves == 0) return Status::ok();  // empty interval: nothing to learn
  DRTMX_RETURN_IF_ERROR(check_run(run, s.lo, s.hi));
  const size_t a = covering(run, s.lo), b = covering(run, s.hi);
  uint64_t other = 0;
  for (uint32_t i = 0; i < subs_.size(); ++i) {
    if (i != sub) other += tts_[i].size();
  }
  if ((other + (b - a + 1)) * 8 > opt_.tt_budget_bytes) {
    return exhausted("xcache retrain_sub: the translation table would exceed its budget of " +
                     std::to_string(opt_.tt_budget_bytes) + " bytes");
  }
  total_keys_ -= s.keys;
  train_sub(s, tts_[sub], run.subspan(a, b - a + 1));
  total_keys_ += s.keys;
  return Status::ok();
}

bool XCache::needs_expansion() const {
  if (!trained()) return false;
  return total_keys_ > uint64_t{opt_.expand_keys_per_model} * top_.m;
}

uint32_t XCache::expansion_size() const {
  const uint64_t by_keys =
      (total_keys_ + opt_.train_keys_per_model - 1) / opt_.train_keys_per_model;
  return static_cast<uint32_t>(
      std::min<uint64_t>(opt_.max_sub_models, std::max<uint64_t>(uint64_t{top_.m} * 2, by_keys)));
}

void XCache::prefetch_sub(uint32_t sub) const {
  if (sub >= subs_.size()) return;
  // A Sub may straddle two lines; predict_in reads the model and `leaves`.
  __builtin_prefetch(&subs_[sub], 0, 1);
  __builtin_prefetch(reinterpret_cast<const char*>(&subs_[sub] + 1) - 1, 0, 1);
  if (!models_only_ && sub < tts_.size()) __builtin_prefetch(&tts_[sub], 0, 1);
}

void XCache::prefetch_tt(uint32_t sub, uint32_t first) const {
  if (models_only_ || sub >= tts_.size() || first >= tts_[sub].size()) return;
  __builtin_prefetch(tts_[sub].data() + first, 0, 1);
}

Prediction XCache::predict_in(uint32_t sub, uint64_t key) const {
  Prediction r;
  r.sub = sub;
  const Sub& s = subs_[r.sub];
  // Below the first fitted point: the first leaf covers the key (that point
  // lies in it, see xcache.h); above the last: the last leaf.
  if (key < s.model.key_min || s.leaves == 1) {
    r.first = r.last = r.best = 0;
    return r;
  }
  if (key > s.model.key_max) {
    r.first = r.last = r.best = s.leaves - 1;
    return r;
  }
  const double p = s.model.lr.predict(key);
  const double last = static_cast<double>(s.leaves - 1);
  // floor(pos / N) clamped to [0, leaves - 1]; NaN -> 0. For q = pos / N:
  // floor(q) > 0 iff q >= 1, floor(q) >= last iff q >= last (an integer),
  // and in between the truncating conversion is floor.
  const double n = opt_.fanout;
  auto lln = [&](double pos) -> uint32_t {
    const double q = pos / n;
    if (!(q >= 1)) return 0;
    if (q >= last) return s.leaves - 1;
    return static_cast<uint32_t>(q);
  };
  r.first = lln(p - s.model.min_err);
  r.last = lln(p + s.model.max_err);
  r.best = std::clamp(lln(p), r.first, r.last);
  return r;
}

void XCache::invalidate(uint32_t sub, uint32_t lln, uint64_t generation) {
  if (models_only_ || sub >= subs_.size()) return;
  Sub& s = subs_[sub];
  if (s.generation != generation || lln >= tts_[sub].size()) return;
  tts_[sub][lln] &= ~(uint64_t{1} << 63);
}

size_t XCache::tt_image_bytes() const {
  size_t n = 0;
  for (const Sub& s : subs_) n += s.leaves;
  return n * 8;
}

Status XCache::write_tt_image(uint8_t* dst, size_t capacity) const {
  if (models_only_) return invalid_argument("xcache: a models-only cache holds no TT to publish");
  if (capacity < tt_image_bytes()) {
    return out_of_range("xcache TT image needs " + std::to_string(tt_image_bytes()) +
                        " bytes, the destination has " + std::to_string(capacity));
  }
  size_t off = 0;
  for (const auto& t : tts_) {
    std::memcpy(dst + off, t.data(), t.size() * 8);
    off += t.size() * 8;
  }
  return Status::ok();
}

XCache XCache::models_only_copy(r2::RemoteAddr image) const {
  XCache c(opt_);
  c.top_ = top_;
  c.total_keys_ = total_keys_;
  c.epoch_ = epoch_;
  c.split_seq_ = split_seq_;
  c.models_only_ = true;
  c.tt_image_ = image;
  c.subs_.resize(subs_.size());
  uint64_t index = 0;
  for (size_t i = 0; i < subs_.size(); ++i) {
    Sub& d = c.subs_[i];
    const Sub& s = subs_[i];
    d.model = s.model;
    d.lo = s.lo;
    d.hi = s.hi;
    d.leaves = s.leaves;
    d.keys = s.keys;
    d.generation = s.generation;
    d.tt_index = index;
    index += s.leaves;
  }
  return c;
}

uint64_t tt_chunk_seal(uint64_t generation, uint32_t sub, uint32_t chunk, const uint64_t* entries) {
  RecordHeader h{};
  h.version = generation;
  h.key = (uint64_t{sub} << 32) | chunk;
  h.flags = 0x77C4;  // distinct from leaf and record seals
  return compute_seal(h, entries, size_t{XCache::kChunkEntries} * 8) | 1;
}

namespace {
uint64_t chunks_of(uint32_t leaves) {
  return (uint64_t{leaves} + XCache::kChunkEntries - 1) / XCache::kChunkEntries;
}
}  // namespace

size_t XCache::sealed_image_bytes() const {
  uint64_t chunks = 0;
  for (const Sub& s : subs_) chunks += chunks_of(s.leaves);
  return kChunkBytes * (1 + chunks);
}

Status XCache::write_sealed_image(uint8_t* dst, size_t capacity, uint64_t generation) const {
  if (models_only_ || !trained()) {
    return invalid_argument("xcache: only a trained full cache can write a sealed TT image");
  }
  if (generation == 0) return invalid_argument("xcache: a sealed TT image needs a generation > 0");
  if (reinterpret_cast<uintptr_t>(dst) % 8 != 0) {
    return invalid_argument("xcache: the sealed TT image must be 8-byte aligned");
  }
  const size_t need = sealed_image_bytes();
  if (capacity < need) {
    return exhausted("xcache sealed TT image needs " + std::to_string(need) +
                     " bytes, the area has " + std::to_string(capacity) +
                     ": give the publisher a larger image area");
  }
  const uint64_t zero = 0;
  store_words(dst, &zero, 8);  // readers of the header see "being rewritten"
  std::atomic_thread_fence(std::memory_order_release);
  uint64_t chunk[kChunkBytes / 8];
  uint64_t at = 1;  // chunk 0 of the area is the header
  for (uint32_t i = 0; i < subs_.size(); ++i) {
    const auto& t = tts_[i];
    for (uint64_t c = 0; c < chunks_of(subs_[i].leaves); ++c) {
      std::memset(chunk, 0, sizeof chunk);
      for (uint32_t e = 0; e < kChunkEntries && c * kChunkEntries + e < t.size(); ++e) {
        chunk[1 + e] = t[c * kChunkEntries + e];
      }
      chunk[0] = tt_chunk_seal(generation, i, static_cast<uint32_t>(c), chunk + 1);
      store_words(dst + kChunkBytes * at, chunk, kChunkBytes);
      ++at;
    }
  }
  const uint64_t head[3] = {0, kSealedImageMagic, at - 1};
  store_words(dst + 8, head + 1, 16);
  std::atomic_thread_fence(std::memory_order_release);
  store_words(dst, &generation, 8);
  return Status::ok();
}

void XCache::encode_models(uint32_t first, uint32_t max, XModelsReply* head,
                           std::vector<uint8_t>& out) const {
  const uint32_t m = static_cast<uint32_t>(subs_.size());
  first = std::min(first, m);
  const uint32_t count = std::min(max, m - first);
  head->fanout = opt_.fanout;
  head->m = m;
  head->first_sub = first;
  head->count = count;
  head->knots = static_cast<uint32_t>(top_.knots.size());
  head->total_keys = total_keys_;
  head->top_slope = top_.lr.slope();
  head->top_x0 = top_.lr.x0();
  head->top_y0 = top_.lr.y0();
  for (const auto& [k, y] : top_.knots) wire_put(out, XKnotRec{k, y});
  uint64_t chunk = 0;
  for (uint32_t i = 0; i < first; ++i) chunk += chunks_of(subs_[i].leaves);
  for (uint32_t i = first; i < first + count; ++i) {
    const Sub& s = subs_[i];
    XSubModelRec r;
    r.slope = s.model.lr.slope();
    r.x0 = s.model.lr.x0();
    r.y0 = s.model.lr.y0();
    r.min_err = s.model.min_err;
    r.max_err = s.model.max_err;
    r.key_min = s.model.key_min;
    r.key_max = s.model.key_max;
    r.lo = s.lo;
    r.hi = s.hi;
    r.first_chunk = chunk;
    r.leaves = s.leaves;
    r.keys = s.keys;
    wire_put(out, r);
    chunk += chunks_of(s.leaves);
  }
}

Status XCache::install_models(const XModelsReply& head, std::span<const uint8_t> knots,
                              std::span<const uint8_t> subs, r2::RemoteAddr image) {
  auto bad = [](const std::string& what) {
    return internal_error("xcache install_models: " + what);
  };
  if (head.fanout != opt_.fanout) {
    return invalid_argument("xcache install_models: the owner's models are for fanout " +
                            std::to_string(head.fanout) + ", this cache has fanout " +
                            std::to_string(opt_.fanout));
  }
  if (head.generation == 0) return bad("generation 0");
  if (head.m == 0 || head.first_sub != 0 || head.count != head.m ||
      subs.size() != size_t{head.m} * sizeof(XSubModelRec) ||
      knots.size() != size_t{head.knots} * sizeof(XKnotRec)) {
    return bad("records do not cover all " + std::to_string(head.m) + " sub-models");
  }
  if (head.image_bytes < kChunkBytes || head.image_bytes % kChunkBytes != 0) {
    return bad("image of " + std::to_string(head.image_bytes) + " bytes");
  }
  const uint64_t chunks = head.image_bytes / kChunkBytes - 1;
  TopModel top;
  top.m = head.m;
  if (!(head.top_slope >= 0) || !std::isfinite(head.top_slope)) return bad("top slope");
  top.lr = LinearModel::from_parts(head.top_slope, head.top_x0, head.top_y0);
  for (uint32_t i = 0; i < head.knots; ++i) {
    XKnotRec k;
    (void)wire_get(knots, size_t{i} * sizeof k, &k);
    if (i > 0 && (k.key <= top.knots.back().first || !(k.y >= top.knots.back().second))) {
      return bad("spline knots not ascending");
    }
    top.knots.emplace_back(k.key, k.y);
  }
  if (top.knots.size() == 1) return bad("a spline needs two knots");
  std::vector<Sub> next(head.m);
  uint64_t total = 0;
  for (uint32_t i = 0; i < head.m; ++i) {
    XSubModelRec r;
    (void)wire_get(subs, size_t{i} * sizeof r, &r);
    if (!(r.slope >= 0) || !std::isfinite(r.slope) || !(r.min_err >= 0) || !(r.max_err >= 0) ||
        r.lo > r.hi || r.first_chunk + chunks_of(r.leaves) > chunks) {
      return bad("sub-model " + std::to_string(i) + " is malformed");
    }
    Sub& s = next[i];
    s.model.lr = LinearModel::from_parts(r.slope, r.x0, r.y0);
    s.model.min_err = r.min_err;
    s.model.max_err = r.max_err;
    s.model.key_min = r.key_min;
    s.model.key_max = r.key_max;
    s.lo = r.lo;
    s.hi = r.hi;
    s.tt_index = r.first_chunk;
    s.leaves = r.leaves;
    s.keys = r.keys;
    total += r.keys;
  }
  top_ = std::move(top);
  subs_ = std::move(next);
  tts_.clear();
  for (Sub& s : subs_) s.generation = ++epoch_;  // unique within this cache
  ++epoch_;
  total_keys_ = total;
  split_seq_ = head.split_seq;
  models_only_ = true;
  tt_image_ = image;
  image_generation_ = head.generation;
  return Status::ok();
}

size_t XCache::memory_bytes() const {
  size_t n = sizeof(*this) + subs_.size() * sizeof(Sub) + top_.knots.capacity() * 16;
  n += tts_.capacity() * sizeof(std::vector<uint64_t>);
  for (const auto& t : tts_) n += t.capacity() * 8;
  return n;
}

}  // namespace drtmx::store::xstore
