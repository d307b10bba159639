// Builds the fabric a configuration names. The one place that knows both
// backends; everything above it sees only r2/fabric.h.
#pragma once

#include <memory>

#include "base/status.h"
#include "r2/fabric.h"
#include "r2/fabric_config.h"

namespace drtmx::r2 {

// Validates `cfg` and builds its backend. Errors name the bad option.
Result<std::unique_ptr<Fabric>> make_fabric(const FabricConfig& cfg);

}  // namespace drtmx::r2
