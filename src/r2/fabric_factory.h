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

// Removes the host-wide names by which other processes map node
// `cfg.node`'s volatile memory (shm: its /dev/shm segments; verbs: none).
// Mappings stay valid; the memory goes back once the last one is gone.
// For a node that ends abnormally. Persistent regions are never touched.
struct SharedNames {
  int count = 0;
  uint64_t bytes = 0;
};
SharedNames remove_shared_names(const FabricConfig& cfg);

}  // namespace drtmx::r2
