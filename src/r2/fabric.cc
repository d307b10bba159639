#include "r2/fabric.h"

namespace drtmx::r2 {

const char* verb_name(Verb v) {
  switch (v) {
    case Verb::kRead:
      return "READ";
    case Verb::kWrite:
      return "WRITE";
    case Verb::kCas:
      return "CAS";
    case Verb::kFaa:
      return "FAA";
  }
  return "?";
}

const char* op_status_name(OpStatus s) {
  switch (s) {
    case OpStatus::kOk:
      return "ok";
    case OpStatus::kOutOfBounds:
      return "remote range outside the region";
    case OpStatus::kBadRegion:
      return "no such region on the target node";
    case OpStatus::kBadNode:
      return "no such node";
    case OpStatus::kMisaligned:
      return "atomic on a misaligned address";
    case OpStatus::kBadLocalBuffer:
      return "local buffer not in registered memory";
    case OpStatus::kBadLength:
      return "length zero or above the fabric's maximum";
    case OpStatus::kTransportError:
      return "transport error";
    case OpStatus::kFenced:
      return "fenced: not a member of the current configuration";
  }
  return "?";
}

const char* persistence_name(Persistence p) {
  switch (p) {
    case Persistence::kNone:
      return "volatile";
    case Persistence::kPmem:
      return "pmem";
    case Persistence::kMemFs:
      return "memfs";
    case Persistence::kMsync:
      return "msync";
  }
  return "?";
}

bool persistence_from_code(uint8_t code, Persistence* out) {
  if (code > static_cast<uint8_t>(Persistence::kMsync)) return false;
  *out = static_cast<Persistence>(code);
  return true;
}

}  // namespace drtmx::r2
