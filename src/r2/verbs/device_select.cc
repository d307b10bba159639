#include "r2/verbs/device_select.h"

namespace drtmx::r2::verbs {

Status no_device_error(const std::string& detail) {
  return unavailable(
      "--fabric=verbs: no RDMA device found (" + detail +
      "). Run with --fabric=shm to use the shared-memory fabric on this host, or create a "
      "Soft-RoCE (rxe) device on an Ethernet interface IFACE: `" +
      std::string(kSoftRoceRecipe) + "`, then run with --fabric=verbs --device=rxe0");
}

Result<size_t> choose_device(const std::vector<std::string>& found, const std::string& wanted) {
  if (found.empty()) {
    return no_device_error(wanted.empty() ? "ibv_get_device_list returned no devices"
                                          : "--device=" + wanted +
                                                " requested, but "
                                                "ibv_get_device_list returned no devices");
  }
  if (wanted.empty()) return size_t{0};
  std::string names;
  for (size_t i = 0; i < found.size(); ++i) {
    if (found[i] == wanted) return i;
    names += (i ? ", " : "") + found[i];
  }
  return not_found("--device=" + wanted + ": no such RDMA device; devices found: " + names +
                   " (omit --device to use the first one)");
}

}  // namespace drtmx::r2::verbs
