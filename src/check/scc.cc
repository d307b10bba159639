#include "check/scc.h"

#include <algorithm>

namespace drtmx::check {

namespace {
constexpr uint32_t kUnvisited = UINT32_MAX;
}

SccFinder::SccFinder(const Graph& g)
    : g_(g), index_(g.n, kUnvisited), low_(g.n, 0), member_(g.n, 0), on_stack_(g.n, 0) {}

std::vector<std::vector<uint32_t>> SccFinder::components(std::span<const uint32_t> nodes,
                                                         uint8_t mask) {
  stamp_++;
  for (uint32_t v : nodes) {
    member_[v] = stamp_;
    index_[v] = kUnvisited;
  }
  std::vector<std::vector<uint32_t>> out;
  std::vector<uint32_t> stack;  // Tarjan's stack of visited, unassigned nodes
  struct Frame {
    uint32_t node;
    uint64_t next;  // next edge to look at
  };
  std::vector<Frame> call;
  uint32_t counter = 0;
  for (uint32_t root : nodes) {
    if (index_[root] != kUnvisited) continue;
    call.push_back({root, g_.begin[root]});
    index_[root] = low_[root] = counter++;
    stack.push_back(root);
    on_stack_[root] = 1;
    while (!call.empty()) {
      Frame& f = call.back();
      uint32_t u = f.node;
      bool descended = false;
      while (f.next < g_.begin[u + 1]) {
        uint64_t e = f.next++;
        if ((g_.type[e] & mask) == 0) continue;
        uint32_t v = g_.dst[e];
        if (member_[v] != stamp_) continue;
        if (index_[v] == kUnvisited) {
          index_[v] = low_[v] = counter++;
          stack.push_back(v);
          on_stack_[v] = 1;
          call.push_back({v, g_.begin[v]});
          descended = true;
          break;
        }
        if (on_stack_[v]) low_[u] = std::min(low_[u], index_[v]);
      }
      if (descended) continue;
      // u is finished.
      if (low_[u] == index_[u]) {
        std::vector<uint32_t> comp;
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack_[w] = 0;
          comp.push_back(w);
        } while (w != u);
        if (comp.size() > 1) {
          std::sort(comp.begin(), comp.end());
          out.push_back(std::move(comp));
        }
      }
      call.pop_back();
      if (!call.empty()) {
        uint32_t parent = call.back().node;
        low_[parent] = std::min(low_[parent], low_[u]);
      }
    }
  }
  return out;
}

}  // namespace drtmx::check
