#include "check/graph.h"

#include <algorithm>
#include <unordered_map>

namespace drtmx::check {

namespace {

struct Edge {
  uint32_t from;
  uint32_t to;
  uint8_t type;
};

// Calls fn(t, mi, kid) for each read micro-op `mi` of an ok transaction
// `t` that fits its key's (`kid`) order.
template <typename Fn>
void for_each_ordered_read(const Analysis& a, Fn fn) {
  const History& h = *a.h;
  for (uint32_t t = 0; t < h.txns.size(); t++) {
    const Txn& tx = h.txns[t];
    if (tx.outcome != Outcome::kOk) continue;
    for (uint32_t mi = tx.mop_begin; mi < tx.mop_begin + tx.mop_count; mi++) {
      if (a.read_in_order[mi]) fn(t, mi, a.mop_kid[mi]);
    }
  }
}

void data_edges(const Analysis& a, std::vector<Edge>* out) {
  const History& h = *a.h;
  auto writer = [&](uint32_t kid, int64_t v) -> int64_t {
    const AppendRef* r = a.appends.find(kid, v);
    if (r == nullptr || !a.is_node[r->txn]) return -1;
    return r->txn;
  };
  // ww: consecutive appends of committed transactions in each key's order.
  for (uint32_t kid = 0; kid < a.keys.size(); kid++) {
    int64_t prev = -1;
    for (int64_t v : a.order(kid)) {
      int64_t w = writer(kid, v);
      if (w < 0) continue;
      if (prev >= 0 && prev != w) {
        out->push_back({static_cast<uint32_t>(prev), static_cast<uint32_t>(w), kWW});
      }
      prev = w;
    }
  }
  // wr and rw from every read that fits its key's order.
  for_each_ordered_read(a, [&](uint32_t t, uint32_t mi, uint32_t kid) {
    auto order = a.order(kid);
    uint32_t len = h.mops[mi].read_len;
    if (len > 0) {
      int64_t w = writer(kid, order[len - 1]);
      if (w >= 0 && w != t) out->push_back({static_cast<uint32_t>(w), t, kWR});
    }
    if (len < order.size()) {
      int64_t w = writer(kid, order[len]);
      if (w >= 0 && w != t) out->push_back({t, static_cast<uint32_t>(w), kRW});
    }
  });
}

// Edges to the appends nobody read (Analysis::unread_committed). Such a
// value is in its key's final list and in none of the key's reads, which are
// all prefixes of that list: it comes after every value read. So the writer
// of the order's last value precedes its writer (ww), and so does every
// transaction that read the key (rw: its read lacks the value). Unread
// appends to one key have no known order between them: no edges there.
//
// Only the readers of the whole order get the rw edge: a shorter read's
// edge is implied with the same single rw edge (rw to the next value, ww
// along the order to its last writer, then the ww edge above), so it would
// change no cycle's kind, only its length (on the generated million
// transactions it was 2.1 million more edges against 0.2). Bound: per key
// at most kUnreadEdgesPerOp * (readers + unread appenders) rw edges, at
// least one per appender, all appenders from the same readers: those invoked
// latest (a writer that completed before some reader's invoke did so before
// the latest's, so the real-time case is kept).
constexpr uint64_t kUnreadEdgesPerOp = 8;

void unread_edges(const Analysis& a, std::vector<Edge>* out) {
  const History& h = *a.h;
  constexpr uint32_t kNoSlot = UINT32_MAX;
  struct Writer {
    uint32_t slot;
    uint32_t txn;
  };
  struct Reader {
    uint32_t slot;
    uint32_t txn;
    int64_t invoke;
  };
  std::vector<uint32_t> slot_of;  // key id -> slot (keys with unread appends)
  std::vector<uint32_t> kid_of;   // slot -> key id
  if (a.unread_mops.empty()) return;
  std::vector<Writer> writers;
  slot_of.assign(a.keys.size(), kNoSlot);
  for (uint32_t mi : a.unread_mops) {
    uint32_t kid = a.mop_kid[mi];
    if (slot_of[kid] == kNoSlot) {
      slot_of[kid] = static_cast<uint32_t>(kid_of.size());
      kid_of.push_back(kid);
    }
    writers.push_back({slot_of[kid], a.appends.find(kid, h.mops[mi].value)->txn});
  }
  auto same = [](const auto& x, const auto& y) { return x.slot == y.slot && x.txn == y.txn; };
  std::sort(writers.begin(), writers.end(), [](const Writer& x, const Writer& y) {
    return x.slot != y.slot ? x.slot < y.slot : x.txn < y.txn;
  });
  writers.erase(std::unique(writers.begin(), writers.end(), same), writers.end());

  std::vector<Reader> readers;  // of the whole order
  for_each_ordered_read(a, [&](uint32_t t, uint32_t mi, uint32_t kid) {
    if (slot_of[kid] == kNoSlot || h.mops[mi].read_len != a.keys[kid].len) return;
    readers.push_back({slot_of[kid], t, h.txns[t].invoke_time});
  });
  // Per key, latest invoke first; a transaction's repeated reads adjacent.
  std::sort(readers.begin(), readers.end(), [](const Reader& x, const Reader& y) {
    if (x.slot != y.slot) return x.slot < y.slot;
    if (x.invoke != y.invoke) return x.invoke > y.invoke;
    return x.txn < y.txn;
  });
  readers.erase(std::unique(readers.begin(), readers.end(), same), readers.end());

  size_t w = 0, r = 0;
  for (uint32_t slot = 0; slot < kid_of.size(); slot++) {
    uint32_t kid = kid_of[slot];
    size_t w_end = w, r_end = r;
    while (w_end < writers.size() && writers[w_end].slot == slot) w_end++;
    while (r_end < readers.size() && readers[r_end].slot == slot) r_end++;
    uint64_t n_w = w_end - w, n_r = r_end - r;
    uint64_t limit = kUnreadEdgesPerOp * (n_w + n_r);
    uint64_t per_writer = n_w * n_r <= limit ? n_r : std::max<uint64_t>(1, limit / n_w);
    // The order's last value a graph node appended.
    int64_t last = -1;
    auto order = a.order(kid);
    for (size_t p = order.size(); p-- > 0 && last < 0;) {
      const AppendRef* ref = a.appends.find(kid, order[p]);
      if (ref != nullptr && a.is_node[ref->txn]) last = ref->txn;
    }
    for (; w < w_end; w++) {
      uint32_t wt = writers[w].txn;
      if (last >= 0 && last != wt) out->push_back({static_cast<uint32_t>(last), wt, kWW});
      uint64_t taken = 0;
      for (size_t i = r; i < r_end && taken < per_writer; i++) {
        if (readers[i].txn == wt) continue;
        out->push_back({readers[i].txn, wt, kRW});
        taken++;
      }
    }
    r = r_end;
  }
}

void process_edges(const Analysis& a, std::vector<Edge>* out) {
  std::unordered_map<int64_t, uint32_t> last;
  for (uint32_t t = 0; t < a.h->txns.size(); t++) {
    if (!a.is_node[t]) continue;
    auto [it, fresh] = last.try_emplace(a.h->txns[t].process, t);
    if (!fresh) {
      out->push_back({it->second, t, kProcess});
      it->second = t;
    }
  }
}

void realtime_edges(const Analysis& a, std::vector<Edge>* out) {
  const History& h = *a.h;
  // Events by time; at equal times invokes first (no edge between
  // operations that touch).
  struct Event {
    int64_t time;
    uint32_t txn;
    bool completion;
  };
  std::vector<Event> ev;
  for (uint32_t t = 0; t < h.txns.size(); t++) {
    if (!a.is_node[t]) continue;
    ev.push_back({h.txns[t].invoke_time, t, false});
    // Only ok transactions have a known completion; an info one may take
    // effect any time after its invoke.
    if (h.txns[t].outcome == Outcome::kOk) ev.push_back({h.txns[t].complete_time, t, true});
  }
  std::sort(ev.begin(), ev.end(), [](const Event& x, const Event& y) {
    return x.time != y.time ? x.time < y.time : (!x.completion && y.completion);
  });
  constexpr uint32_t kOut = UINT32_MAX;
  std::vector<uint32_t> frontier;
  std::vector<uint32_t> slot(h.txns.size(), kOut);  // position in frontier
  // Each transaction's predecessors at its invoke: out->[pred_begin, pred_end).
  std::vector<uint64_t> pred_begin(h.txns.size(), 0), pred_end(h.txns.size(), 0);
  for (const Event& e : ev) {
    if (!e.completion) {
      pred_begin[e.txn] = out->size();
      for (uint32_t f : frontier) out->push_back({f, e.txn, kRealtime});
      pred_end[e.txn] = out->size();
      continue;
    }
    // The completed transaction follows its predecessors: they leave the
    // frontier (reachable through it), it joins.
    for (uint64_t i = pred_begin[e.txn]; i < pred_end[e.txn]; i++) {
      uint32_t p = (*out)[i].from;
      if (slot[p] == kOut) continue;
      uint32_t last = frontier.back();
      frontier[slot[p]] = last;
      slot[last] = slot[p];
      frontier.pop_back();
      slot[p] = kOut;
    }
    slot[e.txn] = static_cast<uint32_t>(frontier.size());
    frontier.push_back(e.txn);
  }
}

}  // namespace

Graph build_graph(const Analysis& a, GraphOptions opt) {
  std::vector<Edge> edges;
  data_edges(a, &edges);
  unread_edges(a, &edges);
  if (opt.process) process_edges(a, &edges);
  if (opt.realtime) realtime_edges(a, &edges);
  Graph g;
  g.n = static_cast<uint32_t>(a.h->txns.size());
  // Counting sort by source, then merge parallel edges per source.
  std::vector<uint64_t> start(g.n + 1, 0);
  for (const Edge& e : edges) start[e.from + 1]++;
  for (uint32_t i = 0; i < g.n; i++) start[i + 1] += start[i];
  std::vector<uint64_t> fill(start.begin(), start.end() - 1);
  std::vector<std::pair<uint32_t, uint8_t>> sorted(edges.size());
  for (const Edge& e : edges) sorted[fill[e.from]++] = {e.to, e.type};
  std::vector<Edge>().swap(edges);
  g.begin.assign(g.n + 1, 0);
  g.dst.reserve(sorted.size());
  g.type.reserve(sorted.size());
  for (uint32_t u = 0; u < g.n; u++) {
    auto b = sorted.begin() + static_cast<int64_t>(start[u]);
    auto e = sorted.begin() + static_cast<int64_t>(start[u + 1]);
    std::sort(b, e);
    for (auto it = b; it != e; ++it) {
      if (!g.dst.empty() && g.dst.size() > g.begin[u] && g.dst.back() == it->first) {
        g.type.back() |= it->second;
      } else {
        g.dst.push_back(it->first);
        g.type.push_back(it->second);
      }
    }
    g.begin[u + 1] = g.dst.size();
  }
  return g;
}

}  // namespace drtmx::check
