// Records under fire: owners keep rewriting records (the writer protocol of
// store/record.h: lock by CAS, store version+1 .. value with a fresh seal,
// unlock) while one-sided readers on another node READ whole slots and
// accept a copy only when store::verify() says kOk. A READ is a plain copy
// that races the writer (torn_read_test.cc shows mixed copies happen), so
// the seal is the only thing standing between a reader and a torn record.
//
// To catch a torn copy the seal lets through, every value is derived from
// (key, version) and embeds its own checksum (value word 0 = a hash of the
// key, the version and value words 1..), computed by this test independently
// of the seal. A kOk copy whose checksum or derivation does not match, or
// whose version went backwards, is an UNDETECTED torn copy: there must be 0
// in >= 10 M reads, with readers on threads (2 nodes in one process) and
// with readers in another process than the writers (fork + control plane).
// The test also proves the race is real: torn copies were detected and
// readers saw versions change under them.
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "r2/control/control.h"
#include "r2/support/inproc_cluster.h"
#include "store/record.h"
#include "support/test_cluster_key.h"

namespace drtmx::store {
namespace {

using Clock = std::chrono::steady_clock;
using r2::NodeId;
using r2::RegionId;

constexpr size_t kValueSize = 200, kWords = kValueSize / 8;
constexpr size_t kSlot = record_slot_size(kValueSize);
constexpr size_t kSlots = 32;
constexpr size_t kImageWords = (sizeof(RecordHeader) + kValueSize) / 8;
constexpr RegionId kData = 1, kScratch = 2;
constexpr uint32_t kIncarnation = 7;
constexpr int kReaders = 2, kWriters = 2, kBatch = 16, kMaxRetries = 8;
constexpr uint64_t kReadsPerTest = 10'000'000;
// Over ucx on TCP (the suite's second run) a READ is a message round trip
// through the target's worker, some thousand times slower than shm's copy.
uint64_t reads_per_test() {
  return r2::testing::test_fabric() == "shm" ? kReadsPerTest : 200'000;
}
constexpr auto kLimit = std::chrono::seconds(150);  // per test; ctest allows 300 s
static_assert(kValueSize % 8 == 0 && sizeof(RecordHeader) % 8 == 0);

uint64_t key_of(size_t slot) {
  return 0x5000 + slot;
}
uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
uint64_t checksum(uint64_t key, uint64_t version, const uint64_t* v) {
  uint64_t h = mix(key ^ mix(version));
  for (size_t i = 1; i < kWords; ++i) h = mix(h ^ v[i]);
  return h;
}
// The only value record (key, version) may hold.
void make_value(uint64_t key, uint64_t version, uint64_t* v) {
  for (size_t i = 1; i < kWords; ++i) v[i] = mix(key * 0x9e3779b97f4a7c15ULL + version * 1000 + i);
  v[0] = checksum(key, version, v);
}

uint64_t* word(uint8_t* data, size_t slot, size_t w) {
  return reinterpret_cast<uint64_t*>(data + slot * kSlot) + w;
}

// Writer protocol, owner side: lock (CPU CAS; atomic with fabric CAS on shm),
// store the new sealed image word by word, unlock.
bool write_record(uint8_t* data, size_t slot, uint64_t lock_value) {
  std::atomic_ref<uint64_t> lock(*word(data, slot, 0));
  uint64_t free = 0;
  if (!lock.compare_exchange_strong(free, lock_value, std::memory_order_acquire)) return false;
  uint64_t img[kImageWords];
  constexpr size_t kVersionWord = offsetof(RecordHeader, version) / 8;
  const uint64_t version = std::atomic_ref<uint64_t>(*word(data, slot, kVersionWord)).load() + 1;
  RecordHeader h{};
  h.version = version;
  h.key = key_of(slot);
  h.incarnation = kIncarnation;
  h.flags = kLive;
  std::memcpy(img, &h, sizeof h);
  make_value(h.key, h.version, img + sizeof h / 8);
  seal(img, kValueSize);
  for (size_t w = kBodyOffset / 8; w < kImageWords; ++w) {  // the body
    std::atomic_ref<uint64_t>(*word(data, slot, w)).store(img[w], std::memory_order_relaxed);
  }
  lock.store(0, std::memory_order_release);
  return true;
}

void init_records(uint8_t* data) {
  for (size_t s = 0; s < kSlots; ++s) write_record(data, s, 1);
}

// Rewrites random records until `stop` (bounded by the deadline too).
void writer_loop(uint8_t* data, NodeId node, uint16_t t, const std::atomic<bool>& stop,
                 Clock::time_point deadline, std::atomic<uint64_t>& writes) {
  uint64_t rng = mix(t + 1), done = 0;
  for (uint64_t n = 1; !stop.load(std::memory_order_relaxed); ++n) {
    if ((n & 255) == 0 && Clock::now() > deadline) break;
    rng = mix(rng);
    done += write_record(data, rng % kSlots, lock_word(node, t, 0));  // false: lock busy
  }
  writes += done;
}

struct ReadStats {
  uint64_t reads = 0, ok = 0, torn = 0, changes = 0, ok_while_locked = 0;
  uint64_t undetected = 0;  // accepted copies failing any check below (each counted once)
  uint64_t bad_checksum = 0, bad_value = 0, backwards = 0, unexpected = 0, op_errors = 0;
  void add(const ReadStats& o) {
    reads += o.reads, ok += o.ok, torn += o.torn, changes += o.changes;
    ok_while_locked += o.ok_while_locked, bad_checksum += o.bad_checksum;
    bad_value += o.bad_value, backwards += o.backwards, unexpected += o.unexpected;
    op_errors += o.op_errors, undetected += o.undetected;
  }
};

// Checks one READ copy; returns false when it must be read again (torn).
bool check_copy(const uint8_t* copy, size_t slot, uint64_t* last_version, ReadStats& st) {
  RecordCheck c = verify(copy, kValueSize, key_of(slot), kIncarnation);
  if (c == RecordCheck::kTorn) {
    ++st.torn;
    return false;
  }
  if (c != RecordCheck::kOk) {
    ++st.unexpected, ++st.undetected;
    return true;
  }
  ++st.ok;
  RecordHeader h;
  uint64_t v[kWords], want[kWords];
  std::memcpy(&h, copy, sizeof h);
  std::memcpy(v, copy + sizeof h, kValueSize);
  make_value(h.key, h.version, want);
  const bool bad_checksum = checksum(h.key, h.version, v) != v[0];
  const bool bad_value = std::memcmp(v, want, kValueSize) != 0;
  const bool backwards = h.version < last_version[slot];
  st.bad_checksum += bad_checksum, st.bad_value += bad_value, st.backwards += backwards;
  st.undetected += bad_checksum || bad_value || backwards;
  if (h.version != last_version[slot] && last_version[slot] != 0) ++st.changes;
  if (h.lock != 0) ++st.ok_while_locked;
  last_version[slot] = h.version;
  return true;
}

// One reader thread: batches of kBatch whole-slot READs per doorbell into
// its part of the scratch region; a torn slot is re-read (bounded).
ReadStats reader_loop(r2::Endpoint* ep, uint8_t* scratch, NodeId owner, uint64_t want,
                      Clock::time_point deadline, uint64_t seed) {
  ReadStats st;
  uint64_t last_version[kSlots] = {}, rng = mix(seed);
  size_t slot[kBatch];
  int retries[kBatch] = {};
  for (auto& s : slot) s = (rng = mix(rng)) % kSlots;
  r2::Completion comp[kBatch];
  while (st.reads < want && Clock::now() < deadline) {
    for (int i = 0; i < kBatch; ++i) {
      r2::WorkRequest w;
      w.verb = r2::Verb::kRead;
      w.len = kSlot;
      w.local = scratch + i * kSlot;
      w.remote = {owner, kData, slot[i] * kSlot};
      if (ep->post(w) != r2::PostResult::kOk) return ++st.op_errors, st;
    }
    ep->doorbell(owner);
    for (int got = 0; got < kBatch;) {
      int n = ep->poll(comp, kBatch - got);
      for (int k = 0; k < n; ++k) st.op_errors += comp[k].status != r2::OpStatus::kOk;
      got += n;
      if (n == 0 && Clock::now() > deadline + std::chrono::seconds(5)) return ++st.op_errors, st;
    }
    st.reads += kBatch;
    for (int i = 0; i < kBatch; ++i) {
      if (!check_copy(scratch + i * kSlot, slot[i], last_version, st) &&
          ++retries[i] <= kMaxRetries)
        continue;
      retries[i] = 0;
      slot[i] = (rng = mix(rng)) % kSlots;
    }
  }
  return st;
}

// Runs kReaders reader threads on `fabric` (endpoint t, scratch part t).
ReadStats run_readers(r2::Fabric& fabric, NodeId owner, Clock::time_point deadline) {
  std::vector<ReadStats> per(kReaders);
  std::vector<std::thread> ts;
  uint8_t* scratch = fabric.region(kScratch)->base;
  for (int t = 0; t < kReaders; ++t) {
    ts.emplace_back([&, t] {
      per[t] = reader_loop(fabric.endpoint(t), scratch + t * kBatch * kSlot, owner,
                           reads_per_test() / kReaders, deadline, 100 + t);
    });
  }
  for (auto& t : ts) t.join();
  ReadStats all;
  for (auto& s : per) all.add(s);
  return all;
}

void expect_clean(const ReadStats& st, uint64_t writes, double secs, const char* what) {
  std::printf(
      "[ %s ] %.1f s: %llu reads, %llu ok (%llu while locked), %llu torn detected, %llu "
      "version changes seen, %llu writes, undetected: %llu\n",
      what, secs, (unsigned long long)st.reads, (unsigned long long)st.ok,
      (unsigned long long)st.ok_while_locked, (unsigned long long)st.torn,
      (unsigned long long)st.changes, (unsigned long long)writes,
      (unsigned long long)st.undetected);
  EXPECT_GE(st.reads, reads_per_test()) << "deadline hit before enough reads";
  EXPECT_EQ(st.op_errors, 0u);
  EXPECT_EQ(st.undetected, 0u) << "torn copies accepted as kOk";
  EXPECT_EQ(st.bad_checksum, 0u) << "kOk copies with a wrong embedded checksum";
  EXPECT_EQ(st.bad_value, 0u) << "kOk copies whose value is not that of (key, version)";
  EXPECT_EQ(st.backwards, 0u) << "kOk copies older than one seen before";
  EXPECT_EQ(st.unexpected, 0u) << "copies neither kOk nor kTorn";
  EXPECT_GT(st.torn, 0u) << "no torn copy detected: readers did not race the writers";
  EXPECT_GT(st.changes, st.reads / 1000) << "records hardly changed while being read";
  EXPECT_GT(writes, 0u);
}

r2::FabricConfig node_config(const std::string& cluster, NodeId node) {
  r2::FabricConfig cfg;
  cfg.cluster = cluster;
  cfg.node = node;
  cfg.num_nodes = 2;
  cfg.threads = kReaders;
  cfg.ring_bytes = 64 * 1024;
  return cfg;
}

// Joins the control plane of the coordinator on 127.0.0.1:port as cfg.node.
Result<std::unique_ptr<r2::ControlClient>> join_control(const r2::FabricConfig& cfg,
                                                        uint16_t port) {
  r2::ControlClientConfig cc;
  cc.coordinator = "127.0.0.1:" + std::to_string(port);
  cc.cluster = cfg.cluster;
  cc.key = drtmx::testing::kTestClusterKey;
  cc.node = cfg.node;
  cc.num_nodes = cfg.num_nodes;
  cc.fingerprint = cfg.fingerprint();
  return r2::ControlClient::join(cc);
}

TEST(RecordTorn, ThreadReadersNeverAcceptATornCopy) {
  auto c = r2::testing::InProcCluster::make(
      2, kReaders, {{kData, kSlots * kSlot}, {kScratch, kReaders * kBatch * kSlot}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  uint8_t* data = c->base(1, kData);
  init_records(data);
  auto served = c->serve({1});
  const auto start = Clock::now(), deadline = start + kLimit;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> writes{0};
  std::vector<std::thread> ws;
  for (uint16_t t = 0; t < kWriters; ++t) {
    ws.emplace_back([&, t] { writer_loop(data, 1, t, stop, deadline, writes); });
  }
  ReadStats st = run_readers(c->f(0), 1, deadline);
  stop = true;
  for (auto& w : ws) w.join();
  expect_clean(st, writes, std::chrono::duration<double>(Clock::now() - start).count(), "threads");
}

// Node 1 in a child process: writers until the readers are done, then
// reports its write count through the control plane. Returns the exit code.
int writer_process(const std::string& cluster, int port_fd, pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 10;
  uint16_t port = 0;
  pollfd p{port_fd, POLLIN, 0};
  if (poll(&p, 1, 20000) != 1 || read(port_fd, &port, sizeof port) != sizeof port) return 11;
  r2::FabricConfig cfg = node_config(cluster, 1);
  auto fabric = r2::make_fabric(cfg);
  if (!fabric || !(*fabric)->register_region(kData, kSlots * kSlot)) return 12;
  uint8_t* data = (*fabric)->region(kData)->base;
  init_records(data);
  auto control = join_control(cfg, port);
  if (!control || !(*fabric)->connect(**control).is_ok()) return 13;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> writes{0};
  std::vector<std::thread> ws;
  for (uint16_t t = 0; t < kWriters; ++t) {
    ws.emplace_back([&, t] { writer_loop(data, 1, t, stop, Clock::now() + kLimit, writes); });
  }
  Status done = (*control)->barrier("readers-done", kLimit + std::chrono::seconds(30));
  stop = true;
  for (auto& w : ws) w.join();
  if (!done.is_ok()) return 14;
  if (!(*control)->exchange("writer-report", std::to_string(writes), std::chrono::seconds(30)))
    return 15;
  return (*control)->leave().is_ok() ? 0 : 16;
}

// Waits up to `ms` for `pid` to exit; true (with its status) once reaped.
bool wait_exit(pid_t pid, int ms, int* status) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) {  // readable once the process has exited
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, ms);
    close(fd);
    return waitpid(pid, status, WNOHANG) == pid;
  }
  const auto until = Clock::now() + std::chrono::milliseconds(ms);  // no pidfd: poll
  for (; Clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(1))) {
    if (waitpid(pid, status, WNOHANG) == pid) return true;
  }
  return false;
}

int segments(const std::string& cluster) {
  const std::string prefix = "drtmx." + cluster + ".";
  int n = 0;
  DIR* d = opendir("/dev/shm");
  while (dirent* e = d ? readdir(d) : nullptr) n += std::string(e->d_name).starts_with(prefix);
  if (d) closedir(d);
  return n;
}

TEST(RecordTorn, ProcessReadersNeverAcceptATornCopy) {
  const std::string cluster = r2::testing::unique_cluster("rtorn");
  int pipe_fd[2];
  ASSERT_EQ(pipe(pipe_fd), 0);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = getpid(), pid = fork();  // before this test creates any thread
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipe_fd[1]);
    _exit(writer_process(cluster, pipe_fd[0], parent));
  }
  close(pipe_fd[0]);
  // Whatever happens below, the child is gone and its segments removed.
  struct Reaper {
    pid_t pid;
    std::string cluster;
    bool reaped = false;
    ~Reaper() {
      if (!reaped && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
      r2::remove_shm_segments(cluster);
    }
  } reaper{pid, cluster};
  const auto start = Clock::now(), deadline = start + kLimit;

  r2::ControlServerConfig sc;
  sc.cluster = cluster;
  sc.key = drtmx::testing::kTestClusterKey;
  sc.num_nodes = 2;
  sc.join_timeout = std::chrono::seconds(20);
  auto server = r2::ControlServer::start(sc);
  ASSERT_TRUE(server.is_ok()) << server.status().to_string();
  const uint16_t port = (*server)->port();
  ASSERT_EQ(write(pipe_fd[1], &port, sizeof port), (ssize_t)sizeof port);
  close(pipe_fd[1]);

  r2::FabricConfig cfg = node_config(cluster, 0);
  auto fabric = r2::make_fabric(cfg);
  ASSERT_TRUE(fabric.is_ok()) << fabric.status().to_string();
  ASSERT_TRUE((*fabric)->register_region(kScratch, kReaders * kBatch * kSlot).is_ok());
  auto control = join_control(cfg, port);
  ASSERT_TRUE(control.is_ok()) << control.status().to_string();
  Status connected = (*fabric)->connect(**control);
  ASSERT_TRUE(connected.is_ok()) << connected.to_string();
  ASSERT_EQ((*fabric)->remote_region_size(1, kData), kSlots * kSlot);

  ReadStats st = run_readers(**fabric, 1, deadline);

  ASSERT_TRUE((*control)->barrier("readers-done", std::chrono::seconds(30)).is_ok());
  auto report = (*control)->exchange("writer-report", "", std::chrono::seconds(30));
  ASSERT_TRUE(report.is_ok()) << report.status().to_string();
  const uint64_t writes = std::stoull((*report)[1]);
  EXPECT_TRUE((*control)->leave().is_ok());
  Status done = (*server)->wait_done(std::chrono::seconds(30));
  EXPECT_TRUE(done.is_ok()) << done.to_string();
  int status = 0;
  reaper.reaped = wait_exit(pid, 30000, &status);
  ASSERT_TRUE(reaper.reaped) << "writer process did not exit; killed";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
  fabric->reset();
  expect_clean(st, writes, std::chrono::duration<double>(Clock::now() - start).count(),
               "processes");
  EXPECT_EQ(segments(cluster), 0) << "shm segments left behind";
}

}  // namespace
}  // namespace drtmx::store
