// drtmx-bench end to end: local clusters of 3 drtmx-node processes on shm
// run SmallBank under high contention with read-only audits, for every
// protocol preset, with and without injected fabric delay. Each run must
// pass SmallBank's oracle (money, replication, audits) and report what the
// issue asks for; bad command lines and failing nodes give clear errors and
// leave no processes or shared-memory segments behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/bench_run.h"
#include "support/test_cluster_key.h"

namespace {

using drtmx::bench::testing::json_number;
using drtmx::bench::testing::Outcome;
using drtmx::bench::testing::slurp;

Outcome run(const std::string& exe, const std::string& args, int limit_s = 120) {
  return drtmx::bench::testing::run(exe, args, limit_s);
}

std::string tmp(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("drtmx_bench_test_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// Shared-memory segments whose name holds `cluster`.
int segments_of(const std::string& cluster) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    n += e.path().filename().string().find(cluster) != std::string::npos;
  }
  return n;
}

// A short high-contention SmallBank run on 3 node processes with audits;
// `min_tps`: what the run must commit per second at least (it ran at all).
void stress(const std::string& policy, const std::string& extra, double min_tps = 100) {
  const std::string json = tmp(policy + ".json");
  const std::string cluster = "sbtest" + std::to_string(getpid()) + policy;
  const Outcome o =
      run(DRTMX_BENCH_PATH, "--bench=smallbank --nodes=3 --threads=1 --coroutines=8 --policy=" +
                                policy + " --accounts=64 --hot-pct=10 --audit-pct=20 " +
                                "--audit-group=4 --seconds=1 --warmup=0.3 --cluster=" + cluster +
                                " --json=" + json + " " + extra);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("check: ok"), std::string::npos) << o.output;
  const std::string j = slurp(json);
  std::remove(json.c_str());
  EXPECT_NE(j.find("\"check\": \"ok\""), std::string::npos) << j;
  EXPECT_GT(json_number(j, "tps"), min_tps) << j;
  // Audits ran (and, per the check, all saw the same total); transfers
  // committed; contention made some transactions abort and retry.
  EXPECT_GT(json_number(j, "Audit"), 0) << j;
  EXPECT_GT(json_number(j, "SendPayment"), 0) << j;
  EXPECT_GT(json_number(j, "lock held") + json_number(j, "version changed"), 0) << j;
  for (const char* k : {"abort_rate", "p50_us", "p99_us", "per_type", "config"}) {
    EXPECT_NE(j.find(std::string("\"") + k + "\""), std::string::npos) << k << " in " << j;
  }
  // Traffic per committed transaction: replicas 3, so a read-write one
  // logs to 2 backups and the read-only audits and balances to none.
  const double entries = json_number(j, "log_entries_per_txn");
  EXPECT_GT(entries, 0.2) << j;
  EXPECT_LE(entries, 2.01) << j;
  EXPECT_GT(json_number(j, "log_bytes_per_txn"), 8 * entries) << j;
  EXPECT_GT(json_number(j, "ops_per_txn") + json_number(j, "messages_per_txn"), 0) << j;
  EXPECT_GT(json_number(j, "cpu_us_per_txn"), 0) << j;  // node processes: each measures its own
  EXPECT_EQ(segments_of(cluster), 0);
}

TEST(DrtmxBench, SmallBankStressDrtmh) {
  stress("drtmh", "");
}
// MVCC: the audits and balances are snapshots (declared read-only): none
// aborts, every audit sees the constant total (the check), the report has
// the per-type aborts, the read-only types' lock waits and the version store.
void snapshots_never_abort(const std::string& policy) {
  const std::string json = tmp(policy + "-snap.json");
  const Outcome o =
      run(DRTMX_BENCH_PATH,
          "--bench=smallbank --nodes=3 --coroutines=8 --policy=" + policy +
              " --accounts=64 --hot-pct=10 --audit-pct=20 --audit-group=4 --seconds=1 "
              "--warmup=0.3 --json=" +
              json);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const std::string j = slurp(json);
  std::remove(json.c_str());
  EXPECT_NE(j.find("\"check\": \"ok\""), std::string::npos) << j;
  const size_t pta = j.find("\"per_type_aborts\"");
  ASSERT_NE(pta, std::string::npos) << j;
  const std::string aborts = j.substr(pta, j.find('}', pta) - pta);
  EXPECT_EQ(json_number(aborts, "Audit"), 0) << aborts;
  EXPECT_EQ(json_number(aborts, "Balance"), 0) << aborts;
  EXPECT_GT(json_number(aborts, "SendPayment") + json_number(aborts, "Amalgamate") +
                json_number(aborts, "WriteCheck"),
            0)
      << aborts;  // the writers still conflict (the hot accounts)
  const size_t wait = j.find("\"ro_lock_wait\"");
  ASSERT_NE(wait, std::string::npos) << j;
  const std::string waits = j.substr(wait, j.find("\"version_store\"") - wait);
  EXPECT_NE(waits.find("\"Audit\""), std::string::npos) << waits;
  EXPECT_NE(waits.find("\"Balance\""), std::string::npos) << waits;
  EXPECT_EQ(waits.find("\"SendPayment\""), std::string::npos) << waits;
  EXPECT_GT(json_number(j, "pushed"), 0) << j;
  EXPECT_GT(json_number(j, "capacity"), 0) << j;
}

TEST(DrtmxBench, SmallBankStressDrtmxSnapshotsNeverAbort) {
  snapshots_never_abort("drtmx");
}
// On shm a snapshot row of another node is read one-sided (the version in
// place) when the coordinator knows the record's address, and one of its
// own node in place; one its location cache lacks is
// looked up one-sided first (filling the cache), as an Execute read would,
// not sent to the DEP_READ RPC. 20 000 accounts in half a second: most
// Balance rows are first reads of their account at the node
// (the RPC took 12 % of them before the lookup). No audits: their hot
// accounts are locked most of the time, and such rows go to the RPC.
TEST(DrtmxBench, SnapshotRowsTheCacheLacksAreReadOneSided) {
  const std::string json = tmp("snap-cold.json");
  const Outcome o = run(DRTMX_BENCH_PATH,
                        "--bench=smallbank --policy=drtmx --accounts=20000 "
                        "--seconds=0.5 --warmup=0.2 --json=" +
                            json);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const std::string j = slurp(json);
  std::remove(json.c_str());
  EXPECT_NE(j.find("\"check\": \"ok\""), std::string::npos) << j;
  const double all = json_number(j, "snapshot_reads");
  const double onesided = json_number(j, "snapshot_reads_onesided");
  const double direct = json_number(j, "snapshot_reads_direct");
  ASSERT_GT(all, 1000) << j;
  EXPECT_GT(onesided + direct, 0.97 * all) << j;
  // Each node is primary of a third of the accounts: its own rows are read
  // in place (snapshot_direct.cc), the others' one-sided.
  EXPECT_GT(direct, 0.2 * all) << j;
  EXPECT_GT(onesided, 0.4 * all) << j;
}

// The same under the centralized baseline (GTS: snapshots at the oracle's
// StableTS).
TEST(DrtmxBench, SmallBankStressGtsSnapshotsNeverAbort) {
  snapshots_never_abort("drtmx-gts");
}

// --mvcc on every other preset (their Execute paths, MVCC's two-sided
// Validate and Commit): audits are snapshots that never abort and always
// see the constant total, under DST and under GTS.
void mvcc_on_every_preset(const std::string& mvcc) {
  const std::string json = tmp("every-" + mvcc + ".json");
  const Outcome o = run(DRTMX_BENCH_PATH,
                        "--bench=smallbank --policy=farm,drtm-r,fasst,drtmh --mvcc=" + mvcc +
                            " --accounts=64 --hot-pct=10 --audit-pct=20 --audit-group=4 "
                            "--seconds=0.5 --warmup=0.2 --json=" +
                            json,
                        240);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const std::string j = slurp(json);
  std::remove(json.c_str());
  size_t runs = 0;
  for (size_t at = 0; (at = j.find("\"check\": \"ok\"", at)) != std::string::npos; ++at) ++runs;
  EXPECT_EQ(runs, 4u) << j;
  size_t seen = 0;
  for (size_t at = 0; (at = j.find("\"per_type_aborts\"", at)) != std::string::npos; ++at) {
    const std::string aborts = j.substr(at, j.find('}', at) - at);
    EXPECT_EQ(json_number(aborts, "Audit"), 0) << aborts;
    EXPECT_EQ(json_number(aborts, "Balance"), 0) << aborts;
    ++seen;
  }
  EXPECT_EQ(seen, 4u) << j;
  // Each run's header names the policy it ran: every one with this MVCC.
  size_t headers = 0;
  for (size_t at = 0; (at = o.output.find("MVCC=" + mvcc + ")", at)) != std::string::npos; ++at) {
    ++headers;
  }
  EXPECT_EQ(headers, 4u) << o.output;
}
TEST(DrtmxBench, DstOnEveryPresetSnapshotsNeverAbort) {
  mvcc_on_every_preset("dst");
}
TEST(DrtmxBench, GtsOnEveryPresetSnapshotsNeverAbort) {
  mvcc_on_every_preset("gts");
}

TEST(DrtmxBench, SmallBankStressDrtmR) {
  stress("drtm-r", "");
}
TEST(DrtmxBench, SmallBankStressFarm) {
  stress("farm", "");
}
TEST(DrtmxBench, SmallBankStressFasst) {
  stress("fasst", "");
}
TEST(DrtmxBench, SmallBankStressWithFabricDelayDrtmh) {
  stress("drtmh", "--fabric-delay-ns=3000");
}
TEST(DrtmxBench, SmallBankStressWithFabricDelayFasst) {
  stress("fasst", "--fabric-delay-ns=3000");
}
TEST(DrtmxBench, SmallBankStressPerPhaseOverride) {
  // Hybrid execution with RPC validation and commit: a combination no
  // preset has.
  stress("drtmh", "--phase=lock=rpc --phase=commit=rpc --phase=validate=rpc");
}

TEST(DrtmxBench, SmallBankPassiveRpcCommitsLandBeforeTheCheck) {
  // Commit by RPC with passive ACK, each message visible 2 ms after it was
  // sent: the last commits are still on their way when the clients stop.
  // The check must see them applied at their primaries (it failed on the
  // money sum when finish() did not wait for the acknowledgements).
  // (Every message 2 ms late: 90 committed/s on a loaded machine, 150+ on
  // a quiet one; the point is the check.)
  stress("drtmh", "--phase=commit=rpc --fabric-delay-ns=2000000", 30);
}

TEST(DrtmxBench, SmallBankInProcessTwoThreadsPerNode) {
  const std::string json = tmp("inproc.json");
  const Outcome o = run(DRTMX_BENCH_PATH,
                        "--nodes=3 --threads=2 --coroutines=4 --accounts=500 --audit-pct=10 "
                        "--inprocess --seconds=1 --warmup=0.2 --json=" +
                            json);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const std::string j = slurp(json);
  std::remove(json.c_str());
  EXPECT_NE(j.find("\"check\": \"ok\""), std::string::npos) << j;
  EXPECT_NE(j.find("partitions=6"), std::string::npos) << j;
  // One process for every node: no CPU per node to tell apart.
  EXPECT_EQ(json_number(j, "cpu_us_per_txn"), -1) << j;
  EXPECT_GT(json_number(j, "log_entries_per_txn"), 0) << j;
}

// --min-versions reaches every node process: with tables this small every
// version store and every lane is at its floor, so doubling the floor
// doubles the capacity the report adds up.
TEST(DrtmxBench, MinVersionsSizesEveryVersionStoreAndLane) {
  auto capacity = [](const std::string& out) -> uint64_t {
    const std::string tag = " capacity (";
    const size_t at = out.find(tag);
    if (at == std::string::npos || out.find("version store: ") == std::string::npos) return 0;
    size_t from = out.rfind(" of ", at);
    return from == std::string::npos ? 0 : std::stoull(out.substr(from + 4, at - from - 4));
  };
  const std::string base = "--policy=drtmx --accounts=300 --seconds=0.3 --warmup=0.1";
  const Outcome small = run(DRTMX_BENCH_PATH, base + " --min-versions=64");
  const Outcome large = run(DRTMX_BENCH_PATH, base + " --min-versions=128");
  ASSERT_EQ(small.exit_code, 0) << small.output;
  ASSERT_EQ(large.exit_code, 0) << large.output;
  const uint64_t a = capacity(small.output), b = capacity(large.output);
  ASSERT_GT(a, 0u) << small.output;
  EXPECT_EQ(b, 2 * a) << small.output << large.output;
}

TEST(DrtmxBench, AllPresetsInOneTable) {
  const std::string json = tmp("all.json");
  const Outcome o =
      run(DRTMX_BENCH_PATH,
          "--policy=all --accounts=1000 --seconds=0.5 --warmup=0.2 --json=" + json, 240);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const size_t table = o.output.find("policy     committed/s");
  ASSERT_NE(table, std::string::npos) << o.output;
  for (const char* p : {"drtmh", "drtm-r", "farm", "fasst", "drtmx"}) {
    EXPECT_NE(o.output.find(std::string("\n") + p, table), std::string::npos) << p << o.output;
  }
  const std::string j = slurp(json);
  std::remove(json.c_str());
  EXPECT_NE(j.find("\"runs\": ["), std::string::npos) << j;
  size_t runs = 0;
  for (size_t at = 0; (at = j.find("\"check\": \"ok\"", at)) != std::string::npos; ++at) ++runs;
  EXPECT_EQ(runs, 5u) << j;
}

TEST(DrtmxBench, ConfigFileSetsOptions) {
  const std::string cfg = tmp("run.cfg");
  std::ofstream(cfg) << "# a run\nnodes = 2\npolicy = fasst\naccounts = 300\nseconds = 0.5\n"
                        "warmup = 0.1\nreplicas = 2\n";
  const Outcome o = run(DRTMX_BENCH_PATH, "--config=" + cfg);
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("nodes=2"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("policy=fasst"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("replicas=2"), std::string::npos) << o.output;
  std::ofstream(cfg) << "nodes = 2\ncoroutinez = 4\n";
  const Outcome bad = run(DRTMX_BENCH_PATH, "--config=" + cfg);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("coroutinez"), std::string::npos) << bad.output;
  std::remove(cfg.c_str());
}

TEST(DrtmxBench, BadCommandLinesAreRefusedWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"--bench=tpcd", "--bench=tpcd: unknown workload"},
      {"--policy=drtmz", "drtmz"},
      {"--policy=drtmh,", "empty preset"},
      {"--replicas=4", "--replicas=4"},
      {"--nodes=2 --replicas=3", "--replicas=3"},
      {"--coroutines=0", "--coroutines must be"},
      {"--min-versions=10", "--min-versions must be"},
      {"--versions-pct=0", "--versions-pct must be"},
      {"--seconds=0", "--seconds must be"},
      {"--local-shortcuts=maybe", "--local-shortcuts=maybe: expected on or off"},
      {"--phase=lock", "expected KEY=VALUE"},
      {"--phase=lock=maybe", "maybe"},
      {"--accounts=-5", "--accounts"},
      {"--mix=1,2,3", "--mix=1,2,3"},
      {"--fabric=tcp", "tcp"},
      {"--nodes=3 --bogus=1", "bogus"},
      {"--config=/nonexistent/drtmx.cfg", "cannot open"},
      {"--node=1 --coordinator=127.0.0.1:1", "use drtmx-node"},
  };
  for (const auto& [args, msg] : cases) {
    const Outcome o = run(DRTMX_BENCH_PATH, args);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.output;
    EXPECT_NE(o.output.find(msg), std::string::npos) << args << "\n" << o.output;
  }
  const Outcome n = run(DRTMX_NODE_PATH, "--nodes=3");
  EXPECT_EQ(n.exit_code, 2) << n.output;
  EXPECT_NE(n.output.find("--node=N and --coordinator"), std::string::npos) << n.output;
  const Outcome h = run(DRTMX_NODE_PATH, "--node=1 --coordinator=127.0.0.1:1 --host-coordinator");
  EXPECT_EQ(h.exit_code, 2) << h.output;
  EXPECT_NE(h.output.find("--host-coordinator needs --node=0"), std::string::npos) << h.output;
}

TEST(DrtmxBench, AFailingNodeFailsTheRunAndLeavesNothingBehind) {
  // No RDMA device here: every node fails at start; the launcher must say
  // why (naming the node and the shm fabric) and clean up.
  const std::string cluster = "sbfail" + std::to_string(getpid());
  const Outcome o =
      run(DRTMX_BENCH_PATH, "--fabric=verbs --nodes=3 --seconds=1 --cluster=" + cluster, 90);
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_NE(o.output.find("node"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("--fabric=shm"), std::string::npos) << o.output;
  EXPECT_EQ(segments_of(cluster), 0);
  // "[-]-cluster" matches the nodes' "--cluster=..." but not this shell's
  // own command line.
  const Outcome ps = run("pgrep", "-f '[-]-cluster=" + cluster + "'");
  EXPECT_NE(ps.exit_code, 0) << "node processes left behind:\n" << ps.output;
}

TEST(DrtmxBench, AKilledNodeStopsTheRunWithItsName) {
  // Node 1 dies by SIGKILL mid-run: the launcher must notice, stop the
  // others, name the node and exit non-zero, and remove every segment.
  const std::string cluster = "sbkill" + std::to_string(getpid());
  const std::string script = tmp("kill.sh");
  std::ofstream(script) << DRTMX_BENCH_PATH << " --seconds=20 --warmup=0.2 --accounts=1000"
                        << " --cluster=" << cluster << " & b=$!\n"
                        << "for i in $(seq 1 200); do\n"
                        << "  pkill -9 -f '[-]-cluster=" << cluster << " .*--node=1 ' && break\n"
                        << "  sleep 0.05\n"
                        << "done\n"
                        << "wait $b\n";
  const Outcome o = run("bash", script, 60);
  std::remove(script.c_str());
  EXPECT_EQ(o.exit_code, 1) << o.output;
  EXPECT_NE(o.output.find("node 1 was killed by signal 9"), std::string::npos) << o.output;
  EXPECT_EQ(segments_of(cluster), 0);
}

TEST(DrtmxBench, MultiHostStyleStartWithHostCoordinator) {
  // The way a multi-host cluster starts: each node by hand, node 0 serving
  // the coordinator (here all on loopback).
  const std::string cluster = "sbmh" + std::to_string(getpid());
  const std::string port = std::to_string(20000 + getpid() % 20000);
  const std::string common =
      "--nodes=2 --accounts=200 --seconds=0.5 --warmup=0.1 --cluster=" + cluster +
      " --coordinator=127.0.0.1:" + port + " --cluster-key-file=" + drtmx::testing::test_key_file();
  const std::string cmd = std::string(DRTMX_NODE_PATH) + " --node=1 " + common +
                          " >/dev/null 2>&1 & " + DRTMX_NODE_PATH + " --node=0 " + common +
                          " --host-coordinator; st=$?; wait; exit $st";
  const Outcome o = run("bash -c", "'" + cmd + "'");
  EXPECT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("check: ok"), std::string::npos) << o.output;
}

}  // namespace
