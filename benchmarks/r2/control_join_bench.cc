// control-join-bench: what joining the control plane costs, the cluster-key
// handshake included (r2/control/README.md, "The cluster key"). For each
// of --joins rounds it starts a coordinator of --nodes nodes on loopback
// and times ControlClient::join of all of them at once (connect, challenge,
// SignedJoin, Admitted, JoinOk); it also times the handshake's
// cryptography alone (a nonce, and one HMAC-SHA256 over a join the size of
// a real node's). Prints one JSON object: medians and 99th percentiles in
// microseconds.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "r2/control/cluster_key.h"
#include "r2/control/control.h"

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

int usage(const char* why) {
  std::fprintf(stderr,
               "control-join-bench: %s\nusage: control-join-bench [--joins=N] [--nodes=N]\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace drtmx;
  int joins = 300, nodes = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--joins=", 8) == 0) {
      joins = std::atoi(argv[i] + 8);
    } else if (std::strncmp(argv[i], "--nodes=", 8) == 0) {
      nodes = std::atoi(argv[i] + 8);
    } else {
      return usage((std::string("unknown option ") + argv[i]).c_str());
    }
  }
  if (joins < 1 || joins > 100000) return usage("--joins must be 1..100000");
  if (nodes < 1 || nodes > 64) return usage("--nodes must be 1..64");
  auto key = r2::make_cluster_key();
  if (!key) return usage(key.status().message().c_str());
  // A join the size of a drtmx-node's (its fingerprint: about 30 settings).
  std::map<std::string, std::string> fingerprint;
  for (int i = 0; i < 30; ++i) {
    fingerprint["setting." + std::to_string(i)] = "value-" + std::to_string(i);
  }
  std::vector<double> join_us, all_us;
  for (int round = 0; round < joins; ++round) {
    r2::ControlServerConfig sc;
    sc.cluster = "joinbench";
    sc.key = *key;
    sc.num_nodes = static_cast<uint16_t>(nodes);
    auto server = r2::ControlServer::start(sc);
    if (!server) return usage(server.status().message().c_str());
    std::vector<std::unique_ptr<r2::ControlClient>> cs(nodes);
    std::vector<double> mine(nodes, 0);
    std::vector<std::thread> ts;
    const auto t0 = Clock::now();
    for (int n = 0; n < nodes; ++n) {
      ts.emplace_back([&, n] {
        r2::ControlClientConfig cc;
        cc.coordinator = "127.0.0.1:" + std::to_string((*server)->port());
        cc.cluster = "joinbench";
        cc.key = *key;
        cc.node = static_cast<uint16_t>(n);
        cc.num_nodes = static_cast<uint16_t>(nodes);
        cc.fingerprint = fingerprint;
        const auto t = Clock::now();
        auto c = r2::ControlClient::join(cc);
        mine[n] = us_since(t);
        if (c) cs[n] = std::move(c.value());
      });
    }
    for (auto& t : ts) t.join();
    all_us.push_back(us_since(t0));
    for (int n = 0; n < nodes; ++n) {
      if (!cs[n]) return usage("a join failed");
      join_us.push_back(mine[n]);
      (void)cs[n]->leave();
    }
    (void)(*server)->wait_done(std::chrono::milliseconds(2000));
  }
  // The handshake's cryptography alone.
  std::string join(600, 'j');
  std::vector<double> mac_us, nonce_us;
  for (int i = 0; i < 2000; ++i) {
    auto t = Clock::now();
    auto nonce = r2::control::random_nonce();
    nonce_us.push_back(us_since(t));
    t = Clock::now();
    const std::string mac =
        r2::control::handshake_mac(*key, r2::control::Prover::kMember, *nonce, *nonce, join);
    mac_us.push_back(us_since(t));
    if (mac.size() != r2::control::kMacBytes) return usage("HMAC failed");
  }
  std::printf(
      "{\"joins\": %d, \"nodes\": %d, \"join_us_p50\": %.1f, \"join_us_p99\": %.1f, "
      "\"all_joined_us_p50\": %.1f, \"hmac_us_p50\": %.2f, \"nonce_us_p50\": %.2f}\n",
      joins, nodes, percentile(join_us, 0.5), percentile(join_us, 0.99), percentile(all_us, 0.5),
      percentile(mac_us, 0.5), percentile(nonce_us, 0.5));
  return 0;
}
