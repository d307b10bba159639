#include "command_line.h"

#include <fstream>
#include <sstream>
#include <string>

namespace drtmx::bench {

namespace po = boost::program_options;

Status parse_command_line(const po::options_description& desc, int argc, char** argv,
                          po::variables_map& vm, const char* config_option, const char* help_hint) {
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    if (config_option != nullptr && vm.count(config_option)) {
      const std::string file = vm[config_option].as<std::string>();
      std::ifstream in(file);
      if (!in) {
        return invalid_argument("--" + std::string(config_option) + "=" + file +
                                ": cannot open the file");
      }
      po::store(po::parse_config_file(in, desc), vm);
    }
    po::notify(vm);
  } catch (const po::error& e) {
    return invalid_argument(std::string(e.what()) + help_hint);
  }
  if (vm.count("help")) {
    std::ostringstream os;
    os << desc;
    return not_found(os.str());
  }
  return Status::ok();
}

}  // namespace drtmx::bench
