// The per-coroutine transaction source of the list-append workload
// (append.h): draws micro-ops, runs them through the Txn API, learns the
// slots' epochs, and describes each transaction for histories.
#pragma once

#include <memory>

#include "append/append.h"

namespace drtmx::bench::append {

std::unique_ptr<WorkloadClient> make_client(const Config& c, uint32_t index, uint64_t seed);

}  // namespace drtmx::bench::append
