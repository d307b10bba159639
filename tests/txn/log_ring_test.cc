// Replication log rings: one-sided WRITEs of sealed entries, in-order apply
// on the backup, lazy reclaim by message, back-pressure, and partial images
// that are never applied.
#include "txn/log/log_ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "r2/support/worker_cluster.h"

namespace drtmx::txn {
namespace {

using r2::Co;
using r2::OpBatch;
using r2::OpStatus;
using r2::RpcRequest;
using r2::Worker;

constexpr r2::RegionId kLog = 1, kScratch = 2;
constexpr uint16_t kReclaimRpc = 40;

std::vector<uint8_t> payload_for(uint64_t i, uint32_t len) {
  std::vector<uint8_t> p(len);
  for (uint32_t k = 0; k < len; ++k) p[k] = static_cast<uint8_t>(i * 131 + k * 7);
  return p;
}

TEST(LogRing, EntriesCrossTheFabricInOrderWithBackPressure) {
  constexpr uint32_t kRing = 16384, kEntries = 20000;
  LogRingLayout layout{2, 1, kRing};
  ASSERT_TRUE(layout.validate().is_ok());
  auto c =
      r2::testing::InProcCluster::make(2, 1, {{kLog, layout.region_bytes()}, {kScratch, 1 << 16}});
  ASSERT_TRUE(c->error.is_ok()) << c->error.to_string();
  // Node 0 coordinates, node 1 is its backup.
  LogWriter writer(layout.ring_offset(0, 0), kRing);
  LogReader reader(c->base(1, kLog) + layout.ring_offset(0, 0), kRing, kRing / 4);
  std::mt19937 rng(5);
  std::vector<uint32_t> lens(kEntries);
  for (auto& l : lens) l = 1 + rng() % 1500;
  uint64_t applied = 0, bad = 0;
  std::atomic<uint64_t> blocked{0};
  std::atomic<bool> writer_done{false};
  r2::WorkerConfig wc;
  wc.coroutines = 1;
  auto run = r2::testing::run_workers(*c, wc, [&](Worker& w) {
    if (w.node() == 0) {
      ASSERT_TRUE(w.register_handler(kReclaimRpc, [&](RpcRequest& r) {
                     uint64_t head;
                     std::memcpy(&head, r.payload().data(), 8);
                     writer.on_reclaimed(head);
                   }).is_ok());
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     uint8_t* image = c->base(0, kScratch);
                     const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                     for (uint32_t i = 0; i < kEntries; ++i) {
                       auto p = payload_for(i, lens[i]);
                       LogWriter::Placement pl[2];
                       for (;;) {
                         auto n = writer.prepare(p.data(), lens[i], image, pl);
                         ASSERT_TRUE(n.is_ok());
                         if (*n > 0) {
                           OpBatch b;
                           size_t off = 0;
                           for (int k = 0; k < *n; ++k) {
                             b.write({1, kLog, pl[k].offset}, image + off, pl[k].bytes);
                             off += pl[k].bytes;
                           }
                           ASSERT_EQ(co.run(b), OpStatus::kOk);
                           break;
                         }
                         ++blocked;  // the ring is full of unapplied entries
                         ASSERT_LT(std::chrono::steady_clock::now(), until);
                         co.yield();
                       }
                     }
                     writer_done = true;
                   }).is_ok());
    } else {
      ASSERT_TRUE(w.spawn([&](Co& co) {
                     const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                     uint64_t expect = 0;
                     // The reader starts once the writer found the ring full
                     // (it holds far fewer than kEntries), so back-pressure is
                     // exercised on every fabric, however fast each WRITE.
                     while (blocked.load() == 0 && !writer_done.load() &&
                            std::chrono::steady_clock::now() < until) {
                       co.yield();
                     }
                     while (applied < kEntries && std::chrono::steady_clock::now() < until) {
                       auto r = reader.poll(
                           [&](uint64_t, const uint8_t* data, uint32_t len) {
                             if (len != lens[expect] ||
                                 std::memcmp(data, payload_for(expect, len).data(), len) != 0) {
                               ++bad;
                             }
                             ++expect;
                             ++applied;
                           },
                           64);
                       ASSERT_FALSE(r.corrupt);
                       if (r.report) {
                         uint64_t head = reader.head();
                         ASSERT_TRUE(co.send_passive({0, 0}, kReclaimRpc, &head, 8).is_ok());
                         reader.reported();
                       }
                       co.yield();
                     }
                     // Final report so the writer's view matches.
                     uint64_t head = reader.head();
                     ASSERT_TRUE(co.send_passive({0, 0}, kReclaimRpc, &head, 8).is_ok());
                     ASSERT_TRUE(co.wait_passive_acks().is_ok());
                   }).is_ok());
    }
  });
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(applied, kEntries);
  EXPECT_EQ(bad, 0u);
  EXPECT_GT(blocked.load(), 0u) << "the ring never filled: back-pressure went untested";
  EXPECT_EQ(writer.head(), writer.tail());
  EXPECT_TRUE(writer_done.load());
}

TEST(LogRing, PartialImagesAreNeverApplied) {
  constexpr uint32_t kRing = 8192;
  std::vector<uint8_t> ring(kRing, 0), image(4096);
  LogWriter w(0, kRing);
  LogReader r(ring.data(), kRing, 1024);
  std::mt19937 rng(11);
  uint64_t applied = 0;
  auto apply = [&](uint64_t, const uint8_t*, uint32_t) { ++applied; };
  for (int e = 0; e < 200; ++e) {
    auto p = payload_for(e, 1 + rng() % 700);
    LogWriter::Placement pl[2];
    // A mark without zero words: every 8-byte chunk of the image differs
    // from the zeroed ring, so each one that has not landed is missing.
    const LogMark mark{uint64_t(e) + 1, uint64_t(e) + 1000, 3};
    auto n = w.prepare(p.data(), static_cast<uint32_t>(p.size()), image.data(), pl, mark);
    ASSERT_TRUE(n.is_ok());
    if (*n == 0) {
      w.on_reclaimed(r.head());
      n = w.prepare(p.data(), static_cast<uint32_t>(p.size()), image.data(), pl, mark);
      ASSERT_TRUE(n.is_ok() && *n > 0);
    }
    size_t off = 0;
    for (int k = 0; k < *n; ++k) {
      // Copy the image in 8-byte chunks in random order; poll after each.
      std::vector<uint32_t> chunks(pl[k].bytes / 8);
      for (uint32_t i = 0; i < chunks.size(); ++i) chunks[i] = i;
      std::shuffle(chunks.begin(), chunks.end(), rng);
      const uint64_t before = applied;
      for (size_t i = 0; i < chunks.size(); ++i) {
        std::memcpy(ring.data() + pl[k].offset + chunks[i] * 8, image.data() + off + chunks[i] * 8,
                    8);
        auto res = r.poll(apply, 16);
        ASSERT_FALSE(res.corrupt);
        if (i + 1 < chunks.size()) {
          ASSERT_EQ(applied, before) << "applied a partial image";
        }
      }
      off += pl[k].bytes;
    }
  }
  EXPECT_EQ(applied, 200u);
}

TEST(LogRing, AGapTooSmallForAnEntryIsSkippedAlikeOnBothSides) {
  // Two entries of 2040 bytes leave 16 bytes at the end of a 4096-byte
  // ring: the reader's head after them must be a head the writer accepts,
  // or a writer waiting for room would wait forever.
  constexpr uint32_t kPayload = 2040 - kLogHeaderBytes - kLogTrailerBytes;
  std::vector<uint8_t> ring(4096, 0), image(8192), payload(kPayload, 5);
  LogWriter w(0, 4096);
  LogReader r(ring.data(), 4096, 1);
  LogWriter::Placement pl[2];
  for (int i = 0; i < 2; ++i) {
    auto n = w.prepare(payload.data(), kPayload, image.data(), pl);
    ASSERT_TRUE(n.is_ok() && *n == 1);
    std::memcpy(ring.data() + pl[0].offset, image.data(), pl[0].bytes);
  }
  EXPECT_EQ(w.tail(), 4096u);  // the 16-byte gap is taken at once
  auto n = w.prepare(payload.data(), kPayload, image.data(), pl);
  ASSERT_TRUE(n.is_ok());
  EXPECT_EQ(*n, 0);  // full until the reader reclaims
  auto res = r.poll([](uint64_t, const uint8_t*, uint32_t) {}, 8);
  EXPECT_EQ(res.applied, 2u);
  EXPECT_EQ(r.head(), 4096u);
  w.on_reclaimed(r.head());
  EXPECT_EQ(w.head(), w.tail());
  n = w.prepare(payload.data(), kPayload, image.data(), pl);
  ASSERT_TRUE(n.is_ok());
  EXPECT_EQ(*n, 1);
  EXPECT_EQ(pl[0].offset, 0u);
}

TEST(LogRing, WrapEntriesAreNotCountedAsDataEntries) {
  // TxnNode drains by comparing the writers' entries() with the readers'
  // applied counts: wrap entries must count on neither side.
  std::vector<uint8_t> ring(4096, 0), image(8192), payload(1000, 9);
  LogWriter w(0, 4096);
  LogReader r(ring.data(), 4096, 1);
  LogWriter::Placement pl[2];
  uint64_t applied = 0, wraps = 0;
  for (int i = 0; i < 40; ++i) {
    auto n = w.prepare(payload.data(), 1000, image.data(), pl);
    ASSERT_TRUE(n.is_ok() && *n >= 1);
    wraps += *n - 1;
    size_t img = 0;
    for (int k = 0; k < *n; ++k) {
      std::memcpy(ring.data() + pl[k].offset, image.data() + img, pl[k].bytes);
      img += pl[k].bytes;
    }
    applied += r.poll([](uint64_t, const uint8_t*, uint32_t) {}, 8).applied;
    w.on_reclaimed(r.head());
  }
  EXPECT_GT(wraps, 5u);
  EXPECT_EQ(w.entries(), 40u);
  EXPECT_EQ(applied, w.entries());
}

TEST(LogRing, AnImageStoredAgainAfterItWasAppliedIsNotTakenForCorruption) {
  // A WRITE may store bytes twice (glibc's memcpy of 64 bytes with 64-byte
  // vectors does two full stores). If the reader applies and zeroes the
  // entry between the two, the image is back; one lap later, with the
  // writer's entries ending right there, the reader finds it sealed and
  // complete at its head. It must wait for the new entry, not stop.
  constexpr uint32_t kRing = 4096;
  std::vector<uint8_t> ring(kRing, 0), image(8192), payload(32, 3);
  LogWriter w(0, kRing);
  LogReader r(ring.data(), kRing, 1);
  std::vector<uint64_t> seen;
  auto apply = [&](uint64_t seq, const uint8_t*, uint32_t) { seen.push_back(seq); };
  LogWriter::Placement pl[2];
  auto write_one = [&](uint8_t fill) -> LogWriter::Placement {
    std::fill(payload.begin(), payload.end(), fill);
    auto n = w.prepare(payload.data(), 32, image.data(), pl);
    EXPECT_TRUE(n.is_ok() && *n == 1);  // 80-byte entries leave a 16-byte gap: no wrap entry
    std::memcpy(ring.data() + pl[0].offset, image.data(), pl[0].bytes);
    return pl[0];
  };
  // Lap 0: entry 1 at 0, applied and zeroed; then its "second store".
  const LogWriter::Placement first = write_one(1);
  ASSERT_EQ(first.offset, 0u);
  std::vector<uint8_t> stale(image.begin(), image.begin() + first.bytes);
  ASSERT_EQ(r.poll(apply, 8).applied, 1u);
  std::memcpy(ring.data(), stale.data(), stale.size());
  // Fill the rest of the lap; the reader applies and reclaims as it goes.
  while (w.tail() < kRing) {
    write_one(2);
    auto res = r.poll(apply, 64);
    ASSERT_FALSE(res.corrupt) << "at " << r.head();
    w.on_reclaimed(r.head());
  }
  ASSERT_EQ(r.head() % kRing, 0u);  // the reader is at position 0 again
  // The stale entry 1 sits there: not applied, not corruption.
  auto res = r.poll(apply, 8);
  EXPECT_FALSE(res.corrupt);
  EXPECT_EQ(res.applied, 0u);
  // The writer's next entry lands over it and is applied, in sequence.
  write_one(3);
  res = r.poll(apply, 8);
  EXPECT_FALSE(res.corrupt);
  EXPECT_EQ(res.applied, 1u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 1);
}

// Durable rings: a gated reader shows entries without consuming or zeroing
// them, learns the writer's watermark from the entries ahead, releases only
// what it is told to, and a reader restarted at a released head goes on
// from there.
TEST(LogRing, GatedReadingConsumesInOrderAndReleasesOnlyWhatIsDone) {
  constexpr uint32_t kRing = 4096;
  std::vector<uint8_t> ring(kRing, 0), image(8192);
  LogWriter w(0, kRing);
  LogReader r(ring.data(), kRing, 1);
  auto put = [&](uint64_t txn, uint64_t decided, uint32_t len) {
    std::vector<uint8_t> p = payload_for(txn, len);
    LogWriter::Placement pl[2];
    auto n = w.prepare(p.data(), len, image.data(), pl, {txn, decided, 2});
    ASSERT_TRUE(n.is_ok() && *n >= 1);
    size_t off = 0;
    for (int k = 0; k < *n; ++k) {
      std::memcpy(ring.data() + pl[k].offset, image.data() + off, pl[k].bytes);
      off += pl[k].bytes;
    }
  };
  put(1, 0, 100);
  put(2, 0, 200);
  put(3, 2, 300);  // built once 1 and 2 had completed
  EXPECT_EQ(r.scan_decided(16), 2u);
  LogEntry e;
  bool corrupt = false;
  ASSERT_TRUE(r.peek(&e, &corrupt));
  EXPECT_EQ(e.mark.txn, 1u);
  EXPECT_EQ(e.mark.targets, 2u);
  ASSERT_TRUE(r.peek(&e, &corrupt));  // peeking again does not move
  EXPECT_EQ(e.mark.txn, 1u);
  r.consume(11);
  ASSERT_TRUE(r.peek(&e, &corrupt));
  EXPECT_EQ(e.mark.txn, 2u);
  r.consume(12);
  // Entry 11 is still being installed: nothing may be released; 12 is done.
  auto done = [](uint64_t tag) { return tag != 11; };
  EXPECT_EQ(r.releasable(done), 0u);
  EXPECT_EQ(r.head(), 0u);
  EXPECT_NE(ring[0], 0) << "a consumed, unreleased entry was zeroed";
  EXPECT_EQ(r.releasable([](uint64_t) { return true; }), 2u);
  uint64_t head = 0, seq = 0;
  r.after_release(1, &head, &seq);
  EXPECT_EQ(head, log_entry_bytes(100));
  EXPECT_EQ(seq, 2u);
  r.release(1);
  EXPECT_EQ(r.head(), head);
  EXPECT_EQ(r.next_seq(), 2u);
  EXPECT_EQ(ring[0], 0) << "a released entry keeps its image";
  // A reader restarted at the released head finds entries 2 and 3 again.
  LogReader again(ring.data(), kRing, 1, head, seq);
  ASSERT_TRUE(again.peek(&e, &corrupt));
  EXPECT_EQ(e.mark.txn, 2u);
  EXPECT_EQ(scan_ring(ring.data(), kRing, seq).size(), 2u);
}

// Recovery's scan finds every complete entry, also past one a crash cut
// short (coroutines log concurrently: a later entry may be complete), and
// none from before the persisted head's sequence number.
TEST(LogRing, TheRecoveryScanFindsCompleteEntriesPastTornOnes) {
  constexpr uint32_t kRing = 8192;
  std::vector<uint8_t> ring(kRing, 0), image(8192);
  LogWriter w(0, kRing);
  std::vector<LogWriter::Placement> at;
  for (uint64_t t = 1; t <= 12; ++t) {
    std::vector<uint8_t> p = payload_for(t, 40 + 30 * static_cast<uint32_t>(t));
    LogWriter::Placement pl[2];
    auto n = w.prepare(p.data(), static_cast<uint32_t>(p.size()), image.data(), pl, {t, 0, 1});
    ASSERT_TRUE(n.is_ok() && *n == 1);
    std::memcpy(ring.data() + pl[0].offset, image.data(), pl[0].bytes);
    at.push_back(pl[0]);
  }
  // Entry 5 torn (its middle never arrived), entry 9 missing its trailer.
  std::memset(ring.data() + at[4].offset + 60, 0, 40);
  std::memset(ring.data() + at[8].offset + at[8].bytes - 8, 0, 8);
  std::vector<LogEntry> found = scan_ring(ring.data(), kRing, 1);
  std::vector<uint64_t> txns;
  for (const LogEntry& e : found) txns.push_back(e.mark.txn);
  EXPECT_EQ(txns, (std::vector<uint64_t>{1, 2, 3, 4, 6, 7, 8, 10, 11, 12}));
  EXPECT_EQ(scan_ring(ring.data(), kRing, 7).size(), 5u);  // 7, 8, 10, 11, 12
}

TEST(LogRing, ErrorsAndCorruption) {
  LogWriter w(0, 4096);
  std::vector<uint8_t> big(4096), image(8192);
  LogWriter::Placement pl[2];
  auto n = w.prepare(big.data(), 4000, image.data(), pl);
  EXPECT_EQ(n.status().code(), Code::kOutOfRange);
  EXPECT_NE(n.status().message().find("--log-ring-bytes"), std::string::npos);
  EXPECT_FALSE((LogRingLayout{2, 1, 3000}).validate().is_ok());
  EXPECT_FALSE((LogRingLayout{0, 1, 4096}).validate().is_ok());
  // A complete, sealed entry with the wrong sequence number is refused.
  std::vector<uint8_t> ring(4096, 0);
  LogWriter w2(0, 4096);
  ASSERT_TRUE(w2.prepare("a", 1, image.data(), pl).is_ok());
  ASSERT_TRUE(w2.prepare("b", 1, image.data() + 64, pl).is_ok());  // seq 2
  std::memcpy(ring.data(), image.data() + 64, pl[0].bytes);        // seq 2 at position 0
  LogReader r(ring.data(), 4096, 1024);
  auto res = r.poll([](uint64_t, const uint8_t*, uint32_t) {}, 4);
  EXPECT_TRUE(res.corrupt);
  EXPECT_EQ(res.applied, 0u);
}

}  // namespace
}  // namespace drtmx::txn
