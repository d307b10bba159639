// LocalNode: one in-process node holding every partition of a workload's
// tables (replicas 1), for testing loaders and checks against the real
// store without a cluster. A workload's test derives from it, loads, and
// reads or corrupts rows with get() / put().
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <utility>
#include <vector>

#include "r2/support/inproc_cluster.h"
#include "store/catalog.h"
#include "store/tables/plan.h"
#include "store/tables/store_node.h"

namespace drtmx::bench::testing {

struct LocalNode {
  // `partitions`: the catalog's node count (every partition lands here).
  LocalNode(std::vector<store::TableSpec> specs, uint16_t partitions) {
    auto cat = store::Catalog::create(std::move(specs), partitions, 1);
    EXPECT_TRUE(cat.is_ok()) << cat.status().to_string();
    catalog = std::move(cat.value());
    const store::tables::ScratchPlan scratch{1, 1, store::tables::scratch_per_coroutine(catalog)};
    cluster =
        r2::testing::InProcCluster::make(1, 1, store::tables::regions_of(scratch), nullptr, nullptr,
                                         store::tables::growable_regions_of(catalog, 0));
    EXPECT_TRUE(cluster->error.is_ok()) << cluster->error.to_string();
    auto s = store::tables::StoreNode::create(catalog, cluster->f(0));
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    node = std::move(s.value());
  }
  template <typename Row>
  Row get(uint16_t t, uint64_t k) {
    Row r{};
    auto g = node->get_local(*catalog.find(t), k, {reinterpret_cast<uint8_t*>(&r), sizeof r});
    EXPECT_TRUE(g.is_ok() && *g) << k;
    return r;
  }
  template <typename Row>
  void put(uint16_t t, uint64_t k, const Row& r) {
    Status s = node->load(*catalog.find(t), k, {reinterpret_cast<const uint8_t*>(&r), sizeof r});
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }

  store::Catalog catalog;
  std::unique_ptr<r2::testing::InProcCluster> cluster;
  std::unique_ptr<store::tables::StoreNode> node;
};

}  // namespace drtmx::bench::testing
