// The ucx backend (UCX's UCP API). See r2/ucx/README.md.
#pragma once

#include <memory>

#include "base/status.h"
#include "r2/fabric.h"
#include "r2/fabric_config.h"

namespace drtmx::r2 {

// Creates the node's UCP context (RMA, 64-bit atomics, active messages;
// UCX_* environment variables steer it, e.g. UCX_TLS=tcp) and one worker
// per thread. In a build without UCX it fails with kUnavailable saying how
// to get it (ucx_unavailable.cc).
Result<std::unique_ptr<Fabric>> make_ucx_fabric(const FabricConfig& cfg);

}  // namespace drtmx::r2
