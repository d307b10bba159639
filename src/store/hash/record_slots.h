// What a hash table needs from the record heap: fixed-size record slots in
// its record region. The interface lives in store/slots.h (shared with the
// ordered tables and implemented by store::RecordHeap); these aliases keep
// the hash code's unqualified names.
#pragma once

#include "store/slots.h"

namespace drtmx::store::hash {

using store::RecordSlots;
using store::SlotGrant;

}  // namespace drtmx::store::hash
