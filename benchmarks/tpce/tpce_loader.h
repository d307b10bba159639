// The TPC-E initial database (tpce_gen.h) into the partition copies one node
// hosts: the replicated tables everywhere, TAXRATE's hosted partitions, and
// every load unit whose partition the node keeps (primary or backup).
#pragma once

#include "store/catalog.h"
#include "store/tables/store_node.h"
#include "tpce/tpce_config.h"

namespace drtmx::bench::tpce {

// Errors name the table and the load unit (e.g. a table out of space).
Status load(store::tables::StoreNode& node, const store::Catalog& cat, const Config& c);

}  // namespace drtmx::bench::tpce
