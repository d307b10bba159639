// The acknowledgement journal (journal.h).
#include "journal.h"

#include <time.h>

#include <algorithm>
#include <cstring>

#include "base/hash.h"

namespace drtmx::bench {
namespace {

constexpr uint64_t kMagic = 0x314c4a786d747264ull;  // "drtmxJL1"
constexpr uint32_t kVersion = 1;
constexpr uint64_t kPoolCluster = 0x6472746d784a4e4cull;
constexpr uint32_t kPoolRegion = 0xfffe;
constexpr uint64_t kPoolLayout = 1;  // the format; the configuration is checked by the header
constexpr uint64_t kSeed = 0x6a6f75726e616c31ull;
constexpr uint64_t kHeaderArea = 4096;  // the journal header
constexpr uint64_t kCoArea = 512;       // per coroutine: two header copies of 256 B
constexpr uint64_t kCoCopy = 256;
constexpr uint64_t kMaxTotal = 1ull << 30;

struct JournalHeader {
  uint64_t magic;
  uint32_t version;
  uint16_t node, nodes;
  uint16_t threads, coroutines;
  uint16_t replicas, sums;
  uint64_t ring_bytes;
  char bench[32];
  uint64_t stamp;
  uint64_t checksum;  // of everything above
};

struct CoHeader {
  uint64_t epoch;        // the newer valid copy wins
  uint64_t fold_seq;     // every record up to this one is folded
  uint64_t tail;         // virtual ring offset of record fold_seq + 1
  uint64_t folded_time;  // time of the newest folded record
  uint64_t commits;      // acknowledged records folded
  uint64_t aborts;       // the others folded
  int64_t sums[kMaxJournalSums];
  uint64_t checksum;  // of everything above
};
static_assert(sizeof(CoHeader) <= kCoCopy);

struct RecHead {
  uint64_t state;  // JournalState; not covered by the checksum (it changes)
  uint64_t seq;
  uint64_t time_ns;
  uint32_t nwrites;
  uint16_t nsums;
  uint16_t flags;     // 1: truncated write set
  uint64_t checksum;  // of seq .. flags and the body
};
static_assert(sizeof(RecHead) == 40);
constexpr uint64_t kWriteBytes = 24;

uint64_t header_checksum(const JournalHeader& h) {
  return hash_bytes(kSeed, &h, offsetof(JournalHeader, checksum));
}
uint64_t co_checksum(const CoHeader& h) {
  return hash_bytes(kSeed ^ 1, &h, offsetof(CoHeader, checksum));
}
uint64_t record_bytes(uint32_t nwrites, uint16_t nsums) {
  return sizeof(RecHead) + kWriteBytes * nwrites + 8ull * nsums;
}
uint64_t record_checksum(const uint8_t* rec, uint64_t bytes) {
  const uint64_t h = hash_bytes(kSeed ^ 2, rec + 8, 24);
  return hash_bytes(h, rec + sizeof(RecHead), bytes - sizeof(RecHead));
}
uint64_t now_realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}
uint64_t co_area_bytes(uint32_t cos) {
  return (uint64_t{cos} * kCoArea + 4095) / 4096 * 4096;
}
uint64_t total_bytes(uint32_t cos, uint64_t ring) {
  return kHeaderArea + co_area_bytes(cos) + uint64_t{cos} * ring;
}

// Appends / reads plain values of a binary encoding.
struct Out {
  std::string s;
  template <typename T>
  void put(T v) {
    s.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
};
struct In {
  const std::string& s;
  size_t at = 0;
  template <typename T>
  bool get(T* v) {
    if (s.size() - at < sizeof(T)) return false;
    std::memcpy(v, s.data() + at, sizeof(T));
    at += sizeof(T);
    return true;
  }
};

}  // namespace

std::string JournalRecord::name() const {
  return "node " + std::to_string(node) + " coroutine " + std::to_string(co) + " transaction #" +
         std::to_string(seq);
}

std::string JournalScan::encode() const {
  Out o;
  o.put<uint16_t>(node);
  o.put<uint32_t>(static_cast<uint32_t>(carried.size()));
  for (int64_t v : carried) o.put(v);
  o.put(carried_commits);
  o.put(folded_until_ns);
  o.put<uint64_t>(records.size());
  for (const JournalRecord& r : records) {
    o.put<uint32_t>(r.co);
    o.put(r.seq);
    o.put<uint8_t>(static_cast<uint8_t>(r.state));
    o.put<uint8_t>(r.truncated);
    o.put(r.time_ns);
    o.put<uint32_t>(static_cast<uint32_t>(r.writes.size()));
    for (const JournalWrite& w : r.writes) {
      o.put(w.table);
      o.put(w.op);
      o.put(w.key);
      o.put(w.version);
    }
    o.put<uint16_t>(static_cast<uint16_t>(r.sums.size()));
    for (int64_t v : r.sums) o.put(v);
  }
  return std::move(o.s);
}

bool JournalScan::decode(const std::string& s, JournalScan* out) {
  In in{s};
  uint32_t n = 0;
  uint64_t recs = 0;
  if (!in.get(&out->node) || !in.get(&n) || n > kMaxJournalSums) return false;
  out->carried.resize(n);
  for (int64_t& v : out->carried) {
    if (!in.get(&v)) return false;
  }
  if (!in.get(&out->carried_commits) || !in.get(&out->folded_until_ns) || !in.get(&recs))
    return false;
  if (recs > s.size()) return false;
  out->records.resize(recs);
  for (JournalRecord& r : out->records) {
    r.node = out->node;
    uint8_t state = 0, trunc = 0;
    uint32_t nw = 0;
    uint16_t ns = 0;
    if (!in.get(&r.co) || !in.get(&r.seq) || !in.get(&state) || !in.get(&trunc) ||
        !in.get(&r.time_ns) || !in.get(&nw))
      return false;
    if (state < 1 || state > 3 || nw > (s.size() - in.at) / kWriteBytes) return false;
    r.state = static_cast<JournalState>(state);
    r.truncated = trunc != 0;
    r.writes.resize(nw);
    for (JournalWrite& w : r.writes) {
      if (!in.get(&w.table) || !in.get(&w.op) || !in.get(&w.key) || !in.get(&w.version))
        return false;
    }
    if (!in.get(&ns) || ns > kMaxJournalSums) return false;
    r.sums.resize(ns);
    for (int64_t& v : r.sums) {
      if (!in.get(&v)) return false;
    }
  }
  return in.at == s.size();
}

uint64_t journal_ring_bytes(uint32_t kb, uint32_t cos) {
  uint64_t ring = uint64_t{kb} * 1024;
  const uint64_t cap = (256ull << 20) / std::max<uint32_t>(cos, 1);
  ring = std::min(ring, std::max<uint64_t>(cap, 16 * 1024));
  return ring / 64 * 64;
}

// A FIFO of the live records' places (a deque allocated and freed a chunk
// every 32 records on the observer's path): a power-of-two circular buffer
// that only grows.
class LiveQueue {
 public:
  struct Live {
    uint64_t off, bytes;
  };
  size_t size() const { return n_; }
  const Live& operator[](size_t i) const { return buf_[(first_ + i) & (buf_.size() - 1)]; }
  void clear() { first_ = n_ = 0; }
  void push_back(const Live& l) {
    if (n_ == buf_.size()) grow();
    buf_[(first_ + n_) & (buf_.size() - 1)] = l;
    ++n_;
  }
  // Drops the oldest n (n <= size()).
  void pop_front(size_t n) {
    first_ = n_ == n ? 0 : (first_ + n) & (buf_.size() - 1);
    n_ -= n;
  }

 private:
  void grow() {
    std::vector<Live> b(std::max<size_t>(64, buf_.size() * 2));
    for (size_t i = 0; i < n_; ++i) b[i] = (*this)[i];
    buf_ = std::move(b);
    first_ = 0;
  }
  std::vector<Live> buf_;
  size_t first_ = 0, n_ = 0;
};

// One coroutine's ring: its header copies and records. Used by one
// coroutine (the observer) or, at a restart, by the node's main thread.
class Journal::Ring final : public txn::CommitObserver {
 public:
  Ring(Journal& j, uint32_t co)
      : j_(j),
        co_(co),
        hdr_(kHeaderArea + uint64_t{co} * kCoArea),
        ring_(kHeaderArea + co_area_bytes(j.cos_) + uint64_t{co} * j.ring_bytes_),
        R_(j.ring_bytes_) {
    max_writes_ = static_cast<uint32_t>(
        std::max<uint64_t>(1, (R_ / 4 - sizeof(RecHead) - 8 * kMaxJournalSums) / kWriteBytes));
  }

  // A new journal: the first header copy, the second zeroed.
  Status format() {
    std::memset(j_.at(hdr_), 0, kCoArea);
    h_ = CoHeader{};
    h_.epoch = 1;
    h_.checksum = co_checksum(h_);
    std::memcpy(j_.at(hdr_ + (h_.epoch % 2) * kCoCopy), &h_, sizeof h_);
    return j_.persist(hdr_, kCoArea);
  }

  // Reads the valid header and the records after it; sets up appending
  // after the last one.
  Status load(JournalScan* out) {
    CoHeader c[2];
    std::memcpy(&c[0], j_.at(hdr_), sizeof(CoHeader));
    std::memcpy(&c[1], j_.at(hdr_ + kCoCopy), sizeof(CoHeader));
    int best = -1;
    for (int i = 0; i < 2; ++i) {
      if (c[i].epoch == 0 || co_checksum(c[i]) != c[i].checksum) continue;
      if (best < 0 || c[i].epoch > c[best].epoch) best = i;
    }
    if (best < 0) {
      return invalid_argument("journal " + j_.file() + ": both headers of coroutine " +
                              std::to_string(co_) +
                              " are corrupted; restore the file, or start over with --format");
    }
    h_ = c[best];
    live_.clear();
    uint64_t v = h_.tail, seq = h_.fold_seq + 1;
    while (v - h_.tail < R_) {
      const uint8_t* rec = nullptr;
      uint64_t bytes = 0;
      if (!valid_at(v, seq, &rec, &bytes)) {
        const uint64_t wrapped = (v + R_ - 1) / R_ * R_;
        if (wrapped == v || wrapped - h_.tail >= R_ || !valid_at(wrapped, seq, &rec, &bytes)) break;
        v = wrapped;
      }
      if (v + bytes - h_.tail > R_) break;
      RecHead rh;
      std::memcpy(&rh, rec, sizeof rh);
      if (out != nullptr) {
        JournalRecord r;
        r.co = co_;
        r.seq = rh.seq;
        r.state = rh.state >= 1 && rh.state <= 3 ? static_cast<JournalState>(rh.state)
                                                 : JournalState::kPrepared;
        r.truncated = (rh.flags & 1) != 0;
        r.time_ns = rh.time_ns;
        r.writes.resize(rh.nwrites);
        const uint8_t* p = rec + sizeof(RecHead);
        for (JournalWrite& w : r.writes) {
          std::memcpy(&w.key, p, 8);
          std::memcpy(&w.version, p + 8, 8);
          std::memcpy(&w.table, p + 16, 4);
          std::memcpy(&w.op, p + 20, 4);
          p += kWriteBytes;
        }
        r.sums.resize(rh.nsums);
        if (rh.nsums) std::memcpy(r.sums.data(), p, 8ull * rh.nsums);
        out->records.push_back(std::move(r));
      }
      live_.push_back({v, bytes});
      v += bytes;
      ++seq;
    }
    head_ = v;
    next_seq_ = seq;
    if (out != nullptr) {
      for (size_t i = 0; i < kMaxJournalSums; ++i) out->carried[i] += h_.sums[i];
      out->carried_commits += h_.commits;
      out->folded_until_ns = std::max(out->folded_until_ns, h_.folded_time);
    }
    return Status::ok();
  }

  // Folds every record: acknowledged ones and those in `committed`
  // (sequence numbers of this ring) count as commits.
  Status settle(const std::vector<uint64_t>& committed) {
    return fold(live_.size(), &committed, head_);
  }

  void prepared(std::span<const Write> writes) override {
    cur_ = ~uint64_t{0};
    if (j_.failed_.load(std::memory_order_relaxed)) return;
    const uint32_t nw = static_cast<uint32_t>(std::min<size_t>(writes.size(), max_writes_));
    sums_tmp_.clear();
    if (pending_) pending_(sums_tmp_);
    sums_tmp_.resize(j_.sums_, 0);
    const uint16_t ns = static_cast<uint16_t>(j_.sums_);
    const uint64_t bytes = (record_bytes(nw, ns) + 7) & ~uint64_t{7};
    uint64_t pos = head_;
    if (pos % R_ + bytes > R_) pos = (pos + R_ - 1) / R_ * R_;  // wrap: the rest is a gap
    if (pos + bytes - h_.tail > R_) {
      // Fold the oldest records until the new one fits, and an eighth of
      // the ring more (one header write per batch).
      size_t n = 0;
      uint64_t tail = pos;
      while (n < live_.size()) {
        const uint64_t next_tail = n + 1 < live_.size() ? live_[n + 1].off : pos;
        ++n;
        tail = next_tail;
        if (pos + bytes - tail + R_ / 8 <= R_) break;
      }
      if (Status st = fold(n, nullptr, tail); !st.is_ok()) return fail(st);
      folds_.fetch_add(1, std::memory_order_relaxed);
    }
    // Built in a buffer, then stored with non-temporal stores and one
    // fence (PmemPool::pwrite): the ring's lines were written back long
    // ago, so plain stores would first read each of them from memory.
    rec_tmp_.assign(bytes, 0);
    uint8_t* rec = rec_tmp_.data();
    RecHead rh{};
    rh.state = static_cast<uint64_t>(JournalState::kPrepared);
    rh.seq = next_seq_;
    rh.time_ns = now_realtime_ns();
    rh.nwrites = nw;
    rh.nsums = ns;
    rh.flags = nw < writes.size() ? 1 : 0;
    uint8_t* p = rec + sizeof(RecHead);
    for (uint32_t i = 0; i < nw; ++i) {
      const uint64_t key = writes[i].key, version = writes[i].version;
      const uint32_t table = writes[i].table, op = static_cast<uint32_t>(writes[i].op);
      std::memcpy(p, &key, 8);
      std::memcpy(p + 8, &version, 8);
      std::memcpy(p + 16, &table, 4);
      std::memcpy(p + 20, &op, 4);
      p += kWriteBytes;
    }
    if (ns) std::memcpy(p, sums_tmp_.data(), 8ull * ns);
    std::memcpy(rec, &rh, sizeof rh);
    rh.checksum = record_checksum(rec, record_bytes(nw, ns));
    std::memcpy(rec + offsetof(RecHead, checksum), &rh.checksum, 8);
    if (Status st = j_.pwrite(ring_ + pos % R_, rec, bytes); !st.is_ok()) return fail(st);
    live_.push_back({pos, bytes});
    head_ = pos + bytes;
    cur_ = pos;
    ++next_seq_;
    written_.fetch_add(1, std::memory_order_relaxed);
  }

  void logged(bool committed) override {
    if (cur_ == ~uint64_t{0}) return;
    const uint64_t off = ring_ + cur_ % R_;
    cur_ = ~uint64_t{0};
    const uint64_t state =
        static_cast<uint64_t>(committed ? JournalState::kAcknowledged : JournalState::kAborted);
    // A non-temporal store (its line is not in the cache: the record went
    // out the same way); durable at the next fence on this thread
    // (journal.h).
    if (Status st = j_.store_unfenced(off, &state, 8); !st.is_ok()) fail(st);
  }

  void set_pending(std::function<void(std::vector<int64_t>&)> p) { pending_ = std::move(p); }
  uint64_t written() const { return written_.load(std::memory_order_relaxed); }
  uint64_t folds() const { return folds_.load(std::memory_order_relaxed); }

 private:
  // A whole record with sequence number `seq` at virtual offset v.
  bool valid_at(uint64_t v, uint64_t seq, const uint8_t** rec, uint64_t* bytes) const {
    const uint64_t phys = v % R_;
    if (R_ - phys < sizeof(RecHead)) return false;
    const uint8_t* r = j_.at(ring_ + phys);
    RecHead rh;
    std::memcpy(&rh, r, sizeof rh);
    if (rh.seq != seq || rh.nsums > kMaxJournalSums) return false;
    const uint64_t n = record_bytes(rh.nwrites, rh.nsums);
    if (rh.nwrites > R_ / kWriteBytes || phys + n > R_) return false;
    if (record_checksum(r, n) != rh.checksum) return false;
    *rec = r;
    *bytes = (n + 7) & ~uint64_t{7};
    return true;
  }

  // Folds the oldest n live records into a new header whose tail is
  // `tail`; persistent before it returns (then their bytes may be reused).
  Status fold(size_t n, const std::vector<uint64_t>* committed, uint64_t tail) {
    CoHeader nh = h_;
    for (size_t i = 0; i < n; ++i) {
      RecHead rh;
      const uint8_t* rec = j_.at(ring_ + live_[i].off % R_);
      std::memcpy(&rh, rec, sizeof rh);
      const uint64_t state =
          __atomic_load_n(reinterpret_cast<const uint64_t*>(rec), __ATOMIC_ACQUIRE);
      const bool acked =
          state == static_cast<uint64_t>(JournalState::kAcknowledged) ||
          (committed != nullptr && state == static_cast<uint64_t>(JournalState::kPrepared) &&
           std::find(committed->begin(), committed->end(), rh.seq) != committed->end());
      if (acked) {
        ++nh.commits;
        const uint8_t* sums = rec + sizeof(RecHead) + kWriteBytes * rh.nwrites;
        for (uint16_t s = 0; s < rh.nsums && s < kMaxJournalSums; ++s) {
          int64_t v;
          std::memcpy(&v, sums + 8 * s, 8);
          nh.sums[s] += v;
        }
      } else {
        ++nh.aborts;
      }
      nh.fold_seq = rh.seq;
      nh.folded_time = std::max(nh.folded_time, rh.time_ns);
    }
    nh.tail = tail;
    ++nh.epoch;
    nh.checksum = co_checksum(nh);
    const uint64_t off = hdr_ + (nh.epoch % 2) * kCoCopy;
    std::memcpy(j_.at(off), &nh, sizeof nh);
    DRTMX_RETURN_IF_ERROR(j_.persist(off, sizeof nh));
    h_ = nh;
    live_.pop_front(n);
    return Status::ok();
  }

  void fail(const Status& st) {
    bool expected = false;
    if (j_.failed_.compare_exchange_strong(expected, true)) {  // the first failure only
      j_.error_ = "journal " + j_.file() + ": " + st.message();
      j_.error_set_.store(true, std::memory_order_release);
    }
  }

  Journal& j_;
  const uint32_t co_;
  const uint64_t hdr_, ring_, R_;
  uint32_t max_writes_ = 1;
  CoHeader h_{};
  LiveQueue live_;     // records not folded, oldest first
  uint64_t head_ = 0;  // virtual offset after the newest record
  uint64_t next_seq_ = 1;
  uint64_t cur_ = ~uint64_t{0};  // the record of the transaction in flight
  std::vector<int64_t> sums_tmp_;
  std::vector<uint8_t> rec_tmp_;  // a record being built
  std::function<void(std::vector<int64_t>&)> pending_;
  std::atomic<uint64_t> written_{0}, folds_{0};
};

std::string Journal::path(const std::string& dir, uint16_t node) {
  return dir + "/node" + std::to_string(node) + ".journal.pool";
}

Journal::~Journal() = default;

Status Journal::persist(uint64_t off, uint64_t n) const {
  return pool_->persist(data_, off, n);
}

Status Journal::flush(uint64_t off, uint64_t n) const {
  return pool_->flush(data_, off, n);
}

Status Journal::pwrite(uint64_t off, const void* in, uint64_t n) const {
  return pool_->pwrite(data_, off, in, n);
}

Status Journal::store_unfenced(uint64_t off, const void* in, uint64_t n) const {
  DRTMX_RETURN_IF_ERROR(pool_->write_nt(data_, off, in, n));
  // msync pools: write_nt made plain stores; msync them now.
  return pool_->persistence_mode() == r2::Persistence::kMsync ? pool_->flush(data_, off, n)
                                                              : Status::ok();
}

Result<std::unique_ptr<Journal>> Journal::open(const Options& o) {
  if (o.sums > kMaxJournalSums) {
    return invalid_argument("journal: the workload keeps " + std::to_string(o.sums) +
                            " client sums; the journal holds at most " +
                            std::to_string(kMaxJournalSums));
  }
  const std::string file = path(o.dir, o.node);
  std::unique_ptr<Journal> j(new Journal());
  j->node_ = o.node;
  j->cos_ = uint32_t{o.threads} * o.coroutines;
  rdpma::PoolSpec spec;
  spec.path = file;
  spec.id = {kPoolCluster, o.node, kPoolRegion, kPoolLayout};
  spec.format = o.format;
  const std::string fix =
      "; recover with the options the database was created with, or start "
      "over with --format";
  if (!o.recover) {
    j->ring_bytes_ = o.ring_bytes;
    j->sums_ = o.sums;
    const uint64_t total = total_bytes(j->cos_, j->ring_bytes_);
    if (total > kMaxTotal) {
      return invalid_argument("journal " + file + ": " + std::to_string(total) + " bytes for " +
                              std::to_string(j->cos_) + " coroutines; lower --journal-kb");
    }
    spec.mode = rdpma::PoolOpen::kCreate;
    spec.bytes = rdpma::PmemPool::kHeaderBytes + total;
    auto pool = rdpma::PmemPool::open(spec);
    if (!pool.is_ok()) return pool.status();
    j->pool_ = std::move(*pool);
    auto at = j->pool_->alloc(static_cast<uint32_t>(total));
    if (!at.is_ok()) return at.status();
    j->data_ = *at;
    j->base_ = j->pool_->mapping() + j->data_.offset;
    JournalHeader h{};
    h.magic = kMagic;
    h.version = kVersion;
    h.node = o.node;
    h.nodes = o.nodes;
    h.threads = o.threads;
    h.coroutines = o.coroutines;
    h.replicas = o.replicas;
    h.sums = static_cast<uint16_t>(o.sums);
    h.ring_bytes = j->ring_bytes_;
    std::strncpy(h.bench, o.bench.c_str(), sizeof h.bench - 1);
    h.checksum = header_checksum(h);
    std::memcpy(j->base_, &h, sizeof h);
    DRTMX_RETURN_IF_ERROR(j->persist(0, sizeof h));
    for (uint32_t c = 0; c < j->cos_; ++c) {
      j->rings_.push_back(std::make_unique<Ring>(*j, c));
      DRTMX_RETURN_IF_ERROR(j->rings_.back()->format());
    }
    return j;
  }
  spec.mode = rdpma::PoolOpen::kRecover;
  auto pool = rdpma::PmemPool::open(spec);
  if (!pool.is_ok()) return pool.status();
  j->pool_ = std::move(*pool);
  if (j->pool_->allocated() < kHeaderArea) {
    return invalid_argument("journal " + file + " holds no journal (never initialised)" + fix);
  }
  JournalHeader h;
  std::memcpy(&h, j->pool_->mapping() + rdpma::PmemPool::kHeaderBytes, sizeof h);
  if (h.magic != kMagic || h.version != kVersion || header_checksum(h) != h.checksum) {
    return invalid_argument("journal " + file + ": corrupted header (magic, version or checksum)" +
                            "; restore it, or start over with --format");
  }
  h.bench[sizeof h.bench - 1] = 0;
  const std::string created =
      std::string("--bench=") + h.bench + " --nodes=" + std::to_string(h.nodes) +
      " --threads=" + std::to_string(h.threads) + " --coroutines=" + std::to_string(h.coroutines) +
      " --replicas=" + std::to_string(h.replicas);
  const std::string now = "--bench=" + o.bench + " --nodes=" + std::to_string(o.nodes) +
                          " --threads=" + std::to_string(o.threads) +
                          " --coroutines=" + std::to_string(o.coroutines) +
                          " --replicas=" + std::to_string(o.replicas);
  if (created != now || h.node != o.node || h.sums != o.sums) {
    return invalid_argument("journal " + file + " was written by a cluster of " + created +
                            " (node " + std::to_string(h.node) + "); this run has " + now + fix);
  }
  j->ring_bytes_ = h.ring_bytes;
  j->sums_ = h.sums;
  const uint64_t total = total_bytes(j->cos_, j->ring_bytes_);
  if (h.ring_bytes < 1024 || h.ring_bytes % 64 != 0 || total > kMaxTotal ||
      j->pool_->allocated() < rdpma::alloc_span(total)) {
    return invalid_argument("journal " + file + ": its rings (" + std::to_string(h.ring_bytes) +
                            " bytes per coroutine) do not fit the file; restore it, or start "
                            "over with --format");
  }
  j->data_ = {rdpma::PmemPool::kHeaderBytes, static_cast<uint32_t>(total),
              static_cast<uint32_t>(rdpma::alloc_span(total))};
  DRTMX_RETURN_IF_ERROR(j->pool_->check_allocation(j->data_));
  j->base_ = j->pool_->mapping() + j->data_.offset;
  for (uint32_t c = 0; c < j->cos_; ++c) {
    j->rings_.push_back(std::make_unique<Ring>(*j, c));
    DRTMX_RETURN_IF_ERROR(j->rings_.back()->load(nullptr));
  }
  return j;
}

uint64_t Journal::stamp() const {
  JournalHeader h;
  std::memcpy(&h, base_, sizeof h);
  return h.stamp;
}

Status Journal::set_stamp(uint64_t stamp) {
  JournalHeader h;
  std::memcpy(&h, base_, sizeof h);
  h.stamp = stamp;
  h.checksum = header_checksum(h);
  std::memcpy(base_, &h, sizeof h);
  return persist(0, sizeof h);
}

txn::CommitObserver* Journal::observer(uint32_t co,
                                       std::function<void(std::vector<int64_t>&)> pending) {
  if (co >= rings_.size()) return nullptr;
  rings_[co]->set_pending(std::move(pending));
  return rings_[co].get();
}

std::string Journal::error() const {
  return error_set_.load(std::memory_order_acquire) ? error_ : std::string();
}

Result<JournalScan> Journal::scan() const {
  JournalScan s;
  s.carried.assign(kMaxJournalSums, 0);
  s.node = node_;
  for (const auto& r : rings_) {
    DRTMX_RETURN_IF_ERROR(r->load(&s));
  }
  for (JournalRecord& r : s.records) r.node = node_;
  return s;
}

Status Journal::settle(const std::vector<std::pair<uint32_t, uint64_t>>& committed) {
  for (uint32_t c = 0; c < rings_.size(); ++c) {
    std::vector<uint64_t> mine;
    for (const auto& [co, seq] : committed) {
      if (co == c) mine.push_back(seq);
    }
    DRTMX_RETURN_IF_ERROR(rings_[c]->settle(mine));
  }
  return Status::ok();
}

uint64_t Journal::records_written() const {
  uint64_t n = 0;
  for (const auto& r : rings_) n += r->written();
  return n;
}

uint64_t Journal::folds() const {
  uint64_t n = 0;
  for (const auto& r : rings_) n += r->folds();
  return n;
}

}  // namespace drtmx::bench
