// A time-ordered event log on drtmx: each client appends events to its own
// stream — one transaction inserts the event into an ordered table keyed
// (stream, sequence number) and updates the stream's head in a hash table —
// and reads the newest events of any stream by a range scan. The scan is
// validated (no phantoms) or a snapshot (--mvcc=dst), so it must agree with
// the head read in the same transaction: every event the head counts, none
// more, ending at the head's running sum.
//
//   eventlog --bench=eventlog --nodes=3 --seconds=5   (every drtmx-bench option works)
#include <cstring>
#include <random>

#include "bench.h"             // program_main
#include "txn/txn.h"           // Txn, Abort
#include "workload.h"          // Workload, WorkloadClient, WorkloadInfo
#include "workload_options.h"  // option_number

namespace {

using namespace drtmx;
using txn::Abort;
using txn::Txn;

constexpr txn::TableId kHeads = 1, kEvents = 2;
constexpr uint64_t kWindow = 32;  // a read scans at most this many of the newest events
struct Head {
  uint64_t count;   // events 0 .. count-1
  int64_t running;  // the sum of their amounts
};
struct Event {
  int64_t amount, running;  // running: the stream's sum up to this event
};
uint64_t key(uint64_t stream, uint64_t seq) {
  return stream << 32 | seq;
}

struct Config {
  uint64_t per_partition = 8;  // streams (one per coroutine) per partition
  uint32_t partitions = 1;
  uint64_t max_events = 2000;  // --events per stream; then the client only reads
  uint64_t streams() const { return per_partition * partitions; }
};

class Client final : public bench::WorkloadClient {
 public:
  Client(const Config& c, uint64_t me, uint64_t seed) : c_(c), me_(me), rng_(seed) {}

  bench::TxnDraw next() override {
    scan_ = appended_ >= c_.max_events || rng_() % 4 == 0;
    if (scan_) {
      const uint64_t s = rng_() % c_.streams();
      return {1, [this, s](Txn& tx) { return read_newest(tx, s); }, txn::Kind::kReadOnly};
    }
    amount_ = 1 + static_cast<int64_t>(rng_() % 100);
    return {0, [this](Txn& tx) {
              Head h;
              if (Abort a = tx.get_for_update(kHeads, me_, &h); a != Abort::kNone) return a;
              const Event e{amount_, h.running + amount_};
              if (Abort a = tx.insert(kEvents, key(me_, h.count), &e); a != Abort::kNone) return a;
              h = {h.count + 1, e.running};
              return tx.put(kHeads, me_, &h);
            }};
  }
  void committed() override {
    if (!scan_) ++appended_, amounts_ += amount_;
    if (scan_) ++scans_, bad_ += consistent_ ? 0 : 1;
  }
  void sums(std::vector<int64_t>& out) const override {
    out.insert(out.end(), {int64_t(appended_), amounts_, scans_, bad_});
  }

 private:
  Abort read_newest(Txn& tx, uint64_t s) {
    Head h;
    if (Abort a = tx.get(kHeads, s, &h); a != Abort::kNone) return a;
    const uint64_t from = h.count > kWindow ? h.count - kWindow : 0;
    Txn::Rows rows;  // to the end of the stream's keys, one row more than expected
    if (Abort a = tx.scan(kEvents, key(s, from), key(s, 0xffffffff), kWindow + 1, &rows);
        a != Abort::kNone)
      return a;
    consistent_ = rows.keys.size() == h.count - from;
    for (size_t i = 0; consistent_ && i < rows.keys.size(); ++i) {
      Event e;
      std::memcpy(&e, rows.values.data() + i * sizeof e, sizeof e);
      consistent_ =
          rows.keys[i] == key(s, from + i) && (i + 1 < rows.keys.size() || e.running == h.running);
    }
    return Abort::kNone;
  }
  Config c_;
  uint64_t me_, appended_ = 0;
  std::mt19937_64 rng_;
  bool scan_ = false, consistent_ = true;
  int64_t amount_ = 0, amounts_ = 0, scans_ = 0, bad_ = 0;
};

class EventLog final : public bench::Workload {
 public:
  explicit EventLog(const Config& c) : c_(c) {}
  std::string name() const override { return "eventlog"; }
  std::vector<std::string> txn_types() const override { return {"Append", "ReadNewest"}; }
  std::string describe() const override { return "events=" + std::to_string(c_.max_events); }
  size_t arena_bytes() const override { return 256 * 1024; }  // scans copy rows into it
  std::vector<store::TableSpec> tables() const override {
    store::TableSpec heads{kHeads, "heads", store::TableKind::kHash, sizeof(Head),
                           c_.per_partition};
    heads.scheme = store::PartitionScheme::kFunction;
    heads.partitions = c_.partitions;
    heads.partition_fn = [per = c_.per_partition](uint64_t s) { return uint32_t(s / per); };
    // Ordered and cut at stream boundaries: a stream is one key range of one partition.
    store::TableSpec events{kEvents,
                            "events",
                            store::TableKind::kOrdered,
                            sizeof(Event),
                            c_.per_partition * c_.max_events,
                            store::PartitionScheme::kRange,
                            c_.partitions};
    for (uint32_t p = 1; p < c_.partitions; ++p)
      events.range_bounds.push_back(key(p * c_.per_partition, 0));
    return {heads, events};
  }
  Status load(store::tables::StoreNode& node, const store::Catalog& cat) const override {
    const store::TableSpec& t = *cat.find(kHeads);
    const Head empty{0, 0};  // no events yet
    for (store::PartitionId p : cat.hosted(node.node(), t)) {
      for (uint64_t s = p * c_.per_partition; s < (p + 1) * c_.per_partition; ++s)
        DRTMX_RETURN_IF_ERROR(
            node.load(t, s, {reinterpret_cast<const uint8_t*>(&empty), sizeof empty}));
    }
    return Status::ok();
  }
  std::unique_ptr<bench::WorkloadClient> client(uint32_t index, uint64_t seed) const override {
    return std::make_unique<Client>(c_, index % c_.streams(), seed * 7919 + index);
  }
  // Per node, over its primary copies: [events the heads count, their sum,
  // events found in sequence in the log, their sum].
  Result<std::vector<int64_t>> node_audit(const store::tables::StoreNode& node,
                                          const store::Catalog& cat) const override {
    std::vector<int64_t> out(4, 0);
    for (store::TableId id : {kHeads, kEvents}) {
      const store::TableSpec& t = *cat.find(id);
      for (store::PartitionId p : cat.hosted(node.node(), t)) {
        if (cat.replicas_of(t, p, node.node()).primary != node.node()) continue;
        for (uint64_t s = p * c_.per_partition; s < (p + 1) * c_.per_partition; ++s) {
          for (uint64_t n = 0;; ++n) {  // a head once; events 0, 1, ... until one is missing
            int64_t v[2] = {0, 0};
            auto f = node.get_local(t, id == kHeads ? s : key(s, n),
                                    {reinterpret_cast<uint8_t*>(v), 16});
            if (!f.is_ok()) return f.status();
            if (!*f) break;
            out[id == kHeads ? 0 : 2] += id == kHeads ? v[0] : 1;
            out[id == kHeads ? 1 : 3] += id == kHeads ? v[1] : v[0];
            if (id == kHeads) break;
          }
        }
      }
    }
    return out;
  }
  Status check(const std::vector<int64_t>& nodes,
               const std::vector<int64_t>& clients) const override {
    if (nodes[0] != clients[0] || nodes[1] != clients[1]) return internal_error("heads != commits");
    if (nodes[2] != nodes[0] || nodes[3] != nodes[1]) return internal_error("log != heads");
    if (clients[3] != 0)
      return internal_error(std::to_string(clients[3]) + " scans disagreed with their head");
    return Status::ok();
  }

 private:
  Config c_;
};

}  // namespace

int main(int argc, char** argv) {
  bench::WorkloadInfo log{"eventlog",
                          "appends to per-client streams, range scans of the newest",
                          {{"events", "events per stream before it only reads (2000)"}},
                          {}};
  log.make = [](const bench::WorkloadOptions& o,
                const bench::WorkloadEnv& env) -> Result<std::unique_ptr<bench::Workload>> {
    auto events = bench::option_number(o, "events", 2000, 1, 1000000);
    if (!events.is_ok()) return events.status();
    return std::unique_ptr<bench::Workload>(
        new EventLog(Config{env.coroutines, uint32_t{env.nodes} * env.threads, *events}));
  };
  return bench::program_main(argc, argv, "eventlog", {log});
}
