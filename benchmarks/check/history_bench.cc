// history-bench: what --history costs a transaction attempt on the
// coroutine's path (src/driver/history.h): an invoke and a completion line
// written through a HistoryRecorder into a part on `--dir`, with no value
// (workloads that describe no ops) and with a three-op list-append value.
// Prints one JSON object: ns per attempt for each, and the bytes written.
//
//   history-bench [--attempts=2000000] [--dir=/dev/shm]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "history.h"

namespace {

double ns_per_attempt(const std::string& path, const std::string& value, int attempts,
                      uint64_t* bytes) {
  auto part = drtmx::bench::HistoryPart::create(path);
  if (!part.is_ok()) {
    std::fprintf(stderr, "history-bench: %s\n", part.status().message().c_str());
    std::exit(2);
  }
  drtmx::bench::HistoryPart* raw = part->get();
  drtmx::bench::HistoryRecorder r(std::move(*part), 5, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < attempts; ++i) {
    (void)r.invoke(value);
    (void)r.complete(drtmx::txn::Abort::kNone, value);
  }
  const auto t1 = std::chrono::steady_clock::now();
  *bytes = raw->bytes();
  if (!r.close().is_ok()) std::exit(2);
  std::remove(path.c_str());
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / attempts;
}

}  // namespace

int main(int argc, char** argv) {
  int attempts = 2000000;
  std::string dir = "/dev/shm";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--attempts=", 11) == 0) {
      attempts = std::atoi(argv[i] + 11);
    } else if (std::strncmp(argv[i], "--dir=", 6) == 0) {
      dir = argv[i] + 6;
    } else {
      std::fprintf(stderr, "usage: history-bench [--attempts=N] [--dir=DIR]\n");
      return 2;
    }
  }
  if (attempts <= 0) attempts = 1;
  const std::string path = dir + "/history-bench-" + std::to_string(getpid()) + ".jsonl";
  uint64_t plain_bytes = 0, append_bytes = 0;
  const double plain = ns_per_attempt(path, "", attempts, &plain_bytes);
  const double append = ns_per_attempt(
      path, "[[\"append\",12,34359738369],[\"r\",17,null],[\"append\",3,34359738370]]", attempts,
      &append_bytes);
  std::printf(
      "{\"attempts\": %d, \"dir\": \"%s\", \"ns_per_attempt_no_value\": %.1f, "
      "\"ns_per_attempt_append_value\": %.1f, \"bytes_per_attempt_no_value\": %.1f, "
      "\"bytes_per_attempt_append_value\": %.1f}\n",
      attempts, dir.c_str(), plain, append, double(plain_bytes) / attempts,
      double(append_bytes) / attempts);
  return 0;
}
