// grow-bench: inserts into a growing record heap, with and without a
// GrowAhead (store/grow_ahead.h), on real backing: a sparse /dev/shm file
// behind an r2::Growable, as a shm node's table region is. Each inserter
// thread allocates slots and writes each record; the bench reports the
// allocate() latency (p50, p99.9, max: an extent backed inline shows as a
// stall of the inserter), the inserts per second, and how many extents
// each path backed. Variants alternate in rounds on fresh heaps.
//
// Output: one JSON object per round and variant, then one per variant
// with the medians over the rounds.
//
//   build/bin/grow-bench [--mib=N] [--threads=T] [--rounds=R] [--rate=N]
//
// --rate paces each thread (default 200 000 inserts a second, about twice
// what a TPC-C node inserts at full speed here, over its three copies).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "r2/common/growable.h"
#include "store/grow_ahead.h"
#include "store/heap.h"
#include "store/record.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  uint64_t mib = 1024;  // record bytes inserted per round
  int threads = 2;
  int rounds = 3;
  uint32_t value_size = 176;  // a TPC-C ORDER-LINE row's slot
  uint64_t rate = 200000;     // inserts a second per thread (0: as fast as possible)
};

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto num = [&](const char* name, uint64_t* out) {
      const std::string p = std::string("--") + name + "=";
      if (s.rfind(p, 0) != 0) return false;
      char* end = nullptr;
      *out = std::strtoull(s.c_str() + p.size(), &end, 10);
      return end != nullptr && *end == '\0' && *out > 0;
    };
    uint64_t v = 0;
    if (s == "--help") {
      std::printf(
          "grow-bench: inserts into a growing record heap with and without a GrowAhead\n"
          "  --mib=N       record MiB inserted per round (default 1024)\n"
          "  --threads=T   inserter threads, 1..64 (default 2)\n"
          "  --rounds=R    rounds of both variants, 1..100 (default 3)\n"
          "  --rate=N      inserts a second per thread, 0: unpaced (default 200000)\n"
          "Prints one JSON object per round and variant, then the medians.\n");
      std::exit(0);
    }
    if (num("mib", &v)) {
      a->mib = v;
    } else if (s == "--rate=0") {
      a->rate = 0;
    } else if (num("rate", &v)) {
      a->rate = v;
    } else if (num("threads", &v) && v <= 64) {
      a->threads = static_cast<int>(v);
    } else if (num("rounds", &v) && v <= 100) {
      a->rounds = static_cast<int>(v);
    } else {
      std::fprintf(stderr,
                   "grow-bench: unknown or bad option '%s' (options: --mib=N (record MiB per "
                   "round), --threads=1..64, --rounds=1..100, --rate=N (inserts a second "
                   "per thread, 0: unpaced))\n",
                   s.c_str());
      return false;
    }
  }
  return true;
}

struct Result {
  double inserts_per_s = 0, p50_us = 0, p999_us = 0, max_us = 0;
  uint64_t grown_inline = 0, grown_ahead = 0;
};

// One round: a fresh sparse file of `bytes` virtual size, a heap over it.
bool run_round(const Args& a, bool ahead_on, Result* out) {
  const uint64_t slot = drtmx::store::record_slot_size(a.value_size);
  const uint64_t slots = (a.mib << 20) / slot;
  const uint64_t bytes = (slots * slot * 2 + 4095) & ~uint64_t{4095};  // room to spare
  char path[] = "/dev/shm/drtmx-grow-bench-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    std::perror("grow-bench: mkstemp in /dev/shm");
    return false;
  }
  unlink(path);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    std::perror("grow-bench: ftruncate");
    close(fd);
    return false;
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (base == MAP_FAILED) {
    std::perror("grow-bench: mmap");
    close(fd);
    return false;
  }
  bool ok = true;
  {
    drtmx::r2::GrowableSpec gs;
    gs.base = static_cast<uint8_t*>(base);
    gs.size = bytes;
    gs.fd = fd;  // owned (closed) by the Growable
    gs.segment = true;
    gs.where = "/dev/shm";
    drtmx::r2::Growable g(gs);
    auto ahead = ahead_on ? std::make_unique<drtmx::store::GrowAhead>() : nullptr;
    drtmx::store::HeapOptions o;
    o.name = "bench/p0";
    o.value_size = a.value_size;
    o.range_offset = 0;
    o.range_bytes = bytes;
    o.grow = [&g](uint64_t off, uint64_t n) { return g.commit(off, n); };
    o.ahead = ahead.get();
    auto heap = drtmx::store::RecordHeap::create({static_cast<uint8_t*>(base), bytes}, o);
    if (!heap.is_ok()) {
      std::fprintf(stderr, "grow-bench: %s\n", heap.status().to_string().c_str());
      ok = false;
    } else {
      std::vector<std::vector<uint32_t>> lat(a.threads);  // ns, per allocate
      std::vector<int> errors(a.threads, 0);
      const uint64_t each = slots / a.threads;
      const auto t0 = Clock::now();
      std::vector<std::thread> ts;
      for (int t = 0; t < a.threads; ++t) {
        ts.emplace_back([&, t] {
          lat[t].reserve(each);
          const auto start = Clock::now();
          for (uint64_t i = 0; i < each; ++i) {
            if (a.rate != 0) {
              // Paced: insert i is due at start + i / rate (a spin: the
              // bench measures stalls, a sleep would blur them).
              const auto due = start + std::chrono::nanoseconds(i * 1000000000ull / a.rate);
              for (int spin = 0; spin < (1 << 30) && Clock::now() < due; ++spin) {
              }
            }
            const auto s = Clock::now();
            auto r = (*heap)->allocate();
            const auto e = Clock::now();
            if (!r.is_ok()) {
              ++errors[t];
              return;
            }
            std::memset(static_cast<uint8_t*>(base) + r->offset, 0x5a, slot);  // the tenant
            lat[t].push_back(static_cast<uint32_t>(std::min<int64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(e - s).count(), UINT32_MAX)));
          }
        });
      }
      for (std::thread& th : ts) th.join();
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      if (ahead) ahead->drain();
      std::vector<uint32_t> all;
      for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
      for (int e : errors) ok &= e == 0;
      if (!ok || all.empty()) {
        std::fprintf(stderr, "grow-bench: allocations failed (is /dev/shm large enough?)\n");
        ok = false;
      } else {
        std::sort(all.begin(), all.end());
        out->inserts_per_s = static_cast<double>(all.size()) / secs;
        out->p50_us = all[all.size() / 2] / 1e3;
        out->p999_us = all[all.size() * 999 / 1000] / 1e3;
        out->max_us = all.back() / 1e3;
        const drtmx::store::HeapStats st = (*heap)->stats();
        out->grown_inline = st.grown_inline;
        out->grown_ahead = st.grown_ahead;
      }
    }
  }
  munmap(base, bytes);
  return ok;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) return 2;
  std::vector<Result> res[2];
  for (int r = 0; r < a.rounds; ++r) {
    for (int v = 0; v < 2; ++v) {
      const bool ahead = (r + v) % 2 == 1;  // alternate which goes first
      Result x;
      if (!run_round(a, ahead, &x)) return 1;
      res[ahead].push_back(x);
      std::printf(
          "{\"round\": %d, \"variant\": \"%s\", \"mib\": %llu, \"threads\": %d, \"rate\": %llu, "
          "\"inserts_per_s\": %.0f, \"p50_us\": %.3f, \"p999_us\": %.3f, \"max_us\": %.1f, "
          "\"extents_inline\": %llu, \"extents_ahead\": %llu}\n",
          r, ahead ? "ahead" : "inline", static_cast<unsigned long long>(a.mib), a.threads,
          static_cast<unsigned long long>(a.rate), x.inserts_per_s, x.p50_us, x.p999_us, x.max_us,
          static_cast<unsigned long long>(x.grown_inline),
          static_cast<unsigned long long>(x.grown_ahead));
      std::fflush(stdout);
    }
  }
  for (int v = 0; v < 2; ++v) {
    std::vector<double> ips, p999, mx;
    for (const Result& x : res[v]) {
      ips.push_back(x.inserts_per_s);
      p999.push_back(x.p999_us);
      mx.push_back(x.max_us);
    }
    std::printf(
        "{\"summary\": \"%s\", \"inserts_per_s\": %.0f, \"p999_us\": %.3f, \"max_us\": %.1f}\n",
        v ? "ahead" : "inline", median(ips), median(p999), median(mx));
  }
  return 0;
}
