// TPC-C options (tpcc_config.h).
#include "tpcc/tpcc_config.h"

#include <algorithm>

#include "driver/workload_options.h"
#include "tpcc/tpcc_schema.h"

namespace drtmx::bench::tpcc {
namespace {

Result<std::array<uint32_t, kTxnTypes>> parse_mix(const std::string& s) {
  auto p = percentages(s, kTxnTypes);
  if (!p) {
    return invalid_argument("--mix=" + s +
                            ": expected five percentages adding up to 100 (New-Order, Payment, "
                            "Order-Status, Delivery, Stock-Level), e.g. 45,43,4,4,4");
  }
  std::array<uint32_t, kTxnTypes> m{};
  std::copy(p->begin(), p->end(), m.begin());
  return m;
}

}  // namespace

uint32_t Config::clients_per_warehouse() const {
  const uint32_t per_node = uint32_t{threads} * coroutines;
  return std::max<uint32_t>(1, (per_node + warehouses_per_node - 1) / warehouses_per_node);
}

uint32_t Config::history_quota() const {
  // Room for twice as many payments as orders per warehouse, shared by the
  // clients whose home it is.
  const uint64_t room = uint64_t{2} * kDistricts * order_room / clients_per_warehouse();
  return static_cast<uint32_t>(std::min<uint64_t>(room, (uint64_t{1} << kHistorySeqBits) - 1));
}

Result<Config> parse(const WorkloadOptions& o, const WorkloadEnv& env) {
  Config c;
  c.nodes = env.nodes;
  c.threads = env.threads;
  c.coroutines = env.coroutines;
  c.replicas = env.replicas;
  c.copies = env.copies;
  if (auto it = o.find("variant"); it != o.end()) c.variant = it->second;
  if (c.variant == "standard") {
    c.mix = {45, 43, 4, 4, 4};
  } else if (c.variant == "no") {
    c.mix = {100, 0, 0, 0, 0};
    c.force_distributed = true;
  } else if (c.variant == "no-os") {
    c.mix = {10, 0, 90, 0, 0};
  } else {
    return invalid_argument("--variant=" + c.variant +
                            ": expected standard (45/43/4/4/4), no (New-Order only, every one "
                            "distributed) or no-os (10% New-Order, 90% Order-Status)");
  }
  auto wpn = option_number(o, "warehouses-per-node", env.threads, 1, 4096);
  auto items = option_number(o, "items", 100000, 100, 1000000);
  auto customers = option_number(o, "customers", 3000, 10, 65535);
  // The default order room: 20 000 per district for the 3-node cluster of
  // one warehouse per node and 3 copies (9 warehouse copies, ~6.7 GB of
  // segments), and as much room in total when there are fewer copies, up to
  // 60 000 (a single node's one warehouse fills 20 000 in ~7 s).
  uint32_t room_default = 20000;
  if (wpn.is_ok()) {
    const uint64_t copies = uint64_t{env.nodes} * *wpn * std::max<uint16_t>(1, env.replicas);
    room_default = static_cast<uint32_t>(
        std::clamp<uint64_t>(uint64_t{20000} * 9 / std::max<uint64_t>(1, copies), 20000, 60000));
  }
  auto room = option_number(o, "order-room", room_default, 1, kMaxOrderId - 65535);
  auto sld = option_number(o, "stock-level-districts", 1, 1, 20);
  auto rip = option_number(o, "remote-item-pct", 1, 0, 100);
  auto rpp = option_number(o, "remote-payment-pct", 15, 0, 100);
  auto rbk = option_number(o, "rollback-pct", 1, 0, 100);
  for (auto* r : {&wpn, &items, &customers, &room, &sld, &rip, &rpp, &rbk}) {
    if (!r->is_ok()) return r->status();
  }
  c.warehouses_per_node = *wpn;
  c.items = *items;
  c.customers = *customers;
  c.order_room = *room;
  c.stock_level_districts = *sld;
  c.remote_item_pct = *rip;
  c.remote_payment_pct = *rpp;
  c.rollback_pct = *rbk;
  if (c.warehouses() > 65535) {
    return invalid_argument("--warehouses-per-node=" + std::to_string(*wpn) + " with " +
                            std::to_string(c.nodes) + " nodes makes " +
                            std::to_string(c.warehouses()) + " warehouses; at most 65535");
  }
  if (auto it = o.find("mix"); it != o.end()) {
    auto m = parse_mix(it->second);
    if (!m.is_ok()) return m.status();
    c.mix = *m;
  }
  const uint64_t clients = uint64_t{env.nodes} * env.threads * env.coroutines;
  if (clients >= kMaxHistorySlot) {
    return invalid_argument("tpcc: " + std::to_string(clients) +
                            " transaction coroutines; HISTORY keys allow fewer than " +
                            std::to_string(kMaxHistorySlot));
  }
  return c;
}

}  // namespace drtmx::bench::tpcc
