// A named POSIX shared-memory segment, created by its owner node and mapped
// by every node of the cluster on the host.
//
// Names: "/drtmx.<cluster>.n<node>.<what>". The owner creates its segments
// exclusively (after removing a stale one of a crashed earlier run with the
// same name) and unlinks them when it is destroyed; peers only map them.
// Pages are reserved at creation (posix_fallocate), so a full /dev/shm is a
// clear error at start instead of a SIGBUS later, and mapped into the
// owner at once (base/resident.h: as ibv_reg_mr pins a registered
// region, so the owner's first write to a page is not a fault) — except a
// growable region's segment, sparse and backed range by range as the owner
// commits them (create_sparse, r2/common/growable.h). Peers map
// lazily: a process faults in only the pages of other nodes it touches.
// A single-node cluster's regions need no name (create_private).
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "base/status.h"

namespace drtmx::r2::shm {

std::string segment_name(const std::string& cluster, uint16_t node, const std::string& what);

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(Segment&& o) noexcept { *this = std::move(o); }
  Segment& operator=(Segment&& o) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates, sizes, reserves and maps a zeroed segment; the object owns it
  // (unlinks on destruction).
  static Result<Segment> create(const std::string& name, size_t size);
  // Maps an existing segment of a peer, checking that its size is `size`.
  static Result<Segment> open(const std::string& name, size_t size);
  // Zeroed memory no other process maps (a cluster of one node: nobody
  // opens its regions), private and anonymous, advised for transparent
  // huge pages (MADV_HUGEPAGE: 2 MiB pages where the kernel's THP setting
  // allows them — "madvise" or "always" — whatever /dev/shm is mounted
  // with). Its pages are allocated and mapped at once (base/resident.h)
  // when the machine has room to spare (has_room_for), else as touched; a
  // size the machine cannot give at all is refused here.
  static Result<Segment> create_private(size_t size);
  // A growable region's segment (Fabric::register_growable_region): created
  // like create() but sparse — ftruncate'd to `size`, nothing allocated or
  // mapped in advance (MAP_NORESERVE) — and *fd is left open (O_CLOEXEC)
  // for the caller, who backs ranges with fallocate + make_resident
  // (r2/common/growable.h) and closes it.
  static Result<Segment> create_sparse(const std::string& name, size_t size, int* fd);
  // A one-node cluster's growable region: private anonymous memory reserved
  // with MAP_NORESERVE (address space only; advised for huge pages like
  // create_private); ranges are populated by the caller.
  static Result<Segment> reserve_private(size_t size);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void release();
  std::string name_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool owner_ = false;
};

// The `huge=` option /dev/shm is mounted with ("never" when it has none,
// or "" when /proc/mounts lists no /dev/shm). With "within_size" or
// "always" the kernel backs segments with 2 MiB pages where they fit
// (posix_fallocate allocates them so), and a READ of a random record no
// longer misses the TLB first; drtmx-bench names it in its report
// (docs/design-notes.md has the difference it makes). Mount options are the
// administrator's: drtmx never changes them.
std::string dev_shm_huge_option();
// The same, read from `mounts` (the format of /proc/mounts).
std::string dev_shm_huge_option(std::istream& mounts);
// The kernel's transparent-huge-page mode for private memory (the word in
// brackets of /sys/kernel/mm/transparent_hugepage/enabled: "always",
// "madvise" or "never"; "" when the file is missing): whether
// create_private's memory gets 2 MiB pages.
std::string thp_mode();
std::string thp_mode(std::istream& enabled);

// Unlinks every segment whose name starts with "drtmx.<cluster>." and, when
// node >= 0, belongs to that node. Returns how many were removed.
int remove_segments(const std::string& cluster, int node);
// The same for one node, with the memory given back (blocks allocated).
struct Removal {
  int segments = 0;
  uint64_t bytes = 0;
};
Removal remove_node_segments(const std::string& cluster, uint16_t node);

// Segments left behind by killed launchers: a launcher that uses the
// default cluster name "<launcher>-<pid>" (drtmx-bench: "drtmxbench",
// store-bench: "storebench") and was killed (SIGKILL, a test timeout)
// cannot unlink its segments, and each run would leave its database in
// /dev/shm. This removes every "drtmx.<launcher>-<pid>." segment whose pid
// no longer exists (names chosen with --cluster are never touched: nothing
// says whether their cluster still runs). Nodes that still map a removed
// segment keep their mapping; only the name goes.
struct OrphanSweep {
  int segments = 0;
  uint64_t bytes = 0;                 // the memory given back
  std::vector<std::string> clusters;  // "<launcher>-<pid>" of each
  // "removed N shm segments (M MiB of /dev/shm) left by killed runs: <clusters>",
  // or "" when none was.
  std::string summary() const;
};
OrphanSweep remove_orphan_segments(const std::string& launcher);

}  // namespace drtmx::r2::shm
