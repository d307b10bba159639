// A time-ordered event log on drtmx: every client appends events to its own
// stream — an insert into an ordered table keyed (stream, sequence number)
// and an update of the stream's head in a hash table, in one transaction —
// and reads the newest events of other streams with a range scan. A scan is
// validated (no phantoms) or a snapshot (--mvcc=dst), so what it sees must
// agree with the head it read: as many events as the head counts, ending
// at the head's running sum.
//
//   eventlog --bench=eventlog --nodes=3 --seconds=5   (every drtmx-bench option works)
#include <charconv>
#include <cstring>
#include <random>

#include "bench.h"     // drtmx::bench::program_main
#include "txn/txn.h"   // Txn, Abort
#include "workload.h"  // Workload, WorkloadClient, WorkloadInfo

namespace {

using namespace drtmx;
using txn::Abort;
using txn::Txn;

constexpr txn::TableId kHeads = 1, kEvents = 2;
constexpr uint64_t kWindow = 32;  // a reader scans the newest events, at most this many

struct Head {
  uint64_t count;   // events in the stream: sequence numbers 0 .. count-1
  int64_t running;  // the sum of their amounts
};
struct Event {
  int64_t amount;
  int64_t running;  // the stream's sum up to and including this event
};
uint64_t event_key(uint64_t stream, uint64_t seq) {
  return stream << 32 | seq;
}

struct Config {
  uint64_t streams = 1, per_partition = 1;  // a stream per coroutine; streams per partition
  uint32_t partitions = 1;
  uint64_t max_events = 2000;  // --events: per stream, then the stream only reads
};

class Client final : public bench::WorkloadClient {
 public:
  Client(const Config& c, uint64_t stream, uint64_t seed) : c_(c), me_(stream), rng_(seed) {}

  bench::TxnDraw next() override {
    scan_ = appended_ < c_.max_events ? rng_() % 4 == 0 : true;
    if (scan_) {
      const uint64_t s = rng_() % c_.streams;
      return {1, [this, s](Txn& tx) { return read_newest(tx, s); }, txn::Kind::kReadOnly};
    }
    amount_ = 1 + static_cast<int64_t>(rng_() % 100);
    return {0, [this](Txn& tx) {
              Head h;
              if (Abort a = tx.get_for_update(kHeads, me_, &h); a != Abort::kNone) return a;
              const Event e{amount_, h.running + amount_};
              // A new key: kDuplicateInsert if it existed (it cannot: one writer per stream).
              if (Abort a = tx.insert(kEvents, event_key(me_, h.count), &e); a != Abort::kNone)
                return a;
              h = {h.count + 1, e.running};
              return tx.put(kHeads, me_, &h);
            }};
  }
  void committed() override {
    if (!scan_) {
      ++appended_;
      amounts_ += amount_;
    } else {
      ++scans_;
      bad_ += consistent_ ? 0 : 1;
    }
  }
  void sums(std::vector<int64_t>& out) const override {
    out.insert(out.end(), {static_cast<int64_t>(appended_), amounts_, scans_, bad_});
  }

 private:
  // Stream s's head, then its newest events by a range scan.
  Abort read_newest(Txn& tx, uint64_t s) {
    Head h;
    if (Abort a = tx.get(kHeads, s, &h); a != Abort::kNone) return a;
    const uint64_t from = h.count > kWindow ? h.count - kWindow : 0;
    Txn::Rows rows;
    // Up to the end of the stream's key range, one row more than expected:
    // an event the head does not count would show.
    if (Abort a =
            tx.scan(kEvents, event_key(s, from), event_key(s, 0xffffffff), kWindow + 1, &rows);
        a != Abort::kNone)
      return a;
    consistent_ = rows.keys.size() == h.count - from;
    for (size_t i = 0; consistent_ && i < rows.keys.size(); ++i) {
      Event e;
      std::memcpy(&e, rows.values.data() + i * sizeof e, sizeof e);
      consistent_ = rows.keys[i] == event_key(s, from + i) &&
                    (i + 1 < rows.keys.size() || e.running == h.running);
    }
    return Abort::kNone;
  }

  Config c_;
  uint64_t me_;
  std::mt19937_64 rng_;
  bool scan_ = false, consistent_ = true;
  int64_t amount_ = 0, amounts_ = 0, scans_ = 0, bad_ = 0;
  uint64_t appended_ = 0;
};

class EventLog final : public bench::Workload {
 public:
  explicit EventLog(const Config& c) : c_(c) {}
  std::string name() const override { return "eventlog"; }
  std::vector<std::string> txn_types() const override { return {"Append", "ReadNewest"}; }
  std::string describe() const override {
    return "streams=" + std::to_string(c_.streams) + " events=" + std::to_string(c_.max_events);
  }
  // Scans copy each row into the coroutine's arena: room for a window.
  size_t arena_bytes() const override { return 256 * 1024; }
  std::vector<store::TableSpec> tables() const override {
    store::TableSpec heads;
    heads.id = kHeads;
    heads.name = "heads";
    heads.value_size = sizeof(Head);
    heads.capacity = c_.per_partition;
    heads.scheme = store::PartitionScheme::kFunction;
    heads.partitions = c_.partitions;
    heads.partition_fn = [per = c_.per_partition](uint64_t s) { return uint32_t(s / per); };
    // Ordered, range-partitioned at stream boundaries: a stream's events
    // are one range of one partition, in key order.
    store::TableSpec events;
    events.id = kEvents;
    events.name = "events";
    events.kind = store::TableKind::kOrdered;
    events.value_size = sizeof(Event);
    events.capacity = c_.per_partition * c_.max_events;
    events.scheme = store::PartitionScheme::kRange;
    events.partitions = c_.partitions;
    for (uint32_t p = 1; p < c_.partitions; ++p)
      events.range_bounds.push_back(event_key(p * c_.per_partition, 0));
    return {heads, events};
  }
  Status load(store::tables::StoreNode& node, const store::Catalog& cat) const override {
    const store::TableSpec& t = *cat.find(kHeads);
    const Head empty{0, 0};
    for (store::PartitionId p : cat.hosted(node.node(), t)) {
      for (uint64_t s = p * c_.per_partition; s < (p + 1) * c_.per_partition; ++s)
        DRTMX_RETURN_IF_ERROR(
            node.load(t, s, {reinterpret_cast<const uint8_t*>(&empty), sizeof empty}));
    }
    return Status::ok();  // no events yet
  }
  std::unique_ptr<bench::WorkloadClient> client(uint32_t index, uint64_t seed) const override {
    return std::make_unique<Client>(c_, index % c_.streams, seed * 7919 + index);
  }
  // Per node, over the partitions whose primaries it holds: [events the
  // heads count, their running sums, events in the log, their amounts].
  Result<std::vector<int64_t>> node_audit(const store::tables::StoreNode& node,
                                          const store::Catalog& cat) const override {
    const store::TableSpec& heads = *cat.find(kHeads);
    const store::TableSpec& events = *cat.find(kEvents);
    auto primary_here = [&](const store::TableSpec& t, store::PartitionId p) {
      return cat.replicas_of(t, p, node.node()).primary == node.node();
    };
    std::vector<int64_t> out(4, 0);
    for (store::PartitionId p : cat.hosted(node.node(), heads)) {
      if (!primary_here(heads, p)) continue;
      for (uint64_t s = p * c_.per_partition; s < (p + 1) * c_.per_partition; ++s) {
        Head h{};
        auto found = node.get_local(heads, s, {reinterpret_cast<uint8_t*>(&h), sizeof h});
        if (!found.is_ok()) return found.status();
        out[0] += static_cast<int64_t>(h.count);
        out[1] += h.running;
      }
    }
    for (store::PartitionId p : cat.hosted(node.node(), events)) {
      if (!primary_here(events, p)) continue;
      for (uint64_t s = p * c_.per_partition; s < (p + 1) * c_.per_partition; ++s) {
        for (uint64_t n = 0;; ++n) {  // a stream's events: 0, 1, ... without a gap
          Event e{};
          auto f =
              node.get_local(events, event_key(s, n), {reinterpret_cast<uint8_t*>(&e), sizeof e});
          if (!f.is_ok()) return f.status();
          if (!*f) break;
          ++out[2];
          out[3] += e.amount;
        }
      }
    }
    return out;
  }
  Status check(const std::vector<int64_t>& nodes,
               const std::vector<int64_t>& clients) const override {
    if (nodes[0] != clients[0] || nodes[1] != clients[1])
      return internal_error("the heads count " + std::to_string(nodes[0]) +
                            " events, the clients " + "committed " + std::to_string(clients[0]));
    if (nodes[2] != nodes[0] || nodes[3] != nodes[1])
      return internal_error("the log holds " + std::to_string(nodes[2]) + " events in sequence, " +
                            "the heads count " + std::to_string(nodes[0]));
    if (clients[3] != 0)
      return internal_error(std::to_string(clients[3]) + " of " + std::to_string(clients[2]) +
                            " scans saw events their head did not count, or missed some");
    return Status::ok();
  }

 private:
  Config c_;
};

}  // namespace

int main(int argc, char** argv) {
  bench::WorkloadInfo log;
  log.name = "eventlog";
  log.summary = "appends to per-client streams (ordered inserts), range scans of the newest";
  log.options = {{"events", "events per stream before it only reads (2000)"}};
  log.make = [](const bench::WorkloadOptions& o,
                const bench::WorkloadEnv& env) -> Result<std::unique_ptr<bench::Workload>> {
    Config c;
    if (auto it = o.find("events"); it != o.end()) {
      const std::string& v = it->second;
      if (std::from_chars(v.data(), v.data() + v.size(), c.max_events).ptr != v.data() + v.size() ||
          c.max_events == 0 || c.max_events > 1000000)
        return invalid_argument("--events must be 1..1000000");
    }
    c.partitions = uint32_t{env.nodes} * env.threads;
    c.per_partition = env.coroutines;  // a stream per coroutine
    c.streams = c.per_partition * c.partitions;
    return std::unique_ptr<bench::Workload>(new EventLog(c));
  };
  return bench::program_main(argc, argv, "eventlog", {log});
}
