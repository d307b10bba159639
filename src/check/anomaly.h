// What the checker reports: anomalies by type, a few of each kept in full
// (with the transactions and, for cycles, the edges between them) and all
// of them counted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace drtmx::check {

// Dependency edge types, as bits (an edge between two transactions may have
// several).
enum EdgeBits : uint8_t {
  kWW = 1,        // T2 appended to a key right after T1 in its version order
  kWR = 2,        // T2 read the version T1's append made
  kRW = 4,        // T1 read a version that T2's append followed
  kProcess = 8,   // T1 ran before T2 on the same process
  kRealtime = 16  // T1 completed before T2 was invoked
};
constexpr uint8_t kDataEdges = kWW | kWR | kRW;

const char* edge_name(uint8_t bit);

// One edge of a cycle: txns[i] -> txns[(i + 1) % n] with this type.
struct Step {
  uint32_t from = 0;
  uint32_t to = 0;
  uint8_t type = 0;  // one EdgeBits bit
};

struct Anomaly {
  std::string type;
  std::vector<uint32_t> txns;  // a cycle's transactions in order, else those involved
  std::vector<Step> steps;     // cycles only
  bool has_key = false;
  int64_t key = 0;
  bool has_value = false;
  int64_t value = 0;
  std::string explanation;
};

class AnomalySet {
 public:
  static constexpr size_t kKeptPerType = 16;

  // Whether another anomaly of `type` would be kept in full (callers skip
  // building its explanation otherwise).
  bool wants(const std::string& type) const;
  void add(Anomaly a);
  // Counts one without keeping it.
  void count(const std::string& type) { counts_[type]++; }

  const std::map<std::string, std::vector<Anomaly>>& kept() const { return kept_; }
  const std::map<std::string, uint64_t>& counts() const { return counts_; }
  bool has(const std::string& type) const { return counts_.count(type) != 0; }

 private:
  std::map<std::string, std::vector<Anomaly>> kept_;
  std::map<std::string, uint64_t> counts_;
};

}  // namespace drtmx::check
