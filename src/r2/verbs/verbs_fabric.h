// The verbs backend (rdma-core). See r2/verbs/README.md.
#pragma once

#include <memory>

#include "base/status.h"
#include "r2/fabric.h"
#include "r2/fabric_config.h"

namespace drtmx::r2 {

// Opens the RDMA device for every worker thread. With no device (or no
// usable port) it fails with a message that names --fabric=shm and the
// Soft-RoCE recipe; it never crashes.
Result<std::unique_ptr<Fabric>> make_verbs_fabric(const FabricConfig& cfg);

}  // namespace drtmx::r2
