// The launcher's side of --history (history.h): prepare, merge, check,
// report.
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bench.h"
#include "history.h"
#include "hosts.h"
#include "json_writer.h"
#include "process_group.h"

namespace drtmx::bench {
namespace {

struct Verdict {
  int exit = 2;         // drtmx-check's: 0 valid, 1 invalid, 2 unknown or unreadable
  std::string types;    // the result's "anomaly-types" (a JSON array), "[]" if none
  std::string summary;  // its summary paragraph (standard error)
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Result<Verdict> run_checker(const std::string& file, const std::string& models) {
  const std::string self = self_exe();
  const std::string exe = self.substr(0, self.rfind('/') + 1) + "drtmx-check";
  if (access(exe.c_str(), X_OK) != 0) {
    return not_found(exe +
                     " is missing: --check-history runs the drtmx-check built beside "
                     "drtmx-bench (build it, or check the history yourself)");
  }
  const std::string cmd = "exec " + shell_quote(exe) + " --consistency=" + shell_quote(models) +
                          " --out=" + shell_quote(file + ".check.json") + " " + shell_quote(file) +
                          " 2>" + shell_quote(file + ".check.txt");
  const int rc = std::system(cmd.c_str());
  Verdict v;
  v.exit = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : 2;
  v.summary = read_text(file + ".check.txt");
  while (!v.summary.empty() && v.summary.back() == '\n') v.summary.pop_back();
  const std::string json = read_text(file + ".check.json");
  const std::string key = "\"anomaly-types\":";
  const size_t at = json.find(key);
  v.types = "[]";
  if (at != std::string::npos) {
    const size_t end = json.find(']', at);
    if (end != std::string::npos) v.types = json.substr(at + key.size(), end + 1 - at - key.size());
  }
  if (v.exit == 2 && json.empty()) {
    return invalid_argument("drtmx-check could not read the history " + file + ": " + v.summary);
  }
  return v;
}

// Adds "history": {...} to the run's report JSON (an object).
Status add_to_report(const std::string& json_file, const std::string& entry) {
  std::string text = read_text(json_file);
  const size_t close = text.rfind('}');
  if (close == std::string::npos) return Status();  // no report (the run failed early)
  text.insert(close, ",\"history\":" + entry);
  std::string err;
  if (!write_file(json_file, text, &err)) return io_error(err, errno);
  return Status();
}

}  // namespace

std::string history_file_for(const std::string& file, const std::string& label) {
  const size_t slash = file.rfind('/');
  const size_t dot = file.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1)) {
    return file + "." + label;
  }
  return file.substr(0, dot) + "." + label + file.substr(dot);
}

Status run_with_history(const BenchOptions& o, const std::function<Status()>& run) {
  if (o.history.empty()) return run();
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string dir = history_parts_dir(o.history);
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) {
    return io_error("--history=" + o.history + ": cannot create " + dir + " (" + ec.message() +
                        "); give a file in a writable directory",
                    ec.value());
  }
  Status result = run();
  auto merged = merge_history(o.history, o.recover, o.fabric.num_nodes);
  if (!merged.is_ok()) return result.is_ok() ? merged.status() : result;
  std::cout << "history: " << merged->operations << " operations of " << merged->parts
            << " processes " << (merged->first_index ? "appended to " : "in ") << o.history;
  if (merged->dangling) std::cout << " (" << merged->dangling << " left without completion)";
  std::cout << std::endl;
  JsonWriter j;
  j.begin_object()
      .key("file")
      .value(o.history)
      .key("operations")
      .value(merged->operations)
      .key("first_index")
      .value(merged->first_index)
      .key("without_completion")
      .value(merged->dangling);
  if (!o.check_history.empty()) {
    auto v = run_checker(o.history, o.check_history);
    if (!v.is_ok()) {
      if (result.is_ok()) result = v.status();
    } else {
      const char* what = v->exit == 0 ? "valid" : v->exit == 1 ? "INVALID" : "unknown";
      std::cout << "history check (" << o.check_history << "): " << what;
      if (v->exit == 1) std::cout << " " << v->types;
      std::cout << " — drtmx-check's result in " << o.history << ".check.json" << std::endl;
      if (v->exit != 0 && !v->summary.empty()) std::cout << v->summary << std::endl;
      j.key("check")
          .begin_object()
          .key("models")
          .value(o.check_history)
          .key("valid")
          .raw(v->exit == 0   ? "true"
               : v->exit == 1 ? "false"
                              : "\"unknown\"")
          .key("anomaly_types")
          .raw(v->types)
          .key("result")
          .value(o.history + ".check.json")
          .end_object();
      if (v->exit != 0 && result.is_ok()) {
        result = internal_error("history check: " + o.history + " is " +
                                (v->exit == 1 ? "not " + o.check_history + ": " + v->types
                                              : std::string("not decidable")) +
                                " (drtmx-check's result: " + o.history + ".check.json)");
      }
    }
  }
  j.end_object();
  if (!o.json.empty()) {
    if (Status s = add_to_report(o.json, j.str()); !s.is_ok() && result.is_ok()) result = s;
  }
  return result;
}

}  // namespace drtmx::bench
