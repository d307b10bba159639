// FileMap: a peer's view of a persistent region on the shm fabric — a range
// of the owner's file mapped MAP_SHARED into this process. The owner maps
// its own file (it registered the memory); peers open the same path and
// check that it is the same file (device and inode) before mapping it.
// Unmapped on destruction; the file itself is never removed or resized.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace drtmx::r2::shm {

// What identifies a file across processes of one host.
struct FileId {
  uint64_t dev = 0;
  uint64_t ino = 0;
  uint64_t size = 0;  // bytes, at the time of the stat
};

// stat(path); an error names the path.
Result<FileId> stat_file(const std::string& path);

class FileMap {
 public:
  FileMap() = default;
  ~FileMap();
  FileMap(FileMap&& o) noexcept { *this = std::move(o); }
  FileMap& operator=(FileMap&& o) noexcept;
  FileMap(const FileMap&) = delete;
  FileMap& operator=(const FileMap&) = delete;

  // Maps bytes [offset, offset + bytes) of `path` read-write, shared.
  // Refused (naming the path and the owner node) when the file is not
  // `expect` (another file now sits at the path), is shorter than
  // offset + bytes, or cannot be opened or mapped.
  static Result<FileMap> open(const std::string& path, uint64_t offset, size_t bytes,
                              const FileId& expect, uint16_t owner);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void release();
  uint8_t* data_ = nullptr;
  size_t size_ = 0;  // the mapping's length (bytes rounded up to a page)
};

}  // namespace drtmx::r2::shm
