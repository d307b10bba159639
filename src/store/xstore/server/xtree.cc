#include "store/xstore/server/xtree.h"

#include <algorithm>
#include <numeric>
#include <thread>

#include "store/extent.h"
#include "store/xstore/server/version_lock.h"

namespace drtmx::store::xstore {

namespace {

// Leaf words in registered memory are read by optimistic owner-side readers
// while a writer may change them: every 8-byte word goes through
// atomic_ref (relaxed; the version lock orders them). Value bytes are
// copied with memcpy and the copy is discarded unless the version validates.
inline uint64_t load_word(const uint8_t* p) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(const_cast<uint8_t*>(p)))
      .load(std::memory_order_relaxed);
}
inline void store_word(uint8_t* p, uint64_t v) {
  std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p)).store(v, std::memory_order_relaxed);
}

constexpr uint32_t kInnerKeys = kMaxInnerKeys;  // capacity of an inner node

}  // namespace

// An inner node. Child i holds the keys in [keys[i-1], keys[i]) (with
// keys[-1] = -inf, keys[count] = +inf). All fields are atomics read
// optimistically under `lock`; leaf_children never changes.
struct XTree::Inner {
  VersionLock lock;
  std::atomic<uint32_t> count{0};
  bool leaf_children = false;
  std::atomic<uint64_t> keys[kInnerKeys];
  std::atomic<uint64_t> child[kInnerKeys + 1];  // Inner* or ALN

  uint32_t route(uint64_t key) const {
    uint32_t n = std::min(count.load(std::memory_order_relaxed), kInnerKeys);
    uint32_t i = 0;
    while (i < n && keys[i].load(std::memory_order_relaxed) <= key) ++i;
    return i;
  }
  bool full(uint32_t max) const { return count.load(std::memory_order_relaxed) >= max; }
};

// Owner-side control of one leaf: its version lock, its low fence (set
// before the leaf is published, never changed afterwards) and the key the
// leaf took last (read and written only under `lock`: split_leaf's test
// for an ascending run).
struct XTree::LeafCtl {
  VersionLock lock;
  std::atomic<uint64_t> low{0};
  uint64_t last_insert = 0;
};

inline XTree::LeafCtl& XTree::ctl(uint32_t aln) const {
  const uint64_t q = aln / kCtlBase + 1;
  const int k = 63 - __builtin_clzll(q);
  return ctl_chunks_[k].load(std::memory_order_acquire)[aln - kCtlBase * ((uint64_t{1} << k) - 1)];
}

// Where a descent ended: the leaf covering the key and its parent, with the
// versions they had.
struct XTree::Path {
  Inner* parent = nullptr;
  uint64_t parent_v = 0;
  uint32_t aln = 0;
  uint64_t leaf_v = 0;
};

Status XTreeOptions::validate(size_t region_bytes) const {
  const LeafArea& a = area;
  if (a.fanout < 2 || a.fanout > kMaxFanout) {
    return invalid_argument("XTreeOptions::area.fanout = " + std::to_string(a.fanout) +
                            ": must be in [2, " + std::to_string(kMaxFanout) + "]");
  }
  if (a.value_bytes == 0 || a.value_bytes > 65536) {
    return invalid_argument("XTreeOptions::area.value_bytes = " + std::to_string(a.value_bytes) +
                            ": must be in [1, 65536]");
  }
  if (a.leaf_capacity == 0 || a.leaf_capacity > (1u << 31) - 1) {
    return invalid_argument("XTreeOptions::area.leaf_capacity = " +
                            std::to_string(a.leaf_capacity) + ": must be in [1, 2^31 - 1]");
  }
  if (a.leaf_offset % 64 != 0) {
    return invalid_argument("XTreeOptions::area.leaf_offset = " + std::to_string(a.leaf_offset) +
                            ": must be a multiple of 64 (cache-line aligned leaves)");
  }
  if (a.leaf_offset > region_bytes || region_bytes - a.leaf_offset < a.bytes()) {
    return invalid_argument("XTree leaf area [" + std::to_string(a.leaf_offset) + ", +" +
                            std::to_string(a.bytes()) + ") does not fit region " +
                            std::to_string(a.region) + " of " + std::to_string(region_bytes) +
                            " bytes: enlarge the region or lower area.leaf_capacity");
  }
  if (inner_keys < 2 || inner_keys > kMaxInnerKeys) {
    return invalid_argument("XTreeOptions::inner_keys = " + std::to_string(inner_keys) +
                            ": must be in [2, " + std::to_string(kMaxInnerKeys) + "]");
  }
  if (split_log_capacity == 0) {
    return invalid_argument("XTreeOptions::split_log_capacity must be at least 1");
  }
  return Status::ok();
}

Result<std::unique_ptr<XTree>> XTree::create(uint8_t* region_base, size_t region_bytes,
                                             const XTreeOptions& options) {
  if (region_base == nullptr) return invalid_argument("XTree::create: region_base is null");
  DRTMX_RETURN_IF_ERROR(options.validate(region_bytes));
  std::unique_ptr<XTree> t(new XTree(region_base, options));
  if (!t->opt_.grow) t->backed_leaves_ = t->opt_.area.leaf_capacity;
  DRTMX_RETURN_IF_ERROR(t->back_leaf(0));
  t->ctl_chunks_[0].store(new LeafCtl[kCtlBase], std::memory_order_release);
  std::memset(t->leaf_ptr(0), 0, t->opt_.area.leaf_size());
  t->reseal(0, LeafMeta{0, 0, 0});  // leaf 0: empty, covers [0, 2^64)
  return t;
}

XTree::XTree(uint8_t* region_base, const XTreeOptions& options)
    : base_(region_base), opt_(options) {
  log_.resize(opt_.split_log_capacity);
  Inner* root = new_inner();
  root->leaf_children = true;
  root->child[0].store(0, std::memory_order_relaxed);
  root_.store(root, std::memory_order_release);
}

XTree::~XTree() {
  for (auto& c : ctl_chunks_) delete[] c.load(std::memory_order_relaxed);
}

Status XTree::back_leaf(uint32_t aln) {
  if (aln < backed_leaves_) return Status::ok();
  const uint64_t leaf = opt_.area.leaf_size();
  const uint64_t step = (next_extent_bytes(uint64_t{backed_leaves_} * leaf) + leaf - 1) / leaf;
  const uint64_t end = std::min<uint64_t>(
      std::max<uint64_t>(uint64_t{aln} + 1, backed_leaves_ + step), opt_.area.leaf_capacity);
  DRTMX_RETURN_IF_ERROR(
      opt_.grow(opt_.area.leaf_addr(backed_leaves_), (end - backed_leaves_) * leaf));
  backed_leaves_ = static_cast<uint32_t>(end);
  return Status::ok();
}

std::string XTree::grow_error() const {
  std::lock_guard<std::mutex> g(leaf_mu_);
  return grow_error_;
}

XTree::Inner* XTree::new_inner() {
  auto n = std::make_unique<Inner>();
  Inner* p = n.get();
  std::lock_guard<std::mutex> g(inner_mu_);
  inner_nodes_.push_back(std::move(n));
  return p;
}

// --- leaf writes (caller holds the leaf's lock, or the leaf is unpublished) --

void XTree::write_value_slot(uint32_t aln, uint32_t i, uint64_t key, const void* value) {
  const LeafArea& a = opt_.area;
  uint8_t* s = base_ + a.value_addr(aln, i);
  store_word(s + 8, ~uint64_t{0});  // the slot is torn while it is rewritten
  std::atomic_thread_fence(std::memory_order_release);
  store_word(s, key);
  std::memcpy(s + 16, value, a.value_bytes);
  std::atomic_thread_fence(std::memory_order_release);
  store_word(s + 8, value_seal(key, value, a.value_bytes));
}

void XTree::kill_value_slot(uint32_t aln, uint32_t i) {
  const LeafArea& a = opt_.area;
  uint8_t* s = base_ + a.value_addr(aln, i);
  const uint64_t key = load_word(s);
  store_word(s + 8, ~value_seal(key, s + 16, a.value_bytes));
}

void XTree::break_seal(uint32_t aln) {
  uint8_t* l = leaf_ptr(aln);
  store_word(l + 8, ~load_word(l + 8));
  std::atomic_thread_fence(std::memory_order_release);
}

void XTree::reseal(uint32_t aln, const LeafMeta& m) {
  uint8_t* l = leaf_ptr(aln);
  const uint64_t meta = pack_meta(m);
  std::atomic_thread_fence(std::memory_order_release);  // keys and values before meta
  store_word(l, meta);
  const uint64_t seal =
      keys_seal(meta, reinterpret_cast<const uint64_t*>(l + 16), opt_.area.fanout);
  std::atomic_thread_fence(std::memory_order_release);  // meta before the seal
  store_word(l + 8, seal);
}

// --- optimistic reads ---------------------------------------------------------

bool XTree::find_leaf(uint64_t key, Path& p) const {
  Inner* node = root_.load(std::memory_order_acquire);
  uint64_t v = node->lock.read_begin();
  if (node != root_.load(std::memory_order_acquire)) return false;
  for (;;) {
    // Acquire: a child published by a split is complete before its pointer.
    const uint64_t c = node->child[node->route(key)].load(std::memory_order_acquire);
    if (node->leaf_children) {
      const auto aln = static_cast<uint32_t>(c);
      if (aln >= next_leaf_.load(std::memory_order_acquire))
        return false;  // torn read of a moving node
      const uint64_t lv = ctl(aln).lock.read_begin();
      if (!node->lock.validate(v)) return false;
      p = Path{node, v, aln, lv};
      return true;
    }
    auto* next = reinterpret_cast<Inner*>(c);
    if (next == nullptr || !node->lock.validate(v)) return false;
    const uint64_t nv = next->lock.read_begin();
    if (!node->lock.validate(v)) return false;
    node = next;
    v = nv;
  }
}

XTree::LeafImage XTree::read_leaf_words(uint32_t aln) const {
  LeafImage img;
  const uint8_t* l = leaf_ptr(aln);
  img.meta = unpack_meta(load_word(l));
  img.count = std::min(img.meta.count, opt_.area.fanout);
  for (uint32_t i = 0; i < img.count; ++i) img.keys[i] = load_word(l + 16 + 8 * i);
  return img;
}

int XTree::find_slot(const LeafImage& img, uint64_t key) {
  for (uint32_t i = 0; i < img.count; ++i) {
    if (img.keys[i] == key) return static_cast<int>(i);
  }
  return -1;
}

XStatus XTree::get(uint64_t key, void* out, uint32_t* aln, uint32_t* incarnation) const {
  const size_t vb = opt_.area.value_bytes;
  for (;;) {
    Path p;
    if (!find_leaf(key, p)) {
      restarts_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    LeafImage img = read_leaf_words(p.aln);
    const int i = find_slot(img, key);
    if (i >= 0) std::memcpy(out, base_ + opt_.area.value_addr(p.aln, i) + 16, vb);
    if (!ctl(p.aln).lock.validate(p.leaf_v)) {
      restarts_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    if (aln) *aln = p.aln;
    if (incarnation) *incarnation = img.meta.incarnation;
    return i >= 0 ? XStatus::kOk : XStatus::kNotFound;
  }
}

void XTree::locate(uint64_t key, uint32_t* aln, uint32_t* incarnation) const {
  for (;;) {
    Path p;
    if (!find_leaf(key, p)) continue;
    const LeafMeta m = unpack_meta(load_word(leaf_ptr(p.aln)));
    if (!ctl(p.aln).lock.validate(p.leaf_v)) continue;
    *aln = p.aln;
    *incarnation = m.incarnation;
    return;
  }
}

bool XTree::snapshot_leaf(uint32_t aln, uint64_t from, LeafSnap& s) const {
  const size_t vb = opt_.area.value_bytes;
  for (int attempt = 0;; ++attempt) {
    const uint64_t v = ctl(aln).lock.read_begin();
    LeafImage img = read_leaf_words(aln);
    s.order.clear();
    for (uint32_t i = 0; i < img.count; ++i) {
      if (img.keys[i] >= from) s.order.push_back(i);
    }
    s.values.resize(s.order.size() * vb);
    for (size_t j = 0; j < s.order.size(); ++j) {
      std::memcpy(s.values.data() + j * vb, base_ + opt_.area.value_addr(aln, s.order[j]) + 16, vb);
    }
    if (ctl(aln).lock.validate(v)) {
      s.img = img;
      return true;
    }
    restarts_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool XTree::scan(uint64_t start, size_t n, std::vector<uint64_t>& keys,
                 std::vector<uint8_t>& values, uint64_t until) const {
  const size_t vb = opt_.area.value_bytes;
  keys.clear();
  values.clear();
  if (n == 0) return false;
  Path p;
  while (!find_leaf(start, p)) restarts_.fetch_add(1, std::memory_order_relaxed);
  LeafSnap s;
  uint32_t aln = p.aln;
  uint64_t from = start;
  for (;;) {
    snapshot_leaf(aln, from, s);
    // Sort this leaf's selected pairs by key and append. (Scratch per
    // thread: scans of one tree run on several threads at once.)
    thread_local std::vector<uint32_t> idx;
    idx.resize(s.order.size());
    std::iota(idx.begin(), idx.end(), 0u);
    // A leaf filled by ascending inserts (appends, split_leaf) is in key
    // order already: checking is cheaper than sorting.
    const auto by_key = [&](uint32_t a, uint32_t b) {
      return s.img.keys[s.order[a]] < s.img.keys[s.order[b]];
    };
    if (!std::is_sorted(idx.begin(), idx.end(), by_key)) std::sort(idx.begin(), idx.end(), by_key);
    for (uint32_t j : idx) {
      if (s.img.keys[s.order[j]] > until) return true;
      if (keys.size() == n) return false;
      keys.push_back(s.img.keys[s.order[j]]);
      values.insert(values.end(), s.values.begin() + j * vb, s.values.begin() + (j + 1) * vb);
    }
    if (s.img.meta.next == 0) return true;
    if (keys.size() == n) return false;
    // Keys only ever move right, so the sibling holds keys above this leaf's;
    // the filter guards against a concurrent split seen half-way.
    if (!keys.empty()) {
      if (keys.back() == UINT64_MAX) return true;
      from = std::max(from, keys.back() + 1);
    }
    aln = s.img.meta.next - 1;
  }
}

std::vector<LeafRun> XTree::export_range(uint64_t lo, uint64_t hi, size_t max_leaves,
                                         uint64_t* next_lo) const {
  std::vector<LeafRun> runs;
  if (next_lo) *next_lo = 0;
  if (lo > hi || max_leaves == 0) return runs;
  Path p;
  while (!find_leaf(lo, p)) restarts_.fetch_add(1, std::memory_order_relaxed);
  uint32_t aln = p.aln;
  for (;;) {
    LeafImage img;
    for (;;) {
      const uint64_t v = ctl(aln).lock.read_begin();
      img = read_leaf_words(aln);
      if (ctl(aln).lock.validate(v)) break;
      restarts_.fetch_add(1, std::memory_order_relaxed);
    }
    LeafRun r;
    r.aln = aln;
    r.incarnation = img.meta.incarnation;
    r.count = img.count;
    r.low = ctl(aln).low.load(std::memory_order_acquire);
    r.last_leaf = img.meta.next == 0;
    r.high = r.last_leaf ? 0 : ctl(img.meta.next - 1).low.load(std::memory_order_acquire);
    r.keys.assign(img.keys.begin(), img.keys.begin() + img.count);
    std::sort(r.keys.begin(), r.keys.end());
    const bool done = r.last_leaf || r.high > hi;
    const uint64_t high = r.high;
    runs.push_back(std::move(r));
    if (done) return runs;
    if (runs.size() >= max_leaves) {
      if (next_lo) *next_lo = high;
      return runs;
    }
    aln = img.meta.next - 1;
  }
}

// --- writes -------------------------------------------------------------------

XStatus XTree::insert(uint64_t key, const void* value, bool upsert) {
  if (const Attempt a = try_insert_at_finger(key, value, upsert); a.done) return a.status;
  for (;;) {
    const Attempt a = try_insert(key, value, upsert);
    if (a.done) return a.status;
    restarts_.fetch_add(1, std::memory_order_relaxed);
  }
}

XTree::Attempt XTree::try_insert(uint64_t key, const void* value, bool upsert) {
  const Attempt retry{false, XStatus::kOk};
  Inner* parent = nullptr;
  uint64_t pv = 0;
  Inner* node = root_.load(std::memory_order_acquire);
  uint64_t v = node->lock.read_begin();
  if (node != root_.load(std::memory_order_acquire)) return retry;
  for (;;) {
    if (node->full(opt_.inner_keys)) {
      // Split full inner nodes on the way down, so that a leaf split below
      // always finds room in its parent.
      if (parent != nullptr && !parent->lock.try_upgrade(pv)) return retry;
      if (!node->lock.try_upgrade(v)) {
        if (parent) parent->lock.unlock();
        return retry;
      }
      if (parent == nullptr && node != root_.load(std::memory_order_acquire)) {
        node->lock.unlock();
        return retry;
      }
      split_inner(parent, node);
      node->lock.unlock();
      if (parent) parent->lock.unlock();
      return retry;
    }
    const uint64_t c = node->child[node->route(key)].load(std::memory_order_acquire);
    if (!node->leaf_children) {
      auto* next = reinterpret_cast<Inner*>(c);
      if (next == nullptr || !node->lock.validate(v)) return retry;
      const uint64_t nv = next->lock.read_begin();
      if (!node->lock.validate(v)) return retry;
      parent = node;
      pv = v;
      node = next;
      v = nv;
      continue;
    }
    const auto aln = static_cast<uint32_t>(c);
    if (aln >= next_leaf_.load(std::memory_order_acquire)) return retry;
    LeafCtl& leaf = ctl(aln);
    const uint64_t lv = leaf.lock.read_begin();
    if (!node->lock.validate(v)) return retry;
    if (!leaf.lock.try_upgrade(lv)) return retry;
    // The leaf is locked and (validated parent) covers the key.
    const LeafImage img = read_leaf_words(aln);
    if (const Attempt a = insert_into_locked_leaf(aln, img, key, value, upsert); a.done) {
      leaf.lock.unlock();
      return a;
    }
    // Full leaf: split under the parent's lock.
    if (!node->lock.try_upgrade(v)) {
      leaf.lock.unlock();
      return retry;
    }
    const XStatus st = split_leaf(node, aln, img, key, value);
    leaf.lock.unlock();
    node->lock.unlock();
    return {true, st};
  }
}

XTree::Attempt XTree::insert_into_locked_leaf(uint32_t aln, const LeafImage& img, uint64_t key,
                                              const void* value, bool upsert) {
  const int i = find_slot(img, key);
  if (i >= 0) {
    if (upsert) write_value_slot(aln, static_cast<uint32_t>(i), key, value);
    return {true, upsert ? XStatus::kOk : XStatus::kAlreadyExists};
  }
  if (img.count >= opt_.area.fanout) return {false, XStatus::kOk};
  const uint32_t k = img.count;
  write_value_slot(aln, k, key, value);
  store_word(leaf_ptr(aln) + 16 + 8 * k, key);
  LeafMeta m = img.meta;
  m.count = k + 1;
  reseal(aln, m);
  ctl(aln).last_insert = key;
  finger_.store(aln, std::memory_order_relaxed);
  return {true, XStatus::kOk};
}

XTree::Attempt XTree::try_insert_at_finger(uint64_t key, const void* value, bool upsert) {
  const Attempt no{false, XStatus::kOk};
  // finger_ names only leaves that took an insert: published ones.
  const uint32_t aln = finger_.load(std::memory_order_relaxed);
  LeafCtl& leaf = ctl(aln);
  // Not waiting: a leaf locked by another writer (maybe splitting) is left
  // to the descent.
  if (!leaf.lock.try_lock()) return no;
  // Under the leaf's lock its range is [low, low of NXT): low never changes
  // once the leaf is published, and a split moves the upper part of the
  // range to a new sibling only under this lock (and points NXT at it
  // before the lock is released) — so the leaf covers the key exactly when
  // the descent would have ended here. The meta word (NXT) tells; the keys
  // are read only then.
  const uint32_t next = unpack_meta(load_word(leaf_ptr(aln))).next;
  const bool covers = key >= leaf.low.load(std::memory_order_acquire) &&
                      (next == 0 || key < ctl(next - 1).low.load(std::memory_order_acquire));
  const Attempt a =
      covers ? insert_into_locked_leaf(aln, read_leaf_words(aln), key, value, upsert) : no;
  leaf.lock.unlock();
  return a;
}

void XTree::split_inner(Inner* parent, Inner* node) {
  const uint32_t n = node->count.load(std::memory_order_relaxed);
  const uint32_t mid = n / 2;
  const uint64_t sep = node->keys[mid].load(std::memory_order_relaxed);
  Inner* right = new_inner();
  right->leaf_children = node->leaf_children;
  uint32_t rc = 0;
  for (uint32_t i = mid + 1; i < n; ++i, ++rc) {
    right->keys[rc].store(node->keys[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
    right->child[rc].store(node->child[i].load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
  }
  right->child[rc].store(node->child[n].load(std::memory_order_relaxed), std::memory_order_relaxed);
  right->count.store(rc, std::memory_order_relaxed);
  node->count.store(mid, std::memory_order_relaxed);
  if (parent == nullptr) {
    Inner* root = new_inner();
    root->leaf_children = false;
    root->keys[0].store(sep, std::memory_order_relaxed);
    root->child[0].store(reinterpret_cast<uint64_t>(node), std::memory_order_relaxed);
    root->child[1].store(reinterpret_cast<uint64_t>(right), std::memory_order_relaxed);
    root->count.store(1, std::memory_order_relaxed);
    root_.store(root, std::memory_order_release);  // before node's unlock
    return;
  }
  insert_separator(parent, sep, reinterpret_cast<uint64_t>(right));
}

void XTree::insert_separator(Inner* parent, uint64_t sep, uint64_t right_child) {
  const uint32_t n = parent->count.load(std::memory_order_relaxed);
  const uint32_t pos = parent->route(sep);  // first separator > sep
  for (uint32_t i = n; i > pos; --i) {
    parent->keys[i].store(parent->keys[i - 1].load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
    parent->child[i + 1].store(parent->child[i].load(std::memory_order_relaxed),
                               std::memory_order_relaxed);
  }
  parent->keys[pos].store(sep, std::memory_order_relaxed);
  parent->child[pos + 1].store(right_child, std::memory_order_release);  // publishes right
  parent->count.store(n + 1, std::memory_order_relaxed);
}

bool XTree::alloc_leaf(uint32_t* aln) {
  std::lock_guard<std::mutex> g(leaf_mu_);
  const uint32_t n = next_leaf_.load(std::memory_order_relaxed);
  if (n >= opt_.area.leaf_capacity) {
    grow_error_ = "all " + std::to_string(opt_.area.leaf_capacity) +
                  " leaves of its address space are in use";
    return false;
  }
  if (Status st = back_leaf(n); !st.is_ok()) {
    grow_error_ = st.message();
    return false;
  }
  // Its control block exists before the leaf number can be seen (readers
  // check aln < next_leaf_ with acquire before they touch ctl(aln)).
  const uint64_t q = n / kCtlBase + 1;
  const int k = 63 - __builtin_clzll(q);
  if (ctl_chunks_[k].load(std::memory_order_relaxed) == nullptr) {
    ctl_chunks_[k].store(new LeafCtl[kCtlBase << k], std::memory_order_release);
  }
  // Its memory may hold a leaf of a run before a restart (a recovered pool).
  std::memset(leaf_ptr(n), 0, opt_.area.leaf_size());
  next_leaf_.store(n + 1, std::memory_order_release);
  *aln = n;
  return true;
}

XStatus XTree::split_leaf(Inner* parent, uint32_t aln, const LeafImage& img, uint64_t key,
                          const void* value) {
  const LeafArea& a = opt_.area;
  const size_t vb = a.value_bytes;
  uint32_t right;
  if (!alloc_leaf(&right)) return XStatus::kOutOfLeaves;

  // An append (the key above every key of the leaf: ascending inserts such
  // as TPC-C's orders, at each district's end) keeps the leaf whole and
  // starts the right sibling with the new key alone. A half split would
  // leave every such leaf half empty for good (nothing is inserted below
  // the separator again) and split twice as often.
  bool append = true;
  for (uint32_t i = 0; i < img.count && append; ++i) append = img.keys[i] < key;
  if (append) return split_leaf_append(parent, aln, img, key, value, right);

  // All pairs plus the new one, in key order (values copied out first: the
  // old leaf's slots are rewritten below).
  const uint32_t total = img.count + 1;
  std::vector<uint64_t> ks(total);
  std::vector<uint8_t> vs(size_t{total} * vb);
  for (uint32_t i = 0; i < img.count; ++i) {
    ks[i] = img.keys[i];
    std::memcpy(vs.data() + i * vb, base_ + a.value_addr(aln, i) + 16, vb);
  }
  ks[img.count] = key;
  std::memcpy(vs.data() + size_t{img.count} * vb, value, vb);
  std::vector<uint32_t> order(total);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return ks[x] < ks[y]; });
  // An ascending run inside the leaf (the key comes right after the one the
  // leaf took last, with keys of another range above both: a district's
  // newest orders and the next district's oldest in one leaf) splits right
  // above the key: the run keeps the left leaf and goes on filling it, the
  // keys above move out once. Halving it would split again every
  // fanout / 2 inserts and leave half-empty leaves behind for good.
  const auto at = static_cast<uint32_t>(std::find(order.begin(), order.end(), img.count) -
                                        order.begin());  // the key's rank
  const bool run = at > 0 && ks[order[at - 1]] == ctl(aln).last_insert;
  const uint32_t left_n = run ? at + 1 : total / 2;  // append (at == total - 1) returned above
  const uint32_t right_n = total - left_n;
  const uint64_t sep = ks[order[left_n]];

  // 1. The new right sibling, complete before anything points at it. Its
  // lock is held while it is written: nothing reaches it through the tree
  // yet, but update_hinted accepts any allocated ALN.
  ctl(right).lock.lock();
  uint8_t* rl = leaf_ptr(right);
  for (uint32_t j = 0; j < right_n; ++j) {
    const uint32_t o = order[left_n + j];
    write_value_slot(right, j, ks[o], vs.data() + size_t{o} * vb);
    store_word(rl + 16 + 8 * j, ks[o]);
  }
  const LeafMeta rold = unpack_meta(load_word(rl));
  ctl(right).low.store(sep, std::memory_order_release);
  const bool key_left = at < left_n;
  if (!key_left) ctl(right).last_insert = key;
  reseal(right, LeafMeta{rold.incarnation, right_n, img.meta.next});
  ctl(right).lock.unlock();
  if (key_left) ctl(aln).last_insert = key;

  // 2. The old leaf keeps the lower part, in key order, with a new
  // incarnation and NXT = right. Its seal is broken first so that the old
  // image stops verifying before any slot changes.
  break_seal(aln);
  uint8_t* ll = leaf_ptr(aln);
  for (uint32_t j = 0; j < left_n; ++j) {
    const uint32_t o = order[j];
    write_value_slot(aln, j, ks[o], vs.data() + size_t{o} * vb);
    store_word(ll + 16 + 8 * j, ks[o]);
  }
  for (uint32_t j = left_n; j < a.fanout; ++j) {
    kill_value_slot(aln, j);
    store_word(ll + 16 + 8 * j, 0);
  }
  reseal(aln, LeafMeta{(img.meta.incarnation + 1) & 0xFFFFFF, left_n, right + 1});

  // 3. The parent routes [sep, ...) to the new leaf.
  publish_split(parent, aln, img, sep, right);
  return XStatus::kOk;
}

XStatus XTree::split_leaf_append(Inner* parent, uint32_t aln, const LeafImage& img, uint64_t key,
                                 const void* value, uint32_t right) {
  // 1. The right sibling holds the new key, complete before anything
  // points at it (as in split_leaf).
  ctl(right).lock.lock();
  uint8_t* rl = leaf_ptr(right);
  write_value_slot(right, 0, key, value);
  store_word(rl + 16, key);
  const LeafMeta rold = unpack_meta(load_word(rl));
  ctl(right).low.store(key, std::memory_order_release);
  ctl(right).last_insert = key;
  reseal(right, LeafMeta{rold.incarnation, 1, img.meta.next});
  ctl(right).lock.unlock();

  // 2. The old leaf keeps its slots; its range ends below `key`, so it
  // takes a new incarnation (a client's translation of `key` to it goes
  // stale) and NXT = right. The seal is broken before meta changes.
  break_seal(aln);
  reseal(aln, LeafMeta{(img.meta.incarnation + 1) & 0xFFFFFF, img.count, right + 1});

  // 3. The parent routes [key, ...) to the new leaf.
  publish_split(parent, aln, img, key, right);
  return XStatus::kOk;
}

void XTree::publish_split(Inner* parent, uint32_t aln, const LeafImage& img, uint64_t sep,
                          uint32_t right) {
  insert_separator(parent, sep, right);
  splits_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t lo = ctl(aln).low.load(std::memory_order_relaxed);
  const uint64_t hi = img.meta.next == 0
                          ? UINT64_MAX
                          : ctl(img.meta.next - 1).low.load(std::memory_order_relaxed) - 1;
  log_split(lo, hi, aln, right);
}

XStatus XTree::update(uint64_t key, const void* value) {
  for (;;) {
    Path p;
    if (!find_leaf(key, p) || !ctl(p.aln).lock.try_upgrade(p.leaf_v)) {
      restarts_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    LeafImage img = read_leaf_words(p.aln);
    const int i = find_slot(img, key);
    if (i >= 0) write_value_slot(p.aln, i, key, value);
    ctl(p.aln).lock.unlock();
    return i >= 0 ? XStatus::kOk : XStatus::kNotFound;
  }
}

XStatus XTree::update_hinted(uint64_t key, const void* value, uint32_t aln, uint32_t incarnation,
                             bool* hint_used) {
  *hint_used = false;
  if (aln < next_leaf_.load(std::memory_order_acquire)) {
    LeafCtl& leaf = ctl(aln);
    leaf.lock.lock();
    // Under the leaf's lock, a key found in the leaf is the key's only copy
    // (a key lives in exactly one leaf), whatever the path would say.
    LeafImage img = read_leaf_words(aln);
    const int i = img.meta.incarnation == (incarnation & 0xFFFFFF) ? find_slot(img, key) : -1;
    if (i >= 0) write_value_slot(aln, i, key, value);
    leaf.lock.unlock();
    if (i >= 0) {
      *hint_used = true;
      return XStatus::kOk;
    }
  }
  return update(key, value);
}

XStatus XTree::remove(uint64_t key) {
  for (;;) {
    Path p;
    if (!find_leaf(key, p) || !ctl(p.aln).lock.try_upgrade(p.leaf_v)) {
      restarts_.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    const uint32_t aln = p.aln;
    LeafImage img = read_leaf_words(aln);
    const int i = find_slot(img, key);
    if (i < 0) {
      ctl(aln).lock.unlock();
      return XStatus::kNotFound;
    }
    const uint32_t last = img.count - 1;
    uint8_t* l = leaf_ptr(aln);
    break_seal(aln);
    if (static_cast<uint32_t>(i) != last) {
      const uint8_t* ls = base_ + opt_.area.value_addr(aln, last);
      std::vector<uint8_t> v(ls + 16, ls + 16 + opt_.area.value_bytes);
      write_value_slot(aln, i, img.keys[last], v.data());
      store_word(l + 16 + 8 * i, img.keys[last]);
    }
    kill_value_slot(aln, last);
    store_word(l + 16 + 8 * last, 0);
    LeafMeta m = img.meta;
    m.count = last;
    reseal(aln, m);
    ctl(aln).lock.unlock();
    return XStatus::kOk;
  }
}

// --- split log -----------------------------------------------------------------

void XTree::log_split(uint64_t lo, uint64_t hi, uint32_t left, uint32_t right) {
  std::lock_guard<std::mutex> g(log_mu_);
  const uint64_t seq = ++log_seq_;
  log_[seq % log_.size()] = SplitEvent{seq, lo, hi, left, right};
}

std::vector<SplitEvent> XTree::splits_since(uint64_t since, size_t max, uint64_t* next,
                                            bool* lost) const {
  std::vector<SplitEvent> out;
  std::lock_guard<std::mutex> g(log_mu_);
  const uint64_t cap = log_.size();
  uint64_t first = since + 1;
  *lost = false;
  if (log_seq_ >= cap && first <= log_seq_ - cap) {
    *lost = true;
    first = log_seq_ - cap + 1;
  }
  uint64_t s = first;
  for (; s <= log_seq_ && out.size() < max; ++s) out.push_back(log_[s % cap]);
  *next = s - 1;
  return out;
}

uint64_t XTree::split_seq() const {
  std::lock_guard<std::mutex> g(log_mu_);
  return log_seq_;
}

XTreeStats XTree::stats() const {
  XTreeStats s;
  s.leaves_used = std::min(next_leaf_.load(std::memory_order_relaxed), opt_.area.leaf_capacity);
  s.splits = splits_.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> g(inner_mu_);
    s.inner_nodes = inner_nodes_.size();
  }
  s.restarts = restarts_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace drtmx::store::xstore
