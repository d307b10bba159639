// TtPublisher: the owner side of models-only clients (thesis-spec §4.4:
// "the client keeps only the models and READs the TT entries it needs").
// For one XTree it trains a full XCache over the tree's leaves on the owner
// (the client library's training code, XCache::train, over
// XTree::export_all), writes the cache's TT as a *sealed image* into an
// area of the owner's registered memory that the caller reserved, and
// serves the models to clients (kRpcXFetchModels through XStoreService,
// which the client installs with XStoreClient::fetch_models).
//
// Image and generation. The image layout is XCache::write_sealed_image's:
// a 64-byte header (word 0 = generation of the complete image, 0 while it
// is rewritten) and 64-byte chunks of 7 TT entries, each sealed over
// (generation, sub-model, chunk, entries). Every publish has a new
// generation (the previous + 1; the first is max(the area's header word +
// 1, wall clock in ns), so a publisher re-created over the same area does
// not repeat one) and rewrites the image in place. The models a client fetched name the
// generation they were trained with; the client checks every chunk it READs
// against it. Hence, for a client whose models are generation g:
//   * image still g: the chunk verifies and its entries are the ones these
//     models were trained with; entries made stale by later splits are
//     caught by the leaf incarnation check (speculative sibling READ or RPC
//     fallback), exactly as in a full-mode cache;
//   * image rewritten (g' > g) or being rewritten: the seal fails (a
//     different generation, or a mix of two writes), the lookup goes to the
//     RPC path (counted in XClientStats::tt_seal_failures), and the client
//     should fetch_models() again. A torn or newer image is never used.
// The models are swapped in only after the image is complete, so a client
// never receives models whose image is not (yet) there.
//
// Republishing. Splits make the published entries stale (incarnation
// mismatches -> fallbacks) and add leaves the image does not name, so the
// owner republishes: republish_if_stale() retrains and rewrites the image
// when at least `min_splits` splits happened since the last publish
// (XTree::split_seq). Who calls it: the owner's maintenance path — a
// background thread or periodic task of the node that owns the tree (the
// tests use an owner thread that calls it every few milliseconds while a
// writer inserts). It does a full export and training (~O(keys); 40 000
// keys take a few ms) and never runs on a worker's event loop. Calls are
// serialized by an internal mutex; publish() is the same without the
// staleness test. Training while writers insert is fine: each exported leaf
// is a consistent image and its TT entry carries that image's incarnation.
//
// Thread safety: publish / republish_if_stale / stats / generation from any
// thread; models_reply is what XStoreService's FETCH_MODELS handler calls on
// worker threads and takes a mutex only to copy a shared pointer.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "store/xstore/client/xcache.h"
#include "store/xstore/server/xstore_rpc.h"
#include "store/xstore/server/xtree.h"

namespace drtmx::store::xstore {

// The area the caller reserved for the image in the owner's registered
// memory: region, offset (8-aligned; 64-aligned keeps chunks in one cache
// line) and capacity in bytes. XCache::sealed_image_bytes() of the trained
// cache must fit: about 64 + 64 * leaves / 7 * 1.1 bytes.
struct TtImageArea {
  r2::RegionId region = 0;
  uint64_t offset = 0;
  uint64_t capacity = 0;
};

struct TtPublisherOptions {
  // Training options; fanout must equal the tree's LeafArea::fanout.
  XCacheOptions cache;
  TtImageArea image;
  // Sub-models per training; 0 = from the key count (cache.train_keys_per_model).
  uint32_t sub_models = 0;
  // republish_if_stale() republishes after at least this many splits.
  uint64_t min_splits = 1;
  // Trainings attempted per publish when a run comes out malformed.
  uint32_t train_attempts = 8;
};

struct TtPublisherStats {
  uint64_t publishes = 0;
  uint64_t failures = 0;    // publishes that returned an error
  uint64_t generation = 0;  // of the current image (0 = none yet)
  uint64_t split_seq = 0;   // XTree::split_seq() the current models reflect
  uint32_t sub_models = 0;
  uint64_t image_bytes = 0;    // of the current image
  uint64_t models_bytes = 0;   // FETCH_MODELS payload for all sub-models
  double last_publish_ms = 0;  // export + train + write of the last publish
};

class TtPublisher {
 public:
  // `region_base` / `region_bytes`: this node's local mapping of
  // options.image.region. The tree must outlive the publisher. Fails with
  // kInvalidArgument when the area is misaligned, outside the region or
  // overlaps the tree's leaves, or when the options do not validate.
  // Nothing is published until publish() / republish_if_stale().
  static Result<std::unique_ptr<TtPublisher>> create(XTree* tree, uint8_t* region_base,
                                                     size_t region_bytes,
                                                     const TtPublisherOptions& options);

  // Trains over the whole tree, writes the image with a new generation and
  // swaps the models in. On failure (kResourceExhausted: image larger than
  // the area; kUnavailable: no well-formed run in train_attempts) the image
  // and the served models stay as they were (the size is checked before
  // the first write).
  Status publish();
  // publish() when nothing is published yet or at least min_splits splits
  // happened since the last publish; *published (optional) tells which.
  Status republish_if_stale(bool* published = nullptr);

  uint64_t generation() const;
  TtPublisherStats stats() const;
  const TtPublisherOptions& options() const { return opt_; }

  // Builds the FETCH_MODELS reply for `req` (XStoreService calls this).
  // kUnavailable when nothing is published yet.
  Status models_reply(const XFetchModelsReq& req, std::vector<uint8_t>& out) const;

 private:
  struct Published {
    XCache cache;
    uint64_t generation = 0;
    uint64_t split_seq = 0;
    uint64_t image_bytes = 0;
    explicit Published(const XCacheOptions& o) : cache(o) {}
  };

  TtPublisher(XTree* tree, uint8_t* image, const TtPublisherOptions& options, uint64_t first_gen);
  std::shared_ptr<const Published> current() const;

  XTree* tree_;
  uint8_t* image_;  // local mapping of the area
  TtPublisherOptions opt_;

  std::mutex publish_mu_;  // serializes publishes
  uint64_t next_generation_;
  TtPublisherStats stats_;  // guarded by mu_

  mutable std::mutex mu_;  // guards current_ and stats_
  std::shared_ptr<const Published> current_;
};

}  // namespace drtmx::store::xstore
