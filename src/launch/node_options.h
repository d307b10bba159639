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

// Declares --cluster-key-file, stored into `file`.
void add_cluster_key_option(boost::program_options::options_description& desc, std::string& file);

// Sets fabric.cluster_key: read from `file` when given ("-": standard
// input); otherwise, for a launcher (`node` < 0), a new random key of this
// run; a node started on its own (`node` >= 0) must be given one.
Status resolve_cluster_key(const std::string& file, int node, r2::FabricConfig& fabric);

// How a launcher hands a node process its key: the argument that makes the
// node read it from standard input, and what to write there (key and a
// newline). The key never appears on a command line.
constexpr const char* kKeyFromStdinArg = "--cluster-key-file=-";
std::string key_stdin(const r2::FabricConfig& fabric);

// The node-process arguments that pass those options on.
void append_membership_args(std::vector<std::string>& args, const r2::FabricConfig& fabric);

// Appends to `args` the arguments that make a process node `node` of the
// cluster, joining at `coordinator` within `join_timeout_ms`: --mtu,
// --join-timeout-ms, --node, --coordinator, the membership options,
// kKeyFromStdinArg, then --device when fabric.device is set.
void append_node_args(std::vector<std::string>& args, const r2::FabricConfig& fabric,
                      uint32_t join_timeout_ms, int node, const std::string& coordinator);

}  // namespace drtmx::bench
