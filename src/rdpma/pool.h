// PmemPool: one persistent-memory pool — a file mapped with libpmem
// (pmem_map_file), on a DAX file system with real persistent memory or any
// other file. One pool per node and registered region.
//
// File layout:
//   [0, 4096)      header: magic, version, flags (sparse), identity
//                  (cluster, node, region, layout fingerprint), size,
//                  checksum; and, on its own cache line, the allocator's
//                  watermark
//   [4096, size)   allocations (FatPtr), bump-allocated upwards
//
// A sparse pool (PoolSpec::sparse, for a growable fabric region) has the
// same layout in a file whose data area has no blocks until the fabric's
// commit() allocates them; data_ranges() lists those that hold data.
//
// Opening validates the file before anything is written: a missing,
// truncated or corrupted file, or one of another cluster, node, region or
// configuration (layout), is refused with a message naming the file and
// what to do. An existing pool is overwritten only with `format`.
//
// Persistence modes (persistence(), decided when the file is mapped):
//   kPmem   pmem_is_pmem says the mapping is persistent memory (DAX):
//           cache-line flushes + fence; survives a power loss.
//   kMemFs  the file lies on a memory file system (tmpfs, ramfs — e.g.
//           /dev/shm; statfs): cache-line flushes + fence like pmem, no
//           syscalls. The page cache IS the file: it survives a process
//           crash, not a power loss or a reboot.
//   kMsync  any other file system (a disk): pmem_msync of the pages;
//           survives both, at a syscall per persist.
// persist() makes a range durable that way. pwrite() copies with
// non-temporal stores and fences (thesis H4/H7: for a write of a whole
// payload the stores cover whole cache lines — the payload padded with
// zeros to its span, so no line is read first) — or, kMsync, copies and
// msyncs. The watermark is one 8-byte aligned word, written and persisted
// after the allocation's bytes are counted: a crash loses at most
// allocations never returned.
//
// Registration with the fabric: data_region() describes the data area
// [kHeaderBytes, bytes) as an r2::FileRegion, so the header is never
// reachable by one-sided ops; an allocation's region offset is
// region_offset(p) = p.offset - kHeaderBytes (src/rdpma/remote.h).
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
#include <utility>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"
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
  // kCreate: a sparse pool, for a growable region (r2/fabric.h): the file
  // has its full size but only the header's blocks (libpmem
  // PMEM_FILE_SPARSE), nothing is mapped in advance but the header, and
  // data_region() is growable — the fabric's commit() allocates and maps
  // ranges as the owner fills them. The header remembers it: kRecover
  // reopens a sparse pool sparse whatever this flag says.
  bool sparse = false;
};

class PmemPool {
 public:
  static constexpr uint64_t kHeaderBytes = kPoolHeaderBytes;

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
  // Non-temporal stores (H4/H7), not fenced: not durable until persisted
  // (kMsync: plain stores). What a two-sided Write does at the owner.
  Status write_nt(const FatPtr& p, uint64_t at, const void* in, uint64_t n);
  // Stores that are durable when it returns (non-temporal copy + fence,
  // or copy + msync). A write of the whole payload (at 0, n == p.size)
  // also zeroes the padding, so the stores cover whole lines (H5-H7).
  Status pwrite(const FatPtr& p, uint64_t at, const void* in, uint64_t n);
  // Makes bytes [at, at+n) of p's payload durable — e.g. after write(),
  // or after a peer's one-sided WRITE that this node wants durable itself.
  Status persist(const FatPtr& p, uint64_t at, uint64_t n);
  // Starts writing bytes [at, at+n) of p's payload back without waiting
  // (cache-line flushes; kMsync: msync, durable when it returns). Durable
  // once this thread's next drain() — or persist(), pwrite(), which end
  // with one — returned: a fence orders every flush its thread issued
  // before it. For callers that can share one fence among several writes.
  Status flush(const FatPtr& p, uint64_t at, uint64_t n);
  // Waits until every flush this thread issued is durable (one fence; a
  // no-op for kMsync, whose flushes are synchronous).
  void drain() const;
  // Makes the owner's stores at [addr, addr + n) durable, for code that
  // holds raw pointers into the mapping (records in an allocated heap):
  // the range must lie inside allocated data (after the header, below the
  // watermark), else kOutOfRange naming the pool.
  Status persist_mapped(const void* addr, uint64_t n);
  // Durable stores of n bytes at a raw region offset (see data_region),
  // neither aligned nor padded, plain stores + flush or msync: what a
  // caller that ignores H5-H7 gets (rdpma-bench compares it). The range
  // must lie inside allocated data, else kOutOfRange.
  Status pwrite_raw(uint64_t region_offset, const void* in, uint64_t n);

  // How the pool's bytes become durable (see above), and its name:
  // "pmem", "memfs" or "msync".
  r2::Persistence persistence_mode() const { return mode_; }
  const char* persistence() const { return r2::persistence_name(mode_); }
  bool is_pmem() const { return mode_ == r2::Persistence::kPmem; }
  const std::string& path() const { return path_; }
  uint64_t bytes() const { return bytes_; }
  const PoolIdentity& identity() const { return id_; }
  // The mapping, for the fabric that registers it as a region; the
  // application goes through FatPtrs.
  uint8_t* mapping() const { return base_; }
  // The data area [kHeaderBytes, bytes()) as a persistent fabric region:
  //   fabric.register_file_region(id, pool.data_region())
  // The pool must outlive the fabric.
  // A sparse pool's region is growable (FileRegion::growable).
  r2::FileRegion data_region() const {
    return {base_ + kHeaderBytes, bytes_ - kHeaderBytes, path_, kHeaderBytes, mode_, sparse_};
  }
  // Whether the pool is sparse (PoolSpec::sparse, or its header said so).
  bool sparse() const { return sparse_; }
  // The ranges of the data area that hold data, as (region offset, bytes)
  // pairs in increasing order, page granular (lseek SEEK_DATA/SEEK_HOLE on
  // the file): on a memory file system every page that was committed
  // (allocated and populated) or written; on a disk file system the
  // written ones (a committed range never written may read as a hole: it
  // holds zeros). What recovery needs to scan of a sparse pool — the rest
  // reads as zeros. A pool that is not sparse is one range, all of it.
  // Offsets are those of data_region(), so a pair can be given to
  // Fabric::commit as it is.
  Result<std::vector<std::pair<uint64_t, uint64_t>>> data_ranges() const;
  // p's offset inside data_region().
  static uint64_t region_offset(const FatPtr& p) { return p.offset - kHeaderBytes; }
  // Checks that p is an allocation of this pool (as every access does);
  // kInvalidArgument naming the pool otherwise.
  Status check_allocation(const FatPtr& p) const { return check(p, 0, 0, "access"); }

 private:
  PmemPool() = default;
  Status check(const FatPtr& p, uint64_t at, uint64_t n, const char* what) const;
  // [offset, offset + n) of the file lies inside allocated data.
  Status check_raw(uint64_t offset, uint64_t n, const char* what) const;
  Status persist_range(const void* p, uint64_t n);
  // Maps every page of the pool now (base/resident.h) when it is in memory
  // (kPmem, kMemFs); a pool file on a block device (kMsync) is left to
  // fault in as it is touched. A sparse pool: its header page only.
  Status map_in_advance();
  // Copies n bytes to dst with non-temporal stores (kPmem/kMemFs; kMsync:
  // memcpy), not fenced. `whole_span` (dst is the start of an allocation
  // of span bytes and n is its payload): whole lines, padding zeroed.
  void copy_nt(uint8_t* dst, const void* in, uint64_t n, uint64_t span, bool whole_span);

  std::string path_;
  uint8_t* base_ = nullptr;
  uint64_t bytes_ = 0;
  size_t mapped_ = 0;
  r2::Persistence mode_ = r2::Persistence::kMsync;
  PoolIdentity id_;
  bool sparse_ = false;
};

}  // namespace drtmx::rdpma
