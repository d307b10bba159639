#include "rdpma/client.h"

#include <cstring>

#include "r2/sched/worker.h"
#include "rdpma/persist_op.h"
#include "rdpma/pmem_wire.h"

namespace drtmx::rdpma {

const char* primitive_name(Primitive p) {
  return p == Primitive::kOneSided ? "one-sided" : "two-sided";
}

const char* method_name(PersistMethod m) {
  switch (m) {
    case PersistMethod::kH9:
      return "h9";
    case PersistMethod::kStrawman:
      return "strawman";
    case PersistMethod::kTwoSided:
      return "two-sided";
  }
  return "?";
}

Result<Client> Client::make(r2::Co& co, const r2::Fabric& fabric, std::span<uint8_t> scratch) {
  if (scratch.size() < 2 * kLine) {
    return invalid_argument("RDPMA client scratch of " + std::to_string(scratch.size()) +
                            " bytes: it needs at least " + std::to_string(2 * kLine));
  }
  if (!co.worker().endpoint()->is_registered(scratch.data(), scratch.size())) {
    return invalid_argument(
        "RDPMA client scratch is not registered memory of this node (give it a part of a "
        "region registered before connect)");
  }
  return Client(co, fabric, scratch);
}

Client::Client(r2::Co& co, const r2::Fabric& fabric, std::span<uint8_t> scratch)
    : co_(&co),
      fabric_(&fabric),
      flush_(reinterpret_cast<uint64_t*>(scratch.data())),
      stage_(scratch.subspan(kLine)) {}

Status Client::op_error(r2::OpStatus st, r2::RemoteAddr to, const char* what) const {
  const std::string m = std::string(what) + " to node " + std::to_string(to.node) + " region " +
                        std::to_string(to.region) + " offset " + std::to_string(to.offset) + ": " +
                        r2::op_status_name(st);
  switch (st) {
    case r2::OpStatus::kOk:
      return Status::ok();
    case r2::OpStatus::kOutOfBounds:
    case r2::OpStatus::kBadLength:
      return out_of_range(m);
    case r2::OpStatus::kBadRegion:
    case r2::OpStatus::kBadNode:
      return not_found(m);
    case r2::OpStatus::kMisaligned:
    case r2::OpStatus::kBadLocalBuffer:
      return invalid_argument(m);
    case r2::OpStatus::kTransportError:
      return unavailable(m);
    case r2::OpStatus::kFenced:
      return aborted(m);
  }
  return internal_error(m);
}

Status Client::check_persistent(r2::NodeId node, r2::RegionId region, const char* what) const {
  if (fabric_->region_persistence(node, region) != r2::Persistence::kNone) return Status::ok();
  if (fabric_->remote_region_size(node, region) == 0) {
    return not_found(std::string(what) + ": node " + std::to_string(node) + " has no region " +
                     std::to_string(region));
  }
  return invalid_argument(std::string(what) + " to region " + std::to_string(region) + " of node " +
                          std::to_string(node) +
                          ", which is volatile memory: nothing written there is durable "
                          "(register the pool's data_region() with register_file_region)");
}

Status Client::stage(const void* in, uint32_t n, uint32_t span, const char* what) {
  if (span > stage_.size()) {
    return out_of_range(std::string(what) + " of " + std::to_string(span) +
                        " bytes exceeds the coroutine's staging memory of " +
                        std::to_string(stage_.size()) + " bytes (give the client more scratch)");
  }
  std::memcpy(stage_.data(), in, n);
  if (span > n) std::memset(stage_.data() + n, 0, span - n);
  return Status::ok();
}

Status Client::persist_one_sided(r2::RemoteAddr to, uint32_t len, PersistMethod m,
                                 const char* what) {
  batch_.clear();
  if (m == PersistMethod::kH9) {
    add_persistent_write(batch_, to, stage_.data(), len, flush_);
    return op_error(co_->run(batch_), to, what);
  }
  // The strawman: two round trips.
  batch_.write(to, stage_.data(), len);
  DRTMX_RETURN_IF_ERROR(op_error(co_->run(batch_), to, what));
  batch_.clear();
  add_flushing_read(batch_, to, flush_, len);
  return op_error(co_->run(batch_), to, what);
}

Status Client::two_sided(const RemotePtr* p, r2::RemoteAddr raw, uint8_t op, uint64_t at,
                         const void* in, uint32_t n, void* out) {
  PmemRequest h;
  h.op = op;
  h.len = n;
  h.at = at;
  r2::NodeId node = raw.node;
  if (p != nullptr) {
    h.addressing = static_cast<uint8_t>(Addressing::kFatPtr);
    h.region = p->region;
    h.offset = p->ptr.offset;
    h.size = p->ptr.size;
    h.span = p->ptr.span;
    node = p->node;
  } else {
    h.addressing = static_cast<uint8_t>(Addressing::kRaw);
    h.region = raw.region;
    h.offset = raw.offset;
  }
  if (n > kMaxPmemBytes) {
    return out_of_range("two-sided RDPMA request of " + std::to_string(n) +
                        " bytes exceeds its limit of " + std::to_string(kMaxPmemBytes));
  }
  encode_request(h, in, &request_);
  DRTMX_RETURN_IF_ERROR(co_->call(r2::Target{node, co_->thread()}, kRpcPmem, request_.data(),
                                  static_cast<uint32_t>(request_.size()), reply_));
  std::span<const uint8_t> data;
  DRTMX_RETURN_IF_ERROR(decode_reply(reply_, &data));
  if (out != nullptr) {
    if (data.size() != n) {
      return internal_error("two-sided read of " + std::to_string(n) + " bytes from node " +
                            std::to_string(node) + " got " + std::to_string(data.size()));
    }
    std::memcpy(out, data.data(), n);
  }
  return Status::ok();
}

Status Client::read(const RemotePtr& p, uint64_t at, void* out, uint32_t n, Primitive prim) {
  DRTMX_RETURN_IF_ERROR(check_access(p, at, n, "read"));
  if (prim == Primitive::kTwoSided) {
    return two_sided(&p, {}, static_cast<uint8_t>(PmemOp::kRead), at, nullptr, n, out);
  }
  const bool direct = co_->worker().endpoint()->is_registered(out, n);
  if (!direct && n > stage_.size()) {
    return out_of_range("read of " + std::to_string(n) +
                        " bytes into unregistered memory exceeds the coroutine's staging "
                        "memory of " +
                        std::to_string(stage_.size()) + " bytes");
  }
  const r2::RemoteAddr from = p.addr(at);
  DRTMX_RETURN_IF_ERROR(op_error(co_->read(from, direct ? out : stage_.data(), n), from, "read"));
  if (!direct) std::memcpy(out, stage_.data(), n);
  return Status::ok();
}

Status Client::write(const RemotePtr& p, uint64_t at, const void* in, uint32_t n, Primitive prim) {
  DRTMX_RETURN_IF_ERROR(check_access(p, at, n, "write"));
  if (prim == Primitive::kTwoSided) {
    return two_sided(&p, {}, static_cast<uint8_t>(PmemOp::kWrite), at, in, n, nullptr);
  }
  const bool whole = at == 0 && n == p.ptr.size;
  const uint32_t len = whole ? p.ptr.span : n;
  DRTMX_RETURN_IF_ERROR(stage(in, n, len, "write"));
  const r2::RemoteAddr to = p.addr(at);
  return op_error(co_->write(to, stage_.data(), len), to, "write");
}

Status Client::pwrite(const RemotePtr& p, uint64_t at, const void* in, uint32_t n,
                      PersistMethod m) {
  DRTMX_RETURN_IF_ERROR(check_access(p, at, n, "persistent write"));
  DRTMX_RETURN_IF_ERROR(check_persistent(p.node, p.region, "persistent write"));
  if (m == PersistMethod::kTwoSided) {
    return two_sided(&p, {}, static_cast<uint8_t>(PmemOp::kPWrite), at, in, n, nullptr);
  }
  const bool whole = at == 0 && n == p.ptr.size;
  const uint32_t len = whole ? p.ptr.span : n;  // H5/H6: the padded span
  DRTMX_RETURN_IF_ERROR(stage(in, n, len, "persistent write"));
  return persist_one_sided(p.addr(at), len, m, "persistent write");
}

Status Client::pwrite_raw(r2::RemoteAddr to, const void* in, uint32_t n, PersistMethod m) {
  if (n == 0) return invalid_argument("raw persistent write of 0 bytes");
  DRTMX_RETURN_IF_ERROR(check_persistent(to.node, to.region, "raw persistent write"));
  if (m == PersistMethod::kTwoSided) {
    return two_sided(nullptr, to, static_cast<uint8_t>(PmemOp::kPWrite), 0, in, n, nullptr);
  }
  DRTMX_RETURN_IF_ERROR(stage(in, n, n, "raw persistent write"));
  return persist_one_sided(to, n, m, "raw persistent write");
}

}  // namespace drtmx::rdpma
