#include "store/tables/ordered_rpc.h"

#include <cstring>
#include <string>

#include "store/tables/store_node.h"
#include "store/xstore/server/xstore_rpc.h"

namespace drtmx::store::tables {
namespace {

// Record-write request: head, then the value. Reply: RecordReply.
struct RecordReq {
  uint32_t service = 0;
  uint32_t value_len = 0;
  uint64_t key = 0;
};
struct RecordReply {
  uint8_t code = 0;  // base Code of the outcome
  uint8_t pad[7] = {};
  RecordAddr addr;
};
static_assert(sizeof(RecordReq) == 16 && sizeof(RecordReply) == 24);

template <class T>
void put(std::vector<uint8_t>& buf, const T& v) {
  const size_t at = buf.size();
  buf.resize(at + sizeof v);
  std::memcpy(buf.data() + at, &v, sizeof v);
}

Status short_reply(const char* what, size_t got) {
  return internal_error(std::string("ordered rpc ") + what + ": reply of " + std::to_string(got) +
                        " bytes is too short");
}

Status xstatus_error(uint8_t s, uint64_t key, const char* what) {
  switch (static_cast<xstore::XStatus>(s)) {
    case xstore::XStatus::kOk:
      return Status::ok();
    case xstore::XStatus::kNotFound:
      return not_found(std::string(what) + ": key " + std::to_string(key) + " not found");
    case xstore::XStatus::kAlreadyExists:
      return already_exists(std::string(what) + ": key " + std::to_string(key) + " exists");
    case xstore::XStatus::kOutOfLeaves:
      return exhausted(std::string(what) +
                       ": the owner's tree is out of leaves; raise the table's capacity");
  }
  return internal_error(std::string(what) + ": unknown status byte in the reply");
}

r2::Target owner_of(r2::Co& co, const OrderedRemote& r, uint64_t key) {
  return r2::Target{r.node, static_cast<r2::ThreadId>(key % co.worker().threads_per_node())};
}

}  // namespace

Status OrderedRpc::call(r2::Co& co, const OrderedRemote& r, uint16_t rpc, uint64_t key) {
  return co.call(owner_of(co, r, key), rpc, req_.data(), static_cast<uint32_t>(req_.size()),
                 reply_);
}

Result<bool> OrderedRpc::get(r2::Co& co, const OrderedRemote& r, uint64_t key, void* out) {
  xstore::XGetReq q;
  q.h.tree = r.service;
  q.key = key;
  req_.clear();
  put(req_, q);
  DRTMX_RETURN_IF_ERROR(call(co, r, xstore::kRpcXGet, key));
  xstore::XGetReply rep;
  if (reply_.size() < sizeof rep) return short_reply("get", reply_.size());
  std::memcpy(&rep, reply_.data(), sizeof rep);
  if (static_cast<xstore::XStatus>(rep.status) == xstore::XStatus::kNotFound) return false;
  DRTMX_RETURN_IF_ERROR(xstatus_error(rep.status, key, "ordered get"));
  if (reply_.size() < sizeof rep + r.value_bytes) return short_reply("get", reply_.size());
  std::memcpy(out, reply_.data() + sizeof rep, r.value_bytes);
  return true;
}

Status OrderedRpc::scan(r2::Co& co, const OrderedRemote& r, uint64_t start, size_t n,
                        std::vector<uint64_t>& keys, std::vector<uint8_t>& values,
                        bool* end_of_tree) {
  *end_of_tree = false;
  size_t want = n;
  while (want > 0) {
    xstore::XScanReq q;
    q.h.tree = r.service;
    q.start = start;
    q.n = static_cast<uint32_t>(std::min<size_t>(want, xstore::kMaxScanPairs));
    req_.clear();
    put(req_, q);
    DRTMX_RETURN_IF_ERROR(call(co, r, xstore::kRpcXScan, start));
    xstore::XScanReply rep;
    if (reply_.size() < sizeof rep) return short_reply("scan", reply_.size());
    std::memcpy(&rep, reply_.data(), sizeof rep);
    const size_t need = sizeof rep + size_t{rep.count} * (8 + r.value_bytes);
    if (rep.count > q.n || reply_.size() < need) return short_reply("scan", reply_.size());
    if (rep.count != 0) {  // (memcpy into an empty vector's null data() is UB)
      const size_t k0 = keys.size();
      keys.resize(k0 + rep.count);
      std::memcpy(keys.data() + k0, reply_.data() + sizeof rep, size_t{rep.count} * 8);
      const size_t v0 = values.size();
      values.resize(v0 + size_t{rep.count} * r.value_bytes);
      std::memcpy(values.data() + v0, reply_.data() + sizeof rep + size_t{rep.count} * 8,
                  size_t{rep.count} * r.value_bytes);
    }
    want -= rep.count;
    if (rep.end_of_tree != 0) {
      *end_of_tree = true;
      break;
    }
    if (rep.count == 0 || keys.back() == UINT64_MAX) break;
    start = keys.back() + 1;
  }
  return Status::ok();
}

Status OrderedRpc::insert(r2::Co& co, const OrderedRemote& r, uint64_t key,
                          std::span<const uint8_t> value, bool upsert) {
  if (value.size() > r.value_bytes) {
    return out_of_range("ordered insert: value of " + std::to_string(value.size()) +
                        " bytes exceeds the table's value size " + std::to_string(r.value_bytes));
  }
  xstore::XInsertReq q;
  q.h.tree = r.service;
  q.h.flags = upsert ? xstore::kInsertUpsert : 0;
  q.key = key;
  req_.clear();
  put(req_, q);
  const size_t at = req_.size();
  req_.resize(at + r.value_bytes, 0);
  if (!value.empty()) std::memcpy(req_.data() + at, value.data(), value.size());
  DRTMX_RETURN_IF_ERROR(call(co, r, xstore::kRpcXInsert, key));
  xstore::XPosReply rep;
  if (reply_.size() < sizeof rep) return short_reply("insert", reply_.size());
  std::memcpy(&rep, reply_.data(), sizeof rep);
  return xstatus_error(rep.status, key, "ordered insert");
}

Status OrderedRpc::remove(r2::Co& co, const OrderedRemote& r, uint64_t key) {
  xstore::XDeleteReq q;
  q.h.tree = r.service;
  q.key = key;
  req_.clear();
  put(req_, q);
  DRTMX_RETURN_IF_ERROR(call(co, r, xstore::kRpcXDelete, key));
  xstore::XPosReply rep;
  if (reply_.size() < sizeof rep) return short_reply("remove", reply_.size());
  std::memcpy(&rep, reply_.data(), sizeof rep);
  return xstatus_error(rep.status, key, "ordered remove");
}

Result<RecordAddr> OrderedRpc::record_write(r2::Co& co, uint16_t rpc, const OrderedRemote& r,
                                            uint64_t key, std::span<const uint8_t> value) {
  RecordReq q;
  q.service = r.service;
  q.value_len = static_cast<uint32_t>(value.size());
  q.key = key;
  req_.clear();
  put(req_, q);
  req_.insert(req_.end(), value.begin(), value.end());
  DRTMX_RETURN_IF_ERROR(call(co, r, rpc, key));
  RecordReply rep;
  if (reply_.size() < sizeof rep) return short_reply("record write", reply_.size());
  std::memcpy(&rep, reply_.data(), sizeof rep);
  if (rep.code != static_cast<uint8_t>(Code::kOk)) {
    std::string msg(reinterpret_cast<const char*>(reply_.data()) + sizeof rep,
                    reply_.size() - sizeof rep);
    return Status(static_cast<Code>(rep.code), msg);
  }
  return rep.addr;
}

Status register_record_handlers(StoreNode& node, r2::Worker& w) {
  for (uint16_t id : {kRpcRecordInsert, kRpcRecordUpdate, kRpcRecordRemove}) {
    DRTMX_RETURN_IF_ERROR(w.register_handler(id, [&node, id](r2::RpcRequest& req) {
      RecordReq q;
      const std::span<const uint8_t> p = req.payload();
      if (p.size() < sizeof q) return req.reply_error("record rpc: request shorter than its head");
      std::memcpy(&q, p.data(), sizeof q);
      if (p.size() != sizeof q + q.value_len) {
        return req.reply_error("record rpc: request length does not match its value length");
      }
      LocalPartition* part = node.partition(q.service >> 20, q.service & 0xFFFFF);
      if (part == nullptr || !part->records) {
        return req.reply_error("record rpc: no record tree " + std::to_string(q.service) +
                               " on node " + std::to_string(node.node()));
      }
      const std::span<const uint8_t> value = p.subspan(sizeof q);
      Result<RecordAddr> r = id == kRpcRecordInsert   ? part->records->insert(q.key, value)
                             : id == kRpcRecordUpdate ? part->records->update(q.key, value)
                                                      : [&]() -> Result<RecordAddr> {
        Status st = part->records->remove(q.key);
        if (!st.is_ok()) return st;
        return RecordAddr{};
      }();
      std::vector<uint8_t> out(sizeof(RecordReply));
      RecordReply rep;
      rep.code = static_cast<uint8_t>(r.status().code());
      if (r.is_ok()) rep.addr = *r;
      std::memcpy(out.data(), &rep, sizeof rep);
      if (!r.is_ok()) {
        const std::string& m = r.status().message();
        out.insert(out.end(), m.begin(), m.end());
      }
      req.reply(out.data(), static_cast<uint32_t>(out.size()));
    }));
  }
  return Status::ok();
}

}  // namespace drtmx::store::tables
