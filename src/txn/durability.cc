#include "txn/durability.h"

#include <libpmem.h>

#include <algorithm>
#include <cstring>

namespace drtmx::txn {
namespace {

constexpr uint64_t kStateMagic = 0x6472746d78535431ull;   // "drtmxST1"
constexpr uint32_t kStateRegion = 0xffff;                 // the state pool's identity region
constexpr uint64_t kPoolCluster = 0x6472746d78444231ull;  // pools of a drtmx database

uint64_t page_round(uint64_t n) {
  return (n + 4095) & ~uint64_t{4095};
}

// Pages flushed since this thread's last drain (msync mode).
thread_local std::vector<std::pair<uintptr_t, uintptr_t>> dirty_pages;

}  // namespace

PersistOps persist_ops_for(r2::Persistence mode) {
  PersistOps ops;
  if (mode == r2::Persistence::kMsync) {
    ops.flush = [](const void* p, size_t n) {
      const auto a = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{4095};
      const auto b = (reinterpret_cast<uintptr_t>(p) + n + 4095) & ~uintptr_t{4095};
      if (!dirty_pages.empty() && dirty_pages.back().second >= a && dirty_pages.back().first <= b) {
        dirty_pages.back().first = std::min(dirty_pages.back().first, a);
        dirty_pages.back().second = std::max(dirty_pages.back().second, b);
        return;
      }
      dirty_pages.emplace_back(a, b);
    };
    ops.drain = [] {
      for (const auto& [a, b] : dirty_pages) {
        (void)pmem_msync(reinterpret_cast<void*>(a), b - a);
      }
      dirty_pages.clear();
    };
    return ops;
  }
  ops.flush = [](const void* p, size_t n) { pmem_flush(p, n); };
  ops.drain = [] { pmem_drain(); };
  return ops;
}

std::string NodePools::region_path(const std::string& dir, uint16_t node, r2::RegionId region) {
  return dir + "/node" + std::to_string(node) + ".region" + std::to_string(region) + ".pool";
}

std::string NodePools::state_path(const std::string& dir, uint16_t node) {
  return dir + "/node" + std::to_string(node) + ".state.pool";
}

Result<std::unique_ptr<NodePools>> NodePools::open(
    const DurabilityConfig& cfg, uint16_t node,
    const std::vector<std::pair<r2::RegionId, size_t>>& regions, uint64_t layout,
    const std::vector<r2::RegionId>& growable) {
  if (cfg.dir.empty()) {
    return invalid_argument(
        "--durability=pmem needs --pmem-dir=DIR (a directory on persistent "
        "memory, or any file system: /dev/shm, a disk)");
  }
  std::unique_ptr<NodePools> p(new NodePools());
  p->dir_ = cfg.dir;
  const rdpma::PoolOpen how = cfg.recover ? rdpma::PoolOpen::kRecover : rdpma::PoolOpen::kCreate;
  for (const auto& [id, bytes] : regions) {
    rdpma::PoolSpec s;
    s.path = region_path(cfg.dir, node, id);
    s.bytes = rdpma::PmemPool::kHeaderBytes + page_round(bytes);
    s.id = {kPoolCluster, node, id, layout};
    s.mode = how;
    s.format = cfg.format;
    s.sparse = std::find(growable.begin(), growable.end(), id) != growable.end();
    auto pool = rdpma::PmemPool::open(s);
    if (!pool.is_ok()) return pool.status();
    if (cfg.recover && (*pool)->bytes() < s.bytes) {
      return invalid_argument("pmem pool " + s.path + " holds " + std::to_string((*pool)->bytes()) +
                              " bytes where region " + std::to_string(id) + " needs " +
                              std::to_string(s.bytes) +
                              ": it belongs to another configuration; recover with the options "
                              "it was created with, or start over with --format");
    }
    if (p->mode_ == r2::Persistence::kNone) p->mode_ = (*pool)->persistence_mode();
    p->regions_.emplace_back(id, std::move(*pool));
  }
  rdpma::PoolSpec s;
  s.path = state_path(cfg.dir, node);
  s.bytes = rdpma::PmemPool::kHeaderBytes + 4096;
  s.id = {kPoolCluster, node, kStateRegion, layout};
  s.mode = how;
  s.format = cfg.format;
  auto state = rdpma::PmemPool::open(s);
  if (!state.is_ok()) return state.status();
  p->state_pool_ = std::move(*state);
  if (cfg.recover) {
    p->state_at_ = {rdpma::PmemPool::kHeaderBytes, sizeof(NodeState), rdpma::kLine};
    DRTMX_RETURN_IF_ERROR(p->state_pool_->read(p->state_at_, 0, &p->state_, sizeof p->state_));
    if (p->state_.magic != kStateMagic) {
      return invalid_argument("pmem pool " + s.path +
                              " holds no node state: the database was never started there; "
                              "start it without --recover (and --format)");
    }
  } else {
    auto at = p->state_pool_->alloc(sizeof(NodeState));
    if (!at.is_ok()) return at.status();
    p->state_at_ = *at;
    NodeState fresh;
    fresh.magic = kStateMagic;
    DRTMX_RETURN_IF_ERROR(p->save(fresh));
  }
  if (p->mode_ == r2::Persistence::kNone) p->mode_ = p->state_pool_->persistence_mode();
  return p;
}

std::vector<std::pair<r2::RegionId, r2::FileRegion>> NodePools::file_regions() const {
  std::vector<std::pair<r2::RegionId, r2::FileRegion>> out;
  for (const auto& [id, pool] : regions_) out.emplace_back(id, pool->data_region());
  return out;
}

const rdpma::PmemPool* NodePools::pool(r2::RegionId id) const {
  for (const auto& [rid, pool] : regions_) {
    if (rid == id) return pool.get();
  }
  return nullptr;
}

PersistOps NodePools::persist_ops() const {
  return persist_ops_for(mode_);
}

Status NodePools::save(const NodeState& s) {
  DRTMX_RETURN_IF_ERROR(state_pool_->pwrite(state_at_, 0, &s, sizeof s));
  state_ = s;
  return Status::ok();
}

uint64_t NodePools::pool_bytes() const {
  uint64_t b = state_pool_ ? state_pool_->bytes() : 0;
  for (const auto& r : regions_) b += r.second->bytes();
  return b;
}

}  // namespace drtmx::txn
