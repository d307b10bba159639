// Strongly connected components (Tarjan's algorithm, iterative: a history's
// graph has a million nodes and would overflow the stack recursively) of a
// subgraph: given nodes, edges whose type intersects a mask.
#pragma once

#include <span>
#include <vector>

#include "check/graph.h"

namespace drtmx::check {

class SccFinder {
 public:
  explicit SccFinder(const Graph& g);

  // The components with more than one node of the subgraph induced by
  // `nodes`, with the edges whose type has a bit of `mask`.
  std::vector<std::vector<uint32_t>> components(std::span<const uint32_t> nodes, uint8_t mask);

 private:
  const Graph& g_;
  std::vector<uint32_t> index_, low_;
  std::vector<uint32_t> member_;  // == stamp_: in this call's subgraph
  std::vector<uint8_t> on_stack_;
  uint32_t stamp_ = 0;
};

}  // namespace drtmx::check
