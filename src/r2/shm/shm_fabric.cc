#include "r2/shm/shm_fabric.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <new>
#include <sstream>

#include "r2/common/file_region.h"
#include "r2/common/growable.h"
#include "r2/control/control.h"
#include "r2/shm/file_map.h"
#include "r2/shm/peer_fence.h"
#include "r2/shm/segment.h"
#include "r2/shm/shm_endpoint.h"

namespace drtmx::r2 {
namespace shm {
namespace {

constexpr uint32_t kMaxOpBytes = 1u << 30;
size_t page_round(size_t n) {
  return (n + 4095) & ~size_t{4095};
}

// A message segment starts with this node's FenceWord and one OpGate per
// thread (whole pages, so the rings stay page aligned); the rings follow.
static_assert(sizeof(FenceWord) % alignof(OpGate) == 0);
size_t fence_bytes(uint16_t threads) {
  return page_round(sizeof(FenceWord) + size_t{threads} * sizeof(OpGate));
}

// What a node tells its peers at connect: one line per segment or file,
//   "msg <bytes>"
//   "region <id> <bytes>"                      a shared-memory segment
//                                              (growable: bytes is its
//                                              virtual size, and its size)
//   "file <id> <bytes> <persistence code> <file offset> <dev> <ino> <path>"
// Segment names follow from the cluster, the node id and the kind, so they
// are not sent; a file region's path is the rest of its line.
struct FileDesc {
  RegionId id = 0;
  uint64_t bytes = 0;
  Persistence mode = Persistence::kNone;
  uint64_t offset = 0;
  FileId file;
  std::string path;
};

struct Descriptor {
  uint64_t msg_bytes = 0;
  int64_t pid = 0;     // the node's process (PeerFence)
  uint64_t pidns = 0;  // its pid namespace (inode of /proc/self/ns/pid)
  std::vector<std::pair<RegionId, uint64_t>> regions;
  std::vector<FileDesc> files;
};

std::string encode(const Descriptor& d) {
  std::ostringstream os;
  os << "msg " << d.msg_bytes << "\n";
  os << "pid " << d.pid << " " << d.pidns << "\n";
  for (auto& [id, bytes] : d.regions) os << "region " << id << " " << bytes << "\n";
  for (const FileDesc& f : d.files) {
    os << "file " << f.id << " " << f.bytes << " " << static_cast<unsigned>(f.mode) << " "
       << f.offset << " " << f.file.dev << " " << f.file.ino << " " << f.path << "\n";
  }
  return os.str();
}

Result<Descriptor> decode(const std::string& blob, NodeId from) {
  Descriptor d;
  std::istringstream lines(blob);
  std::string line;
  auto bad = [&](const std::string& why) {
    return invalid_argument("node " + std::to_string(from) + " sent a malformed shm descriptor (" +
                            why + "); are all nodes running the same drtmx build?");
  };
  while (std::getline(lines, line)) {
    std::istringstream is(line);
    std::string kind;
    if (!(is >> kind)) continue;
    if (kind == "msg") {
      if (!(is >> d.msg_bytes) || d.msg_bytes == 0) return bad("msg size");
    } else if (kind == "pid") {
      if (!(is >> d.pid >> d.pidns) || d.pid < 0) return bad("pid entry");
    } else if (kind == "region") {
      uint64_t id = 0, bytes = 0;
      if (!(is >> id >> bytes) || id > 0xffff || bytes == 0) return bad("region entry");
      d.regions.emplace_back(static_cast<RegionId>(id), bytes);
    } else if (kind == "file") {
      FileDesc f;
      uint64_t id = 0;
      unsigned mode = 0;
      if (!(is >> id >> f.bytes >> mode >> f.offset >> f.file.dev >> f.file.ino) || id > 0xffff ||
          f.bytes == 0 || mode > 0xff ||
          !persistence_from_code(static_cast<uint8_t>(mode), &f.mode) ||
          f.mode == Persistence::kNone || f.offset % 4096 != 0 || is.get() != ' ') {
        return bad("file region entry");
      }
      std::getline(is, f.path);
      if (f.path.empty()) return bad("file region without a path");
      f.id = static_cast<RegionId>(id);
      d.files.push_back(std::move(f));
    } else {
      return bad("unknown entry '" + kind + "'");
    }
  }
  if (d.msg_bytes == 0) return bad("no msg entry");
  return d;
}

class ShmFabric final : public Fabric {
 public:
  explicit ShmFabric(const FabricConfig& cfg) : cfg_(cfg) {
    info_.backend = "shm";
    info_.node = cfg.node;
    info_.num_nodes = cfg.num_nodes;
    info_.threads = cfg.threads;
    info_.atomics_coherent_with_cpu = true;
    info_.writes_are_cpu_stores = true;
    table_.reset(cfg.num_nodes);
  }

  Status init() {
    remove_segments(cfg_.cluster, cfg_.node);  // stale ones of a crashed run
    const size_t rings = static_cast<size_t>(cfg_.threads) * cfg_.num_nodes * cfg_.threads;
    fence_bytes_ = fence_bytes(cfg_.threads);
    msg_bytes_ = fence_bytes_ + page_round(rings * ring_stride(cfg_.ring_bytes));
    auto seg = Segment::create(segment_name(cfg_.cluster, cfg_.node, "msg"), msg_bytes_);
    if (!seg) return seg.status();
    msg_ = std::move(seg.value());
    // Peers map the segment only at connect: nobody reads the word yet.
    new (msg_.data()) FenceWord();
    fence_word(msg_.data())->init(cfg_.num_nodes);
    for (ThreadId t = 0; t < cfg_.threads; ++t) new (gates(msg_.data()) + t) OpGate();
    for (NodeId n = 0; n < cfg_.num_nodes; ++n) live_.set(n);
    for (ThreadId t = 0; t < cfg_.threads; ++t) {
      endpoints_.push_back(std::make_unique<ShmEndpoint>(cfg_, t, &table_, kMaxOpBytes));
    }
    return Status::ok();
  }

  const FabricInfo& info() const override { return info_; }

  Result<Region> register_region(RegionId id, size_t bytes) override {
    DRTMX_RETURN_IF_ERROR(check_new_region(id));
    if (bytes == 0) return invalid_argument("region " + std::to_string(id) + " has size 0");
    // A cluster of one node: no peer ever maps its regions (connect opens
    // only other nodes'), so they need no name in /dev/shm and may have
    // transparent huge pages, which tmpfs gives only when mounted so.
    auto seg =
        cfg_.num_nodes == 1
            ? Segment::create_private(page_round(bytes))
            : Segment::create(segment_name(cfg_.cluster, cfg_.node, "r" + std::to_string(id)),
                              page_round(bytes));
    if (!seg) return seg.status();
    Region r{id, seg->data(), bytes, Persistence::kNone};
    own_.push_back(std::move(seg.value()));
    add_local(r);
    return r;
  }

  Result<Region> register_growable_region(RegionId id, size_t bytes) override {
    DRTMX_RETURN_IF_ERROR(check_new_region(id));
    if (bytes == 0) return invalid_argument("region " + std::to_string(id) + " has size 0");
    GrowableSpec g;
    g.id = id;
    g.node = cfg_.node;
    g.size = bytes;
    Result<Segment> seg = Status(Code::kInternal, "unset");
    if (cfg_.num_nodes == 1) {
      // Nobody maps it but this process (see register_region).
      seg = Segment::reserve_private(page_round(bytes));
      g.where = "this machine's memory";
    } else {
      seg = Segment::create_sparse(segment_name(cfg_.cluster, cfg_.node, "r" + std::to_string(id)),
                                   page_round(bytes), &g.fd);
      g.where = "/dev/shm";
      g.segment = true;
    }
    if (!seg) return seg.status();
    g.base = seg->data();
    Region r{id, seg->data(), bytes, Persistence::kNone};
    own_.push_back(std::move(seg.value()));
    growable_.add(std::move(g));
    add_local(r);
    return r;
  }

  Result<Region> register_file_region(RegionId id, const FileRegion& f) override {
    DRTMX_RETURN_IF_ERROR(check_new_region(id));
    DRTMX_RETURN_IF_ERROR(check_file_region(id, f));
    auto fid = stat_file(f.path);
    if (!fid) return fid.status();
    if (f.growable) {
      auto g = growable_file(id, f);
      if (!g) return g.status();
      growable_.add(std::move(g.value()));
    }
    files_.push_back({id, f.bytes, f.mode, f.file_offset, *fid, f.path});
    Region r{id, f.base, f.bytes, f.mode};
    add_local(r);
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
    // The others would wait for this node at the barrier until they time out.
    if (!st.is_ok()) control.report_failure(st.message());
    return st;
  }

  Status do_connect(ControlClient& control) {
    Descriptor mine;
    mine.msg_bytes = msg_bytes_;
    mine.pid = PeerFence::own_pid();
    mine.pidns = PeerFence::own_pid_namespace();
    for (const Region& r : regions_) {
      if (!r.persistent()) mine.regions.emplace_back(r.id, r.size);
    }
    mine.files = files_;
    auto all = control.exchange("r2.shm.descriptors", encode(mine));
    if (!all) return all.status().with_context("shm connect");
    if (all->size() != cfg_.num_nodes) {
      return internal_error("control plane returned " + std::to_string(all->size()) +
                            " descriptors for " + std::to_string(cfg_.num_nodes) + " nodes");
    }
    std::vector<uint8_t*> msg_bases(cfg_.num_nodes, nullptr);
    std::vector<const FenceWord*> words(cfg_.num_nodes, nullptr);
    for (NodeId n = 0; n < cfg_.num_nodes; ++n) {
      auto d = decode((*all)[n], n);
      if (!d) return d.status();
      if (n == cfg_.node) {
        msg_bases[n] = msg_.data() + fence_bytes_;
        words[n] = fence_word(msg_.data());
        continue;
      }
      auto m = Segment::open(segment_name(cfg_.cluster, n, "msg"), d->msg_bytes);
      if (!m) return m.status();
      msg_bases[n] = m->data() + fence_bytes_;
      words[n] = fence_word(m->data());
      if (cfg_.survive_failures) {
        peer_fence_.add(n, gates(m->data()), cfg_.threads, d->pid, d->pidns);
      }
      peers_.push_back(std::move(m.value()));
      for (auto& [id, bytes] : d->regions) {
        auto s = Segment::open(segment_name(cfg_.cluster, n, "r" + std::to_string(id)),
                               page_round(bytes));
        if (!s) return s.status();
        table_.set(n, id, {reinterpret_cast<uint64_t>(s->data()), bytes, Persistence::kNone});
        peers_.push_back(std::move(s.value()));
      }
      for (const FileDesc& f : d->files) {
        auto m = FileMap::open(f.path, f.offset, f.bytes, f.file, n);
        if (!m) return m.status().with_context("shm connect");
        table_.set(n, f.id, {reinterpret_cast<uint64_t>(m->data()), f.bytes, f.mode});
        peer_files_.push_back(std::move(m.value()));
      }
    }
    for (auto& ep : endpoints_) {
      ep->attach_rings(msg_bases);
      FenceCheck check(cfg_.node, fence_word(msg_.data()), words);
      // Only a cluster that survives failures removes nodes: only there do
      // the doorbells announce their op windows (PeerFence).
      if (cfg_.survive_failures) check.arm(gates(msg_.data()) + ep->thread());
      ep->attach_fence(std::move(check));
    }
    // Nobody may leave (and unlink) before everybody has mapped everything.
    DRTMX_RETURN_IF_ERROR(control.barrier("r2.shm.mapped").with_context("shm connect"));
    connected_ = true;
    return Status::ok();
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

  uint32_t max_op_bytes() const override { return kMaxOpBytes; }

  // Publishes the configuration in this node's FenceWord, which this
  // node's endpoints and every peer's check (see shm_endpoint.h); then
  // waits out, or stops, every removed peer thread that may still be
  // storing into this node's memory (peer_fence.h). The seq_cst fence
  // between the publication and the gates' loads is the survivor's half of
  // the handshake in FenceCheck::enter.
  void apply_membership(uint64_t epoch, const NodeSet& live) override {
    FenceWord* w = fence_word(msg_.data());
    if (epoch <= w->epoch.load(std::memory_order_relaxed)) return;
    w->publish(epoch, live);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!live.test(cfg_.node)) return;  // removed itself: its memory serves nobody now
    std::string report;
    for (NodeId n = 0; n < cfg_.num_nodes; ++n) {
      if (n == cfg_.node || !live_.test(n) || live.test(n)) continue;
      peer_fence_.settle(n, &report);
    }
    live_ = live;
    if (!report.empty()) std::fputs(report.c_str(), stderr);
  }

 private:
  static FenceWord* fence_word(uint8_t* msg_segment) {
    return reinterpret_cast<FenceWord*>(msg_segment);
  }
  static OpGate* gates(uint8_t* msg_segment) {
    return reinterpret_cast<OpGate*>(msg_segment + sizeof(FenceWord));
  }

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

  // The backing of a growable file region: its own descriptor of the file.
  Result<GrowableSpec> growable_file(RegionId id, const FileRegion& f) const {
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
    return g;
  }

  void add_local(const Region& r) {
    regions_.push_back(r);
    table_.set(cfg_.node, r.id, {reinterpret_cast<uint64_t>(r.base), r.size, r.persistence});
    table_.add_local(r.base, r.size);
  }

  FabricConfig cfg_;
  FabricInfo info_;
  RegionTable table_;
  Segment msg_;
  size_t fence_bytes_ = 0;
  size_t msg_bytes_ = 0;
  NodeSet live_;          // the configuration last applied (apply_membership)
  PeerFence peer_fence_;  // survive-failures: the peers' op gates and processes
  std::vector<Segment> own_;
  GrowableSet growable_;  // this node's growable regions (segments and files)
  std::vector<Region> regions_;
  std::vector<Segment> peers_;
  std::vector<FileDesc> files_;      // this node's file regions, for the descriptor
  std::vector<FileMap> peer_files_;  // peers' file regions, mapped here
  std::vector<std::unique_ptr<ShmEndpoint>> endpoints_;
  bool connected_ = false;
};

}  // namespace
}  // namespace shm

Result<std::unique_ptr<Fabric>> make_shm_fabric(const FabricConfig& cfg) {
  DRTMX_RETURN_IF_ERROR(cfg.validate());
  auto f = std::make_unique<shm::ShmFabric>(cfg);
  DRTMX_RETURN_IF_ERROR(f->init());
  return std::unique_ptr<Fabric>(std::move(f));
}

int remove_shm_segments(const std::string& cluster) {
  return shm::remove_segments(cluster, -1);
}

}  // namespace drtmx::r2
