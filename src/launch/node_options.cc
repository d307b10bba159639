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

void add_membership_options(boost::program_options::options_description& desc,
                            r2::FabricConfig& fabric) {
  namespace po = boost::program_options;
  desc.add_options()(
      "lease-ms", po::value(&fabric.lease_ms)->default_value(r2::FabricConfig::kDefaultLeaseMs),
      "membership: a node that does not renew its lease (every lease/4, through the control "
      "plane) for this long is declared failed (--survive-failures) or only measured")(
      "survive-failures", po::bool_switch(&fabric.survive_failures),
      "membership: remove a failed node (lease expired or connection lost) and keep the others "
      "running at the next epoch, instead of ending the run")(
      "ucx-strict-order", po::bool_switch(&fabric.ucx_strict_order),
      "ucx: one-sided ops through UCX's RMA (on tcp its emulation), every WRITE/atomic waiting "
      "for the ops before it to complete at the target, as when UCX spreads ops over several "
      "lanes (to measure what that order costs)");
}

void append_membership_args(std::vector<std::string>& args, const r2::FabricConfig& fabric) {
  args.push_back("--lease-ms=" + std::to_string(fabric.lease_ms));
  if (fabric.survive_failures) args.push_back("--survive-failures");
  if (fabric.ucx_strict_order) args.push_back("--ucx-strict-order");
}

void append_node_args(std::vector<std::string>& args, const r2::FabricConfig& fabric,
                      uint32_t join_timeout_ms, int node, const std::string& coordinator) {
  args.push_back("--mtu=" + std::to_string(fabric.mtu));
  args.push_back("--join-timeout-ms=" + std::to_string(join_timeout_ms));
  args.push_back("--node=" + std::to_string(node));
  args.push_back("--coordinator=" + coordinator);
  append_membership_args(args, fabric);
  if (!fabric.device.empty()) args.push_back("--device=" + fabric.device);
}

}  // namespace drtmx::bench
