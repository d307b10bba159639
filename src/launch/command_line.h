// Command-line parsing shared by the benchmark drivers (Boost.Program_options).
#pragma once

#include <boost/program_options.hpp>

#include "base/status.h"

namespace drtmx::bench {

// Parses argv into `vm` against `desc`, then, when `config_option` is
// non-null and given, the `key = value` file it names (command-line values
// win). Errors: invalid_argument naming the bad option, followed by
// `help_hint` ("... (see --help)" by default), or the unreadable file;
// --help: not_found carrying the help text, for the caller to print and
// exit 0.
Status parse_command_line(const boost::program_options::options_description& desc, int argc,
                          char** argv, boost::program_options::variables_map& vm,
                          const char* config_option = nullptr,
                          const char* help_hint = " (see --help)");

}  // namespace drtmx::bench
