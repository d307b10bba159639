// Client: the RDPMA remote API for one coroutine (thesis §2.3.5, Table
// "RDPMA library API"): Read / Write / PWrite through a RemotePtr, with the
// primitive chosen per call.
//
//   auto c = rdpma::Client::make(co, fabric, scratch);     // once per coroutine
//   c->pwrite(ptr, 0, entry, len, rdpma::PersistMethod::kH9);
//   // returned OK: the bytes are durable in the owner's pool
//
// Primitives:
//   one-sided Read/Write   a READ / WRITE of the fabric on the owner's
//                          registered pool (the owner's CPU is not involved)
//   two-sided Read/Write   an RPC (kRpcPmem) served by the owner's handler
//                          (pmem_service.h: non-temporal stores, H4/H7)
//   PWrite kH9             WRITE (unsignaled) + flushing READ of the same
//                          target on the same channel, one doorbell: ONE
//                          round trip (hint H9, persist_op.h)
//   PWrite kStrawman       WRITE signaled, wait; READ, wait: two round
//                          trips, as librpmem does (kept for comparison)
//   PWrite kTwoSided       RPC; the owner stores, fences (or msyncs) and
//                          only then replies
// Alignment and padding (H5/H6) come from the FatPtr: a write of the whole
// payload (at 0, n == size) sends the whole span — payload plus zeroed
// padding, 64 B lines under 256 B, 256 B XPLines from 256 B — so the
// target sees only full, aligned lines. A partial write sends its bytes.
// pwrite_raw writes at a raw region offset with neither (rdpma-bench's
// unaligned case; not for applications: no FatPtr check, only the
// region's bounds and, two-sided, the owner's allocated data).
//
// What is checked before anything is sent: the RemotePtr's shape (a forged
// pointer is kInvalidArgument), the bytes inside its payload (kOutOfRange),
// for PWrite that the target region is persistent (kInvalidArgument:
// register the pool with register_file_region), and that the span fits
// the scratch (kOutOfRange). The fabric refuses ranges outside the region
// (kOutOfRange), a missing region/node (kNotFound); two-sided, the owner's
// error comes back with its code and text.
//
// Threading: a Client belongs to one coroutine and is used only from it
// (like its Co). Its scratch is registered memory of the local node that
// no one else touches while a call runs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
#include "r2/sched/co.h"
#include "r2/sched/op_batch.h"
#include "rdpma/remote_ptr.h"

namespace drtmx::rdpma {

enum class Primitive : uint8_t { kOneSided, kTwoSided };

enum class PersistMethod : uint8_t {
  kH9,        // one-sided, WRITE + flushing READ in one doorbell (1 RTT)
  kStrawman,  // one-sided, WRITE, wait, READ, wait (2 RTT)
  kTwoSided,  // RPC, owner fences before replying (1 RTT + owner CPU)
};
const char* primitive_name(Primitive p);   // "one-sided", "two-sided"
const char* method_name(PersistMethod m);  // "h9", "strawman", "two-sided"

class Client {
 public:
  // The first kLine bytes of `scratch` take the flushing READ's result;
  // the rest stages one-sided writes (and reads into unregistered memory),
  // so one-sided calls move at most scratch.size() - kLine bytes (their
  // span for whole-payload writes). Refused when scratch is smaller than
  // two lines or not registered on the local node.
  static Result<Client> make(r2::Co& co, const r2::Fabric& fabric, std::span<uint8_t> scratch);

  // Copies bytes [at, at + n) of p's payload to `out`.
  Status read(const RemotePtr& p, uint64_t at, void* out, uint32_t n, Primitive prim);
  // Overwrites bytes [at, at + n) of p's payload: NOT guaranteed durable.
  Status write(const RemotePtr& p, uint64_t at, const void* in, uint32_t n, Primitive prim);
  // Write, and when it returns OK the bytes are durable at the owner.
  Status pwrite(const RemotePtr& p, uint64_t at, const void* in, uint32_t n, PersistMethod m);
  // PWrite of n bytes at a raw region offset: no alignment, no padding
  // (see above).
  Status pwrite_raw(r2::RemoteAddr to, const void* in, uint32_t n, PersistMethod m);

  // Largest one-sided transfer (the staging part of the scratch).
  uint32_t max_one_sided_bytes() const { return static_cast<uint32_t>(stage_.size()); }

 private:
  Client(r2::Co& co, const r2::Fabric& fabric, std::span<uint8_t> scratch);
  Status check_persistent(r2::NodeId node, r2::RegionId region, const char* what) const;
  // One-sided persistent write of `len` staged bytes to `to`.
  Status persist_one_sided(r2::RemoteAddr to, uint32_t len, PersistMethod m, const char* what);
  Status two_sided(const RemotePtr* p, r2::RemoteAddr raw, uint8_t op, uint64_t at, const void* in,
                   uint32_t n, void* out);
  // Stages [in, in + n) (and zero padding up to `span`) for a WRITE.
  Status stage(const void* in, uint32_t n, uint32_t span, const char* what);
  Status op_error(r2::OpStatus st, r2::RemoteAddr to, const char* what) const;

  r2::Co* co_;
  const r2::Fabric* fabric_;
  uint64_t* flush_;           // 8 bytes of registered memory
  std::span<uint8_t> stage_;  // registered staging memory
  r2::OpBatch batch_;
  std::vector<uint8_t> request_;
  r2::RpcBuffer reply_;
};

}  // namespace drtmx::rdpma
