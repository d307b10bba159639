// What a directory gives a pool: before a durable run, a launcher asks what
// persisting there means, so that a user who points --pmem-dir at a disk
// learns at start — not from a run a hundred times slower — that every
// persist there is an msync (rdpma/pool.h, "Persistence modes").
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "r2/fabric.h"

namespace drtmx::rdpma {

struct DirPersistence {
  std::string dir;
  r2::Persistence mode = r2::Persistence::kMsync;  // what a pool there gets
  std::string fs_type;                             // "ext4", "tmpfs", ... ("" unknown)
  std::string device;                              // the mount's source ("/dev/vda")
  // kMsync: one persist (a store to a page, then msync of it), the median
  // of 8, in ns; 0 for the other modes (flushes and a fence, no syscall).
  uint64_t persist_ns = 0;
  // One line for the user: what the directory is, what a persist costs
  // there, and (kMsync) what to use instead.
  std::string line() const;
};

// Maps a small probe file in `dir` as a pool would (libpmem), decides the
// mode, times persists on a disk, and removes the file. `dir` must exist.
Result<DirPersistence> probe_dir(const std::string& dir);

}  // namespace drtmx::rdpma
