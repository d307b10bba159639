// List-append's client (append_client.h).
#include "append/append_client.h"

#include <cstring>
#include <optional>

#include "base/decimal.h"
#include "xorshift.h"
#include "ycsb.h"

namespace drtmx::bench::append {
namespace {

using txn::Abort;
using txn::Txn;

struct MicroOp {
  bool append = false;
  uint32_t slot = 0;
  uint64_t key = 0;    // logical key (epoch * keys + slot), fixed at the draw
  uint64_t value = 0;  // append: the element
};

// A slot this transaction appends to: the head as read, and what it added.
struct Written {
  uint32_t slot = 0;
  Head head;            // as read
  uint64_t epoch = 0;   // the epoch its appends go to
  uint64_t length = 0;  // that epoch's list length after the appends so far
};

class Client final : public WorkloadClient {
 public:
  Client(const Config& c, uint32_t index, uint64_t seed, std::shared_ptr<EpochHints> hints)
      : c_(c),
        rng_((seed * 0x9E3779B97F4A7C15ull) ^ (uint64_t{index} * 0xD1B54A32D192ED03ull) ^ 7),
        epochs_(std::move(hints)),
        process_(index) {
    if (c_.theta > 0) zipf_.emplace(c_.keys, c_.theta);
  }

  void set_process(uint64_t process) override { process_ = process; }

  TxnDraw next() override {
    ops_.clear();
    const uint32_t n = 1 + static_cast<uint32_t>(rand() % c_.max_ops);
    bool writes = false;
    for (uint32_t i = 0; i < n; ++i) {
      MicroOp m;
      m.slot = slot();
      m.key = logical_key(c_, m.slot, epochs_->get(m.slot));
      m.append = rand() % 100 >= c_.read_pct;
      if (m.append) m.value = (process_ << 36) | ++counter_;
      writes |= m.append;
      ops_.push_back(m);
    }
    appends_ = 0;
    for (const MicroOp& m : ops_) appends_ += m.append;
    return TxnDraw{writes ? kAppend : kRead, [this](Txn& tx) { return run(tx); },
                   writes ? txn::Kind::kReadWrite : txn::Kind::kReadOnly};
  }

  // A new attempt is a new operation: its appends take new values.
  void retrying() override {
    for (MicroOp& m : ops_) {
      if (m.append) m.value = (process_ << 36) | ++counter_;
    }
  }

  void committed() override { committed_appends_ += static_cast<int64_t>(appends_); }
  void sums(std::vector<int64_t>& out) const override { out = {committed_appends_, ahead_}; }
  void pending_sums(std::vector<int64_t>& out) const override {
    out = {static_cast<int64_t>(appends_), 0};
  }

  bool history_value(bool completed, std::string& out) const override {
    out += '[';
    size_t r = 0;
    for (size_t i = 0; i < ops_.size(); ++i) {
      const MicroOp& m = ops_[i];
      if (i) out += ',';
      out += m.append ? "[\"append\"," : "[\"r\",";
      append_decimal(out, m.key);
      out += ',';
      if (m.append) {
        append_decimal(out, m.value);
      } else if (!completed || r >= read_ends_.size()) {
        out += "null";
      } else {
        out += '[';
        const size_t from = r == 0 ? 0 : read_ends_[r - 1], to = read_ends_[r];
        ++r;
        for (size_t j = from; j < to; ++j) {
          if (j > from) out += ',';
          append_decimal(out, read_values_[j]);
        }
        out += ']';
      }
      out += ']';
    }
    out += ']';
    return true;
  }

 private:
  uint64_t rand() { return xorshift64(rng_); }
  uint32_t slot() {
    if (!zipf_) return static_cast<uint32_t>(rand() % c_.keys);
    const double u = static_cast<double>(rand() >> 11) * 0x1.0p-53;
    return static_cast<uint32_t>(zipf_->next(u));
  }

  // One attempt. Reads are recorded for the history as they happen; the
  // epochs learned from heads apply whatever the outcome (they are
  // committed values: a head is only ever written by a commit).
  Abort run(Txn& tx) {
    read_values_.clear();
    read_ends_.clear();
    written_.clear();
    Txn::Rows rows;
    for (const MicroOp& m : ops_) {
      if (!m.append) {
        const uint64_t from = row_key(m.key, 0);
        const uint64_t to = row_key(m.key, (uint64_t{1} << kPositionBits) - 1);
        if (Abort a = tx.scan(kLists, from, to, c_.max_writes + 1, &rows); a != Abort::kNone)
          return a;
        const size_t at = read_values_.size(), n = rows.keys.size();
        read_values_.resize(at + n);
        if (n > 0) {  // an empty list may leave both buffers null
          std::memcpy(read_values_.data() + at, rows.values.data(), n * sizeof(uint64_t));
        }
        read_ends_.push_back(read_values_.size());
        continue;
      }
      Written* w = nullptr;
      for (Written& x : written_) w = x.slot == m.slot ? &x : w;
      if (w == nullptr) {
        w = &written_.emplace_back();
        w->slot = m.slot;
        if (Abort a = tx.get_for_update(kHeads, m.slot, &w->head); a != Abort::kNone) return a;
        const uint64_t mine = m.key / c_.keys;  // the epoch this op was drawn for
        const Head& h = w->head;
        if (mine == h.epoch) {
          w->epoch = h.epoch;
          w->length = h.length;
        } else if (mine == h.epoch + 1 && h.length >= c_.max_writes) {
          w->epoch = mine;  // the first list of the slot's next epoch
          w->length = 0;
        } else {
          // Retired (mine < h.epoch), or ahead of the database, which only
          // a lost commit makes possible: counted for the check.
          if (mine > h.epoch) ++ahead_;
          epochs_->learn(m.slot, h.epoch);
          return tx.user_abort();
        }
      }
      if (m.key / c_.keys != w->epoch) return tx.user_abort();  // the slot moved within the txn
      if (w->length >= c_.max_writes) {
        // Full. The next draws use the slot's next epoch when the database's
        // list is (not when only this transaction's own appends overfill it).
        if (w->epoch == w->head.epoch && w->head.length >= c_.max_writes) {
          epochs_->learn(m.slot, w->epoch + 1);
        }
        return tx.user_abort();
      }
      if (Abort a = tx.insert(kLists, row_key(m.key, w->length), &m.value); a != Abort::kNone)
        return a;
      ++w->length;
      const Head nh{w->epoch, w->length};
      if (Abort a = tx.put(kHeads, m.slot, &nh); a != Abort::kNone) return a;
    }
    return Abort::kNone;
  }

  Config c_;
  uint64_t rng_;
  std::optional<Zipfian> zipf_;
  std::shared_ptr<EpochHints> epochs_;  // per slot: the epoch clients draw keys of
  uint64_t process_;
  uint64_t counter_ = 0;
  std::vector<MicroOp> ops_;
  size_t appends_ = 0;
  // The last attempt's reads, in op order: read i's list is
  // read_values_[read_ends_[i - 1], read_ends_[i]) (kept across attempts:
  // no allocation once they have grown).
  std::vector<uint64_t> read_values_;
  std::vector<size_t> read_ends_;
  std::vector<Written> written_;
  int64_t committed_appends_ = 0;
  int64_t ahead_ = 0;
};

}  // namespace

std::unique_ptr<WorkloadClient> make_client(const Config& c, uint32_t index, uint64_t seed,
                                            std::shared_ptr<EpochHints> hints) {
  return std::make_unique<Client>(c, index, seed, std::move(hints));
}

}  // namespace drtmx::bench::append
