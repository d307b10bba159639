#include "rdpma/pmem_service.h"

#include <cstring>

#include "rdpma/pmem_wire.h"

namespace drtmx::rdpma {

Status PoolDirectory::add(r2::RegionId region, PmemPool* pool) {
  if (pool == nullptr)
    return invalid_argument("pool directory: null pool for region " + std::to_string(region));
  if (find(region) != nullptr) {
    return already_exists("pool directory: region " + std::to_string(region) +
                          " already has a pool");
  }
  if (region >= by_region_.size()) by_region_.resize(region + 1u, nullptr);
  by_region_[region] = pool;
  return Status::ok();
}

PmemPool* PoolDirectory::find(r2::RegionId region) const {
  return region < by_region_.size() ? by_region_[region] : nullptr;
}

namespace {

void fail(const Status& s, std::vector<uint8_t>* reply) {
  reply->assign(1, static_cast<uint8_t>(s.code()));
  reply->insert(reply->end(), s.message().begin(), s.message().end());
}

Status serve(const PoolDirectory& dir, std::span<const uint8_t> payload, r2::NodeId self,
             std::vector<uint8_t>* reply) {
  // Built only for an error (a request that is served builds no string).
  const auto on = [self] { return " (RDPMA request to node " + std::to_string(self) + ")"; };
  PmemRequest h;
  if (payload.size() < sizeof h) {
    return invalid_argument("malformed request of " + std::to_string(payload.size()) +
                            " bytes, the header alone has " + std::to_string(sizeof h) + on());
  }
  std::memcpy(&h, payload.data(), sizeof h);
  const std::span<const uint8_t> data = payload.subspan(sizeof h);
  const auto op = static_cast<PmemOp>(h.op);
  if (op != PmemOp::kRead && op != PmemOp::kWrite && op != PmemOp::kPWrite) {
    return invalid_argument("unknown op " + std::to_string(h.op) + on());
  }
  if (h.addressing > static_cast<uint8_t>(Addressing::kRaw)) {
    return invalid_argument("unknown addressing " + std::to_string(h.addressing) + on());
  }
  if (h.len == 0 || h.len > kMaxPmemBytes) {
    return invalid_argument("length " + std::to_string(h.len) + " is not 1.." +
                            std::to_string(kMaxPmemBytes) + on());
  }
  const uint64_t want = op == PmemOp::kRead ? 0 : h.len;
  if (data.size() != want) {
    return invalid_argument("the header says " + std::to_string(want) + " data bytes, " +
                            std::to_string(data.size()) + " came" + on());
  }
  PmemPool* pool = dir.find(h.region);
  if (pool == nullptr) {
    return not_found("node " + std::to_string(self) + " has no persistent pool as region " +
                     std::to_string(h.region));
  }
  if (static_cast<Addressing>(h.addressing) == Addressing::kRaw) {
    if (op != PmemOp::kPWrite) {
      return invalid_argument("raw addressing is for PWrite only" + on());
    }
    DRTMX_RETURN_IF_ERROR(pool->pwrite_raw(h.offset, data.data(), h.len));
    reply->assign(1, 0);
    return Status::ok();
  }
  const FatPtr p{h.offset, h.size, h.span};
  switch (op) {
    case PmemOp::kRead:
      reply->resize(1 + size_t{h.len});
      (*reply)[0] = 0;
      DRTMX_RETURN_IF_ERROR(pool->read(p, h.at, reply->data() + 1, h.len));
      return Status::ok();
    case PmemOp::kWrite:
      DRTMX_RETURN_IF_ERROR(pool->write_nt(p, h.at, data.data(), h.len));
      break;
    case PmemOp::kPWrite:
      DRTMX_RETURN_IF_ERROR(pool->pwrite(p, h.at, data.data(), h.len));
      break;
  }
  reply->assign(1, 0);
  return Status::ok();
}

}  // namespace

void serve_pmem_request(const PoolDirectory& dir, std::span<const uint8_t> payload, r2::NodeId self,
                        std::vector<uint8_t>* reply) {
  Status s = serve(dir, payload, self, reply);
  if (!s.is_ok()) fail(s, reply);
}

Status register_pmem_handler(r2::Worker& w, const PoolDirectory& dir) {
  const r2::NodeId self = w.node();
  return w.register_handler(
      kRpcPmem, [&dir, self, reply = std::vector<uint8_t>()](r2::RpcRequest& req) mutable {
        serve_pmem_request(dir, req.payload(), self, &reply);
        req.reply(reply.data(), static_cast<uint32_t>(reply.size()));
      });
}

}  // namespace drtmx::rdpma
