// The owner's side of two-sided RDPMA: the pools a node serves and the RPC
// handler that reads and writes them for remote clients (thesis §2.3.5:
// "the server does the Write then adds a fence before replying").
//
//   rdpma::PoolDirectory dir;                  // set-up thread, before launch
//   dir.add(kLogRegion, log_pool.get());
//   ...
//   runtime.launch([&](r2::Worker& w) { rdpma::register_pmem_handler(w, dir); ... });
//
// The handler (RPC kRpcPmem, any worker thread of the owner):
//   * refuses, with an error reply naming what is wrong and never touching
//     memory, a request that is malformed (short, unknown op or
//     addressing, a length that does not match its data), names a region
//     with no pool in the directory, a FatPtr that is not an allocation of
//     that pool (PmemPool's own check, against its watermark), bytes
//     outside the payload, or a raw range outside the allocated data;
//   * Read: replies with the bytes. Write: non-temporal stores (H4/H7),
//     whole lines with the padding zeroed for a whole-payload write, no
//     fence. PWrite: the same, then a fence (kPmem/kMemFs) or msync
//     (kMsync), then the reply — durable when the client sees it. A raw
//     PWrite stores the bytes as they are (plain stores) and persists them:
//     the unaligned case rdpma-bench compares.
//   * runs on the event loop: it never waits for anything but the memory
//     (an msync-mode pool blocks the loop for the msync; DAX or memfs pools
//     only for the fence).
//
// Threading: the directory is filled before workers start and read-only
// afterwards; pools must outlive the workers. Requests for disjoint bytes
// from several threads are fine (PmemPool's contract); the directory does
// not order writes of the same bytes.
#pragma once

#include <span>
#include <vector>

#include "base/status.h"
#include "r2/sched/worker.h"
#include "rdpma/pool.h"

namespace drtmx::rdpma {

class PoolDirectory {
 public:
  // Serves `pool` as region `region` (the id its data_region() was
  // registered with). Refuses a duplicate region or a null pool.
  Status add(r2::RegionId region, PmemPool* pool);
  PmemPool* find(r2::RegionId region) const;

 private:
  std::vector<PmemPool*> by_region_;  // index = region id
};

// Registers the kRpcPmem handler on `w`; `dir` must outlive the worker.
Status register_pmem_handler(r2::Worker& w, const PoolDirectory& dir);

// What the handler does with one request: *reply becomes the reply for
// `payload` (code byte first, see pmem_wire.h). `self` names the node in
// error texts. Exposed for tests that feed it arbitrary bytes.
void serve_pmem_request(const PoolDirectory& dir, std::span<const uint8_t> payload, r2::NodeId self,
                        std::vector<uint8_t>* reply);

}  // namespace drtmx::rdpma
