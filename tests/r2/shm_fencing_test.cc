// Membership fencing on the shm fabric (Fabric::apply_membership), nodes as
// threads of this process: a node removed from a target's view has its
// one-sided ops on that target refused (kFenced, memory untouched) even
// before it learns it; its messages are refused or dropped; a node that
// learns it was removed refuses everything itself; and ops among members go
// on as before.
#include <gtest/gtest.h>

#include <cstring>

#include "r2/support/inproc_cluster.h"

namespace drtmx::r2 {
namespace {

using testing::InProcCluster;
using testing::poll_n;

constexpr RegionId kData = 1;
constexpr RegionId kScratch = 2;

WorkRequest faa(NodeId node, uint64_t offset, void* local, uint64_t id) {
  WorkRequest w;
  w.verb = Verb::kFaa;
  w.remote = {node, kData, offset};
  w.local = local;
  w.len = 8;
  w.operand = 1;
  w.wr_id = id;
  return w;
}

WorkRequest write(NodeId node, uint64_t offset, void* local, uint32_t len, uint64_t id) {
  WorkRequest w;
  w.verb = Verb::kWrite;
  w.remote = {node, kData, offset};
  w.local = local;
  w.len = len;
  w.wr_id = id;
  return w;
}

// Posts `w`, rings the doorbell, returns its completion status.
OpStatus run(Endpoint* ep, const WorkRequest& w) {
  EXPECT_EQ(ep->post(w), PostResult::kOk);
  ep->doorbell(w.remote.node);
  auto c = poll_n(ep, 1);
  EXPECT_EQ(c.size(), 1u);
  return c.empty() ? OpStatus::kTransportError : c[0].status;
}

NodeSet set_of(std::initializer_list<uint16_t> nodes) {
  NodeSet s;
  for (uint16_t n : nodes) s.set(n);
  return s;
}

uint64_t word(InProcCluster& c, NodeId n, uint64_t off) {
  uint64_t v;
  std::memcpy(&v, c.base(n, kData) + off, 8);
  return v;
}

TEST(ShmFencing, TargetRefusesARemovedNodeBeforeItKnows) {
  auto c = InProcCluster::make(3, 1, {{kData, 4096}, {kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* two = c->f(2).endpoint(0);
  uint8_t* local = c->base(2, kScratch);
  ASSERT_EQ(run(two, faa(0, 0, local, 1)), OpStatus::kOk);
  ASSERT_EQ(run(two, faa(1, 0, local, 2)), OpStatus::kOk);

  // Node 0 removes node 2 (epoch 1); node 2 was not told.
  c->f(0).apply_membership(1, set_of({0, 1}));
  EXPECT_EQ(run(two, faa(0, 0, local, 3)), OpStatus::kFenced);
  std::memset(local + 64, 0xab, 64);
  EXPECT_EQ(run(two, write(0, 64, local + 64, 64, 4)), OpStatus::kFenced);
  EXPECT_EQ(word(*c, 0, 0), 1u);   // the FAA before the removal only
  EXPECT_EQ(word(*c, 0, 64), 0u);  // the WRITE touched nothing
  // Node 1 has not removed node 2: node 2's ops there still land.
  EXPECT_EQ(run(two, faa(1, 0, local, 5)), OpStatus::kOk);
  EXPECT_EQ(word(*c, 1, 0), 2u);
  // Node 0 itself refuses to talk to node 2 (its own view).
  EXPECT_EQ(run(c->f(0).endpoint(0), faa(2, 8, c->base(0, kScratch), 6)), OpStatus::kFenced);
  EXPECT_EQ(word(*c, 2, 8), 0u);
  // Members go on: 1 -> 0 and 0 -> 1.
  EXPECT_EQ(run(c->f(1).endpoint(0), faa(0, 16, c->base(1, kScratch), 7)), OpStatus::kOk);
  EXPECT_EQ(run(c->f(0).endpoint(0), faa(1, 16, c->base(0, kScratch), 8)), OpStatus::kOk);

  // Unsignaled ops are fenced too, and reported (as errors always are).
  WorkRequest u = write(0, 128, local + 64, 8, 9);
  u.signaled = false;
  EXPECT_EQ(run(two, u), OpStatus::kFenced);
  EXPECT_EQ(word(*c, 0, 128), 0u);
}

TEST(ShmFencing, MessagesOfARemovedNodeAreRefusedOrDropped) {
  auto c = InProcCluster::make(3, 1, {{kData, 4096}, {kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* zero = c->f(0).endpoint(0);
  Endpoint* two = c->f(2).endpoint(0);
  // Sent (and published) before node 0 removes node 2: dropped unread.
  ASSERT_EQ(two->send(0, 0, "old", 3), SendResult::kOk);
  two->flush_sends();
  ASSERT_EQ(c->f(1).endpoint(0)->send(0, 0, "one", 3), SendResult::kOk);
  c->f(1).endpoint(0)->flush_sends();
  c->f(0).apply_membership(1, set_of({0, 1}));
  Message m[8];
  int got = 0;
  std::vector<NodeId> from;
  for (int i = 0; i < 1000 && from.empty(); ++i) {
    got = zero->poll_messages(m, 8);
    for (int k = 0; k < got; ++k) from.push_back(m[k].src_node);
  }
  EXPECT_EQ(from, (std::vector<NodeId>{1}));
  // After the removal node 2's sends to node 0 are refused at the source.
  EXPECT_EQ(two->send(0, 0, "new", 3), SendResult::kFenced);
  // And node 0 no longer sends to node 2.
  EXPECT_EQ(zero->send(2, 0, "x", 1), SendResult::kFenced);
  EXPECT_EQ(zero->send(1, 0, "x", 1), SendResult::kOk);
}

TEST(ShmFencing, ARemovedNodeThatLearnsItRefusesEverything) {
  auto c = InProcCluster::make(3, 1, {{kData, 4096}, {kScratch, 4096}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  Endpoint* two = c->f(2).endpoint(0);
  uint8_t* local = c->base(2, kScratch);
  // Only node 2 knows (the survivors have not applied the change yet).
  c->f(2).apply_membership(1, set_of({0, 1}));
  EXPECT_EQ(run(two, faa(0, 0, local, 1)), OpStatus::kFenced);
  EXPECT_EQ(run(two, faa(1, 0, local, 2)), OpStatus::kFenced);
  EXPECT_EQ(two->send(1, 0, "x", 1), SendResult::kFenced);
  EXPECT_EQ(word(*c, 0, 0), 0u);
  EXPECT_EQ(word(*c, 1, 0), 0u);
  // An older or equal epoch changes nothing.
  c->f(2).apply_membership(1, set_of({0, 1, 2}));
  EXPECT_EQ(run(two, faa(0, 0, local, 3)), OpStatus::kFenced);
}

}  // namespace
}  // namespace drtmx::r2
