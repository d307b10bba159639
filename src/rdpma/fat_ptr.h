// FatPtr: what RDPMA hands out instead of raw pointers into persistent
// memory (thesis §2.3.4): where an allocation lives in its pool and how
// large its payload is. The allocator aligns and pads every allocation
// (alloc_span), so a write through a foreign pointer could land in padding
// or in a neighbour; every access through a FatPtr is bounds-checked
// against its payload instead.
#pragma once

#include <cstdint>

namespace drtmx::rdpma {

// Granularities (thesis Table 2-4): the PCIe data word / cache line, and
// the 3D-XPoint media's internal write unit.
constexpr uint64_t kLine = 64;     // H6/H7: small objects, aligned and padded to 64 B
constexpr uint64_t kXPLine = 256;  // H5: objects of 256 B or more, to 256 B

// Bytes of a pool file before its data area (the header, a page): the
// data area is what the fabric registers, so an allocation's region offset
// is its offset - kPoolHeaderBytes.
constexpr uint64_t kPoolHeaderBytes = 4096;

struct FatPtr {
  uint64_t offset = 0;  // from the start of the pool file
  uint32_t size = 0;    // payload bytes the caller asked for
  uint32_t span = 0;    // bytes reserved: size padded to the alignment
  bool null() const { return span == 0; }
};

// The alignment (and padding unit) for a payload of `size` bytes.
constexpr uint64_t alloc_align(uint64_t size) {
  return size < kXPLine ? kLine : kXPLine;
}
// The bytes an allocation of `size` occupies: padded to its alignment.
constexpr uint64_t alloc_span(uint64_t size) {
  const uint64_t a = alloc_align(size);
  return (size + a - 1) / a * a;
}

}  // namespace drtmx::rdpma
