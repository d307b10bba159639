#include "rdpma_bench_results.h"

#include <cerrno>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "json_writer.h"

namespace drtmx::bench {

// Lines: "E <error>" or "C <check>", then per experiment "<ops> <ns> <hist>".
std::string NodeResult::encode() const {
  std::ostringstream os;
  if (!error.empty()) {
    os << "E " << error << "\n";
  } else {
    os << "C " << check << "\n";
  }
  for (const ExperimentResult& e : exps) {
    os << e.ops << " " << e.measured_ns << " " << e.hist.encode() << "\n";
  }
  return os.str();
}

bool NodeResult::decode(const std::string& s, size_t experiments, NodeResult* out) {
  std::istringstream is(s);
  std::string line;
  if (!std::getline(is, line) || line.size() < 2) return false;
  (line[0] == 'E' ? out->error : out->check) = line.substr(2);
  if (!out->error.empty()) return true;
  out->exps.assign(experiments, {});
  for (ExperimentResult& e : out->exps) {
    std::string h;
    if (!std::getline(is, line)) return false;
    std::istringstream ls(line);
    if (!(ls >> e.ops >> e.measured_ns >> h) || !e.hist.decode(h)) return false;
  }
  return true;
}

namespace {

struct Row {
  PmemExperiment x;
  double kops = 0;
  double p50_us = 0, p99_us = 0;
  uint64_t ops = 0;
};

std::string fixed(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

struct Ratio {
  std::string name;
  double value;
};

}  // namespace

Status report_run(const RdpmaBenchOptions& o, const std::string& persistence,
                  const std::vector<NodeResult>& nodes, const std::string& json_part) {
  const std::vector<PmemExperiment> xs = o.experiments();
  std::string check;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (!nodes[n].error.empty())
      return internal_error("node " + std::to_string(n) + ": " + nodes[n].error);
    if (n == 0) check = nodes[n].check;
  }
  std::vector<Row> rows;
  for (size_t i = 0; i < xs.size(); ++i) {
    Row r;
    r.x = xs[i];
    LatencyHistogram h;
    for (const NodeResult& nr : nodes) {
      const ExperimentResult& e = nr.exps[i];
      if (e.measured_ns > 0)
        r.kops += static_cast<double>(e.ops) * 1e6 / static_cast<double>(e.measured_ns);
      r.ops += e.ops;
      h.merge(e.hist);
    }
    r.p50_us = static_cast<double>(h.quantile(0.50)) / 1e3;
    r.p99_us = static_cast<double>(h.quantile(0.99)) / 1e3;
    rows.push_back(r);
  }
  auto find = [&](uint32_t p, bool aligned, rdpma::PersistMethod m) -> const Row* {
    for (const Row& r : rows) {
      if (r.x.payload == p && r.x.aligned == aligned && r.x.method == m) return &r;
    }
    return nullptr;
  };
  std::vector<Ratio> ratios;
  auto ratio = [&](const std::string& name, double num, double den) {
    if (den > 0) ratios.push_back({name, num / den});
  };
  using rdpma::PersistMethod;
  for (uint32_t p : o.payloads) {
    const std::string ps = std::to_string(p) + "B";
    for (bool a : o.layouts) {
      const std::string l = a ? "aligned" : "raw";
      const Row* h9 = find(p, a, PersistMethod::kH9);
      const Row* sm = find(p, a, PersistMethod::kStrawman);
      const Row* ts = find(p, a, PersistMethod::kTwoSided);
      if (h9 && sm) {
        ratio("h9/strawman throughput " + ps + " " + l, h9->kops, sm->kops);
        ratio("strawman/h9 p50 latency " + ps + " " + l, sm->p50_us, h9->p50_us);
      }
      if (h9 && ts) ratio("h9/two-sided throughput " + ps + " " + l, h9->kops, ts->kops);
    }
    for (PersistMethod m : o.methods) {
      const Row* al = find(p, true, m);
      const Row* raw = find(p, false, m);
      if (al && raw) {
        ratio(std::string("aligned/raw throughput ") + ps + " " + rdpma::method_name(m), al->kops,
              raw->kops);
      }
    }
  }

  std::ostringstream t;
  t << "rdpma-bench fabric=" << o.fabric.backend << " nodes=" << o.fabric.num_nodes
    << " threads=" << o.fabric.threads << " coroutines=" << o.coroutines
    << " delay_ns=" << o.fabric.delay_ns << " pools=" << o.pmem_dir << " (" << persistence
    << ") processes=" << (o.processes ? 1 : 0) << " seconds=" << o.seconds << " each\n"
    << "  payload  layout   method      kops/s     p50_us    p99_us\n";
  for (const Row& r : rows) {
    t << "  " << std::left << std::setw(9) << (std::to_string(r.x.payload) + "B") << std::setw(9)
      << (r.x.aligned ? "aligned" : "raw") << std::setw(12) << rdpma::method_name(r.x.method)
      << std::setw(11) << fixed(r.kops, 1) << std::setw(10) << fixed(r.p50_us, 2)
      << fixed(r.p99_us, 2) << "\n";
  }
  t << "  ratios\n";
  for (const Ratio& r : ratios)
    t << "    " << std::left << std::setw(44) << r.name << fixed(r.value, 2) << "\n";
  t << "  data check: " << check << "\n";
  std::cout << t.str() << std::flush;

  if (json_part.empty()) return Status::ok();
  JsonWriter j;
  j.begin_object();
  j.key("delay_ns").value(o.fabric.delay_ns).key("persistence").value(persistence);
  j.key("check").value(check);
  j.key("experiments").begin_array();
  for (const Row& r : rows) {
    j.begin_object();
    j.key("payload").value(r.x.payload).key("layout").value(r.x.aligned ? "aligned" : "raw");
    j.key("method").value(rdpma::method_name(r.x.method));
    j.key("kops")
        .value(r.kops, 2)
        .key("p50_us")
        .value(r.p50_us, 3)
        .key("p99_us")
        .value(r.p99_us, 3);
    j.key("ops").value(r.ops);
    j.end_object();
  }
  j.end_array();
  j.key("ratios").begin_array();
  for (const Ratio& r : ratios)
    j.begin_object().key("name").value(r.name).key("value").value(r.value, 3).end_object();
  j.end_array().end_object();
  std::string err;
  if (!write_file(json_part, j.str(), &err)) return io_error(err, errno);
  return Status::ok();
}

}  // namespace drtmx::bench
