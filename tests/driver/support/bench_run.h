// What the drtmx-bench tests share: running a command with a time bound and
// reading what it wrote.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace drtmx::bench::testing {

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `exe args` bounded by a wall-clock limit (coreutils timeout).
inline Outcome run(const std::string& exe, const std::string& args, int limit_s) {
  const std::string cmd =
      "timeout -k 5 " + std::to_string(limit_s) + " " + exe + " " + args + " 2>&1";
  Outcome o;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return o;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.output.append(buf, n);
  const int st = pclose(p);
  o.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return o;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

// The number after "key": in a report drtmx-bench wrote; -1 when absent.
inline double json_number(const std::string& text, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = text.find(k);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + k.size(), nullptr);
}

}  // namespace drtmx::bench::testing
