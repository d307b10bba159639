// The acknowledgement journal (src/driver/journal.h) on its own: a
// pool file in /dev/shm written through the engine's CommitObserver calls,
// reopened as a restart would.
//
// Records keep their write sets, sums and states across a reopen; rings
// that wrap fold their oldest records into carried sums that stay exact
// (acknowledged ones counted, aborted ones not); a torn record ends the
// ring; settle() folds everything, in-flight records by the outcome given;
// journals of another configuration or with corrupted headers are refused
// by name; scans survive their binary encoding.
#include "journal.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "txn/log/replication.h"

namespace drtmx::bench {
namespace {

namespace fs = std::filesystem;
using Write = txn::CommitObserver::Write;

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/dev/shm/drtmx-journal-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Journal::Options options(bool recover) const {
    Journal::Options o;
    o.dir = dir_;
    o.node = 1;
    o.nodes = 3;
    o.threads = 1;
    o.coroutines = 2;
    o.replicas = 3;
    o.bench = "smallbank";
    o.sums = 2;
    o.ring_bytes = 16 * 1024;
    o.recover = recover;
    return o;
  }
  std::unique_ptr<Journal> open(bool recover) {
    auto j = Journal::open(options(recover));
    EXPECT_TRUE(j.is_ok()) << j.status().to_string();
    return j.is_ok() ? std::move(*j) : nullptr;
  }

  std::string dir_;
};

// One transaction through coroutine `co`'s observer: keys k, k+1 at
// `version`, pending sums {delta, 1}; `outcome`: 0 in flight, 1
// acknowledged, 2 aborted.
void transact(Journal& j, uint32_t co, uint64_t k, uint64_t version, int64_t delta, int outcome) {
  txn::CommitObserver* ob = j.observer(co, [delta](std::vector<int64_t>& out) {
    out = {delta, 1};
  });
  ASSERT_NE(ob, nullptr);
  const Write w[] = {{2, txn::RedoOp::kUpdate, k, version},
                     {1, txn::RedoOp::kInsert, k + 1, version + 1}};
  ob->prepared(w);
  if (outcome != 0) ob->logged(outcome == 1);
}

TEST_F(JournalTest, RecordsSurviveAReopenWithTheirStates) {
  {
    auto j = open(false);
    ASSERT_NE(j, nullptr);
    ASSERT_TRUE(j->set_stamp(77).is_ok());
    transact(*j, 0, 10, 5, 100, 1);
    transact(*j, 0, 20, 6, -30, 2);
    transact(*j, 1, 30, 7, 40, 1);
    transact(*j, 1, 40, 8, 9, 0);  // in flight at the "crash"
    EXPECT_EQ(j->records_written(), 4u);
    EXPECT_EQ(j->error(), "");
  }
  auto j = open(true);
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->stamp(), 77u);
  auto s = j->scan();
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_EQ(s->records.size(), 4u);
  const JournalRecord& r = s->records[0];
  EXPECT_EQ(r.node, 1);
  EXPECT_EQ(r.co, 0u);
  EXPECT_EQ(r.seq, 1u);
  EXPECT_EQ(r.state, JournalState::kAcknowledged);
  ASSERT_EQ(r.writes.size(), 2u);
  EXPECT_EQ(r.writes[0].table, 2u);
  EXPECT_EQ(r.writes[0].key, 10u);
  EXPECT_EQ(r.writes[0].version, 5u);
  EXPECT_EQ(r.writes[1].op, static_cast<uint32_t>(txn::RedoOp::kInsert));
  EXPECT_EQ(r.sums, (std::vector<int64_t>{100, 1}));
  EXPECT_EQ(s->records[1].state, JournalState::kAborted);
  EXPECT_EQ(s->records[2].co, 1u);
  EXPECT_EQ(s->records[2].seq, 1u);
  EXPECT_EQ(s->records[3].state, JournalState::kPrepared);
  EXPECT_EQ(s->carried_commits, 0u);
  // The encoding the nodes exchange.
  JournalScan back;
  ASSERT_TRUE(JournalScan::decode(s->encode(), &back));
  EXPECT_EQ(back.records.size(), 4u);
  EXPECT_EQ(back.records[3].writes[1].key, 41u);
  EXPECT_FALSE(JournalScan::decode(s->encode().substr(0, 40), &back));
}

TEST_F(JournalTest, FoldedRingsKeepTheSumsExactAcrossReopens) {
  int64_t acked_sum = 0;
  uint64_t acked = 0;
  {
    auto j = open(false);
    ASSERT_NE(j, nullptr);
    for (int i = 0; i < 3000; ++i) {  // ~100 B records in 16 KiB rings: many folds
      const int outcome = i % 7 == 3 ? 2 : 1;
      transact(*j, i % 2, uint64_t(i) * 2, uint64_t(i) + 1, i, outcome);
      if (outcome == 1) acked_sum += i, ++acked;
    }
    EXPECT_GT(j->folds(), 10u);
  }
  for (int round = 0; round < 2; ++round) {
    auto j = open(true);
    ASSERT_NE(j, nullptr);
    auto s = j->scan();
    ASSERT_TRUE(s.is_ok());
    int64_t sum = s->carried[0];
    uint64_t count = s->carried_commits;
    for (const JournalRecord& r : s->records) {
      if (r.state == JournalState::kAcknowledged) sum += r.sums[0], ++count;
    }
    EXPECT_EQ(sum, acked_sum) << "round " << round;
    EXPECT_EQ(count, acked);
    EXPECT_GT(s->folded_until_ns, 0u);
    EXPECT_GT(s->records.size(), 100u);  // the recent records stay for the version checks
    // Appending after a reopen continues the sequence and the sums.
    transact(*j, 0, 1, 1, 1000, 1);
    acked_sum += 1000, ++acked;
  }
}

TEST_F(JournalTest, ATornRecordEndsTheRing) {
  {
    auto j = open(false);
    ASSERT_NE(j, nullptr);
    transact(*j, 0, 10, 1, 1, 1);
    transact(*j, 0, 20, 2, 2, 1);
  }
  // The second record's key bytes: the first record is 40 + 2 * 24 + 2 * 8
  // = 104 bytes; coroutine 0's ring starts after the headers.
  const uint64_t ring0 = 4096 + 4096 + 4096;  // pool header, journal header, coroutine headers
  {
    std::fstream f(Journal::path(dir_, 1), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(ring0 + 104 + 40));
    f.write("\x01\x02\x03", 3);
  }
  auto j = open(true);
  ASSERT_NE(j, nullptr);
  auto s = j->scan();
  ASSERT_TRUE(s.is_ok());
  ASSERT_EQ(s->records.size(), 1u);
  EXPECT_EQ(s->records[0].writes[0].key, 10u);
}

TEST_F(JournalTest, SettleFoldsEveryRecordByItsOutcome) {
  {
    auto j = open(false);
    ASSERT_NE(j, nullptr);
    transact(*j, 0, 10, 1, 5, 1);
    transact(*j, 0, 12, 1, 7, 0);   // in flight: found committed
    transact(*j, 1, 14, 1, 11, 0);  // in flight: found not committed
  }
  {
    auto j = open(true);
    ASSERT_NE(j, nullptr);
    ASSERT_TRUE(j->settle({{0, 2}}).is_ok());
  }
  auto j = open(true);
  ASSERT_NE(j, nullptr);
  auto s = j->scan();
  ASSERT_TRUE(s.is_ok());
  EXPECT_TRUE(s->records.empty());
  EXPECT_EQ(s->carried[0], 12);
  EXPECT_EQ(s->carried[1], 2);
  EXPECT_EQ(s->carried_commits, 2u);
  transact(*j, 1, 16, 1, 1, 1);  // the next run appends after them
  s = j->scan();
  ASSERT_TRUE(s.is_ok());
  ASSERT_EQ(s->records.size(), 1u);
  EXPECT_EQ(s->records[0].seq, 2u);
}

TEST_F(JournalTest, ForeignOrDamagedJournalsAreRefusedByName) {
  {
    auto j = open(false);
    ASSERT_NE(j, nullptr);
  }
  const std::string file = Journal::path(dir_, 1);
  Journal::Options o = options(true);
  o.coroutines = 4;
  auto r = Journal::open(o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find(file), std::string::npos) << r.status().to_string();
  EXPECT_NE(r.status().message().find("--coroutines=2"), std::string::npos)
      << r.status().to_string();
  o = options(true);
  o.bench = "tpcc";
  r = Journal::open(o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("--bench=smallbank"), std::string::npos);
  o = options(false);  // a first start over an existing journal
  r = Journal::open(o);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("--format"), std::string::npos) << r.status().to_string();
  const std::string copy = dir_ + "/copy";
  fs::copy_file(file, copy);
  auto damage = [&](uint64_t at) {
    fs::copy_file(copy, file, fs::copy_options::overwrite_existing);
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    f.write("\xff\xfe", 2);
  };
  damage(4096 + 40);  // the journal header
  r = Journal::open(options(true));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find(file + ": corrupted header"), std::string::npos)
      << r.status().to_string();
  damage(8192 + 256 + 8);  // coroutine 0's header: its valid copy (epoch 1, the second)
  r = Journal::open(options(true));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("coroutine 0"), std::string::npos) << r.status().to_string();
  fs::resize_file(file, 6000);
  r = Journal::open(options(true));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find(file), std::string::npos) << r.status().to_string();
  // --format replaces it.
  o = options(false);
  o.format = true;
  EXPECT_TRUE(Journal::open(o).is_ok());
}

}  // namespace
}  // namespace drtmx::bench
