// The H9 building block: a persistent one-sided WRITE inside the caller's
// own OpBatch (thesis §2.3.4, hint H9: "OR + DB" — the WRITE and a
// flushing READ on the same QP behind one doorbell).
//
//   r2::OpBatch b;
//   ...                                     // the caller's other ops
//   rdpma::add_persistent_write(b, to, entry, len, flush_buf);
//   co.run(b);                              // one round trip
//   // b.first_error() == kOk: the entry is durable at `to`
//
// Contract:
//   * `to` must lie in a persistent region of its node (registered with
//     register_file_region; check Fabric::region_persistence) — on a
//     volatile region the ops succeed but nothing is durable.
//   * `src` (the WRITE's source, len bytes) and `flush_buf` (8 bytes, the
//     READ's destination) must lie in registered memory of the local node,
//     and stay untouched until the batch has completed (co.run returned).
//   * The WRITE is unsignaled unless `signal_write`; the READ is signaled
//     and reads min(len, 8) bytes at `to` — the bytes just written, on
//     the same channel, after the WRITE (FIFO per channel). When the READ
//     completes successfully, the WRITE has been executed and is durable
//     (the READ flushed it: RNIC buffers on hardware, the issuer's flushes
//     or msync on shm). A failed WRITE reports its error in the batch even
//     though unsignaled; check first_error() (or the statuses of both ops).
//   * Nothing about other ops of the batch: a WRITE to another node needs
//     its own flushing READ (one per target node); several WRITEs to one
//     node may share the last one: add them with b.write(..., false) and
//     finish with add_persistent_write (or add_flushing_read) for that node.
//   * To align and pad (H5/H6), write a FatPtr's whole span: see
//     rdpma/client.h, which does it for single writes.
#pragma once

#include <algorithm>
#include <cstdint>

#include "r2/fabric.h"
#include "r2/sched/op_batch.h"

namespace drtmx::rdpma {

// Adds the flushing READ alone: every earlier WRITE of the batch (and of
// this thread) to `at.node` is durable once it completes. Reads `len`
// (1..8) bytes at `at` into flush_buf (registered memory).
inline void add_flushing_read(r2::OpBatch& b, r2::RemoteAddr at, uint64_t* flush_buf,
                              uint32_t len = 8) {
  b.read(at, flush_buf, std::clamp<uint32_t>(len, 1, 8));
}

// Adds WRITE(src -> to, len) and its flushing READ (see above).
inline void add_persistent_write(r2::OpBatch& b, r2::RemoteAddr to, const void* src, uint32_t len,
                                 uint64_t* flush_buf, bool signal_write = false) {
  b.write(to, src, len, signal_write);
  add_flushing_read(b, to, flush_buf, len);
}

}  // namespace drtmx::rdpma
