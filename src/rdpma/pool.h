// PmemPool: one persistent-memory pool — a file mapped with libpmem
// (pmem_map_file), on a DAX file system with real persistent memory or any
// other file (/dev/shm: DRAM; a disk file: pmem_msync when the mapping is
// not persistent memory). One pool per node and registered region.
//
// File layout:
//   [0, 4096)      header: magic, version, identity (cluster, node,
//                  region, layout fingerprint), size, checksum; and, on its
//                  own cache line, the allocator's watermark
//   [4096, size)   allocations (FatPtr), bump-allocated upwards
//
// Opening validates the file before anything is written: a missing,
// truncated or corrupted file, or one of another cluster, node, region or
// configuration (layout), is refused with a message naming the file and
// what to do. An existing pool is overwritten only with `format`.
//
// Persistence. persist() makes [offset, offset+n) durable: pmem_persist
// (cache-line flushes + fence) on persistent memory, pmem_msync otherwise.
// pwrite() copies with non-temporal stores at cache-line granularity and
// drains (thesis H4/H7) — or copies and msyncs. The watermark is one
// 8-byte aligned word, written and persisted after the allocation's
// bytes are counted: a crash loses at most allocations never returned.
//
// Allocation is a bump pointer and there is no free: the engine allocates
// its regions (log rings, record heaps, indexes) once, when a node first
// starts, and finds them again at restart by allocating in the same order
// (allocations are deterministic for a given layout) — the layout
// fingerprint makes sure the order is the same.
//
// Threading: alloc() and persist() are not synchronised with each other;
// the owner allocates at start-up from one thread. read/write/pwrite on
// disjoint FatPtrs from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "rdpma/fat_ptr.h"

namespace drtmx::rdpma {

// Who a pool belongs to. `layout` fingerprints the configuration that
// decides what the pool holds (the caller hashes its catalog and sizes):
// a pool from another configuration would be read as garbage.
struct PoolIdentity {
  uint64_t cluster = 0;
  uint32_t node = 0;
  uint32_t region = 0;
  uint64_t layout = 0;
  bool operator==(const PoolIdentity&) const = default;
};

enum class PoolOpen : uint8_t {
  kCreate,   // a new pool; an existing file is refused unless `format`
  kRecover,  // an existing pool, validated; nothing is created
};

struct PoolSpec {
  std::string path;
  uint64_t bytes = 0;  // kCreate: the file size (rounded up to 4 KiB)
  PoolIdentity id;
  PoolOpen mode = PoolOpen::kCreate;
  bool format = false;  // kCreate: overwrite an existing file
};

class PmemPool {
 public:
  static constexpr uint64_t kHeaderBytes = 4096;

  static Result<std::unique_ptr<PmemPool>> open(const PoolSpec& spec);
  ~PmemPool();
  PmemPool(const PmemPool&) = delete;
  PmemPool& operator=(const PmemPool&) = delete;

  // A new allocation of `size` payload bytes, aligned and padded
  // (alloc_span), zeroed on a new pool. kResourceExhausted when the pool
  // is full (naming the pool and its size).
  Result<FatPtr> alloc(uint32_t size);
  // The allocations so far, in bytes after the header (also after a
  // restart: the persisted watermark).
  uint64_t allocated() const;

  // Bytes [at, at+n) of p's payload. Refused when outside the payload or
  // p is not an allocation of this pool.
  Status read(const FatPtr& p, uint64_t at, void* out, uint64_t n) const;
  // Stores (not durable until persisted).
  Status write(const FatPtr& p, uint64_t at, const void* in, uint64_t n);
  // Stores that are durable when it returns (non-temporal copy + drain,
  // or copy + msync).
  Status pwrite(const FatPtr& p, uint64_t at, const void* in, uint64_t n);
  // Makes bytes [at, at+n) of p's payload durable.
  Status persist(const FatPtr& p, uint64_t at, uint64_t n);

  // Whether the mapping is persistent memory (pmem_is_pmem): "pmem", else
  // "msync" (durability by msync to the file).
  bool is_pmem() const { return is_pmem_; }
  const char* persistence() const { return is_pmem_ ? "pmem" : "msync"; }
  const std::string& path() const { return path_; }
  uint64_t bytes() const { return bytes_; }
  const PoolIdentity& identity() const { return id_; }
  // The mapping, for the fabric that registers it as a region; the
  // application goes through FatPtrs.
  uint8_t* mapping() const { return base_; }

 private:
  PmemPool() = default;
  Status check(const FatPtr& p, uint64_t at, uint64_t n, const char* what) const;
  Status persist_range(const void* p, uint64_t n);

  std::string path_;
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  size_t mapped_ = 0;
  bool is_pmem_ = false;
  PoolIdentity id_;
};

}  // namespace drtmx::rdpma
