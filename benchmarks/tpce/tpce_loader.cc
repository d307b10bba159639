// TPC-E loader (tpce_loader.h).
#include "tpce/tpce_loader.h"

#include "tpce/tpce_gen.h"

namespace drtmx::bench::tpce {

Status load(store::tables::StoreNode& node, const store::Catalog& cat, const Config& c) {
  std::string where = "the fixed tables";
  const Sink sink = [&](txn::TableId t, uint64_t key, const void* row, size_t size) -> Status {
    const store::TableSpec* spec = cat.find(t);
    if (spec == nullptr || spec->value_size != size)
      return internal_error("tpce: table " + std::to_string(t) + " has no spec of this row size");
    if (!cat.hosts(node.node(), *spec, cat.partition_of(*spec, key))) return Status();
    Status s = node.load(*spec, key, {static_cast<const uint8_t*>(row), size});
    if (!s.is_ok()) return s.with_context("loading table '" + spec->name + "' of " + where);
    return s;
  };
  DRTMX_RETURN_IF_ERROR(generate_fixed(c, sink));
  const store::TableSpec& customers = *cat.find(kCustomer);
  for (store::PartitionId p : cat.hosted(node.node(), customers)) {
    where = "load unit " + std::to_string(p);
    DRTMX_RETURN_IF_ERROR(generate_unit(c, p, sink));
  }
  return Status();
}

}  // namespace drtmx::bench::tpce
