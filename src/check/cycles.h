// Finds and classifies dependency cycles: the strongly connected components
// of the graph, then in each a short cycle of the strongest kind it holds
// (Adya's G0, G1c, G-single, G2-item; with process or real-time edges their
// -process / -realtime variants, reported only for cycles that need such an
// edge).
#pragma once

#include "check/analysis.h"
#include "check/graph.h"

namespace drtmx::check {

struct CycleOptions {
  bool process = false;   // search cycles that need process edges
  bool realtime = false;  // search cycles that need real-time edges
  // Breadth-first steps allowed per phase for the G-single search (a
  // search from each node that rw edges of a component point to, back to
  // any of their sources); past it, components are classified by the first
  // cycle found.
  uint64_t budget = 200'000'000;
};

struct CycleStats {
  uint64_t components = 0;  // non-trivial components over all phases
  bool budget_exhausted = false;
};

// Adds the cycles found to a.anomalies (with explanations).
CycleStats find_cycles(Analysis& a, const Graph& g, const CycleOptions& opt);

}  // namespace drtmx::check
