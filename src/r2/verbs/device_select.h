// Choosing the RDMA device, and the errors a user sees when there is none.
// Device-independent (takes the list of names), so it is unit-tested on
// machines without RDMA hardware. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace drtmx::r2::verbs {

// The Soft-RoCE recipe quoted in every "no device" message.
inline constexpr const char* kSoftRoceRecipe =
    "modprobe rdma_rxe && rdma link add rxe0 type rxe netdev IFACE";

// kUnavailable: no RDMA device. `detail` says what the probe saw.
Status no_device_error(const std::string& detail);

// Index of the device to open among `found`: `wanted` names one ("" = the
// first). No devices -> no_device_error; a name not found -> kNotFound
// listing the devices that exist.
Result<size_t> choose_device(const std::vector<std::string>& found, const std::string& wanted);

}  // namespace drtmx::r2::verbs
