#include "r2/verbs/descriptors.h"

#include <set>

namespace drtmx::r2::verbs {

namespace {

class Writer {
 public:
  void u8(uint8_t v) { s_.push_back(static_cast<char>(v)); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  std::string take() { return std::move(s_); }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string s_;
};

// Reads little-endian fields; the first failure sticks and names the field.
class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  bool u8(uint8_t* v, const char* what) { return get(v, 1, what); }
  bool u16(uint16_t* v, const char* what) { return get(v, 2, what); }
  bool u32(uint32_t* v, const char* what) { return get(v, 4, what); }
  bool u64(uint64_t* v, const char* what) { return get(v, 8, what); }
  size_t remaining() const { return s_.size() - pos_; }
  size_t pos() const { return pos_; }
  const std::string& error() const { return err_; }

 private:
  template <typename T>
  bool get(T* v, size_t n, const char* what) {
    if (!err_.empty()) return false;
    if (remaining() < n) {
      err_ = std::string("truncated: ") + what + " needs " + std::to_string(n) +
             " bytes at offset " + std::to_string(pos_) + " but the blob has " +
             std::to_string(s_.size()) + " bytes";
      return false;
    }
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i) {
      x |= uint64_t{static_cast<uint8_t>(s_[pos_ + i])} << (8 * i);
    }
    pos_ += n;
    *v = static_cast<T>(x);
    return true;
  }
  const std::string& s_;
  size_t pos_ = 0;
  std::string err_;
};

constexpr uint32_t kMaxQpn = (1u << 24) - 1;

}  // namespace

std::string serialize_node_desc(const NodeDesc& d) {
  Writer w;
  w.u32(kDescMagic);
  w.u16(kDescVersion);
  w.u16(d.node);
  w.u16(d.num_nodes);
  w.u16(d.threads);
  w.u32(d.msg_mtu);
  w.u32(d.max_op_bytes);
  w.u32(d.recv_buffers);
  w.u16(static_cast<uint16_t>(d.regions.size()));
  for (const RegionDesc& r : d.regions) {
    w.u16(r.id);
    w.u64(r.base);
    w.u64(r.size);
    w.u8(static_cast<uint8_t>(r.persistence));
    for (uint32_t k : r.rkeys) w.u32(k);
  }
  for (const ThreadDesc& t : d.thread_descs) {
    w.u32(t.ud_qpn);
    w.u32(t.qkey);
    w.u16(t.lid);
    w.u8(t.port);
    w.u8(t.active_mtu);
    for (uint8_t b : t.gid) w.u8(b);
    for (uint32_t q : t.rc_qpn) w.u32(q);
  }
  return w.take();
}

Result<NodeDesc> parse_node_desc(const std::string& blob, NodeId from, uint16_t num_nodes,
                                 uint16_t threads) {
  auto bad = [&](const std::string& why) {
    return invalid_argument("verbs descriptor from node " + std::to_string(from) +
                            " is malformed: " + why +
                            " (do all nodes run the same drtmx build with --fabric=verbs?)");
  };
  Reader r(blob);
  NodeDesc d;
  uint32_t magic = 0;
  uint16_t version = 0;
  if (!r.u32(&magic, "magic")) return bad(r.error());
  if (magic != kDescMagic) return bad("wrong magic (not a verbs descriptor)");
  if (!r.u16(&version, "version")) return bad(r.error());
  if (version != kDescVersion) {
    return bad("version " + std::to_string(version) + ", expected " + std::to_string(kDescVersion));
  }
  if (!r.u16(&d.node, "node") || !r.u16(&d.num_nodes, "num_nodes") ||
      !r.u16(&d.threads, "threads") || !r.u32(&d.msg_mtu, "msg_mtu") ||
      !r.u32(&d.max_op_bytes, "max_op_bytes") || !r.u32(&d.recv_buffers, "recv_buffers")) {
    return bad(r.error());
  }
  if (d.node != from) return bad("it names node " + std::to_string(d.node));
  if (d.num_nodes != num_nodes) {
    return bad("it has " + std::to_string(d.num_nodes) + " nodes, this node has " +
               std::to_string(num_nodes));
  }
  if (d.threads != threads) {
    return bad("it has " + std::to_string(d.threads) + " threads, this node has " +
               std::to_string(threads));
  }
  if (d.msg_mtu == 0) return bad("message MTU is 0");
  if (d.max_op_bytes == 0) return bad("max op bytes is 0");
  uint16_t nregions = 0;
  if (!r.u16(&nregions, "region count")) return bad(r.error());
  std::set<RegionId> seen;
  for (uint16_t i = 0; i < nregions; ++i) {
    RegionDesc g;
    uint8_t persistence = 0;
    if (!r.u16(&g.id, "region id") || !r.u64(&g.base, "region base") ||
        !r.u64(&g.size, "region size") || !r.u8(&persistence, "region persistence")) {
      return bad(r.error());
    }
    if (!persistence_from_code(persistence, &g.persistence)) {
      return bad("region " + std::to_string(g.id) + " has unknown persistence code " +
                 std::to_string(persistence));
    }
    if (!seen.insert(g.id).second) return bad("region " + std::to_string(g.id) + " appears twice");
    if (g.size == 0) return bad("region " + std::to_string(g.id) + " has size 0");
    if (g.base + g.size < g.base) {
      return bad("region " + std::to_string(g.id) + " wraps around the address space");
    }
    g.rkeys.resize(threads);
    for (uint16_t t = 0; t < threads; ++t) {
      if (!r.u32(&g.rkeys[t], "region rkey")) return bad(r.error());
    }
    d.regions.push_back(std::move(g));
  }
  d.thread_descs.resize(threads);
  for (uint16_t t = 0; t < threads; ++t) {
    ThreadDesc& td = d.thread_descs[t];
    if (!r.u32(&td.ud_qpn, "UD QPN") || !r.u32(&td.qkey, "qkey") || !r.u16(&td.lid, "LID") ||
        !r.u8(&td.port, "port") || !r.u8(&td.active_mtu, "active MTU")) {
      return bad(r.error());
    }
    for (uint8_t& b : td.gid) {
      if (!r.u8(&b, "GID")) return bad(r.error());
    }
    if (td.active_mtu < 1 || td.active_mtu > 5) {
      return bad("thread " + std::to_string(t) + " active MTU code " +
                 std::to_string(td.active_mtu) + " is not 1..5");
    }
    if (td.ud_qpn > kMaxQpn) return bad("thread " + std::to_string(t) + " UD QPN exceeds 24 bits");
    td.rc_qpn.resize(num_nodes);
    for (uint16_t n = 0; n < num_nodes; ++n) {
      if (!r.u32(&td.rc_qpn[n], "RC QPN")) return bad(r.error());
      if (td.rc_qpn[n] > kMaxQpn) {
        return bad("thread " + std::to_string(t) + " RC QPN toward node " + std::to_string(n) +
                   " exceeds 24 bits");
      }
    }
  }
  if (r.remaining() != 0) {
    return bad(std::to_string(r.remaining()) + " trailing bytes after offset " +
               std::to_string(r.pos()));
  }
  return d;
}

}  // namespace drtmx::r2::verbs
