#include "r2/verbs/verbs_device.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace drtmx::r2::verbs {

namespace {

struct FreeDeviceList {
  void operator()(ibv_device** l) const { ibv_free_device_list(l); }
};
using DeviceListPtr = std::unique_ptr<ibv_device*, FreeDeviceList>;

std::string errno_text(int err) {
  return err ? std::strerror(err) : "unknown error";
}

Status verbs_error(const std::string& what, const std::string& device, int err) {
  return unavailable("verbs: " + what + " on device " + device + " failed: " + errno_text(err) +
                     " (check `ibv_devinfo`, memlock limits `ulimit -l`, or use --fabric=shm)");
}

ibv_ah_attr make_ah_attr(const PortInfo& port, const ThreadDesc& remote) {
  ibv_ah_attr ah{};
  ah.dlid = remote.lid;
  ah.sl = 0;
  ah.src_path_bits = 0;
  ah.port_num = port.port;
  if (port.ethernet) {
    ah.is_global = 1;
    std::memcpy(ah.grh.dgid.raw, remote.gid.data(), 16);
    ah.grh.sgid_index = static_cast<uint8_t>(port.gid_index);
    ah.grh.hop_limit = 64;
  }
  return ah;
}

}  // namespace

DeviceProbe probe_devices() {
  DeviceProbe p;
  int n = 0;
  errno = 0;
  DeviceListPtr list(ibv_get_device_list(&n));
  if (!list) {
    p.detail = "ibv_get_device_list failed: " + errno_text(errno) +
               "; the kernel has no RDMA support loaded";
    return p;
  }
  for (int i = 0; i < n && list.get()[i] != nullptr; ++i) {
    p.names.emplace_back(ibv_get_device_name(list.get()[i]));
  }
  if (p.names.empty()) p.detail = "ibv_get_device_list returned no devices";
  return p;
}

Result<ContextPtr> open_device(const std::string& name) {
  int n = 0;
  DeviceListPtr list(ibv_get_device_list(&n));
  if (!list) return unavailable("verbs: cannot list RDMA devices to open " + name);
  for (int i = 0; i < n && list.get()[i] != nullptr; ++i) {
    if (name != ibv_get_device_name(list.get()[i])) continue;
    errno = 0;
    ContextPtr ctx(ibv_open_device(list.get()[i]));
    if (!ctx) return verbs_error("ibv_open_device", name, errno);
    return ctx;
  }
  return not_found("verbs: RDMA device " + name + " disappeared while opening it");
}

uint32_t mtu_bytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 256;
}

Result<PortInfo> query_port(ibv_context* ctx, const std::string& device, uint8_t port,
                            int gid_index) {
  PortInfo info;
  info.device = device;
  info.port = port;
  info.gid_index = gid_index;
  ibv_device_attr dev{};
  if (int rc = ibv_query_device(ctx, &dev); rc != 0) {
    return verbs_error("ibv_query_device", device, rc);
  }
  if (port < 1 || port > dev.phys_port_cnt) {
    return invalid_argument("verbs: device " + device + " has ports 1.." +
                            std::to_string(dev.phys_port_cnt) + ", not port " +
                            std::to_string(port));
  }
  ibv_port_attr pa{};
  if (int rc = ibv_query_port(ctx, port, &pa); rc != 0) {
    return verbs_error("ibv_query_port", device, rc);
  }
  if (pa.state != IBV_PORT_ACTIVE) {
    return unavailable("verbs: port " + std::to_string(port) + " of device " + device +
                       " is not ACTIVE (state " + ibv_port_state_str(pa.state) +
                       "); bring the link up (for rxe: `ip link set IFACE up`) or use "
                       "--fabric=shm");
  }
  if (gid_index < 0 || gid_index >= pa.gid_tbl_len) {
    return invalid_argument("verbs: GID index " + std::to_string(gid_index) + " is outside the " +
                            std::to_string(pa.gid_tbl_len) + " GIDs of " + device + " port " +
                            std::to_string(port));
  }
  if (int rc = ibv_query_gid(ctx, port, gid_index, &info.gid); rc != 0) {
    return verbs_error("ibv_query_gid", device, rc);
  }
  info.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
  if (info.ethernet) {
    bool zero = true;
    for (uint8_t b : info.gid.raw) zero = zero && b == 0;
    if (zero) {
      return invalid_argument("verbs: GID index " + std::to_string(gid_index) + " of " + device +
                              " is empty; RoCE needs a GID bound to an IP address (list them "
                              "with `ibv_devinfo -v`; RoCE v2 entries usually sit at index 1 "
                              "or 3)");
    }
  }
  info.lid = pa.lid;
  info.active_mtu = pa.active_mtu;
  info.max_msg_sz = pa.max_msg_sz;
  info.max_qp_wr = dev.max_qp_wr;
  info.max_cqe = dev.max_cqe;
  info.max_qp_rd_atom = dev.max_qp_rd_atom;
  info.max_qp_init_rd_atom = dev.max_qp_init_rd_atom;
  return info;
}

Result<QpPtr> create_rc_qp(ibv_pd* pd, ibv_cq* cq, const PortInfo& port, uint32_t depth,
                           uint32_t max_inline) {
  ibv_qp_init_attr ia{};
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.sq_sig_all = 0;
  ia.cap.max_send_wr = depth;
  ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = max_inline;
  errno = 0;
  QpPtr qp(ibv_create_qp(pd, &ia));
  if (!qp)
    return verbs_error("ibv_create_qp(RC, depth " + std::to_string(depth) + ")", port.device,
                       errno);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = port.port;
  a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
  if (int rc = ibv_modify_qp(qp.get(), &a,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      rc != 0) {
    return verbs_error("ibv_modify_qp(RC -> INIT)", port.device, rc);
  }
  return qp;
}

Status connect_rc_qp(ibv_qp* qp, const PortInfo& port, const ThreadDesc& remote,
                     uint32_t remote_qpn) {
  const int rd_atom = std::max(1, std::min({16, port.max_qp_rd_atom, port.max_qp_init_rd_atom}));
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = std::min(port.active_mtu, static_cast<ibv_mtu>(remote.active_mtu));
  a.dest_qp_num = remote_qpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = static_cast<uint8_t>(rd_atom);
  a.min_rnr_timer = 12;
  a.ah_attr = make_ah_attr(port, remote);
  if (int rc = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
      rc != 0) {
    return verbs_error("ibv_modify_qp(RC -> RTR toward QPN " + std::to_string(remote_qpn) + ")",
                       port.device, rc);
  }
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = 0;
  a.max_rd_atomic = static_cast<uint8_t>(rd_atom);
  if (int rc = ibv_modify_qp(qp, &a,
                             IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
      rc != 0) {
    return verbs_error("ibv_modify_qp(RC -> RTS)", port.device, rc);
  }
  return Status::ok();
}

Result<QpPtr> create_ud_qp(ibv_pd* pd, ibv_cq* send_cq, ibv_cq* recv_cq, const PortInfo& port,
                           uint32_t send_depth, uint32_t recv_depth, uint32_t qkey,
                           uint32_t max_inline) {
  ibv_qp_init_attr ia{};
  ia.send_cq = send_cq;
  ia.recv_cq = recv_cq;
  ia.qp_type = IBV_QPT_UD;
  ia.sq_sig_all = 0;
  ia.cap.max_send_wr = send_depth;
  ia.cap.max_recv_wr = recv_depth;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = max_inline;
  errno = 0;
  QpPtr qp(ibv_create_qp(pd, &ia));
  if (!qp) {
    return verbs_error("ibv_create_qp(UD, " + std::to_string(recv_depth) + " receives)",
                       port.device, errno);
  }
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = port.port;
  a.qkey = qkey;
  if (int rc =
          ibv_modify_qp(qp.get(), &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
      rc != 0) {
    return verbs_error("ibv_modify_qp(UD -> INIT)", port.device, rc);
  }
  a = {};
  a.qp_state = IBV_QPS_RTR;
  if (int rc = ibv_modify_qp(qp.get(), &a, IBV_QP_STATE); rc != 0) {
    return verbs_error("ibv_modify_qp(UD -> RTR)", port.device, rc);
  }
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (int rc = ibv_modify_qp(qp.get(), &a, IBV_QP_STATE | IBV_QP_SQ_PSN); rc != 0) {
    return verbs_error("ibv_modify_qp(UD -> RTS)", port.device, rc);
  }
  return qp;
}

Result<AhPtr> create_ah(ibv_pd* pd, const PortInfo& port, const ThreadDesc& remote) {
  ibv_ah_attr attr = make_ah_attr(port, remote);
  errno = 0;
  AhPtr ah(ibv_create_ah(pd, &attr));
  if (!ah) return verbs_error("ibv_create_ah", port.device, errno);
  return ah;
}

}  // namespace drtmx::r2::verbs
