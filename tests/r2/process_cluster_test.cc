// Multi-process clusters through r2-bench: one-sided ops and RPC across
// processes, exact atomics totals, and every start-up error (missing node,
// duplicate node id, mismatched configuration, bad command line) reaching
// every node as a clear error — never a hang, never leftover segments.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "r2/control/control.h"
#include "support/test_cluster_key.h"

namespace {

const std::string kBench = R2_BENCH_PATH;

struct CmdResult {
  int code;
  std::string out;
};

CmdResult sh(const std::string& cmd) {
  CmdResult r{-1, {}};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

std::string cluster(const std::string& tag) {
  return "pt" + std::to_string(getpid()) + "-" + tag;
}

int segments(const std::string& c) {
  std::string prefix = "drtmx." + c + ".";
  int n = 0;
  DIR* d = opendir("/dev/shm");
  while (dirent* e = readdir(d)) n += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
  closedir(d);
  return n;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ProcessCluster, AtomicsAcrossProcessesGiveExactTotals) {
  for (const char* op : {"faa", "cas"}) {
    const std::string c = cluster(op);
    const std::string json = ::testing::TempDir() + c + ".json";
    CmdResult r =
        sh(kBench + " --processes --nodes=3 --threads=2 --coroutines=4 --op=" + op +
           " --seconds=0.5 --warmup=0.1 --region-mb=1 --cluster=" + c + " --json=" + json);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("check"), std::string::npos) << r.out;
    std::string j = slurp(json);
    EXPECT_NE(j.find("\"check\": \"ok ("), std::string::npos) << j;
    EXPECT_NE(j.find("\"processes\": true"), std::string::npos) << j;
    EXPECT_EQ(segments(c), 0);
  }
}

TEST(ProcessCluster, ReadsWritesAndRpcAcrossProcesses) {
  for (const char* args : {"--op=read --batch=4", "--op=write --passive-ack --batch=4",
                           "--op=rpc --payload=3000 --mtu=1024", "--op=rpc --passive-ack"}) {
    const std::string c = cluster("rw");
    const std::string json = ::testing::TempDir() + c + ".json";
    CmdResult r = sh(kBench + " --processes --nodes=2 --coroutines=4 " + args +
                     " --seconds=0.3 --warmup=0.1 --cluster=" + c + " --json=" + json);
    ASSERT_EQ(r.code, 0) << args << "\n" << r.out;
    std::string j = slurp(json);
    double mops = -1;
    ASSERT_EQ(std::sscanf(j.c_str(), "{\"mops\": %lf", &mops), 1) << j;
    EXPECT_GT(mops, 0.0) << args;
    EXPECT_EQ(segments(c), 0);
  }
}

// Starts node processes by hand against a coordinator in this process.
struct ManualCluster {
  std::unique_ptr<drtmx::r2::ControlServer> server;
  std::string coord;
  explicit ManualCluster(uint16_t nodes, const std::string& c, int join_ms = 1500) {
    drtmx::r2::ControlServerConfig sc;
    sc.cluster = c;
    sc.key = drtmx::testing::kTestClusterKey;
    sc.num_nodes = nodes;
    sc.join_timeout = std::chrono::milliseconds(join_ms);
    auto s = drtmx::r2::ControlServer::start(sc);
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    if (s.is_ok()) {
      server = std::move(s.value());
      coord = "127.0.0.1:" + std::to_string(server->port());
    }
  }
};

std::string node_cmd(const std::string& c, uint16_t nodes, int node, const std::string& coord,
                     const std::string& extra = "") {
  return kBench + " --nodes=" + std::to_string(nodes) + " --node=" + std::to_string(node) +
         " --coordinator=" + coord + " --cluster=" + c +
         " --cluster-key-file=" + drtmx::testing::test_key_file() +
         " --seconds=0.2 --warmup=0 --join-timeout-ms=1500 " + extra;
}

TEST(ProcessCluster, MissingNodeIsNamedOnEveryNode) {
  const std::string c = cluster("missing");
  ManualCluster m(3, c);
  ASSERT_TRUE(m.server);
  CmdResult r0, r1;
  std::thread t0([&] { r0 = sh(node_cmd(c, 3, 0, m.coord)); });
  std::thread t1([&] { r1 = sh(node_cmd(c, 3, 1, m.coord)); });
  t0.join();
  t1.join();
  for (CmdResult* r : {&r0, &r1}) {
    EXPECT_NE(r->code, 0) << r->out;
    EXPECT_NE(r->out.find("2"), std::string::npos) << r->out;
    EXPECT_NE(r->out.find("did not join"), std::string::npos) << r->out;
  }
  EXPECT_FALSE(m.server->wait_done(std::chrono::milliseconds(2000)).is_ok());
  EXPECT_EQ(segments(c), 0);
}

TEST(ProcessCluster, DuplicateNodeIdIsRefusedEverywhere) {
  const std::string c = cluster("dup");
  ManualCluster m(2, c);
  ASSERT_TRUE(m.server);
  CmdResult r0, r1;
  std::thread t0([&] { r0 = sh(node_cmd(c, 2, 1, m.coord)); });
  std::thread t1([&] { r1 = sh(node_cmd(c, 2, 1, m.coord)); });
  t0.join();
  t1.join();
  for (CmdResult* r : {&r0, &r1}) {
    EXPECT_NE(r->code, 0) << r->out;
    EXPECT_NE(r->out.find("duplicate node id 1"), std::string::npos) << r->out;
  }
  EXPECT_EQ(segments(c), 0);
}

TEST(ProcessCluster, MismatchedConfigurationNamesTheSetting) {
  const std::string c = cluster("mismatch");
  ManualCluster m(2, c);
  ASSERT_TRUE(m.server);
  CmdResult r0, r1;
  std::thread t0([&] { r0 = sh(node_cmd(c, 2, 0, m.coord, "--payload=64")); });
  std::thread t1([&] { r1 = sh(node_cmd(c, 2, 1, m.coord, "--payload=128")); });
  t0.join();
  t1.join();
  for (CmdResult* r : {&r0, &r1}) {
    EXPECT_NE(r->code, 0) << r->out;
    EXPECT_NE(r->out.find("payload"), std::string::npos) << r->out;
  }
  EXPECT_EQ(segments(c), 0);
}

TEST(ProcessCluster, BadCommandLinesAreRefusedClearly) {
  struct Case {
    std::string args, want;
  } cases[] = {
      {"--op=scan", "--op=scan"},
      {"--nodes=0", "--nodes=0"},
      {"--fabric=tcp", "--fabric='tcp'"},
      {"--batch=1000", "--batch=1000"},
      {"--bogus", "unrecognised option"},
      {"--seconds=abc", "seconds"},
      {"--node=5 --nodes=2 --coordinator=127.0.0.1:1", "--node=5"},
      {"--node=1", "--coordinator"},
      {"--lease-ms=0", "--lease-ms=0: expected 20..600000"},
      {"--lease-ms=19", "--lease-ms=19: expected 20..600000"},
      {"--lease-ms=600001", "--lease-ms=600001: expected 20..600000"},
      {"--lease-ms=abc", "lease-ms"},
      {"--lease-ms=-5", "lease-ms"},
  };
  for (auto& cs : cases) {
    CmdResult r = sh(kBench + " " + cs.args);
    EXPECT_EQ(r.code, 1) << cs.args << "\n" << r.out;
    EXPECT_NE(r.out.find(cs.want), std::string::npos) << cs.args << "\n" << r.out;
  }
  CmdResult h = sh(kBench + " --help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("--fabric-delay-ns"), std::string::npos);
}

// Survive-failures mode under load: three node processes spinning on two
// cores, plus two hog threads here, for a few seconds with the default
// lease. No node may be declared failed; the run reports the largest gap
// between two lease renewals the coordinator saw.
TEST(ProcessCluster, SurviveModeUnderLoadHasNoFalseFailure) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (int i = 0; i < 2; ++i) {
    hogs.emplace_back([&] {
      volatile uint64_t x = 0;
      while (!stop.load(std::memory_order_relaxed)) x = x + 1;
    });
  }
  const std::string c = cluster("lease");
  CmdResult r = sh(kBench +
                   " --processes --nodes=3 --threads=1 --coroutines=4 --op=rpc "
                   "--survive-failures --seconds=4 --warmup=0.2 --cluster=" +
                   c);
  stop.store(true);
  for (auto& t : hogs) t.join();
  ASSERT_EQ(r.code, 0) << r.out;
  const auto at = r.out.find("leases: 3 nodes, lease 1000 ms");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("epoch 0", at), std::string::npos) << r.out;
  double gap = -1;
  const auto g = r.out.find("max gap ", at);
  ASSERT_NE(g, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + g, "max gap %lf", &gap), 1) << r.out;
  EXPECT_LT(gap, 1000.0) << r.out;
  std::cout << "[ measured ] " << r.out.substr(at, r.out.find('\n', at) - at) << "\n";
  EXPECT_EQ(segments(c), 0);
}

TEST(ProcessCluster, ThesisSuiteRunsEveryExperimentAndReportsRatios) {
  const std::string json = ::testing::TempDir() + cluster("suite") + ".json";
  CmdResult r =
      sh(kBench + " --suite=thesis --seconds=0.05 --warmup=0 --cluster=" + cluster("suite") +
         " --json=" + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("PA: passive vs replies, RPC"), std::string::npos) << r.out;
  std::string j = slurp(json);
  EXPECT_NE(j.find("\"ratios\": {"), std::string::npos) << j;
  EXPECT_NE(j.find("\"name\": \"fig2-4 rpc 4096B\""), std::string::npos) << j;
  EXPECT_EQ(j.find("\"mops\": 0.0000"), std::string::npos) << "an experiment measured nothing\n"
                                                           << j;
}

TEST(ProcessCluster, VerbsWithoutADeviceStopsWithTheRecipe) {
  CmdResult r = sh(kBench + " --fabric=verbs --nodes=1 --seconds=0.1 --warmup=0");
  if (r.code == 0) GTEST_SKIP() << "an RDMA device is present";
  EXPECT_NE(r.out.find("--fabric=shm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rdma link add"), std::string::npos) << r.out;
}

}  // namespace
