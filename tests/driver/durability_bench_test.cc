// Durability through drtmx-bench (--durability=pmem): local clusters of 3
// drtmx-node processes, replicas 3, pools under /dev/shm.
//
// Crash/recover cycles: a run is crashed — every node SIGKILLed during the
// measured run (--crash-at), or one node killing itself at a crash point
// of the commit path (--crash-point=NAME:NODE:HIT, every name at least
// once, on several nodes, hits and seeds) and the launcher killing the
// rest — and a --recover run restarts from the pools: its recovery check
// must pass (every acknowledged commit in the journals present on every
// copy, every in-flight transaction whole or absent, the workload's check
// with the journals' sums), then it runs and passes the workload's check
// again. SmallBank and (scaled-down) TPC-C; two cycles in a row, with rings
// small enough to fold; TPC-C's recovered runs never insert a HISTORY key
// that exists.
//
// Bad pools: a missing directory or pool file, pools of another
// configuration (coroutines, nodes, scale), a truncated pool, corrupted
// header bytes, an existing database without --format, a database whose
// load never completed — each refused with an error naming the file or
// option, and the files are left exactly as they were (the database still
// recovers afterwards).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

#include "support/bench_run.h"

namespace {

using drtmx::bench::testing::json_number;
using drtmx::bench::testing::Outcome;
using drtmx::bench::testing::slurp;
namespace fs = std::filesystem;

Outcome bench(const std::string& args, int limit_s = 180) {
  return drtmx::bench::testing::run(DRTMX_BENCH_PATH, args, limit_s);
}

// The small SmallBank and TPC-C of these runs (TPC-C scaled down as in
// tpcc_bench_test).
const std::string kSmallBank =
    "--bench=smallbank --nodes=3 --coroutines=4 --replicas=3 "
    "--accounts=200 --hot-pct=10 --audit-pct=10 ";
const std::string kTpcc =
    "--bench=tpcc --nodes=3 --coroutines=4 --replicas=3 --items=2000 "
    "--customers=60 ";

// The JSON object after "key" (up to its closing brace; no nesting inside).
std::string object_of(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\"");
  if (at == std::string::npos) return "";
  return json.substr(at, json.find('}', at) - at + 1);
}

// Every file of `dir` by name, with its contents.
// A file's size and its pages that hold anything, with their offsets:
// pools of growing tables are sparse files of terabytes, read by their
// data ranges (SEEK_DATA / SEEK_HOLE).
std::string sparse_contents(const std::string& path) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return out;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  out = std::to_string(size) + ":";
  for (off_t at = ::lseek(fd, 0, SEEK_DATA); at >= 0 && at < size;) {
    off_t end = ::lseek(fd, at, SEEK_HOLE);
    if (end < 0) end = size;
    std::string chunk(static_cast<size_t>(end - at), '\0');
    if (::pread(fd, chunk.data(), chunk.size(), at) != static_cast<ssize_t>(chunk.size())) break;
    // Page by page, the pages that hold anything (a refused start may
    // allocate blocks it never writes: zeros, as the hole was).
    for (size_t p = 0; p < chunk.size(); p += 4096) {
      const size_t n = std::min<size_t>(4096, chunk.size() - p);
      if (chunk.find_first_not_of('\0', p) >= p + n) continue;
      out += std::to_string(at + static_cast<off_t>(p)) + ":" + chunk.substr(p, n);
    }
    at = ::lseek(fd, end, SEEK_DATA);
  }
  ::close(fd);
  return out;
}

std::map<std::string, std::string> files_of(const std::string& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    out[e.path().filename()] = sparse_contents(e.path());
  }
  return out;
}

// Copies a database directory keeping its files sparse.
void copy_database(const std::string& from, const std::string& to) {
  ASSERT_EQ(std::system(("cp -a --sparse=always " + from + " " + to).c_str()), 0);
}

class DurableBench : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = "/dev/shm/drtmx-durability-test-" + std::to_string(getpid()) + "-" + info->name();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string pmem(const std::string& dir = "") const {
    return "--durability=pmem --pmem-dir=" + (dir.empty() ? dir_ : dir) + " ";
  }
  std::string json_path(const std::string& name) const { return dir_ + "-" + name + ".json"; }

  // A run that crashes on purpose: exits 0 with the launcher's crash line.
  void crash(const std::string& workload, const std::string& args, const std::string& dir = "") {
    const Outcome o = bench(workload + pmem(dir) + args);
    ASSERT_EQ(o.exit_code, 0) << args << "\n" << o.output;
    EXPECT_NE(o.output.find("no clean shutdown"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("Restart with --recover"), std::string::npos) << o.output;
    if (args.find("--crash-point=") != std::string::npos) {
      EXPECT_NE(o.output.find("killed itself at crash point"), std::string::npos) << o.output;
    } else {
      EXPECT_NE(o.output.find("SIGKILLed all 3 node processes"), std::string::npos) << o.output;
    }
  }

  // A --recover run: the recovery check and the run's check pass; returns
  // the JSON report.
  std::string recover(const std::string& workload, const std::string& args,
                      const std::string& dir = "") {
    const std::string json = json_path("recover");
    const Outcome o = bench(workload + pmem(dir) +
                            "--recover --seconds=0.5 --warmup=0.1 --json=" + json + " " + args);
    EXPECT_EQ(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find("recovery check: ok"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("no partial transaction"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("  recovery: serving again after"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("  check: ok"), std::string::npos) << o.output;
    const std::string j = slurp(json);
    fs::remove(json);
    const std::string rc = object_of(j, "recovery_check");
    EXPECT_NE(rc.find("\"status\": \"ok\""), std::string::npos) << j;
    EXPECT_GT(json_number(rc, "acknowledged_verified") + json_number(rc, "earlier_commits"), 0)
        << rc;
    const std::string r = object_of(j, "recovery");
    EXPECT_GE(json_number(r, "serve_ms"), 0) << j;
    EXPECT_GT(json_number(r, "records_rebuilt"), 0) << r;
    EXPECT_EQ(json_number(j, "duplicate insert"), 0) << j;  // no key sequence starts over
    EXPECT_NE(j.find("\"check\": \"ok\""), std::string::npos) << j;
    return j;
  }

  std::string dir_;
};

// The line a durable run starts with says what the pool directory is: in
// memory for /dev/shm, a disk with the msync's cost and what to use instead
// for a directory on a block-device file system.
TEST_F(DurableBench, TheRunSaysWhatItsPoolDirectoryIs) {
  Outcome o = bench(kSmallBank + pmem() + "--seconds=0.3 --warmup=0.1");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_EQ(
      o.output.rfind("drtmx-bench: durability: --pmem-dir=" + dir_ + " is in memory (tmpfs", 0), 0u)
      << o.output;
  // A disk: the test's working directory (the build tree), unless that is
  // in memory too.
  const std::string disk =
      fs::current_path().string() + "/durability-disk-" + std::to_string(getpid());
  struct statfs sfs {};
  ASSERT_EQ(statfs(fs::current_path().c_str(), &sfs), 0);
  if (static_cast<uint64_t>(sfs.f_type) == TMPFS_MAGIC) GTEST_SKIP() << "no disk directory here";
  o = bench(kSmallBank + pmem(disk) + "--format --seconds=0.3 --warmup=0.1");
  fs::remove_all(disk);
  ASSERT_EQ(o.exit_code, 0) << o.output;
  const std::string first = o.output.substr(0, o.output.find('\n'));
  EXPECT_EQ(
      first.rfind("drtmx-bench: durability: --pmem-dir=" + disk + " is on a disk file system", 0),
      0u)
      << o.output;
  EXPECT_NE(first.find("every persist is an msync"), std::string::npos) << first;
  EXPECT_NE(first.find("DAX"), std::string::npos) << first;
  EXPECT_NE(o.output.find("(msync: a disk, every persist a system call"), std::string::npos)
      << o.output;
}

// Two cycles in a row with rings of 16 KiB per coroutine (folded many
// times): the sums carried in the journals keep SmallBank's money check
// exact across both crashes.
TEST_F(DurableBench, SmallBankCrashAtTwiceInARow) {
  crash(kSmallBank, "--journal-kb=16 --seconds=1.5 --warmup=0.2 --crash-at=0.8");
  ASSERT_FALSE(HasFatalFailure());
  // The first restart checks, runs, and is crashed in turn.
  const Outcome again =
      bench(kSmallBank + pmem() + "--recover --seconds=1.5 --warmup=0.2 --crash-at=0.7");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("recovery check: ok"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("SIGKILLed all 3 node processes"), std::string::npos) << again.output;
  const std::string j = recover(kSmallBank, "--seed=7");
  const std::string rc = object_of(j, "recovery_check");
  EXPECT_GT(json_number(rc, "earlier_commits"), 0) << rc;  // folded rings and the first restart
  EXPECT_GT(json_number(j, "journal_records"), 0) << j;
  EXPECT_NE(j.find("\"nodes\": [\"memfs\", \"memfs\", \"memfs\"]"), std::string::npos) << j;
}

// The first half of the commit path's crash points, on SmallBank.
TEST_F(DurableBench, SmallBankCrashPoints) {
  const std::pair<const char*, const char*> cases[] = {
      {"validated:1:700", "--seed=3"},
      {"log-partial:2:1500", "--seed=4"},
      {"logged:0:900", "--seed=5 --policy=drtmx"},
      {"acknowledged:1:2500", "--seed=6 --journal-kb=32"},
  };
  for (const auto& [point, extra] : cases) {
    SCOPED_TRACE(point);
    fs::remove_all(dir_);
    crash(kSmallBank, std::string("--seconds=8 --warmup=0.2 --crash-point=") + point + " " + extra);
    if (HasFatalFailure()) return;
    const std::string policy =
        std::string(extra).find("drtmx") != std::string::npos ? "--policy=drtmx" : "";
    const std::string j = recover(kSmallBank, policy);
    if (std::string(point).rfind("acknowledged", 0) == 0) {
      // Acknowledged, not written back: its primaries got no log entry
      // (one-sided commit); the restart repairs them from the backups.
      EXPECT_GT(json_number(object_of(j, "recovery"), "shipped_replayed"), 0) << j;
    }
  }
}

// The second half of the commit path and the appliers, and --crash-at, on
// TPC-C (New-Order, Payment, Delivery: inserts, updates and deletes); the
// restarted runs rebuild the HISTORY key sequences and Delivery bounds.
TEST_F(DurableBench, TpccCrashPointsAndCrashAt) {
  const char* cases[] = {
      "--crash-point=written-back:0:400 --seed=11",
      "--crash-point=committed:2:700 --seed=12",
      "--crash-point=applied:1:900 --seed=13",
      "--crash-at=0.6 --seed=14",
  };
  for (const char* c : cases) {
    SCOPED_TRACE(c);
    fs::remove_all(dir_);
    crash(kTpcc, std::string("--seconds=8 --warmup=0.2 ") + c);
    if (HasFatalFailure()) return;
    const std::string j = recover(kTpcc, "");
    EXPECT_GT(json_number(j, "Payment"), 0) << j;
  }
}

// A database is refused, by name, whenever its files do not fit the run —
// and none of its files changes; then it still recovers.
TEST_F(DurableBench, BadPoolsAreRefusedByNameAndChangeNothing) {
  crash(kSmallBank, "--seconds=1 --warmup=0.2 --crash-at=0.3");
  ASSERT_FALSE(HasFatalFailure());
  const std::map<std::string, std::string> before = files_of(dir_);
  ASSERT_GT(before.size(), 10u);
  const std::string copy = dir_ + "-copy";
  // Runs `args` against a copy of the database changed by `damage`:
  // refused with `message`, and the copy's files unchanged by the attempt.
  auto refused = [&](const std::string& what, const std::string& args, const std::string& message,
                     const std::function<void()>& damage) {
    SCOPED_TRACE(what);
    fs::remove_all(copy);
    copy_database(dir_, copy);
    if (damage) damage();
    const std::map<std::string, std::string> damaged = files_of(copy);
    const Outcome o = bench(args, 90);
    EXPECT_NE(o.exit_code, 0) << o.output;
    EXPECT_NE(o.output.find(message), std::string::npos) << "expected: " << message << "\n"
                                                         << o.output;
    EXPECT_TRUE(files_of(copy) == damaged) << "a refused run changed the files";
    fs::remove_all(copy);
  };
  const std::string rec = kSmallBank + pmem(copy) + "--recover --seconds=0.3 --warmup=0.1 ";
  refused("missing directory", kSmallBank + pmem(copy + "/nowhere") + "--recover --seconds=0.3",
          "nothing to recover", nullptr);
  refused("missing pool", rec, copy + "/node1.region1025.pool does not exist",
          [&] { fs::remove(copy + "/node1.region1025.pool"); });
  refused("missing journal", rec, copy + "/node2.journal.pool does not exist",
          [&] { fs::remove(copy + "/node2.journal.pool"); });
  refused("other coroutines",
          "--bench=smallbank --nodes=3 --coroutines=2 --replicas=3 --accounts=200 " + pmem(copy) +
              "--recover --seconds=0.3",
          "--coroutines=4 --replicas=3 (node ", nullptr);
  refused("other node count",
          "--bench=smallbank --nodes=2 --coroutines=4 --replicas=2 --accounts=200 " + pmem(copy) +
              "--recover --seconds=0.3",
          "journal.pool was written by a cluster of --bench=smallbank --nodes=3", nullptr);
  refused("other scale",
          "--bench=smallbank --nodes=3 --coroutines=4 --replicas=3 --accounts=300 " + pmem(copy) +
              "--recover --seconds=0.3",
          "another cluster or configuration", nullptr);
  refused("truncated pool", rec, copy + "/node2.region1001.pool is", [&] {
    fs::resize_file(copy + "/node2.region1001.pool",
                    fs::file_size(copy + "/node2.region1001.pool") / 2);
  });
  refused("corrupted pool header", rec, copy + "/node0.state.pool: corrupted header", [&] {
    std::fstream f(copy + "/node0.state.pool", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(24);
    f.write("\x5a\xa5\x5a\xa5", 4);
  });
  refused("corrupted journal header", rec, copy + "/node1.journal.pool: corrupted header", [&] {
    std::fstream f(copy + "/node1.journal.pool", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096 + 20);
    f.write("\x5a\xa5\x5a\xa5", 4);
  });
  refused("existing database without --format",
          kSmallBank + pmem(copy) + "--seconds=0.3 --warmup=0.1", "already exists", nullptr);
  // The original was never touched; it recovers and runs.
  EXPECT_TRUE(files_of(dir_) == before);
  recover(kSmallBank, "");
  // --format replaces it: a new database.
  const Outcome f = bench(kSmallBank + pmem() + "--format --seconds=0.3 --warmup=0.1");
  EXPECT_EQ(f.exit_code, 0) << f.output;
  EXPECT_NE(f.output.find("check: ok"), std::string::npos) << f.output;
}

// A node that dies before its load was recorded leaves a database that no
// restart accepts.
TEST_F(DurableBench, RecoverOfAnIncompleteLoadIsRefused) {
  crash(kSmallBank, "--seconds=1 --warmup=0.1 --crash-point=load:1:1");
  ASSERT_FALSE(HasFatalFailure());
  const std::map<std::string, std::string> before = files_of(dir_);
  const Outcome o = bench(kSmallBank + pmem() + "--recover --seconds=0.3");
  EXPECT_NE(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("initial load never completed"), std::string::npos) << o.output;
  EXPECT_TRUE(files_of(dir_) == before);
}

// Durable nodes as threads of one process: a clean run, then a restart.
TEST_F(DurableBench, InProcessCleanRestart) {
  const Outcome o = bench(kSmallBank + pmem() + "--inprocess --seconds=0.5 --warmup=0.1");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("durability: pmem dir=" + dir_), std::string::npos) << o.output;
  const std::string j = recover(kSmallBank, "--inprocess");
  const std::string rc = object_of(j, "recovery_check");
  EXPECT_EQ(json_number(rc, "in_flight"), 0) << rc;  // a clean stop leaves nothing undecided
}

// H8 on and off: a database run with the lock words in the pooled slots
// (--lock-words=slots, for measurements) restarts with them in DRAM (the
// default) and checks out; the report says where they were.
TEST_F(DurableBench, LockWordsInTheSlotsAndInDramShareThePools) {
  const Outcome o = bench(kSmallBank + pmem() + "--lock-words=slots --seconds=0.5 --warmup=0.1");
  ASSERT_EQ(o.exit_code, 0) << o.output;
  EXPECT_NE(o.output.find("(lock words in the pooled slots)"), std::string::npos) << o.output;
  const std::string j = recover(kSmallBank, "");
  EXPECT_NE(j.find("\"lock_words\": \"dram\""), std::string::npos) << j;
}

TEST_F(DurableBench, BadDurabilityOptionsAreRefusedWithTheReason) {
  const std::pair<std::string, const char*> cases[] = {
      {"--durability=disk", "--durability=disk: expected off or pmem"},
      {"--durability=pmem", "needs --pmem-dir"},
      {"--recover", "--recover needs --durability=pmem"},
      {"--pmem-dir=/tmp/x", "--pmem-dir needs --durability=pmem"},
      {"--crash-at=0.5", "--crash-at needs --durability=pmem"},
      {pmem() + "--format --recover", "exclude each other"},
      {pmem() + "--seconds=1 --crash-at=2", "inside the measured run"},
      {pmem() + "--crash-at=0.5 --inprocess", "not with --inprocess"},
      {pmem() + "--crash-point=boom:0:1", "unknown crash point 'boom'"},
      {pmem() + "--crash-point=logged:3:1", "NODE must be a node id below --nodes=3"},
      {pmem() + "--crash-point=logged:0:0", "HIT must be a positive"},
      {pmem() + "--crash-point=logged", "expected NAME:NODE:HIT"},
      {pmem() + "--crash-point=load:0:2", "HIT must be 1"},
      {pmem() + "--crash-point=logged:0:5 --crash-at=0.5", "not both"},
      {pmem() + "--policy=drtmh,farm", "runs one preset"},
      {pmem() + "--journal-kb=1", "--journal-kb must be"},
      {"--lock-words=slots", "--lock-words needs --durability=pmem"},
      {pmem() + "--lock-words=pmem", "--lock-words=pmem: expected dram or slots"},
  };
  for (const auto& [args, msg] : cases) {
    const Outcome o = bench(args);
    EXPECT_EQ(o.exit_code, 2) << args << "\n" << o.output;
    EXPECT_NE(o.output.find(msg), std::string::npos) << args << "\n" << o.output;
  }
  const Outcome n = drtmx::bench::testing::run(
      DRTMX_NODE_PATH, "--node=0 --coordinator=127.0.0.1:1 " + pmem() + "--crash-at=0.5", 30);
  EXPECT_EQ(n.exit_code, 2) << n.output;
  EXPECT_NE(n.output.find("--crash-at is drtmx-bench's"), std::string::npos) << n.output;
  EXPECT_FALSE(fs::exists(dir_)) << "a refused command line created the directory";
}

}  // namespace
