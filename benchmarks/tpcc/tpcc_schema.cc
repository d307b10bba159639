// TPC-C table specs (tpcc_schema.h).
#include "tpcc/tpcc_schema.h"

namespace drtmx::bench::tpcc {

std::vector<store::TableSpec> table_specs(const Config& c) {
  const uint64_t W = c.warehouses();
  // The loaded rows per warehouse (clause 4.3.3.1): an order and a HISTORY
  // row per customer, 30% of the orders new; 5..15 lines an order (drawn by
  // the loader: at most 15).
  const uint64_t orders = uint64_t{kDistricts} * c.customers;
  const uint64_t new_orders = uint64_t{kDistricts} * c.initial_new_orders();
  const uint64_t history = uint64_t{kDistricts} * c.customers;
  const uint64_t order_lines = orders * kMaxOrderLines;
  std::vector<store::TableSpec> ts;
  auto add = [&](txn::TableId id, const char* name, store::TableKind kind, uint32_t value_size,
                 uint64_t capacity) {
    store::TableSpec t;
    t.id = id;
    t.name = name;
    t.kind = kind;
    t.value_size = value_size;
    t.capacity = capacity;
    t.scheme = store::PartitionScheme::kFunction;
    t.partitions = static_cast<uint32_t>(W);
    t.partition_fn = [](uint64_t k) { return partition_of_key(k); };
    t.partition_prefix_bits = 16;  // the warehouse, bits 48..63 (scans stay in one)
    t.deletes = id == kNewOrder;   // Delivery's; no other transaction deletes
    ts.push_back(std::move(t));
  };
  using store::TableKind;
  add(kWarehouse, "warehouse", TableKind::kHash, sizeof(WarehouseRow), 1);
  add(kWarehouseYtd, "warehouse_ytd", TableKind::kHash, sizeof(WarehouseYtdRow), 1);
  add(kDistrict, "district", TableKind::kHash, sizeof(DistrictRow), kDistricts);
  add(kDistrictNext, "district_next_o_id", TableKind::kHash, sizeof(DistrictNextRow), kDistricts);
  add(kDistrictYtd, "district_ytd", TableKind::kHash, sizeof(DistrictYtdRow), kDistricts);
  add(kCustomer, "customer", TableKind::kHash, sizeof(CustomerRow),
      uint64_t{kDistricts} * c.customers);
  add(kStock, "stock", TableKind::kHash, sizeof(StockRow), c.items);
  add(kHistory, "history", TableKind::kOrdered, sizeof(HistoryRow), history);
  add(kNewOrder, "new_order", TableKind::kOrdered, sizeof(NewOrderRow), new_orders);
  add(kOrder, "order", TableKind::kOrdered, sizeof(OrderRow), orders);
  add(kOrderLine, "order_line", TableKind::kOrdered, sizeof(OrderLineRow), order_lines);
  add(kCustomerByName, "customer_by_name", TableKind::kOrdered, sizeof(CustomerByNameRow),
      uint64_t{kDistricts} * c.customers);
  add(kOrderByCustomer, "order_by_customer", TableKind::kOrdered, sizeof(OrderByCustomerRow),
      orders);
  store::TableSpec item;
  item.id = kItem;
  item.name = "item";
  item.kind = TableKind::kHash;
  item.value_size = sizeof(ItemRow);
  item.capacity = c.items;
  item.scheme = store::PartitionScheme::kReplicated;
  item.deletes = false;
  ts.push_back(std::move(item));
  return ts;
}

}  // namespace drtmx::bench::tpcc
