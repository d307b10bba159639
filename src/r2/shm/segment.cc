#include "r2/shm/segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/resident.h"

namespace drtmx::r2::shm {

std::string segment_name(const std::string& cluster, uint16_t node, const std::string& what) {
  return "/drtmx." + cluster + ".n" + std::to_string(node) + "." + what;
}

Segment::~Segment() {
  release();
}

Segment& Segment::operator=(Segment&& o) noexcept {
  if (this != &o) {
    release();
    name_ = std::move(o.name_);
    data_ = o.data_;
    size_ = o.size_;
    owner_ = o.owner_;
    o.data_ = nullptr;
    o.size_ = 0;
    o.owner_ = false;
  }
  return *this;
}

void Segment::release() {
  if (data_ != nullptr) munmap(data_, size_);
  if (owner_ && !name_.empty()) shm_unlink(name_.c_str());
  data_ = nullptr;
  owner_ = false;
}

Result<Segment> Segment::create(const std::string& name, size_t size) {
  shm_unlink(name.c_str());  // a stale segment of a crashed run with this name
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return io_error("shm_open(" + name + ") for creation", errno);
  int err = posix_fallocate(fd, 0, static_cast<off_t>(size));
  if (err != 0) {
    close(fd);
    shm_unlink(name.c_str());
    if (err == ENOSPC) {
      return exhausted("/dev/shm has no room for " + std::to_string(size >> 20) + " MiB (segment " +
                       name +
                       "): free space there, enlarge it (mount -o remount,size=...), or use "
                       "smaller regions");
    }
    return io_error("posix_fallocate(" + name + ")", err);
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int map_errno = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name.c_str());
    return io_error("mmap(" + name + ")", map_errno);
  }
  // The pages posix_fallocate reserved, mapped now (base/resident.h).
  if (Status st = make_resident(p, size, "segment " + name); !st.is_ok()) {
    munmap(p, size);
    shm_unlink(name.c_str());
    return st;
  }
  Segment s;
  s.name_ = name;
  s.data_ = static_cast<uint8_t*>(p);
  s.size_ = size;
  s.owner_ = true;
  return s;
}

Result<Segment> Segment::create_private(size_t size) {
  // Not MAP_NORESERVE: a size beyond what the machine can give is refused
  // here (ENOMEM), not met later as a kill when its pages are touched.
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    if (e == ENOMEM) {
      return exhausted("no room for a region of " + std::to_string(size >> 20) +
                       " MiB of private memory: free memory, or use smaller regions");
    }
    return io_error("mmap of " + std::to_string(size >> 20) + " MiB of private memory", e);
  }
  // A hint: without THP (or with it set to "never") the pages are 4 KiB.
  (void)madvise(p, size, MADV_HUGEPAGE);
  // Mapped now when the machine has room to spare; nothing reserved these
  // pages, so a region larger than that faults in as it is touched.
  if (has_room_for(size)) {
    if (Status st = make_resident(p, size, "a private region"); !st.is_ok()) {
      munmap(p, size);
      return st;
    }
  }
  Segment s;
  s.data_ = static_cast<uint8_t*>(p);
  s.size_ = size;
  s.owner_ = true;
  return s;
}

namespace {

// Maps all `size` bytes of the file `fd` shared, reserving nothing (a
// growable region's segment); ENOMEM means no address space is left.
Result<uint8_t*> map_noreserve(int fd, size_t size, const std::string& what) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p != MAP_FAILED) return static_cast<uint8_t*>(p);
  const int e = errno;
  if (e == ENOMEM) {
    return exhausted("no address space to map " + std::to_string(size >> 30) + " GiB of " + what +
                     " (a process maps every node's growable regions: 128 TiB in all on "
                     "x86-64); register smaller growable regions");
  }
  return io_error("mmap(" + what + ")", e);
}

}  // namespace

Result<Segment> Segment::create_sparse(const std::string& name, size_t size, int* fd_out) {
  shm_unlink(name.c_str());  // a stale segment of a crashed run with this name
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("shm_open(" + name + ") for creation", errno);
  // Sparse: tmpfs takes a size of terabytes and allocates nothing for it.
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int e = errno;
    close(fd);
    shm_unlink(name.c_str());
    return io_error("ftruncate(" + name + ") to " + std::to_string(size) + " bytes", e);
  }
  Result<uint8_t*> p = map_noreserve(fd, size, "growable segment " + name);
  if (!p.is_ok()) {
    close(fd);
    shm_unlink(name.c_str());
    return p.status();
  }
  Segment s;
  s.name_ = name;
  s.data_ = *p;
  s.size_ = size;
  s.owner_ = true;
  *fd_out = fd;
  return s;
}

Result<Segment> Segment::reserve_private(size_t size) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    if (e == ENOMEM) {
      return exhausted("no address space for a growable region of " + std::to_string(size >> 30) +
                       " GiB of private memory (or vm.overcommit_memory is 2, which ignores "
                       "MAP_NORESERVE): register smaller growable regions");
    }
    return io_error("mmap of " + std::to_string(size >> 20) + " MiB of private memory", e);
  }
  (void)madvise(p, size, MADV_HUGEPAGE);
  Segment s;
  s.data_ = static_cast<uint8_t*>(p);
  s.size_ = size;
  s.owner_ = true;
  return s;
}

Result<Segment> Segment::open(const std::string& name, size_t size) {
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return unavailable("cannot open peer segment " + name + ": " + std::strerror(errno) +
                       " (is the peer on this host, with --fabric=shm and the same --cluster?)");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != size) {
    close(fd);
    return invalid_argument("peer segment " + name + " has " + std::to_string(st.st_size) +
                            " bytes, its descriptor says " + std::to_string(size));
  }
  // NORESERVE: a growable region's segment is terabytes of address space
  // of which only committed ranges have pages.
  Result<uint8_t*> p = map_noreserve(fd, size, "peer segment " + name);
  close(fd);
  if (!p.is_ok()) return p.status();
  Segment s;
  s.name_ = name;
  s.data_ = *p;
  s.size_ = size;
  s.owner_ = false;
  return s;
}

std::string dev_shm_huge_option() {
  std::ifstream mounts("/proc/mounts");
  return dev_shm_huge_option(mounts);
}

std::string dev_shm_huge_option(std::istream& mounts) {
  // The last /dev/shm line: a later mount over the same directory hides
  // the earlier ones.
  std::string huge, line;
  while (std::getline(mounts, line)) {
    std::istringstream in(line);
    std::string dev, dir, type, opts;
    if (!(in >> dev >> dir >> type >> opts) || dir != "/dev/shm") continue;
    huge = "never";
    std::istringstream os(opts);
    for (std::string o; std::getline(os, o, ',');) {
      if (o.rfind("huge=", 0) == 0) huge = o.substr(5);
    }
  }
  return huge;
}

std::string thp_mode() {
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  return thp_mode(enabled);
}

std::string thp_mode(std::istream& enabled) {
  std::string line;
  if (!std::getline(enabled, line)) return "";
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "";
  return line.substr(open + 1, close - open - 1);
}

namespace {

// The names in /dev/shm that start with `prefix` (without the leading '/').
std::vector<std::string> names_starting(const std::string& prefix) {
  std::vector<std::string> names;
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.emplace_back(e->d_name);
  }
  closedir(d);
  return names;
}

}  // namespace

int remove_segments(const std::string& cluster, int node) {
  std::string prefix = "drtmx." + cluster + ".";
  if (node >= 0) prefix += "n" + std::to_string(node) + ".";
  int removed = 0;
  for (const std::string& name : names_starting(prefix)) {
    if (shm_unlink(("/" + name).c_str()) == 0) ++removed;
  }
  return removed;
}

Removal remove_node_segments(const std::string& cluster, uint16_t node) {
  Removal r;
  for (const std::string& name :
       names_starting("drtmx." + cluster + ".n" + std::to_string(node) + ".")) {
    struct stat st {};
    const uint64_t bytes =
        stat(("/dev/shm/" + name).c_str(), &st) == 0 ? uint64_t(st.st_blocks) * 512 : 0;
    if (shm_unlink(("/" + name).c_str()) != 0) continue;
    ++r.segments;
    r.bytes += bytes;
  }
  return r;
}

OrphanSweep remove_orphan_segments(const std::string& launcher) {
  OrphanSweep r;
  const std::string prefix = "drtmx." + launcher + "-";
  for (const std::string& name : names_starting(prefix)) {
    // "drtmx.<launcher>-<pid>.n<node>.<what>": a default cluster name.
    const size_t dot = name.find('.', prefix.size());
    if (dot == std::string::npos || dot == prefix.size()) continue;
    const std::string digits = name.substr(prefix.size(), dot - prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    struct stat st {};
    const std::string path = "/dev/shm/" + name;
    const uint64_t bytes = stat(path.c_str(), &st) == 0 ? uint64_t(st.st_blocks) * 512 : 0;
    if (shm_unlink(("/" + name).c_str()) != 0) continue;
    ++r.segments;
    r.bytes += bytes;
    const std::string cluster = launcher + "-" + digits;
    if (std::find(r.clusters.begin(), r.clusters.end(), cluster) == r.clusters.end()) {
      r.clusters.push_back(cluster);
    }
  }
  return r;
}

std::string OrphanSweep::summary() const {
  if (segments == 0) return "";
  std::string s = "removed " + std::to_string(segments) + " shm segments (" +
                  std::to_string(bytes >> 20) + " MiB of /dev/shm) left by killed runs:";
  for (const std::string& c : clusters) s += " " + c;
  return s;
}

}  // namespace drtmx::r2::shm
