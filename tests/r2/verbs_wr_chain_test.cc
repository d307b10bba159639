// Work-request chain building and per-channel completion accounting of the
// verbs backend, without a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "r2/common/region_table.h"
#include "r2/verbs/keys.h"
#include "r2/verbs/rc_channel.h"
#include "r2/verbs/wr_chain.h"
#include "r2/verbs/wr_id.h"

namespace drtmx::r2::verbs {
namespace {

constexpr NodeId kPeer = 1;
constexpr RegionId kRegion = 2;
constexpr uint64_t kRemoteBase = 0x7f0000001000;
constexpr uint32_t kLkey = 0x77;

// Node 0 is "us", node 1 the peer with region 2 at kRemoteBase.
struct Fixture {
  alignas(8) uint8_t local[4096] = {};
  RegionTable regions;
  RkeyTable rkeys;
  LocalKeys lkeys;

  Fixture() {
    regions.reset(2);
    regions.add_local(local, sizeof(local));
    regions.set(0, kRegion, {reinterpret_cast<uint64_t>(local), sizeof(local)});
    regions.set(kPeer, kRegion, {kRemoteBase, 1 << 20});
    rkeys.reset(2, 2);
    rkeys.set(kPeer, kRegion, 0, 0x1000);
    rkeys.set(kPeer, kRegion, 1, 0x1001);
    lkeys.add(local, sizeof(local), kLkey);
  }
  ChannelTables tables(ThreadId t = 0) { return {&regions, &rkeys, &lkeys, t, 64}; }
  WorkRequest wr(Verb v, uint32_t len, uint64_t off, bool signaled, uint64_t id) {
    WorkRequest w;
    w.verb = v;
    w.len = len;
    w.local = local;
    w.remote = {kPeer, kRegion, off};
    w.signaled = signaled;
    w.wr_id = id;
    return w;
  }
};

WrTag tag_of(const ibv_send_wr& w) {
  WrTag t;
  EXPECT_TRUE(decode_wr_id(w.wr_id, &t));
  return t;
}

TEST(VerbsWrChain, BuildsOpcodesFlagsAddressesAndLinks) {
  Fixture f;
  RcChannel ch(kPeer, 64);
  auto t = f.tables();
  WorkRequest cas = f.wr(Verb::kCas, 0, 16, true, 4);
  cas.compare = 11;
  cas.operand = 22;
  WorkRequest faa = f.wr(Verb::kFaa, 0, 24, true, 5);
  faa.operand = 3;
  std::vector<WorkRequest> reqs = {f.wr(Verb::kRead, 100, 0, true, 1),
                                   f.wr(Verb::kWrite, 63, 128, true, 2),
                                   f.wr(Verb::kWrite, 64, 256, false, 3), cas, faa};
  for (const auto& r : reqs) {
    PostOutcome o = ch.post(r, t);
    ASSERT_EQ(o.result, PostResult::kOk);
    ASSERT_EQ(o.local_error, OpStatus::kOk);
  }
  ASSERT_EQ(ch.chain().size(), 5u);
  ibv_send_wr* head = ch.chain().link();
  ASSERT_EQ(head, &ch.chain().at(0));
  std::vector<const ibv_send_wr*> seen;
  for (ibv_send_wr* w = head; w != nullptr; w = w->next) seen.push_back(w);
  ASSERT_EQ(seen.size(), 5u);

  const ibv_send_wr& rd = *seen[0];
  EXPECT_EQ(rd.opcode, IBV_WR_RDMA_READ);
  EXPECT_EQ(rd.send_flags, unsigned{IBV_SEND_SIGNALED});
  EXPECT_EQ(rd.wr.rdma.remote_addr, kRemoteBase);
  EXPECT_EQ(rd.wr.rdma.rkey, 0x1000u);
  EXPECT_EQ(rd.num_sge, 1);
  EXPECT_EQ(rd.sg_list->addr, reinterpret_cast<uint64_t>(f.local));
  EXPECT_EQ(rd.sg_list->length, 100u);
  EXPECT_EQ(rd.sg_list->lkey, kLkey);

  const ibv_send_wr& small = *seen[1];
  EXPECT_EQ(small.opcode, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(small.send_flags, unsigned{IBV_SEND_SIGNALED | IBV_SEND_INLINE}) << "63 B is inline";
  EXPECT_EQ(small.wr.rdma.remote_addr, kRemoteBase + 128);

  const ibv_send_wr& big = *seen[2];
  EXPECT_EQ(big.opcode, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(big.send_flags, 0u) << "64 B is not inline; unsignaled";
  EXPECT_EQ(big.wr.rdma.remote_addr, kRemoteBase + 256);

  const ibv_send_wr& c = *seen[3];
  EXPECT_EQ(c.opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
  EXPECT_EQ(c.wr.atomic.remote_addr, kRemoteBase + 16);
  EXPECT_EQ(c.wr.atomic.rkey, 0x1000u);
  EXPECT_EQ(c.wr.atomic.compare_add, 11u);
  EXPECT_EQ(c.wr.atomic.swap, 22u);
  EXPECT_EQ(c.sg_list->length, 8u);

  const ibv_send_wr& a = *seen[4];
  EXPECT_EQ(a.opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
  EXPECT_EQ(a.wr.atomic.remote_addr, kRemoteBase + 24);
  EXPECT_EQ(a.wr.atomic.compare_add, 3u);
  EXPECT_EQ(a.sg_list->length, 8u);

  for (uint32_t i = 0; i < 5; ++i) {
    WrTag tg = tag_of(*seen[i]);
    EXPECT_EQ(tg.kind, WrKind::kRc);
    EXPECT_EQ(tg.channel, kPeer);
    EXPECT_EQ(tg.seq, i);
    EXPECT_FALSE(tg.forced());
  }
  ch.on_posted();
  EXPECT_TRUE(ch.chain().empty());
  EXPECT_EQ(ch.outstanding(), 5u);
}

TEST(VerbsWrChain, RkeyIsThePeerThreadsKey) {
  Fixture f;
  RcChannel c0(kPeer, 16), c1(kPeer, 16);
  ASSERT_EQ(c0.post(f.wr(Verb::kRead, 8, 0, true, 1), f.tables(0)).result, PostResult::kOk);
  ASSERT_EQ(c1.post(f.wr(Verb::kRead, 8, 0, true, 1), f.tables(1)).result, PostResult::kOk);
  EXPECT_EQ(c0.chain().at(0).wr.rdma.rkey, 0x1000u);
  EXPECT_EQ(c1.chain().at(0).wr.rdma.rkey, 0x1001u);
}

TEST(VerbsWrChain, InlineNeedsQpSupport) {
  Fixture f;
  RcChannel ch(kPeer, 16);
  ChannelTables t = f.tables();
  t.max_inline = 16;
  ASSERT_EQ(ch.post(f.wr(Verb::kWrite, 32, 0, true, 1), t).result, PostResult::kOk);
  ASSERT_EQ(ch.post(f.wr(Verb::kWrite, 16, 0, true, 1), t).result, PostResult::kOk);
  ASSERT_EQ(ch.post(f.wr(Verb::kRead, 8, 0, true, 1), t).result, PostResult::kOk);
  EXPECT_FALSE(ch.chain().at(0).send_flags & IBV_SEND_INLINE);
  EXPECT_TRUE(ch.chain().at(1).send_flags & IBV_SEND_INLINE);
  EXPECT_FALSE(ch.chain().at(2).send_flags & IBV_SEND_INLINE) << "only WRITEs are inline";
}

TEST(VerbsWrChain, ForcedSignalsAreConsumedInternally) {
  Fixture f;
  RcChannel ch(kPeer, 8);  // a signal is forced every 4th unsignaled request
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(ch.post(f.wr(Verb::kWrite, 128, 0, false, 100 + i), f.tables()).result,
              PostResult::kOk);
  }
  ASSERT_EQ(ch.chain().size(), 8u);
  for (uint32_t i = 0; i < 8; ++i) {
    const bool want = i == 3 || i == 7;
    EXPECT_EQ((ch.chain().at(i).send_flags & IBV_SEND_SIGNALED) != 0, want) << i;
    EXPECT_EQ(tag_of(ch.chain().at(i)).forced(), want) << i;
  }
  ch.on_posted();
  EXPECT_EQ(ch.outstanding(), 8u);
  EXPECT_EQ(ch.post(f.wr(Verb::kWrite, 128, 0, true, 9), f.tables()).result,
            PostResult::kQueueFull);
  Completion c;
  EXPECT_FALSE(ch.on_completion(3, true, &c)) << "forced completion is not reported";
  EXPECT_EQ(ch.outstanding(), 4u);
  EXPECT_FALSE(ch.on_completion(7, true, &c));
  EXPECT_EQ(ch.outstanding(), 0u);
  EXPECT_EQ(ch.stale_completions(), 0u);
}

TEST(VerbsWrChain, SignaledCompletionReportsAndRetiresEarlierOnes) {
  Fixture f;
  RcChannel ch(kPeer, 16);
  ch.post(f.wr(Verb::kWrite, 128, 0, false, 1), f.tables());
  ch.post(f.wr(Verb::kWrite, 128, 0, false, 2), f.tables());
  ch.post(f.wr(Verb::kRead, 128, 0, true, 3), f.tables());
  ch.on_posted();
  EXPECT_EQ(ch.outstanding(), 3u);
  Completion c;
  ASSERT_TRUE(ch.on_completion(2, true, &c));
  EXPECT_EQ(c.wr_id, 3u);
  EXPECT_EQ(c.status, OpStatus::kOk);
  EXPECT_EQ(c.verb, Verb::kRead);
  EXPECT_EQ(c.peer, kPeer);
  EXPECT_EQ(ch.outstanding(), 0u);
  EXPECT_FALSE(ch.on_completion(2, true, &c)) << "a duplicate is stale";
  EXPECT_EQ(ch.stale_completions(), 1u);
}

// Endpoint::posted/retired/retire_posted on a channel: unsignaled WRITEs
// stay unretired until a signaled request completes; the retire marker is
// a signaled zero-length WRITE to the last request's address, with no
// local buffer, whose completion retires them and is not reported.
TEST(VerbsWrChain, ARetireMarkerRetiresUnsignaledWritesUnreported) {
  Fixture f;
  RcChannel ch(kPeer, 16);
  EXPECT_EQ(ch.post_retire_marker(), PostResult::kOk);
  EXPECT_EQ(ch.chain().size(), 0u) << "nothing to retire: no marker";
  ch.post(f.wr(Verb::kWrite, 128, 64, false, 1), f.tables());
  ch.post(f.wr(Verb::kWrite, 128, 256, false, 2), f.tables());
  EXPECT_EQ(ch.posted(), 2u);
  EXPECT_EQ(ch.retired(), 0u);
  ASSERT_EQ(ch.post_retire_marker(), PostResult::kOk);
  ASSERT_EQ(ch.chain().size(), 3u);
  const ibv_send_wr& m = ch.chain().at(2);
  EXPECT_EQ(m.opcode, IBV_WR_RDMA_WRITE);
  EXPECT_EQ(m.num_sge, 0);
  EXPECT_NE(m.send_flags & IBV_SEND_SIGNALED, 0u);
  EXPECT_EQ(m.wr.rdma.remote_addr, kRemoteBase + 256);
  EXPECT_EQ(m.wr.rdma.rkey, 0x1000u);
  EXPECT_EQ(ch.posted(), 3u);
  ch.on_posted();
  Completion c;
  EXPECT_FALSE(ch.on_completion(tag_of(m).seq, true, &c)) << "the marker is not reported";
  EXPECT_EQ(ch.retired(), 3u);
  EXPECT_EQ(ch.outstanding(), 0u);
  // An error CQE of an unsignaled request (the QP flushing) retires it too.
  ch.post(f.wr(Verb::kWrite, 128, 64, false, 4), f.tables());
  ch.on_posted();
  EXPECT_TRUE(ch.on_completion(3, false, &c));
  EXPECT_EQ(ch.retired(), 4u);
}

TEST(VerbsWrChain, ErrorCompletionsAreReportedEvenUnsignaled) {
  Fixture f;
  RcChannel ch(kPeer, 16);
  ch.post(f.wr(Verb::kWrite, 128, 0, false, 1), f.tables());
  ch.post(f.wr(Verb::kWrite, 128, 0, true, 2), f.tables());
  ch.on_posted();
  Completion c;
  ASSERT_TRUE(ch.on_completion(0, false, &c));
  EXPECT_EQ(c.wr_id, 1u);
  EXPECT_EQ(c.status, OpStatus::kTransportError);
  EXPECT_EQ(ch.outstanding(), 2u) << "an unsignaled error does not free slots";
  ASSERT_TRUE(ch.on_completion(1, false, &c));  // flushed
  EXPECT_EQ(c.wr_id, 2u);
  EXPECT_EQ(c.status, OpStatus::kTransportError);
  EXPECT_EQ(ch.outstanding(), 0u);
}

TEST(VerbsWrChain, UnpostedEntriesCompleteLocally) {
  Fixture f;
  RcChannel ch(kPeer, 16);
  for (int i = 0; i < 3; ++i) ch.post(f.wr(Verb::kRead, 8, 0, true, 10 + i), f.tables());
  ch.on_post_failed(1);  // entry 0 went out; 1 and 2 did not
  EXPECT_TRUE(ch.chain().empty());
  EXPECT_TRUE(ch.has_unposted());
  Completion c[4];
  EXPECT_EQ(ch.drain_unposted(c, 4), 0) << "waits for the earlier request in flight (FIFO)";
  ASSERT_TRUE(ch.on_completion(0, true, &c[0]));
  EXPECT_EQ(c[0].wr_id, 10u);
  ASSERT_EQ(ch.drain_unposted(c, 1), 1) << "respects max";
  EXPECT_EQ(c[0].wr_id, 11u);
  EXPECT_EQ(c[0].status, OpStatus::kTransportError);
  ASSERT_EQ(ch.drain_unposted(c, 4), 1);
  EXPECT_EQ(c[0].wr_id, 12u);
  EXPECT_FALSE(ch.has_unposted());
  EXPECT_EQ(ch.outstanding(), 0u);
}

TEST(VerbsWrChain, MissingKeysCompleteLocally) {
  Fixture f;
  RcChannel ch(kPeer, 16);
  WorkRequest w = f.wr(Verb::kRead, 8, 0, true, 1);
  uint8_t elsewhere[8];
  w.local = elsewhere;
  EXPECT_EQ(ch.post(w, f.tables()).local_error, OpStatus::kBadLocalBuffer);
  RkeyTable empty;
  empty.reset(2, 2);
  ChannelTables t = f.tables();
  t.rkeys = &empty;
  EXPECT_EQ(ch.post(f.wr(Verb::kRead, 8, 0, true, 1), t).local_error, OpStatus::kBadRegion);
  EXPECT_EQ(ch.outstanding(), 0u);
  EXPECT_TRUE(ch.chain().empty());
}

TEST(VerbsWrChain, SlotsWrapAroundTheRing) {
  Fixture f;
  RcChannel ch(kPeer, 4);
  Completion c;
  for (uint64_t i = 0; i < 1000; ++i) {
    ASSERT_EQ(ch.post(f.wr(Verb::kRead, 8, 0, true, i), f.tables()).result, PostResult::kOk);
    ch.on_posted();
    ASSERT_TRUE(ch.on_completion(static_cast<uint32_t>(i), true, &c));
    ASSERT_EQ(c.wr_id, i);
  }
  EXPECT_EQ(ch.outstanding(), 0u);
}

TEST(VerbsWrChain, UdWorkRequest) {
  ibv_send_wr w;
  ibv_sge s;
  UdWrParams p;
  p.ah = reinterpret_cast<ibv_ah*>(0x1234);
  p.remote_qpn = 77;
  p.remote_qkey = 0x11111111;
  p.buf = 0x5000;
  p.len = 40;
  p.lkey = 9;
  p.max_inline = 64;
  p.ibv_wr_id = 42;
  fill_ud_wr(p, &w, &s);
  EXPECT_EQ(w.opcode, IBV_WR_SEND);
  EXPECT_EQ(w.send_flags, unsigned{IBV_SEND_INLINE});
  EXPECT_EQ(w.wr.ud.ah, p.ah);
  EXPECT_EQ(w.wr.ud.remote_qpn, 77u);
  EXPECT_EQ(w.wr.ud.remote_qkey, 0x11111111u);
  EXPECT_EQ(w.sg_list, &s);
  EXPECT_EQ(s.addr, 0x5000u);
  EXPECT_EQ(s.length, 40u);
  p.len = 100;
  p.signaled = true;
  fill_ud_wr(p, &w, &s);
  EXPECT_EQ(w.send_flags, unsigned{IBV_SEND_SIGNALED});
}

TEST(VerbsWrChain, ChainStorage) {
  WrChain c(2);
  EXPECT_EQ(c.link(), nullptr);
  c.next_wr()->wr_id = 1;
  c.commit();
  c.next_wr()->wr_id = 2;
  c.commit();
  EXPECT_TRUE(c.full());
  ibv_send_wr* h = c.link();
  EXPECT_EQ(h->wr_id, 1u);
  EXPECT_EQ(h->next->wr_id, 2u);
  EXPECT_EQ(h->next->next, nullptr);
  EXPECT_EQ(c.index_of(h->next), 1u);
  c.clear();
  EXPECT_TRUE(c.empty());
}

}  // namespace
}  // namespace drtmx::r2::verbs
