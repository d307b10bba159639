// XStoreService: the owner's RPC handlers for the requests of xstore_rpc.h
// over the XTrees of one node.
//
// Usage (set-up thread): create the trees, add_tree(id, tree) for each,
// optionally add_publisher(id, publisher) for trees that serve models-only
// clients (tt_publisher.h), then register_on(worker) for every worker of
// the node that should serve XStore requests (before Worker::run_until).
// Clients may send to any of those workers; the trees and publishers are
// thread-safe.
//
// Handlers run inline on the worker's event loop and never block: tree
// operations take at most a leaf lock (and a parent lock on a split) for a
// few hundred nanoseconds; FETCH_MODELS encodes the published models
// (about 80 B per sub-model, a page of at most kMaxModelSubs). add_tree and
// add_publisher must not be called once a registered worker runs (the
// tables are read without a lock).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "base/status.h"
#include "r2/sched/worker.h"
#include "store/xstore/server/xstore_rpc.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::xstore {

class TtPublisher;

class XStoreService {
 public:
  // The tree must outlive the service. Fails on a duplicate id.
  Status add_tree(uint32_t id, XTree* tree);
  XTree* tree(uint32_t id) const;
  // Serves FETCH_MODELS for tree `id` (added before) from `publisher`,
  // which must outlive the service. Fails on an unknown tree, a null
  // publisher or a second publisher for the same tree.
  Status add_publisher(uint32_t id, TtPublisher* publisher);

  // Registers kRpcXGet .. kRpcXFetchModels on `w`; the service must outlive
  // the worker's run.
  Status register_on(r2::Worker& w);

  // Builds the reply for one request (what the handlers send): exposed so
  // tests and a local caller can run the protocol without a fabric. On a
  // malformed request or unknown tree returns an error (sent as an error
  // reply).
  Status handle(uint16_t rpc_id, std::span<const uint8_t> req, std::vector<uint8_t>& reply) const;

 private:
  Result<XTree*> lookup(std::span<const uint8_t> req, size_t head_bytes, const char* what) const;
  std::unordered_map<uint32_t, XTree*> trees_;
  std::unordered_map<uint32_t, TtPublisher*> publishers_;
};

}  // namespace drtmx::store::xstore
