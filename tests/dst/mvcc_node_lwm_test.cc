// MvccNode's low-water mark across a node loss: the minimum of the latest
// snapshot floors of the cluster's nodes — and, once a node was removed
// (failover), of the others only. Kept at a removed node's last floor, the
// mark would stop for good: no version could be collected again, version
// stores would fill, and backups would wait for room forever.
#include <gtest/gtest.h>

#include "dst/mvcc_node.h"
#include "r2/support/inproc_cluster.h"
#include "store/tables/store_node.h"

namespace drtmx::dst {
namespace {

TEST(MvccNodeLwm, ARemovedNodeNoLongerHoldsTheMarkBack) {
  // Three nodes, no tables: the node needs no version region.
  auto cat = store::Catalog::create({}, 3, 3);
  ASSERT_TRUE(cat.is_ok()) << cat.status().to_string();
  auto cluster = r2::testing::InProcCluster::make(3, 1, {{1, 4096}});
  ASSERT_TRUE(cluster->error.is_ok());
  auto store = store::tables::StoreNode::create(*cat, cluster->f(0));
  ASSERT_TRUE(store.is_ok()) << store.status().to_string();
  MvccConfig cfg;
  cfg.workers = 1;
  cfg.coroutines = 1;
  auto m = MvccNode::create(*cat, **store, cluster->f(0), cfg);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  MvccNode& n = **m;

  const Timestamp own = n.publish(1000);  // no snapshot running: the floor is `now`
  EXPECT_EQ(own, 1000u);
  EXPECT_EQ(n.lwm(), 0u);  // not heard from nodes 1 and 2 yet: nothing is collected
  n.set_peer_floor(1, 700);
  n.set_peer_floor(2, 400);
  EXPECT_EQ(n.lwm(), 400u);
  n.set_peer_floor(2, 300);  // floors only grow: a stale one is ignored
  EXPECT_EQ(n.lwm(), 400u);

  // Node 2 fails at floor 400 and is removed: the mark moves on with the
  // others' floors.
  n.drop_peers(uint64_t{1} << 2);
  EXPECT_EQ(n.lwm(), 700u);
  n.set_peer_floor(1, 1500);
  EXPECT_EQ(n.lwm(), 1000u);  // now the own floor
  EXPECT_EQ(n.publish(2000), 2000u);
  EXPECT_EQ(n.lwm(), 1500u);
}

}  // namespace
}  // namespace drtmx::dst
