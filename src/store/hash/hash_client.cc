#include "store/hash/hash_client.h"

#include <cstring>

#include "r2/common/clock.h"
#include "r2/sched/worker.h"

namespace drtmx::store::hash {
namespace {

Status read_error(const char* what, r2::OpStatus s, const HashRemote& r) {
  std::string m = std::string("hash get: READ of a ") + what + " on node " +
                  std::to_string(r.node) + " failed: " + r2::op_status_name(s);
  // Fenced: the node was removed from the cluster (a failover moves its
  // partitions): not a torn read to retry at once.
  return s == r2::OpStatus::kFenced ? aborted(std::move(m)) : unavailable(std::move(m));
}

Status status_of(HashStatus s, uint64_t key, const char* op) {
  if (s == HashStatus::kOk) return Status::ok();  // before any string is built (hot path)
  const std::string k = std::to_string(key);
  switch (s) {
    case HashStatus::kOk:
      return Status::ok();
    case HashStatus::kNotFound:
      return not_found(std::string("hash ") + op + ": key " + k + " not found");
    case HashStatus::kExists:
      return already_exists(std::string("hash ") + op + ": key " + k + " already exists");
    case HashStatus::kNoSpace:
      return exhausted(std::string("hash ") + op + ": the owner's table is out of space for key " +
                       k + "; create it with a larger capacity");
    case HashStatus::kTooLarge:
      return out_of_range(std::string("hash ") + op + ": value for key " + k +
                          " exceeds the table's value size");
    case HashStatus::kBusy:
      return unavailable(std::string("hash ") + op + ": record of key " + k +
                         " stayed locked or torn for every retry; retry later");
  }
  return internal_error("hash rpc: unknown status byte");
}

}  // namespace

Status HashClient::check(const HashRemote& r, size_t value_out) const {
  if (scratch_.size() < scratch_bytes(r.layout) ||
      reinterpret_cast<uintptr_t>(scratch_.data()) % 64 != 0) {
    return invalid_argument("hash client: scratch of " + std::to_string(scratch_.size()) +
                            " bytes must be 64-byte aligned and at least " +
                            std::to_string(scratch_bytes(r.layout)) + " bytes for table " +
                            std::to_string(r.table));
  }
  if (value_out < r.layout.value_size) {
    return invalid_argument("hash client: value buffer of " + std::to_string(value_out) +
                            " bytes is smaller than table " + std::to_string(r.table) +
                            "'s value size " + std::to_string(r.layout.value_size));
  }
  return Status::ok();
}

void HashClient::remember(const HashRemote& r, uint64_t key, const r2::RemoteAddr& a,
                          uint32_t inc) {
  if (cache_ != nullptr && opts_.use_cache) cache_->put(r.table, key, {a, inc});
}

Result<HashGet> HashClient::get(r2::Co& co, const HashRemote& r, uint64_t key,
                                std::span<uint8_t> value_out) {
  DRTMX_RETURN_IF_ERROR(check(r, value_out.size()));
  const HashLayout& l = r.layout;
  const uint32_t slot_bytes = static_cast<uint32_t>(l.slot_bytes());
  auto* bucket = reinterpret_cast<Bucket*>(scratch_.data());
  uint8_t* rec = scratch_.data() + kBucketBytes;
  uint32_t torn_budget = opts_.max_torn_reads;

  // READs the record at `a` until its copy is not torn (budget permitting).
  // Returns false when the torn budget ran out.
  auto read_record = [&](const r2::RemoteAddr& a, uint64_t expect_key, uint32_t inc,
                         RecordCheck* out) -> Result<bool> {
    for (;;) {
      r2::OpStatus s = co.read(a, rec, slot_bytes);
      ++stats_.reads;
      ++stats_.record_reads;
      if (s != r2::OpStatus::kOk) return read_error("record", s, r);
      *out = verify(rec, l.value_size, expect_key, inc);
      if (*out != RecordCheck::kTorn) return true;
      ++stats_.torn;
      if (torn_budget == 0) return false;
      --torn_budget;
    }
  };
  auto found = [&](const r2::RemoteAddr& a, uint32_t inc, GetPath p) {
    std::memcpy(value_out.data(), rec + sizeof(RecordHeader), l.value_size);
    ++stats_.gets;
    ++stats_.found;
    return HashGet{true, a, inc, last_record()->version, p};
  };

  // (a) the location cache.
  if (cache_ != nullptr && opts_.use_cache) {
    if (opts_.prefetch_yield && !co.direct(r.node)) {
      cache_->prefetch(r.table, key);
      co.yield();
    }
    CachedLocation loc;
    // An entry of another node than the route's owner predates a failover
    // that moved the partition (NodeCaches::reset raced a fill): a miss.
    if (cache_->get(r.table, key, &loc) && loc.addr.node == r.node) {
      ++stats_.cache_hits;
      RecordCheck c;
      Result<bool> ok = read_record(loc.addr, key, loc.incarnation, &c);
      if (!ok) return ok.status();
      if (!*ok) {
        ++stats_.fallbacks;
        return get_rpc(co, r, key, value_out);
      }
      if (c == RecordCheck::kOk) return found(loc.addr, loc.incarnation, GetPath::kCache);
      ++stats_.cache_stale;
      cache_->erase_if_same(r.table, key, loc);
    } else {
      ++stats_.cache_misses;
    }
  }

  // A table on this node whose ops run at once (r2::Co::direct): the
  // bucket walk reads the owner's memory in the caller, which costs less
  // than the RPC to its own worker and answers the same.
  if (opts_.miss_path == MissPath::kRpc && !co.direct(r.node)) {
    return get_rpc(co, r, key, value_out);
  }

  // (b) bucket walk, then the record.
  const uint32_t head = bucket_index(key, l.buckets);
  for (uint32_t restart = 0; restart <= opts_.max_restarts; ++restart) {
    uint64_t ref = 0;
    uint32_t b = head;
    bool out_of_budget = false;
    for (uint64_t steps = 0; steps <= l.overflow;) {
      r2::OpStatus s = co.read({r.node, l.bucket_region, l.bucket_addr(b)}, bucket, kBucketBytes);
      ++stats_.reads;
      ++stats_.bucket_reads;
      if (s != r2::OpStatus::kOk) return read_error("bucket", s, r);
      if (!bucket_verifies(*bucket)) {
        ++stats_.torn;
        if (torn_budget == 0) {
          out_of_budget = true;
          break;
        }
        --torn_budget;
        continue;  // the same bucket again
      }
      for (uint32_t i = 0; i < kSlotsPerBucket; ++i) {
        if (bucket->slots[i].ref != 0 && bucket->slots[i].key == key) ref = bucket->slots[i].ref;
      }
      if (ref != 0 || bucket->next == 0) break;
      b = l.buckets + bucket->next - 1;
      ++steps;
    }
    if (out_of_budget) break;
    if (ref == 0) {
      ++stats_.gets;
      ++stats_.not_found;
      return HashGet{};
    }
    const r2::RemoteAddr a{r.node, l.record_region, l.offset_of(ref)};
    RecordCheck c;
    Result<bool> ok = read_record(a, key, ref_incarnation(ref), &c);
    if (!ok) return ok.status();
    if (!*ok) break;
    if (c == RecordCheck::kOk) {
      remember(r, key, a, ref_incarnation(ref));
      return found(a, ref_incarnation(ref), GetPath::kBucket);
    }
    ++stats_.restarts;  // deleted or reused since our bucket copy
  }

  // (c) the owner.
  ++stats_.fallbacks;
  return get_rpc(co, r, key, value_out);
}

Result<uint64_t> HashClient::warm(r2::Co& co, const HashRemote& r) {
  if (cache_ == nullptr || !opts_.use_cache) return uint64_t{0};
  const HashLayout& l = r.layout;
  DRTMX_RETURN_IF_ERROR(check(r, l.value_size));
  auto* bucket = reinterpret_cast<Bucket*>(scratch_.data());
  uint64_t added = 0;
  for (uint32_t head = 0; head < l.buckets; ++head) {
    // A partition on this node whose READs run at once never yields by
    // itself: let the worker's other coroutines (and RPC handlers) run.
    if (head % 64 == 63) co.yield();
    uint32_t b = head;
    uint32_t torn = 0;
    for (uint64_t steps = 0; steps <= l.overflow;) {
      r2::OpStatus s = co.read({r.node, l.bucket_region, l.bucket_addr(b)}, bucket, kBucketBytes);
      ++stats_.warm_reads;
      if (s != r2::OpStatus::kOk) return read_error("bucket", s, r);
      if (!bucket_verifies(*bucket)) {
        if (++torn > opts_.max_torn_reads) break;  // hints: the chain's keys stay unknown
        continue;                                  // the same bucket again
      }
      for (const BucketSlot& slot : bucket->slots) {
        if (slot.ref == 0) continue;
        const CachedLocation loc{{r.node, l.record_region, l.offset_of(slot.ref)},
                                 ref_incarnation(slot.ref)};
        if (cache_->fill(r.table, slot.key, loc)) ++added;
      }
      if (bucket->next == 0) break;
      b = l.buckets + bucket->next - 1;
      ++steps;
    }
  }
  stats_.warmed += added;
  return added;
}

Result<HashReply> HashClient::call(r2::Co& co, const HashRemote& r, uint16_t rpc_id, uint64_t key,
                                   std::span<const uint8_t> value,
                                   std::vector<uint8_t>* reply_value) {
  HashReq h;
  h.table = r.table;
  h.value_len = static_cast<uint32_t>(value.size());
  h.key = key;
  req_.resize(sizeof h + value.size());
  std::memcpy(req_.data(), &h, sizeof h);
  if (!value.empty()) std::memcpy(req_.data() + sizeof h, value.data(), value.size());
  // Any owner thread serves any partition; spread keys over them.
  const r2::ThreadId t = static_cast<r2::ThreadId>(key % co.worker().threads_per_node());
  uint64_t busy_until = 0;  // set at the first kBusy
  constexpr uint32_t kMaxBusyRetries = 1u << 20;
  for (uint32_t attempt = 0;; ++attempt) {
    DRTMX_RETURN_IF_ERROR(co.call(r2::Target{r.node, t}, rpc_id, req_.data(),
                                  static_cast<uint32_t>(req_.size()), reply_));
    HashReply rep;
    if (reply_.size() < sizeof rep) {
      return internal_error("hash rpc: reply of " + std::to_string(reply_.size()) +
                            " bytes is shorter than its head");
    }
    std::memcpy(&rep, reply_.data(), sizeof rep);
    if (static_cast<HashStatus>(rep.status) == HashStatus::kBusy && attempt < kMaxBusyRetries) {
      const uint64_t now = r2::now_ns();
      if (busy_until == 0) busy_until = now + uint64_t{opts_.busy_wait_us} * 1000;
      if (attempt < opts_.busy_retries || now < busy_until) {
        co.yield();
        continue;
      }
    }
    if (reply_value != nullptr) reply_value->assign(reply_.begin() + sizeof rep, reply_.end());
    return rep;
  }
}

Result<HashGet> HashClient::get_rpc(r2::Co& co, const HashRemote& r, uint64_t key,
                                    std::span<uint8_t> value_out) {
  DRTMX_RETURN_IF_ERROR(check(r, value_out.size()));
  ++stats_.rpc_gets;
  std::vector<uint8_t> value;
  Result<HashReply> rep = call(co, r, kRpcHashGet, key, {}, &value);
  if (!rep) return rep.status();
  const auto st = static_cast<HashStatus>(rep->status);
  if (st == HashStatus::kNotFound) {
    ++stats_.gets;
    ++stats_.not_found;
    HashGet g;
    g.path = GetPath::kRpc;
    return g;
  }
  DRTMX_RETURN_IF_ERROR(status_of(st, key, "get"));
  if (value.size() != r.layout.value_size) {
    return internal_error("hash rpc get: reply carries " + std::to_string(value.size()) +
                          " value bytes, the table's value size is " +
                          std::to_string(r.layout.value_size) +
                          "; client and owner disagree on the layout");
  }
  std::memcpy(value_out.data(), value.data(), value.size());
  const r2::RemoteAddr a{r.node, rep->region, rep->offset};
  remember(r, key, a, rep->incarnation);
  ++stats_.gets;
  ++stats_.found;
  return HashGet{true, a, rep->incarnation, rep->version, GetPath::kRpc};
}

Result<HashGet> HashClient::insert(r2::Co& co, const HashRemote& r, uint64_t key,
                                   std::span<const uint8_t> value) {
  Result<HashReply> rep = call(co, r, kRpcHashInsert, key, value, nullptr);
  if (!rep) return rep.status();
  DRTMX_RETURN_IF_ERROR(status_of(static_cast<HashStatus>(rep->status), key, "insert"));
  const r2::RemoteAddr a{r.node, rep->region, rep->offset};
  remember(r, key, a, rep->incarnation);
  return HashGet{true, a, rep->incarnation, rep->version, GetPath::kRpc};
}

Result<HashGet> HashClient::update(r2::Co& co, const HashRemote& r, uint64_t key,
                                   std::span<const uint8_t> value) {
  Result<HashReply> rep = call(co, r, kRpcHashUpdate, key, value, nullptr);
  if (!rep) return rep.status();
  DRTMX_RETURN_IF_ERROR(status_of(static_cast<HashStatus>(rep->status), key, "update"));
  const r2::RemoteAddr a{r.node, rep->region, rep->offset};
  remember(r, key, a, rep->incarnation);
  return HashGet{true, a, rep->incarnation, rep->version, GetPath::kRpc};
}

Status HashClient::remove(r2::Co& co, const HashRemote& r, uint64_t key) {
  Result<HashReply> rep = call(co, r, kRpcHashDelete, key, {}, nullptr);
  if (!rep) return rep.status();
  if (cache_ != nullptr) cache_->erase(r.table, key);
  return status_of(static_cast<HashStatus>(rep->status), key, "delete");
}

}  // namespace drtmx::store::hash
