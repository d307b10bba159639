// Growable regions (Fabric::register_growable_region, FileRegion::growable):
// the backend-independent half of commit() — which page ranges of a region
// are backed, backing the missing ones (blocks of the file behind it, then
// its pages made resident), and the errors when the host has no room.
//
// A region's backing is one of
//   * a file range: a shm segment (tmpfs) or a pool file, reached through an
//     open descriptor; commit() allocates its blocks (fallocate, so a full
//     file system is ENOSPC here and never a SIGBUS later) and then maps the
//     pages (make_resident), except for an msync-mode file on a disk;
//   * private anonymous memory reserved with MAP_NORESERVE (a one-node shm
//     cluster, verbs): commit() maps the pages.
// Memory (private, or a file on tmpfs/ramfs) is backed only while the
// machine keeps an eighth of its memory available (has_room_for), else
// commit() refuses: a tmpfs larger than the memory left would otherwise let
// the pages be taken and the OOM killer end some process later.
// Thread-safe: commits of any ranges from any threads; a range backed before
// costs one lock and one lookup.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/fabric.h"

namespace drtmx::r2 {

struct GrowableSpec {
  RegionId id = 0;
  NodeId node = 0;
  uint8_t* base = nullptr;  // the owner's mapping of the whole virtual size
  uint64_t size = 0;        // virtual bytes
  // The file whose blocks back the region, or -1 for private anonymous
  // memory. Owned by the Growable from construction (closed by it).
  int fd = -1;
  uint64_t file_offset = 0;  // where the region starts in the file
  bool populate = true;      // false: an msync-mode file (blocks only)
  bool segment = false;      // a shm segment in /dev/shm (for the advice)
  // For messages: "/dev/shm", or the pool file's path.
  std::string where;
};

class Growable {
 public:
  explicit Growable(GrowableSpec spec);
  ~Growable();
  Growable(const Growable&) = delete;
  Growable& operator=(const Growable&) = delete;

  // Backs [offset, offset + bytes) rounded out to pages (see Fabric::commit).
  Status commit(uint64_t offset, uint64_t bytes);
  uint64_t committed() const { return committed_.load(std::memory_order_acquire); }
  RegionId id() const { return spec_.id; }
  // Called after a range was backed and made resident (verbs: prefetch it
  // into the RNIC's page tables). Set before the first commit.
  std::function<void(uint8_t*, uint64_t)> after_backing;

 private:
  Status back(uint64_t begin, uint64_t end);  // one missing page range
  Status no_room(uint64_t want, uint64_t free_bytes, const std::string& fix) const;

  GrowableSpec spec_;
  bool in_memory_ = true;  // private memory, or a file on tmpfs/ramfs
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> backed_;  // begin -> end, disjoint, not adjacent
  std::atomic<uint64_t> committed_{0};
};

// The growable regions of one node, by id: what a backend's commit() and
// committed_bytes() look in. add() before connect (the set-up thread);
// find() from any thread afterwards.
class GrowableSet {
 public:
  Growable* add(GrowableSpec spec);
  Growable* find(RegionId id) const;
  // Fabric::commit and Fabric::committed_bytes of node `node`'s region
  // `id`: a growable one's, or for `whole` (the region registered whole;
  // null when there is none) the range checks and its whole size.
  Status commit(RegionId id, const Region* whole, NodeId node, uint64_t offset,
                uint64_t bytes) const;
  uint64_t committed_bytes(RegionId id, const Region* whole) const;

 private:
  std::vector<std::unique_ptr<Growable>> all_;
};

// "64 MiB", "3.2 GiB", "512 KiB", "12 B".
std::string human_bytes(uint64_t b);

}  // namespace drtmx::r2
