// The shared-memory backend. See r2/shm/README.md.
#pragma once

#include <memory>

#include "base/status.h"
#include "r2/fabric.h"
#include "r2/fabric_config.h"

namespace drtmx::r2 {

Result<std::unique_ptr<Fabric>> make_shm_fabric(const FabricConfig& cfg);

// Removes every shared-memory segment of cluster `cluster` (all nodes).
// Launchers call it before starting and after stopping a local cluster.
int remove_shm_segments(const std::string& cluster);

}  // namespace drtmx::r2
