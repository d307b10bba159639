// check-bench: how fast drtmx-check checks a large history. Generates a
// serializable list-append history (src/check/synthetic_history.h) into a
// temporary file, parses and checks it as drtmx-check does, and prints one
// JSON object: {"txns", "file_mib", "parse_s", "check_s", "peak_rss_mib", ...}.
// Exit status 1 when the checker does not call the history valid (unless
// --stale-reads made it invalid on purpose).
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "check/checker.h"
#include "check/history_parse.h"
#include "check/synthetic_history.h"

namespace {

constexpr const char* kUsage =
    "usage: check-bench [--txns=N] [--processes=P] [--keys=K] [--consistency-models=M]\n"
    "                   [--seed=S] [--keep=FILE] [--stale-reads=F]\n"
    "  --txns=N        transactions in the generated history (default 1000000)\n"
    "  --processes=P   concurrent client processes (default 16)\n"
    "  --keys=K        keys in use at a time (default 128; 8 of them hot)\n"
    "  --consistency-models=M  as drtmx-check (default serializable)\n"
    "  --keep=FILE     write the history to FILE and keep it (default: a temporary file)\n"
    "  --stale-reads=F after parsing, drop the last value of a fraction F of the ok reads\n"
    "                  (seeded): an invalid history, to time the cycle search\n";

int fail(const std::string& m) {
  std::fprintf(stderr, "check-bench: %s\n", m.c_str());
  return 2;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool number(const std::string& arg, const char* name, uint64_t* out) {
  std::string p = std::string(name) + "=";
  if (arg.rfind(p, 0) != 0) return false;
  char* end = nullptr;
  *out = std::strtoull(arg.c_str() + p.size(), &end, 10);
  if (end == arg.c_str() + p.size() || *end != '\0') {
    std::fprintf(stderr, "check-bench: %s needs a whole number\n", name);
    std::exit(2);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace drtmx::check;
  SyntheticOptions gen;
  std::string models = "serializable", keep;
  double stale = 0;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    uint64_t v = 0;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (number(a, "--txns", &v)) {
      gen.txns = v;
    } else if (number(a, "--processes", &v)) {
      if (v == 0) return fail("--processes must be at least 1");
      gen.processes = static_cast<uint32_t>(v);
    } else if (number(a, "--keys", &v)) {
      if (v == 0) return fail("--keys must be at least 1");
      gen.active_keys = static_cast<uint32_t>(v);
      gen.hot_keys = std::min<uint32_t>(gen.hot_keys, gen.active_keys);
    } else if (number(a, "--seed", &v)) {
      gen.seed = v;
    } else if (a.rfind("--consistency-models=", 0) == 0) {
      models = a.substr(21);
    } else if (a.rfind("--stale-reads=", 0) == 0) {
      char* end = nullptr;
      stale = std::strtod(a.c_str() + 14, &end);
      if (end == a.c_str() + 14 || *end != '\0' || !(stale >= 0 && stale <= 1)) {
        return fail("--stale-reads needs a fraction from 0 to 1, e.g. 0.05");
      }
    } else if (a.rfind("--keep=", 0) == 0) {
      keep = a.substr(7);
    } else {
      return fail("unknown argument " + a + " (see --help)");
    }
  }
  auto ms = parse_models(models);
  if (!ms) return fail(ms.status().message());

  std::string path = keep;
  FILE* f = nullptr;
  if (path.empty()) {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir != nullptr ? dir : "/tmp") + "/check-bench-XXXXXX";
    int fd = mkstemp(path.data());
    if (fd < 0) return fail("cannot create a temporary file " + path);
    f = fdopen(fd, "w");
  } else {
    f = std::fopen(path.c_str(), "w");
  }
  if (f == nullptr) return fail("cannot write " + path);
  auto t0 = std::chrono::steady_clock::now();
  drtmx::Status st = write_synthetic_history(gen, f);
  bool closed = std::fclose(f) == 0;
  if (!st.is_ok() || !closed) {
    if (keep.empty()) unlink(path.c_str());
    return fail(st.is_ok() ? "cannot write " + path : st.message());
  }
  double gen_s = since(t0);

  struct stat sb {};
  double file_mib = stat(path.c_str(), &sb) == 0 ? sb.st_size / 1048576.0 : 0;
  auto t1 = std::chrono::steady_clock::now();
  auto h = parse_history_file(path);
  double parse_s = since(t1);
  if (keep.empty()) unlink(path.c_str());
  if (!h) return fail(h.status().message());
  uint64_t stale_reads = 0;
  if (stale > 0) {
    std::mt19937_64 rng(gen.seed);
    std::uniform_real_distribution<double> unit(0, 1);
    for (MicroOp& m : h->mops) {
      if (m.read_known && m.read_len > 0 && unit(rng) < stale) {
        m.read_len--;
        stale_reads++;
      }
    }
  }
  auto t2 = std::chrono::steady_clock::now();
  CheckOptions opt;
  opt.models = *ms;
  auto r = check_history(*h, opt);
  double check_s = since(t2);
  if (!r) return fail(r.status().message());

  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf(
      "{\"txns\":%zu,\"ops\":%llu,\"file_mib\":%.1f,\"models\":\"%s\",\"gen_s\":%.3f,\"parse_s\":%."
      "3f,"
      "\"check_s\":%.3f,\"total_s\":%.3f,\"graph_edges\":%llu,\"peak_rss_mib\":%.1f,"
      "\"stale_reads\":%llu,\"cyclic_components\":%llu,\"valid\":%s}\n",
      h->txns.size(), static_cast<unsigned long long>(h->op_count), file_mib, models.c_str(), gen_s,
      parse_s, check_s, parse_s + check_s, static_cast<unsigned long long>(r->graph_edges),
      ru.ru_maxrss / 1024.0, static_cast<unsigned long long>(stale_reads),
      static_cast<unsigned long long>(r->cycles.components),
      r->verdict == Verdict::kValid ? "true" : "false");
  if (r->verdict != Verdict::kValid && stale == 0) {
    std::fprintf(stderr, "%s\n", report_summary(*r).c_str());
    return 1;
  }
  return 0;
}
