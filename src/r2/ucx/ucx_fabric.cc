// UcxFabric: one node on UCX. See ucx_fabric.h, README.md.
#include "r2/ucx/ucx_fabric.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "base/resident.h"
#include "r2/common/file_region.h"
#include "r2/common/growable.h"
#include "r2/control/control.h"
#include "r2/ucx/descriptors.h"
#include "r2/ucx/ucx_endpoint.h"

namespace drtmx::r2 {
namespace {

using namespace ucx;

constexpr uint32_t kMaxOpBytes = 1u << 30;

size_t page_round(size_t n) {
  return (n + 4095) & ~size_t{4095};
}

// A UCP context, cleaned up last.
class Context {
 public:
  ~Context() {
    if (ctx_ != nullptr) ucp_cleanup(ctx_);
  }
  ucp_context_h get() const { return ctx_; }
  Status init(const FabricConfig& cfg) {
    ucp_config_t* config = nullptr;
    if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
      return unavailable(std::string("ucp_config_read: ") + ucs_status_string(s) +
                         " (check the UCX_* environment variables)");
    }
    ucp_params_t p{};
    p.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                   UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    // WAKEUP: an idle worker blocks on its event descriptor (wait_idle).
    p.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    p.mt_workers_shared = 0;  // each worker is one thread's
    p.estimated_num_eps = size_t{cfg.num_nodes} * cfg.threads;
    ucs_status_t s = ucp_init(&p, config, &ctx_);
    ucp_config_release(config);
    if (s != UCS_OK) {
      ctx_ = nullptr;
      return unavailable(std::string("ucp_init: ") + ucs_status_string(s) +
                         " (no usable UCX transport? see `ucx_info -d`; UCX_TLS narrows the "
                         "choice, e.g. UCX_TLS=tcp)");
    }
    return Status::ok();
  }

 private:
  ucp_context_h ctx_ = nullptr;
};

// A ucp_mem_map'd range and its packed rkey.
struct Mapping {
  ucp_mem_h memh = nullptr;
  std::string rkey;
};

// Anonymous memory this fabric mapped (regions, reservations).
struct Anon {
  uint8_t* p = nullptr;
  size_t n = 0;
};

class UcxFabric final : public Fabric {
 public:
  explicit UcxFabric(const FabricConfig& cfg) : cfg_(cfg) {
    info_.backend = "ucx";
    info_.node = cfg.node;
    info_.num_nodes = cfg.num_nodes;
    info_.threads = cfg.threads;
    // Atomics may be a NIC's or emulated by the target's worker: not
    // coherent with the CPU's in general (as verbs).
    info_.atomics_coherent_with_cpu = false;
    table_.reset(cfg.num_nodes);
    fence_word_.init(cfg.num_nodes);
  }

  ~UcxFabric() override {
    for (auto& ep : endpoints_) ep->close();
    for (auto& [id, m] : maps_) ucp_mem_unmap(ctx_.get(), m.memh);
    for (const Anon& a : anon_) munmap(a.p, a.n);
  }

  Status init() {
    DRTMX_RETURN_IF_ERROR(ctx_.init(cfg_));
    for (ThreadId t = 0; t < cfg_.threads; ++t) {
      auto ep = UcxEndpoint::open(ctx_.get(), cfg_, t, &table_);
      if (!ep) return ep.status();
      endpoints_.push_back(std::move(ep).value());
    }
    return Status::ok();
  }

  const FabricInfo& info() const override { return info_; }

  Result<Region> register_region(RegionId id, size_t bytes) override {
    DRTMX_RETURN_IF_ERROR(check_new_region(id));
    if (bytes == 0) return invalid_argument("region " + std::to_string(id) + " has size 0");
    const size_t len = page_round(bytes);
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return io_error("mmap of region " + std::to_string(id), errno);
    auto* base = static_cast<uint8_t*>(p);
    anon_.push_back({base, len});
    // Resident from the start, as ibv_reg_mr pins a region (and shm maps it).
    if (Status st = make_resident(base, len, "region " + std::to_string(id)); !st.is_ok()) {
      return st;
    }
    return add_region({id, base, bytes, Persistence::kNone}, false);
  }

  // Address space only (MAP_NORESERVE), mapped into UCX whole with
  // UCP_MEM_MAP_NONBLOCK (no pinning): see README.md, "Growable regions".
  Result<Region> register_growable_region(RegionId id, size_t bytes) override {
    DRTMX_RETURN_IF_ERROR(check_new_region(id));
    if (bytes == 0) return invalid_argument("region " + std::to_string(id) + " has size 0");
    const size_t len = page_round(bytes);
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      return errno == ENOMEM
                 ? exhausted("reserving " + human_bytes(len) +
                             " of address space for growable region " + std::to_string(id) +
                             " failed (ENOMEM)")
                 : io_error("mmap (MAP_NORESERVE) of growable region " + std::to_string(id), errno);
    }
    auto* base = static_cast<uint8_t*>(p);
    anon_.push_back({base, len});
    auto r = add_region({id, base, bytes, Persistence::kNone}, true);
    if (!r) return r;
    GrowableSpec g;
    g.id = id;
    g.node = cfg_.node;
    g.base = base;
    g.size = bytes;
    g.where = "this machine's memory";
    growable_.add(std::move(g));
    return r;
  }

  Result<Region> register_file_region(RegionId id, const FileRegion& f) override {
    DRTMX_RETURN_IF_ERROR(check_new_region(id));
    DRTMX_RETURN_IF_ERROR(check_file_region(id, f));
    if (!f.growable) return add_region({id, f.base, f.bytes, f.mode}, false);
    if (f.bytes % 4096 != 0) {
      return invalid_argument("growable file region " + std::to_string(id) + " (" + f.path +
                              ") has " + std::to_string(f.bytes) +
                              " bytes, not a multiple of the page size (4096)");
    }
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
    growable_.add(std::move(g));
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
    const RegionEntry* e = table_.find(node, id);
    return e ? e->size : 0;
  }

  Persistence region_persistence(NodeId node, RegionId id) const override {
    const RegionEntry* e = table_.find(node, id);
    return e ? e->persistence : Persistence::kNone;
  }

  uint32_t max_op_bytes() const override { return max_op_bytes_; }

  // The new view goes to the FenceWord the endpoints check; each worker
  // applies it at its next loop turn, before it progresses UCX again:
  // ops and sends to removed nodes are refused, their messages dropped
  // (endpoints stay open: ucx_endpoint.h).
  void apply_membership(uint64_t epoch, const NodeSet& live) override {
    if (epoch <= fence_word_.epoch.load(std::memory_order_relaxed)) return;
    fence_word_.publish(epoch, live);
  }

 private:
  Status check_new_region(RegionId id) const {
    if (connected_) {
      return invalid_argument("region " + std::to_string(id) +
                              " registered after connect(); register every region first");
    }
    if (region(id) != nullptr) {
      return already_exists("region " + std::to_string(id) + " is already registered");
    }
    return Status::ok();
  }

  Result<Region> add_region(const Region& r, bool on_demand) {
    ucp_mem_map_params_t mp{};
    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    mp.address = r.base;
    mp.length = page_round(r.size);
    // A growable region's range is mostly unbacked address space: no
    // pinning (on-demand paging where the transport has it).
    mp.flags = on_demand ? UCP_MEM_MAP_NONBLOCK : 0;
    Mapping m;
    if (ucs_status_t s = ucp_mem_map(ctx_.get(), &mp, &m.memh); s != UCS_OK) {
      return unavailable("ucp_mem_map of region " + std::to_string(r.id) + " (" +
                         human_bytes(mp.length) + "): " + ucs_status_string(s));
    }
    void* buf = nullptr;
    size_t len = 0;
    if (ucs_status_t s = ucp_rkey_pack(ctx_.get(), m.memh, &buf, &len); s != UCS_OK) {
      ucp_mem_unmap(ctx_.get(), m.memh);
      return unavailable("ucp_rkey_pack of region " + std::to_string(r.id) + ": " +
                         ucs_status_string(s));
    }
    m.rkey.assign(static_cast<const char*>(buf), len);
    ucp_rkey_buffer_release(buf);
    maps_.emplace_back(r.id, std::move(m));
    regions_.push_back(r);
    table_.set(cfg_.node, r.id, {reinterpret_cast<uint64_t>(r.base), r.size, r.persistence});
    table_.add_local(r.base, r.size);
    return r;
  }

  Status do_connect(ControlClient& control) {
    if (control.num_nodes() != cfg_.num_nodes || control.node() != cfg_.node) {
      return invalid_argument("ucx connect: the control client is node " +
                              std::to_string(control.node()) + " of " +
                              std::to_string(control.num_nodes()) + ", the fabric node " +
                              std::to_string(cfg_.node) + " of " + std::to_string(cfg_.num_nodes));
    }
    NodeDesc mine;
    mine.node = cfg_.node;
    mine.num_nodes = cfg_.num_nodes;
    mine.threads = cfg_.threads;
    mine.max_op_bytes = kMaxOpBytes;
    for (const auto& ep : endpoints_) mine.workers.push_back(ep->address());
    for (size_t i = 0; i < regions_.size(); ++i) {
      const Region& r = regions_[i];
      mine.regions.push_back(
          {r.id, reinterpret_cast<uint64_t>(r.base), r.size, r.persistence, maps_[i].second.rkey});
    }
    auto blobs = control.exchange("ucx.descriptors", serialize_node_desc(mine));
    if (!blobs) return blobs.status().with_context("exchanging ucx descriptors");
    if (blobs->size() != cfg_.num_nodes) {
      return internal_error("ucx connect: exchange returned " + std::to_string(blobs->size()) +
                            " descriptors for " + std::to_string(cfg_.num_nodes) + " nodes");
    }
    std::vector<NodeDesc> nodes;
    for (NodeId n = 0; n < cfg_.num_nodes; ++n) {
      auto d = parse_node_desc((*blobs)[n], n, cfg_.num_nodes, cfg_.threads);
      if (!d) return d.status();
      max_op_bytes_ = std::min(max_op_bytes_, d->max_op_bytes);
      if (n != cfg_.node) {
        for (const RegionDesc& r : d->regions) {
          table_.set(n, r.id, {r.base, r.size, r.persistence});
        }
      }
      nodes.push_back(std::move(d).value());
    }
    for (auto& ep : endpoints_) {
      ep->attach_fence(
          FenceCheck(cfg_.node, &fence_word_, std::vector<const FenceWord*>(cfg_.num_nodes)));
      Status st = ep->connect(nodes, max_op_bytes_);
      if (!st.is_ok()) return st.with_context("thread " + std::to_string(ep->thread()));
    }
    for (NodeId n = 0; n < cfg_.num_nodes; ++n) {
      const LaneInfo& l = endpoints_[0]->lanes(n);
      info_.peer_transports.push_back(
          l.summary() + (l.single_lane && !cfg_.ucx_strict_order ? "" : " (strict order)"));
    }
    DRTMX_RETURN_IF_ERROR(control.barrier("ucx.connected").with_context("ucx connect"));
    connected_ = true;
    return Status::ok();
  }

  FabricConfig cfg_;
  FabricInfo info_;
  // Destruction order: endpoints (their workers) close in the destructor
  // body before the mappings go; the context is cleaned up last.
  Context ctx_;
  std::vector<Anon> anon_;
  std::vector<std::pair<RegionId, Mapping>> maps_;  // parallel to regions_
  std::vector<Region> regions_;
  RegionTable table_;
  std::vector<std::unique_ptr<UcxEndpoint>> endpoints_;
  GrowableSet growable_;
  uint32_t max_op_bytes_ = kMaxOpBytes;
  bool connected_ = false;
  FenceWord fence_word_;
};

}  // namespace

Result<std::unique_ptr<Fabric>> make_ucx_fabric(const FabricConfig& cfg) {
  DRTMX_RETURN_IF_ERROR(cfg.validate());
  auto f = std::make_unique<UcxFabric>(cfg);
  DRTMX_RETURN_IF_ERROR(f->init());
  return std::unique_ptr<Fabric>(std::move(f));
}

}  // namespace drtmx::r2
