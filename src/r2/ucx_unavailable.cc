// make_ucx_fabric in a build without UCX (CMake found no libucx): it says
// so and how to get a build that has it. The ucx backend is in r2/ucx/.
#include "r2/ucx/ucx_fabric.h"

namespace drtmx::r2 {

Result<std::unique_ptr<Fabric>> make_ucx_fabric(const FabricConfig& cfg) {
  DRTMX_RETURN_IF_ERROR(cfg.validate());
  return unavailable(
      "--fabric=ucx: this drtmx build has no UCX (CMake found no libucx when it was configured); "
      "install it (Debian: apt-get install libucx-dev ucx-utils, or scripts/setup.sh) and "
      "reconfigure and rebuild, or use --fabric=shm on one host");
}

}  // namespace drtmx::r2
