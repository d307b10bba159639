// micro-bench: the per-operation building blocks on the hot paths, in
// isolation (Google Benchmark; --benchmark_format=json for machine-readable
// output). End-to-end fabric numbers come from r2-bench.
#include <benchmark/benchmark.h>

#include <vector>

#include "base/histogram.h"
#include "dst/oracle.h"
#include "r2/common/region_table.h"
#include "r2/common/send_queue.h"
#include "r2/shm/msg_ring.h"
#include "store/hash/location_cache.h"
#include "store/record.h"
#include "txn/log/log_ring.h"

namespace {

using namespace drtmx;

// Sealing (writer) and verifying (reader) a record of the given value size.
void BM_RecordSeal(benchmark::State& st) {
  const size_t vs = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> slot(store::record_slot_size(vs), 7);
  for (auto _ : st) {
    store::seal(slot.data(), vs);
    benchmark::DoNotOptimize(slot.data());
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * vs));
}
BENCHMARK(BM_RecordSeal)->Arg(8)->Arg(64)->Arg(256)->Arg(1024);

void BM_RecordVerify(benchmark::State& st) {
  const size_t vs = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> slot(store::record_slot_size(vs), 7);
  store::seal(slot.data(), vs);
  for (auto _ : st)
    benchmark::DoNotOptimize(store::verify(slot.data(), vs, 0x0707070707070707ull, 0x07070707u));
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * vs));
}
BENCHMARK(BM_RecordVerify)->Arg(8)->Arg(64)->Arg(256)->Arg(1024);

// The check every posted work request goes through.
void BM_RegionCheck(benchmark::State& st) {
  r2::RegionTable t;
  t.reset(16);
  alignas(64) static uint8_t local[4096];
  t.add_local(local, sizeof local);
  for (uint16_t n = 0; n < 16; ++n) t.set(n, 1, {0x100000, 1 << 20});
  r2::WorkRequest w;
  w.verb = r2::Verb::kRead;
  w.local = local;
  w.len = 64;
  uint64_t i = 0;
  for (auto _ : st) {
    w.remote = {static_cast<r2::NodeId>(i & 15), 1, (i * 64) & ((1 << 20) - 64)};
    benchmark::DoNotOptimize(t.check(w, 1 << 30));
    ++i;
  }
}
BENCHMARK(BM_RegionCheck);

void BM_SendQueuePostComplete(benchmark::State& st) {
  r2::SendQueue q(256);
  bool forced;
  for (auto _ : st) {
    if (q.on_post(true, &forced)) q.on_signaled_completion();
  }
}
BENCHMARK(BM_SendQueuePostComplete);

// One message through an shm ring: append + publish + read + release.
void BM_MsgRingRoundTrip(benchmark::State& st) {
  const uint32_t len = static_cast<uint32_t>(st.range(0));
  const uint32_t cap = 1 << 16;
  std::vector<uint8_t> mem(r2::shm::ring_stride(cap) + 64, 0);
  uint8_t* ring = mem.data();
  r2::shm::RingWriter w(ring, cap);
  r2::shm::RingReader r(ring, cap);
  std::vector<uint8_t> msg(len, 1);
  for (auto _ : st) {
    w.append(msg.data(), len, 0);
    w.publish();
    uint32_t got = 0;
    benchmark::DoNotOptimize(r.next(&got, 0));
    r.release();
  }
}
BENCHMARK(BM_MsgRingRoundTrip)->Arg(64)->Arg(512)->Arg(4000);

void BM_HistogramRecord(benchmark::State& st) {
  LatencyHistogram h;
  std::vector<uint64_t> samples(4096);
  uint64_t x = 88172645463325252ull;
  for (auto& v : samples) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = 100 + (x % 100000);  // 0.1 .. 100 us in ns
  }
  size_t i = 0;
  for (auto _ : st) {
    h.record(samples[i++ & 4095]);
    benchmark::DoNotOptimize(h);
  }
}
BENCHMARK(BM_HistogramRecord);

// Building one replication log entry image (the Log phase's CPU part).
void BM_LogEntryPrepare(benchmark::State& st) {
  const uint32_t len = static_cast<uint32_t>(st.range(0));
  txn::LogWriter w(0, 1 << 20);
  std::vector<uint8_t> payload(len, 3), image(2 * txn::log_entry_bytes(len) + 64);
  txn::LogWriter::Placement pl[2];
  for (auto _ : st) {
    auto n = w.prepare(payload.data(), len, image.data(), pl);
    if (n.is_ok() && *n == 0) w.on_reclaimed(w.tail());
    benchmark::DoNotOptimize(image.data());
  }
}
BENCHMARK(BM_LogEntryPrepare)->Arg(149)->Arg(1006);  // SmallBank, TPC-C log sizes (Table 4-2)

// A location-cache hit in a full-size (64 MiB) cache holding arg entries:
// a random slot per lookup, as a transaction's reads give it. Batch mode
// (arg 1 = 1) hints all 16 keys of a batch first (prefetch), as the engine's
// read_ahead does.
void BM_LocationCacheGet(benchmark::State& st) {
  const size_t entries = static_cast<size_t>(st.range(0));
  const bool batch = st.range(1) != 0;
  store::hash::LocationCacheOptions o;  // the default budget
  auto c = store::hash::LocationCache::create(o);
  if (!c.is_ok()) {
    st.SkipWithError(c.status().message().c_str());
    return;
  }
  store::hash::LocationCache& cache = **c;
  for (uint64_t k = 0; k < entries; ++k) cache.put(1, k * 7919, {{0, 1, k * 64}, 1});
  uint64_t x = 88172645463325252ull;
  uint64_t keys[16];
  store::hash::CachedLocation loc;
  for (auto _ : st) {
    for (uint64_t& k : keys) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      k = (x % entries) * 7919;
    }
    if (batch) {
      for (uint64_t k : keys) cache.prefetch(1, k);
    }
    for (uint64_t k : keys) benchmark::DoNotOptimize(cache.get(1, k, &loc));
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations() * 16));
}
BENCHMARK(BM_LocationCacheGet)->Args({300000, 0})->Args({300000, 1});

}  // namespace

// The GTS oracle's work per read-write transaction: issue a timestamp (the
// FAA a coordinator posts) and INSTALL it (node 0's handler), in order, on
// one core — the oracle's CPU bound before any network cost.
static void BM_GtsOracleIssueInstall(benchmark::State& state) {
  std::vector<uint8_t> region(drtmx::dst::GtsOracle::kRegionBytes, 0);
  drtmx::dst::GtsOracle oracle(region.data());
  auto* counter =
      reinterpret_cast<uint64_t*>(region.data() + drtmx::dst::GtsOracle::kCounterOffset);
  for (auto _ : state) {
    const uint64_t ts = __atomic_add_fetch(counter, 1, __ATOMIC_SEQ_CST);
    if (!oracle.install(ts).is_ok()) state.SkipWithError("INSTALL refused");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GtsOracleIssueInstall);

BENCHMARK_MAIN();
