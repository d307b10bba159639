// SmallBank's transactions (H-Store definitions) over the Txn API, and the
// client that draws them. Independent reads are issued together with
// Txn::prefetch (one round trip for both of a customer's accounts).
#include <cstring>

#include "smallbank/smallbank_client.h"

namespace drtmx::bench::smallbank {
namespace {

using txn::Abort;
using txn::Txn;

Abort read(Txn& tx, txn::TableId t, uint64_t c, int64_t* v, bool for_update) {
  return for_update ? tx.get_for_update(t, c, v) : tx.get(t, c, v);
}

class Client final : public WorkloadClient {
 public:
  Client(const Config& c, uint32_t index, uint64_t seed)
      : c_(c),
        rng_((seed * 0x9E3779B97F4A7C15ull) ^ (uint64_t{index} * 0xD1B54A32D192ED03ull) ^ 1) {
    uint32_t acc = 0;
    for (size_t i = 0; i < c_.mix.size(); ++i) cumulative_[i] = acc += c_.mix[i];
  }

  TxnDraw next() override {
    delta_ = 0;
    audit_sum_ = 0;
    amount_ = 1 + static_cast<int64_t>(rand() % 100);
    if (c_.audit_pct && rand() % 100 < c_.audit_pct) {
      type_ = kAudit;
    } else {
      const uint32_t r = static_cast<uint32_t>(rand() % 100);
      type_ = 0;
      while (r >= cumulative_[type_]) ++type_;
    }
    c0_ = customer();
    c1_ = customer();
    while (c1_ == c0_) c1_ = customer();
    if (type_ == kTransactSavings) amount_ = static_cast<int64_t>(rand() % 201) - 100;
    // With audits on, half the payments move money inside the audited group.
    if (type_ == kSendPayment && c_.audit_pct && rand() % 2 == 0) {
      c0_ = group_member();
      c1_ = group_member();
      while (c1_ == c0_) c1_ = group_member();
    }
    const bool read_only = type_ == kBalance || type_ == kAudit;
    return TxnDraw{type_, [this](Txn& tx) { return run(tx); },
                   read_only ? txn::Kind::kReadOnly : txn::Kind::kReadWrite};
  }

  void committed() override {
    delta_total_ += delta_;
    if (type_ == kAudit) {
      ++audits_;
      if (audit_sum_ != audit_expected()) ++bad_audits_;
    }
  }

  void sums(std::vector<int64_t>& out) const override {
    out = {delta_total_, audits_, bad_audits_};
  }

  // The money the prepared transaction adds (audits are read-only: never
  // prepared).
  void pending_sums(std::vector<int64_t>& out) const override { out = {delta_, 0, 0}; }

 private:
  uint64_t rand() {
    rng_ ^= rng_ << 13;
    rng_ ^= rng_ >> 7;
    rng_ ^= rng_ << 17;
    return rng_;
  }
  // A customer outside the audited group: hot with hot_access_pct.
  uint64_t customer() {
    const uint64_t p = rand() % c_.partitions;
    const bool hot = c_.hot_pct > 0 && rand() % 100 < c_.hot_access_pct;
    const uint64_t span = hot ? c_.hot_per_partition() : c_.ordinary_per_partition();
    return p * c_.accounts + rand() % span;
  }
  uint64_t group_member() {
    const uint64_t p = rand() % c_.partitions;
    return p * c_.accounts + c_.ordinary_per_partition() + rand() % c_.audit_group;
  }
  int64_t audit_expected() const {
    int64_t s = 0;
    for (uint64_t p = 0; p < c_.partitions; ++p) {
      for (uint32_t i = 0; i < c_.audit_group; ++i) {
        s += initial_checking(p * c_.accounts + c_.ordinary_per_partition() + i);
      }
    }
    return s;
  }

  // Each procedure may run several times (aborts are retried): it sets
  // delta_ / audit_sum_ from scratch on every attempt.
  Abort run(Txn& tx) {
    delta_ = 0;
    switch (type_) {
      case kAmalgamate:
        return amalgamate(tx);
      case kBalance:
        return balance(tx);
      case kDepositChecking:
        return deposit_checking(tx);
      case kSendPayment:
        return send_payment(tx);
      case kTransactSavings:
        return transact_savings(tx);
      case kWriteCheck:
        return write_check(tx);
      case kAudit:
        return audit(tx);
    }
    return tx.user_abort();
  }

  Abort amalgamate(Txn& tx) {
    const txn::TableKey keys[] = {{kSavings, c0_}, {kChecking, c0_}, {kChecking, c1_}};
    if (Abort r = tx.prefetch(keys, true); r != Abort::kNone) return r;
    int64_t s0, k0, k1;
    if (Abort r = read(tx, kSavings, c0_, &s0, true); r != Abort::kNone) return r;
    if (Abort r = read(tx, kChecking, c0_, &k0, true); r != Abort::kNone) return r;
    if (Abort r = read(tx, kChecking, c1_, &k1, true); r != Abort::kNone) return r;
    k1 += s0 + k0;
    const int64_t zero = 0;
    if (Abort r = tx.put(kSavings, c0_, &zero); r != Abort::kNone) return r;
    if (Abort r = tx.put(kChecking, c0_, &zero); r != Abort::kNone) return r;
    return tx.put(kChecking, c1_, &k1);
  }

  Abort balance(Txn& tx) {
    const txn::TableKey keys[] = {{kSavings, c0_}, {kChecking, c0_}};
    if (Abort r = tx.prefetch(keys, false); r != Abort::kNone) return r;
    int64_t s, k;
    if (Abort r = tx.get(kSavings, c0_, &s); r != Abort::kNone) return r;
    if (Abort r = tx.get(kChecking, c0_, &k); r != Abort::kNone) return r;
    balance_ = s + k;
    return Abort::kNone;
  }

  Abort deposit_checking(Txn& tx) {
    int64_t k;
    if (Abort r = tx.get_for_update(kChecking, c0_, &k); r != Abort::kNone) return r;
    k += amount_;
    delta_ = amount_;
    return tx.put(kChecking, c0_, &k);
  }

  Abort send_payment(Txn& tx) {
    const txn::TableKey keys[] = {{kChecking, c0_}, {kChecking, c1_}};
    if (Abort r = tx.prefetch(keys, true); r != Abort::kNone) return r;
    int64_t k0, k1;
    if (Abort r = tx.get_for_update(kChecking, c0_, &k0); r != Abort::kNone) return r;
    if (Abort r = tx.get_for_update(kChecking, c1_, &k1); r != Abort::kNone) return r;
    if (k0 < amount_) return tx.user_abort();
    k0 -= amount_;
    k1 += amount_;
    if (Abort r = tx.put(kChecking, c0_, &k0); r != Abort::kNone) return r;
    return tx.put(kChecking, c1_, &k1);
  }

  Abort transact_savings(Txn& tx) {
    int64_t s;
    if (Abort r = tx.get_for_update(kSavings, c0_, &s); r != Abort::kNone) return r;
    if (s + amount_ < 0) return tx.user_abort();
    s += amount_;
    delta_ = amount_;
    return tx.put(kSavings, c0_, &s);
  }

  Abort write_check(Txn& tx) {
    const txn::TableKey keys[] = {{kSavings, c0_}, {kChecking, c0_}};
    if (Abort r = tx.prefetch(keys, false); r != Abort::kNone) return r;
    int64_t s, k;
    if (Abort r = tx.get(kSavings, c0_, &s); r != Abort::kNone) return r;
    if (Abort r = tx.get_for_update(kChecking, c0_, &k); r != Abort::kNone) return r;
    const int64_t debit = s + k < amount_ ? amount_ + 1 : amount_;
    k -= debit;
    delta_ = -debit;
    return tx.put(kChecking, c0_, &k);
  }

  Abort audit(Txn& tx) {
    audit_sum_ = 0;
    keys_.clear();
    for (uint64_t p = 0; p < c_.partitions; ++p) {
      for (uint32_t i = 0; i < c_.audit_group; ++i) {
        keys_.push_back({kChecking, p * c_.accounts + c_.ordinary_per_partition() + i});
      }
    }
    if (Abort r = tx.prefetch(keys_, false); r != Abort::kNone) return r;
    for (const txn::TableKey& k : keys_) {
      int64_t v;
      if (Abort r = tx.get(kChecking, k.key, &v); r != Abort::kNone) return r;
      audit_sum_ += v;
    }
    return Abort::kNone;
  }

  const Config c_;
  uint64_t rng_;
  std::array<uint32_t, 6> cumulative_{};
  int type_ = 0;
  uint64_t c0_ = 0, c1_ = 0;
  int64_t amount_ = 0, delta_ = 0, balance_ = 0, audit_sum_ = 0;
  int64_t delta_total_ = 0, audits_ = 0, bad_audits_ = 0;
  std::vector<txn::TableKey> keys_;
};

}  // namespace

std::unique_ptr<WorkloadClient> make_client(const Config& c, uint32_t index, uint64_t seed) {
  return std::make_unique<Client>(c, index, seed);
}

}  // namespace drtmx::bench::smallbank
