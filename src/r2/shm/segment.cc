#include "r2/shm/segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  if (owner_) shm_unlink(name_.c_str());
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
  Segment s;
  s.name_ = name;
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
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int map_errno = errno;
  close(fd);
  if (p == MAP_FAILED) return io_error("mmap(" + name + ")", map_errno);
  Segment s;
  s.name_ = name;
  s.data_ = static_cast<uint8_t*>(p);
  s.size_ = size;
  s.owner_ = false;
  return s;
}

int remove_segments(const std::string& cluster, int node) {
  std::string prefix = "drtmx." + cluster + ".";
  if (node >= 0) prefix += "n" + std::to_string(node) + ".";
  DIR* d = opendir("/dev/shm");
  if (d == nullptr) return 0;
  int removed = 0;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) {
      std::string n = std::string("/") + e->d_name;
      if (shm_unlink(n.c_str()) == 0) ++removed;
    }
  }
  closedir(d);
  return removed;
}

}  // namespace drtmx::r2::shm
