#include "r2/fabric_factory.h"

#include "r2/shm/segment.h"
#include "r2/shm/shm_fabric.h"
#include "r2/ucx/ucx_fabric.h"
#include "r2/verbs/verbs_fabric.h"

namespace drtmx::r2 {

Result<std::unique_ptr<Fabric>> make_fabric(const FabricConfig& cfg) {
  DRTMX_RETURN_IF_ERROR(cfg.validate());
  if (cfg.backend == "verbs") return make_verbs_fabric(cfg);
  if (cfg.backend == "ucx") return make_ucx_fabric(cfg);
  return make_shm_fabric(cfg);
}

SharedNames remove_shared_names(const FabricConfig& cfg) {
  if (cfg.backend != "shm") return {};
  const shm::Removal r = shm::remove_node_segments(cfg.cluster, cfg.node);
  return {r.segments, r.bytes};
}

}  // namespace drtmx::r2
