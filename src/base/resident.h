// make_resident: maps every page of a block of memory in advance, so the
// engine's first writes to it do not stop on a page fault each.
//
// Why: a database's memory is touched for the first time while it runs —
// a heap fills as rows are inserted, a version ring on its first lap, an
// applier's first write to a backup's slots — and each first touch of a
// 4 KiB page is a fault: 11-15 us on the virtual machine this project is
// measured on, about 1 us on a bare machine. Registered RDMA memory never
// pays it at run time: ibv_reg_mr pins every page of a region when it is
// registered. The shm fabric's regions and the persistent pools get the
// same treatment from this call (MADV_POPULATE_WRITE, Linux 5.14 on),
// once, when they are created or opened: their page tables are filled,
// pages not yet allocated are allocated and zeroed. Measured: docs/design-notes.md,
// "Registered memory is resident from the start".
//
// Not for memory whose pages need not exist: the call allocates what it
// maps (an anonymous region becomes its full size in RAM; a shm segment
// or a pool on tmpfs was reserved anyway by posix_fallocate). Not for
// files on a block device (it would read or allocate the whole file).
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace drtmx {

// Populates [p, p + bytes) writable (p page-aligned). Ok also when the
// kernel does not take MADV_POPULATE_WRITE (before 5.14, or a sandbox:
// the pages then fault in as they are touched, as before).
// kResourceExhausted when the machine cannot give the pages (ENOMEM, also
// a range that is not mapped), naming `what`; an io error naming `what`
// when a page cannot be backed (EFAULT, EHWPOISON: its first touch would
// be a SIGBUS).
Status make_resident(void* p, size_t bytes, const std::string& what);

// Whether this kernel takes MADV_POPULATE_WRITE (5.14 on; a sandbox may
// not), probed once on a page of its own: when false, make_resident leaves
// pages to fault in.
bool resident_supported();

// Whether `bytes` more of resident memory leave the machine at least an
// eighth of its memory available (/proc/meminfo: MemAvailable, MemTotal);
// true when /proc/meminfo cannot be read. For memory nothing reserved
// beforehand (private anonymous regions): populating more than the machine
// has would not fail cleanly but wake the OOM killer, so such memory is
// populated only when there is room, and otherwise faults in as touched.
bool has_room_for(size_t bytes);
// `text`: a /proc/meminfo image (the parser behind has_room_for).
bool has_room_for(size_t bytes, const std::string& meminfo);
// The same keeping `keep_sixteenths` sixteenths of the machine's memory
// available instead of two (an eighth).
bool has_room_for(size_t bytes, const std::string& meminfo, uint32_t keep_sixteenths);
bool has_room_for_keeping(size_t bytes, uint32_t keep_sixteenths);

// The text of a small file such as /proc/meminfo ("" when it cannot be read).
std::string read_small_file(const std::string& path);
// The bytes of a "Key:   N kB" line of such a text (/proc/meminfo,
// /proc/PID/status); 0 when absent.
uint64_t kib_field(const std::string& text, const std::string& key);
// /proc/meminfo's MemAvailable in bytes (0 when unknown).
uint64_t mem_available();

// How many of the 4 KiB pages of [p, p + bytes) are in this process's page
// tables now (/proc/self/pagemap's "present" bit); -1 when pagemap cannot
// be read. For tests and diagnostics: one read per page.
long mapped_pages(const void* p, size_t bytes);

}  // namespace drtmx
