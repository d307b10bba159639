#include "store/xstore/server/xstore_service.h"

#include <algorithm>
#include <memory>

#include "store/xstore/server/tt_publisher.h"

namespace drtmx::store::xstore {

namespace {

// Sends the reply `handle` built, or its error as an error reply. `out` is
// the calling worker's reply buffer (capacity reused across requests).
void answer(const XStoreService& svc, uint16_t id, r2::RpcRequest& req, std::vector<uint8_t>& out) {
  Status st = svc.handle(id, req.payload(), out);
  if (!req.wants_reply()) return;
  if (!st.is_ok()) {
    req.reply_error(st.message());
    return;
  }
  req.reply(out.data(), static_cast<uint32_t>(out.size()));
}

template <typename T>
void put(std::vector<uint8_t>& out, const T& v) {
  wire_put(out, v);
}

// Appends the training run for [lo, hi] (XRunReply + leaves) to `out`.
void append_run(const XTree& t, uint64_t lo, uint64_t hi, uint32_t max_leaves,
                std::vector<uint8_t>& out) {
  XRunReply rep;
  rep.split_seq = t.split_seq();  // before the export: a split after it is re-reported
  const size_t max = std::clamp<uint32_t>(max_leaves, 1, kMaxRunLeaves);
  auto runs = t.export_range(lo, hi, max, &rep.next_lo);
  rep.done = rep.next_lo == 0 ? 1 : 0;
  rep.leaves = static_cast<uint32_t>(runs.size());
  put(out, rep);
  for (const LeafRun& l : runs) {
    XRunLeaf h;
    h.aln = l.aln;
    h.incarnation = l.incarnation;
    h.count = l.count;
    h.flags = l.last_leaf ? kRunLeafLast : 0;
    h.low = l.low;
    h.high = l.high;
    put(out, h);
    const auto* kp = reinterpret_cast<const uint8_t*>(l.keys.data());
    out.insert(out.end(), kp, kp + l.keys.size() * 8);
  }
}

// The XRunTail of a GET/SCAN request that asks for a run (kWithRun).
Status run_tail(std::span<const uint8_t> req, size_t head, const char* what, XRunTail* tail) {
  if (!wire_get(req, head, tail)) {
    return invalid_argument(std::string("xstore ") + what +
                            " request has kWithRun but no XRunTail after its head (" +
                            std::to_string(req.size()) + " bytes)");
  }
  return Status::ok();
}

}  // namespace

Status XStoreService::add_tree(uint32_t id, XTree* tree) {
  if (tree == nullptr) return invalid_argument("XStoreService::add_tree: tree is null");
  if (!trees_.emplace(id, tree).second) {
    return already_exists("XStoreService: tree id " + std::to_string(id) +
                          " is already registered; give each tree its own id");
  }
  return Status::ok();
}

XTree* XStoreService::tree(uint32_t id) const {
  auto it = trees_.find(id);
  return it == trees_.end() ? nullptr : it->second;
}

Status XStoreService::add_publisher(uint32_t id, TtPublisher* publisher) {
  if (publisher == nullptr)
    return invalid_argument("XStoreService::add_publisher: publisher is null");
  if (tree(id) == nullptr) {
    return not_found("XStoreService::add_publisher: no tree with id " + std::to_string(id) +
                     " (add_tree first)");
  }
  if (!publishers_.emplace(id, publisher).second) {
    return already_exists("XStoreService: tree " + std::to_string(id) +
                          " already has a TT publisher");
  }
  return Status::ok();
}

Status XStoreService::register_on(r2::Worker& w) {
  // One reply buffer per worker: its handlers run only on its thread.
  auto out = std::make_shared<std::vector<uint8_t>>();
  for (uint16_t id : {kRpcXGet, kRpcXScan, kRpcXInsert, kRpcXUpdate, kRpcXDelete, kRpcXFetchRun,
                      kRpcXSplitsSince, kRpcXDescribe, kRpcXFetchModels}) {
    DRTMX_RETURN_IF_ERROR(w.register_handler(
        id, [this, id, out](r2::RpcRequest& req) { answer(*this, id, req, *out); }));
  }
  return Status::ok();
}

Result<XTree*> XStoreService::lookup(std::span<const uint8_t> req, size_t head_bytes,
                                     const char* what) const {
  XReqHead h;
  if (req.size() < head_bytes || !wire_get(req, 0, &h)) {
    return invalid_argument(std::string("xstore ") + what + " request of " +
                            std::to_string(req.size()) + " bytes is shorter than its head (" +
                            std::to_string(head_bytes) + " bytes)");
  }
  XTree* t = tree(h.tree);
  if (t == nullptr) {
    return not_found(std::string("xstore ") + what + ": no tree with id " + std::to_string(h.tree) +
                     " on this node (add_tree before serving)");
  }
  return t;
}

Status XStoreService::handle(uint16_t rpc_id, std::span<const uint8_t> req,
                             std::vector<uint8_t>& out) const {
  out.clear();
  switch (rpc_id) {
    case kRpcXGet: {
      auto t = lookup(req, sizeof(XGetReq), "GET");
      if (!t) return t.status();
      XGetReq r;
      (void)wire_get(req, 0, &r);
      XRunTail tail;
      if (r.h.flags & kWithRun) DRTMX_RETURN_IF_ERROR(run_tail(req, sizeof r, "GET", &tail));
      const uint32_t vb = (*t)->value_bytes();
      out.resize(sizeof(XGetReply) + vb);
      XGetReply rep;
      rep.status = static_cast<uint8_t>(
          (*t)->get(r.key, out.data() + sizeof(XGetReply), &rep.aln, &rep.incarnation));
      if (rep.status != static_cast<uint8_t>(XStatus::kOk)) out.resize(sizeof(XGetReply));
      std::memcpy(out.data(), &rep, sizeof rep);
      if (r.h.flags & kWithRun) append_run(**t, tail.lo, tail.hi, tail.max_leaves, out);
      return Status::ok();
    }
    case kRpcXScan: {
      auto t = lookup(req, sizeof(XScanReq), "SCAN");
      if (!t) return t.status();
      XScanReq r;
      (void)wire_get(req, 0, &r);
      XRunTail tail;
      if (r.h.flags & kWithRun) DRTMX_RETURN_IF_ERROR(run_tail(req, sizeof r, "SCAN", &tail));
      std::vector<uint64_t> keys;
      std::vector<uint8_t> values;
      const bool end = (*t)->scan(r.start, std::min(r.n, kMaxScanPairs), keys, values);
      XScanReply rep;
      rep.end_of_tree = end ? 1 : 0;
      rep.count = static_cast<uint32_t>(keys.size());
      out.reserve(sizeof rep + keys.size() * 8 + values.size());
      put(out, rep);
      const auto* kp = reinterpret_cast<const uint8_t*>(keys.data());
      out.insert(out.end(), kp, kp + keys.size() * 8);
      out.insert(out.end(), values.begin(), values.end());
      if (r.h.flags & kWithRun) append_run(**t, tail.lo, tail.hi, tail.max_leaves, out);
      return Status::ok();
    }
    case kRpcXInsert:
    case kRpcXUpdate: {
      const bool ins = rpc_id == kRpcXInsert;
      const size_t head = ins ? sizeof(XInsertReq) : sizeof(XUpdateReq);
      auto t = lookup(req, head, ins ? "INSERT" : "UPDATE");
      if (!t) return t.status();
      const uint32_t vb = (*t)->value_bytes();
      if (req.size() != head + vb) {
        return invalid_argument(std::string("xstore ") + (ins ? "INSERT" : "UPDATE") +
                                " request carries " + std::to_string(req.size() - head) +
                                " value bytes; the tree's values are " + std::to_string(vb) +
                                " bytes");
      }
      const uint8_t* value = req.data() + head;
      XPosReply rep;
      XStatus st;
      uint64_t key;
      if (ins) {
        XInsertReq r;
        (void)wire_get(req, 0, &r);
        key = r.key;
        st = (*t)->insert(r.key, value, (r.h.flags & kInsertUpsert) != 0);
      } else {
        XUpdateReq r;
        (void)wire_get(req, 0, &r);
        key = r.key;
        if (r.h.flags & kUpdateHasHint) {
          bool used = false;
          st = (*t)->update_hinted(r.key, value, r.hint_aln, r.hint_incarnation, &used);
          rep.hint_used = used ? 1 : 0;
        } else {
          st = (*t)->update(r.key, value);
        }
      }
      rep.status = static_cast<uint8_t>(st);
      if (st == XStatus::kOk) (*t)->locate(key, &rep.aln, &rep.incarnation);
      put(out, rep);
      return Status::ok();
    }
    case kRpcXDelete: {
      auto t = lookup(req, sizeof(XDeleteReq), "DELETE");
      if (!t) return t.status();
      XDeleteReq r;
      (void)wire_get(req, 0, &r);
      XPosReply rep;
      rep.status = static_cast<uint8_t>((*t)->remove(r.key));
      put(out, rep);
      return Status::ok();
    }
    case kRpcXFetchRun: {
      auto t = lookup(req, sizeof(XFetchRunReq), "FETCH_RUN");
      if (!t) return t.status();
      XFetchRunReq r;
      (void)wire_get(req, 0, &r);
      append_run(**t, r.lo, r.hi, r.max_leaves, out);
      return Status::ok();
    }
    case kRpcXSplitsSince: {
      auto t = lookup(req, sizeof(XSplitsReq), "SPLITS_SINCE");
      if (!t) return t.status();
      XSplitsReq r;
      (void)wire_get(req, 0, &r);
      XSplitsReply rep;
      bool lost = false;
      auto ev = (*t)->splits_since(r.since, std::clamp<uint32_t>(r.max, 1, kMaxRunLeaves),
                                   &rep.next, &lost);
      rep.lost = lost ? 1 : 0;
      rep.count = static_cast<uint32_t>(ev.size());
      put(out, rep);
      for (const SplitEvent& e : ev) put(out, XSplitRec{e.seq, e.lo, e.hi, e.left, e.right});
      return Status::ok();
    }
    case kRpcXDescribe: {
      auto t = lookup(req, sizeof(XReqHead), "DESCRIBE");
      if (!t) return t.status();
      const LeafArea& a = (*t)->area();
      XDescribeReply rep;
      rep.region = a.region;
      rep.leaf_offset = a.leaf_offset;
      rep.fanout = a.fanout;
      rep.value_bytes = a.value_bytes;
      rep.leaf_capacity = a.leaf_capacity;
      rep.split_seq = (*t)->split_seq();
      put(out, rep);
      return Status::ok();
    }
    case kRpcXFetchModels: {
      auto t = lookup(req, sizeof(XFetchModelsReq), "FETCH_MODELS");
      if (!t) return t.status();
      XFetchModelsReq r;
      (void)wire_get(req, 0, &r);
      auto it = publishers_.find(r.h.tree);
      if (it == publishers_.end()) {
        return not_found("xstore FETCH_MODELS: tree " + std::to_string(r.h.tree) +
                         " has no TT publisher on this node (models-only clients need "
                         "XStoreService::add_publisher)");
      }
      return it->second->models_reply(r, out);
    }
    default:
      return invalid_argument("xstore: rpc id " + std::to_string(rpc_id) +
                              " is not an XStore request");
  }
}

}  // namespace drtmx::store::xstore
