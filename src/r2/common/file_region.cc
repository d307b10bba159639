#include "r2/common/file_region.h"

#include <sys/stat.h>

#include <cerrno>

namespace drtmx::r2 {

Status check_file_region(RegionId id, const FileRegion& f) {
  const std::string what = "file region " + std::to_string(id) + " (" + f.path + ")";
  if (f.base == nullptr) return invalid_argument(what + ": no memory (base is null)");
  if (reinterpret_cast<uintptr_t>(f.base) % 4096 != 0) {
    return invalid_argument(what + ": base is not page aligned; register the file's own mapping");
  }
  if (f.bytes == 0) return invalid_argument(what + " has size 0");
  if (f.file_offset % 4096 != 0) {
    return invalid_argument(what + ": file offset " + std::to_string(f.file_offset) +
                            " is not a multiple of the page size (4096)");
  }
  if (f.mode == Persistence::kNone) {
    return invalid_argument(what +
                            ": persistence 'volatile' given; use register_region for volatile "
                            "memory");
  }
  if (f.path.empty()) return invalid_argument(what + ": no file path (peers map the file by it)");
  if (f.path.find('\n') != std::string::npos) {
    return invalid_argument(what + ": the path contains a newline");
  }
  struct stat st {};
  if (::stat(f.path.c_str(), &st) != 0) return io_error(what + ": stat", errno);
  if (static_cast<uint64_t>(st.st_size) < f.file_offset ||
      f.bytes > static_cast<uint64_t>(st.st_size) - f.file_offset) {
    return invalid_argument(what + ": the file has " + std::to_string(st.st_size) +
                            " bytes, fewer than offset " + std::to_string(f.file_offset) + " + " +
                            std::to_string(f.bytes) + " bytes");
  }
  return Status::ok();
}

}  // namespace drtmx::r2
