// Reads a Jepsen list-append history: one JSON array of operations, or one
// operation object per line (JSON Lines), with simdjson. Invokes are paired
// with their completions by process; an invoke left without a completion is
// an info transaction.
//
// Errors name the operation (its "index", and its line in JSON Lines or its
// position in an array) and what is wrong, in one line.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "check/history.h"

namespace drtmx::check {

Result<History> parse_history_file(const std::string& path);
// `text` need not be padded (it is copied into a padded buffer).
Result<History> parse_history_text(std::string_view text);

}  // namespace drtmx::check
