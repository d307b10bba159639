#include "base/resident.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace drtmx {

namespace {
// <sys/mman.h> of older C libraries lacks it; the kernel's value.
constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE
}  // namespace

Status make_resident(void* p, size_t bytes, const std::string& what) {
  if (bytes == 0) return Status::ok();
  if (madvise(p, bytes, kPopulateWrite) == 0) return Status::ok();
  const int e = errno;
  if (e == ENOMEM) {
    return exhausted("no memory for the " + std::to_string(bytes >> 20) + " MiB of " + what +
                     ": free memory, or use smaller regions");
  }
  // The pages cannot be backed (a file hole the file system cannot fill,
  // a poisoned page): the first touch would be a SIGBUS instead.
  if (e == EFAULT || e == EHWPOISON) {
    return io_error("mapping the pages of " + what + " in advance (MADV_POPULATE_WRITE)", e);
  }
  // EINVAL (a kernel before 5.14), or a sandbox that does not take the
  // advice: the pages fault in as they are touched, as without this call.
  return Status::ok();
}

bool resident_supported() {
  static const bool supported = [] {
    constexpr size_t kPage = 4096;
    void* p = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    const bool ok = madvise(p, kPage, kPopulateWrite) == 0;
    munmap(p, kPage);
    return ok;
  }();
  return supported;
}

long mapped_pages(const void* p, size_t bytes) {
  constexpr size_t kPage = 4096;
  const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  long present = 0;
  const auto first = reinterpret_cast<uintptr_t>(p) / kPage;
  for (size_t i = 0; i < bytes / kPage; ++i) {
    uint64_t e = 0;  // one 64-bit entry per virtual page, bit 63: present
    if (::pread(fd, &e, sizeof e, static_cast<off_t>((first + i) * sizeof e)) != sizeof e) {
      present = -1;
      break;
    }
    present += static_cast<long>(e >> 63);
  }
  ::close(fd);
  return present;
}

bool has_room_for(size_t bytes, const std::string& meminfo) {
  return has_room_for(bytes, meminfo, 2);
}

bool has_room_for(size_t bytes, const std::string& meminfo, uint32_t keep_sixteenths) {
  uint64_t total_kb = 0, available_kb = 0;
  bool have_total = false, have_available = false;
  std::istringstream in(meminfo);
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb) {
    std::getline(in, unit);  // " kB"
    if (key == "MemTotal:") total_kb = kb, have_total = true;
    if (key == "MemAvailable:") available_kb = kb, have_available = true;
  }
  if (!have_total || !have_available) return true;  // cannot tell: as before the check
  const uint64_t want_kb = (bytes + 1023) / 1024;
  return available_kb >= want_kb && available_kb - want_kb >= total_kb / 16 * keep_sixteenths;
}

bool has_room_for(size_t bytes) {
  return has_room_for_keeping(bytes, 2);
}

bool has_room_for_keeping(size_t bytes, uint32_t keep_sixteenths) {
  const std::string text = read_small_file("/proc/meminfo");
  if (text.empty()) return true;
  return has_room_for(bytes, text, keep_sixteenths);
}

std::string read_small_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return "";
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

uint64_t kib_field(const std::string& text, const std::string& key) {
  // At the start of a line: "MemAvailable:" must not match "xMemAvailable:".
  const std::string want = key + ":";
  size_t at = text.rfind(want, 0) == 0 ? 0 : text.find("\n" + want);
  if (at == std::string::npos) return 0;
  if (at != 0) ++at;
  return std::strtoull(text.c_str() + at + want.size(), nullptr, 10) * 1024;
}

uint64_t mem_available() {
  return kib_field(read_small_file("/proc/meminfo"), "MemAvailable");
}

}  // namespace drtmx
