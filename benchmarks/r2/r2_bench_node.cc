// One node of an r2-bench run: the coroutines' op loops, the measurement
// window, the atomics check, and (node 0) the report.
#include <time.h>

#include <atomic>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "base/histogram.h"
#include "json_writer.h"
#include "r2/common/clock.h"
#include "r2/node_runtime.h"
#include "r2_bench.h"
#include "xorshift.h"

namespace drtmx::bench {
namespace {

using r2::Co;
using r2::NodeId;
using r2::OpBatch;
using r2::OpStatus;
using r2::RegionId;
using r2::RemoteAddr;
using r2::RpcBuffer;
using r2::RpcRequest;
using r2::Target;
using r2::Worker;

constexpr RegionId kData = 1;
constexpr RegionId kScratch = 2;
constexpr uint16_t kEcho = 1;
constexpr uint16_t kSink = 2;
constexpr uint32_t kSampleEvery = 16;  // latency of one op group in 16

struct alignas(64) ThreadCounters {
  std::atomic<uint64_t> ops{0};        // ops completed (owner thread writes)
  std::atomic<uint64_t> successes{0};  // successful increments (cas/faa)
  LatencyHistogram hist;               // owner thread only, read after join
  Status error;                        // first op error, owner thread only
};

struct Shared {
  std::atomic<bool> stop{false};
  std::atomic<bool> measuring{false};
};

uint32_t stride_of(const R2BenchOptions& o) {
  return (std::max<uint32_t>(o.payload, 8) + 7) & ~7u;
}

void one_sided_loop(const R2BenchOptions& o, Co& co, uint8_t* local, Shared& sh,
                    ThreadCounters& tc) {
  const uint32_t stride = stride_of(o);
  const uint64_t slots = (uint64_t{o.region_mb} << 20) / stride;
  const uint16_t nodes = o.fabric.num_nodes;
  uint64_t rng =
      0x9E3779B97F4A7C15ull ^ (uint64_t{co.node()} << 40) ^ (uint64_t{co.thread()} << 20) ^ co.id();
  // Last seen value per word (direct-mapped), so CAS often succeeds.
  std::vector<uint64_t> guess(o.op == Op::kCas ? 1024 : 0, 0);
  std::vector<uint64_t> expected(o.batch), slot_of(o.batch);
  OpBatch b;
  uint64_t n = 0;
  while (!sh.stop.load(std::memory_order_relaxed)) {
    const NodeId peer = random_peer(rng, co.node(), nodes);
    b.clear();
    for (uint32_t i = 0; i < o.batch; ++i) {
      const uint64_t slot = xorshift64(rng) % slots;
      slot_of[i] = slot;
      const RemoteAddr at{peer, kData, slot * stride};
      uint8_t* buf = local + size_t{i} * stride;
      switch (o.op) {
        case Op::kRead:
          b.read(at, buf, o.payload);
          break;
        case Op::kWrite:
          b.write(at, buf, o.payload, !o.passive_ack || i + 1 == o.batch);
          break;
        case Op::kCas:
          expected[i] = guess[slot % guess.size()];
          b.cas(at, expected[i], expected[i] + 1, reinterpret_cast<uint64_t*>(buf));
          break;
        case Op::kFaa:
          b.faa(at, 1, reinterpret_cast<uint64_t*>(buf));
          break;
        case Op::kRpc:
          break;
      }
    }
    const bool sample = (++n % kSampleEvery) == 0 && sh.measuring.load(std::memory_order_relaxed);
    const uint64_t t0 = sample ? r2::now_ns() : 0;
    const OpStatus st = co.run(b);
    if (sample) tc.hist.record(r2::now_ns() - t0);
    if (st != OpStatus::kOk) {
      if (tc.error.is_ok())
        tc.error = internal_error(std::string("op failed: ") + r2::op_status_name(st));
      sh.stop.store(true);
      return;
    }
    uint64_t ok = 0;
    if (o.op == Op::kFaa) ok = o.batch;
    if (o.op == Op::kCas) {
      for (uint32_t i = 0; i < o.batch; ++i) {
        const uint64_t old = *reinterpret_cast<uint64_t*>(local + size_t{i} * stride);
        const bool won = old == expected[i];
        ok += won;
        guess[slot_of[i] % guess.size()] = won ? old + 1 : old;
      }
    }
    if (ok)
      tc.successes.store(tc.successes.load(std::memory_order_relaxed) + ok,
                         std::memory_order_relaxed);
    tc.ops.store(tc.ops.load(std::memory_order_relaxed) + o.batch, std::memory_order_relaxed);
  }
}

void rpc_loop(const R2BenchOptions& o, Co& co, Shared& sh, ThreadCounters& tc) {
  const uint16_t nodes = o.fabric.num_nodes;
  uint64_t rng =
      0xD1B54A32D192ED03ull ^ (uint64_t{co.node()} << 40) ^ (uint64_t{co.thread()} << 20) ^ co.id();
  std::vector<uint8_t> req(o.payload, static_cast<uint8_t>(co.id()));
  std::vector<Target> targets(o.batch);
  std::vector<RpcBuffer> replies(o.batch);
  uint64_t n = 0;
  while (!sh.stop.load(std::memory_order_relaxed)) {
    const NodeId peer = random_peer(rng, co.node(), nodes);
    const Target t{peer, co.thread()};
    const bool sample = (++n % kSampleEvery) == 0 && sh.measuring.load(std::memory_order_relaxed);
    const uint64_t t0 = sample ? r2::now_ns() : 0;
    Status st;
    if (o.passive_ack) {
      for (uint32_t i = 0; i < o.batch && st.is_ok(); ++i) {
        st = co.send_passive(t, kSink, req.data(), o.payload);
      }
      // Let the loop flush this batch before the next one.
      if (st.is_ok()) co.yield();
    } else {
      std::fill(targets.begin(), targets.end(), t);
      st = co.call(targets, kEcho, req.data(), o.payload, replies);
      if (st.is_ok() && replies[0].size() != o.payload)
        st = internal_error("echo reply has the wrong size");
    }
    if (sample) tc.hist.record(r2::now_ns() - t0);
    if (!st.is_ok()) {
      if (tc.error.is_ok()) tc.error = st;
      sh.stop.store(true);
      return;
    }
    tc.ops.store(tc.ops.load(std::memory_order_relaxed) + o.batch, std::memory_order_relaxed);
  }
  if (o.passive_ack) {
    Status st = co.wait_passive_acks();
    if (!st.is_ok() && tc.error.is_ok()) tc.error = st;
  }
}

// CPU time of this process (all its threads: workers, UCX's, the control
// plane's), in ns.
uint64_t process_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct NodeResult {
  uint64_t ops = 0;
  uint64_t measured_ns = 0;
  uint64_t successes = 0;
  uint64_t words_sum = 0;
  uint64_t cpu_ns = 0;  // the node's process CPU time while measuring
  std::string error;
  LatencyHistogram hist;

  std::string encode() const {
    std::ostringstream os;
    os << ops << " " << measured_ns << " " << successes << " " << words_sum << " " << cpu_ns << " "
       << hist.encode() << " " << (error.empty() ? "-" : "E") << error;
    return os.str();
  }
  static bool decode(const std::string& s, NodeResult* r) {
    std::istringstream is(s);
    std::string h, e;
    if (!(is >> r->ops >> r->measured_ns >> r->successes >> r->words_sum >> r->cpu_ns >> h)) {
      return false;
    }
    std::getline(is, e);
    if (e.size() >= 2 && e[1] == 'E') r->error = e.substr(2);
    return r->hist.decode(h);
  }
};

std::string fmt(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

}  // namespace

void write_config(const R2BenchOptions& o, JsonWriter& j) {
  j.key("fabric").value(o.fabric.backend).key("nodes").value(unsigned{o.fabric.num_nodes});
  j.key("threads")
      .value(unsigned{o.fabric.threads})
      .key("coroutines")
      .value(unsigned{o.coroutines});
  j.key("op").value(o.op_name).key("payload").value(o.payload).key("batch").value(o.batch);
  j.key("fabric_delay_ns").value(o.fabric.delay_ns).key("passive_ack").value(o.passive_ack);
  j.key("processes").value(o.processes).key("seconds").value(o.seconds, 3);
  j.key("issuers").value(unsigned{o.issuers == 0 ? o.fabric.num_nodes : o.issuers});
}

namespace {

Status report(const R2BenchOptions& o, const std::vector<NodeResult>& rs,
              const r2::FabricInfo& fabric) {
  const std::string transports = r2::describe_transports(fabric);
  double mops = 0;
  uint64_t ops = 0, successes = 0, words = 0, cpu_ns = 0;
  LatencyHistogram h;
  for (auto& r : rs) {
    // Node processes: each its own CPU; nodes as threads of one process
    // all measure that process (count it once).
    cpu_ns = o.processes ? cpu_ns + r.cpu_ns : std::max(cpu_ns, r.cpu_ns);
    if (!r.error.empty()) return internal_error(r.error);
    if (r.measured_ns > 0)
      mops += static_cast<double>(r.ops) * 1e3 / static_cast<double>(r.measured_ns);
    ops += r.ops;
    successes += r.successes;
    words += r.words_sum;
    h.merge(r.hist);
  }
  // The CPU of every node (issuers and targets) per op: on tcp the
  // target's worker executes each op, so both sides count.
  const double cpu_us_per_op = ops != 0 ? static_cast<double>(cpu_ns) / 1e3 / ops : 0.0;
  const double p50 = static_cast<double>(h.quantile(0.50)) / 1e3;
  const double p99 = static_cast<double>(h.quantile(0.99)) / 1e3;
  std::string check = "none";
  if (o.op == Op::kCas || o.op == Op::kFaa) {
    if (words != successes) {
      return internal_error("atomics check failed: the words sum to " + std::to_string(words) +
                            " but " + std::to_string(successes) + " increments succeeded");
    }
    check = "ok (" + std::to_string(successes) + " increments)";
  }
  if (o.summary != nullptr) *o.summary = {mops, p50, p99, ops, check};
  if (!o.quiet) {
    std::ostringstream cfg;
    cfg << "fabric=" << o.fabric.backend << " nodes=" << o.fabric.num_nodes
        << " threads=" << o.fabric.threads << " coroutines=" << o.coroutines << " op=" << o.op_name
        << " payload=" << o.payload << " batch=" << o.batch << " delay_ns=" << o.fabric.delay_ns
        << " passive_ack=" << (o.passive_ack ? 1 : 0) << " processes=" << (o.processes ? 1 : 0)
        << " seconds=" << o.seconds;
    if (o.issuers != 0) cfg << " issuers=" << o.issuers;
    if (!transports.empty()) cfg << " transports=" << transports;
    std::cout << "r2-bench " << cfg.str() << "\n"
              << "  mops      p50_us    p99_us    cpu_us/op ops         check\n"
              << "  " << std::left << std::setw(10) << fmt(mops, 3) << std::setw(10) << fmt(p50, 2)
              << std::setw(10) << fmt(p99, 2) << std::setw(10) << fmt(cpu_us_per_op, 2)
              << std::setw(12) << ops << check << "\n";
  }
  if (!o.json.empty()) {
    JsonWriter j;
    j.begin_object();
    j.key("mops").value(mops).key("p50_us").value(p50, 3).key("p99_us").value(p99, 3);
    j.key("ops").value(ops).key("check").value(check);
    j.key("cpu_us_per_op").value(cpu_us_per_op, 3);
    j.key("config").begin_object();
    write_config(o, j);
    j.end_object();
    if (!fabric.peer_transports.empty()) {
      j.key("transports").begin_array();
      for (size_t n = 0; n < fabric.peer_transports.size(); ++n) {
        j.begin_object().key("node").value(static_cast<unsigned>(n));
        j.key("lanes").value(fabric.peer_transports[n]).end_object();
      }
      j.end_array();
    }
    j.key("per_node_mops").begin_array();
    for (const NodeResult& r : rs) {
      j.value(r.measured_ns ? static_cast<double>(r.ops) * 1e3 / static_cast<double>(r.measured_ns)
                            : 0.0);
    }
    j.end_array().end_object();
    std::string err;
    if (!write_file(o.json, j.str() + "\n", &err)) return io_error(err, errno);
  }
  return Status::ok();
}

Status run_node(const R2BenchOptions& o, r2::NodeRuntime& rt) {
  const uint16_t threads = o.fabric.threads;
  Shared sh;
  std::vector<ThreadCounters> counters(threads);
  const size_t per_co = size_t{o.batch} * stride_of(o);
  uint8_t* scratch = rt.fabric().region(kScratch)->base;
  rt.launch([&](Worker& w) {
    ThreadCounters& tc = counters[w.thread()];
    Status s = w.register_handler(kEcho, [](RpcRequest& r) {
      r.reply(r.payload().data(), static_cast<uint32_t>(r.payload().size()));
    });
    if (s.is_ok()) {
      s = w.register_handler(kSink, [](RpcRequest& r) {
        volatile uint8_t sink = r.payload().empty() ? 0 : r.payload()[0];
        (void)sink;
      });
    }
    const bool issues = o.issuers == 0 || o.node < o.issuers;
    for (uint16_t c = 0; issues && c < o.coroutines && s.is_ok(); ++c) {
      uint8_t* local = scratch + (size_t{w.thread()} * o.coroutines + c) * per_co;
      s = w.spawn([&, local](Co& co) {
        if (o.op == Op::kRpc) {
          rpc_loop(o, co, sh, tc);
        } else {
          one_sided_loop(o, co, local, sh, tc);
        }
      });
    }
    if (!s.is_ok()) {
      tc.error = s;
      sh.stop.store(true);
    }
  });
  auto sum_ops = [&] {
    uint64_t t = 0;
    for (auto& c : counters) t += c.ops.load(std::memory_order_relaxed);
    return t;
  };
  auto sleep_s = [&](double s) {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(static_cast<int64_t>(s * 1e6));
    while (!sh.stop.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  sleep_s(o.warmup);
  const uint64_t ops0 = sum_ops();
  const uint64_t t0 = r2::now_ns(), cpu0 = process_cpu_ns();
  sh.measuring.store(true);
  sleep_s(o.seconds);
  const uint64_t ops1 = sum_ops();
  const uint64_t t1 = r2::now_ns(), cpu1 = process_cpu_ns();
  sh.measuring.store(false);
  sh.stop.store(true);
  Status st;
  if (!rt.wait_coroutines(std::chrono::seconds(30))) {
    st = timeout_error("coroutines did not finish within 30 s after the run");
  }
  // Every node keeps serving until all are done with their ops.
  if (st.is_ok()) st = rt.control().barrier("r2bench.done");
  rt.stop();
  if (st.is_ok()) st = rt.failure();
  NodeResult mine;
  mine.ops = ops1 - ops0;
  mine.measured_ns = t1 - t0;
  mine.cpu_ns = cpu1 - cpu0;
  for (auto& c : counters) {
    mine.successes += c.successes.load();
    mine.hist.merge(c.hist);
    if (!c.error.is_ok() && mine.error.empty())
      mine.error = "node " + std::to_string(o.node) + ": " + c.error.to_string();
  }
  if (!st.is_ok()) {
    rt.control().report_failure(st.message());
    return st;
  }
  const r2::Region* data = rt.fabric().region(kData);
  for (size_t i = 0; i + 8 <= data->size; i += 8) {
    uint64_t v;
    std::memcpy(&v, data->base + i, 8);
    mine.words_sum += v;
  }
  auto all = rt.control().exchange("r2bench.results", mine.encode());
  if (!all) return all.status();
  if (o.node == 0) {
    std::vector<NodeResult> rs(all->size());
    for (size_t i = 0; i < rs.size(); ++i) {
      if (!NodeResult::decode((*all)[i], &rs[i])) {
        return internal_error("node " + std::to_string(i) + " sent a malformed result");
      }
    }
    DRTMX_RETURN_IF_ERROR(report(o, rs, rt.fabric().info()));
  } else if (!mine.error.empty()) {
    return internal_error(mine.error);
  }
  return rt.control().leave();
}

}  // namespace

Status run_r2_bench_node(const R2BenchOptions& o) {
  r2::NodeRuntimeConfig cfg;
  cfg.fabric = o.fabric;
  cfg.fabric.node = static_cast<uint16_t>(o.node);
  cfg.control.coordinator = o.coordinator;
  cfg.control.join_timeout = std::chrono::milliseconds(o.join_timeout_ms);
  // A node process of its own ends when its coordinator is gone.
  if (o.processes) cfg.control.on_lost = r2::exit_when_orphaned("r2-bench", cfg.fabric);
  cfg.control.fingerprint = {{"op", o.op_name},
                             {"payload", std::to_string(o.payload)},
                             {"batch", std::to_string(o.batch)},
                             {"coroutines", std::to_string(o.coroutines)}};
  cfg.worker.coroutines = o.coroutines;
  cfg.worker.max_rpc_bytes = std::max<uint32_t>(1u << 20, o.payload);
  const size_t scratch = size_t{o.fabric.threads} * o.coroutines * o.batch * stride_of(o);
  cfg.regions = {{kData, size_t{o.region_mb} << 20}, {kScratch, scratch}};
  auto rt = r2::NodeRuntime::start(cfg);
  if (!rt) return rt.status();
  return run_node(o, **rt);
}

}  // namespace drtmx::bench
