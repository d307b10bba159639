// drtmx-bench --hosts across a network: 3 hosts as network namespaces on
// this machine (support/netns_cluster.h), one drtmx-node on each, started
// through a remote shell that enters the host's namespace as ssh would
// enter a host; drtmx-bench and its coordinator in a namespace of their
// own on the same switch. --fabric=ucx with UCX_TLS=tcp and
// UCX_NET_DEVICES=eth0: every record crosses the veth pairs and the bridge.
//
// - SmallBank, TPC-C and TPC-E (scaled down) pass their checks, and the
//   report names tcp over eth0 as UCX's transport.
// - --kill-node: a host's node SIGKILLed there (through the remote shell);
//   the survivors fail over, the check holds with the killed node's
//   acknowledged commits from its journal.
// - --durability=pmem --crash-at: every node SIGKILLed on its host, each
//   host's pools in its own directory; --recover passes the recovery check
//   (every acknowledged commit present, nothing partial) and then runs.
// - --partition-node: a host's port on the switch taken down mid-run (the
//   process runs on, cut off): detected by its lease, fenced and failed over
//   as a killed node while the link is still down; the link comes back
//   before the run ends and the fenced node corrupts nothing (the check
//   holds) and stops.
// - The fixture removes every namespace and process it made.
// Each case skips, with the reason, where namespaces cannot be made.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "support/bench_run.h"
#include "support/netns_cluster.h"

namespace {

namespace fs = std::filesystem;
using drtmx::bench::testing::NetnsCluster;
using drtmx::bench::testing::Outcome;
using drtmx::bench::testing::slurp;

class NetnsHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::temp_directory_path() /
            ("ucx_netns_test_" + std::to_string(getpid()) + "_" + info->name()))
               .string();
    fs::remove_all(dir_);
    std::string why;
    cluster_ = NetnsCluster::create(3, dir_, &why);
    if (cluster_ == nullptr) GTEST_SKIP() << why;
  }
  void TearDown() override {
    cluster_.reset();
    fs::remove_all(dir_);
  }

  // drtmx-bench in the launcher's namespace over the cluster's hosts.
  Outcome bench(const std::string& hosts_file, const std::string& args, int limit_s = 150) {
    const std::string cmd =
        cluster_->in_launcher() + "env UCX_TLS=tcp UCX_NET_DEVICES=eth0 " + DRTMX_BENCH_PATH;
    return drtmx::bench::testing::run(cmd,
                                      "--fabric=ucx --hosts=" + hosts_file +
                                          " --remote-shell=" + cluster_->remote_shell() +
                                          " --coordinator-host=" + cluster_->launcher_address() +
                                          " --cluster=" + cluster_->prefix() + " " + args,
                                      limit_s);
  }
  // The run passed its check, over tcp on the hosts' eth0.
  static void expect_checked(const Outcome& o) {
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("check: ok"), std::string::npos) << o.output;
    const size_t first = o.output.find("drtmx-bench bench=");
    ASSERT_NE(first, std::string::npos) << o.output;
    const std::string line = o.output.substr(first, o.output.find('\n', first) - first);
    EXPECT_NE(line.find("fabric=ucx transports=tcp/eth0"), std::string::npos) << line;
    EXPECT_EQ(line.find("tcp/lo"), std::string::npos) << line;
  }
  // A failover run: it went on after the fault and its check held.
  static void expect_survived(const Outcome& o) {
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("check: ok"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("every partition served by a primary after"), std::string::npos)
        << o.output;
    EXPECT_NE(o.output.find("killed node's journal: "), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("still locked"), std::string::npos) << o.output;
  }
  void expect_nothing_left() const {
    // Only the namespaces themselves: every node ended with its run.
    EXPECT_EQ(cluster_->processes(), 0) << "a node outlived its run";
  }

  std::string dir_;
  std::unique_ptr<NetnsCluster> cluster_;
};

const std::string kSmallBank =
    "--bench=smallbank --threads=1 --coroutines=4 --replicas=3 --accounts=2000 --hot-pct=10 "
    "--audit-pct=10 --warmup=0.5 ";

TEST_F(NetnsHosts, SmallBankOverTcpBetweenHosts) {
  expect_checked(bench(cluster_->hosts_file(), kSmallBank + "--policy=drtmh --seconds=2"));
  expect_nothing_left();
}

TEST_F(NetnsHosts, TpccOverTcpBetweenHosts) {
  expect_checked(bench(cluster_->hosts_file(),
                       "--bench=tpcc --coroutines=4 --replicas=3 --items=2000 --customers=60 "
                       "--warmup=0.5 --seconds=2"));
  expect_nothing_left();
}

TEST_F(NetnsHosts, TpceOverTcpBetweenHosts) {
  const Outcome o = bench(cluster_->hosts_file(),
                          "--bench=tpce --replicas=3 --coroutines=4 --initial-trade-days=0.02 "
                          "--market-days=20 --dm-interval-ms=100 --tc-interval-ms=100 --warmup=0.5 "
                          "--mix=10,10,10,10,10,10,10,10,10,10 --seconds=2");
  expect_checked(o);
  EXPECT_NE(o.output.find("tpsE "), std::string::npos) << o.output;
  expect_nothing_left();
}

// A list-append history written by nodes on three hosts (the parts go to
// a directory they share), merged by the launcher and judged by drtmx-check.
TEST_F(NetnsHosts, AppendHistoryAcrossHostsIsStrictSerializable) {
  const std::string history = dir_ + "/h.jsonl";
  const Outcome o = bench(cluster_->hosts_file(),
                          "--bench=append --coroutines=4 --replicas=3 --append-keys=40 "
                          "--warmup=0.5 --seconds=2 --history=" +
                              history + " --check-history=strict-serializable");
  expect_checked(o);
  EXPECT_NE(o.output.find("history check (strict-serializable): valid"), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("operations of 12 processes in " + history), std::string::npos)
      << o.output;
  expect_nothing_left();
}

TEST_F(NetnsHosts, KilledNodeIsFailedOverWithoutLosingAcknowledgedCommits) {
  const Outcome o =
      bench(cluster_->hosts_file(), kSmallBank + "--policy=drtmh --seconds=3 --kill-node=2@1.5");
  expect_survived(o);
  expect_nothing_left();
}

TEST_F(NetnsHosts, EveryNodeCrashedRecoversFromItsHostsPools) {
  // Each host's pools in a directory of its own.
  std::vector<std::string> dirs;
  for (int i = 0; i < 3; ++i) dirs.push_back("--pmem-dir=" + dir_ + "/pool-h" + std::to_string(i));
  const std::string hosts = cluster_->hosts_file(dirs);
  const std::string durable =
      "--bench=smallbank --coroutines=4 --replicas=3 --accounts=200 --hot-pct=10 "
      "--audit-pct=10 --durability=pmem --warmup=0.3 ";
  const Outcome crash = bench(hosts, durable + "--seconds=3 --crash-at=1");
  ASSERT_EQ(crash.exit_code, 0) << crash.output;
  EXPECT_NE(crash.output.find("SIGKILLed all 3 node processes"), std::string::npos) << crash.output;
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(fs::is_empty(dir_ + "/pool-h" + std::to_string(i))) << "host " << i;
  }
  EXPECT_FALSE(fs::exists(dir_ + "/pmem")) << "the launcher made a pool directory of its own";
  expect_nothing_left();
  const Outcome rec = bench(hosts, durable + "--seconds=1 --recover");
  EXPECT_EQ(rec.exit_code, 0) << rec.output;
  EXPECT_NE(rec.output.find("recovery check: ok"), std::string::npos) << rec.output;
  EXPECT_NE(rec.output.find("check: ok"), std::string::npos) << rec.output;
  expect_nothing_left();
}

TEST_F(NetnsHosts, PartitionedHostIsFencedFailedOverAndHarmlessWhenItReturns) {
  // Cut off 1 s into the run for 2.5 s (two and a half leases), back for
  // 2.5 s before the end: whatever the fenced node still had in flight
  // arrives then.
  const Outcome o = bench(cluster_->hosts_file(), kSmallBank +
                                                      "--policy=drtmh --seconds=6 --lease-ms=1000 "
                                                      "--partition-node=2@1+2500 --link-shell=" +
                                                      cluster_->link_shell());
  expect_survived(o);
  EXPECT_NE(o.output.find("failover: epoch 1 removal by the coordinator"), std::string::npos)
      << o.output;
  // Failed over while the host was still cut off, as after a kill: the
  // survivors' ops toward it did not wait for the network to heal.
  const std::string served = "every partition served by a primary after ";
  const size_t at = o.output.find(served);
  ASSERT_NE(at, std::string::npos) << o.output;
  EXPECT_LT(std::strtod(o.output.c_str() + at + served.size(), nullptr), 2500) << o.output;
  // The cut-off node learned it had lost the cluster and stopped.
  const bool removed = o.output.find("node 2 was removed from the cluster") != std::string::npos;
  const bool lost = o.output.find("lost the coordinator") != std::string::npos;
  EXPECT_TRUE(removed || lost) << o.output;
  expect_nothing_left();
}

TEST_F(NetnsHosts, BadLinkShellAndRefusals) {
  const std::string hosts = cluster_->hosts_file();
  const Outcome none = bench(hosts, kSmallBank + "--seconds=2 --partition-node=2@1+500", 30);
  EXPECT_EQ(none.exit_code, 2) << none.output;
  EXPECT_NE(none.output.find("needs --link-shell=CMD"), std::string::npos) << none.output;
  const Outcome point = bench(hosts, kSmallBank + "--seconds=2 --crash-point=logged:1:10", 30);
  EXPECT_EQ(point.exit_code, 2) << point.output;
  EXPECT_NE(point.output.find("not with --hosts"), std::string::npos) << point.output;
  // The scripts refuse what is not theirs.
  std::string out;
  EXPECT_EQ(NetnsCluster::sh(cluster_->remote_shell() + " otherhost true", &out), 255) << out;
  EXPECT_NE(out.find("is not a host of cluster"), std::string::npos) << out;
  EXPECT_EQ(NetnsCluster::sh(cluster_->link_shell() + " sideways " + cluster_->host(0), &out), 2);
  EXPECT_NE(out.find("expected up or down"), std::string::npos) << out;
}

// The fixture: hosts see each other only on the switch; the remote shell
// runs in the host's namespace; everything goes when the cluster goes,
// and a leftover of the same prefix is removed first.
TEST_F(NetnsHosts, FixtureMakesSeparateHostsAndRemovesEverything) {
  std::string out;
  ASSERT_EQ(NetnsCluster::sh(
                cluster_->remote_shell() + " " + cluster_->host(1) + " ip -o -4 addr show dev eth0",
                &out),
            0)
      << out;
  EXPECT_NE(out.find(cluster_->host_address(1) + "/24"), std::string::npos) << out;
  // A process left running in a host, and a namespace of the prefix that
  // the cluster did not make.
  ASSERT_EQ(NetnsCluster::sh(cluster_->remote_shell() + " " + cluster_->host(0) +
                                 " 'sleep 300 >/dev/null 2>&1 & echo $!'",
                             &out),
            0)
      << out;
  const std::string sleeper = "/proc/" + std::to_string(std::atoi(out.c_str())) + "/stat";
  EXPECT_EQ(cluster_->processes(), 1);
  // The link script: down, then up.
  EXPECT_TRUE(cluster_->link(0, false));
  ASSERT_EQ(NetnsCluster::sh("ip -n " + cluster_->host(0) + " link show eth0", &out), 0);
  EXPECT_NE(out.find("NO-CARRIER"), std::string::npos) << out;
  EXPECT_TRUE(cluster_->link(0, true));
  const std::string prefix = cluster_->prefix();
  ASSERT_EQ(NetnsCluster::sh("ip netns add " + prefix + "-stray", &out), 0) << out;
  cluster_.reset();
  EXPECT_EQ(NetnsCluster::namespaces_with(prefix), 0);
  // Gone, or a zombie waiting for its reaper.
  const std::string stat = slurp(sleeper);
  EXPECT_TRUE(stat.empty() || stat.find(") Z ") != std::string::npos) << stat;
}

}  // namespace
