#include "node_options.h"

namespace drtmx::bench {

Status check_node_option(int node, uint32_t nodes, const std::string& coordinator) {
  if (node >= 0 && coordinator.empty()) {
    return invalid_argument(
        "--node needs --coordinator=HOST:PORT (where the cluster's coordinator listens)");
  }
  if (node >= static_cast<int>(nodes)) {
    return invalid_argument("--node=" + std::to_string(node) +
                            ": must be below --nodes=" + std::to_string(nodes));
  }
  return Status::ok();
}

void append_node_args(std::vector<std::string>& args, const r2::FabricConfig& fabric,
                      uint32_t join_timeout_ms, int node, const std::string& coordinator) {
  args.push_back("--mtu=" + std::to_string(fabric.mtu));
  args.push_back("--join-timeout-ms=" + std::to_string(join_timeout_ms));
  args.push_back("--node=" + std::to_string(node));
  args.push_back("--coordinator=" + coordinator);
  if (!fabric.device.empty()) args.push_back("--device=" + fabric.device);
}

}  // namespace drtmx::bench
