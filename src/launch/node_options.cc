#include "node_options.h"

#include "r2/control/cluster_key.h"

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

void add_cluster_key_option(boost::program_options::options_description& desc, std::string& file) {
  namespace po = boost::program_options;
  desc.add_options()("cluster-key-file", po::value(&file),
                     "the cluster key: a file only its owner may read (at least 32 bytes, e.g. "
                     "from 'openssl rand -hex 32'), or '-' for standard input. A launcher makes a "
                     "random key per run without it; a node started on its own needs it");
}

Status resolve_cluster_key(const std::string& file, int node, r2::FabricConfig& fabric) {
  if (!file.empty()) {
    auto key = r2::read_cluster_key_file(file);
    if (!key) return key.status();
    fabric.cluster_key = std::move(key.value());
    return Status::ok();
  }
  if (node >= 0) {
    return invalid_argument(
        "--node=" + std::to_string(node) +
        " needs --cluster-key-file=FILE: the cluster's key, the same file on every node and "
        "the coordinator (make one with: openssl rand -hex 32 > FILE; chmod 600 FILE)");
  }
  auto key = r2::make_cluster_key();
  if (!key) return key.status();
  fabric.cluster_key = std::move(key.value());
  return Status::ok();
}

std::string key_stdin(const r2::FabricConfig& fabric) {
  return fabric.cluster_key + "\n";
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
  args.push_back(kKeyFromStdinArg);
  if (!fabric.device.empty()) args.push_back("--device=" + fabric.device);
}

}  // namespace drtmx::bench
