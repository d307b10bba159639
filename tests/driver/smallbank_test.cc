// SmallBank's options and oracle, without a cluster: bad options are
// refused with a message naming them, and check() fails on every kind of
// inconsistency it is there to catch (money, replication, audits).
#include "smallbank/smallbank.h"

#include <gtest/gtest.h>

#include "smallbank/smallbank_client.h"

namespace drtmx::bench::smallbank {
namespace {

WorkloadEnv env3() {
  WorkloadEnv e;
  e.nodes = 3;
  e.threads = 1;
  e.replicas = 3;
  return e;
}

TEST(SmallBankOptions, DefaultsFollowTheThesis) {
  auto c = parse({}, env3());
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->accounts, 100000u);
  EXPECT_EQ(c->partitions, 3u);
  EXPECT_EQ(c->hot_per_partition(), 4000u);
  EXPECT_EQ(c->mix[3], 25u);
  EXPECT_EQ(c->replicas, 3);
}

TEST(SmallBankOptions, BadValuesNameTheOption) {
  const std::pair<WorkloadOptions, const char*> bad[] = {
      {{{"accounts", "0"}}, "--accounts=0"},
      {{{"accounts", "ten"}}, "--accounts=ten"},
      {{{"hot-pct", "101"}}, "--hot-pct=101"},
      {{{"mix", "15,15,15,25,15"}}, "--mix=15,15,15,25,15"},
      {{{"mix", "15,15,15,25,15,16"}}, "adding up to 100"},
      {{{"mix", "a,b,c,d,e,f"}}, "--mix=a,b,c,d,e,f"},
      {{{"audit-pct", "5"}, {"accounts", "4"}, {"audit-group", "4"}}, "--audit-group=4"},
      {{{"hot-access-pct", "0"}}, "--hot-pct needs --hot-access-pct"},
  };
  for (const auto& [opts, msg] : bad) {
    auto c = parse(opts, env3());
    ASSERT_FALSE(c.is_ok()) << msg;
    EXPECT_NE(c.status().message().find(msg), std::string::npos) << c.status().message();
  }
}

// A consistent state: every partition's primary sum and digest, the backups
// twice that (replicas 3), no deltas.
std::vector<int64_t> consistent(const Config& c) {
  const uint32_t P = c.partitions;
  std::vector<int64_t> v(4 * P, 0);
  for (uint32_t p = 0; p < P; ++p) {
    for (uint64_t k = uint64_t{p} * c.accounts; k < uint64_t{p + 1} * c.accounts; ++k) {
      v[p] += initial_savings(k) + initial_checking(k);
    }
    v[P + p] = 2 * v[p];
    v[2 * P + p] = 1000 + p;
    v[3 * P + p] = 2 * (1000 + p);
  }
  return v;
}

TEST(SmallBankOracle, AcceptsConsistentStateAndCatchesEachViolation) {
  auto c = parse({{"accounts", "50"}}, env3());
  ASSERT_TRUE(c.is_ok());
  auto wl = make(*c);
  const std::vector<int64_t> ok = consistent(*c);
  EXPECT_TRUE(wl->check(ok, {0, 0, 0}).is_ok());

  // Money created: the balances moved by 5 cents that no transaction added.
  auto money = ok;
  money[1] += 5;
  money[3 + 1] += 10;  // the backups agree with their primary
  Status s = wl->check(money, {0, 0, 0});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("money"), std::string::npos) << s.message();
  // ... unless committed transactions deposited exactly that.
  EXPECT_TRUE(wl->check(money, {5, 0, 0}).is_ok());

  // A backup that missed an update (sum) or holds other data (digest).
  auto rep = ok;
  rep[3 + 2] -= 7;
  s = wl->check(rep, {0, 0, 0});
  EXPECT_NE(s.message().find("replication"), std::string::npos) << s.message();
  auto dig = ok;
  dig[9 + 0] += 1;
  s = wl->check(dig, {0, 0, 0});
  EXPECT_NE(s.message().find("partition 0"), std::string::npos) << s.message();

  // An audit that saw money in flight.
  s = wl->check(ok, {0, 10, 1});
  EXPECT_NE(s.message().find("audits"), std::string::npos) << s.message();
}

TEST(SmallBankClient, DrawsFollowTheMixAndSparesTheAuditGroup) {
  auto c = parse({{"accounts", "1000"}, {"audit-pct", "10"}, {"audit-group", "8"}}, env3());
  ASSERT_TRUE(c.is_ok());
  auto client = make_client(*c, 5, 42);
  std::vector<int> types(kTypes, 0);
  const int n = 20000;
  for (int i = 0; i < n; ++i) types[client->next().type]++;
  // Audits ~10 %, SendPayment ~25 % of the other 90 %.
  EXPECT_NEAR(types[kAudit], n / 10, n / 50);
  EXPECT_NEAR(types[kSendPayment], n * 9 / 40, n / 40);
  EXPECT_EQ(types[kBalance] + types[kAmalgamate] + types[kDepositChecking] + types[kSendPayment] +
                types[kTransactSavings] + types[kWriteCheck] + types[kAudit],
            n);
}

}  // namespace
}  // namespace drtmx::bench::smallbank
