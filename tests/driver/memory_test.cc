// Know before you run (issue 46): the launcher's estimate of what a
// cluster needs to load refuses what the host cannot hold, naming the need
// and what to change; a node the kernel's OOM killer took is reported as
// such with what it held — unit tests of the checks, a refused drtmx-bench,
// and (root, a memory cgroup) a real OOM kill of a node in a cgroup the
// test makes and removes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "memory_watch.h"
#include "support/bench_run.h"

namespace drtmx::bench {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(CheckFits, ALoadBeyondTheHostIsRefusedNamingTheNeedAndWhatToChange) {
  std::vector<LoadEstimate> nodes(3, LoadEstimate{6 * kGiB, kGiB / 4, kGiB / 8});
  HostMemory host;
  host.available = 16 * kGiB;
  host.total = 24 * kGiB;
  Status s = check_fits(nodes, host, true, "tpcc");
  ASSERT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("needs about 19.1 GiB to load (3 nodes: tables 18 GiB"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("16 GiB available of 24 GiB"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--warehouses-per-node"), std::string::npos) << s.message();
  host.available = 23 * kGiB;
  EXPECT_TRUE(check_fits(nodes, host, true, "tpcc").is_ok());
  // /dev/shm, where a multi-node shm cluster's tables live, too small.
  host.shm_free = 12 * kGiB;
  s = check_fits(nodes, host, true, "tpcc");
  ASSERT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("/dev/shm, which has 12 GiB free"), std::string::npos) << s.message();
  EXPECT_TRUE(check_fits(nodes, host, false, "tpcc").is_ok()) << "not in /dev/shm: no matter";
  // Under a cgroup limit, the limit counts.
  host.cgroup_limit = 8 * kGiB;
  host.cgroup_usage = kGiB;
  s = check_fits(nodes, host, false, "smallbank");
  ASSERT_EQ(s.code(), Code::kResourceExhausted);
  EXPECT_NE(s.message().find("memory cgroup has 7 GiB left of its limit of 8 GiB"),
            std::string::npos)
      << s.message();
}

TEST(MemoryWatch, ANodeTheKernelKilledIsNamedAsSuchWithWhatItHeld) {
  MemoryWatch w("c", 3, /*oom_kills_at_start=*/5);
  w.set_held(2, 3 * kGiB + kGiB / 2);
  HostMemory host;
  host.total = 24 * kGiB;
  const Status killed = unavailable("node 2 was killed by signal 9");
  Status s = w.explain(killed, 6, host);
  EXPECT_EQ(s.message().rfind("node 2 was killed by the kernel for lack of memory", 0), 0u)
      << s.message();
  EXPECT_NE(s.message().find("it held 3.5 GiB"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("the host has 24 GiB"), std::string::npos) << s.message();
  host.cgroup_limit = 2 * kGiB;
  s = w.explain(killed, 6, host);
  EXPECT_NE(s.message().find("memory cgroup allows 2 GiB"), std::string::npos) << s.message();
  // No OOM kill during the run, another signal, another failure: unchanged.
  EXPECT_EQ(w.explain(killed, 5, host).message(), killed.message());
  const Status other = unavailable("node 1 was killed by signal 11");
  EXPECT_EQ(w.explain(other, 9, host).message(), other.message());
  const Status exited = unavailable("node 0 exited with status 1 (its error is printed above)");
  EXPECT_EQ(w.explain(exited, 9, host).message(), exited.message());
  EXPECT_TRUE(w.explain(Status::ok(), 9, host).is_ok());
}

TEST(KnowBeforeYouRun, DrtmxBenchRefusesATpccClusterTheHostCannotHold) {
  // 3 nodes x 2000 warehouses x 3 copies: about 1 TiB to load.
  const testing::Outcome o =
      testing::run(DRTMX_BENCH_PATH, "--bench=tpcc --warehouses-per-node=2000 --seconds=1", 60);
  EXPECT_NE(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("the cluster needs about"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("--warehouses-per-node"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("[1 s]"), std::string::npos) << "nothing ran";
}

// A memory cgroup of the test's own (v1 or v2), removed on every exit path.
class Cgroup {
 public:
  explicit Cgroup(uint64_t limit) {
    const std::string name = "drtmx-oom-test-" + std::to_string(getpid());
    if (std::filesystem::exists("/sys/fs/cgroup/memory/cgroup.procs")) {
      dir_ = "/sys/fs/cgroup/memory/" + name;
      limit_file_ = "memory.limit_in_bytes";
    } else if (std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers")) {
      dir_ = "/sys/fs/cgroup/" + name;
      limit_file_ = "memory.max";
    } else {
      return;
    }
    std::error_code ec;
    if (!std::filesystem::create_directory(dir_, ec)) {
      dir_.clear();
      return;
    }
    std::ofstream(dir_ + "/" + limit_file_) << limit;
    std::ifstream in(dir_ + "/" + limit_file_);
    uint64_t got = 0;
    in >> got;
    if (got == 0 || got > limit + 4096) {
      std::filesystem::remove(dir_, ec);
      dir_.clear();
    }
  }
  ~Cgroup() {
    if (dir_.empty()) return;
    std::error_code ec;
    // Its processes ended with the run (the run command waited for them).
    std::filesystem::remove(dir_, ec);
  }
  bool ok() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_, limit_file_;
};

// The launcher and its nodes in a memory cgroup the test makes (root).
testing::Outcome run_in_cgroup(const Cgroup& cg, const std::string& args, int limit_s) {
  const std::string cmd = "sh -c 'echo $$ > " + cg.dir() + "/cgroup.procs && exec " +
                          DRTMX_BENCH_PATH + " " + args + "'";
  return testing::run("", cmd, limit_s);
}

TEST(KnowBeforeYouRun, ALoadBeyondTheCgroupsLimitIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a memory cgroup)";
  Cgroup cg(700ull << 20);
  if (!cg.ok()) GTEST_SKIP() << "no memory cgroup controller to make one in";
  // TPC-C's three warehouses take about 1.5 GiB: refused before anything starts.
  const testing::Outcome o = run_in_cgroup(cg, "--bench=tpcc --seconds=3", 60);
  EXPECT_NE(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("memory cgroup has"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("left of its limit of 700 MiB"), std::string::npos) << o.output;
}

TEST(KnowBeforeYouRun, ANodeTheKernelKillsForMemoryIsReportedAsSuch) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (a memory cgroup)";
  Cgroup cg(600ull << 20);
  if (!cg.ok()) GTEST_SKIP() << "no memory cgroup controller to make one in";
  // A small TPC-C load fits; the run's inserts (tens of MB a second) grow
  // past the 600 MiB limit within seconds, and the kernel kills the
  // largest process, a node; the launcher says so.
  const testing::Outcome o =
      run_in_cgroup(cg, "--bench=tpcc --items=2000 --customers=60 --seconds=90", 150);
  EXPECT_NE(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("was killed by the kernel for lack of memory"), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("it held"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("memory cgroup allows 600 MiB"), std::string::npos) << o.output;
}

}  // namespace
}  // namespace drtmx::bench
