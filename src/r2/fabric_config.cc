#include "r2/fabric_config.h"

namespace drtmx::r2 {

namespace {
bool valid_cluster_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}
}  // namespace

Status FabricConfig::validate() const {
  if (backend != "shm" && backend != "verbs" && backend != "ucx") {
    return invalid_argument("--fabric='" + backend + "': expected 'shm', 'verbs' or 'ucx'");
  }
  if (!valid_cluster_name(cluster)) {
    return invalid_argument("--cluster='" + cluster +
                            "': use 1 to 64 characters from [A-Za-z0-9_-]");
  }
  if (num_nodes == 0 || num_nodes > 256) {
    return invalid_argument("--nodes=" + std::to_string(num_nodes) + ": expected 1..256");
  }
  if (node >= num_nodes) {
    return invalid_argument("--node=" + std::to_string(node) +
                            ": must be below --nodes=" + std::to_string(num_nodes));
  }
  if (threads == 0 || threads > 256) {
    return invalid_argument("--threads=" + std::to_string(threads) + ": expected 1..256");
  }
  if (send_queue_depth < 4 || send_queue_depth > 16384) {
    return invalid_argument("send queue depth " + std::to_string(send_queue_depth) +
                            ": expected 4..16384");
  }
  if (mtu < 256 || mtu > 65536) {
    return invalid_argument("--mtu=" + std::to_string(mtu) + ": expected 256..65536");
  }
  if (delay_ns > 1000000000ull) {
    return invalid_argument("--fabric-delay-ns=" + std::to_string(delay_ns) +
                            ": expected at most 1000000000 (1 s)");
  }
  if (backend != "shm" && delay_ns != 0) {
    return invalid_argument("--fabric-delay-ns works only with --fabric=shm");
  }
  if (ring_bytes < 4 * (mtu + 64) || (ring_bytes & (ring_bytes - 1)) != 0) {
    return invalid_argument("ring bytes " + std::to_string(ring_bytes) +
                            ": must be a power of two holding at least 4 messages of --mtu");
  }
  if (recv_buffers < 16) {
    return invalid_argument("receive buffers " + std::to_string(recv_buffers) +
                            ": expected at least 16");
  }
  if (lease_ms < kMinLeaseMs || lease_ms > kMaxLeaseMs) {
    return invalid_argument("--lease-ms=" + std::to_string(lease_ms) + ": expected " +
                            std::to_string(kMinLeaseMs) + ".." + std::to_string(kMaxLeaseMs) +
                            " (a node is declared failed after this long without renewing its "
                            "lease; renewals go every lease/4)");
  }
  return Status::ok();
}

std::map<std::string, std::string> FabricConfig::fingerprint() const {
  return {
      {"fabric", backend},
      {"nodes", std::to_string(num_nodes)},
      {"threads", std::to_string(threads)},
      {"mtu", std::to_string(mtu)},
      {"send_queue_depth", std::to_string(send_queue_depth)},
      {"fabric_delay_ns", std::to_string(delay_ns)},
      {"ring_bytes", std::to_string(ring_bytes)},
      {"recv_buffers", std::to_string(recv_buffers)},
      {"lease_ms", std::to_string(lease_ms)},
      {"survive_failures", survive_failures ? "yes" : "no"},
  };
}

}  // namespace drtmx::r2
