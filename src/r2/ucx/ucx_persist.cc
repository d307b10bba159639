// UcxEndpoint: the flushing READ (H9) — the origin's persist request and
// the target's service of it. See ucx_endpoint.h and README.md,
// "Persistent regions".
#include <libpmem.h>

#include <cstring>

#include "r2/ucx/ucx_endpoint.h"

namespace drtmx::r2::ucx {
namespace {
constexpr uintptr_t kPersistPage = 4096;
}  // namespace

void UcxEndpoint::send_persist(Channel& ch, Slot* s, uint32_t id) {
  ++stats_.persist_requests;
  SendBuf* b = take_send_buf();
  const uint32_t count = static_cast<uint32_t>(ch.dirty.size());
  b->bytes.resize(sizeof(AmHeader) + 8 + size_t{count} * sizeof(PersistRange));
  AmHeader h{self_, thread_, id};
  std::memcpy(b->bytes.data(), &h, sizeof h);
  std::memcpy(b->bytes.data() + sizeof h, &count, 4);
  std::memcpy(b->bytes.data() + sizeof h + 8, ch.dirty.data(), count * sizeof(PersistRange));
  ch.dirty.clear();
  ucs_status_ptr_t r = send_eager(ep(ch.peer, thread_), kAmPersistRequest, b);
  if (UCS_PTR_IS_ERR(r)) {
    finish_now(s, map_error(ch));
    ch.persists.pop_back();
  }
  // Otherwise done when the reply arrives (on_persist_reply).
}

// --- persistence (the flushing READ) -----------------------------------------

ucs_status_t UcxEndpoint::on_persist_request(void* arg, const void*, size_t, void* data,
                                             size_t length, const ucp_am_recv_param_t*) {
  auto* self = static_cast<UcxEndpoint*>(arg);
  AmHeader h;
  uint32_t count = 0;
  if (length < sizeof h + 8) return UCS_OK;
  std::memcpy(&h, data, sizeof h);
  std::memcpy(&count, static_cast<const uint8_t*>(data) + sizeof h, 4);
  if (h.src_node >= self->nodes_ || h.src_thread >= self->threads_ ||
      length != sizeof h + 8 + size_t{count} * sizeof(PersistRange)) {
    return UCS_OK;
  }
  PersistStatus st = PersistStatus::kOk;
  const auto* at = static_cast<const uint8_t*>(data) + sizeof h + 8;
  for (uint32_t i = 0; i < count; ++i) {
    PersistRange pr;
    std::memcpy(&pr, at + size_t{i} * sizeof pr, sizeof pr);
    const RegionEntry* r = self->table_->find(self->self_, pr.region);
    if (r == nullptr || pr.offset > r->size || pr.len > r->size - pr.offset) {
      st = PersistStatus::kBadRange;
      continue;
    }
    auto* p = reinterpret_cast<uint8_t*>(r->base + pr.offset);
    self->stats_.persisted_bytes += pr.len;
    if (r->persistence == Persistence::kMsync) {
      const uintptr_t b = reinterpret_cast<uintptr_t>(p) & ~(kPersistPage - 1);
      const uintptr_t e =
          (reinterpret_cast<uintptr_t>(p) + pr.len + kPersistPage - 1) & ~(kPersistPage - 1);
      if (pmem_msync(reinterpret_cast<void*>(b), e - b) != 0) st = PersistStatus::kMsyncFailed;
    } else if (r->persistence != Persistence::kNone) {
      pmem_persist(p, pr.len);  // write the lines back and fence
    }
  }
  ++self->stats_.persist_served;
  self->replies_.push_back({h.src_node, h.src_thread, h.seq, st});
  return UCS_OK;
}

void UcxEndpoint::send_replies() {
  std::vector<Reply> todo;
  todo.swap(replies_);
  for (const Reply& r : todo) {
    if (peer_closed_[r.node] || ep(r.node, r.thread) == nullptr) continue;
    SendBuf* b = take_send_buf();
    b->bytes.resize(sizeof(AmHeader) + 4);
    AmHeader h{self_, thread_, r.id};
    const auto st = static_cast<uint32_t>(r.status);
    std::memcpy(b->bytes.data(), &h, sizeof h);
    std::memcpy(b->bytes.data() + sizeof h, &st, 4);
    (void)send_eager(ep(r.node, r.thread), kAmPersistReply, b);
  }
}

ucs_status_t UcxEndpoint::on_persist_reply(void* arg, const void*, size_t, void* data,
                                           size_t length, const ucp_am_recv_param_t*) {
  auto* self = static_cast<UcxEndpoint*>(arg);
  AmHeader h;
  uint32_t st = 0;
  if (length != sizeof h + 4) return UCS_OK;
  std::memcpy(&h, data, sizeof h);
  std::memcpy(&st, static_cast<const uint8_t*>(data) + sizeof h, 4);
  if (h.src_node >= self->nodes_) return UCS_OK;
  Channel& ch = self->channels_[h.src_node];
  for (auto it = ch.persists.begin(); it != ch.persists.end(); ++it) {
    if (it->first != h.seq) continue;
    Slot* s = it->second;
    s->done = true;
    s->status = st == 0 ? OpStatus::kOk : OpStatus::kTransportError;
    ch.persists.erase(it);
    break;
  }
  return UCS_OK;
}

}  // namespace drtmx::r2::ucx
