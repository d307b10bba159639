// The checks every backend applies to a FileRegion before registering it
// (see FileRegion in r2/fabric.h), so a region refused on shm is refused
// the same way on verbs.
#pragma once

#include "base/status.h"
#include "r2/fabric.h"

namespace drtmx::r2 {

// Refuses, naming the region and what is wrong: a null or unaligned base,
// zero bytes, an unaligned file offset, kNone, an empty path or one with a
// newline, a file that does not exist or is shorter than
// file_offset + bytes.
Status check_file_region(RegionId id, const FileRegion& f);

}  // namespace drtmx::r2
