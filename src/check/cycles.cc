#include "check/cycles.h"

#include <algorithm>

#include "check/explain.h"
#include "check/scc.h"

namespace drtmx::check {

namespace {

// A step's label among an edge's types: the weakest dependency first, so
// that a cycle counts as few rw edges as the edges allow.
uint8_t best_label(uint8_t t) {
  for (uint8_t b : {kWW, kWR, kProcess, kRealtime, kRW}) {
    if (t & b) return b;
  }
  return 0;
}

// An edge that is an `extra` edge (process, real-time) and no data edge: a
// cycle through it needs the extra order.
bool only_extra(uint8_t t, uint8_t extra) {
  return (t & extra) != 0 && (t & kDataEdges) == 0;
}

class CycleFinder {
 public:
  CycleFinder(Analysis& a, const Graph& g, const CycleOptions& opt)
      : a_(a),
        g_(g),
        opt_(opt),
        scc_(g),
        seen_(2 * uint64_t{g.n}, 0),
        parent_(2 * uint64_t{g.n}, 0),
        label_(2 * uint64_t{g.n}, 0),
        member_(g.n, 0),
        target_(g.n, 0) {}

  CycleStats run();

 private:
  void phase(uint8_t extra, std::span<const uint32_t> nodes);
  bool classify_component(const std::vector<uint32_t>& comp, uint8_t extra);
  bool cycle_in_subgraph(const std::vector<uint32_t>& comp, uint8_t allowed, uint8_t extra);
  bool g_single(const std::vector<uint32_t>& comp, uint8_t extra);
  bool any_cycle(const std::vector<uint32_t>& comp, uint8_t extra);
  // Shortest path from -> to among nodes marked with member stamp `ms`,
  // over edges with a type in `allowed`, using at least one `need` edge
  // when need != 0. Appends its steps to *out. With to == kAnyTarget: to
  // the nearest node whose target_ is target_stamp_, stored in *reached.
  static constexpr uint32_t kAnyTarget = UINT32_MAX;
  bool path(uint32_t from, uint32_t to, uint8_t allowed, uint8_t need, uint32_t ms,
            std::vector<Step>* out, bool budgeted, uint32_t* reached = nullptr);
  uint32_t mark(const std::vector<uint32_t>& nodes);
  void report(std::vector<Step> steps, uint8_t extra);

  Analysis& a_;
  const Graph& g_;
  CycleOptions opt_;
  SccFinder scc_;
  std::vector<uint32_t> seen_;                     // per (node, flag) state: == bfs_stamp_
  std::vector<uint64_t> parent_;                   // previous state
  std::vector<uint8_t> label_;                     // the step's edge type into the state
  std::vector<uint32_t> member_;                   // == a mark() stamp
  std::vector<uint32_t> target_;                   // == target_stamp_: a goal of path(kAnyTarget)
  std::vector<std::pair<uint32_t, uint32_t>> rw_;  // g_single: (head, tail)
  uint32_t bfs_stamp_ = 0, member_stamp_ = 0, target_stamp_ = 0;
  uint64_t budget_left_ = 0;
  CycleStats stats_;
};

uint32_t CycleFinder::mark(const std::vector<uint32_t>& nodes) {
  member_stamp_++;
  for (uint32_t v : nodes) member_[v] = member_stamp_;
  return member_stamp_;
}

bool CycleFinder::path(uint32_t from, uint32_t to, uint8_t allowed, uint8_t need, uint32_t ms,
                       std::vector<Step>* out, bool budgeted, uint32_t* reached) {
  bfs_stamp_++;
  std::vector<uint64_t> frontier{uint64_t{from} * 2}, next;
  seen_[uint64_t{from} * 2] = bfs_stamp_;
  uint64_t goal_flag = need != 0 ? 1 : 0;
  bool any = to == kAnyTarget;
  uint64_t goal = any ? UINT64_MAX : uint64_t{to} * 2 + goal_flag;
  bool found = (from == to && need == 0);
  while (!found && !frontier.empty()) {
    next.clear();
    for (uint64_t s : frontier) {
      uint32_t u = static_cast<uint32_t>(s / 2);
      uint64_t flag = s & 1;
      for (uint64_t e = g_.begin[u]; e < g_.begin[u + 1]; e++) {
        uint8_t t = g_.type[e] & allowed;
        uint32_t v = g_.dst[e];
        if (t == 0 || member_[v] != ms) continue;
        if (budgeted) {
          if (budget_left_ == 0) return false;
          budget_left_--;
        }
        // Only an edge that is nothing but a `need` edge here makes the path
        // need one (an edge that is also ww, say, would close the cycle
        // without it).
        bool pure = (t & need) != 0 && (t & kDataEdges) == 0;
        uint64_t nflag = flag | (pure ? 1 : 0);
        uint8_t lab = best_label(t);
        uint64_t ns = uint64_t{v} * 2 + nflag;
        if (seen_[ns] == bfs_stamp_) continue;
        seen_[ns] = bfs_stamp_;
        parent_[ns] = s;
        label_[ns] = lab;
        if (ns == goal || (any && nflag == goal_flag && target_[v] == target_stamp_)) {
          goal = ns;
          found = true;
          break;
        }
        next.push_back(ns);
      }
      if (found) break;
    }
    frontier.swap(next);
  }
  if (!found) return false;
  if (reached != nullptr) *reached = static_cast<uint32_t>(goal / 2);
  std::vector<Step> rev;
  for (uint64_t s = goal; s != uint64_t{from} * 2;) {
    uint64_t p = parent_[s];
    rev.push_back({static_cast<uint32_t>(p / 2), static_cast<uint32_t>(s / 2), label_[s]});
    s = p;
  }
  out->insert(out->end(), rev.rbegin(), rev.rend());
  return true;
}

void CycleFinder::report(std::vector<Step> steps, uint8_t extra) {
  int rw = 0, wr = 0;
  bool proc = false, rt = false;
  for (const Step& s : steps) {
    rw += s.type == kRW;
    wr += s.type == kWR;
    proc |= s.type == kProcess;
    rt |= s.type == kRealtime;
  }
  Anomaly an;
  an.type = rw >= 2 ? "G2-item" : rw == 1 ? "G-single" : wr > 0 ? "G1c" : "G0";
  if (rt) {
    an.type += "-realtime";
  } else if (proc) {
    an.type += "-process";
  }
  for (const Step& s : steps) an.txns.push_back(s.from);
  an.steps = std::move(steps);
  if (a_.anomalies.wants(an.type)) an.explanation = explain_cycle(a_, an);
  a_.anomalies.add(std::move(an));
}

// A cycle among `comp`'s nodes over `allowed` edges (through an `extra`
// edge when extra != 0): the components of that subgraph, then the shortest
// way back over one of their edges.
bool CycleFinder::cycle_in_subgraph(const std::vector<uint32_t>& comp, uint8_t allowed,
                                    uint8_t extra) {
  for (const auto& sub : scc_.components(comp, allowed)) {
    uint32_t ms = mark(sub);
    for (uint32_t u : sub) {
      for (uint64_t e = g_.begin[u]; e < g_.begin[u + 1]; e++) {
        uint8_t t = g_.type[e] & allowed;
        uint32_t v = g_.dst[e];
        if (t == 0 || member_[v] != ms || (extra != 0 && !only_extra(t, extra))) continue;
        std::vector<Step> steps{{u, v, best_label(t)}};
        if (path(v, u, allowed, 0, ms, &steps, false)) {
          report(std::move(steps), extra);
          return true;
        }
      }
    }
  }
  return false;
}

bool CycleFinder::g_single(const std::vector<uint32_t>& comp, uint8_t extra) {
  uint32_t ms = mark(comp);
  uint8_t allowed = kWW | kWR | extra;
  // The rw edges inside, by head: one search from a head serves every rw
  // edge into it (many readers miss the same append).
  rw_.clear();
  for (uint32_t u : comp) {
    for (uint64_t e = g_.begin[u]; e < g_.begin[u + 1]; e++) {
      if ((g_.type[e] & kRW) != 0 && member_[g_.dst[e]] == ms) rw_.push_back({g_.dst[e], u});
    }
  }
  std::sort(rw_.begin(), rw_.end());
  for (size_t i = 0, j = 0; i < rw_.size(); i = j) {
    uint32_t v = rw_[i].first;
    target_stamp_++;
    for (j = i; j < rw_.size() && rw_[j].first == v; j++) target_[rw_[j].second] = target_stamp_;
    std::vector<Step> steps;
    uint32_t u = 0;
    if (path(v, kAnyTarget, allowed, extra, ms, &steps, true, &u)) {
      steps.insert(steps.begin(), Step{u, v, kRW});
      report(std::move(steps), extra);
      return true;
    }
    if (budget_left_ == 0) {
      stats_.budget_exhausted = true;
      return false;
    }
  }
  return false;
}

bool CycleFinder::any_cycle(const std::vector<uint32_t>& comp, uint8_t extra) {
  uint32_t ms = mark(comp);
  uint8_t allowed = kDataEdges | extra;
  for (uint32_t u : comp) {
    for (uint64_t e = g_.begin[u]; e < g_.begin[u + 1]; e++) {
      uint8_t t = g_.type[e] & allowed;
      uint32_t v = g_.dst[e];
      if (t == 0 || member_[v] != ms || (extra != 0 && (t & extra) == 0)) continue;
      std::vector<Step> steps{{u, v, extra != 0 ? best_label(t & extra) : best_label(t)}};
      if (path(v, u, allowed, 0, ms, &steps, false)) {
        report(std::move(steps), extra);
        return true;
      }
    }
  }
  return false;
}

// The strongest anomaly a component holds: G0, else G1c, else G-single,
// else G2-item (with `extra`: only cycles through an extra edge).
bool CycleFinder::classify_component(const std::vector<uint32_t>& comp, uint8_t extra) {
  if (cycle_in_subgraph(comp, kWW | extra, extra)) return true;
  if (cycle_in_subgraph(comp, kWW | kWR | extra, extra)) return true;
  if (g_single(comp, extra)) return true;
  return any_cycle(comp, extra);
}

void CycleFinder::phase(uint8_t extra, std::span<const uint32_t> nodes) {
  budget_left_ = opt_.budget;
  for (const auto& comp : scc_.components(nodes, kDataEdges | extra)) {
    stats_.components++;
    if (extra != 0) {
      // Only components with an extra edge inside have cycles the data
      // phase did not report.
      uint32_t ms = mark(comp);
      bool has_extra = false;
      for (uint32_t u : comp) {
        for (uint64_t e = g_.begin[u]; e < g_.begin[u + 1] && !has_extra; e++) {
          has_extra = only_extra(g_.type[e], extra) && member_[g_.dst[e]] == ms;
        }
        if (has_extra) break;
      }
      if (!has_extra) continue;
    }
    classify_component(comp, extra);
  }
}

CycleStats CycleFinder::run() {
  std::vector<uint32_t> nodes;
  for (uint32_t t = 0; t < g_.n; t++) {
    if (a_.is_node[t]) nodes.push_back(t);
  }
  phase(0, nodes);
  if (opt_.process) phase(kProcess, nodes);
  if (opt_.realtime) phase(kRealtime, nodes);
  return stats_;
}

}  // namespace

CycleStats find_cycles(Analysis& a, const Graph& g, const CycleOptions& opt) {
  return CycleFinder(a, g, opt).run();
}

}  // namespace drtmx::check
