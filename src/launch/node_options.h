// The options with which r2-bench and rdpma-bench run one node of a
// cluster (--node, --coordinator) and reach its fabric (--mtu, --device,
// --join-timeout-ms): their common check, and how a launcher passes them to
// a node process. Each program declares these options itself.
#pragma once

#include <boost/program_options.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/fabric_config.h"

namespace drtmx::bench {

// --node=`node` (>= 0: run only that node of a cluster started elsewhere)
// needs --coordinator, and must be below --nodes=`nodes`. Errors:
// invalid_argument naming the options (no "see --help" hint).
Status check_node_option(int node, uint32_t nodes, const std::string& coordinator);

// Declares the r2 membership options in `desc`, stored into `fabric`:
// --lease-ms (FabricConfig::lease_ms; validated by FabricConfig::validate)
// and --survive-failures. r2-bench, rdpma-bench and drtmx-bench share them.
void add_membership_options(boost::program_options::options_description& desc,
                            r2::FabricConfig& fabric);

// The node-process arguments that pass those options on.
void append_membership_args(std::vector<std::string>& args, const r2::FabricConfig& fabric);

// Appends to `args` the arguments that make a process node `node` of the
// cluster, joining at `coordinator` within `join_timeout_ms`: --mtu,
// --join-timeout-ms, --node, --coordinator, the membership options, then
// --device when fabric.device is set.
void append_node_args(std::vector<std::string>& args, const r2::FabricConfig& fabric,
                      uint32_t join_timeout_ms, int node, const std::string& coordinator);

}  // namespace drtmx::bench
