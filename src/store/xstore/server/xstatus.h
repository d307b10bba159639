// XStatus: the outcome of one XTree key operation, as returned by XTree and
// carried in the status byte of XStore RPC replies (xstore_rpc.h).
// Header-only, so a client that does not link the owner's library can name
// and convert it.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace drtmx::store::xstore {

// Cheap (hot path); to_status() for APIs that want a Status.
enum class XStatus : uint8_t {
  kOk = 0,
  kNotFound,       // get/update/delete: no such key
  kAlreadyExists,  // insert without upsert: the key is there
  kOutOfLeaves,    // insert needed a new leaf and the slab is used up
};

inline const char* xstatus_name(XStatus s) {
  switch (s) {
    case XStatus::kOk:
      return "ok";
    case XStatus::kNotFound:
      return "not found";
    case XStatus::kAlreadyExists:
      return "already exists";
    case XStatus::kOutOfLeaves:
      return "out of leaves";
  }
  return "unknown XStatus";
}

// The Status form of an XStatus (kOk -> OK), naming the key.
inline Status to_status(XStatus s, uint64_t key) {
  if (s == XStatus::kOk) return Status::ok();  // before any string is built (hot path)
  const std::string k = std::to_string(key);
  switch (s) {
    case XStatus::kOk:
      return Status::ok();
    case XStatus::kNotFound:
      return not_found("xstore: key " + k + " is not in the tree");
    case XStatus::kAlreadyExists:
      return already_exists("xstore: key " + k +
                            " is already in the tree (insert with upsert to overwrite, or update)");
    case XStatus::kOutOfLeaves:
      return exhausted("xstore: inserting key " + k +
                       " needs a new leaf but every leaf of the slab is in use; raise "
                       "XTreeOptions::area.leaf_capacity (and the region size to hold it)");
  }
  return internal_error("xstore: unknown XStatus " + std::to_string(static_cast<int>(s)));
}

}  // namespace drtmx::store::xstore
