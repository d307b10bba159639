// The TPC-C initial population (clause 4.3.3.1) of the partition copies one
// node hosts. Every row is a pure function of (Config::seed, warehouse) —
// items of the seed alone — so a primary and its backups load identical
// data without exchanging it.
//
// Per warehouse: 1 WAREHOUSE, 10 DISTRICT, customers CUSTOMER per district
// (each with one HISTORY row and a CUSTOMER-BY-NAME entry), items STOCK,
// and per district `customers` ORDERs (customer ids a random permutation)
// with 5..15 ORDER-LINEs each and an ORDER-BY-CUSTOMER entry; the last 30 %
// of them (900 of 3000) are undelivered and in NEW-ORDER. ITEM (items
// rows) is loaded on every node.
#pragma once

#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "tpcc/tpcc_config.h"

namespace drtmx::bench::tpcc {

// The time stamp the loader writes into dates (any non-zero constant).
constexpr int64_t kLoadTime = 1700000000;

// Loads ITEM and every warehouse partition `node` hosts (primary or backup).
// Errors name the table and warehouse (e.g. a table out of space).
Status load(store::tables::StoreNode& node, const store::Catalog& cat, const Config& c);
// One warehouse's rows into this node's copy (w = partition + 1).
Status load_warehouse(store::tables::StoreNode& node, const store::Catalog& cat, const Config& c,
                      uint32_t w);
Status load_items(store::tables::StoreNode& node, const store::Catalog& cat, const Config& c);

}  // namespace drtmx::bench::tpcc
