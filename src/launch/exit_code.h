// How a benchmark program's main() ends: its exit code, with an error
// printed to stderr as "<program>: <code name>: <message>".
#pragma once

#include "base/status.h"

namespace drtmx::bench {

// 0 when `st` is ok; otherwise prints the error and returns 1.
int exit_code(const char* program, const Status& st);

// For options that did not parse (`st`, not ok): --help (kNotFound)
// prints its usage text (the message) to stdout and gives 0; an error is
// printed as by exit_code() and gives `error_code`.
int options_exit_code(const char* program, const Status& st, int error_code = 1);

}  // namespace drtmx::bench
