#include "r2/ucx/descriptors.h"

#include <cstring>

namespace drtmx::r2::ucx {
namespace {

class Writer {
 public:
  template <typename T>
  void put(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void bytes(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <typename T>
  bool get(T* v) {
    if (s_.size() - at_ < sizeof(T)) return false;
    std::memcpy(v, s_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return true;
  }
  bool bytes(std::string* out) {
    uint32_t n = 0;
    if (!get(&n) || s_.size() - at_ < n) return false;
    out->assign(s_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool done() const { return at_ == s_.size(); }

 private:
  const std::string& s_;
  size_t at_ = 0;
};

}  // namespace

std::string serialize_node_desc(const NodeDesc& d) {
  Writer w;
  w.put(kDescMagic);
  w.put(kDescVersion);
  w.put(d.node);
  w.put(d.num_nodes);
  w.put(d.threads);
  w.put(d.max_op_bytes);
  for (const std::string& a : d.workers) w.bytes(a);
  w.put<uint16_t>(static_cast<uint16_t>(d.regions.size()));
  for (const RegionDesc& r : d.regions) {
    w.put(r.id);
    w.put(r.base);
    w.put(r.size);
    w.put(static_cast<uint8_t>(r.persistence));
    w.bytes(r.rkey);
  }
  return w.take();
}

Result<NodeDesc> parse_node_desc(const std::string& blob, NodeId from, uint16_t num_nodes,
                                 uint16_t threads) {
  auto bad = [&](const std::string& why) -> Status {
    return invalid_argument("node " + std::to_string(from) + " sent a malformed ucx descriptor (" +
                            why + "); are all nodes running the same drtmx build?");
  };
  Reader r(blob);
  uint32_t magic = 0;
  uint16_t version = 0;
  NodeDesc d;
  if (!r.get(&magic) || magic != kDescMagic) return bad("bad magic");
  if (!r.get(&version) || version != kDescVersion) return bad("unknown version");
  if (!r.get(&d.node) || !r.get(&d.num_nodes) || !r.get(&d.threads) || !r.get(&d.max_op_bytes)) {
    return bad("truncated header");
  }
  if (d.node != from || d.num_nodes != num_nodes || d.threads != threads) {
    return bad("it describes node " + std::to_string(d.node) + " of " +
               std::to_string(d.num_nodes) + " with " + std::to_string(d.threads) +
               " threads; expected node " + std::to_string(from) + " of " +
               std::to_string(num_nodes) + " with " + std::to_string(threads));
  }
  if (d.max_op_bytes == 0) return bad("max_op_bytes 0");
  d.workers.resize(threads);
  for (uint16_t t = 0; t < threads; ++t) {
    if (!r.bytes(&d.workers[t]) || d.workers[t].empty()) {
      return bad("worker address of thread " + std::to_string(t));
    }
  }
  uint16_t regions = 0;
  if (!r.get(&regions)) return bad("truncated region count");
  for (uint16_t i = 0; i < regions; ++i) {
    RegionDesc g;
    uint8_t code = 0;
    if (!r.get(&g.id) || !r.get(&g.base) || !r.get(&g.size) || !r.get(&code) || !r.bytes(&g.rkey)) {
      return bad("truncated region entry " + std::to_string(i));
    }
    if (g.size == 0 || g.rkey.empty()) return bad("region " + std::to_string(g.id) + " is empty");
    if (!persistence_from_code(code, &g.persistence)) {
      return bad("region " + std::to_string(g.id) + " has persistence code " +
                 std::to_string(code));
    }
    for (const RegionDesc& o : d.regions) {
      if (o.id == g.id) return bad("region " + std::to_string(g.id) + " twice");
    }
    d.regions.push_back(std::move(g));
  }
  if (!r.done()) return bad("trailing bytes");
  return d;
}

}  // namespace drtmx::r2::ucx
