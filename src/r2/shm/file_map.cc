#include "r2/shm/file_map.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace drtmx::r2::shm {

Result<FileId> stat_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return io_error("stat(" + path + ")", errno);
  return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                static_cast<uint64_t>(st.st_size)};
}

FileMap::~FileMap() {
  release();
}

FileMap& FileMap::operator=(FileMap&& o) noexcept {
  if (this != &o) {
    release();
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void FileMap::release() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

Result<FileMap> FileMap::open(const std::string& path, uint64_t offset, size_t bytes,
                              const FileId& expect, uint16_t owner) {
  const std::string who = "persistent region file " + path + " of node " + std::to_string(owner);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return unavailable("cannot open " + who + ": " + std::strerror(errno) +
                       " (shm nodes must share a host and see the same file at that path)");
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    return io_error("fstat of " + who, e);
  }
  if (static_cast<uint64_t>(st.st_dev) != expect.dev ||
      static_cast<uint64_t>(st.st_ino) != expect.ino) {
    close(fd);
    return invalid_argument(who +
                            " is not the file the node registered (another file was put at that "
                            "path since); restart the cluster");
  }
  if (static_cast<uint64_t>(st.st_size) < offset || bytes > st.st_size - offset) {
    close(fd);
    return invalid_argument(who + " has " + std::to_string(st.st_size) +
                            " bytes, the region needs [" + std::to_string(offset) + ", " +
                            std::to_string(offset + bytes) + "): it was truncated");
  }
  const size_t len = (bytes + 4095) & ~size_t{4095};
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(offset));
  const int map_errno = errno;
  close(fd);
  if (p == MAP_FAILED) return io_error("mmap of " + who, map_errno);
  FileMap m;
  m.data_ = static_cast<uint8_t*>(p);
  m.size_ = len;
  return m;
}

}  // namespace drtmx::r2::shm
