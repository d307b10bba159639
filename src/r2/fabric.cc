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

std::string describe_transports(const FabricInfo& info) {
  std::vector<std::pair<NodeId, std::string>> peers;
  for (size_t n = 0; n < info.peer_transports.size(); ++n) {
    if (n != info.node) peers.emplace_back(static_cast<NodeId>(n), info.peer_transports[n]);
  }
  if (peers.empty()) {
    return info.peer_transports.empty() ? "" : info.peer_transports[0] + " (to itself)";
  }
  bool same = true;
  for (const auto& p : peers) same = same && p.second == peers[0].second;
  if (same) return peers[0].second + (peers.size() > 1 ? " to every peer" : " to the peer");
  std::string s;
  for (const auto& [n, t] : peers)
    s += (s.empty() ? "" : "; ") + ("node " + std::to_string(n) + ": " + t);
  return s;
}

bool persistence_from_code(uint8_t code, Persistence* out) {
  if (code > static_cast<uint8_t>(Persistence::kMsync)) return false;
  *out = static_cast<Persistence>(code);
  return true;
}

}  // namespace drtmx::r2
