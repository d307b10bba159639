// rdpma-bench end to end: every experiment runs and the data check passes
// (PWrites by every method and node found in every pool and its file) with
// nodes as threads and as processes (peers map each other's pool files),
// on a memory and a disk file system; pools are removed unless kept; bad
// command lines are refused with a message naming the option.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
const std::string kBench = RDPMA_BENCH_PATH;

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
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + 1)) ++n;
  return n;
}

struct Dir {
  explicit Dir(const std::string& parent) {
    static int counter = 0;
    path =
        parent + "/rdpma_bench_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    fs::create_directories(path);
  }
  ~Dir() { fs::remove_all(path); }
  size_t files() const {
    return static_cast<size_t>(
        std::distance(fs::directory_iterator(path), fs::directory_iterator()));
  }
  std::string path;
};

const std::string kShort = " --seconds=0.05 --warmup=0.01";

TEST(RdpmaBench, EveryExperimentRunsAndTheDataCheckPasses) {
  Dir pools("/dev/shm");
  Dir out(fs::temp_directory_path().string());
  const std::string json = out.path + "/r.json";
  const auto r =
      sh(kBench + kShort + " --payloads=16,4096 --fabric-delay-ns=0,2000 --pmem-dir=" + pools.path +
         " --json=" + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(count(r.out, "data check: ok"), 2u) << r.out;
  EXPECT_NE(r.out.find("h9/strawman throughput 16B aligned"), std::string::npos) << r.out;
  const std::string j = slurp(json);
  EXPECT_EQ(count(j, "\"delay_ns\": 2000"), 1u) << j;
  EXPECT_EQ(count(j, "\"persistence\": \"memfs\""), 2u) << j;
  EXPECT_EQ(count(j, "\"method\": "), 2u * 2 * 2 * 3) << j;  // runs x payloads x layouts x methods
  EXPECT_EQ(count(j, "\"check\": \"ok"), 2u) << j;
  EXPECT_EQ(count(j, "\"kops\": 0.00,"), 0u) << "an experiment measured nothing: " << j;
  EXPECT_EQ(pools.files(), 0u) << "pool files left behind";
  EXPECT_EQ(out.files(), 1u) << "JSON part files left behind";
}

TEST(RdpmaBench, ProcessesMapEachOthersPoolFiles) {
  Dir pools("/dev/shm");
  const auto r =
      sh(kBench + kShort + " --processes --nodes=3 --payloads=64 --pmem-dir=" + pools.path +
         " --keep-pools --cluster=rbt" + std::to_string(getpid()));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("processes=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("data check: ok (27 PWrites"), std::string::npos) << r.out;
  EXPECT_EQ(pools.files(), 3u) << "--keep-pools keeps one pool per node";
}

TEST(RdpmaBench, APoolOnADiskIsMsynced) {
  const std::string tmp = fs::temp_directory_path().string();
  struct statfs s {};
  ASSERT_EQ(statfs(tmp.c_str(), &s), 0);
  if (static_cast<uint64_t>(s.f_type) == TMPFS_MAGIC) GTEST_SKIP() << tmp << " is a tmpfs";
  Dir pools(tmp);
  const auto r =
      sh(kBench + kShort + " --payloads=256 --methods=h9,two-sided --pmem-dir=" + pools.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("(msync)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("data check: ok"), std::string::npos) << r.out;
  EXPECT_EQ(pools.files(), 0u);
}

TEST(RdpmaBench, BadOptionsAreRefusedNamingTheOption) {
  Dir pools("/dev/shm");
  const std::string dir = " --pmem-dir=" + pools.path;
  const std::pair<std::string, std::string> cases[] = {
      {"--payloads=0", "--payloads=0: '0' is not a byte count"},
      {"--payloads=16,abc", "'abc' is not a byte count"},
      {"--payloads=70000", "1..65536"},
      {"--methods=h9,fast", "--methods=h9,fast: 'fast' is not h9, strawman or two-sided"},
      {"--layouts=diagonal", "--layouts=diagonal"},
      {"--fabric-delay-ns=-5", "--fabric-delay-ns=-5"},
      {"--slots=0", "--slots=0"},
      {"--slots=4096 --pool-mb=1", "--pool-mb=1 is too small"},
      {"--nodes=0", "--nodes=0"},
      {"--fabric=tcp", "--fabric=tcp"},
      {"--seconds=0", "--seconds"},
      {"--node=0", "--node needs --coordinator"},
      {"--fabric=verbs --fabric-delay-ns=2000", "--fabric-delay-ns applies to --fabric=shm"},
      {"--no-such-option", "no-such-option"},
  };
  for (const auto& [args, msg] : cases) {
    const auto r = sh(kBench + dir + " " + args);
    EXPECT_NE(r.code, 0) << args;
    EXPECT_NE(r.out.find(msg), std::string::npos) << args << ": " << r.out;
  }
  const auto r = sh(kBench + " --pmem-dir=/no/such/dir");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--pmem-dir=/no/such/dir: not an existing directory"), std::string::npos)
      << r.out;
  EXPECT_EQ(pools.files(), 0u);
}

}  // namespace
