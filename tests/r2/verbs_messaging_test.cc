// Messaging bookkeeping of the verbs backend without a device: credits,
// receive-buffer accounting and the message header.
#include <gtest/gtest.h>

#include <vector>

#include "r2/verbs/credits.h"
#include "r2/verbs/msg_header.h"
#include "r2/verbs/recv_ring.h"

namespace drtmx::r2::verbs {
namespace {

TEST(VerbsCredits, PlanSplitsBuffersAmongSenderThreads) {
  auto p = plan_credits(1024, 4, 8);  // 32 sender threads
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->allotment, 32u);
  EXPECT_EQ(p->data_credits, 30u);
  EXPECT_EQ(p->threshold, 15u);
  EXPECT_LE(uint64_t{p->allotment} * 32, 1024u) << "never more than the posted buffers";
}

TEST(VerbsCredits, PlanRefusesTooFewBuffers) {
  auto p = plan_credits(64, 8, 4);  // 2 per sender thread
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
  EXPECT_NE(p.status().message().find("receive buffers"), std::string::npos);
  EXPECT_NE(p.status().message().find("96"), std::string::npos) << p.status().message();
}

TEST(VerbsCredits, PlanCapsCreditsToTheHeaderField) {
  auto p = plan_credits(1u << 20, 1, 1);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->data_credits, kMaxDataCredits);
}

TEST(VerbsCredits, ConsumeAndRefuseAtZero) {
  CreditBook b(3, {5, 3, 2});
  EXPECT_EQ(b.credits(1), 3u);
  EXPECT_TRUE(b.try_consume(1));
  EXPECT_TRUE(b.try_consume(1));
  EXPECT_TRUE(b.try_consume(1));
  EXPECT_FALSE(b.try_consume(1));
  EXPECT_EQ(b.credits(1), 0u);
  EXPECT_EQ(b.credits(0), 3u) << "credits are per receiver";
  b.on_returned(1, 2);
  EXPECT_EQ(b.credits(1), 2u);
  EXPECT_TRUE(b.try_consume(1));
  b.on_returned(1, 100);
  EXPECT_EQ(b.credits(1), 3u) << "never more than the allotment";
}

TEST(VerbsCredits, PiggybackReturnsOwedCredits) {
  CreditBook b(2, {6, 4, 2});
  EXPECT_EQ(b.take_owed(0), 0u);
  EXPECT_FALSE(b.on_consumed(0));
  EXPECT_EQ(b.owed(0), 1u);
  EXPECT_EQ(b.take_owed(0), 1u);
  EXPECT_EQ(b.owed(0), 0u);
  EXPECT_EQ(b.take_owed(0), 0u);
}

TEST(VerbsCredits, ExplicitReturnAtThreshold) {
  CreditBook b(2, {6, 4, 2});
  EXPECT_FALSE(b.on_consumed(1));
  EXPECT_FALSE(b.explicit_return_due(1));
  EXPECT_TRUE(b.on_consumed(1)) << "reaching the threshold asks for an explicit return";
  EXPECT_TRUE(b.explicit_return_due(1));
  EXPECT_FALSE(b.on_consumed(1)) << "reported once per crossing";
  EXPECT_EQ(b.take_owed(1), 3u);
  EXPECT_FALSE(b.explicit_return_due(1));
  b.restore_owed(1, 3);
  EXPECT_TRUE(b.explicit_return_due(1));
}

// Two endpoints' books, messages carried by hand: the sender never exceeds
// the receiver's allotment, and credits flow back.
TEST(VerbsCredits, SenderNeverOverrunsReceiver) {
  auto plan = plan_credits(16, 1, 2);  // A = 8, C = 6, threshold 3
  ASSERT_TRUE(plan.is_ok());
  CreditBook sender(2, *plan), receiver(2, *plan);
  const uint32_t to = 1, from = 0;
  uint32_t in_flight = 0, credit_msgs = 0;
  for (int round = 0; round < 100; ++round) {
    while (sender.try_consume(to)) ++in_flight;
    ASSERT_LE(in_flight + credit_msgs, plan->allotment);
    // Receiver consumes everything; explicit returns when due.
    for (; in_flight > 0; --in_flight) receiver.on_consumed(from);
    if (receiver.explicit_return_due(from)) {
      ++credit_msgs;
      sender.on_returned(to, receiver.take_owed(from));
      --credit_msgs;
    }
  }
  EXPECT_GT(sender.credits(to), 0u);
}

TEST(VerbsMsgHeader, RoundTripsSourceAndCredits) {
  MsgHeader h{MsgType::kData, 65535, 257, 4321};
  uint8_t buf[kMsgHeaderBytes + 4];
  encode_msg_header(h, buf);
  MsgHeader out;
  ASSERT_TRUE(decode_msg_header(buf, sizeof(buf), &out));
  EXPECT_EQ(out, h);
  EXPECT_EQ(buf[2], 0xFF);  // little-endian node
  EXPECT_EQ(buf[4], 0x01);  // little-endian thread
  EXPECT_EQ(buf[5], 0x01);
}

TEST(VerbsMsgHeader, CreditOnlyMessage) {
  MsgHeader h{MsgType::kCredit, 1, 2, 30};
  uint8_t buf[kMsgHeaderBytes + 1];
  encode_msg_header(h, buf);
  MsgHeader out;
  ASSERT_TRUE(decode_msg_header(buf, kMsgHeaderBytes, &out));
  EXPECT_EQ(out, h);
  EXPECT_FALSE(decode_msg_header(buf, kMsgHeaderBytes + 1, &out)) << "credit-only has no payload";
}

TEST(VerbsMsgHeader, RejectsMalformed) {
  uint8_t buf[kMsgHeaderBytes];
  encode_msg_header({MsgType::kData, 1, 2, 3}, buf);
  MsgHeader out;
  EXPECT_FALSE(decode_msg_header(buf, kMsgHeaderBytes - 1, &out));
  buf[0] = 0;
  EXPECT_FALSE(decode_msg_header(buf, kMsgHeaderBytes, &out));
  encode_msg_header({MsgType::kData, 1, 2, 3}, buf);
  buf[1] = 9;
  EXPECT_FALSE(decode_msg_header(buf, kMsgHeaderBytes, &out));
}

TEST(VerbsRecvRing, RepostsAfterConsumption) {
  RecvRing r(4, 100);
  EXPECT_EQ(r.to_post().size(), 4u);
  EXPECT_EQ(r.buffer(1) - r.buffer(0), 100);
  r.on_posted(4);
  EXPECT_EQ(r.posted(), 4u);
  EXPECT_TRUE(r.to_post().empty());

  r.on_received(2, true, 7);   // delivered: held until the next poll
  r.on_received(0, false, 0);  // credit-only / malformed: straight back
  EXPECT_EQ(r.posted(), 2u);
  EXPECT_EQ(r.held(), 1u);
  EXPECT_EQ(r.to_post(), (std::vector<uint32_t>{0}));

  std::vector<RecvRing::Held> released;
  r.release_held(&released);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].idx, 2u);
  EXPECT_EQ(released[0].peer, 7u);
  EXPECT_EQ(r.held(), 0u);
  EXPECT_EQ(r.to_post(), (std::vector<uint32_t>{0, 2}));
  r.on_posted(1);  // partial post
  EXPECT_EQ(r.to_post(), (std::vector<uint32_t>{2}));
  EXPECT_EQ(r.posted(), 3u);
  r.on_posted(1);
  EXPECT_EQ(r.posted(), 4u);
  EXPECT_EQ(r.posted() + r.held() + r.to_post().size(), r.count());
}

}  // namespace
}  // namespace drtmx::r2::verbs
