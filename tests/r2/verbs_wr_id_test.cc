// WrTag encoding of the ibv wr_id (no device needed).
#include <gtest/gtest.h>

#include <cstdint>

#include "r2/verbs/wr_id.h"

namespace drtmx::r2::verbs {
namespace {

WrTag round_trip(const WrTag& t) {
  WrTag out;
  EXPECT_TRUE(decode_wr_id(encode_wr_id(t), &out));
  return out;
}

TEST(VerbsWrId, RoundTripsEveryKind) {
  for (WrKind k : {WrKind::kRc, WrKind::kUdSend, WrKind::kUdRecv}) {
    WrTag t{k, 0, 7, 12345};
    EXPECT_EQ(round_trip(t), t);
  }
}

TEST(VerbsWrId, RoundTripsLimits) {
  WrTag max{WrKind::kUdRecv, kWrFlagForced, 0xFFFF, 0xFFFFFFFFu};
  EXPECT_EQ(round_trip(max), max);
  WrTag min{WrKind::kRc, 0, 0, 0};
  EXPECT_EQ(round_trip(min), min);
  EXPECT_NE(encode_wr_id(min), 0u) << "a tag never encodes to 0";
}

TEST(VerbsWrId, FieldsDoNotBleed) {
  WrTag a{WrKind::kRc, 0, 0xFFFF, 0};
  WrTag b{WrKind::kRc, 0, 0, 0xFFFFFFFFu};
  EXPECT_EQ(round_trip(a).seq, 0u);
  EXPECT_EQ(round_trip(b).channel, 0u);
  EXPECT_FALSE(round_trip(b).forced());
  WrTag f{WrKind::kRc, kWrFlagForced, 3, 9};
  EXPECT_TRUE(round_trip(f).forced());
  EXPECT_EQ(round_trip(f).channel, 3u);
}

TEST(VerbsWrId, RejectsForeignIds) {
  WrTag out;
  EXPECT_FALSE(decode_wr_id(0, &out));                                             // kind 0
  EXPECT_FALSE(decode_wr_id(uint64_t{4} << 56, &out));                             // unknown kind
  EXPECT_FALSE(decode_wr_id(~uint64_t{0}, &out));                                  // kind 0xFF
  EXPECT_FALSE(decode_wr_id((uint64_t{1} << 56) | (uint64_t{0x80} << 48), &out));  // flag
}

static_assert(encode_wr_id({WrKind::kRc, 0, 1, 2}) ==
              ((uint64_t{1} << 56) | (uint64_t{1} << 32) | 2));

}  // namespace
}  // namespace drtmx::r2::verbs
