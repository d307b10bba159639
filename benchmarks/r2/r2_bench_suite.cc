// r2-bench --suite=thesis: the shape of thesis Figs 2-4 and 2-5 in one run.
// Every experiment is a full local cluster run (nodes as threads) with the
// user's fabric, nodes, threads and --seconds; results come out as one table
// plus the ratios the thesis discusses, and optionally as JSON.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "json_writer.h"
#include "r2_bench.h"

namespace drtmx::bench {
namespace {

struct Experiment {
  std::string name;
  std::string op;
  uint32_t payload = 64;
  uint16_t coroutines = 8;
  uint32_t batch = 1;
  bool passive = false;
  uint64_t delay_ns = 0;
  R2Summary result;
};

Experiment make(std::string name, std::string op, uint32_t payload, uint16_t cos = 8,
                uint32_t batch = 1, bool passive = false, uint64_t delay_ns = 0) {
  Experiment e;
  e.name = std::move(name);
  e.op = std::move(op);
  e.payload = payload;
  e.coroutines = cos;
  e.batch = batch;
  e.passive = passive;
  e.delay_ns = delay_ns;
  return e;
}

struct Ratio {
  std::string name, num, den;
  double value = 0;
};

Op op_of(const std::string& s) {
  if (s == "read") return Op::kRead;
  if (s == "write") return Op::kWrite;
  return Op::kRpc;
}

std::string fixed(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

}  // namespace

Status run_suite(const R2BenchOptions& base) {
  std::vector<Experiment> ex;
  // Fig 2-4: one-sided vs two-sided by payload.
  for (uint32_t p : {16u, 64u, 256u, 1024u, 4096u}) {
    for (const char* op : {"read", "write", "rpc"}) {
      ex.push_back(make("fig2-4 " + std::string(op) + " " + std::to_string(p) + "B", op, p));
    }
  }
  // Fig 2-5: the optimizations, 64-byte payloads.
  ex.push_back(make("co=1 read", "read", 64, 1));
  ex.push_back(make("co=1 rpc", "rpc", 64, 1));
  ex.push_back(make("co=1 read delay=2us", "read", 64, 1, 1, false, 2000));
  ex.push_back(make("co=8 read delay=2us", "read", 64, 8, 1, false, 2000));
  ex.push_back(make("co=1 rpc delay=2us", "rpc", 64, 1, 1, false, 2000));
  ex.push_back(make("co=8 rpc delay=2us", "rpc", 64, 8, 1, false, 2000));
  ex.push_back(make("db=8 read", "read", 64, 8, 8));
  ex.push_back(make("db=8 rpc", "rpc", 64, 8, 8));
  ex.push_back(make("db=8 write", "write", 64, 8, 8));
  ex.push_back(make("db=8 write pa", "write", 64, 8, 8, true));
  ex.push_back(make("rpc pa", "rpc", 64, 8, 1, true));

  std::cout << "r2-bench --suite=thesis  fabric=" << base.fabric.backend
            << " nodes=" << base.fabric.num_nodes << " threads=" << base.fabric.threads
            << " seconds=" << base.seconds << " each\n"
            << "  experiment                 mops      p50_us    p99_us\n";
  int run = 0;
  for (Experiment& e : ex) {
    R2BenchOptions o = base;
    o.suite.clear();
    o.json.clear();
    o.quiet = true;
    o.op = op_of(e.op);
    o.op_name = e.op;
    o.payload = e.payload;
    o.coroutines = e.coroutines;
    o.batch = e.batch;
    o.passive_ack = e.passive;
    o.fabric.delay_ns = e.delay_ns;
    o.fabric.cluster = base.fabric.cluster + "-s" + std::to_string(run++);
    o.summary = &e.result;
    DRTMX_RETURN_IF_ERROR(o.fabric.validate());
    DRTMX_RETURN_IF_ERROR(run_local_cluster(o).with_context("suite experiment '" + e.name + "'"));
    std::cout << "  " << std::left << std::setw(27) << e.name << std::setw(10)
              << fixed(e.result.mops, 3) << std::setw(10) << fixed(e.result.p50_us, 2)
              << fixed(e.result.p99_us, 2) << "\n"
              << std::flush;
  }
  auto mops = [&](const std::string& name) {
    for (auto& e : ex) {
      if (e.name == name) return e.result.mops;
    }
    return 0.0;
  };
  std::vector<Ratio> ratios;
  auto ratio = [&](const std::string& name, const std::string& num, const std::string& den) {
    const double d = mops(den);
    ratios.push_back({name, num, den, d > 0 ? mops(num) / d : 0});
  };
  for (const char* p : {"16B", "64B", "256B", "1024B", "4096B"}) {
    ratio(std::string("one-sided READ / RPC, ") + p, std::string("fig2-4 read ") + p,
          std::string("fig2-4 rpc ") + p);
    ratio(std::string("one-sided WRITE / RPC, ") + p, std::string("fig2-4 write ") + p,
          std::string("fig2-4 rpc ") + p);
  }
  ratio("CO: 8 vs 1 coroutines, READ", "fig2-4 read 64B", "co=1 read");
  ratio("CO: 8 vs 1 coroutines, RPC", "fig2-4 rpc 64B", "co=1 rpc");
  ratio("CO: 8 vs 1, READ, 2us delay", "co=8 read delay=2us", "co=1 read delay=2us");
  ratio("CO: 8 vs 1, RPC, 2us delay", "co=8 rpc delay=2us", "co=1 rpc delay=2us");
  ratio("DB: batch 8 vs 1, READ", "db=8 read", "fig2-4 read 64B");
  ratio("DB: batch 8 vs 1, RPC", "db=8 rpc", "fig2-4 rpc 64B");
  ratio("PA: passive vs signaled, WRITE", "db=8 write pa", "db=8 write");
  ratio("PA: passive vs replies, RPC", "rpc pa", "fig2-4 rpc 64B");
  std::cout << "  ratios\n";
  for (auto& r : ratios) {
    std::cout << "  " << std::left << std::setw(34) << r.name << fixed(r.value, 2) << "x\n";
  }
  if (!base.json.empty()) {
    JsonWriter j;
    j.begin_object().key("suite").value("thesis");
    j.key("config").begin_object();
    j.key("fabric").value(base.fabric.backend).key("nodes").value(unsigned{base.fabric.num_nodes});
    j.key("threads").value(unsigned{base.fabric.threads}).key("seconds").value(base.seconds, 3);
    j.end_object();
    j.key("experiments").begin_array();
    for (const Experiment& e : ex) {
      j.begin_object().key("name").value(e.name).key("op").value(e.op);
      j.key("payload").value(e.payload).key("coroutines").value(unsigned{e.coroutines});
      j.key("batch").value(e.batch).key("passive_ack").value(e.passive);
      j.key("fabric_delay_ns").value(e.delay_ns).key("mops").value(e.result.mops);
      j.key("p50_us").value(e.result.p50_us, 3).key("p99_us").value(e.result.p99_us, 3);
      j.end_object();
    }
    j.end_array().key("ratios").begin_object();
    for (const Ratio& r : ratios) j.key(r.name).value(r.value, 3);
    j.end_object().end_object();
    std::string err;
    if (!write_file(base.json, j.str() + "\n", &err)) return io_error(err, errno);
  }
  return Status::ok();
}

}  // namespace drtmx::bench
