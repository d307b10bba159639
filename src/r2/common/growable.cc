#include "r2/common/growable.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>

#include "base/resident.h"

namespace drtmx::r2 {
namespace {

constexpr uint64_t kPage = 4096;

// MemAvailable of /proc/meminfo in bytes (0 when unknown).
}  // namespace

std::string human_bytes(uint64_t b) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = static_cast<double>(b);
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[32];
  if (u == 0 || v >= 100 || v == static_cast<double>(static_cast<uint64_t>(v))) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, kUnits[u]);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

Growable::Growable(GrowableSpec spec) : spec_(std::move(spec)) {
  // A file in memory (tmpfs: a shm segment, a pool in /dev/shm) takes the
  // machine's memory as it is backed, like private memory does.
  struct statfs fs {};
  in_memory_ = spec_.fd < 0 || (::fstatfs(spec_.fd, &fs) == 0 &&
                                (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC));
}

Growable::~Growable() {
  if (spec_.fd >= 0) ::close(spec_.fd);
}

Status Growable::no_room(uint64_t want, uint64_t free_bytes, const std::string& fix) const {
  return exhausted(spec_.where + " has no room for " + human_bytes(want) + " more of region " +
                   std::to_string(spec_.id) + " (node " + std::to_string(spec_.node) + " holds " +
                   human_bytes(committed()) + " of it; " + human_bytes(free_bytes) +
                   " free there): " + fix);
}

Status Growable::back(uint64_t begin, uint64_t end) {
  const uint64_t n = end - begin;
  if (in_memory_ && !has_room_for(n)) {
    // Backing memory past what the machine has would not fail here (a
    // tmpfs may be larger than the memory left; private memory reserves
    // nothing) but wake the OOM killer later, at some process's next page.
    return no_room(n, mem_available(),
                   "free memory, or give this node less data (e.g. fewer warehouses per node, or "
                   "a shorter run: tables grow as rows arrive); an eighth of the machine's memory "
                   "is kept available");
  }
  if (spec_.fd >= 0) {
    // Blocks first: a full file system answers ENOSPC here (tmpfs gives back
    // what it allocated for a call that fails), not a SIGBUS at a later
    // touch. KEEP_SIZE: never moves the end of the file.
    int rc;
    do {
      rc = ::fallocate(spec_.fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(spec_.file_offset + begin),
                       static_cast<off_t>(n));
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
      const int e = errno;
      if (e == ENOSPC || e == ENOMEM || e == EDQUOT) {
        struct statvfs vfs {};
        const uint64_t avail =
            ::fstatvfs(spec_.fd, &vfs) == 0 ? uint64_t(vfs.f_bavail) * vfs.f_frsize : 0;
        const std::string fix =
            spec_.segment
                ? "free memory, enlarge /dev/shm (mount -o remount,size=...), or give this node "
                  "less data (e.g. fewer warehouses per node)"
                : "free space there, put the pools on a larger file system (--pmem-dir), or give "
                  "this node less data (e.g. fewer warehouses per node)";
        return no_room(n, avail, fix);
      }
      return io_error("fallocate of " + human_bytes(n) + " of region " + std::to_string(spec_.id) +
                          " (" + spec_.where + ")",
                      e);
    }
    if (!spec_.populate) return Status::ok();
  }
  const std::string what = "region " + std::to_string(spec_.id) + " (" + spec_.where + ")";
  DRTMX_RETURN_IF_ERROR(make_resident(spec_.base + begin, n, what));
  if (after_backing) after_backing(spec_.base + begin, n);
  return Status::ok();
}

Status Growable::commit(uint64_t offset, uint64_t bytes) {
  if (offset > spec_.size || bytes > spec_.size - offset) {
    return invalid_argument("commit of [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                            ") is outside region " + std::to_string(spec_.id) + " of " +
                            std::to_string(spec_.size) + " bytes");
  }
  if (bytes == 0) return Status::ok();
  const uint64_t limit = (spec_.size + kPage - 1) & ~(kPage - 1);
  const uint64_t begin = offset & ~(kPage - 1);
  const uint64_t end = std::min(limit, (offset + bytes + kPage - 1) & ~(kPage - 1));
  // The page ranges of [begin, end) not backed yet.
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  {
    std::lock_guard<std::mutex> lk(mu_);
    uint64_t at = begin;
    auto it = backed_.upper_bound(begin);
    if (it != backed_.begin()) --it;
    for (; it != backed_.end() && it->first < end && at < end; ++it) {
      if (it->second <= at) continue;
      if (it->first > at) gaps.emplace_back(at, it->first);
      at = it->second;
    }
    if (at < end) gaps.emplace_back(at, end);
  }
  if (gaps.empty()) return Status::ok();
  // Backed outside the lock: other commits (and endpoints) go on meanwhile.
  // Two threads may back the same gap at once; both calls are idempotent.
  for (const auto& [a, b] : gaps) DRTMX_RETURN_IF_ERROR(back(a, b));
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& [ga, gb] : gaps) {
    uint64_t a = ga, b = gb;
    uint64_t added = b - a;
    // Merge with every range that overlaps or touches [a, b).
    auto it = backed_.upper_bound(a);
    if (it != backed_.begin()) --it;
    while (it != backed_.end() && it->first <= b) {
      if (it->second < a) {
        ++it;
        continue;
      }
      const uint64_t lo = std::max(ga, it->first), hi = std::min(gb, it->second);
      if (hi > lo) added -= hi - lo;
      a = std::min(a, it->first);
      b = std::max(b, it->second);
      it = backed_.erase(it);
    }
    backed_.emplace(a, b);
    committed_.fetch_add(added, std::memory_order_acq_rel);
  }
  return Status::ok();
}

Growable* GrowableSet::add(GrowableSpec spec) {
  all_.push_back(std::make_unique<Growable>(std::move(spec)));
  return all_.back().get();
}

Growable* GrowableSet::find(RegionId id) const {
  for (const auto& g : all_) {
    if (g->id() == id) return g.get();
  }
  return nullptr;
}

Status GrowableSet::commit(RegionId id, const Region* whole, NodeId node, uint64_t offset,
                           uint64_t bytes) const {
  if (Growable* g = find(id)) return g->commit(offset, bytes);
  if (whole == nullptr) {
    return invalid_argument("commit of region " + std::to_string(id) + ", which node " +
                            std::to_string(node) + " never registered");
  }
  if (offset > whole->size || bytes > whole->size - offset) {
    return invalid_argument("commit of [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                            ") is outside region " + std::to_string(id) + " of " +
                            std::to_string(whole->size) + " bytes");
  }
  return Status::ok();  // registered whole: backed (pinned) from the start
}

uint64_t GrowableSet::committed_bytes(RegionId id, const Region* whole) const {
  if (const Growable* g = find(id)) return g->committed();
  return whole != nullptr ? whole->size : 0;
}

}  // namespace drtmx::r2
