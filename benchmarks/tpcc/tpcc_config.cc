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

Result<Config> parse(const WorkloadOptions& o, const WorkloadEnv& env) {
  Config c;
  c.nodes = env.nodes;
  c.threads = env.threads;
  c.coroutines = env.coroutines;
  c.replicas = env.replicas;
  c.copies = env.copies;
  if (o.count("order-room")) {
    return invalid_argument(
        "--order-room is no longer needed: TPC-C's tables grow as the run inserts rows; drop the "
        "option");
  }
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
  auto sld = option_number(o, "stock-level-districts", 1, 1, 20);
  auto rip = option_number(o, "remote-item-pct", 1, 0, 100);
  auto rpp = option_number(o, "remote-payment-pct", 15, 0, 100);
  auto rbk = option_number(o, "rollback-pct", 1, 0, 100);
  for (auto* r : {&wpn, &items, &customers, &sld, &rip, &rpp, &rbk}) {
    if (!r->is_ok()) return r->status();
  }
  c.warehouses_per_node = *wpn;
  c.items = *items;
  c.customers = *customers;
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
