// Thin RAII over rdma-core objects and the few verbs calls the backend
// makes at set-up: open a device, query its port, create and connect QPs,
// create address handles. Every failure is a Status naming the call, the
// device and what to check. Nothing here is on the hot path.
//
// Threading: each worker thread's endpoint owns its own context, PD, CQs
// and QPs (a shared context falsely serializes threads); these helpers are
// called by the set-up thread before workers start.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "r2/verbs/descriptors.h"

namespace drtmx::r2::verbs {

struct CloseContext {
  void operator()(ibv_context* c) const { ibv_close_device(c); }
};
struct DeallocPd {
  void operator()(ibv_pd* p) const { ibv_dealloc_pd(p); }
};
struct DestroyCq {
  void operator()(ibv_cq* c) const { ibv_destroy_cq(c); }
};
struct DestroyQp {
  void operator()(ibv_qp* q) const { ibv_destroy_qp(q); }
};
struct DeregMr {
  void operator()(ibv_mr* m) const { ibv_dereg_mr(m); }
};
struct DestroyAh {
  void operator()(ibv_ah* a) const { ibv_destroy_ah(a); }
};
using ContextPtr = std::unique_ptr<ibv_context, CloseContext>;
using PdPtr = std::unique_ptr<ibv_pd, DeallocPd>;
using CqPtr = std::unique_ptr<ibv_cq, DestroyCq>;
using QpPtr = std::unique_ptr<ibv_qp, DestroyQp>;
using MrPtr = std::unique_ptr<ibv_mr, DeregMr>;
using AhPtr = std::unique_ptr<ibv_ah, DestroyAh>;

// What a thread learned about its port.
struct PortInfo {
  std::string device;
  uint8_t port = 1;
  int gid_index = 0;
  uint16_t lid = 0;
  ibv_gid gid{};
  bool ethernet = false;  // RoCE/rxe: addressing needs a GRH with the GID
  ibv_mtu active_mtu = IBV_MTU_1024;
  uint32_t max_msg_sz = 0;
  // Device limits the backend checks its queue sizes against.
  int max_qp_wr = 0;
  int max_cqe = 0;
  int max_qp_rd_atom = 0;
  int max_qp_init_rd_atom = 0;
};

// Names of the devices ibv_get_device_list reports (an error only when
// listing itself fails in a way other than "no devices").
struct DeviceProbe {
  std::vector<std::string> names;
  std::string detail;  // why the list is empty, if it is
};
DeviceProbe probe_devices();

// Opens device `name` (a fresh context on every call).
Result<ContextPtr> open_device(const std::string& name);
// Queries port and device; refuses a port that is not ACTIVE.
Result<PortInfo> query_port(ibv_context* ctx, const std::string& device, uint8_t port,
                            int gid_index);

uint32_t mtu_bytes(ibv_mtu m);

// RC QP in INIT with remote READ/WRITE/ATOMIC access.
Result<QpPtr> create_rc_qp(ibv_pd* pd, ibv_cq* cq, const PortInfo& port, uint32_t depth,
                           uint32_t max_inline);
// INIT -> RTR -> RTS toward `remote_qpn` on the port described by `remote`.
Status connect_rc_qp(ibv_qp* qp, const PortInfo& port, const ThreadDesc& remote,
                     uint32_t remote_qpn);
// UD QP brought to RTS (it needs no peer).
Result<QpPtr> create_ud_qp(ibv_pd* pd, ibv_cq* send_cq, ibv_cq* recv_cq, const PortInfo& port,
                           uint32_t send_depth, uint32_t recv_depth, uint32_t qkey,
                           uint32_t max_inline);
// Address handle toward the port described by `remote`.
Result<AhPtr> create_ah(ibv_pd* pd, const PortInfo& port, const ThreadDesc& remote);

}  // namespace drtmx::r2::verbs
