// Durable failover through drtmx-bench (issue 49, item 2): local clusters of
// drtmx-node processes with --durability=pmem, one node lost during the
// measured run and the survivors going on, durable (txn/failover_durable.h).
//
// - SIGKILL (--kill-node) of each node in turn, SmallBank, scaled-down TPC-C
//   and TPC-E, 3 nodes with replicas 3, the preset families drtmh, farm,
//   fasst and drtmx spread over the runs: the run exits 0, the check holds on
//   the survivors (the killed node's acknowledged commits from its journal
//   beside its pools), no record stays locked, the failover report is there.
// - A node killing itself at points of the commit path (--crash-point with
//   --survive-failures): after locking, after its log reached its first
//   target only (its transaction is then decided from the survivors' rings:
//   committed when every surviving target has its entry, else dropped),
//   after every target, during write-back, in its applier.
// - Two worker threads per node; 4 nodes (partitions keep 2 or 3 copies).
// - SIGSTOP beyond the lease (--stop-node): removed, the survivors go on.
// - What is refused, clearly: --recover with a failover, and restarting a
//   database whose pools record a failover (the survivors' membership).
// Every run is a few seconds; the runs are bounded by `timeout`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <string>

#include "support/bench_run.h"
#include "support/failover_workloads.h"

namespace {

namespace fs = std::filesystem;
using drtmx::bench::testing::Outcome;

Outcome bench(const std::string& args, int limit_s = 150) {
  return drtmx::bench::testing::run(DRTMX_BENCH_PATH, args, limit_s);
}

const std::string& kSmallBank = drtmx::bench::testing::kFailoverSmallBank;
const std::string& kTpcc = drtmx::bench::testing::kFailoverTpcc;
const std::string& kTpce = drtmx::bench::testing::kFailoverTpce;

// The run went on after the failure and its check held.
void expect_survived(const Outcome& r, const std::string& what) {
  EXPECT_EQ(r.exit_code, 0) << what << "\n" << r.output;
  EXPECT_NE(r.output.find("check: ok"), std::string::npos) << what << "\n" << r.output;
  EXPECT_NE(r.output.find("every partition served by a primary after"), std::string::npos)
      << what << "\n"
      << r.output;
  EXPECT_NE(r.output.find("durability: pmem"), std::string::npos) << what << "\n" << r.output;
  EXPECT_EQ(r.output.find("still locked"), std::string::npos) << what << "\n" << r.output;
}

class DurableFailover : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = dir_for(::testing::UnitTest::GetInstance()->current_test_info()); }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string dir_for(const ::testing::TestInfo* info) {
    std::string name = std::string(info->test_suite_name()) + "-" + info->name();
    for (char& c : name) {
      if (c == '/') c = '-';
    }
    const std::string d =
        "/dev/shm/drtmx-durable-failover-" + std::to_string(getpid()) + "-" + name;
    fs::remove_all(d);
    return d;
  }
  std::string pmem() const { return "--durability=pmem --pmem-dir=" + dir_ + " --format "; }
  std::string dir_;
};

// The kill of each node in turn, each workload with another preset family
// per node (one case per node: they run beside other tests).
class DurableFailoverOfEachNode : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    dir_ = "/dev/shm/drtmx-durable-failover-" + std::to_string(getpid()) + "-node" +
           std::to_string(GetParam());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void survives(const std::string& workload, const std::array<const char*, 3>& presets) {
    fs::remove_all(dir_);
    const int node = GetParam();
    const std::string what = std::string("--durability=pmem --policy=") + presets[node] +
                             " --kill-node=" + std::to_string(node) + "@1.5";
    const Outcome r =
        bench(workload + "--durability=pmem --pmem-dir=" + dir_ + " --format " +
              "--policy=" + presets[node] + " --kill-node=" + std::to_string(node) + "@1.5");
    expect_survived(r, what);
    // The killed node's journal, beside its pools, was read.
    EXPECT_NE(r.output.find("killed node's journal: "), std::string::npos) << r.output;
  }
  std::string dir_;
};

TEST_P(DurableFailoverOfEachNode, SmallBankSurvivesIt) {
  survives(kSmallBank, {"drtmh", "farm", "fasst"});
}

TEST_P(DurableFailoverOfEachNode, TpccSurvivesIt) {
  survives(kTpcc, {"fasst", "drtmx", "drtmh"});
}

TEST_P(DurableFailoverOfEachNode, TpceSurvivesIt) {
  survives(kTpce, {"drtmx", "farm", "drtmh"});
}

INSTANTIATE_TEST_SUITE_P(Node, DurableFailoverOfEachNode, ::testing::Values(0, 1, 2));

// Node `c[1]` kills itself at the c[2]-th occurrence of point c[0]; the
// others decide its transactions from their rings and go on.
void dies_at(const std::string& workload, const std::string& pmem,
             const std::vector<std::array<const char*, 3>>& cases) {
  for (const auto& c : cases) {
    const std::string what =
        std::string("--survive-failures --crash-point=") + c[0] + ":" + c[1] + ":" + c[2];
    const Outcome r = bench(workload + pmem + what);
    EXPECT_NE(r.output.find(std::string("crash point ") + c[0] + " reached"), std::string::npos)
        << what << "\n"
        << r.output;
    expect_survived(r, what);
  }
}

TEST_F(DurableFailover, CoordinatorDiesAtCommitPathPoints) {
  dies_at(kSmallBank, pmem(),
          {{"validated", "1", "300"},
           {"logged", "1", "400"},
           {"written-back", "2", "300"},
           {"acknowledged", "0", "300"},
           {"applied", "2", "500"}});
}

// After its log reached its first target only: every surviving target has
// an entry (committed) or some has none (dropped whole, never applied).
TEST_F(DurableFailover, CoordinatorDiesWithItsLogAtSomeTargets) {
  dies_at(kSmallBank, pmem(), {{"log-partial", "2", "501"}, {"log-partial", "1", "77"}});
  dies_at(kTpcc, pmem(), {{"log-partial", "1", "300"}, {"log-partial", "2", "150"}});
}

// Two worker threads per node (a ring per coordinator thread, decided
// apart), and a 4-node cluster whose partitions keep 2 or 3 copies.
TEST_F(DurableFailover, MoreThreadsAndMoreNodes) {
  const std::string tpcc2 =
      "--bench=tpcc --nodes=3 --threads=2 --coroutines=4 --replicas=3 --items=2000 "
      "--customers=60 --seconds=3 --warmup=0.5 ";
  expect_survived(bench(tpcc2 + pmem() + "--kill-node=1@1.5"), "--threads=2 --kill-node=1@1.5");
  fs::remove_all(dir_);
  const std::string four =
      "--bench=smallbank --nodes=4 --coroutines=4 --replicas=3 --accounts=2000 --seconds=3 "
      "--warmup=0.5 ";
  expect_survived(bench(four + pmem() + "--policy=drtmx --kill-node=0@1.5"),
                  "4 nodes, --kill-node=0@1.5");
}

TEST_F(DurableFailover, StoppedBeyondTheLeaseIsRemoved) {
  const Outcome r = bench(kSmallBank + pmem() + "--lease-ms=300 --stop-node=1@1+900");
  expect_survived(r, "--durability=pmem --stop-node=1@1+900");
  // Resumed, node 1 learns its removal and stops; or, stopped inside a
  // one-sided op, a survivor killed it first (r2/shm/peer_fence.h).
  const bool stopped_itself =
      r.output.find("node 1 was removed from the cluster at epoch 1") != std::string::npos;
  const bool killed =
      r.output.find("r2 shm: removed node 1 was stopped inside a one-sided op; killed (SIGKILL)") !=
      std::string::npos;
  EXPECT_TRUE(stopped_itself || killed) << r.output;
}

TEST_F(DurableFailover, RestartAfterAFailoverIsRefusedClearly) {
  expect_survived(bench(kSmallBank + pmem() + "--kill-node=2@1.5"), "--kill-node=2@1.5");
  // The survivors' pools record the membership without node 2.
  const Outcome r = bench(kSmallBank + "--durability=pmem --pmem-dir=" + dir_ + " --recover");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("record a failover at epoch 1 that removed node(s) 2"), std::string::npos)
      << r.output;
  const Outcome both =
      bench(kSmallBank + "--durability=pmem --pmem-dir=" + dir_ + " --recover --kill-node=1@1");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("with --recover: recover the cluster first"), std::string::npos)
      << both.output;
}

}  // namespace
