// The per-coroutine transaction source of SmallBank (smallbank.h): draws a
// transaction and its customers, runs it through the Txn API, and keeps the
// money its committed transactions added (for the oracle).
#pragma once

#include <memory>

#include "smallbank/smallbank.h"

namespace drtmx::bench::smallbank {

std::unique_ptr<WorkloadClient> make_client(const Config& c, uint32_t index, uint64_t seed);

}  // namespace drtmx::bench::smallbank
