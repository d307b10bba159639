// Bad histories are refused with one line naming the operation and what is
// wrong; good ones parse in both layouts (JSON array, JSON Lines).
#include <gtest/gtest.h>

#include "history_builder.h"

namespace drtmx::check::test {
namespace {

std::string parse_error(const std::string& text) {
  auto h = parse_history_text(text);
  EXPECT_FALSE(h.is_ok()) << text;
  if (h.is_ok()) return "";
  EXPECT_EQ(h.status().message().find('\n'), std::string::npos);
  return h.status().message();
}

#define EXPECT_HAS(hay, needle) EXPECT_NE(std::string(hay).find(needle), std::string::npos) << (hay)

const char* kInvoke =
    R"({"index":0,"process":0,"time":1,"type":"invoke","value":[["append",1,2]]})";

TEST(CheckParse, ArrayAndLinesAgree) {
  std::string lines = history_text({{0, 0, 10, "ok", R"([["append",1,1],["r",2,[]]])"},
                                    {1, 5, 15, "info", R"([["r",1,null]])"}});
  std::string array = "[";
  size_t pos = 0;
  while (true) {
    size_t end = lines.find('\n', pos);
    if (end == std::string::npos) break;
    array += (pos ? ",\n" : "") + lines.substr(pos, end - pos);
    pos = end + 1;
  }
  array += "]";
  for (const std::string& text : {lines, array}) {
    auto h = parse_history_text(text);
    ASSERT_TRUE(h.is_ok()) << h.status().to_string();
    ASSERT_EQ(h->txns.size(), 2u);
    EXPECT_EQ(h->op_count, 4u);
    EXPECT_EQ(h->txns[0].outcome, Outcome::kOk);
    EXPECT_EQ(h->txns[1].outcome, Outcome::kInfo);
    ASSERT_EQ(h->txns[0].mop_count, 2u);
    const MicroOp& r = h->mops[h->txns[0].mop_begin + 1];
    EXPECT_EQ(r.kind, MopKind::kRead);
    EXPECT_TRUE(r.read_known);
    EXPECT_EQ(r.read_len, 0u);
  }
}

TEST(CheckParse, OtherJepsenFieldsAreIgnored) {
  auto h = parse_history_text(
      R"({"index":0,"process":0,"time":1,"type":"invoke","f":"txn","node":"n1","value":[["r",1,null]]})"
      "\n"
      R"({"index":1,"process":0,"time":2,"type":"ok","f":"txn","error":null,"value":[["r",1,[]]]})");
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(h->txns[0].outcome, Outcome::kOk);
}

TEST(CheckParse, MalformedJsonNamesTheLine) {
  std::string m = parse_error(std::string(kInvoke) + "\n\n{\"index\":1,\"process\":0,");
  EXPECT_HAS(m, "line 3");
  EXPECT_HAS(m, "not valid JSON");
}

TEST(CheckParse, MissingField) {
  std::string m = parse_error(R"({"index":4,"time":1,"type":"invoke","value":[]})");
  EXPECT_HAS(m, "op index 4");
  EXPECT_HAS(m, "missing \"process\"");
}

TEST(CheckParse, WrongTypes) {
  EXPECT_HAS(parse_error(R"({"index":0,"process":"a","time":1,"type":"invoke","value":[]})"),
             "\"process\" must be an integer");
  EXPECT_HAS(parse_error(R"({"index":0,"process":0,"time":1.5,"type":"invoke","value":[]})"),
             "\"time\" must be an integer");
  EXPECT_HAS(parse_error(R"({"index":0,"process":0,"time":1,"type":"done","value":[]})"),
             "use invoke, ok, fail or info");
  EXPECT_HAS(parse_error(R"({"index":0,"process":0,"time":1,"type":"invoke","value":[["w",1,2]]})"),
             "use \"append\" or \"r\"");
  EXPECT_HAS(
      parse_error(R"({"index":0,"process":0,"time":1,"type":"invoke","value":[["append","k",2]]})"),
      "key must be an integer");
  EXPECT_HAS(
      parse_error(R"({"index":0,"process":0,"time":1,"type":"invoke","value":[["append",1]]})"),
      "must have 3 elements");
  EXPECT_HAS(parse_error(R"({"index":0,"process":0,"time":1,"type":"invoke","value":7})"),
             "\"value\" must be a list");
  EXPECT_HAS(parse_error("[1]"), "#1 in the array");
}

TEST(CheckParse, CompletionWithoutInvoke) {
  std::string m = parse_error(R"({"index":7,"process":3,"time":1,"type":"ok","value":[]})");
  EXPECT_HAS(m, "op index 7");
  EXPECT_HAS(m, "without an outstanding invoke");
}

TEST(CheckParse, SecondInvokeOnABusyProcess) {
  std::string m = parse_error(std::string(kInvoke) + "\n" +
                              R"({"index":1,"process":0,"time":2,"type":"invoke","value":[]})");
  EXPECT_HAS(m, "op index 1");
  EXPECT_HAS(m, "still outstanding");
}

TEST(CheckParse, CompletionDiffersFromInvoke) {
  std::string m =
      parse_error(std::string(kInvoke) + "\n" +
                  R"({"index":1,"process":0,"time":2,"type":"ok","value":[["append",1,3]]})");
  EXPECT_HAS(m, "differs from its invoke");
}

TEST(CheckParse, OkReadWithoutList) {
  std::string m =
      parse_error(R"({"index":0,"process":0,"time":1,"type":"invoke","value":[["r",1,null]]})"
                  "\n"
                  R"({"index":1,"process":0,"time":2,"type":"ok","value":[["r",1,null]]})");
  EXPECT_HAS(m, "must have a list");
}

TEST(CheckParse, CompletionBeforeInvoke) {
  std::string m =
      parse_error(std::string(kInvoke) + "\n" +
                  R"({"index":1,"process":0,"time":0,"type":"ok","value":[["append",1,2]]})");
  EXPECT_HAS(m, "before its invoke");
}

TEST(CheckParse, EmptyAndUnreadable) {
  EXPECT_HAS(parse_error("  \n"), "empty");
  auto h = parse_history_file("/nonexistent/history.json");
  ASSERT_FALSE(h.is_ok());
  EXPECT_HAS(h.status().message(), "cannot read /nonexistent/history.json");
}

TEST(CheckParse, DuplicateAppendIsRefusedByTheCheck) {
  auto c = check_text(history_text(
      {{0, 0, 10, "ok", R"([["append",1,5]])"}, {1, 20, 30, "ok", R"([["append",1,5]])"}}));
  ASSERT_FALSE(c.is_ok());
  EXPECT_HAS(c.status().message(), "value 5 is appended to key 1 by both");
}

TEST(CheckParse, UnknownModel) {
  auto m = parse_models("serializable,linearizable");
  ASSERT_FALSE(m.is_ok());
  EXPECT_HAS(m.status().message(), "unknown model 'linearizable'");
}

}  // namespace
}  // namespace drtmx::check::test
