#include "exit_code.h"

#include <iostream>

namespace drtmx::bench {

int exit_code(const char* program, const Status& st) {
  if (st.is_ok()) return 0;
  std::cerr << program << ": " << st.to_string() << "\n";
  return 1;
}

int options_exit_code(const char* program, const Status& st, int error_code) {
  if (st.code() == Code::kNotFound) {
    std::cout << st.message() << "\n";
    return 0;
  }
  exit_code(program, st);
  return error_code;
}

}  // namespace drtmx::bench
