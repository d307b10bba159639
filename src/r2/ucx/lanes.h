// What UCX chose for one endpoint, read from ucp_ep_print_info's text (UCX
// 1.13's ucp_ep_query cannot name transports): each lane's transport and
// device and what it is used for, and whether RMA, atomics and active
// messages all travel on one lane (then UCX executes them at the target in
// the order they were issued; see README.md, "Ordering"). Pure functions.
#pragma once

#include <string>
#include <vector>

namespace drtmx::r2::ucx {

struct Lane {
  int index = 0;
  std::string transport;            // "tcp/lo", "cma/memory", "rc_mlx5/mlx5_0:1"
  std::vector<std::string> usages;  // "am", "rma", "rma_bw", "amo", "am_bw", ...
  bool has(const std::string& usage) const;
};

struct LaneInfo {
  std::vector<Lane> lanes;
  // RMA, atomics and active messages all go through one lane (one UCT
  // endpoint, executed in issue order at the target).
  bool single_lane = false;
  // "tcp/lo[am,rma_bw]" for each lane, joined by " + ".
  std::string summary() const;
};

LaneInfo parse_ep_info(const std::string& text);

}  // namespace drtmx::r2::ucx
