// Histories (src/driver/history.h): parts written through shared mappings,
// their merge in time order, what a killed process leaves behind, and the
// continuation of a history by a --recover run.
#include "history.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace drtmx::bench {
namespace {

namespace fs = std::filesystem;

class History : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("drtmx-history-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    file_ = (dir_ / "h.jsonl").string();
    fs::create_directories(history_parts_dir(file_));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string part(int node, int process) const {
    return history_parts_dir(file_) + "/n" + std::to_string(node) + "-p" + std::to_string(process) +
           ".jsonl";
  }
  static std::string entry(int process, uint64_t time, const char* type) {
    return "{\"process\":" + std::to_string(process) + ",\"time\":" + std::to_string(time) +
           ",\"type\":\"" + type + "\",\"value\":[[\"r\",1,null]]}";
  }
  static void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  std::vector<std::string> lines() const {
    std::ifstream in(file_);
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  }

  fs::path dir_;
  std::string file_;
};

TEST_F(History, APartKeepsEveryLineAcrossChunksAndEndsAtItsLastLine) {
  auto p = HistoryPart::create(part(0, 0));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  // About 12 MiB: past the first 4 MiB chunks.
  const std::string pad(1000, 'x');
  uint64_t bytes = 0;
  for (int i = 0; i < 12000; ++i) {
    const std::string l = "{\"process\":0,\"time\":" + std::to_string(i) +
                          ",\"type\":\"invoke\",\"pad\":\"" + pad + "\"}";
    ASSERT_TRUE((*p)->append(l).is_ok());
    bytes += l.size() + 1;
  }
  ASSERT_TRUE((*p)->close().is_ok());
  // The file ends at the last line (no zero tail); the chunk's padding is
  // empty lines only.
  EXPECT_GE(fs::file_size(part(0, 0)), bytes);
  EXPECT_LT(fs::file_size(part(0, 0)), bytes + (size_t{4} << 20));
  auto m = merge_history(file_, false, 1);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->operations, 12000u);
  const auto ls = lines();
  ASSERT_EQ(ls.size(), 12000u);
  EXPECT_EQ(ls[0].rfind("{\"index\":0,\"process\":0,\"time\":0,", 0), 0u) << ls[0];
  EXPECT_EQ(ls[11999].rfind("{\"index\":11999,\"process\":0,\"time\":11999,", 0), 0u);
  EXPECT_FALSE(fs::exists(history_parts_dir(file_)));  // the parts are gone
}

TEST_F(History, TheMergeOrdersByTimeAndPutsInvokesFirstAtEqualTimes) {
  write(part(0, 0), entry(0, 10, "invoke") + "\n" + entry(0, 30, "ok") + "\n");
  write(part(1, 1), entry(1, 5, "invoke") + "\n" + entry(1, 30, "ok") + "\n" +
                        entry(1, 40, "invoke") + "\n" + entry(1, 50, "fail") + "\n");
  write(part(1, 2), entry(2, 30, "invoke") + "\n" + entry(2, 35, "info") + "\n");
  auto m = merge_history(file_, false, 2);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->operations, 8u);
  EXPECT_EQ(m->dangling, 0u);
  const auto ls = lines();
  ASSERT_EQ(ls.size(), 8u);
  const std::vector<std::string> want = {"5,\"type\":\"invoke\"",  "10,\"type\":\"invoke\"",
                                         "30,\"type\":\"invoke\"", "30,\"type\":\"ok\"",
                                         "30,\"type\":\"ok\"",     "35,\"type\":\"info\"",
                                         "40,\"type\":\"invoke\"", "50,\"type\":\"fail\""};
  for (size_t i = 0; i < ls.size(); ++i) {
    EXPECT_EQ(ls[i].rfind("{\"index\":" + std::to_string(i) + ",", 0), 0u) << ls[i];
    EXPECT_NE(ls[i].find("\"time\":" + want[i]), std::string::npos) << i << ": " << ls[i];
  }
}

TEST_F(History, AKilledProcessLeavesItsLinesAnOpenInvokeAndZeros) {
  // What a SIGKILL leaves: whole lines, a line cut in the middle, then the
  // rest of the chunk in zeros.
  std::string bytes = entry(3, 1, "invoke") + "\n" + entry(3, 2, "ok") + "\n" +
                      entry(3, 3, "invoke") + "\n" + entry(3, 4, "ok").substr(0, 20);
  bytes.append(4096, '\0');
  write(part(0, 3), bytes);
  write(part(1, 4), entry(4, 2, "invoke") + "\n");  // killed after its invoke
  auto m = merge_history(file_, false, 2);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->operations, 4u);
  EXPECT_EQ(m->dangling, 2u);
  const auto ls = lines();
  ASSERT_EQ(ls.size(), 4u);
  EXPECT_NE(ls.back().find("\"time\":3,\"type\":\"invoke\""), std::string::npos) << ls.back();
}

TEST_F(History, ARecoverRunContinuesTheFileWithItsIndices) {
  write(part(0, 0), entry(0, 1, "invoke") + "\n" + entry(0, 2, "ok") + "\n");
  ASSERT_TRUE(merge_history(file_, false, 1).is_ok());
  fs::create_directories(history_parts_dir(file_));
  write(part(0, 5), entry(5, 9, "invoke") + "\n" + entry(5, 10, "ok") + "\n");
  auto m = merge_history(file_, true, 1);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  EXPECT_EQ(m->first_index, 2u);
  const auto ls = lines();
  ASSERT_EQ(ls.size(), 4u);
  EXPECT_EQ(ls[2].rfind("{\"index\":2,\"process\":5,", 0), 0u) << ls[2];
  // Without continuing, the file is replaced.
  fs::create_directories(history_parts_dir(file_));
  write(part(0, 0), entry(0, 1, "invoke") + "\n");
  ASSERT_TRUE(merge_history(file_, false, 1).is_ok());
  EXPECT_EQ(lines().size(), 1u);
}

TEST_F(History, AMissingNodeOrAForeignLineIsNamed) {
  write(part(0, 0), entry(0, 1, "invoke") + "\n");
  auto m = merge_history(file_, false, 3);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("node 1 left no part"), std::string::npos)
      << m.status().message();
  EXPECT_NE(m.status().message().find("every host shares"), std::string::npos);
  write(part(1, 1), "hello world\n" + entry(1, 1, "invoke") + "\n");
  write(part(2, 2), entry(2, 1, "invoke") + "\n");
  m = merge_history(file_, false, 3);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("n1-p1.jsonl: a line at byte 0 is not a history entry"),
            std::string::npos)
      << m.status().message();
  fs::remove_all(history_parts_dir(file_));
  m = merge_history(file_, false, 1);
  ASSERT_FALSE(m.is_ok());
  EXPECT_NE(m.status().message().find("no parts in"), std::string::npos);
}

TEST_F(History, TheRecorderCallsAnAttemptThatReachedItsLogPhaseInfo) {
  auto p = HistoryPart::create(part(0, 7));
  ASSERT_TRUE(p.is_ok());
  HistoryRecorder r(std::move(*p), 7, nullptr);
  // Committed; aborted in Validate (never prepared); aborted after Validate.
  ASSERT_TRUE(r.invoke("[[\"append\",1,2]]").is_ok());
  r.prepared({});
  r.logged(true);
  ASSERT_TRUE(r.complete(txn::Abort::kNone, "[[\"append\",1,2]]").is_ok());
  ASSERT_TRUE(r.invoke("[[\"append\",1,3]]").is_ok());
  ASSERT_TRUE(r.complete(txn::Abort::kLockHeld, "[[\"append\",1,3]]").is_ok());
  ASSERT_TRUE(r.invoke("[[\"append\",1,4]]").is_ok());
  r.prepared({});
  r.logged(false);
  ASSERT_TRUE(r.complete(txn::Abort::kNodeFailure, "[[\"append\",1,4]]").is_ok());
  ASSERT_TRUE(r.close().is_ok());
  auto m = merge_history(file_, false, 1);
  ASSERT_TRUE(m.is_ok()) << m.status().message();
  const auto ls = lines();
  ASSERT_EQ(ls.size(), 6u);
  EXPECT_NE(ls[1].find("\"type\":\"ok\""), std::string::npos) << ls[1];
  EXPECT_NE(ls[3].find("\"type\":\"fail\""), std::string::npos) << ls[3];
  EXPECT_NE(ls[5].find("\"type\":\"info\""), std::string::npos) << ls[5];
  EXPECT_NE(ls[5].find("\"value\":[[\"append\",1,4]]"), std::string::npos) << ls[5];
}

}  // namespace
}  // namespace drtmx::bench
