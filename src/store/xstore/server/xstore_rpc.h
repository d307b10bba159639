// XStore RPCs: ids and wire formats of the requests an XStore owner serves
// (thesis-spec §4.2, §4.6 fallback, §4.7 server-centric operations).
// Shared by the owner (xstore_service.h registers the handlers) and the
// client (store/xstore/client). Header-only on purpose: the client library
// does not link the owner's.
//
// Encoding: every message is a fixed head (a POD struct below, copied with
// memcpy, host byte order — all nodes of a cluster share one architecture)
// followed by a variable part described beside each struct. Every request
// starts with XReqHead naming the tree (the id the owner registered it
// under: table partition or secondary index). Replies carry an XStatus
// byte for per-key outcomes (absent key, key exists, out of leaves);
// malformed requests and unknown trees are answered with an error reply
// (Co::call returns a Status naming the problem).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::xstore {

// RPC ids (txn uses 100..110).
constexpr uint16_t kRpcXGet = 130;
constexpr uint16_t kRpcXScan = 131;
constexpr uint16_t kRpcXInsert = 132;
constexpr uint16_t kRpcXUpdate = 133;
constexpr uint16_t kRpcXDelete = 134;
constexpr uint16_t kRpcXFetchRun = 135;
constexpr uint16_t kRpcXSplitsSince = 136;
constexpr uint16_t kRpcXDescribe = 137;
constexpr uint16_t kRpcXFetchModels = 138;

// Most pairs one SCAN reply carries, and most leaves one FETCH_RUN reply
// carries (the owner cuts longer answers; the client continues).
constexpr uint32_t kMaxScanPairs = 4096;
constexpr uint32_t kMaxRunLeaves = 1024;

struct XReqHead {
  uint32_t tree = 0;
  uint32_t flags = 0;  // per request, see below
};
static_assert(sizeof(XReqHead) == 8);

// Fallback with refresh (thesis-spec §4.6: the fallback's reply brings the
// fresh model data): a GET or SCAN whose head has flags & kWithRun carries
// an XRunTail right after its fixed request struct, and its reply carries,
// after everything else, the FETCH_RUN reply for [lo, hi] (XRunReply and
// its leaves; decode with parse_run_reply on the rest of the reply).
constexpr uint32_t kWithRun = 1;
struct XRunTail {
  uint64_t lo = 0;
  uint64_t hi = UINT64_MAX;
  uint32_t max_leaves = kMaxRunLeaves;
  uint32_t pad = 0;
};
static_assert(sizeof(XRunTail) == 24);

// GET: request XGetReq [+ XRunTail]; reply XGetReply, then value_bytes bytes
// if kOk [, then the run]. aln/incarnation: the leaf that covered the key in
// the image the answer comes from (also when absent).
struct XGetReq {
  XReqHead h;
  uint64_t key = 0;
};
struct XGetReply {
  uint8_t status = 0;  // XStatus: kOk or kNotFound
  uint8_t pad[3] = {};
  uint32_t aln = 0;
  uint32_t incarnation = 0;
  uint32_t pad2 = 0;
};
static_assert(sizeof(XGetReq) == 16 && sizeof(XGetReply) == 16);

// SCAN(start, n): the first min(n, kMaxScanPairs) pairs with key >= start.
// Request XScanReq [+ XRunTail]. Reply: XScanReply, then count keys (8 B
// each, ascending), then count values (value_bytes each, in key order)
// [, then the run]. end_of_tree = 1 when the scan
// reached the end of the tree's last leaf (a cross-partition scan that
// still wants pairs continues on the next partition); 0 with count < n
// means the reply was cut at kMaxScanPairs: continue from last key + 1.
struct XScanReq {
  XReqHead h;
  uint64_t start = 0;
  uint32_t n = 0;
  uint32_t pad = 0;
};
struct XScanReply {
  uint8_t status = 0;  // kOk
  uint8_t end_of_tree = 0;
  uint16_t pad = 0;
  uint32_t count = 0;
};
static_assert(sizeof(XScanReq) == 24 && sizeof(XScanReply) == 8);

// INSERT: XInsertReq then value_bytes bytes. flags: kInsertUpsert.
// Reply XPosReply: status kOk / kAlreadyExists / kOutOfLeaves, and on kOk
// the leaf that holds the key afterwards.
constexpr uint32_t kInsertUpsert = 1;
struct XInsertReq {
  XReqHead h;
  uint64_t key = 0;
};
struct XPosReply {
  uint8_t status = 0;
  uint8_t hint_used = 0;  // UPDATE: the position hint was valid and used
  uint8_t pad[2] = {};
  uint32_t aln = 0;
  uint32_t incarnation = 0;
  uint32_t pad2 = 0;
};
static_assert(sizeof(XInsertReq) == 16 && sizeof(XPosReply) == 16);

// UPDATE: XUpdateReq then value_bytes bytes. flags: kUpdateHasHint, then
// hint_aln / hint_incarnation are the client's predicted leaf (§4.7
// position hint). Reply XPosReply: kOk or kNotFound, hint_used.
constexpr uint32_t kUpdateHasHint = 1;
struct XUpdateReq {
  XReqHead h;
  uint64_t key = 0;
  uint32_t hint_aln = 0;
  uint32_t hint_incarnation = 0;
};
static_assert(sizeof(XUpdateReq) == 24);

// DELETE: XDeleteReq; reply XPosReply with kOk or kNotFound.
using XDeleteReq = XGetReq;

// FETCH_RUN(lo, hi): the training run for [lo, hi] — the leaves covering
// it in key order (XTree::export_range), at most min(max_leaves,
// kMaxRunLeaves). Reply: XRunReply, then per leaf an XRunLeaf followed by
// its `count` keys (ascending, 8 B each). done = 0 means the run was cut:
// ask again from next_lo. split_seq: XTree::split_seq() when the reply was
// made (a consumer of SPLITS_SINCE may start from it).
struct XFetchRunReq {
  XReqHead h;
  uint64_t lo = 0;
  uint64_t hi = UINT64_MAX;
  uint32_t max_leaves = kMaxRunLeaves;
  uint32_t pad = 0;
};
struct XRunReply {
  uint8_t status = 0;
  uint8_t done = 0;
  uint16_t pad = 0;
  uint32_t leaves = 0;
  uint64_t next_lo = 0;
  uint64_t split_seq = 0;
};
constexpr uint32_t kRunLeafLast = 1;  // XRunLeaf::flags: no right sibling
struct XRunLeaf {
  uint32_t aln = 0;
  uint32_t incarnation = 0;
  uint32_t count = 0;
  uint32_t flags = 0;
  uint64_t low = 0;
  uint64_t high = 0;
};
static_assert(sizeof(XFetchRunReq) == 32 && sizeof(XRunReply) == 24 && sizeof(XRunLeaf) == 32);

// SPLITS_SINCE(since): split events with seq > since (XTree::splits_since),
// at most min(max, kMaxRunLeaves). Reply: XSplitsReply then `count`
// XSplitRec. lost = 1: events were dropped, retrain everything.
struct XSplitsReq {
  XReqHead h;
  uint64_t since = 0;
  uint32_t max = kMaxRunLeaves;
  uint32_t pad = 0;
};
struct XSplitsReply {
  uint8_t status = 0;
  uint8_t lost = 0;
  uint16_t pad = 0;
  uint32_t count = 0;
  uint64_t next = 0;  // pass as `since` next time
};
struct XSplitRec {
  uint64_t seq = 0;
  uint64_t lo = 0;
  uint64_t hi = 0;
  uint32_t left = 0;
  uint32_t right = 0;
};
static_assert(sizeof(XSplitsReq) == 24 && sizeof(XSplitsReply) == 16 && sizeof(XSplitRec) == 32);

// DESCRIBE: XReqHead only; reply XDescribeReply: the tree's LeafArea.
struct XDescribeReply {
  uint16_t region = 0;
  uint16_t pad[3] = {};
  uint64_t leaf_offset = 0;
  uint32_t fanout = 0;
  uint32_t value_bytes = 0;
  uint32_t leaf_capacity = 0;
  uint32_t pad2 = 0;
  uint64_t split_seq = 0;
};
static_assert(sizeof(XDescribeReply) == 40);

// FETCH_MODELS: the XModel the owner's TtPublisher (tt_publisher.h) trained
// over the tree, and where its sealed TT image lies — what a models-only
// client installs (XStoreClient::fetch_models, XCache::install_models).
// Request XFetchModelsReq: known_generation = the generation the client
// holds (0 = none); equal to the owner's -> reply XModelsReply with
// unchanged = 1 and nothing else. Otherwise the reply is XModelsReply, then
// `knots` XKnotRec (the spline top model; 0 for LR), then `count`
// XSubModelRec for sub-models [first_sub, first_sub + count) of m, at most
// min(max_subs, kMaxModelSubs) per reply: ask again from first_sub + count
// until m, and start over when the generation changed between pages. The
// image is at (owner node, region, image_offset), image_bytes long, in the
// sealed layout of XCache::write_sealed_image. A tree without a publisher,
// or not published yet, gets an error reply.
constexpr uint32_t kMaxModelSubs = 4096;
struct XFetchModelsReq {
  XReqHead h;
  uint64_t known_generation = 0;
  uint32_t first_sub = 0;
  uint32_t max_subs = kMaxModelSubs;
};
struct XModelsReply {
  uint8_t status = 0;
  uint8_t unchanged = 0;
  uint16_t region = 0;  // the image's region on the owner node
  uint32_t fanout = 0;
  uint64_t generation = 0;  // of the image and these models (never 0)
  uint64_t image_offset = 0;
  uint64_t image_bytes = 0;
  uint64_t split_seq = 0;  // XTree::split_seq() the models were trained at
  uint64_t total_keys = 0;
  uint32_t m = 0;  // sub-models in all
  uint32_t first_sub = 0;
  uint32_t count = 0;                            // XSubModelRec in this reply
  uint32_t knots = 0;                            // XKnotRec in this reply
  double top_slope = 0, top_x0 = 0, top_y0 = 0;  // the LR top model
};
struct XKnotRec {
  uint64_t key = 0;
  double y = 0;
};
struct XSubModelRec {
  double slope = 0, x0 = 0, y0 = 0;  // LinearModel
  float min_err = 0, max_err = 0;
  uint64_t key_min = 0, key_max = 0;
  uint64_t lo = 0, hi = 0;   // the key interval it answers for
  uint64_t first_chunk = 0;  // its first chunk in the sealed image
  uint32_t leaves = 0;       // TT entries (0: empty interval)
  uint32_t keys = 0;
};
static_assert(sizeof(XFetchModelsReq) == 24 && sizeof(XModelsReply) == 88 &&
              sizeof(XKnotRec) == 16 && sizeof(XSubModelRec) == 80);

// --- helpers shared by both sides ------------------------------------------

template <typename T>
inline void wire_put(std::vector<uint8_t>& out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

// Reads a T at `off` of `in`; false when `in` is too short.
template <typename T>
inline bool wire_get(std::span<const uint8_t> in, size_t off, T* v) {
  if (off > in.size() || in.size() - off < sizeof(T)) return false;
  std::memcpy(v, in.data() + off, sizeof(T));
  return true;
}

inline LeafArea describe_to_area(const XDescribeReply& r) {
  LeafArea a;
  a.region = r.region;
  a.leaf_offset = r.leaf_offset;
  a.fanout = r.fanout;
  a.value_bytes = r.value_bytes;
  a.leaf_capacity = r.leaf_capacity;
  return a;
}

// Decodes a FETCH_RUN reply into `runs` (appended) and its head.
inline Status parse_run_reply(std::span<const uint8_t> in, XRunReply* head,
                              std::vector<LeafRun>& runs) {
  if (!wire_get(in, 0, head)) return internal_error("xstore FETCH_RUN reply shorter than its head");
  size_t off = sizeof(XRunReply);
  for (uint32_t i = 0; i < head->leaves; ++i) {
    XRunLeaf l;
    if (!wire_get(in, off, &l)) return internal_error("xstore FETCH_RUN reply cut in a leaf head");
    off += sizeof l;
    if (in.size() - off < size_t{l.count} * 8) {
      return internal_error("xstore FETCH_RUN reply cut in the keys of leaf " +
                            std::to_string(l.aln));
    }
    LeafRun r;
    r.aln = l.aln;
    r.incarnation = l.incarnation;
    r.count = l.count;
    r.low = l.low;
    r.high = l.high;
    r.last_leaf = (l.flags & kRunLeafLast) != 0;
    r.keys.resize(l.count);
    // A leaf emptied by deletes has no keys (memcpy into null data() is UB).
    if (l.count != 0) std::memcpy(r.keys.data(), in.data() + off, size_t{l.count} * 8);
    off += size_t{l.count} * 8;
    runs.push_back(std::move(r));
  }
  return Status::ok();
}

// Where the run of a kWithRun reply starts.
inline size_t get_reply_run_offset(const XGetReply& head, uint32_t value_bytes) {
  return sizeof(XGetReply) + (head.status == 0 ? value_bytes : 0);
}
inline size_t scan_reply_run_offset(const XScanReply& head, uint32_t value_bytes) {
  return sizeof(XScanReply) + size_t{head.count} * (8 + value_bytes);
}

// Decodes a SCAN reply: keys appended to `keys`, values to `values`.
inline Status parse_scan_reply(std::span<const uint8_t> in, uint32_t value_bytes, XScanReply* head,
                               std::vector<uint64_t>& keys, std::vector<uint8_t>& values) {
  if (!wire_get(in, 0, head)) return internal_error("xstore SCAN reply shorter than its head");
  const size_t need = sizeof(XScanReply) + size_t{head->count} * (8 + value_bytes);
  if (in.size() < need) {
    return internal_error("xstore SCAN reply holds " + std::to_string(in.size()) +
                          " bytes, its head promises " + std::to_string(need) +
                          " (value_bytes mismatch?)");
  }
  const uint8_t* p = in.data() + sizeof(XScanReply);
  const size_t k0 = keys.size();
  keys.resize(k0 + head->count);
  if (head->count != 0) std::memcpy(keys.data() + k0, p, size_t{head->count} * 8);
  p += size_t{head->count} * 8;
  values.insert(values.end(), p, p + size_t{head->count} * value_bytes);
  return Status::ok();
}

// Splits a FETCH_MODELS reply into its head, knot and sub-model bytes
// (sizes checked; the records are decoded by XCache::install_models).
inline Status parse_models_reply(std::span<const uint8_t> in, XModelsReply* head,
                                 std::span<const uint8_t>* knots, std::span<const uint8_t>* subs) {
  if (!wire_get(in, 0, head))
    return internal_error("xstore FETCH_MODELS reply shorter than its head");
  *knots = {};
  *subs = {};
  if (head->unchanged) return Status::ok();
  const size_t kb = size_t{head->knots} * sizeof(XKnotRec);
  const size_t sb = size_t{head->count} * sizeof(XSubModelRec);
  if (in.size() != sizeof(XModelsReply) + kb + sb) {
    return internal_error("xstore FETCH_MODELS reply holds " + std::to_string(in.size()) +
                          " bytes, its head promises " +
                          std::to_string(sizeof(XModelsReply) + kb + sb));
  }
  *knots = in.subspan(sizeof(XModelsReply), kb);
  *subs = in.subspan(sizeof(XModelsReply) + kb, sb);
  return Status::ok();
}

// Decodes a SPLITS_SINCE reply (events appended).
inline Status parse_splits_reply(std::span<const uint8_t> in, XSplitsReply* head,
                                 std::vector<SplitEvent>& events) {
  if (!wire_get(in, 0, head)) return internal_error("xstore SPLITS_SINCE reply too short");
  size_t off = sizeof(XSplitsReply);
  for (uint32_t i = 0; i < head->count; ++i) {
    XSplitRec r;
    if (!wire_get(in, off, &r)) return internal_error("xstore SPLITS_SINCE reply cut");
    off += sizeof r;
    events.push_back(SplitEvent{r.seq, r.lo, r.hi, r.left, r.right});
  }
  return Status::ok();
}

}  // namespace drtmx::store::xstore
