#include "store/hash/hash_service.h"

#include <cstring>

namespace drtmx::store::hash {

HashStatus to_hash_status(const Status& s) {
  switch (s.code()) {
    case Code::kOk:
      return HashStatus::kOk;
    case Code::kNotFound:
      return HashStatus::kNotFound;
    case Code::kAlreadyExists:
      return HashStatus::kExists;
    case Code::kResourceExhausted:
      return HashStatus::kNoSpace;
    case Code::kOutOfRange:
      return HashStatus::kTooLarge;
    default:
      return HashStatus::kBusy;
  }
}

Status HashService::add(uint32_t table_id, HashTable* table) {
  if (table == nullptr) return invalid_argument("hash service: table is null");
  if (!tables_.emplace(table_id, table).second) {
    return already_exists("hash service: table id " + std::to_string(table_id) +
                          " is already served");
  }
  return Status::ok();
}

Status HashService::register_handlers(r2::Worker& w) {
  for (uint16_t id : {kRpcHashGet, kRpcHashInsert, kRpcHashUpdate, kRpcHashDelete}) {
    DRTMX_RETURN_IF_ERROR(w.register_handler(id, [this, id](r2::RpcRequest& r) {
      std::vector<uint8_t> reply;
      Status st = handle(id, r.payload(), reply);
      if (!st.is_ok()) {
        r.reply_error(st.to_string());
      } else {
        r.reply(reply.data(), static_cast<uint32_t>(reply.size()));
      }
    }));
  }
  return Status::ok();
}

Status HashService::handle(uint16_t rpc_id, std::span<const uint8_t> req,
                           std::vector<uint8_t>& reply) const {
  HashReq h;
  if (req.size() < sizeof h) {
    return invalid_argument("hash rpc: request of " + std::to_string(req.size()) +
                            " bytes is shorter than its head");
  }
  std::memcpy(&h, req.data(), sizeof h);
  if (req.size() != sizeof h + h.value_len) {
    return invalid_argument("hash rpc: request says " + std::to_string(h.value_len) +
                            " value bytes but carries " + std::to_string(req.size() - sizeof h));
  }
  auto it = tables_.find(h.table);
  if (it == tables_.end()) {
    return not_found("hash rpc: no hash table with id " + std::to_string(h.table) +
                     " on this node; check the partition map");
  }
  HashTable& t = *it->second;
  const auto value = req.subspan(sizeof h);
  HashReply rep;
  rep.region = t.layout().record_region;
  const size_t vs = t.layout().value_size;
  reply.assign(sizeof rep, 0);

  auto fill = [&](const Result<RecordLoc>& r) {
    rep.status = static_cast<uint8_t>(to_hash_status(r.status()));
    if (r.is_ok()) {
      rep.status = static_cast<uint8_t>(HashStatus::kOk);
      rep.offset = r->offset;
      rep.incarnation = r->incarnation;
      rep.version = r->version;
    }
  };
  switch (rpc_id) {
    case kRpcHashGet: {
      reply.resize(sizeof rep + vs);
      Result<RecordLoc> r = t.get(h.key, std::span<uint8_t>(reply.data() + sizeof rep, vs));
      fill(r);
      if (!r.is_ok()) reply.resize(sizeof rep);
      break;
    }
    case kRpcHashInsert:
      fill(t.insert(h.key, value));
      break;
    case kRpcHashUpdate:
      fill(t.update(h.key, value));
      break;
    case kRpcHashDelete: {
      Status st = t.remove(h.key);
      rep.status = static_cast<uint8_t>(to_hash_status(st));
      break;
    }
    default:
      return invalid_argument("hash rpc: unknown rpc id " + std::to_string(rpc_id));
  }
  std::memcpy(reply.data(), &rep, sizeof rep);
  return Status::ok();
}

}  // namespace drtmx::store::hash
