// drtmx-check: checks a Jepsen list-append history (docs/benchmarks.md,
// "Checking histories: drtmx-check"). The result JSON goes to standard
// output (or --out), a summary to standard error; exit status 0 valid,
// 1 invalid, 2 unknown or a history that cannot be read.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "check/checker.h"
#include "check/history_parse.h"

namespace {

constexpr const char* kUsage =
    "usage: drtmx-check [--consistency-models=MODELS] [--out=FILE] [--quiet] HISTORY.json\n"
    "  HISTORY.json  a Jepsen list-append history: one JSON array of operations, or one\n"
    "                operation object per line\n"
    "  --consistency-models=MODELS  (also --consistency) comma-separated: read-committed,\n"
    "                snapshot-isolation, serializable (default), strong-session-serializable,\n"
    "                strict-serializable\n"
    "  --out=FILE    write the result JSON to FILE instead of standard output\n"
    "  --quiet       no summary on standard error\n"
    "exit status: 0 valid, 1 invalid, 2 unknown or unreadable history\n";

int fail(const std::string& msg) {
  std::fprintf(stderr, "drtmx-check: %s\n", msg.c_str());
  return 2;
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace drtmx::check;
  std::string models = "serializable", out, path;
  bool quiet = false;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    auto value = [&](const std::string& name, std::string* dst) {
      if (arg.rfind(name + "=", 0) == 0) {
        *dst = arg.substr(name.size() + 1);
        return true;
      }
      if (arg == name && i + 1 < argc) {
        *dst = argv[++i];
        return true;
      }
      return false;
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (value("--consistency-models", &models) || value("--consistency", &models) ||
        value("--out", &out)) {
      continue;
    }
    if (arg == "--quiet") {
      quiet = true;
    } else if (arg.rfind("--", 0) == 0) {
      return fail("unknown option " + arg + " (see --help)");
    } else if (!path.empty()) {
      return fail("one history at a time: got " + path + " and " + arg);
    } else {
      path = arg;
    }
  }
  if (path.empty()) return fail("no history given (usage: drtmx-check [options] HISTORY.json)");
  auto ms = parse_models(models);
  if (!ms) return fail("--consistency-models: " + ms.status().message());

  auto t0 = std::chrono::steady_clock::now();
  auto h = parse_history_file(path);
  if (!h) return fail(h.status().message());
  double parse_s = since(t0);
  auto t1 = std::chrono::steady_clock::now();
  CheckOptions opt;
  opt.models = *ms;
  auto r = check_history(*h, opt);
  if (!r) return fail(r.status().message());
  double check_s = since(t1);

  std::string json = report_json(*r) + "\n";
  if (out.empty()) {
    std::fwrite(json.data(), 1, json.size(), stdout);
  } else {
    FILE* f = std::fopen(out.c_str(), "w");
    if (f == nullptr) return fail("cannot write " + out + ": " + std::strerror(errno));
    bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
    ok &= std::fclose(f) == 0;
    if (!ok) return fail("cannot write " + out + ": " + std::strerror(errno));
  }
  if (!quiet) {
    std::fprintf(stderr, "%s\n  (parsed in %.2f s, checked in %.2f s)\n",
                 report_summary(*r).c_str(), parse_s, check_s);
  }
  return exit_status(*r);
}
