#include "rdpma/pool.h"

#include <fcntl.h>
#include <libpmem.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/hash.h"
#include "base/resident.h"

namespace drtmx::rdpma {
namespace {

constexpr char kMagic[8] = {'D', 'R', 'T', 'M', 'X', 'P', 'M', '1'};
// 2: record slots keep the tuple timestamp at +8, before the body
// (store/record.h); a version-1 pool's records would be misread.
constexpr uint32_t kVersion = 2;
constexpr uint64_t kWatermarkOffset = 256;  // its own XPLine of the header page
constexpr uint64_t kSeed = 0x7064a1b2c3d4e5f6ull;
constexpr uint32_t kFlagSparse = 1;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t flags;  // kFlagSparse; 0 in pools of builds before sparse pools
  uint64_t cluster;
  uint32_t node, region;
  uint64_t layout;
  uint64_t bytes;
  uint64_t checksum;  // of every field above
};
static_assert(sizeof(Header) <= kWatermarkOffset);

uint64_t checksum_of(const Header& h) {
  return hash_bytes(kSeed, &h, offsetof(Header, checksum));
}

std::string describe(const PoolIdentity& id) {
  return "cluster " + std::to_string(id.cluster) + ", node " + std::to_string(id.node) +
         ", region " + std::to_string(id.region) + ", layout " + std::to_string(id.layout);
}

uint64_t* watermark_of(uint8_t* base) {
  return reinterpret_cast<uint64_t*>(base + kWatermarkOffset);
}

// How a mapping of `path` becomes durable.
r2::Persistence mode_of(const std::string& path, bool is_pmem) {
  if (is_pmem) return r2::Persistence::kPmem;
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) == 0 && (static_cast<uint64_t>(fs.f_type) == TMPFS_MAGIC ||
                                           static_cast<uint64_t>(fs.f_type) == RAMFS_MAGIC)) {
    return r2::Persistence::kMemFs;
  }
  return r2::Persistence::kMsync;
}

}  // namespace

Result<std::unique_ptr<PmemPool>> PmemPool::open(const PoolSpec& spec) {
  const std::string& path = spec.path;
  if (path.empty()) return invalid_argument("pmem pool: empty file path (give --pmem-dir)");
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  std::unique_ptr<PmemPool> p(new PmemPool());
  p->path_ = path;
  p->id_ = spec.id;
  int is_pmem = 0;
  if (spec.mode == PoolOpen::kCreate) {
    if (exists && !spec.format) {
      return already_exists("pmem pool " + path +
                            " already exists (from an earlier run?): restart from it with "
                            "--recover, or overwrite it with --format");
    }
    if (exists && ::unlink(path.c_str()) != 0) {
      return io_error("remove pmem pool " + path + " for --format", errno);
    }
    const uint64_t min = kHeaderBytes + kXPLine;
    const uint64_t want = spec.bytes < min ? min : spec.bytes;
    p->bytes_ = (want + 4095) / 4096 * 4096;
    p->sparse_ = spec.sparse;
    // Not sparse: libpmem allocates every block (posix_fallocate), so a
    // full file system is refused here. Sparse: ftruncate only.
    const int flags = PMEM_FILE_CREATE | PMEM_FILE_EXCL | (spec.sparse ? PMEM_FILE_SPARSE : 0);
    void* m = pmem_map_file(path.c_str(), p->bytes_, flags, 0600, &p->mapped_, &is_pmem);
    if (m == nullptr) {
      return io_error("create pmem pool " + path + " of " + std::to_string(p->bytes_) +
                          " bytes (does the directory exist, is it writable, is there room?)",
                      errno);
    }
    p->base_ = static_cast<uint8_t*>(m);
    p->mode_ = mode_of(path, is_pmem != 0);
    if (spec.sparse) {
      // The header's blocks, before it is written through the mapping (a
      // store into a hole of a full file system would be a SIGBUS).
      const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
      const int rc = fd < 0 ? -1 : ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, kHeaderBytes);
      const int e = errno;
      if (fd >= 0) ::close(fd);
      if (rc != 0) {
        ::unlink(path.c_str());
        return e == ENOSPC ? exhausted("no room for the header of pmem pool " + path +
                                       ": free space there, or point --pmem-dir elsewhere")
                           : io_error("allocating the header of pmem pool " + path, e);
      }
    }
    if (Status st = p->map_in_advance(); !st.is_ok()) {
      ::unlink(path.c_str());  // created above, nothing in it yet
      return st;
    }
    // Everything but the magic first, durable; then the magic: a crash in
    // between leaves a file that is not a pool (refused, --format).
    Header h{};
    h.version = kVersion;
    h.flags = spec.sparse ? kFlagSparse : 0;
    h.cluster = spec.id.cluster;
    h.node = spec.id.node;
    h.region = spec.id.region;
    h.layout = spec.id.layout;
    h.bytes = p->bytes_;
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.checksum = checksum_of(h);
    std::memset(h.magic, 0, sizeof h.magic);
    std::memcpy(p->base_, &h, sizeof h);
    *watermark_of(p->base_) = kHeaderBytes;
    DRTMX_RETURN_IF_ERROR(p->persist_range(p->base_, kHeaderBytes));
    std::memcpy(p->base_, kMagic, sizeof kMagic);
    DRTMX_RETURN_IF_ERROR(p->persist_range(p->base_, sizeof kMagic));
    return p;
  }

  // kRecover: validate before anything is written.
  if (!exists) {
    return not_found("pmem pool " + path +
                     " does not exist: nothing to recover (start without --recover to create "
                     "it)");
  }
  if (static_cast<uint64_t>(st.st_size) < kHeaderBytes) {
    return invalid_argument("pmem pool " + path + " is " + std::to_string(st.st_size) +
                            " bytes, shorter than its header: truncated; restore it, or "
                            "start over with --format");
  }
  void* m = pmem_map_file(path.c_str(), 0, 0, 0, &p->mapped_, &is_pmem);
  if (m == nullptr) return io_error("map pmem pool " + path, errno);
  p->base_ = static_cast<uint8_t*>(m);
  p->mode_ = mode_of(path, is_pmem != 0);
  // The header first (reading it allocates nothing): whether the pool is
  // sparse decides what is mapped in advance.
  Header h;
  std::memcpy(&h, p->base_, sizeof h);
  const std::string fix = "; restore it, or start over with --format";
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) {
    return invalid_argument("pmem pool " + path + " is not a drtmx pool (no magic)" + fix);
  }
  if (h.version != kVersion) {
    return invalid_argument("pmem pool " + path + " has format version " +
                            std::to_string(h.version) + ", this build reads " +
                            std::to_string(kVersion) + fix);
  }
  if (checksum_of(h) != h.checksum) {
    return invalid_argument("pmem pool " + path + ": corrupted header (checksum)" + fix);
  }
  if ((h.flags & ~kFlagSparse) != 0) {
    return invalid_argument("pmem pool " + path + " has unknown header flags " +
                            std::to_string(h.flags) + " (a newer build's pool?)" + fix);
  }
  p->sparse_ = (h.flags & kFlagSparse) != 0;
  DRTMX_RETURN_IF_ERROR(p->map_in_advance());
  if (h.bytes != p->mapped_) {
    return invalid_argument("pmem pool " + path + " is " + std::to_string(p->mapped_) +
                            " bytes but its header says " + std::to_string(h.bytes) +
                            ": truncated or extended" + fix);
  }
  const PoolIdentity found{h.cluster, h.node, h.region, h.layout};
  if (!(found == spec.id)) {
    return invalid_argument("pmem pool " + path + " belongs to " + describe(found) + ", not to " +
                            describe(spec.id) +
                            " (another cluster or configuration); point --pmem-dir elsewhere, "
                            "or start over with --format");
  }
  const uint64_t wm = __atomic_load_n(watermark_of(p->base_), __ATOMIC_ACQUIRE);
  if (wm < kHeaderBytes || wm > h.bytes || wm % kLine != 0) {
    return invalid_argument("pmem pool " + path + ": corrupted allocation watermark " +
                            std::to_string(wm) + fix);
  }
  p->bytes_ = h.bytes;
  return p;
}

PmemPool::~PmemPool() {
  if (base_ != nullptr) pmem_unmap(base_, mapped_);
}

uint64_t PmemPool::allocated() const {
  return __atomic_load_n(watermark_of(base_), __ATOMIC_ACQUIRE) - kHeaderBytes;
}

Result<FatPtr> PmemPool::alloc(uint32_t size) {
  if (size == 0) return invalid_argument("pmem pool " + path_ + ": allocation of 0 bytes");
  const uint64_t align = alloc_align(size), span = alloc_span(size);
  uint64_t* wm = watermark_of(base_);
  const uint64_t start = (*wm + align - 1) / align * align;
  if (start + span > bytes_) {
    return Status(Code::kResourceExhausted, "pmem pool " + path_ + " of " + std::to_string(bytes_) +
                                                " bytes is full: " + std::to_string(size) +
                                                " more bytes do not fit after " +
                                                std::to_string(*wm) + "; give it a larger size");
  }
  // One aligned 8-byte store: failure-atomic on persistent memory.
  __atomic_store_n(wm, start + span, __ATOMIC_RELEASE);
  DRTMX_RETURN_IF_ERROR(persist_range(wm, sizeof *wm));
  return FatPtr{start, size, static_cast<uint32_t>(span)};
}

Status PmemPool::map_in_advance() {
  if (mode_ == r2::Persistence::kMsync) return Status::ok();
  // Sparse: the data area is mapped as the fabric commits its ranges.
  return make_resident(base_, sparse_ ? kHeaderBytes : mapped_, "pmem pool " + path_);
}

Result<std::vector<std::pair<uint64_t, uint64_t>>> PmemPool::data_ranges() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  if (!sparse_) {
    out.emplace_back(0, bytes_ - kHeaderBytes);
    return out;
  }
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("open of pmem pool " + path_ + " to find its data", errno);
  off_t at = static_cast<off_t>(kHeaderBytes);
  const off_t end = static_cast<off_t>(bytes_);
  while (at < end) {
    const off_t data = ::lseek(fd, at, SEEK_DATA);
    if (data < 0) {
      const int e = errno;
      if (e == ENXIO) break;  // only holes from `at` to the end
      ::close(fd);
      return io_error("lseek(SEEK_DATA) in pmem pool " + path_, e);
    }
    if (data >= end) break;
    off_t hole = ::lseek(fd, data, SEEK_HOLE);
    if (hole < 0) {
      const int e = errno;
      ::close(fd);
      return io_error("lseek(SEEK_HOLE) in pmem pool " + path_, e);
    }
    if (hole > end) hole = end;
    out.emplace_back(static_cast<uint64_t>(data) - kHeaderBytes,
                     static_cast<uint64_t>(hole - data));
    at = hole;
  }
  ::close(fd);
  return out;
}

Status PmemPool::check(const FatPtr& p, uint64_t at, uint64_t n, const char* what) const {
  const uint64_t wm = __atomic_load_n(watermark_of(base_), __ATOMIC_ACQUIRE);
  if (p.span == 0 || p.span != alloc_span(p.size) || p.offset < kHeaderBytes ||
      p.offset % alloc_align(p.size) != 0 || p.offset > wm || p.span > wm - p.offset) {
    return invalid_argument(std::string(what) + " through a pointer that is not an allocation of " +
                            "pmem pool " + path_ + " (offset " + std::to_string(p.offset) +
                            ", size " + std::to_string(p.size) + ")");
  }
  if (at > p.size || n > p.size - at) {
    return out_of_range(std::string(what) + " of bytes [" + std::to_string(at) + ", " +
                        std::to_string(at + n) + ") of an allocation of " + std::to_string(p.size) +
                        " bytes in pmem pool " + path_);
  }
  return Status::ok();
}

Status PmemPool::read(const FatPtr& p, uint64_t at, void* out, uint64_t n) const {
  DRTMX_RETURN_IF_ERROR(check(p, at, n, "read"));
  std::memcpy(out, base_ + p.offset + at, n);
  return Status::ok();
}

Status PmemPool::write(const FatPtr& p, uint64_t at, const void* in, uint64_t n) {
  DRTMX_RETURN_IF_ERROR(check(p, at, n, "write"));
  std::memcpy(base_ + p.offset + at, in, n);
  return Status::ok();
}

Status PmemPool::check_raw(uint64_t offset, uint64_t n, const char* what) const {
  const uint64_t wm = __atomic_load_n(watermark_of(base_), __ATOMIC_ACQUIRE);
  if (offset < kHeaderBytes || offset > wm || n > wm - offset) {
    return out_of_range(std::string(what) + " of bytes [" + std::to_string(offset) + ", " +
                        std::to_string(offset + n) + ") of pmem pool " + path_ +
                        ": outside its allocated data [" + std::to_string(kHeaderBytes) + ", " +
                        std::to_string(wm) + ")");
  }
  return Status::ok();
}

void PmemPool::copy_nt(uint8_t* dst, const void* in, uint64_t n, uint64_t span, bool whole_span) {
  if (mode_ == r2::Persistence::kMsync) {
    std::memcpy(dst, in, n);
    if (whole_span) std::memset(dst + n, 0, span - n);
    return;
  }
  constexpr unsigned kFlags = PMEM_F_MEM_NONTEMPORAL | PMEM_F_MEM_NODRAIN;
  if (!whole_span) {
    pmem_memcpy(dst, in, n, kFlags);
    return;
  }
  // dst is line aligned (an allocation): whole lines only, the last
  // payload line completed with zeros, then the rest of the padding.
  const uint64_t full = n / kLine * kLine;
  if (full != 0) pmem_memcpy(dst, in, full, kFlags);
  uint64_t done = full;
  if (n > full) {
    alignas(64) uint8_t line[kLine] = {};
    std::memcpy(line, static_cast<const uint8_t*>(in) + full, n - full);
    pmem_memcpy(dst + full, line, kLine, kFlags);
    done += kLine;
  }
  if (span > done) pmem_memset(dst + done, 0, span - done, kFlags);
}

Status PmemPool::write_nt(const FatPtr& p, uint64_t at, const void* in, uint64_t n) {
  DRTMX_RETURN_IF_ERROR(check(p, at, n, "write"));
  copy_nt(base_ + p.offset + at, in, n, p.span, at == 0 && n == p.size);
  return Status::ok();
}

Status PmemPool::pwrite(const FatPtr& p, uint64_t at, const void* in, uint64_t n) {
  DRTMX_RETURN_IF_ERROR(check(p, at, n, "persistent write"));
  uint8_t* dst = base_ + p.offset + at;
  const bool whole = at == 0 && n == p.size;
  copy_nt(dst, in, n, p.span, whole);
  if (mode_ == r2::Persistence::kMsync) return persist_range(dst, whole ? p.span : n);
  // H4/H7: the non-temporal stores are on their way; one fence.
  pmem_drain();
  return Status::ok();
}

Status PmemPool::pwrite_raw(uint64_t region_offset, const void* in, uint64_t n) {
  // An offset past the file cannot be in range (and must not overflow).
  const uint64_t offset = region_offset <= bytes_ ? region_offset + kHeaderBytes : ~uint64_t{0};
  DRTMX_RETURN_IF_ERROR(check_raw(offset, n, "persistent write"));
  std::memcpy(base_ + offset, in, n);
  return persist_range(base_ + offset, n);
}

Status PmemPool::persist(const FatPtr& p, uint64_t at, uint64_t n) {
  DRTMX_RETURN_IF_ERROR(check(p, at, n, "persist"));
  return persist_range(base_ + p.offset + at, n);
}

Status PmemPool::flush(const FatPtr& p, uint64_t at, uint64_t n) {
  DRTMX_RETURN_IF_ERROR(check(p, at, n, "flush"));
  if (n == 0) return Status::ok();
  if (mode_ == r2::Persistence::kMsync) return persist_range(base_ + p.offset + at, n);
  pmem_flush(base_ + p.offset + at, n);
  return Status::ok();
}

void PmemPool::drain() const {
  if (mode_ != r2::Persistence::kMsync) pmem_drain();
}

Status PmemPool::persist_mapped(const void* addr, uint64_t n) {
  const auto a = reinterpret_cast<uintptr_t>(addr), b = reinterpret_cast<uintptr_t>(base_);
  if (a < b || a - b > bytes_) {
    return out_of_range("persist of " + std::to_string(n) +
                        " bytes at an address outside pmem pool " + path_);
  }
  DRTMX_RETURN_IF_ERROR(check_raw(a - b, n, "persist"));
  return persist_range(addr, n);
}

Status PmemPool::persist_range(const void* p, uint64_t n) {
  if (n == 0) return Status::ok();
  if (mode_ != r2::Persistence::kMsync) {
    pmem_persist(p, n);
    return Status::ok();
  }
  if (pmem_msync(p, n) != 0) return io_error("msync of pmem pool " + path_, errno);
  return Status::ok();
}

}  // namespace drtmx::rdpma
