#include "json_writer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace drtmx::bench {
namespace {

TEST(JsonWriter, NestingCommasAndEscapes) {
  JsonWriter j;
  j.begin_object();
  j.key("mops").value(1.5, 2);
  j.key("name").value("a \"quoted\"\\path\n\x01");
  j.key("list").begin_array().value(uint64_t{1}).value(-2).value(true).end_array();
  j.key("nested").begin_object().key("x").value(std::nan("")).end_object();
  j.key("empty").begin_array().end_array();
  j.end_object();
  EXPECT_TRUE(j.complete());
  EXPECT_EQ(j.str(),
            "{\"mops\": 1.50, \"name\": \"a \\\"quoted\\\"\\\\path\\n\\u0001\", "
            "\"list\": [1, -2, true], \"nested\": {\"x\": null}, \"empty\": []}");
}

TEST(JsonWriter, WriteFileReportsErrors) {
  std::string err;
  EXPECT_FALSE(write_file("/nonexistent-dir/x.json", "{}", &err));
  EXPECT_NE(err.find("/nonexistent-dir/x.json"), std::string::npos);
  EXPECT_TRUE(write_file(::testing::TempDir() + "ok.json", "{}", &err));
}

}  // namespace
}  // namespace drtmx::bench
