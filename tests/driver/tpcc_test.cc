// TPC-C without a cluster run: options refused with messages naming them,
// the random generators against the specification, the loader against the
// specification's cardinalities (scaled, and full size for one warehouse),
// and the consistency checker against a freshly loaded database and against
// deliberately corrupted copies — each corruption must fail with the
// condition, warehouse and district it breaks.
#include "tpcc/tpcc.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "r2/support/inproc_cluster.h"
#include "store/tables/plan.h"
#include "support/local_node.h"
#include "support/map_txn.h"
#include "tpcc/tpcc_check.h"
#include "tpcc/tpcc_client.h"
#include "tpcc/tpcc_loader.h"
#include "tpcc/tpcc_random.h"
#include "tpcc/tpcc_schema.h"
#include "tpcc/tpcc_txns.h"

namespace drtmx::bench::tpcc {
namespace {

using store::tables::StoreNode;

WorkloadEnv env(uint16_t nodes, uint16_t threads) {
  WorkloadEnv e;
  e.nodes = nodes;
  e.threads = threads;
  e.coroutines = 8;
  e.replicas = 1;
  return e;
}

TEST(TpccOptions, DefaultsFollowTheSpecification) {
  auto c = parse({}, env(3, 2));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(c->warehouses_per_node, 2u);  // one per worker thread
  EXPECT_EQ(c->warehouses(), 6u);
  EXPECT_EQ(c->items, 100000u);
  EXPECT_EQ(c->customers, 3000u);
  EXPECT_EQ(c->initial_new_orders(), 900u);
  EXPECT_EQ(c->mix, (std::array<uint32_t, 5>{45, 43, 4, 4, 4}));
  EXPECT_EQ(c->remote_item_pct, 1u);
  EXPECT_EQ(c->remote_payment_pct, 15u);
  EXPECT_EQ(c->rollback_pct, 1u);
  EXPECT_TRUE(c->full_scale());
  EXPECT_EQ(make(*c)->describe().find("SCALED"), std::string::npos);
}

TEST(TpccOptions, PresetsAndOverrides) {
  auto no = parse({{"variant", "no"}}, env(3, 1));
  ASSERT_TRUE(no.is_ok());
  EXPECT_EQ(no->mix, (std::array<uint32_t, 5>{100, 0, 0, 0, 0}));
  EXPECT_TRUE(no->force_distributed);
  auto os = parse({{"variant", "no-os"}}, env(3, 1));
  ASSERT_TRUE(os.is_ok());
  EXPECT_EQ(os->mix, (std::array<uint32_t, 5>{10, 0, 90, 0, 0}));
  auto mixed = parse({{"variant", "no-os"}, {"mix", "20,20,20,20,20"}}, env(3, 1));
  ASSERT_TRUE(mixed.is_ok());
  EXPECT_EQ(mixed->mix[4], 20u);
  auto scaled = parse({{"items", "1000"}, {"customers", "30"}}, env(1, 1));
  ASSERT_TRUE(scaled.is_ok());
  EXPECT_NE(make(*scaled)->describe().find("SCALED-DOWN: items=1000"), std::string::npos);
}

TEST(TpccOptions, BadValuesNameTheOption) {
  const std::pair<WorkloadOptions, const char*> bad[] = {
      {{{"variant", "fast"}}, "--variant=fast"},
      {{{"mix", "45,43,4,4"}}, "--mix=45,43,4,4"},
      {{{"mix", "45,43,4,4,5"}}, "adding up to 100"},
      {{{"remote-item-pct", "101"}}, "--remote-item-pct=101"},
      {{{"remote-payment-pct", "x"}}, "--remote-payment-pct=x"},
      {{{"warehouses-per-node", "0"}}, "--warehouses-per-node=0"},
      {{{"stock-level-districts", "21"}}, "--stock-level-districts=21"},
      {{{"customers", "5"}}, "--customers=5"},
      {{{"items", "99"}}, "--items=99"},
      {{{"warehouses-per-node", "4096"}}, "65535"},
  };
  for (const auto& [opts, msg] : bad) {
    auto c = parse(opts, env(20, 1));
    ASSERT_FALSE(c.is_ok()) << msg;
    EXPECT_NE(c.status().message().find(msg), std::string::npos) << c.status().message();
  }
}

// --order-room sized the tables for the orders a run could take; the
// tables grow now, and the option is refused with a message saying so (not
// as an unknown option: drtmx-bench still lists it, so the run reaches
// parse()).
TEST(TpccOptions, OrderRoomIsRefusedAsNoLongerNeeded) {
  for (const char* v : {"20000", "0", "x"}) {
    auto c = parse({{"order-room", v}}, env(1, 1));
    ASSERT_FALSE(c.is_ok()) << v;
    EXPECT_EQ(c.status().message(),
              "--order-room is no longer needed: TPC-C's tables grow as the run inserts rows; "
              "drop the option");
  }
  bool listed = false;
  for (const auto& [k, help] : info().options) listed |= k == "order-room";
  EXPECT_TRUE(listed);
  auto c = parse({}, env(1, 1));
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(make(*c)->describe().find("order_room"), std::string::npos);
}

// The limits that remain are the key encodings' own, and the tables'
// capacities are the loaded rows (a sizing hint: the tables grow).
TEST(TpccSchema, LimitsAreTheKeyEncodings) {
  EXPECT_EQ(kMaxOrderId, 16777215u);             // 24 bits of ORDER-BY-CUSTOMER
  EXPECT_EQ(kHistoryRowsPerClient, 268435456u);  // 28 sequence bits of HISTORY
  // The highest order id keeps every order key's fields apart and orders.
  const uint32_t w = 65535, d = kDistricts;
  EXPECT_EQ(order_id_of(order_key(w, d, kMaxOrderId)), kMaxOrderId);
  EXPECT_LT(order_key(w, d, kMaxOrderId), order_key(w, d + 1, 0));
  EXPECT_EQ(order_line_o_id(order_line_key(w, d, kMaxOrderId, 15)), kMaxOrderId);
  EXPECT_LT(order_line_key(w, d, kMaxOrderId, 15), order_line_key(w, d + 1, 0, 0));
  EXPECT_GT(order_customer_key(w, d, 7, 1), order_customer_key(w, d, 7, kMaxOrderId));
  EXPECT_LT(order_customer_key(w, d, 7, 1), order_customer_key(w, d, 8, kMaxOrderId));
  EXPECT_LT(history_key(w - 1, kMaxHistorySlot, kHistoryRowsPerClient - 1), history_key(w, 0, 0));
  EXPECT_LT(history_key(w, 3, kHistoryRowsPerClient - 1), history_key(w, 4, 0));
  auto c = parse({{"items", "1000"}, {"customers", "60"}}, env(1, 4));
  ASSERT_TRUE(c.is_ok());
  std::map<txn::TableId, uint64_t> cap;
  for (const store::TableSpec& t : table_specs(*c)) cap[t.id] = t.capacity;
  EXPECT_EQ(cap[kOrder], 600u);
  EXPECT_EQ(cap[kOrderByCustomer], 600u);
  EXPECT_EQ(cap[kNewOrder], 180u);
  EXPECT_EQ(cap[kHistory], 600u);
  EXPECT_EQ(cap[kOrderLine], 9000u);  // at most 15 lines an order
  EXPECT_EQ(cap[kCustomer], 600u);
  EXPECT_EQ(cap[kStock], 1000u);
}

TEST(TpccRandom, NURandLastNamesAndStrings) {
  EXPECT_EQ(last_name(0), "BARBARBAR");
  EXPECT_EQ(last_name(371), "PRICALLYOUGHT");
  EXPECT_EQ(last_name(999), "EINGEINGEING");
  Rng r(7);
  const NURandC load = NURandC::for_load(1);
  for (uint64_t seed = 1; seed < 50; ++seed) {
    const NURandC run = NURandC::for_run(load, seed);
    const int delta = std::abs(int(run.c_last) - int(load.c_last));
    EXPECT_TRUE(delta >= 65 && delta <= 119 && delta != 96 && delta != 112) << delta;
    EXPECT_LE(run.c_id, 1023u);
    EXPECT_LE(run.ol_i_id, 8191u);
  }
  for (int i = 0; i < 10000; ++i) {
    const uint64_t v = nurand(r, 1023, load.c_id, 1, 3000);
    ASSERT_TRUE(v >= 1 && v <= 3000);
  }
  int original = 0;
  for (int i = 0; i < 2000; ++i) {
    char s[50];
    data_string(r, s, sizeof s, 26, 50);
    const std::string t = text(s, sizeof s);
    ASSERT_GE(t.size(), 26u);
    original += t.find("ORIGINAL") != std::string::npos;
    char z[9];
    zip(r, z);
    ASSERT_EQ(std::string(z + 4, 5), "11111");
  }
  EXPECT_NEAR(original, 200, 60);  // 10 %
}

TEST(TpccClient, HomesAreLocalPrimaries) {
  auto c = parse({{"warehouses-per-node", "3"}}, env(3, 2));
  ASSERT_TRUE(c.is_ok());
  std::set<uint32_t> used;
  for (uint32_t i = 0; i < 3u * 2 * 8; ++i) {
    const uint32_t w = home_warehouse(*c, i);
    const uint32_t node = i / 16;
    EXPECT_EQ((w - 1) % 3, node) << i;  // the primary of partition w - 1
    used.insert(w);
  }
  EXPECT_EQ(used.size(), 9u);  // every warehouse has clients
}

// The delivered-order bounds are maxima per (warehouse, district), shared
// by threads; out-of-range names are ignored.
TEST(TpccDeliveries, BoundsKeepTheHighestDeliveredOrder) {
  Deliveries h(2);
  EXPECT_EQ(h.from(1, 1), 0u);
  std::vector<std::thread> ts;
  for (uint32_t t = 0; t < 4; ++t) {
    ts.emplace_back([&h, t] {
      for (uint32_t o = 1; o <= 5000; ++o) h.delivered(1 + o % 2, 1 + o % kDistricts, o * 4 + t);
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(h.from(1, 1), 5000u * 4 + 3);  // o = 5000: even, o % 10 == 0
  EXPECT_EQ(h.from(2, 2), 4991u * 4 + 3);  // o = 4991: odd, o % 10 == 1
  h.delivered(1, 1, 7);                    // lower: no effect
  EXPECT_EQ(h.from(1, 1), 5000u * 4 + 3);
  h.delivered(3, 1, 9);  // no warehouse 3
  h.delivered(1, kDistricts + 1, 9);
  EXPECT_EQ(h.from(3, 1), 0u);
  EXPECT_EQ(h.from(1, kDistricts + 1), 0u);
}

// The deferred queue of a warehouse: one agent at a time, and every
// queued Delivery is claimed exactly once, across threads.
TEST(TpccDeliveries, OneAgentAtATimeAndEveryRequestServedOnce) {
  Deliveries q(1);
  EXPECT_FALSE(q.claim(1));  // nothing queued
  q.request(1);
  q.request(1);
  ASSERT_TRUE(q.claim(1));
  EXPECT_FALSE(q.claim(1));  // another agent is running
  q.done(1);
  ASSERT_TRUE(q.claim(1));
  q.done(1);
  EXPECT_FALSE(q.claim(1));
  EXPECT_EQ(q.queued(1), 0u);

  constexpr int kThreads = 4, kEach = 20000;
  std::atomic<int> agents{0}, served{0}, overlap{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        q.request(1);
        if (q.claim(1)) {
          if (agents.fetch_add(1) != 0) overlap.fetch_add(1);
          served.fetch_add(1);
          agents.fetch_sub(1);
          q.done(1);
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(overlap.load(), 0);
  // What no thread claimed is still queued: nothing lost, nothing twice.
  EXPECT_EQ(served.load() + int(q.queued(1)), kThreads * kEach);
  while (q.claim(1)) {
    served.fetch_add(1);
    q.done(1);
  }
  EXPECT_EQ(served.load(), kThreads * kEach);
}

// One in-process node holding every partition (replicas 1), loaded.
struct Db : testing::LocalNode {
  explicit Db(const Config& cfg) : LocalNode(table_specs(cfg), cfg.nodes), c(cfg) {
    Status st = load(*node, catalog, c);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  uint64_t count(txn::TableId t, uint32_t w) {
    const auto* lp = node->partition(t, w - 1);
    EXPECT_NE(lp, nullptr);
    if (lp == nullptr) return 0;
    std::vector<uint64_t> keys;
    std::vector<uint8_t> values;
    uint64_t n = 0, start = 0;
    for (;;) {
      const bool end = lp->tree->scan(start, 4096, keys, values);
      n += keys.size();
      if (end || keys.empty()) return n;
      start = keys.back() + 1;
    }
  }
  Status check(uint32_t w) {
    auto r = check_warehouse(*node, catalog, c, w);
    return r.is_ok() ? Status() : r.status();
  }
  Config c;
};

// `warehouses` on one node.
Config scaled(uint16_t warehouses) {
  auto c = parse(
      {{"items", "1000"}, {"customers", "60"}, {"warehouses-per-node", std::to_string(warehouses)}},
      env(1, 1));
  EXPECT_TRUE(c.is_ok());
  return *c;
}

void expect_cardinalities(Db& db, uint32_t w) {
  const Config& c = db.c;
  EXPECT_EQ(db.count(kOrder, w), uint64_t{kDistricts} * c.customers);
  EXPECT_EQ(db.count(kNewOrder, w), uint64_t{kDistricts} * c.initial_new_orders());
  EXPECT_EQ(db.count(kHistory, w), uint64_t{kDistricts} * c.customers);
  EXPECT_EQ(db.count(kCustomerByName, w), uint64_t{kDistricts} * c.customers);
  EXPECT_EQ(db.count(kOrderByCustomer, w), uint64_t{kDistricts} * c.customers);
  const uint64_t lines = db.count(kOrderLine, w);
  const uint64_t orders = uint64_t{kDistricts} * c.customers;
  EXPECT_GE(lines, orders * 5);
  EXPECT_LE(lines, orders * 15);
  EXPECT_NEAR(double(lines) / orders, 10.0, 0.6);  // 5..15 uniform
  // Hash tables: every key present, the next one absent.
  auto has = [&](txn::TableId t, uint64_t k) {
    std::vector<uint8_t> buf(db.catalog.find(t)->value_size);
    auto g = db.node->get_local(*db.catalog.find(t), k, buf);
    return g.is_ok() && *g;
  };
  for (txn::TableId t : {kWarehouse, kWarehouseYtd}) {  // every part of the row
    EXPECT_TRUE(has(t, warehouse_key(w)));
    EXPECT_FALSE(has(t, warehouse_key(w + 100)));
  }
  for (txn::TableId t : {kDistrict, kDistrictNext, kDistrictYtd}) {
    EXPECT_TRUE(has(t, district_key(w, 10)));
    EXPECT_FALSE(has(t, district_key(w, 11)));
  }
  EXPECT_TRUE(has(kCustomer, customer_key(w, 10, c.customers)));
  EXPECT_FALSE(has(kCustomer, customer_key(w, 10, c.customers + 1)));
  EXPECT_TRUE(has(kStock, stock_key(w, c.items)));
  EXPECT_FALSE(has(kStock, stock_key(w, c.items + 1)));
  EXPECT_TRUE(has(kItem, item_key(c.items)));
  EXPECT_FALSE(has(kItem, item_key(c.items + 1)));  // the rollback item is unused
  // Column values of clause 4.3.3.1.
  auto wr = db.get<WarehouseRow>(kWarehouse, warehouse_key(w));
  EXPECT_EQ(wr.w_id, w);
  EXPECT_LE(wr.w_tax, 2000);
  auto wy = db.get<WarehouseYtdRow>(kWarehouseYtd, warehouse_key(w));
  EXPECT_EQ(wy.w_ytd, int64_t{kDistricts} * c.customers * 1000);
  auto dr = db.get<DistrictRow>(kDistrict, district_key(w, 3));
  EXPECT_EQ(dr.d_id, 3u);
  EXPECT_EQ(dr.d_w_id, w);
  auto dn = db.get<DistrictNextRow>(kDistrictNext, district_key(w, 3));
  EXPECT_EQ(dn.d_next_o_id, c.customers + 1);
  auto dy = db.get<DistrictYtdRow>(kDistrictYtd, district_key(w, 3));
  EXPECT_EQ(dy.d_ytd, int64_t{c.customers} * 1000);
  auto cu = db.get<CustomerRow>(kCustomer, customer_key(w, 3, 7));
  EXPECT_EQ(text(cu.c_last, sizeof cu.c_last), last_name(6));  // c_id - 1 for the first 1000
  EXPECT_EQ(cu.c_balance, -1000);
  EXPECT_EQ(std::string(cu.c_middle, 2), "OE");
}

// New-Order at the key-space limit: the district whose next order id is
// kMaxOrderId still takes that order (it gets as far as its inserts, which
// MapTxn does not support); one past it rolls back, reports the district
// full and leaves D_NEXT_O_ID alone.
TEST(TpccNewOrder, DistrictFullOnlyBeyondTheOrderKeys) {
  Config c;
  c.items = 1000;
  c.customers = 60;
  const uint32_t w = 1, d = 2;
  NewOrderInput in;
  in.w = w;
  in.d = d;
  in.c = 5;
  in.ol_cnt = kMinOrderLines;
  for (uint32_t i = 0; i < in.ol_cnt; ++i) {
    in.item[i] = 10 + i;
    in.supply_w[i] = w;
    in.quantity[i] = 3;
  }
  auto db = [&](uint32_t next_o_id) {
    auto tx = std::make_unique<testing::MapTxn>();
    tx->set(kWarehouse, warehouse_key(w), WarehouseRow{});
    tx->set(kDistrict, district_key(w, d), DistrictRow{});
    tx->set(kCustomer, customer_key(w, d, in.c), CustomerRow{});
    for (uint32_t i = 0; i < in.ol_cnt; ++i) {
      ItemRow item{};
      item.i_id = in.item[i];
      item.i_price = 100;
      tx->set(kItem, item_key(in.item[i]), item);
      StockRow s{};
      s.s_quantity = 50;
      tx->set(kStock, stock_key(w, in.item[i]), s);
    }
    tx->set(kDistrictNext, district_key(w, d), DistrictNextRow{next_o_id});
    return tx;
  };
  NewOrderOutput out;
  auto last = db(kMaxOrderId);
  EXPECT_EQ(new_order(*last, c, in, &out), txn::Abort::kNotSupported);  // the ORDER insert
  EXPECT_FALSE(out.full);
  DistrictNextRow next{};
  ASSERT_EQ(last->get(kDistrictNext, district_key(w, d), &next), txn::Abort::kNone);
  EXPECT_EQ(next.d_next_o_id, kMaxOrderId + 1);
  auto full = db(kMaxOrderId + 1);
  EXPECT_EQ(new_order(*full, c, in, &out), txn::Abort::kUserAbort);
  EXPECT_TRUE(out.full);
  EXPECT_FALSE(out.rolled_back);
  ASSERT_EQ(full->get(kDistrictNext, district_key(w, d), &next), txn::Abort::kNone);
  EXPECT_EQ(next.d_next_o_id, kMaxOrderId + 1);
}

// Stock-Level's count against a brute-force one, on a district whose
// orders around the window [D_NEXT_O_ID - 20, D_NEXT_O_ID - 1] are built so
// that every off-by-one shows: orders just outside it (and another
// district's) carry only items with low stock, which must not be counted;
// an item in several lines counts once.
TEST(TpccStockLevel, CountsDistinctLowItemsOfTheLastTwentyOrders) {
  testing::MapTxn tx;
  const uint32_t w = 1, d = 3, next = 41;
  const int32_t threshold = 15;
  Config c = scaled(1);
  c.stock_level_districts = 1;
  tx.set(kDistrictNext, district_key(w, d), DistrictNextRow{next});
  std::map<uint32_t, int16_t> quantity;  // item -> stock
  auto line = [&](uint32_t dd, uint32_t o, uint32_t ol, uint32_t item, int16_t q) {
    OrderLineRow l{};
    l.ol_o_id = o;
    l.ol_d_id = static_cast<uint8_t>(dd);
    l.ol_w_id = static_cast<uint16_t>(w);
    l.ol_number = static_cast<uint8_t>(ol);
    l.ol_i_id = item;
    tx.set(kOrderLine, order_line_key(w, dd, o, ol), l);
    StockRow s{};
    s.s_i_id = item;
    s.s_w_id = static_cast<uint16_t>(w);
    s.s_quantity = q;
    tx.set(kStock, stock_key(w, item), s);
    quantity[item] = q;
  };
  std::set<uint32_t> expect;
  uint32_t item = 1000;
  for (uint32_t o = 1; o <= next + 2; ++o) {  // orders past the window: in flight
    const bool inside = o >= next - 20 && o <= next - 1;
    const uint32_t lines = 5 + o % 11;  // 5 .. 15
    for (uint32_t ol = 1; ol <= lines; ++ol) {
      if (!inside) {
        line(d, o, ol, ++item, 1);  // low, and must not count
        continue;
      }
      // Inside: alternate low and plenty; every third line repeats item 7.
      const uint32_t it = ol % 3 == 0 ? 7 : ++item;
      const int16_t q = it == 7 ? 3 : static_cast<int16_t>(ol % 2 == 0 ? threshold - 1 : threshold);
      line(d, o, ol, it, q);
      if (q < threshold) expect.insert(it);
    }
  }
  for (uint32_t o = next - 20; o < next; ++o) line(d + 1, o, 1, ++item, 0);  // next district
  StockLevelInput in;
  in.w = w;
  in.d = d;
  in.threshold = threshold;
  StockLevelOutput out;
  ASSERT_EQ(stock_level(tx, c, in, &out), txn::Abort::kNone);
  EXPECT_EQ(out.low_stock, expect.size());
  EXPECT_GT(expect.size(), 20u);
  EXPECT_EQ(tx.scans, 1u);  // the lines by one range scan

  // A district with fewer than 20 orders: all of them.
  testing::MapTxn small;
  small.set(kDistrictNext, district_key(w, d), DistrictNextRow{4});
  for (uint32_t o = 1; o <= 3; ++o) {
    OrderLineRow l{};
    l.ol_i_id = 50 + o;
    small.set(kOrderLine, order_line_key(w, d, o, 1), l);
    StockRow s{};
    s.s_quantity = 0;
    small.set(kStock, stock_key(w, 50 + o), s);
  }
  ASSERT_EQ(stock_level(small, c, in, &out), txn::Abort::kNone);
  EXPECT_EQ(out.low_stock, 3u);
}

TEST(TpccLoader, ScaledCardinalitiesAndConsistency) {
  Db db(scaled(2));  // two warehouses on the one node
  for (uint32_t w = 1; w <= 2; ++w) {
    expect_cardinalities(db, w);
    EXPECT_TRUE(db.check(w).is_ok()) << db.check(w).to_string();
  }
  auto a = check_warehouse(*db.node, db.catalog, db.c, 1);
  auto b = check_warehouse(*db.node, db.catalog, db.c, 2);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_NE(a->digest, b->digest);  // different warehouses, different data
  EXPECT_EQ(a->history_by_customer_warehouse[0], a->customer_ytd_payment);
  EXPECT_EQ(a->orders_added, 0);
}

TEST(TpccLoader, CopiesAreIdentical) {
  Db one(scaled(2)), two(scaled(2));
  auto a = check_warehouse(*one.node, one.catalog, one.c, 2);
  auto b = check_warehouse(*two.node, two.catalog, two.c, 2);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a->digest, b->digest);
}

TEST(TpccLoader, FullSizeCardinalitiesOfOneWarehouse) {
  auto c = parse({}, env(1, 1));
  ASSERT_TRUE(c.is_ok());
  Db db(*c);
  expect_cardinalities(db, 1);
  EXPECT_EQ(db.count(kOrder, 1), 30000u);
  EXPECT_EQ(db.count(kNewOrder, 1), 9000u);
  EXPECT_TRUE(db.check(1).is_ok()) << db.check(1).to_string();
}

// Each corruption breaks one condition; the error names it and the place.
void expect_violation(Db& db, const std::string& condition, const std::string& where) {
  Status s = db.check(1);
  ASSERT_FALSE(s.is_ok()) << condition;
  EXPECT_NE(s.message().find(condition), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(where), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("the primary"), std::string::npos) << s.message();
}

TEST(TpccCheck, CatchesEachCorruption) {
  {
    Db db(scaled(1));
    auto w = db.get<WarehouseYtdRow>(kWarehouseYtd, warehouse_key(1));
    w.w_ytd += 1;
    db.put(kWarehouseYtd, warehouse_key(1), w);
    expect_violation(db, "3.3.2.1 ", "warehouse 1");
  }
  {  // a district's D_YTD alone
    Db db(scaled(1));
    auto d = db.get<DistrictYtdRow>(kDistrictYtd, district_key(1, 2));
    d.d_ytd -= 1;
    db.put(kDistrictYtd, district_key(1, 2), d);
    expect_violation(db, "3.3.2.1 ", "warehouse 1");
  }
  {
    Db db(scaled(1));
    auto d = db.get<DistrictNextRow>(kDistrictNext, district_key(1, 4));
    d.d_next_o_id += 1;
    db.put(kDistrictNext, district_key(1, 4), d);
    expect_violation(db, "3.3.2.2 ", "warehouse 1 district 4");
  }
  {  // an order above D_NEXT_O_ID - 1
    Db db(scaled(1));
    auto d = db.get<DistrictNextRow>(kDistrictNext, district_key(1, 4));
    d.d_next_o_id -= 1;
    db.put(kDistrictNext, district_key(1, 4), d);
    expect_violation(db, "3.3.2.2 ", "warehouse 1 district 4");
  }
  {  // D_NEXT_O_ID beyond what the order keys allow
    Db db(scaled(1));
    DistrictNextRow d{kMaxOrderId + 2};
    db.put(kDistrictNext, district_key(1, 4), d);
    expect_violation(db, "3.3.2.2 ", "warehouse 1 district 4");
  }
  {  // a part of a vertically partitioned row missing (clause 1.5.2)
    Db db(scaled(1));
    ASSERT_TRUE(db.node->partition(kDistrictYtd, 0)->hash->remove(district_key(1, 6)).is_ok());
    expect_violation(db, "missing from district_ytd", "warehouse 1 district 6");
  }
  {  // the static part of a district row with the wrong id
    Db db(scaled(1));
    auto d = db.get<DistrictRow>(kDistrict, district_key(1, 5));
    d.d_id = 7;
    db.put(kDistrict, district_key(1, 5), d);
    expect_violation(db, "carry their ids", "warehouse 1 district 5");
  }
  {  // a hole in NEW-ORDER
    Db db(scaled(1));
    const uint32_t mid = db.c.customers - 2;
    ASSERT_TRUE(
        db.node->partition(kNewOrder, 0)->records->remove(new_order_key(1, 5, mid)).is_ok());
    expect_violation(db, "3.3.2.", "warehouse 1 district 5");  // 3 (count) or 5 (carrier)
  }
  {  // a delivered order whose carrier is null
    Db db(scaled(1));
    auto o = db.get<OrderRow>(kOrder, order_key(1, 6, 1));
    o.o_carrier_id = 0;
    // Replaced (ORDER is sized for the loaded orders: the old row's slot
    // goes first).
    ASSERT_TRUE(db.node->partition(kOrder, 0)->records->remove(order_key(1, 6, 1)).is_ok());
    db.put(kOrder, order_key(1, 6, 1), o);
    expect_violation(db, "3.3.2.5 ", "warehouse 1 district 6");
  }
  {  // an extra order line
    Db db(scaled(1));
    uint32_t o = 1;
    while (db.get<OrderRow>(kOrder, order_key(1, 7, o)).o_ol_cnt == 15) ++o;
    auto l = db.get<OrderLineRow>(kOrderLine, order_line_key(1, 7, o, 1));
    db.put(kOrderLine, order_line_key(1, 7, o, 15), l);
    expect_violation(db, "3.3.2.4 ", "warehouse 1 district 7");
  }
  {  // a delivered line without a delivery date
    Db db(scaled(1));
    auto l = db.get<OrderLineRow>(kOrderLine, order_line_key(1, 8, 3, 2));
    l.ol_delivery_d = 0;
    db.put(kOrderLine, order_line_key(1, 8, 3, 2), l);
    expect_violation(db, "3.3.2.7 ", "warehouse 1 district 8");
  }
  {  // a payment that reached the district but not HISTORY
    Db db(scaled(1));
    auto w = db.get<WarehouseYtdRow>(kWarehouseYtd, warehouse_key(1));
    auto d = db.get<DistrictYtdRow>(kDistrictYtd, district_key(1, 9));
    w.w_ytd += 500;
    d.d_ytd += 500;
    db.put(kWarehouseYtd, warehouse_key(1), w);
    db.put(kDistrictYtd, district_key(1, 9), d);
    expect_violation(db, "3.3.2.8 ", "warehouse 1");
  }
  {  // a customer balance off
    Db db(scaled(1));
    auto cu = db.get<CustomerRow>(kCustomer, customer_key(1, 2, 9));
    cu.c_balance -= 1;
    db.put(kCustomer, customer_key(1, 2, 9), cu);
    expect_violation(db, "3.3.2.12 ", "warehouse 1 district 2");
  }
  {  // a delivery count without a delivery
    Db db(scaled(1));
    auto cu = db.get<CustomerRow>(kCustomer, customer_key(1, 3, 9));
    cu.c_delivery_cnt += 1;
    db.put(kCustomer, customer_key(1, 3, 9), cu);
    expect_violation(db, "3.3.2.11 ", "warehouse 1 district 3");
  }
  {  // an order missing from the order-by-customer index
    Db db(scaled(1));
    auto o = db.get<OrderRow>(kOrder, order_key(1, 1, 5));
    ASSERT_TRUE(db.node->partition(kOrderByCustomer, 0)
                    ->records->remove(order_customer_key(1, 1, o.o_c_id, 5))
                    .is_ok());
    expect_violation(db, "indexes", "warehouse 1 district 1");
  }
}

TEST(TpccCheck, ClusterSums) {
  auto c = parse({{"items", "1000"}, {"customers", "60"}}, env(2, 1));
  ASSERT_TRUE(c.is_ok());
  c->replicas = 2;
  // Per warehouse: history of its customers, C_YTD_PAYMENT, primary digest,
  // backup digests, backup copies, orders added.
  std::vector<int64_t> ok = {600, 600, 11, 11, 1, 3, 900, 900, 22, 22, 1, 4};
  ok.resize(ok.size() + 2 * 2 * kTableIds, 0);  // per-table digests (consistent: zero)
  EXPECT_TRUE(check_sums(*c, ok, {0, 0, 0, 7}).is_ok());
  Status s = check_sums(*c, ok, {0, 0, 0, 8});
  EXPECT_NE(s.message().find("orders: 7 orders"), std::string::npos) << s.message();
  auto pay = ok;
  pay[6] += 5;
  s = check_sums(*c, pay, {0, 0, 0, 7});
  EXPECT_NE(s.message().find("3.3.2.10"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("warehouse 2"), std::string::npos) << s.message();
  auto rep = ok;
  rep[3] += 1;
  s = check_sums(*c, rep, {0, 0, 0, 7});
  EXPECT_NE(s.message().find("replication"), std::string::npos) << s.message();
  // The key encodings' limits, named with their numbers.
  s = check_sums(*c, ok, {2, 0, 0, 7});
  EXPECT_NE(s.message().find("2 New-Orders found their district's order ids used up"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("16777215 orders per district (24-bit order ids)"), std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("--order-room"), std::string::npos) << s.message();
  s = check_sums(*c, ok, {0, 1, 0, 7});
  EXPECT_NE(s.message().find("HISTORY keys allow 268435456 rows per client"), std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace drtmx::bench::tpcc
