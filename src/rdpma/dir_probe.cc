#include "rdpma/dir_probe.h"

#include <fcntl.h>
#include <libpmem.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace drtmx::rdpma {
namespace {

// The mount that holds `path` (the longest mount point that is a prefix of
// its real path) from /proc/mounts: its type and source.
void mount_of(const std::string& path, DirPersistence* out) {
  std::error_code ec;
  const std::string real = std::filesystem::canonical(path, ec).string();
  if (ec) return;
  std::ifstream in("/proc/mounts");
  std::string line;
  size_t best = 0;
  while (std::getline(in, line)) {
    std::istringstream is(line);
    std::string dev, point, type;
    if (!(is >> dev >> point >> type)) continue;
    const bool under =
        real == point || (real.rfind(point, 0) == 0 && (point == "/" || real[point.size()] == '/'));
    if (under && point.size() >= best) {
      best = point.size();
      out->fs_type = type;
      out->device = dev;
    }
  }
}

std::string us(uint64_t ns) {
  std::ostringstream os;
  os.precision(ns >= 10000 ? 0 : 1);
  os << std::fixed << double(ns) / 1000.0;
  return os.str();
}

}  // namespace

Result<DirPersistence> probe_dir(const std::string& dir) {
  DirPersistence d;
  d.dir = dir;
  mount_of(dir, &d);
  const std::string path = dir + "/.drtmx-probe-" + std::to_string(::getpid());
  constexpr size_t kBytes = 64 * 1024;
  size_t mapped = 0;
  int is_pmem = 0;
  void* m = pmem_map_file(path.c_str(), kBytes, PMEM_FILE_CREATE | PMEM_FILE_EXCL, 0600, &mapped,
                          &is_pmem);
  if (m == nullptr) {
    return io_error("--pmem-dir=" + dir + ": cannot create a file there (" +
                        std::string(pmem_errormsg()) + "); give a writable directory",
                    errno);
  }
  struct statfs fs {};
  if (is_pmem) {
    d.mode = r2::Persistence::kPmem;
  } else if (::statfs(path.c_str(), &fs) == 0 &&
             (static_cast<uint64_t>(fs.f_type) == TMPFS_MAGIC ||
              static_cast<uint64_t>(fs.f_type) == RAMFS_MAGIC)) {
    d.mode = r2::Persistence::kMemFs;
  } else {
    d.mode = r2::Persistence::kMsync;
    // What a pool's persist costs there: a store into a page, then its
    // msync, on 8 different pages (each a real write-back).
    std::vector<uint64_t> ns;
    auto* bytes = static_cast<uint8_t*>(m);
    for (size_t i = 0; i < 8; ++i) {
      uint8_t* page = bytes + (i + 1) * 4096;
      const auto t0 = std::chrono::steady_clock::now();
      std::memset(page, int(i + 1), 64);
      const int rc = pmem_msync(page, 64);
      ns.push_back(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - t0)
                                             .count()));
      if (rc != 0) break;
    }
    std::sort(ns.begin(), ns.end());
    d.persist_ns = ns[ns.size() / 2];
  }
  pmem_unmap(m, mapped);
  ::unlink(path.c_str());
  return d;
}

std::string DirPersistence::line() const {
  const std::string where =
      fs_type.empty() ? "" : " (" + fs_type + (device.empty() ? "" : " on " + device) + ")";
  switch (mode) {
    case r2::Persistence::kPmem:
      return "durability: --pmem-dir=" + dir + " is persistent memory" + where +
             ": a persist is a write-back of the written cache lines and a fence";
    case r2::Persistence::kMemFs:
      return "durability: --pmem-dir=" + dir + " is in memory" + where +
             ": a persist is a write-back of the written cache lines and a fence, as on "
             "persistent memory; the pools survive process crashes, not a power loss or a reboot";
    default:
      return "durability: --pmem-dir=" + dir + " is on a disk file system" + where +
             ", not persistent memory: every persist is an msync of the written pages, " +
             us(persist_ns) +
             " us each here (median of 8; on persistent memory well under 1 us), and every "
             "commit waits for several. For persistence at memory speed use a directory on a DAX "
             "mount of persistent memory (mount -o dax); to model one in DRAM, a directory in "
             "/dev/shm (it survives process crashes, not a power loss)";
  }
}

}  // namespace drtmx::rdpma
