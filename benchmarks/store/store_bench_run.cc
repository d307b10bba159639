// store-bench: the local cluster (nodes as thread groups of this process),
// one node's run — load, then per access path a warm-up and a measured
// window — and the report.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/histogram.h"
#include "json_writer.h"
#include "r2/common/clock.h"
#include "r2/control/control.h"
#include "r2/node_runtime.h"
#include "r2/shm/shm_fabric.h"
#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "store/tables/table_client.h"
#include "store_bench.h"

namespace drtmx::bench {
namespace {

using store::Catalog;
using store::TableSpec;
using store::tables::TableClient;

constexpr store::TableId kTable = 1;

// The value stored under a key: its first word identifies the key (checked
// by every GET), the rest is filler.
void fill_value(uint64_t key, uint8_t* v, uint32_t size) {
  std::memset(v, static_cast<int>(key & 0xFF), size);
  const uint64_t tag = key ^ 0x5DEECE66DULL;
  std::memcpy(v, &tag, std::min<uint32_t>(8, size));
}
bool value_ok(uint64_t key, const uint8_t* v, uint32_t size) {
  uint8_t want[8];
  fill_value(key, want, std::min<uint32_t>(8, size));
  return std::memcmp(v, want, std::min<uint32_t>(8, size)) == 0;
}

// Per worker thread and path: written by the thread's coroutines, read by
// the node's main thread (ops) or after the run (the rest).
struct alignas(64) PathCounters {
  std::atomic<uint64_t> ops{0};
  LatencyHistogram hist;
  store::tables::TableClientStats client;
  store::xstore::XClientStats xstore;
  uint64_t errors = 0;
};

struct NodeShared {
  std::atomic<int> phase{-1};  // index into paths while running, -1 paused
  std::atomic<bool> measuring{false};
  std::atomic<bool> stop{false};
  std::atomic<bool> warmed{false};  // the location cache holds the table (hash)
  std::mutex mu;
  Status error;  // first fatal error of a coroutine
  void fail(const Status& s) {
    std::lock_guard<std::mutex> g(mu);
    if (error.is_ok()) error = s;
    stop.store(true);
  }
};

struct NodeOutcome {
  std::vector<uint64_t> ops;         // per path, measured window
  std::vector<uint64_t> window_ns;   // per path
  std::vector<PathCounters> totals;  // per path (ops unused)
  Status status;
};

Result<Catalog> make_catalog(const StoreBenchOptions& o) {
  TableSpec t;
  t.id = kTable;
  t.name = "usertable";
  t.value_size = o.value_size;
  const uint32_t parts = o.fabric.num_nodes;
  t.partitions = parts;
  const bool inserts = o.mix.insert > 0;
  const uint64_t per = (o.keys + parts - 1) / parts;
  t.capacity = per + per / 4 + 1024 + (inserts ? std::max<uint64_t>(per, 2'000'000 / parts) : 0);
  if (o.table == "hash") {
    t.kind = store::TableKind::kHash;
    t.scheme = store::PartitionScheme::kHashMod;
  } else {
    t.kind = store::TableKind::kOrdered;
    t.inline_values = true;
    t.scheme = store::PartitionScheme::kRange;
    for (uint32_t p = 1; p < parts; ++p) {
      t.range_bounds.push_back(static_cast<uint64_t>((static_cast<__uint128_t>(p) << 64) / parts));
    }
  }
  return Catalog::create({t}, o.fabric.num_nodes, 1);
}

void coroutine_loop(const StoreBenchOptions& o, const Catalog& cat, r2::Co& co,
                    std::vector<std::unique_ptr<TableClient>>& clients, NodeShared& sh,
                    std::vector<PathCounters>& counters, uint32_t gen_index, uint32_t gen_count) {
  const TableSpec& t = *cat.find(kTable);
  const size_t paths = o.paths.size();
  std::vector<std::unique_ptr<YcsbGenerator>> gens;
  for (size_t p = 0; p < paths; ++p) {
    gens.push_back(std::make_unique<YcsbGenerator>(
        o.mix, o.dist, o.theta, o.keys, static_cast<uint32_t>(p * gen_count + gen_index),
        static_cast<uint32_t>(paths * gen_count), 0xC0FFEEull * (gen_index + 1) + p));
  }
  std::vector<uint8_t> value(o.value_size), put(o.value_size);
  std::vector<uint64_t> keys;
  std::vector<uint8_t> vals;
  int seen_phase = -1;
  bool seen_measuring = false;
  auto fatal = [&](const Status& s, const char* what) {
    sh.fail(s.with_context(std::string(what) + " on node " + std::to_string(co.node())));
  };
  for (uint64_t iter = 0; !sh.stop.load(std::memory_order_relaxed); ++iter) {
    const int ph = sh.phase.load(std::memory_order_acquire);
    const bool measuring = sh.measuring.load(std::memory_order_acquire);
    if (seen_phase >= 0 && (ph != seen_phase || (seen_measuring && !measuring))) {
      // Leaving a measured window: hand this client's counters in.
      if (seen_measuring) {
        PathCounters& pc = counters[seen_phase];
        pc.client.add(clients[seen_phase]->stats());
        pc.xstore.add(clients[seen_phase]->xstats());
      }
      seen_measuring = false;
    }
    if (ph < 0) {
      seen_phase = -1;
      co.yield_idle();
      continue;
    }
    if (ph != seen_phase || (measuring && !seen_measuring)) {
      clients[ph]->reset_stats();
      seen_phase = ph;
      seen_measuring = measuring;
    }
    TableClient& c = *clients[ph];
    PathCounters& pc = counters[ph];
    const YcsbGenerator::Op op = gens[ph]->next();
    const uint64_t t0 = measuring ? r2::now_ns() : 0;
    Status st;
    switch (op.op) {
      case YcsbOp::kRead:
      case YcsbOp::kReadModifyWrite: {
        Result<bool> r = c.get(co, t, op.key, value);
        if (!r.is_ok()) return fatal(r.status(), "GET");
        if (*r && !value_ok(op.key, value.data(), o.value_size)) {
          return fatal(internal_error("GET of key " + std::to_string(op.key) +
                                      " returned another key's value"),
                       "GET");
        }
        if (op.op == YcsbOp::kReadModifyWrite) {
          fill_value(op.key, put.data(), o.value_size);
          st = c.update(co, t, op.key, put);
        }
        break;
      }
      case YcsbOp::kUpdate:
        fill_value(op.key, put.data(), o.value_size);
        st = c.update(co, t, op.key, put);
        break;
      case YcsbOp::kInsert:
        fill_value(op.key, put.data(), o.value_size);
        st = c.insert(co, t, op.key, put);
        break;
      case YcsbOp::kScan:
        st = c.scan(co, t, op.key, op.scan_length, keys, vals);
        for (size_t i = 0; st.is_ok() && i < keys.size(); ++i) {
          if (!value_ok(keys[i], vals.data() + i * o.value_size, o.value_size)) {
            st = internal_error("SCAN returned a wrong value for key " + std::to_string(keys[i]));
          }
          if (i > 0 && keys[i] <= keys[i - 1]) st = internal_error("SCAN keys not ascending");
        }
        break;
    }
    if (!st.is_ok()) {
      if (st.code() == Code::kAlreadyExists || st.code() == Code::kNotFound) {
        ++pc.errors;
      } else {
        return fatal(st, "operation");
      }
    }
    if (measuring) {
      pc.hist.record(r2::now_ns() - t0);
      pc.ops.store(pc.ops.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
  }
  if (seen_phase >= 0 && seen_measuring) {
    counters[seen_phase].client.add(clients[seen_phase]->stats());
    counters[seen_phase].xstore.add(clients[seen_phase]->xstats());
  }
}

void maintenance_loop(const Catalog& cat, r2::Co& co, TableClient& client, NodeShared& sh) {
  const TableSpec& t = *cat.find(kTable);
  Status st = client.warm(co, t);
  if (!st.is_ok()) return sh.fail(st.with_context("maintenance warm-up"));
  uint64_t last = r2::now_ns();
  for (uint64_t turn = 1; !sh.stop.load(std::memory_order_relaxed); ++turn) {
    // The clock only every 64th turn: this coroutine runs between every two
    // operations of the clients, and a clock read per turn was a tenth of a
    // one-sided GET's cost (perf: __vdso_clock_gettime).
    if (turn % 64 != 0) {
      co.yield_idle();
      continue;
    }
    const uint64_t now = r2::now_ns();
    if (now - last < 20'000'000) {  // every 20 ms
      co.yield_idle();
      continue;
    }
    last = now;
    st = client.maintain(co);
    if (!st.is_ok()) return sh.fail(st.with_context("maintenance"));
  }
}

void sleep_while_running(double seconds, const NodeShared& sh) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  while (!sh.stop.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

NodeOutcome run_node(const StoreBenchOptions& o, uint16_t node, const std::string& coordinator) {
  NodeOutcome out;
  auto fail = [&](Status s) {
    out.status = s.with_context("node " + std::to_string(node));
    return std::move(out);
  };
  Result<Catalog> cat = make_catalog(o);
  if (!cat.is_ok()) return fail(cat.status());
  const TableSpec& t = *cat->find(kTable);
  const uint16_t threads = o.fabric.threads;
  const uint16_t cos = o.coroutines;
  const bool ordered = t.kind == store::TableKind::kOrdered;
  const store::tables::ScratchPlan scratch{threads, static_cast<uint16_t>(cos + 1),
                                           store::tables::scratch_per_coroutine(*cat)};
  r2::NodeRuntimeConfig cfg;
  cfg.fabric = o.fabric;
  cfg.fabric.node = node;
  cfg.control.coordinator = coordinator;
  cfg.control.join_timeout = std::chrono::milliseconds(o.join_timeout_ms);
  cfg.control.fingerprint = {{"table", o.table}, {"keys", std::to_string(o.keys)}};
  cfg.worker.coroutines = static_cast<uint16_t>(cos + 1);
  cfg.regions = store::tables::regions_of(scratch);
  cfg.growable_regions = store::tables::growable_regions_of(*cat, node);
  auto rt = r2::NodeRuntime::start(cfg);
  if (!rt.is_ok()) return fail(rt.status());
  Result<std::unique_ptr<store::tables::StoreNode>> sn =
      store::tables::StoreNode::create(*cat, (*rt)->fabric());
  if (!sn.is_ok()) return fail(sn.status());
  // Load: every node puts the keys of the partitions it hosts, in key
  // order (a bulk loader's order: ordered tables get their leaves laid out
  // in key order, as a sorted load leaves them).
  {
    std::vector<uint64_t> mine;
    for (uint64_t i = 0; i < o.keys; ++i) {
      const uint64_t key = ycsb_key(i);
      if (cat->hosts(node, t, cat->partition_of(t, key))) mine.push_back(key);
    }
    std::sort(mine.begin(), mine.end());
    std::vector<uint8_t> v(o.value_size);
    for (uint64_t key : mine) {
      fill_value(key, v.data(), o.value_size);
      Status st = (*sn)->load(t, key, v);
      if (!st.is_ok()) return fail(st.with_context("loading key " + std::to_string(key)));
    }
  }
  store::tables::NodeCacheOptions nco;
  nco.threads = threads;
  nco.xcache.train_keys_per_model = o.keys_per_model;
  // Expansion doubles the sub-models once they hold twice the trained load.
  nco.xcache.expand_keys_per_model = std::max<uint32_t>(200, 2 * o.keys_per_model);
  if (o.cache_mb > 0) nco.location.budget_bytes = size_t(o.cache_mb) << 20;
  if (o.cache_mb < 0) {
    nco.location.budget_bytes =
        std::max<size_t>(64u << 20, size_t(o.keys * 2) * store::hash::LocationCache::kEntryBytes);
  }
  auto caches = store::tables::NodeCaches::create(*cat, nco);
  if (!caches.is_ok()) return fail(caches.status());
  Status st = (*rt)->control().barrier("storebench.loaded");
  if (!st.is_ok()) return fail(st);

  const size_t paths = o.paths.size();
  NodeShared sh;
  std::vector<std::vector<PathCounters>> counters(threads);
  for (auto& c : counters) c = std::vector<PathCounters>(paths);
  std::vector<std::vector<std::unique_ptr<TableClient>>> clients(size_t{threads} * cos);
  std::vector<std::unique_ptr<TableClient>> maint(threads);
  const r2::Region* sreg = (*rt)->fabric().region(store::tables::kScratchRegion);
  for (uint16_t th = 0; th < threads; ++th) {
    for (uint16_t c = 0; c <= cos; ++c) {
      std::span<uint8_t> s(sreg->base + scratch.offset(th, c), scratch.per_coroutine);
      if (c == cos) {
        maint[th] = std::make_unique<TableClient>(*cat, **caches, s);
        continue;
      }
      for (size_t p = 0; p < paths; ++p) {
        store::tables::TableClientOptions to;
        to.path = o.paths[p] == "rpc" ? store::tables::Path::kRpc : store::tables::Path::kOneSided;
        to.hash.use_cache = o.cache_mb != 0;
        clients[size_t{th} * cos + c].push_back(
            std::make_unique<TableClient>(*cat, **caches, s, to));
      }
    }
  }
  const uint32_t gen_count = uint32_t{o.fabric.num_nodes} * threads * cos;
  const bool warm_location = !ordered && o.cache_mb != 0;
  (*rt)->launch([&](r2::Worker& w) {
    Status s = (*sn)->register_handlers(w);
    const uint16_t th = w.thread();
    for (uint16_t c = 0; c < cos && s.is_ok(); ++c) {
      const uint32_t gi = (uint32_t{node} * threads + th) * cos + c;
      s = w.spawn([&, th, c, gi](r2::Co& co) {
        coroutine_loop(o, *cat, co, clients[size_t{th} * cos + c], sh, counters[th], gi, gen_count);
      });
    }
    if (s.is_ok() && ordered) {
      s = w.spawn([&, th](r2::Co& co) { maintenance_loop(*cat, co, *maint[th], sh); });
    }
    if (s.is_ok() && warm_location && th == 0) {
      // The node's location cache is shared by its threads: one fill.
      s = w.spawn([&](r2::Co& co) {
        Status ws = maint[0]->warm(co, t);
        if (!ws.is_ok()) sh.fail(ws.with_context("location cache warm-up"));
        sh.warmed.store(true, std::memory_order_release);
      });
    }
    if (!s.is_ok()) sh.fail(s);
  });
  // Hash: every key's location is in the cache (as far as it has room)
  // before the first warm-up window, on every node (the start barrier): the
  // windows see the cache's steady state whatever the GET rate. Left to
  // fill at misses, they paid a bucket walk for the first GET of every key
  // the warm-up had not met (docs/design-notes.md, "Store").
  while (warm_location && !sh.warmed.load(std::memory_order_acquire) && !sh.stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  auto sum_ops = [&](size_t p) {
    uint64_t n = 0;
    for (auto& tc : counters) n += tc[p].ops.load(std::memory_order_relaxed);
    return n;
  };
  out.ops.assign(paths, 0);
  out.window_ns.assign(paths, 0);
  for (size_t p = 0; p < paths && st.is_ok(); ++p) {
    st = (*rt)->control().barrier("storebench.start." + std::to_string(p));
    if (!st.is_ok()) break;
    sh.phase.store(static_cast<int>(p), std::memory_order_release);
    sleep_while_running(o.warmup, sh);
    const uint64_t ops0 = sum_ops(p), t0 = r2::now_ns();
    sh.measuring.store(true, std::memory_order_release);
    sleep_while_running(o.seconds, sh);
    sh.measuring.store(false, std::memory_order_release);
    out.ops[p] = sum_ops(p) - ops0;
    out.window_ns[p] = r2::now_ns() - t0;
    sh.phase.store(-1, std::memory_order_release);
    if (sh.stop.load()) break;
    st = (*rt)->control().barrier("storebench.end." + std::to_string(p));
  }
  sh.stop.store(true);
  if (!(*rt)->wait_coroutines(std::chrono::seconds(30))) {
    if (st.is_ok()) st = timeout_error("coroutines did not finish within 30 s after the run");
  }
  if (st.is_ok()) st = (*rt)->control().barrier("storebench.done");
  (*rt)->stop();
  if (st.is_ok()) st = (*rt)->failure();
  {
    std::lock_guard<std::mutex> g(sh.mu);
    if (!sh.error.is_ok()) st = sh.error;
  }
  if (!st.is_ok()) {
    (*rt)->control().report_failure(st.message());
    return fail(st);
  }
  out.totals = std::vector<PathCounters>(paths);
  for (auto& tc : counters) {
    for (size_t p = 0; p < paths; ++p) {
      out.totals[p].hist.merge(tc[p].hist);
      out.totals[p].client.add(tc[p].client);
      out.totals[p].xstore.add(tc[p].xstore);
      out.totals[p].errors += tc[p].errors;
    }
  }
  st = (*rt)->control().leave();
  if (!st.is_ok()) return fail(st);
  return out;
}

std::string fmt(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

Status report(const StoreBenchOptions& o, const std::vector<PathResult>& rs) {
  std::cout << "store-bench fabric=" << o.fabric.backend << " nodes=" << o.fabric.num_nodes
            << " threads=" << o.fabric.threads << " coroutines=" << o.coroutines
            << " table=" << o.table << " workload=" << o.workload << " keys=" << o.keys
            << " value_size=" << o.value_size << " dist=" << o.dist_name;
  if (o.dist == KeyDist::kZipfian) std::cout << " theta=" << o.theta;
  if (o.table == "ordered") std::cout << " keys_per_model=" << o.keys_per_model;
  std::cout << " cache_mb=" << o.cache_mb << " seconds=" << o.seconds << "\n";
  std::cout << "  path      mops      p50_us    p99_us    reads/get  rtt/get  fallbacks  ops\n";
  for (const PathResult& r : rs) {
    std::cout << "  " << std::left << std::setw(10) << r.path << std::setw(10) << fmt(r.mops, 3)
              << std::setw(10) << fmt(r.p50_us, 2) << std::setw(10) << fmt(r.p99_us, 2)
              << std::setw(11) << fmt(r.reads_per_get, 3) << std::setw(9)
              << fmt(r.round_trips_per_get, 3) << std::setw(11) << r.fallbacks << r.ops << "\n";
  }
  if (rs.size() == 2 && rs[1].mops > 0) {
    std::cout << "  " << rs[0].path << " / " << rs[1].path
              << " throughput: " << fmt(rs[0].mops / rs[1].mops, 2) << "x\n";
  }
  if (o.json.empty()) return Status::ok();
  JsonWriter j;
  j.begin_object();
  // The first path's numbers at top level (the run's headline).
  const PathResult& h = rs.front();
  j.key("mops").value(h.mops).key("reads_per_get").value(h.reads_per_get);
  j.key("p50_us").value(h.p50_us, 3).key("p99_us").value(h.p99_us, 3);
  j.key("paths").begin_array();
  for (const PathResult& r : rs) {
    j.begin_object();
    j.key("path").value(r.path).key("mops").value(r.mops).key("p50_us").value(r.p50_us, 3);
    j.key("p99_us").value(r.p99_us, 3).key("reads_per_get").value(r.reads_per_get);
    j.key("round_trips_per_get").value(r.round_trips_per_get).key("gets").value(r.gets);
    j.key("fallbacks").value(r.fallbacks).key("ops").value(r.ops).key("errors").value(r.errors);
    j.end_object();
  }
  j.end_array();
  if (rs.size() == 2 && rs[1].mops > 0) j.key("speedup").value(rs[0].mops / rs[1].mops);
  j.key("config").begin_object();
  j.key("fabric").value(o.fabric.backend).key("nodes").value(unsigned{o.fabric.num_nodes});
  j.key("threads")
      .value(unsigned{o.fabric.threads})
      .key("coroutines")
      .value(unsigned{o.coroutines});
  j.key("table").value(o.table).key("workload").value(o.workload).key("keys").value(o.keys);
  j.key("value_size")
      .value(o.value_size)
      .key("dist")
      .value(o.dist_name)
      .key("theta")
      .value(o.theta);
  j.key("cache_mb").value(static_cast<int64_t>(o.cache_mb)).key("seconds").value(o.seconds, 3);
  j.key("keys_per_model").value(uint64_t{o.keys_per_model});
  j.key("warmup").value(o.warmup, 3);
  j.end_object();
  j.end_object();
  std::string err;
  if (!write_file(o.json, j.str() + "\n", &err)) return io_error(err, errno);
  return Status::ok();
}

}  // namespace

Result<std::vector<PathResult>> run_store_bench(const StoreBenchOptions& o) {
  const bool shm = o.fabric.backend == "shm";
  if (shm) r2::remove_shm_segments(o.fabric.cluster);
  r2::ControlServerConfig sc;
  sc.listen = "127.0.0.1:0";
  sc.cluster = o.fabric.cluster;
  sc.key = o.fabric.cluster_key;
  sc.num_nodes = o.fabric.num_nodes;
  sc.join_timeout = std::chrono::milliseconds(o.join_timeout_ms);
  auto server = r2::ControlServer::start(sc);
  if (!server.is_ok()) return server.status();
  const std::string coord = "127.0.0.1:" + std::to_string((*server)->port());
  std::vector<NodeOutcome> outs(o.fabric.num_nodes);
  std::vector<std::thread> ts;
  for (uint16_t n = 0; n < o.fabric.num_nodes; ++n) {
    ts.emplace_back([&, n] { outs[n] = run_node(o, n, coord); });
  }
  for (auto& t : ts) t.join();
  Status result;
  for (auto& out : outs) {
    if (!out.status.is_ok() && result.is_ok()) result = out.status;
  }
  if (result.is_ok()) result = (*server)->wait_done(std::chrono::milliseconds(5000));
  if (shm) r2::remove_shm_segments(o.fabric.cluster);
  if (!result.is_ok()) return result;
  std::vector<PathResult> rs;
  for (size_t p = 0; p < o.paths.size(); ++p) {
    PathResult r;
    r.path = o.paths[p];
    LatencyHistogram h;
    store::tables::TableClientStats cs;
    store::xstore::XClientStats xs;
    for (const NodeOutcome& out : outs) {
      if (out.window_ns[p] > 0) r.mops += double(out.ops[p]) * 1e3 / double(out.window_ns[p]);
      r.ops += out.ops[p];
      h.merge(out.totals[p].hist);
      cs.add(out.totals[p].client);
      xs.add(out.totals[p].xstore);
      r.errors += out.totals[p].errors;
    }
    r.p50_us = double(h.quantile(0.50)) / 1e3;
    r.p99_us = double(h.quantile(0.99)) / 1e3;
    r.gets = cs.gets;
    r.reads_per_get = cs.reads_per_get();
    r.round_trips_per_get = xs.gets == 0 ? 0.0 : double(xs.round_trips) / double(xs.gets);
    r.fallbacks = xs.fallbacks;
    rs.push_back(r);
  }
  DRTMX_RETURN_IF_ERROR(report(o, rs));
  return rs;
}

}  // namespace drtmx::bench
