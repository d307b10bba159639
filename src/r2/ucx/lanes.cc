#include "r2/ucx/lanes.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace drtmx::r2::ucx {

bool Lane::has(const std::string& usage) const {
  return std::find(usages.begin(), usages.end(), usage) != usages.end();
}

std::string LaneInfo::summary() const {
  std::string s;
  for (const Lane& l : lanes) {
    if (!s.empty()) s += " + ";
    s += l.transport + "[";
    for (size_t i = 0; i < l.usages.size(); ++i) s += (i ? "," : "") + l.usages[i];
    s += "]";
  }
  return s.empty() ? "unknown" : s;
}

// A lane line looks like (after the comment marks UCX prints)
//   #   lane[1]:  5:cma/memory.0 md[4]   -> md[4]/cma/sysdev[255] rma_bw#0
// (resource index:transport/device, local md, "->", remote md, usages,
// each usage optionally with "#<index>").
LaneInfo parse_ep_info(const std::string& text) {
  LaneInfo info;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t text = line.find_first_not_of("# \t");  // lines are comments ("#   lane[0]: ...")
    if (text == std::string::npos) continue;
    std::istringstream is(line.substr(text));
    std::string first;
    if (!(is >> first) || first.rfind("lane[", 0) != 0) continue;
    Lane lane;
    lane.index = std::atoi(first.c_str() + 5);
    std::string rsc;
    if (!(is >> rsc)) continue;
    const size_t colon = rsc.find(':');
    lane.transport = colon == std::string::npos ? rsc : rsc.substr(colon + 1);
    std::string tok;
    bool after_arrow = false, skipped_remote = false;
    while (is >> tok) {
      if (tok == "->") {
        after_arrow = true;
        continue;
      }
      if (!after_arrow) continue;
      if (!skipped_remote) {
        skipped_remote = true;
        continue;
      }
      const size_t hash = tok.find('#');
      std::string usage = hash == std::string::npos ? tok : tok.substr(0, hash);
      if (!usage.empty() && !lane.has(usage)) lane.usages.push_back(usage);
    }
    info.lanes.push_back(std::move(lane));
  }
  // RMA and atomics without a lane of their own are emulated with active
  // messages on the am lane.
  std::set<int> used;
  for (const Lane& l : info.lanes) {
    if (l.has("am") || l.has("rma") || l.has("rma_bw") || l.has("amo")) used.insert(l.index);
  }
  info.single_lane = used.size() == 1;
  return info;
}

}  // namespace drtmx::r2::ucx
