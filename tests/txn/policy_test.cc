#include "txn/policy.h"

#include <gtest/gtest.h>

namespace drtmx::txn {
namespace {

TEST(Policy, PresetsFollowTable43) {
  auto d = make_policy("drtmh", {}, false);
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->describe(), "E=hybrid V=cas+read L=write C=write+pa RO=hybrid+read");
  EXPECT_EQ(make_policy("farm", {}, false)->describe(),
            "E=onesided V=rpc+read L=write C=rpc RO=onesided+read");
  EXPECT_EQ(make_policy("drtm-r", {}, false)->describe(),
            "E=cached V=cas+read L=write C=write RO=cached+read");
  EXPECT_EQ(make_policy("fasst", {}, false)->describe(), "E=rpc V=rpc+rpc L=rpc C=rpc RO=rpc+rpc");
}

TEST(Policy, OverridesAndErrors) {
  auto p = make_policy("fasst", {{"log", "write"}, {"execute", "hybrid"}}, false);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->describe(), "E=hybrid V=rpc+rpc L=write C=rpc RO=rpc+rpc");
  EXPECT_EQ(p->preset, "fasst+overrides");
  auto bad = make_policy("drtmz", {}, true);
  EXPECT_NE(bad.status().message().find("farm, drtm-r, fasst, drtmh"), std::string::npos);
  EXPECT_NE(make_policy("drtmh", {{"lock", "mutex"}}, true).status().message().find("--lock=mutex"),
            std::string::npos);
  EXPECT_NE(make_policy("drtmh", {{"colour", "red"}}, true).status().message().find("--colour"),
            std::string::npos);
}

// Table 6-1: MVCC validates and commits by RPC, under DST and GTS alike;
// an explicit one-sided choice for those phases is refused, not ignored.
TEST(Policy, MvccPresetsAndSwitch) {
  auto x = make_policy("drtmx", {}, false);
  ASSERT_TRUE(x.is_ok());
  EXPECT_EQ(x->mvcc, Mvcc::kDst);
  EXPECT_EQ(x->describe(), "E=hybrid V=rpc+rpc L=write C=rpc+pa RO=dep-read MVCC=dst");
  auto g = make_policy("drtmx-gts", {}, false);
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g->mvcc, Mvcc::kGts);
  EXPECT_EQ(g->describe(), "E=hybrid V=rpc+rpc L=write C=rpc+pa RO=dep-read MVCC=gts");
  auto s = make_policy("drtmx", {{"mvcc", "gts"}}, false);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->mvcc, Mvcc::kGts);
  auto h = make_policy("drtmh", {{"mvcc", "gts"}}, false);  // CAS locks become RPC
  ASSERT_TRUE(h.is_ok());
  EXPECT_EQ(h->lock, LockPath::kRpc);
  EXPECT_EQ(make_policy("drtmh", {}, false)->mvcc, Mvcc::kOff);
  // Where atomics are coherent with the CPU's (shm), V and C stay
  // one-sided; rpc for all three gives Table 6-1; a mix is refused.
  auto one = make_policy("drtmx", {}, true);
  ASSERT_TRUE(one.is_ok());
  EXPECT_TRUE(mvcc_onesided(*one));
  EXPECT_EQ(one->describe(), "E=hybrid V=cas+read L=write C=write+pa RO=dep-read MVCC=dst");
  EXPECT_TRUE(mvcc_onesided(*make_policy("drtmh", {{"mvcc", "gts"}}, true)));
  EXPECT_FALSE(mvcc_onesided(*make_policy("fasst", {{"mvcc", "dst"}}, true)));
  EXPECT_FALSE(mvcc_onesided(*make_policy("drtmx", {{"validate", "rpc"}}, true)));
  EXPECT_EQ(make_policy("drtmx", {{"lock", "rpc"}, {"validate", "rpc"}, {"commit", "rpc"}}, true)
                ->describe(),
            "E=hybrid V=rpc+rpc L=write C=rpc+pa RO=dep-read MVCC=dst");
  EXPECT_NE(make_policy("drtmx", {{"lock", "cas"}, {"commit", "rpc"}}, true)
                .status()
                .message()
                .find("not a mix"),
            std::string::npos);
  EXPECT_NE(
      make_policy("drtmx-gts", {{"lock", "cas"}}, false).status().message().find("--lock=rpc"),
      std::string::npos);
  EXPECT_NE(
      make_policy("drtmx", {{"mvcc", "vts"}}, true).status().message().find("off, dst or gts"),
      std::string::npos);
}

TEST(Policy, CasLocksWithCpuCommitAreRefusedOnlyWhereAtomicsAreNotCoherent) {
  auto unsafe = make_policy("drtmh", {{"commit", "rpc"}}, /*coherent=*/false);
  ASSERT_FALSE(unsafe.is_ok());
  EXPECT_NE(unsafe.status().message().find("--commit=write"), std::string::npos);
  EXPECT_TRUE(make_policy("drtmh", {{"commit", "rpc"}}, /*coherent=*/true).is_ok());
  EXPECT_TRUE(make_policy("drtmh", {{"commit", "rpc"}, {"lock", "rpc"}}, false).is_ok());
}

}  // namespace
}  // namespace drtmx::txn
