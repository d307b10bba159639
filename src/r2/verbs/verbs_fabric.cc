// VerbsFabric: one node on an RDMA device. See verbs_fabric.h, README.md.
#include "r2/verbs/verbs_fabric.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "r2/common/file_region.h"
#include "r2/common/growable.h"
#include "r2/control/control.h"
#include "r2/verbs/credits.h"
#include "r2/verbs/descriptors.h"
#include "r2/verbs/device_select.h"
#include "r2/verbs/verbs_endpoint.h"

namespace drtmx::r2 {

namespace {

using namespace verbs;

// Largest READ/WRITE this backend accepts, whatever the port allows.
constexpr uint32_t kMaxOpBytes = 1u << 30;

// Zeroed, page-aligned memory for one region (anonymous mapping).
class RegionMemory {
 public:
  RegionMemory(uint8_t* p, size_t n) : p_(p), n_(n) {}
  RegionMemory(RegionMemory&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; }
  RegionMemory& operator=(RegionMemory&&) = delete;
  ~RegionMemory() {
    if (p_) munmap(p_, n_);
  }

 private:
  uint8_t* p_;
  size_t n_;
};

class VerbsFabric final : public Fabric {
 public:
  explicit VerbsFabric(const FabricConfig& cfg) : cfg_(cfg) {
    info_.backend = "verbs";
    info_.node = cfg.node;
    info_.num_nodes = cfg.num_nodes;
    info_.threads = cfg.threads;
    info_.atomics_coherent_with_cpu = false;
    tables_.regions.reset(cfg.num_nodes);
    tables_.rkeys.reset(cfg.num_nodes, cfg.threads);
    fence_word_.init(cfg.num_nodes);
  }

  Status open(const std::string& device, const CreditPlan& plan) {
    for (ThreadId t = 0; t < cfg_.threads; ++t) {
      auto ep = VerbsEndpoint::open(t, device, cfg_, plan, &tables_);
      if (!ep.is_ok()) return ep.status();
      endpoints_.push_back(std::move(ep).value());
    }
    const PortInfo& port = endpoints_[0]->port();
    max_op_bytes_ =
        std::min<uint64_t>(port.max_msg_sz ? port.max_msg_sz : kMaxOpBytes, kMaxOpBytes);
    tables_.max_op_bytes = max_op_bytes_;
    return Status::ok();
  }

  const FabricInfo& info() const override { return info_; }

  Result<Region> register_region(RegionId id, size_t bytes) override {
    DRTMX_RETURN_IF_ERROR(check_new_region(id));
    if (bytes == 0) return invalid_argument("register_region(" + std::to_string(id) + "): 0 bytes");
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return io_error("mmap of region " + std::to_string(id), errno);
    auto* base = static_cast<uint8_t*>(p);
    memory_.emplace_back(base, bytes);
    return add_region({id, base, bytes, Persistence::kNone});
  }

  // Address space only (MAP_NORESERVE), registered with on-demand paging:
  // pinning it, as ibv_reg_mr does without ODP, would allocate all of it.
  // commit() populates a range and prefetches it into every thread's MR.
  // NOT TESTED on hardware (no RDMA device here); see README.md.
  Result<Region> register_growable_region(RegionId id, size_t bytes) override {
    DRTMX_RETURN_IF_ERROR(check_new_region(id));
    if (bytes == 0)
      return invalid_argument("register_growable_region(" + std::to_string(id) + "): 0 bytes");
    DRTMX_RETURN_IF_ERROR(
        endpoints_[0]->odp_support().with_context("growable region " + std::to_string(id)));
    const size_t len = (bytes + 4095) & ~size_t{4095};
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
      return io_error("mmap (MAP_NORESERVE) of growable region " + std::to_string(id), errno);
    auto* base = static_cast<uint8_t*>(p);
    memory_.emplace_back(base, len);
    auto r = add_region({id, base, bytes, Persistence::kNone}, true);
    if (!r) return r;
    GrowableSpec g;
    g.id = id;
    g.node = cfg_.node;
    g.base = base;
    g.size = bytes;
    g.where = "this machine's memory";
    add_growable(std::move(g));
    return r;
  }

  // The caller's file mapping: registered as it is (the RNIC writes into
  // the file's pages; durability by the flushing READ, see fabric.h). A
  // growable one (a sparse pool) with on-demand paging, as above.
  Result<Region> register_file_region(RegionId id, const FileRegion& f) override {
    DRTMX_RETURN_IF_ERROR(check_new_region(id));
    DRTMX_RETURN_IF_ERROR(check_file_region(id, f));
    if (!f.growable) return add_region({id, f.base, f.bytes, f.mode});
    if (f.bytes % 4096 != 0) {
      return invalid_argument("growable file region " + std::to_string(id) + " (" + f.path +
                              ") has " + std::to_string(f.bytes) +
                              " bytes, not a multiple of the page size (4096)");
    }
    DRTMX_RETURN_IF_ERROR(
        endpoints_[0]->odp_support().with_context("growable file region " + std::to_string(id)));
    GrowableSpec g;
    g.id = id;
    g.node = cfg_.node;
    g.base = f.base;
    g.size = f.bytes;
    g.file_offset = f.file_offset;
    g.populate = f.mode != Persistence::kMsync;
    g.where = f.path;
    g.fd = ::open(f.path.c_str(), O_RDWR | O_CLOEXEC);
    if (g.fd < 0) return io_error("open of growable file region " + f.path, errno);
    auto r = add_region({id, f.base, f.bytes, f.mode}, true);
    if (!r) {
      ::close(g.fd);
      return r;
    }
    add_growable(std::move(g));
    return r;
  }

  Status commit(RegionId id, uint64_t offset, uint64_t bytes) override {
    return growable_.commit(id, region(id), cfg_.node, offset, bytes);
  }

  uint64_t committed_bytes(RegionId id) const override {
    return growable_.committed_bytes(id, region(id));
  }

  Status connect(ControlClient& control) override {
    if (connected_) return invalid_argument("connect() called twice");
    Status st = do_connect(control);
    if (!st.is_ok()) control.report_failure(st.message());
    return st;
  }

  Endpoint* endpoint(ThreadId t) override {
    return t < endpoints_.size() ? endpoints_[t].get() : nullptr;
  }

  const Region* region(RegionId id) const override {
    for (const Region& r : regions_) {
      if (r.id == id) return &r;
    }
    return nullptr;
  }

  size_t remote_region_size(NodeId node, RegionId id) const override {
    const RegionEntry* e = tables_.regions.find(node, id);
    return e ? e->size : 0;
  }

  Persistence region_persistence(NodeId node, RegionId id) const override {
    const RegionEntry* e = tables_.regions.find(node, id);
    return e ? e->persistence : Persistence::kNone;
  }

  uint32_t max_op_bytes() const override { return max_op_bytes_; }

  // This node's view goes to its FenceWord (its endpoints check it before
  // posting); the peers that left get their QPs moved to the error state,
  // which is what fences their one-sided ops on this node's memory.
  void apply_membership(uint64_t epoch, const NodeSet& live) override {
    if (epoch <= fence_word_.epoch.load(std::memory_order_relaxed)) return;
    fence_word_.publish(epoch, live);
    if (!connected_) return;
    for (auto& ep : endpoints_) ep->fence_qps(live.test(cfg_.node) ? live : NodeSet());
  }

 private:
  Status check_new_region(RegionId id) const {
    if (connected_) {
      return invalid_argument("register_region(" + std::to_string(id) +
                              "): regions must be registered before connect()");
    }
    for (const Region& r : regions_) {
      if (r.id == id)
        return already_exists("region " + std::to_string(id) + " is registered twice");
    }
    return Status::ok();
  }

  // A growable region's backing; commit() prefetches what it backed into
  // every thread's MR (ODP), so the RNIC's first access is not a fault.
  void add_growable(GrowableSpec g) {
    Growable* grown = growable_.add(std::move(g));
    grown->after_backing = [this](uint8_t* p, uint64_t n) {
      for (auto& ep : endpoints_) ep->prefetch(p, n);
    };
  }

  // Registers `r`'s memory in every thread's PD (on_demand: ODP).
  Result<Region> add_region(const Region& r, bool on_demand = false) {
    std::vector<uint32_t> rkeys;
    for (auto& ep : endpoints_) {
      auto rkey = ep->register_region(r.base, r.size, on_demand);
      if (!rkey.is_ok()) return rkey.status().with_context("region " + std::to_string(r.id));
      rkeys.push_back(*rkey);
    }
    regions_.push_back(r);
    region_rkeys_.push_back(std::move(rkeys));
    tables_.regions.add_local(r.base, r.size);
    tables_.regions.set(cfg_.node, r.id,
                        {reinterpret_cast<uint64_t>(r.base), r.size, r.persistence});
    return r;
  }

  NodeDesc describe() const {
    NodeDesc d;
    d.node = cfg_.node;
    d.num_nodes = cfg_.num_nodes;
    d.threads = cfg_.threads;
    d.msg_mtu = endpoints_[0]->local_msg_mtu();
    d.max_op_bytes = max_op_bytes_;
    d.recv_buffers = cfg_.recv_buffers;
    for (size_t i = 0; i < regions_.size(); ++i) {
      d.regions.push_back({regions_[i].id, reinterpret_cast<uint64_t>(regions_[i].base),
                           regions_[i].size, region_rkeys_[i], regions_[i].persistence});
    }
    for (const auto& ep : endpoints_) d.thread_descs.push_back(ep->describe());
    return d;
  }

  Status do_connect(ControlClient& control) {
    if (control.num_nodes() != cfg_.num_nodes || control.node() != cfg_.node) {
      return invalid_argument("verbs connect: the control client is node " +
                              std::to_string(control.node()) + " of " +
                              std::to_string(control.num_nodes()) + ", the fabric node " +
                              std::to_string(cfg_.node) + " of " + std::to_string(cfg_.num_nodes));
    }
    auto blobs = control.exchange("verbs.descriptors", serialize_node_desc(describe()));
    if (!blobs.is_ok()) return blobs.status().with_context("exchanging verbs descriptors");
    if (blobs->size() != cfg_.num_nodes) {
      return internal_error("verbs connect: exchange returned " + std::to_string(blobs->size()) +
                            " descriptors for " + std::to_string(cfg_.num_nodes) + " nodes");
    }
    std::vector<NodeDesc> nodes;
    uint32_t msg_mtu = endpoints_[0]->local_msg_mtu();
    for (NodeId n = 0; n < cfg_.num_nodes; ++n) {
      auto d = parse_node_desc((*blobs)[n], n, cfg_.num_nodes, cfg_.threads);
      if (!d.is_ok()) return d.status();
      if (d->recv_buffers != cfg_.recv_buffers) {
        return invalid_argument("verbs connect: node " + std::to_string(n) + " posts " +
                                std::to_string(d->recv_buffers) +
                                " receive buffers per thread, this node " +
                                std::to_string(cfg_.recv_buffers) +
                                "; messaging credits need the same number on every node");
      }
      msg_mtu = std::min(msg_mtu, d->msg_mtu);
      max_op_bytes_ = std::min(max_op_bytes_, d->max_op_bytes);
      for (const RegionDesc& r : d->regions) {
        if (n != cfg_.node) tables_.regions.set(n, r.id, {r.base, r.size, r.persistence});
        for (ThreadId t = 0; t < cfg_.threads; ++t) tables_.rkeys.set(n, r.id, t, r.rkeys[t]);
      }
      nodes.push_back(std::move(d).value());
    }
    tables_.max_op_bytes = max_op_bytes_;
    for (auto& ep : endpoints_) {
      ep->attach_fence(
          FenceCheck(cfg_.node, &fence_word_, std::vector<const FenceWord*>(cfg_.num_nodes)));
      Status st = ep->connect(nodes, msg_mtu);
      if (!st.is_ok()) return st.with_context("thread " + std::to_string(ep->thread()));
    }
    // Nobody may send before every node's QPs are in RTR and its receive
    // buffers are posted.
    DRTMX_RETURN_IF_ERROR(control.barrier("verbs.connected"));
    connected_ = true;
    return Status::ok();
  }

  FabricConfig cfg_;
  FabricInfo info_;
  // Declaration order matters: endpoints (their MRs) go before the memory.
  std::vector<RegionMemory> memory_;
  std::vector<Region> regions_;
  std::vector<std::vector<uint32_t>> region_rkeys_;  // [region index][thread]
  SharedTables tables_;
  std::vector<std::unique_ptr<VerbsEndpoint>> endpoints_;
  GrowableSet growable_;  // after endpoints_: its hooks call them
  uint32_t max_op_bytes_ = kMaxOpBytes;
  bool connected_ = false;
  FenceWord fence_word_;  // this node's view (endpoints check it)
};

}  // namespace

Result<std::unique_ptr<Fabric>> make_verbs_fabric(const FabricConfig& cfg) {
  DRTMX_RETURN_IF_ERROR(cfg.validate());
  DeviceProbe probe = probe_devices();
  if (probe.names.empty()) {
    return no_device_error(cfg.device.empty()
                               ? probe.detail
                               : "--device=" + cfg.device + " requested; " + probe.detail);
  }
  auto idx = choose_device(probe.names, cfg.device);
  if (!idx.is_ok()) return idx.status();
  auto plan = plan_credits(cfg.recv_buffers, cfg.num_nodes, cfg.threads);
  if (!plan.is_ok()) return plan.status();
  auto fabric = std::make_unique<VerbsFabric>(cfg);
  Status st = fabric->open(probe.names[*idx], *plan);
  if (!st.is_ok()) return st;
  return std::unique_ptr<Fabric>(std::move(fabric));
}

}  // namespace drtmx::r2
