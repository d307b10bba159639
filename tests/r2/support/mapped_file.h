// Files for persistent-region tests: a temporary file of a given size
// mapped MAP_SHARED (what a PmemPool gives the fabric), reading it back
// through a separate descriptor, and how many of its pages are dirty in
// this process's mappings (/proc/self/smaps) — an msync'ed page is clean.
#pragma once

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace drtmx::r2::testing {

// True when `dir` lies on a memory file system (tmpfs, ramfs).
inline bool on_memory_fs(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return false;
  const auto t = static_cast<uint64_t>(fs.f_type);
  return t == TMPFS_MAGIC || t == RAMFS_MAGIC;
}

// A directory on a disk file system for msync-mode files: the temporary
// directory when it is not a memory file system, else the current
// directory (the build tree); "" when neither is (callers skip).
inline std::string disk_dir() {
  const std::string tmp = std::filesystem::temp_directory_path().string();
  if (!on_memory_fs(tmp)) return tmp;
  const std::string cwd = std::filesystem::current_path().string();
  return on_memory_fs(cwd) ? "" : cwd;
}

class MappedFile {
 public:
  // Creates `dir`/<unique name> of `bytes` bytes (zeroed) and maps it all.
  MappedFile(const std::string& dir, size_t bytes) : size_(bytes) {
    static std::atomic<int> counter{0};
    path_ =
        dir + "/drtmx-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".file";
    fd_ = ::open(path_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(bytes)) != 0) return;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p != MAP_FAILED) base_ = static_cast<uint8_t*>(p);
  }
  ~MappedFile() {
    if (base_ != nullptr) munmap(base_, size_);
    if (fd_ >= 0) close(fd_);
    if (!keep_) unlink(path_.c_str());
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  bool ok() const { return base_ != nullptr; }
  uint8_t* base() const { return base_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  void keep() { keep_ = true; }

  // Bytes [offset, offset + n) read through a new descriptor (pread).
  std::vector<uint8_t> read_back(uint64_t offset, size_t n) const {
    std::vector<uint8_t> out(n);
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    const ssize_t got = pread(fd, out.data(), n, static_cast<off_t>(offset));
    close(fd);
    if (got != static_cast<ssize_t>(n)) return {};
    return out;
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  bool keep_ = false;
};

// Dirty kB (Private_Dirty + Shared_Dirty) of every mapping of `path` in
// this process. msync of a range writes its dirty pages back and cleans
// them in every mapping, so after it the file's mappings count 0 there.
inline long dirty_kb_of_file(const std::string& path) {
  const std::string canon = std::filesystem::weakly_canonical(path).string();
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool in_file = false;
  long kb = 0;
  while (std::getline(in, line)) {
    // A mapping's header: "start-end perms offset dev inode [path]".
    const size_t dash = line.find('-');
    const size_t space = line.find(' ');
    if (dash != std::string::npos && space != std::string::npos && dash < space &&
        line.find(':') > space) {
      std::istringstream is(line);
      std::string range, perms, off, dev, inode, name;
      is >> range >> perms >> off >> dev >> inode;
      std::getline(is >> std::ws, name);
      in_file = name == canon;
      continue;
    }
    if (!in_file) continue;
    for (const char* key : {"Private_Dirty:", "Shared_Dirty:"}) {
      if (line.rfind(key, 0) == 0) kb += std::stol(line.substr(std::string(key).size()));
    }
  }
  return kb;
}

}  // namespace drtmx::r2::testing
