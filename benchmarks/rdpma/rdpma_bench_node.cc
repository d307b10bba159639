// One node of an rdpma-bench run: its pool (registered as a persistent
// region), the coroutines' PWrite loops over every experiment in step with
// the other nodes, the data check, and (node 0) the report.
//
// Pool layout (the same on every node, so each node knows the others'
// FatPtrs): per payload, `slots` allocations of that payload (aligned and
// padded), then one allocation holding `slots` raw targets at stride
// span + 64, each 8 bytes past a line (misaligned, unpadded); then one
// 48-byte check allocation per (writer node, PWrite method).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "base/hash.h"
#include "r2/common/clock.h"
#include "r2/node_runtime.h"
#include "rdpma/client.h"
#include "rdpma/pmem_service.h"
#include "rdpma/pool.h"
#include "rdpma_bench.h"
#include "rdpma_bench_results.h"
#include "xorshift.h"

namespace drtmx::bench {
namespace {

using r2::Co;
using r2::NodeId;
using rdpma::FatPtr;
using rdpma::PersistMethod;
using rdpma::PmemPool;

constexpr r2::RegionId kPool = 1;
constexpr r2::RegionId kScratch = 2;
constexpr uint32_t kCheckBytes = 48;
constexpr PersistMethod kAllMethods[] = {PersistMethod::kH9, PersistMethod::kStrawman,
                                         PersistMethod::kTwoSided};

struct Layout {
  std::vector<std::vector<FatPtr>> aligned;  // [payload index][slot]
  std::vector<FatPtr> raw;                   // [payload index]
  std::vector<FatPtr> check;                 // [writer * 3 + method]
};

uint64_t raw_stride(uint32_t payload) {
  return rdpma::alloc_span(payload) + rdpma::kLine;
}

Result<Layout> allocate(PmemPool& pool, const RdpmaBenchOptions& o) {
  Layout l;
  for (uint32_t p : o.payloads) {
    l.aligned.emplace_back();
    for (uint32_t s = 0; s < o.slots; ++s) {
      auto a = pool.alloc(p);
      if (!a) return a.status().with_context("--pool-mb / --slots");
      l.aligned.back().push_back(*a);
    }
    auto r = pool.alloc(static_cast<uint32_t>(o.slots * raw_stride(p)));
    if (!r) return r.status().with_context("--pool-mb / --slots");
    l.raw.push_back(*r);
  }
  for (uint32_t i = 0; i < 3u * o.fabric.num_nodes; ++i) {
    auto c = pool.alloc(kCheckBytes);
    if (!c) return c.status().with_context("--pool-mb");
    l.check.push_back(*c);
  }
  return l;
}

// The bytes writer `w` stores with method index `m` into every pool.
void check_pattern(uint64_t run, NodeId w, size_t m, uint8_t* out) {
  for (uint32_t i = 0; i < kCheckBytes; i += 8) {
    const uint64_t v = hash_mix(run ^ (uint64_t{w} << 32) ^ (m << 16), i);
    std::memcpy(out + i, &v, 8);
  }
}

enum Phase : uint64_t { kIdle = 0, kWarm = 1, kMeasure = 2, kVerify = 3, kDone = 4 };

struct Shared {
  // (experiment << 8) | phase, set by the node's main thread.
  std::atomic<uint64_t> state{kIdle};
  std::atomic<bool> failed{false};
  std::atomic<bool> verified{false};
  // Some coroutine of this node measured an operation of the current
  // experiment (reset by the main thread before each measurement).
  std::atomic<bool> measured_any{false};
  void set(size_t exp, Phase p) {
    state.store((uint64_t{exp} << 8) | p, std::memory_order_release);
  }
};

struct alignas(64) ThreadState {
  std::vector<ExperimentResult> exps;  // the worker thread's; read after it stopped
  Status error;
};

struct NodeContext {
  const RdpmaBenchOptions& o;
  const std::vector<PmemExperiment>& xs;
  const std::vector<size_t>& payload_index;  // per experiment
  const Layout& layout;
  r2::Fabric& fabric;
  uint64_t run_hash;
  Shared& sh;
};

// Every method's PWrite of this node's check pattern into every pool,
// read back one-sided and two-sided.
Status write_checks(NodeContext& nc, Co& co, rdpma::Client& c) {
  uint8_t want[kCheckBytes], got[kCheckBytes];
  for (NodeId peer = 0; peer < nc.o.fabric.num_nodes; ++peer) {
    for (size_t m = 0; m < 3; ++m) {
      check_pattern(nc.run_hash, co.node(), m, want);
      const rdpma::RemotePtr p{peer, kPool, nc.layout.check[co.node() * 3u + m]};
      DRTMX_RETURN_IF_ERROR(c.pwrite(p, 0, want, kCheckBytes, kAllMethods[m]));
      for (rdpma::Primitive prim : {rdpma::Primitive::kOneSided, rdpma::Primitive::kTwoSided}) {
        std::memset(got, 0, sizeof got);
        DRTMX_RETURN_IF_ERROR(c.read(p, 0, got, kCheckBytes, prim));
        if (std::memcmp(got, want, kCheckBytes) != 0) {
          return internal_error(std::string("data check: a ") + rdpma::method_name(kAllMethods[m]) +
                                " PWrite to node " + std::to_string(peer) + " read back " +
                                rdpma::primitive_name(prim) + " differs");
        }
      }
    }
  }
  return Status::ok();
}

void coroutine(NodeContext& nc, Co& co, std::span<uint8_t> scratch, ThreadState& ts,
               bool verifier) {
  auto client = rdpma::Client::make(co, nc.fabric, scratch);
  if (!client) {
    ts.error = client.status();
    nc.sh.failed = true;
    return;
  }
  const uint16_t nodes = nc.o.fabric.num_nodes;
  uint32_t max_payload = 0;
  for (uint32_t p : nc.o.payloads) max_payload = std::max(max_payload, p);
  std::vector<uint8_t> data(max_payload);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 31 + co.id());
  uint64_t rng =
      0x9E3779B97F4A7C15ull ^ (uint64_t{co.node()} << 40) ^ (uint64_t{co.thread()} << 20) ^ co.id();
  bool checked = false;
  while (true) {
    const uint64_t s = nc.sh.state.load(std::memory_order_acquire);
    const auto phase = static_cast<Phase>(s & 0xff);
    const size_t ei = s >> 8;
    if (phase == kDone) return;
    if (phase == kVerify && verifier && !checked) {
      checked = true;
      Status st = write_checks(nc, co, *client);
      if (!st.is_ok()) {
        ts.error = st;
        nc.sh.failed = true;
      }
      nc.sh.verified = true;
      continue;
    }
    if (phase == kIdle || phase == kVerify || nc.sh.failed.load(std::memory_order_relaxed)) {
      co.yield_idle();
      continue;
    }
    const PmemExperiment& x = nc.xs[ei];
    const size_t pi = nc.payload_index[ei];
    const NodeId peer = random_peer(rng, co.node(), nodes);
    const auto slot = static_cast<uint32_t>(xorshift64(rng) % nc.o.slots);
    const uint64_t t0 = r2::now_ns();
    Status st;
    if (x.aligned) {
      st = client->pwrite({peer, kPool, nc.layout.aligned[pi][slot]}, 0, data.data(), x.payload,
                          x.method);
    } else {
      const r2::RemoteAddr to{
          peer, kPool,
          PmemPool::region_offset(nc.layout.raw[pi]) + slot * raw_stride(x.payload) + 8};
      st = client->pwrite_raw(to, data.data(), x.payload, x.method);
    }
    const uint64_t t1 = r2::now_ns();
    if (!st.is_ok()) {
      if (ts.error.is_ok()) ts.error = st.with_context(x.name());
      nc.sh.failed = true;
      continue;
    }
    if (phase == kMeasure && nc.sh.state.load(std::memory_order_relaxed) == s) {
      ++ts.exps[ei].ops;
      ts.exps[ei].hist.record(t1 - t0);
      if (!nc.sh.measured_any.load(std::memory_order_relaxed)) {
        nc.sh.measured_any.store(true, std::memory_order_relaxed);
      }
    }
  }
}

// Compares the check allocations of this node's pool with what every
// writer stored: in the mapping and in the file (a separate pread).
Status verify_own_pool(const RdpmaBenchOptions& o, const PmemPool& pool, const Layout& l,
                       uint64_t run_hash, std::string* check) {
  const int fd = ::open(pool.path().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("opening " + pool.path() + " for the data check", errno);
  uint8_t want[kCheckBytes], in_pool[kCheckBytes], in_file[kCheckBytes];
  Status st;
  for (NodeId w = 0; w < o.fabric.num_nodes && st.is_ok(); ++w) {
    for (size_t m = 0; m < 3 && st.is_ok(); ++m) {
      const FatPtr& p = l.check[w * 3u + m];
      check_pattern(run_hash, w, m, want);
      st = pool.read(p, 0, in_pool, kCheckBytes);
      if (!st.is_ok()) break;
      const ssize_t got = pread(fd, in_file, kCheckBytes, static_cast<off_t>(p.offset));
      const std::string who =
          std::string(rdpma::method_name(kAllMethods[m])) + " PWrite of node " + std::to_string(w);
      if (std::memcmp(in_pool, want, kCheckBytes) != 0) {
        st = internal_error("data check: the " + who + " is not in the pool's memory");
      } else if (got != kCheckBytes || std::memcmp(in_file, want, kCheckBytes) != 0) {
        st = internal_error("data check: the " + who + " is not in the pool file " + pool.path());
      }
    }
  }
  ::close(fd);
  if (st.is_ok()) {
    *check = "ok (" + std::to_string(3u * o.fabric.num_nodes * o.fabric.num_nodes) +
             " PWrites by every method and node found in every pool and its file, read back "
             "one- and two-sided)";
  }
  return st;
}

void sleep_while_ok(const Shared& sh, double seconds) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  while (!sh.failed.load() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Status run_node(const RdpmaBenchOptions& o, PmemPool& pool, const Layout& layout,
                r2::NodeRuntime& rt, const std::string& json_part) {
  const std::vector<PmemExperiment> xs = o.experiments();
  std::vector<size_t> payload_index;
  for (const PmemExperiment& x : xs) {
    size_t i = 0;
    while (o.payloads[i] != x.payload) ++i;
    payload_index.push_back(i);
  }
  const uint64_t run_hash = hash_bytes(0x5eed, o.fabric.cluster.data(), o.fabric.cluster.size());
  Shared sh;
  NodeContext nc{o, xs, payload_index, layout, rt.fabric(), run_hash, sh};
  std::vector<ThreadState> threads(o.fabric.threads);
  for (auto& t : threads) t.exps.resize(xs.size());
  rdpma::PoolDirectory dir;
  DRTMX_RETURN_IF_ERROR(dir.add(kPool, &pool));
  const r2::Region* scratch = rt.fabric().region(kScratch);
  const size_t per_co = scratch->size / (size_t{o.fabric.threads} * o.coroutines);
  rt.launch([&](r2::Worker& w) {
    ThreadState& ts = threads[w.thread()];
    Status s = rdpma::register_pmem_handler(w, dir);
    for (uint16_t c = 0; c < o.coroutines && s.is_ok(); ++c) {
      std::span<uint8_t> mine(scratch->base + (size_t{w.thread()} * o.coroutines + c) * per_co,
                              per_co);
      const bool verifier = w.thread() == 0 && c == 0;
      s = w.spawn([&, mine, verifier](Co& co) { coroutine(nc, co, mine, ts, verifier); });
    }
    if (!s.is_ok()) {
      ts.error = s;
      sh.failed = true;
    }
  });
  std::vector<uint64_t> measured(xs.size(), 0);
  Status st;
  for (size_t i = 0; i < xs.size() && st.is_ok() && !sh.failed; ++i) {
    st = rt.control().barrier("rdpma.exp" + std::to_string(i));
    if (!st.is_ok()) break;
    sh.set(i, kWarm);
    sleep_while_ok(sh, o.warmup);
    sh.measured_any.store(false, std::memory_order_relaxed);
    const uint64_t t0 = r2::now_ns();
    sh.set(i, kMeasure);
    sleep_while_ok(sh, o.seconds);
    // A starved worker (a loaded machine, a short --seconds) may not have
    // completed one operation yet: measure on until it has (bounded), so
    // that no experiment reports nothing; the rate divides by the time
    // actually measured.
    for (int waits = 0; waits < 10000 && !sh.failed && !sh.measured_any.load(); ++waits) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    measured[i] = r2::now_ns() - t0;
    sh.set(i, kIdle);
  }
  if (st.is_ok() && !sh.failed) {
    st = rt.control().barrier("rdpma.verify");
    sh.set(0, kVerify);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (st.is_ok() && !sh.verified && !sh.failed) {
      if (std::chrono::steady_clock::now() > until) {
        st = timeout_error("the data check did not finish within 60 s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  sh.set(0, kDone);
  if (!rt.wait_coroutines(std::chrono::seconds(30)) && st.is_ok()) {
    st = timeout_error("coroutines did not finish within 30 s after the run");
  }
  NodeResult mine;
  for (const ThreadState& t : threads) {
    if (!t.error.is_ok() && mine.error.empty()) {
      mine.error = "node " + std::to_string(o.node) + ": " + t.error.to_string();
    }
  }
  if (st.is_ok() && mine.error.empty()) {
    // Every node's checks are written before anybody looks.
    st = rt.control().barrier("rdpma.checks-written");
    if (st.is_ok()) {
      Status v = verify_own_pool(o, pool, layout, run_hash, &mine.check);
      if (!v.is_ok()) mine.error = "node " + std::to_string(o.node) + ": " + v.to_string();
    }
  }
  if (!st.is_ok()) {
    rt.control().report_failure(st.message());
    rt.stop();
    return st;
  }
  if (mine.error.empty()) {
    mine.exps.resize(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      mine.exps[i].measured_ns = measured[i];
      for (const ThreadState& t : threads) {
        mine.exps[i].ops += t.exps[i].ops;
        mine.exps[i].hist.merge(t.exps[i].hist);
      }
    }
  }
  // The exchange is also the last barrier: nobody stops serving before.
  auto all = rt.control().exchange("rdpma.results", mine.encode());
  rt.stop();
  if (!all) return all.status();
  if (o.node == 0) {
    std::vector<NodeResult> rs(all->size());
    for (size_t i = 0; i < rs.size(); ++i) {
      if (!NodeResult::decode((*all)[i], xs.size(), &rs[i])) {
        return internal_error("node " + std::to_string(i) + " sent a malformed result");
      }
    }
    DRTMX_RETURN_IF_ERROR(report_run(o, pool.persistence(), rs, json_part));
  } else if (!mine.error.empty()) {
    return internal_error(mine.error);
  }
  return rt.control().leave();
}

}  // namespace

Status run_rdpma_node(const RdpmaBenchOptions& o, const std::string& json_part) {
  rdpma::PoolSpec spec;
  spec.path = o.pool_path(static_cast<uint16_t>(o.node));
  spec.bytes = uint64_t{o.pool_mb} << 20;
  spec.id.cluster = hash_bytes(0xc1, o.fabric.cluster.data(), o.fabric.cluster.size());
  spec.id.node = static_cast<uint32_t>(o.node);
  spec.id.region = kPool;
  spec.id.layout = hash_mix(o.slots, o.payloads.size());
  spec.format = true;  // the benchmark's own scratch pool
  auto pool = PmemPool::open(spec);
  if (!pool) return pool.status();
  Status st;
  {
    auto layout = allocate(**pool, o);
    if (!layout) {
      st = layout.status();
    } else {
      r2::NodeRuntimeConfig cfg;
      cfg.fabric = o.fabric;
      cfg.fabric.node = static_cast<uint16_t>(o.node);
      cfg.control.coordinator = o.coordinator;
      cfg.control.join_timeout = std::chrono::milliseconds(o.join_timeout_ms);
      // A node process of its own ends when its coordinator is gone (its
      // scratch pool stays; the next run with the same directory formats it).
      if (o.processes) cfg.control.on_lost = r2::exit_when_orphaned("rdpma-bench", cfg.fabric);
      std::string exps;
      for (const PmemExperiment& x : o.experiments()) exps += x.name() + ";";
      cfg.control.fingerprint = {{"experiments", exps},
                                 {"slots", std::to_string(o.slots)},
                                 {"pool_mb", std::to_string(o.pool_mb)},
                                 {"coroutines", std::to_string(o.coroutines)},
                                 {"seconds", std::to_string(o.seconds)}};
      cfg.worker.coroutines = o.coroutines;
      uint32_t max_payload = 0;
      for (uint32_t p : o.payloads) max_payload = std::max(max_payload, p);
      // Per coroutine: the flush line and the staging of one padded write.
      const size_t per_co = rdpma::kLine + rdpma::alloc_span(max_payload) + rdpma::kLine;
      cfg.regions = {{kScratch, size_t{o.fabric.threads} * o.coroutines * per_co}};
      cfg.file_regions = {{kPool, (*pool)->data_region()}};
      auto rt = r2::NodeRuntime::start(cfg);
      if (!rt) {
        st = rt.status();
      } else {
        st = run_node(o, **pool, *layout, **rt, json_part);
      }
    }  // the runtime (fabric, peers' mappings) goes before the pool
  }
  pool->reset();
  if (!o.keep_pools) ::unlink(spec.path.c_str());
  return st;
}

}  // namespace drtmx::bench
