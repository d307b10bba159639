// Node descriptor blobs exchanged at connect() (no device needed).
#include <gtest/gtest.h>

#include <string>

#include "r2/verbs/descriptors.h"

namespace drtmx::r2::verbs {
namespace {

NodeDesc sample() {
  NodeDesc d;
  d.node = 2;
  d.num_nodes = 3;
  d.threads = 2;
  d.msg_mtu = 4088;
  d.max_op_bytes = 1u << 30;
  d.recv_buffers = 1024;
  d.regions.push_back({0, 0x7f0012340000ull, 1ull << 33, {0x101, 0x201}});
  d.regions.push_back({7, 0x55aa00001000ull, 4096, {0xffffffff, 0}, Persistence::kMsync});
  for (int t = 0; t < 2; ++t) {
    ThreadDesc td;
    td.ud_qpn = 0x100 + t;
    td.qkey = 0x11111111;
    td.lid = static_cast<uint16_t>(9 + t);
    td.port = 1;
    td.active_mtu = 5;
    for (int i = 0; i < 16; ++i) td.gid[i] = static_cast<uint8_t>(i * 17 + t);
    td.rc_qpn = {0x200u + t, 0x300u + t, 0xFFFFFFu};
    d.thread_descs.push_back(td);
  }
  return d;
}

TEST(VerbsDescriptors, RoundTrip) {
  NodeDesc d = sample();
  std::string blob = serialize_node_desc(d);
  auto back = parse_node_desc(blob, 2, 3, 2);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, d);
}

TEST(VerbsDescriptors, RoundTripNoRegions) {
  NodeDesc d = sample();
  d.regions.clear();
  auto back = parse_node_desc(serialize_node_desc(d), 2, 3, 2);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(*back, d);
}

TEST(VerbsDescriptors, RegionPersistenceTravels) {
  NodeDesc d = sample();
  d.regions[0].persistence = Persistence::kPmem;
  auto back = parse_node_desc(serialize_node_desc(d), 2, 3, 2);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->regions[0].persistence, Persistence::kPmem);
  EXPECT_EQ(back->regions[1].persistence, Persistence::kMsync);
}

TEST(VerbsDescriptors, FormatIsLittleEndian) {
  std::string blob = serialize_node_desc(sample());
  EXPECT_EQ(blob.substr(0, 4), "DRVX");
  EXPECT_EQ(static_cast<uint8_t>(blob[4]), 2);  // version
  EXPECT_EQ(static_cast<uint8_t>(blob[6]), 2);  // node
}

void expect_rejected(const std::string& blob, const std::string& needle, NodeId from = 2,
                     uint16_t nodes = 3, uint16_t threads = 2) {
  auto r = parse_node_desc(blob, from, nodes, threads);
  ASSERT_FALSE(r.is_ok()) << "accepted: " << needle;
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("node " + std::to_string(from)), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(VerbsDescriptors, EveryTruncationIsRejected) {
  std::string blob = serialize_node_desc(sample());
  for (size_t n = 0; n < blob.size(); ++n) {
    expect_rejected(blob.substr(0, n), "truncated");
  }
}

TEST(VerbsDescriptors, TrailingBytesRejected) {
  expect_rejected(serialize_node_desc(sample()) + "x", "trailing");
}

TEST(VerbsDescriptors, WrongMagicOrVersionRejected) {
  std::string blob = serialize_node_desc(sample());
  std::string m = blob;
  m[0] = 'X';
  expect_rejected(m, "magic");
  std::string v = blob;
  v[4] = 9;
  expect_rejected(v, "version 9");
}

TEST(VerbsDescriptors, ShapeMismatchRejected) {
  std::string blob = serialize_node_desc(sample());
  expect_rejected(blob, "names node 2", /*from=*/1);
  expect_rejected(blob, "3 nodes", 2, /*nodes=*/4);
  expect_rejected(blob, "2 threads", 2, 3, /*threads=*/3);
}

TEST(VerbsDescriptors, BadContentRejected) {
  NodeDesc d = sample();
  d.regions[1].id = 0;
  expect_rejected(serialize_node_desc(d), "appears twice");
  d = sample();
  d.regions[0].size = 0;
  expect_rejected(serialize_node_desc(d), "size 0");
  d = sample();
  d.regions[0].base = ~0ull - 10;
  expect_rejected(serialize_node_desc(d), "wraps");
  d = sample();
  d.thread_descs[1].rc_qpn[0] = 1u << 24;
  expect_rejected(serialize_node_desc(d), "24 bits");
  d = sample();
  d.thread_descs[0].active_mtu = 0;
  expect_rejected(serialize_node_desc(d), "MTU");
  d = sample();
  d.msg_mtu = 0;
  expect_rejected(serialize_node_desc(d), "MTU is 0");
  // The persistence byte of the first region: after magic, version, the
  // node fields, the region count, id, base and size.
  std::string blob = serialize_node_desc(sample());
  const size_t at = 4 + 2 + 2 + 2 + 2 + 4 + 4 + 4 + 2 + 2 + 8 + 8;
  ASSERT_EQ(blob[at], 0);
  blob[at] = 9;
  expect_rejected(blob, "unknown persistence code 9");
}

TEST(VerbsDescriptors, GarbageRejected) {
  expect_rejected("", "truncated");
  expect_rejected(std::string(1000, '\xff'), "magic");
}

}  // namespace
}  // namespace drtmx::r2::verbs
